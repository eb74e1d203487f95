//! PEFT's LoRA adapters on a Hugging Face model (`peft.get_peft_model(model, LoraConfig(...))`,
//! peft 0.21): what they add to a Trainer step beside the frozen base, shared by the families that
//! have it (`hf_gpt2::lora`, `hf_llama::lora`).
//!
//! Source: `peft/tuners/lora/layer.py` (`Linear.forward`), `tuners_utils.py`
//! (`_cast_input_dtype`, `cast_adapter_dtype`), read against the fake-tensor replay of the step
//! (`tools/hf_replay/replay_lora.py --explain`). Each targeted Linear becomes
//! `result = base_layer(x); x = x.to(lora_A.weight.dtype); result = result + lora_B(lora_A(dropout(x))) * scaling`:
//!
//! - The adapters are float32: `get_peft_model`'s `autocast_adapter_dtype=True` upcasts them over
//!   bf16 weights. Their gradients are float32 and fused AdamW keeps two float32 moments and a
//!   float32 `step` per adapter tensor.
//! - `x.to(float32)` copies a 16-bit input (the norm's output with bf16 weights, attention's or
//!   the MLP's output under autocast); a float32 input is passed as it is.
//! - `lora_dropout > 0` (`nn.Dropout`): a float32 output and a one-byte mask (`native_dropout`),
//!   the mask saved for backward only where `x` carries a gradient.
//! - `lora_A` saves its input for its weight's gradient whatever `x` needs: under autocast the
//!   bf16 cast of the (dropped-out) input, one per adapter even when several adapters read one
//!   tensor; without autocast the float32 tensor itself (shared by the adapters reading one
//!   float32 tensor without dropout). `lora_B` saves `lora_A`'s output (`r` wide; bf16 under
//!   autocast, else float32). Under autocast both weights' bf16 copies are cached for the
//!   forward (leaves that require grad); `B`'s is saved, `A`'s only where `x` carries a gradient.

use super::arch::Architecture;
use super::error::ScenarioError;
use super::lora_targets::LoraModule;
use super::memory::{Components, TrainMoment};
use super::num::N;
use super::params::Params;
use super::scenario::Scenario;
use super::trainer::{StepTotals, TrainerStep};

/// Bytes of a float32 element.
const FP32: u128 = 4;

/// An adapted module of a block with its `(in, out)` features.
pub(crate) type Adapted = (LoraModule, u64, u64);

/// A run's adapters: their rank, the tokens they see, and the precision around them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Adapters {
    /// `s·b`: tokens per micro-batch.
    pub(crate) sb: N,
    /// The rank `r`.
    pub(crate) rank: N,
    /// bf16 autocast runs (float32 or bf16 weights under Trainer's `bf16=True`).
    pub(crate) autocast: bool,
    /// `lora_dropout > 0`.
    pub(crate) dropout: bool,
}

/// The input one adapter reads: its width, element size, and what else holds it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AdapterInput {
    /// Features (`in` of the Linear).
    pub(crate) width: N,
    /// Bytes of one of its elements (4: float32; 2: bf16).
    pub(crate) bytes: u128,
    /// It carries a gradient (an earlier adapter, or the checkpointed embedding output, feeds it).
    pub(crate) requires_grad: bool,
    /// The same float32 tensor is already counted as saved (by another adapter reading it, or by
    /// the layer itself): saving it again costs nothing.
    pub(crate) counted: bool,
}

impl Adapters {
    /// The adapters of a run.
    pub(crate) fn new(sb: N, rank: u64, autocast: bool, dropout: bool) -> Adapters {
        Adapters {
            sb,
            rank: N::from(rank),
            autocast,
            dropout,
        }
    }

    /// What one adapter on a Linear of `out` features saves for backward, reading `x`: the
    /// input `lora_A` saves (and dropout's mask), `lora_A`'s output, and under autocast the bf16
    /// weight copies that are saved.
    pub(crate) fn saves(&self, x: AdapterInput, out: N) -> N {
        let elements = self.sb * x.width;
        let input = if self.dropout {
            let mask = if x.requires_grad { elements } else { N::ZERO };
            let kept = if self.autocast { 2 } else { FP32 };
            mask + elements * kept
        } else if self.autocast {
            elements * 2
        } else if x.bytes == FP32 {
            if x.counted {
                N::ZERO
            } else {
                elements * FP32
            }
        } else {
            elements * FP32
        };
        let between = self.sb * self.rank * if self.autocast { 2 } else { FP32 };
        input + between + self.saved_copies(x, out)
    }

    /// Under autocast, the bf16 copies of `B` (saved) and of `A` (saved where `x` carries a
    /// gradient).
    fn saved_copies(&self, x: AdapterInput, out: N) -> N {
        if !self.autocast {
            return N::ZERO;
        }
        let a = if x.requires_grad {
            self.rank * x.width * 2
        } else {
            N::ZERO
        };
        a + self.rank * out * 2
    }

