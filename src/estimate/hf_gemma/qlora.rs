//! QLoRA on Gemma 2 and Gemma 3: `qlora::qlora_bytes`' resident bytes (4-bit blocks, the tied
//! embedding and head, norms and adapters in float32 after `prepare_model_for_kbit_training`)
//! and the step's peak, the loss's backward as for the Llama family (`qlora::step`), with what
//! Gemma adds there, read from the replay's list at that moment
//! (`tools/hf_replay/replay_gemma_peft.py --explain`):
//!
//! - the buffers: each rotary table's `inv_freq` and `original_inv_freq` (float32, `head_dim/2`
//!   each; Gemma 3 has one table per span) and the embedding's `√hidden` scale, a bf16 scalar
//!   (buffers keep the dtype the model was loaded in);
//! - the checkpoint boundaries, `(L + 1)·4·s·b·h` (the scaled embedding and each block's
//!   output, float32 after the upcast), the rotary `cos` and `sin` per table, `position_ids`
//!   (`8·s`), and one mask per span the layers use (checkpointed blocks get them explicitly):
//!   SDPA's boolean `b·s·s`, eager attention's additive one in the float32 embedding's dtype;
//! - the frozen final norm's `rsqrt` (`4·s·b`) and float32 `1 + w` (`4·h`);
//! - Gemma 2's final logit softcapping: the `tanh` output, bf16 under autocast (`2·s·b·V`);
//! - the head's bf16 copy (`2·V·h`), the loss's `12·s·b·V`, the token batch and the loss.
//!
//! With a small vocabulary a recomputed block's backward could pass the loss, and at a high
//! rank on short rows the loss's forward could: neither is replayed for Gemma, and such runs are
//! refused (`check`, `forward_end_check`).

use super::saves::FP32;
use crate::estimate::arch::{Architecture, Family, Mlp};
use crate::estimate::error::ScenarioError;
use crate::estimate::num::N;
use crate::estimate::qlora::{qlora_bytes, recipe_refusals, ForwardEnd, LossBackward, QloraBytes};
use crate::estimate::scenario::Scenario;
use crate::estimate::trainer::TrainerStep;

/// The loss's tensors must be this many times what a recomputed block's backward could hold
/// (`block_bound`) for the loss to be the peak: no Gemma QLoRA run with a small vocabulary is
/// replayed, so the margin is twice the Llama family's.
const LOSS_MARGIN: u128 = 2;

/// What a recomputed block's backward keeps beside the checkpoints, per token: the Llama
/// family's QLoRA bound (`24·I + 42·h` bytes, `qlora.rs`) with Gemma's two more float32 norms
/// (`16·h`).
fn block_bound(a: &Architecture, sb: N) -> N {
    let inter = match &a.mlp {
        Mlp::Dense(f) => f.intermediate,
        Mlp::Moe(m) => m.expert.intermediate,
    };
    sb * (24 * u128::from(inter) + 58 * u128::from(a.hidden))
}

/// Refuses what the Gemma QLoRA replays do not cover, naming each key.
fn check(a: &Architecture, s: &Scenario, loss: N, sb: N) -> Result<(), ScenarioError> {
    let mut r = recipe_refusals(s);
    r.not(
        !s.grad_checkpoint,
        "grad_checkpoint",
        "QLoRA is replayed as prepare_model_for_kbit_training runs it, with gradient \
         checkpointing: set grad_checkpoint to true",
    );
    r.not(
        loss < block_bound(a, sb) * LOSS_MARGIN,
        "model",
        "the loss's tensors are not clearly larger than a recomputed block's backward (a small \
         vocabulary for these blocks), and which one is the peak is not modelled for QLoRA",
    );
    r.result(&format!("{} with QLoRA", a.name))
}

/// QLoRA's Trainer step of the Gemma model `a` under `run` (`load_in_4bit` with adapters): its
/// resident bytes, the loss-backward peak the module docs describe, and the first step's peak
/// (the same moment without optimizer state, or its `optimizer.step()`).
pub(crate) fn qlora_step(
    a: &Architecture,
    run: &Scenario,
) -> Result<(TrainerStep, QloraBytes), ScenarioError> {
    super::check(a, run, false)?;
    let (s, b) = (N::from(run.block_size), N::from(run.batch_size));
    let sb = s * b;
    let (v, h, d) = (
        N::from(a.vocab_size),
        N::from(a.hidden),
        N::from(a.attention.head_dim),
    );
    let softcap = if a.embeddings.logit_softcap.is_some() {
        sb * v * 2
    } else {
        N::ZERO
    };
    let logits = sb * v * (3 * FP32);
    let head_copy = v * h * 2;
    check(a, run, logits + head_copy, sb)?;
    let (local, global) = super::saves::span_counts(a);
    let tables = if a.family == Family::Gemma3 {
        u128::from(local > 0) + u128::from(global > 0)
    } else {
        1
    };
    let spans = u128::from(local > 0) + u128::from(global > 0);
    // inv_freq and original_inv_freq per table (`head_dim/2` float32 each), the bf16 scale.
    let buffers = d * (tables * FP32) + N::from(2u64);
    let q = qlora_bytes(a, run, buffers)?;
    forward_end_check(a, run, &q, logits)?;
    let boundaries = sb * h * (u128::from(a.layers) + 1) * FP32;
    let rotary = s * d * (2 * FP32 * tables);
    let masks = b * s * s * (spans * if run.flash { 1 } else { FP32 });
    let final_norm = sb * FP32 + h * FP32;
    let activations =
        boundaries + rotary + masks + s * 8 + final_norm + softcap + sb * 8 + N(2 * FP32);
    let loss = LossBackward {
        weights: q.weights,
        head_copy,
        activations,
        logits,
        forward_end: None,
    };
    Ok((loss.step(run, &q), q))
}

/// Refuses a run whose loss's forward may be its peak: at a high rank on short rows the Llama
/// family's step peaks where autocast still holds a bfloat16 copy of every adapter
/// (`qlora::ForwardEnd`), which no Gemma replay covers: refused once what that moment adds
/// comes within a fifth of what the loss's backward adds.
fn forward_end_check(
    a: &Architecture,
    run: &Scenario,
    q: &QloraBytes,
    logits: N,
) -> Result<(), ScenarioError> {
    let f = ForwardEnd::of(run, a, q);
    // What the forward's end holds beyond the backward's tensors, against what the backward
    // holds beyond the forward's (its third float32 `s·b·V` tensor against the bf16 logits).
    let (forward, backward) = (f.adapter_copies + f.activations, logits - f.logits);
    if forward * 10 < backward * 8 {
        return Ok(());
    }
    Err(ScenarioError::key(
        "lora_rank",
        format!(
            "{} with QLoRA at rank {}: autocast's bfloat16 copies of the adapters ({:.2} GiB) may \
             make the end of the loss's forward the peak, which is replayed for the Llama family \
             only; a lower rank, fewer targets or longer rows keep the loss's backward the peak",
            a.name,
            run.lora_rank,
            f.adapter_copies.0 as f64 / f64::from(1u32 << 30)
        ),
    ))
}
