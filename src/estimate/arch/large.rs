//! The named list of a run's large tensors (name, shape, dtype, phase, bytes): what an
//! out-of-memory message's requested size is matched against (`diagnose::tensors`).
//!
//! Derived from the [`Architecture`] and the run's settings, with the same element sizes as the
//! memory model: logits (`b·s × V`) in the compute dtype, and in float32 where the loss makes an
//! fp32 copy (nanoGPT under autocast: `nll_loss` is on CUDA autocast's fp32 list; transformers'
//! `ForCausalLMLoss` always calls `logits.float()`), the evaluation's logits (nanoGPT's
//! `estimate_loss`; a Hugging Face training step has none), the token embedding's gradient and
//! AdamW moment (created lazily at the first `optimizer.step()`), manual/eager attention's
//! `(b, a, s, s)` scores (fp32 softmax, and its 16-bit copy under 16-bit compute), and one block's
//! MLP hidden layer, q/k/v projection and fp32 residual stream.

use serde::Serialize;

use super::{Architecture, Family, Mlp};
use crate::estimate::scenario::{Dtype, Optimizer, Scenario};

/// A tensor's dtype, as PyTorch names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TensorDtype {
    /// 4 bytes.
    Float32,
    /// 2 bytes.
    Bfloat16,
    /// 2 bytes.
    Float16,
}

impl TensorDtype {
    /// PyTorch's name (`torch.float32` without the prefix).
    pub fn as_str(self) -> &'static str {
        match self {
            TensorDtype::Float32 => "float32",
            TensorDtype::Bfloat16 => "bfloat16",
            TensorDtype::Float16 => "float16",
        }
    }

    /// Bytes per element.
    pub fn bytes(self) -> u64 {
        match self {
            TensorDtype::Float32 => 4,
            TensorDtype::Bfloat16 | TensorDtype::Float16 => 2,
        }
    }
}

/// When in the training loop a tensor is allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TensorPhase {
    /// The evaluation (nanoGPT's `estimate_loss()`).
    Evaluation,
    /// A micro-step's forward.
    Forward,
    /// A micro-step's backward.
    Backward,
    /// `optimizer.step()`.
    OptimizerStep,
}

/// One large tensor of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LargeTensor {
    /// Which tensor (`logits`, `logits_fp32`, `eval_logits`, `wte_grad`, …).
    pub name: &'static str,
    /// Its shape, outermost first.
    pub shape: Vec<u64>,
    /// Its dtype.
    pub dtype: TensorDtype,
    /// The phases that allocate it.
    pub phases: &'static [TensorPhase],
}

impl LargeTensor {
    /// Its bytes (saturating).
    pub fn bytes(&self) -> u64 {
        self.shape
            .iter()
            .fold(self.dtype.bytes(), |a, &d| a.saturating_mul(d))
    }

    /// The shape as PyTorch prints it: `(4096, 50304)`.
    pub fn shape_text(&self) -> String {
        let dims: Vec<String> = self.shape.iter().map(u64::to_string).collect();
        format!("({})", dims.join(", "))
    }
}

/// The large tensors of a run of `a` with the settings of `s` (its batch, sequence, dtypes,
/// optimizer and attention kernel).
pub fn large_tensors(a: &Architecture, s: &Scenario) -> Vec<LargeTensor> {
    use TensorPhase::*;
    let (b, eb, t, v, h) = (
        s.batch_size,
        s.eval_batch(),
        s.block_size,
        a.vocab_size,
        a.hidden,
    );
    let bt = b.saturating_mul(t);
    let tensor = |d: Dtype| match d {
        Dtype::Float32 => TensorDtype::Float32,
        Dtype::Bfloat16 => TensorDtype::Bfloat16,
        Dtype::Float16 => TensorDtype::Float16,
    };
    // 16-bit weights compute in their own dtype; float32 ones in autocast's.
    let param = tensor(s.weights());
    let autocast = s.dtype != Dtype::Float32 && !s.half_weights();
    let half = if s.half_weights() {
        param
    } else {
        tensor(s.dtype)
    };
    let hf = matches!(a.family, Family::HfGpt2 | Family::Llama | Family::Moe);
    let mut out = Vec::new();
    let mut push = |name, shape: Vec<u64>, dtype, phases| {
        out.push(LargeTensor {
            name,
            shape,
            dtype,
            phases,
        })
    };
    const STEP: &[TensorPhase] = &[Forward, Backward];
    push("logits", vec![bt, v], half, STEP);
    if autocast || (hf && half != TensorDtype::Float32) {
        push("logits_fp32", vec![bt, v], TensorDtype::Float32, STEP);
    }
    if !hf {
        let ebt = eb.saturating_mul(t);
        push("eval_logits", vec![ebt, v], half, &[Evaluation]);
        if autocast {
            push(
                "eval_logits_fp32",
                vec![ebt, v],
                TensorDtype::Float32,
                &[Evaluation],
            );
        }
    }
    push("wte_grad", vec![v, h], param, &[Backward]);
    if !matches!(
        s.optimizer,
        Optimizer::Adamw8bit | Optimizer::PagedAdamw8bit
    ) {
        push("wte_moment", vec![v, h], param, &[OptimizerStep]);
    }
    let heads = a.attention.heads;
    if !s.flash {
        push(
            "attention_scores_fp32",
            vec![b, heads, t, t],
            TensorDtype::Float32,
            STEP,
        );
        if half != TensorDtype::Float32 {
            push("attention_scores", vec![b, heads, t, t], half, STEP);
        }
        if eb != b && !hf {
            push(
                "eval_attention_scores_fp32",
                vec![eb, heads, t, t],
                TensorDtype::Float32,
                &[Evaluation],
            );
        }
    }
    match &a.mlp {
        Mlp::Dense(f) => push("mlp_hidden", vec![b, t, f.intermediate], half, STEP),
        Mlp::Moe(m) => {
            // transformers' grouped_mm experts run in the weights' dtype over every routed
            // (token, expert) pair, and make a layer's whole expert weight gradient at once.
            let width = m.expert.intermediate.saturating_mul(2);
            let pairs = bt.saturating_mul(m.experts_per_token);
            push("expert_hidden", vec![pairs, width], param, STEP);
            push("expert_grad", vec![m.experts, width, h], param, &[Backward]);
        }
    }
    let qkv = a.attention.qkv_width();
    push("qkv", vec![b, t, qkv], half, STEP);
    // The residual stream has the embedding's dtype: float32 under autocast, bf16 for a Llama
    // loaded in bf16 (nanoGPT's pure-bf16 patch is listed as it always was).
    let residual = if matches!(a.family, Family::Llama | Family::Moe) {
        param
    } else {
        TensorDtype::Float32
    };
    push("residual", vec![b, t, h], residual, STEP);
    out
}