    /// One Linear of `out` features reading `x`, adapted or not (`adapted`): what its adapter
    /// saves and what autocast's cache alone holds of it (`Adapters::saves`,
    /// `Adapters::cached_only`; nothing without an adapter), and whether the Linear's output
    /// carries a gradient (its adapter's, or its input's). Marks `x` counted once an adapter
    /// saved it.
    pub(crate) fn reader(&self, x: &mut AdapterInput, out: N, adapted: bool) -> (N, N, bool) {
        if !adapted {
            return (N::ZERO, N::ZERO, x.requires_grad);
        }
        let saved = (self.saves(*x, out), self.cached_only(*x));
        x.counted = true;
        (saved.0, saved.1, true)
    }

    /// Under autocast, the bf16 copies of `A` autocast's cache holds to the end of the forward
    /// although nothing saved them (adapters whose input carried no gradient).
    pub(crate) fn cached_only(&self, x: AdapterInput) -> N {
        if self.autocast && !x.requires_grad {
            self.rank * x.width * 2
        } else {
            N::ZERO
        }
    }
}

/// The adapters' parameters: `r·(in + out)` per adapted module and block (Hu et al. 2021,
/// section 4.1), with `features` the modules' `(in, out)`.
pub(crate) fn parameters(rank: u64, layers: u64, features: &[(u64, u64)]) -> N {
    features
        .iter()
        .map(|&(i, o)| N::from(rank) * (N::from(i) + N::from(o)))
        .sum::<N>()
        * N::from(layers)
}

/// Fused AdamW's state for the adapters (float32): two moments per element and a 4-byte `step`
/// per tensor (`A` and `B` of every adapted module of every block).
fn optimizer_bytes(trainable: N, modules: usize, layers: u64) -> N {
    trainable * (2 * FP32) + N::from(layers) * N::from(2 * modules as u64) * FP32
}

/// What a family's LoRA step computes: its peak moment, given the totals it was made with.
pub(crate) trait LoraPeak {
    /// The totals every moment shares (the optimizer state is set to 0 for the first step).
    fn totals(&mut self) -> &mut StepTotals;
    /// The largest moment and which it is; `None` where an unmodelled moment could pass it.
    fn peak(&self) -> Option<(Components, TrainMoment)>;
}

/// The Trainer step of a LoRA run: its peak with the optimizer state, and the first step's: the
/// largest moment without it, or its `optimizer.step()`, which creates the state beside every
/// weight, gradient and the tokens. `refused` is the error where no peak is modelled.
pub(crate) fn trainer_step(
    step: &mut impl LoraPeak,
    refused: impl Fn() -> ScenarioError,
) -> Result<TrainerStep, ScenarioError> {
    let (train, moment) = step.peak().ok_or_else(&refused)?;
    let optimizer = std::mem::replace(&mut step.totals().optimizer, N::ZERO);
    let (before, _) = step.peak().ok_or_else(&refused)?;
    let t = step.totals();
    let optimizer_step = t.weights + t.full_grads + optimizer + t.tokens;
    Ok(TrainerStep {
        train,
        moment,
        first: before.sum().max(optimizer_step),
    })
}

/// The two moments at the loss every family's LoRA step has, over `t`: cross-entropy's
/// backward (the `saved` tensors and weight `copies` beside `log_softmax`'s backward buffers,
/// float32 `s·b·V` three times: its output, `nll_loss`'s gradient and the result) and the end
/// of the forward (also `forward_only`, what the forward holds but did not save, and the
/// logits in the compute dtype (`c` bytes) with `ForCausalLMLoss`'s float32 copy, where it
/// makes one, and the float32 log-softmax). `sbv` is `s·b·V`.
pub(crate) fn loss_moments(
    t: &StepTotals,
    (saved, copies): (N, N),
    forward_only: N,
    sbv: N,
    c: u128,
) -> [(Components, TrainMoment); 2] {
    let upcast = if c == FP32 { 0 } else { FP32 };
    [
        (
            t.at(t.earlier_grads(), copies, saved, sbv * (3 * FP32)),
            TrainMoment::LossBackward,
        ),
        (
            t.at(
                t.earlier_grads(),
                copies,
                saved + forward_only,
                sbv * (c + upcast + FP32),
            ),
            TrainMoment::LossForward,
        ),
    ]
}

/// The totals of a LoRA step of `a` (`p` its parameters with the adapters'): the weights
/// (`weights` bytes), the adapters' float32 gradients and fused AdamW state, the token batch;
/// and the adapted modules with their features.
pub(crate) fn totals(
    a: &Architecture,
    run: &Scenario,
    p: &Params,
    weights: N,
    tokens: N,
) -> Result<(StepTotals, Vec<Adapted>), ScenarioError> {
    let modules = run
        .lora_targets
        .resolve(a)
        .map_err(|m| ScenarioError::key("lora_targets", m))?;
    let lora = N::from(p.lora);
    let t = StepTotals {
        weights,
        full_grads: lora * FP32,
        optimizer: optimizer_bytes(lora, modules.len(), a.layers),
        accumulating: run.gradient_accumulation_steps >= 2,
        checkpointed: run.grad_checkpoint,
        tokens,
        block_params: N::ZERO,
    };
    Ok((t, features(&modules, a)))
}

/// The adapted modules of a block with their `(in, out)` features.
fn features(modules: &[LoraModule], a: &Architecture) -> Vec<Adapted> {
    modules
        .iter()
        .map(|m| {
            let (i, o) = m.features(a);
            (*m, i, o)
        })
        .collect()
}
