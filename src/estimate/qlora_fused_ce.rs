//! QLoRA with Liger Kernel's fused linear cross-entropy (`load_in_4bit`, `lora_rank`,
//! `fused_linear_cross_entropy: true`; `estimate::fused_ce`): the step of `qlora.rs` with the
//! head and the loss computed in chunks, so the `s·b·V` buffers of the loss's backward are gone.
//!
//! Read from the replay (`tools/hf_replay/replay_fused_ce_peft.py --qlora --explain`:
//! `replay_qlora.py`'s step with liger-kernel 0.8.5's function ported allocation for
//! allocation) against Liger's source. `prepare_model_for_kbit_training` leaves the head
//! unquantized, frozen and in float32, and the final norm's output float32: under bf16 autocast
//! the input and weight are not in autocast's dtype, so Liger takes no `mm(out=)` path; each
//! chunk's `input_chunk @ weight.t()` casts the chunk and the whole head to bf16 (a frozen
//! weight's cast is not cached), and `grad_logits @ weight` casts the head again. With a
//! frozen head no `grad_weight` exists. The peak is then the forward at a chunk, where
//! everything below is alive:
//!
//! - the resident bytes and checkpoint boundaries of `qlora::step` (every block's float32 input
//!   and the last block's output, `cos`, `sin`, the causal mask, the final norm's statistics,
//!   the token batch);
//! - the final norm's float32 output (the function's input), the labels padded and shifted
//!   (`8·b·(s + 1) + 8·s·b`), `grad_input` (float32 `s·b·h`), `loss_1d` (`4·s·b`) and the
//!   label mask (`s·b` bytes);
//! - a chunk's bf16 logits (`2·chunk·V`), the chunk's bf16 cast (`2·chunk·h`) and the head's
//!   (`2·V·h`);
//! - autocast's cached bf16 copies of every adapter weight (`2` bytes per adapter parameter:
//!   the forward has not left autocast yet);
//! - the previous micro-step's checkpoint inputs, which its loss's graph holds until the new
//!   loss replaces it: the embedding's output (a float32 leaf `enable_input_require_grads`
//!   made require grad, `4·s·b·h`) with its gradient (`4·s·b·h`), the mask, `cos` and `sin`
//!   (absent in the first step's first micro-step).
//!
//! With a 32k vocabulary, or many tokens beside a small head, a recomputed block's backward
//! passes that moment; `qlora.rs` does not model it, so the step is refused unless the fused
//! function's own tensors clearly exceed `qlora::block_bound`.

use super::arch::{Architecture, Positions};
use super::error::ScenarioError;
use super::fused_ce::Chunking;
use super::memory::{Components, TrainMoment};
use super::num::N;
use super::qlora::{self, QloraBytes};
use super::scenario::Scenario;
use super::trainer::TrainerStep;

/// Float32 bytes.
const FP32: u128 = 4;

