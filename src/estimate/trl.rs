//! Which trainer runs a Hugging Face model's step (`trainer`), and QLoRA as TRL 0.29.1's
//! `SFTTrainer` runs it.
//!
//! `SFTTrainer` prepares a 4-bit model differently from the `Trainer` recipe `qlora.rs` follows
//! (`trl/trainer/sft_trainer.py`, `SFTTrainer.__init__` and `compute_loss`; `base_config.py`):
//!
//! - it never calls PEFT's `prepare_model_for_kbit_training`: the head, the embeddings and the
//!   norms stay in the dtype they were loaded in (bfloat16, what every QLoRA recipe loads and
//!   transformers 5's `dtype="auto"` gives a bfloat16 checkpoint), not float32;
//! - after `get_peft_model` it casts every trainable parameter of a 4-bit (or 8-bit) model to
//!   bfloat16 (the QLoRA paper's adapters): the adapters, their gradients and fused AdamW's
//!   moments are 2 bytes an element (bitsandbytes' 8-bit state does not change);
//! - `SFTConfig.gradient_checkpointing` defaults to true, non-reentrant in transformers 5.24
//!   (`activation_checkpointing_enable` without kwargs), and `bf16` to true;
//! - `compute_loss` computes, after the forward and under `no_grad`, the logits' entropy (TRL's
//!   `entropy_from_logits`, 128 rows at a time) and the token accuracy from a shifted copy of the
//!   logits (`outputs.logits[..., :-1, :].contiguous()`). With the loss's float32 `log_softmax`
//!   saved and the bfloat16 logits alive, that copy makes `8·s·b·V` bytes, less than the loss's
//!   backward (`12·s·b·V`), which stays the peak.
//!
//! The step's peak is the loss's backward, as for `Trainer`, with bfloat16 where `qlora.rs` has
//! float32: the weights above; the checkpoints are each block's bfloat16 input
//! (`L·2·s·b·h`) and the final RMSNorm's float32 copy of its input (`4·s·b·h`) with its
//! `rsqrt` (`4·s·b`); the rotary `cos` and `sin` in bfloat16 (`2·2·s·d`); the boolean causal
//! mask (`b·s·s`); no autocast copy of the (already bfloat16) head; the loss's three float32
//! `s·b·V` tensors; the token batch and the loss. Held to `tests/data/hf_trl_replay.json`
//! (`tools/hf_replay/replay_trl.py`, `tests/it/hf_trl.rs`), which runs TRL's own cast. In a
//! padded or padding-free batch (`batch_layout.rs`; TRL's default is padded rows) the rows and
//! the mask are the layout's (one row of `b·s` tokens and a `(b·s)²` mask padding-free) and the
//! attention mask or `position_ids` is one more `8·s·b`-byte input, held to
//! `tests/data/hf_trl_batch_layout_replay.json` (`replay_batches.py --trl`).

use serde::Serialize;

use super::arch::{Architecture, Family, Positions};
use super::bnb;
use super::error::ScenarioError;
use super::num::N;
use super::qlora::{self, QloraBytes};
use super::scenario::{Dtype, Optimizer, Scenario};
use super::trainer::{Refusals, TrainerStep};

/// The TRL version whose `SFTTrainer` is modelled.
pub const TRL_VERSION: &str = "0.29.1";

/// The trainer that runs a Hugging Face model's step (scenario key `trainer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum HfTrainer {
    /// transformers' `Trainer` (with PEFT's `prepare_model_for_kbit_training` for QLoRA).
    #[default]
    Transformers,
    /// TRL's `SFTTrainer` with its `SFTConfig` defaults.
    Trl,
}

impl HfTrainer {
    /// `transformers` or `trl`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HfTrainer::Transformers => "transformers",
            HfTrainer::Trl => "trl",
        }
    }

    /// `transformers`/`Trainer` or `trl`/`SFTTrainer`, in any case, with or without the module
    /// (`transformers.Trainer`, `trl.SFTTrainer`).
    pub fn parse(s: &str) -> Option<HfTrainer> {
        match s.trim().to_ascii_lowercase().as_str() {
            "transformers" | "trainer" | "transformers.trainer" => Some(HfTrainer::Transformers),
            "trl" | "sfttrainer" | "trl.sfttrainer" => Some(HfTrainer::Trl),
            _ => None,
        }
    }
}

/// Bytes of a bfloat16 element.
const BF16: u128 = 2;
/// Bytes of a float32 element.
const FP32: u128 = 4;

/// The model's unquantized parameters (head, embeddings, norms, biases), elements.
fn unquantized_numel(a: &Architecture) -> u128 {
    a.parameters()
        .iter()
        .filter(|t| !bnb::quantized(t.kind, &t.name))
        .map(|t| u128::from(t.numel()) * u128::from(t.count))
        .sum()
}

/// `SFTTrainer`'s QLoRA bytes from `Trainer`'s (`q`): the unquantized parameters in bfloat16
/// instead of float32, the adapters, their gradients and fused AdamW's moments in bfloat16.
fn trl_bytes(a: &Architecture, s: &Scenario, q: QloraBytes) -> QloraBytes {
    let halved = |n: u128| N(n * (FP32 - BF16));
    let trainable = u128::from(q.trainable);
    let optimizer = match s.optimizer {
        Optimizer::Adamw | Optimizer::Sgd => q.optimizer - halved(2 * trainable),
        Optimizer::Adamw8bit | Optimizer::PagedAdamw8bit => q.optimizer,
    };
    QloraBytes {
        weights: q.weights - halved(unquantized_numel(a)) - halved(trainable),
        grads: N(trainable * BF16),
        optimizer,
        ..q
    }
}