/// QLoRA's Trainer step of `a` under `run` with the fused cross-entropy: its resident bytes
/// (`qlora::qlora_bytes`) and the fused forward's peak; refused where a recomputed block may
/// pass it.
pub(crate) fn step(
    a: &Architecture,
    run: &Scenario,
    rotary_buffers: N,
) -> Result<(TrainerStep, QloraBytes), ScenarioError> {
    let (s, b) = (N::from(run.block_size), N::from(run.batch_size));
    let sb = s * b;
    let (v, h) = (N::from(a.vocab_size), N::from(a.hidden));
    let tokens = run.block_size.saturating_mul(run.batch_size);
    let chunking = Chunking::of(tokens, a.hidden, a.vocab_size);
    let chunk = N::from(chunking.chunk_size);
    let head_cast = v * h * 2;
    let logits = chunking.logits(a.vocab_size) * 2 + chunk * h * 2;
    recipe(a, run)?;
    let q = qlora::qlora_bytes(a, run, rotary_buffers)?;
    let weights = qlora::weights_after_first_forward(a, run, &q);
    let rotary = match a.positions {
        Positions::Rotary { .. } => s * N::from(a.attention.head_dim) * (2 * FP32),
        Positions::Learned { .. } => N::ZERO,
    };
    let boundaries = sb * h * (u128::from(a.layers) + 1) * FP32;
    let mask = sb * s;
    let labels = b * (s + N::from(1u64)) * 8 + sb * 8;
    let function = sb * h * (2 * FP32) + sb * (FP32 + 1);
    let activations = qlora::checkpointed_activations(a, run) + labels + function;
    // The previous micro-step's checkpoint inputs, held by its loss's graph until the new
    // loss replaces it: the embedding's output (a float32 leaf that
    // `enable_input_require_grads` made require grad) with its gradient, the mask, `cos`, `sin`.
    let previous = sb * h * (2 * FP32) + mask + rotary;
    // Autocast's cache of every adapter weight's bf16 copy, held until the forward (which
    // the fused function ends) leaves autocast.
    let adapter_copies = N::from(q.trainable) * 2;
    let accumulating = run.gradient_accumulation_steps >= 2;
    let earlier = if accumulating { q.grads } else { N::ZERO };
    let at = |optimizer: N, previous: N| Components {
        weights,
        gradients: earlier,
        optimizer,
        autocast_weights: head_cast + adapter_copies,
        activations: activations + previous,
        logits,
    };
    let optimizer_step = weights + q.grads + q.optimizer + sb * 8;
    // The first step's first micro-step has no previous one.
    let first = at(N::ZERO, if accumulating { previous } else { N::ZERO });
    // What the fused moment holds beside what a recomputed block's backward holds too.
    let beside = at(N::ZERO, previous).sum() - weights - earlier - boundaries - rotary - mask;
    peak_is_the_loss(a, run, beside, if accumulating { N::ZERO } else { q.grads })?;
    Ok((
        TrainerStep {
            train: at(q.optimizer, previous),
            moment: TrainMoment::LossForward,
            first: first.sum().max(optimizer_step),
        },
        q,
    ))
}

/// Refuses what the QLoRA replays do not cover (`qlora::recipe_refusals`, SDPA attention).
fn recipe(a: &Architecture, s: &Scenario) -> Result<(), ScenarioError> {
    let mut r = qlora::recipe_refusals(s);
    r.not(
        !s.flash,
        "flash",
        "QLoRA is replayed with SDPA attention (attn_implementation sdpa): set flash to true",
    );
    r.result(&format!("{} with QLoRA", a.name))
}

/// Refuses a step whose fused moment does not clearly pass a recomputed block's backward:
/// `beside`, what the fused moment holds beyond the weights, state, earlier gradients and
/// checkpoints, against `qlora::block_bound` (with `lora_dropout`, a float32 `s·b·I` more: the
/// replayed Qwen3 0.6B run with dropout passes the bound alone by 8 %) and the adapters'
/// gradients the backward has made by then (`grads`, without accumulation). In the replays
/// the fused moment is the peak for Llama 3.1 8B (128k vocabulary) and refused for Mistral 7B,
/// Llama 2 7B and Phi-3 (32k), for Qwen2.5 0.5B and Qwen3 0.6B at 4096 tokens, and, where the
/// bound is too loose to tell, for Qwen2.5 1.5B, Llama 3.2 1B and Llama 3.1 8B with dropout.
fn peak_is_the_loss(
    a: &Architecture,
    s: &Scenario,
    beside: N,
    grads: N,
) -> Result<(), ScenarioError> {
    let sb = N::from(s.block_size) * N::from(s.batch_size);
    let inter = match &a.mlp {
        super::arch::Mlp::Dense(f) => N::from(f.intermediate),
        super::arch::Mlp::Moe(_) => N::ZERO,
    };
    let dropout = if s.lora_dropout > 0.0 {
        sb * inter * FP32
    } else {
        N::ZERO
    };
    let mut r = super::trainer::Refusals::none();
    r.not(
        beside <= qlora::block_bound(a, s) + dropout + grads,
        "fused_linear_cross_entropy",
        "with the fused cross-entropy the loss no longer clearly sets QLoRA's peak here: a \
         recomputed block's backward may (a 32k vocabulary, or many tokens beside the head), \
         which vramdoc does not model for QLoRA; set fused_linear_cross_entropy to false",
    );
    r.result_for(&format!(
        "{} with QLoRA and Liger's fused cross-entropy",
        a.name
    ))
}