/// Refuses `trainer` trl outside what its replays cover: QLoRA of the Llama family. Called
/// before any family computes its step, so no other step is estimated as SFTTrainer's.
pub(crate) fn check_scope(a: &Architecture, s: &Scenario) -> Result<(), ScenarioError> {
    if s.trainer != HfTrainer::Trl {
        return Ok(());
    }
    let why = if a.family != Family::Llama {
        "TRL's SFTTrainer is replayed for the Llama family (Llama, Mistral, Qwen2, Qwen3, \
         Phi-3) only"
    } else if !s.load_in_4bit {
        "TRL's SFTTrainer is replayed for QLoRA (load_in_4bit with lora_rank) only; for LoRA \
         or a full fine-tune its step differs from Trainer's by compute_loss's metrics and \
         their logits-sized copy, which are not replayed"
    } else {
        return Ok(());
    };
    Err(ScenarioError::key(
        "trainer",
        format!("{}: {why}; use trainer transformers", a.name),
    ))
}

/// Refuses what the TRL replays do not cover, naming each key.
fn check(a: &Architecture, s: &Scenario, loss: N) -> Result<(), ScenarioError> {
    let mut r = Refusals::trainer(s);
    r.not(
        s.dtype != Dtype::Bfloat16,
        "dtype",
        "SFTConfig's bf16=True (bfloat16 autocast) is what is replayed: set dtype to bfloat16",
    );
    r.not(
        s.weights() != Dtype::Bfloat16,
        "weights_dtype",
        "TRL's QLoRA is replayed on weights loaded in bfloat16 (from_pretrained(dtype=torch.\
         bfloat16)), which the head, embeddings and norms keep under SFTTrainer",
    );
    r.not(
        s.bnb_4bit_compute_dtype != Dtype::Bfloat16,
        "bnb_4bit_compute_dtype",
        "TRL's QLoRA is replayed with a bfloat16 compute dtype",
    );
    r.not(
        !s.flash,
        "flash",
        "QLoRA is replayed with SDPA attention (attn_implementation sdpa): set flash to true",
    );
    r.not(
        !s.grad_checkpoint,
        "grad_checkpoint",
        "SFTConfig's gradient_checkpointing=True is what is replayed",
    );
    r.not(
        loss < qlora::block_bound(a, s),
        "model",
        "the loss's tensors are not clearly larger than a recomputed block's backward (a small \
         vocabulary, or wide blocks for it), and which one is the peak is not modelled for \
         QLoRA",
    );
    r.result_for(&format!(
        "{} is modelled for trainer trl as TRL {TRL_VERSION}'s SFTTrainer QLoRA step only",
        a.name
    ))
}

/// TRL's `SFTTrainer` QLoRA step of `a` under `run`: its resident bytes, the loss-backward peak
/// the module docs describe, and the first step's peak.
pub(crate) fn qlora_step(
    a: &Architecture,
    run: &Scenario,
    rotary_buffers: N,
) -> Result<(TrainerStep, QloraBytes), ScenarioError> {
    // The rows the model sees (one of `b·s` tokens padding-free, `batch_layout.rs`).
    let (rows, len) = run.batch_layout.rows(run.batch_size, run.block_size);
    let (s, b) = (N::from(len), N::from(rows));
    let sb = s * b;
    let (v, h) = (N::from(a.vocab_size), N::from(a.hidden));
    let logits = sb * v * (3 * FP32);
    check(a, run, logits)?;
    let q = trl_bytes(a, run, qlora::qlora_bytes(a, run, rotary_buffers)?);
    let rotary = match a.positions {
        Positions::Rotary { .. } => s * N::from(a.attention.head_dim) * (2 * BF16),
        Positions::Learned { .. } => N::ZERO,
    };
    let checkpoints = sb * h * (u128::from(a.layers) * BF16 + FP32) + sb * FP32;
    let mask = sb * s;
    // The token batch, and a padded batch's attention mask or a padding-free row's position_ids.
    let inputs = sb * if run.batch_layout.masked() { 16 } else { 8 };
    let activations = checkpoints + rotary + mask + inputs + N(2 * FP32);
    // No bf16 copy of the head: TRL leaves it in the dtype it was loaded in.
    let loss = qlora::LossBackward {
        weights: q.weights,
        head_copy: N::ZERO,
        activations,
        logits,
        forward_end: None,
    };
    Ok((loss.step(run, &q), q))
}

#[cfg(test)]
mod tests {
    use super::HfTrainer;

    #[test]
    fn trainer_names_as_users_write_them() {
        for s in ["trl", "SFTTrainer", " trl.SFTTrainer ", "TRL"] {
            assert_eq!(HfTrainer::parse(s), Some(HfTrainer::Trl), "{s}");
        }
        for s in ["transformers", "Trainer", "transformers.Trainer"] {
            assert_eq!(HfTrainer::parse(s), Some(HfTrainer::Transformers), "{s}");
        }
        for s in ["", "sft", "axolotl", "trl-sft"] {
            assert_eq!(HfTrainer::parse(s), None, "{s}");
        }
    }
}
