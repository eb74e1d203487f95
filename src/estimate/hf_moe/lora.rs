//! PEFT's LoRA on a mixture of experts: what a block's router, experts and shared expert save
//! in the Llama family's LoRA step (`hf_llama/lora.rs`) in place of the dense MLP.
//!
//! Source: the replay (`tools/hf_replay/replay_moe_peft.py --explain`) read against
//! transformers 5.24's `grouped_mm_experts_forward` and PEFT 0.21.2's `lora.ParamWrapper`:
//!
//! - Frozen experts whose input carries a gradient keep, per (token, expert) pair, the up
//!   projection's output (`2·I`), `silu`'s output (`I`) and the down projection's output
//!   (`h`, for the routing weights' gradient), with the routing weights, the three int64
//!   indices and the offsets; not the gathered input nor the product `silu(gate) · up`, which
//!   only the experts' weight gradients read. The router saves what it saves in a full
//!   fine-tune (`ExpertRun::router`).
//! - An adapted expert parameter (`ParamWrapper`) is replaced, for each forward, by
//!   `baddbmm(W, B, A)`: a merged copy of the whole `(E, out, in)` parameter in the experts'
//!   dtype, which `torch._grouped_mm` saves for its input's gradient, beside the projection's
//!   input, now needed for the merged weight's gradient (the gathered input for `gate_up_proj`,
//!   the product for `down_proj`), and the adapters' copies in the experts' dtype where they
//!   differ from the float32 adapters. Without checkpointing every layer keeps its merged
//!   copies to the backward: the experts' weights twice over.
//! - An adapted router (`gate.weight`, 2-D): `W + B·A` merged (`E·h`) and its input saved.
//! - Qwen2-MoE's shared expert is a SwiGLU MLP of its width, its `shared_expert_gate` a
//!   Linear `h → 1` whose sigmoid output and the shared expert's output the product saves.

use super::ExpertRun;
use crate::estimate::error::ScenarioError;
use crate::estimate::hf_llama::lora::{LlamaLoraBlock, LlamaLoraStep};
use crate::estimate::lora_adapters::AdapterInput;
use crate::estimate::lora_targets::LoraModule;
use crate::estimate::memory::{Components, TrainMoment};
use crate::estimate::num::N;

/// Bytes of an int64 index and of a float32 element.
const INT64: u128 = 8;
const FP32: u128 = 4;

/// Adds to `b` what the mixture of experts `e` of `step`'s block saves reading `x` (the
/// post-attention norm's output).
pub(crate) fn mlp(step: &LlamaLoraStep, b: &mut LlamaLoraBlock, e: &ExpertRun, x: AdapterInput) {
    let r = &step.r;
    let router = step.adapted(LoraModule::Router).is_some();
    let gate_up = step.adapted(LoraModule::ExpertsGateUp).is_some();
    let down = step.adapted(LoraModule::ExpertsDown).is_some();
    let grad = x.requires_grad || router || gate_up || down;
    if router {
        // The merged weight (its bf16 copy under autocast), and the input for its gradient.
        let copy = if r.autocast {
            e.experts * e.h * 2
        } else {
            N::ZERO
        };
        b.saved = b.saved + e.experts * e.h * r.w + copy + e.tokens * e.h * r.c;
    } else {
        b.copies = b.copies + step.frozen_copy(e.experts * e.h, x.requires_grad);
    }
    if grad {
        b.saved = b.saved + e.router() + frozen_experts(e);
    }
    let cast = |elements: N| {
        if e.ce == FP32 {
            N::ZERO
        } else {
            elements * e.ce
        }
    };
    let rank = step.adapters.rank;
    if gate_up {
        let (i2, stacked) = (e.i * 2, rank * 2 * e.experts);
        b.saved = b.saved
            + e.experts * i2 * e.h * e.ce
            + e.pairs * e.h * e.ce
            + cast(stacked * (e.h + i2));
    }
    if down {
        let stacked = rank * e.experts;
        b.saved = b.saved
            + e.experts * e.h * e.i * e.ce
            + e.pairs * e.i * e.ce
            + cast(stacked * (e.h + e.i));
    }
    if e.shared > N::ZERO {
        let shared = step.swiglu(b, x, e.shared, false);
        let gated = step.readers(
            b,
            x,
            &[(LoraModule::SharedExpertGate, N::from(1u64))],
            false,
        )[0];
        // The sigmoid's output (saved by the sigmoid, or by the product for the shared
        // output's gradient: one tensor), and the shared output the product keeps for the
        // gate's gradient.
        if shared || gated {
            b.saved = b.saved + e.tokens * r.c;
        }
        if gated {
            b.saved = b.saved + e.tokens * e.h * r.c;
        }
    }
}

/// Frozen experts' saves: per pair the up projection's output, `silu`'s and the down
/// projection's (`3·I + h` in the experts' dtype), the gathered routing weights and three
/// int64 indices; the per-expert offsets.
fn frozen_experts(e: &ExpertRun) -> N {
    e.pairs * ((e.i * 3 + e.h) * e.ce) + e.pairs * (e.score + INT64 * 3) + e.experts * FP32
}

/// The experts' backward in the last block without checkpointing, or in a recomputed block
/// (the first and the last) with it, as a full fine-tune's (`moments.rs`) with frozen or
/// merged weights: at the product with the routing weights (the inverse permutation
/// released; in flight the product's gradient and its backward's two results,
/// `3·S·h` in the product's dtype, with the cast to the experts' dtype where they differ); at
/// `down_proj`'s (released the down projection's output, the gathered routing weights and the
/// inverse permutation; in flight the gradients of its output `ce·S·h`, its input `ce·S·I` and
/// the routing weights, and an adapted parameter's merged gradient `ce·E·h·I`); at the product
/// `silu(gate) · up`'s (released also `down_proj`'s merged copy and input where adapted; in
/// flight three `ce·S·I` tensors); at `gate_up_proj`'s (released also the up projection's and
/// `silu`'s outputs; in flight the gradients of its output `ce·S·2I` and input `ce·S·h`, and an
/// adapted parameter's merged gradient `ce·E·2I·h`). Beside them the block output's gradient
/// (`w·T·h`) and, with a shared expert, its output's gradient (`c·T·h`).
fn moments(step: &LlamaLoraStep, e: &ExpertRun) -> Vec<(Components, TrainMoment, bool)> {
    let r = &step.r;
    let gate_up = step.adapted(LoraModule::ExpertsGateUp).is_some();
    let down = step.adapted(LoraModule::ExpertsDown).is_some();
    let per_pair = e.pairs * e.ce;
    let down_released = per_pair * e.h + e.pairs * (e.score + INT64);
    let down_weight = e.experts * e.h * e.i * e.ce;
    let (down_saves, down_grad, down_adapters) = if down {
        (
            down_weight + per_pair * e.i,
            down_weight,
            step.adapters.rank * e.experts * (e.h + e.i) * FP32,
        )
    } else {
        (N::ZERO, N::ZERO, N::ZERO)
    };
    let gate_up_grad = if gate_up {
        e.experts * e.i * 2 * e.h * e.ce
    } else {
        N::ZERO
    };
    let product = e.ce.max(e.score);
    let cast = if product == e.ce { 0 } else { e.ce };
    // (released, in flight, adapter gradients made in the block so far, calibrated: the
    // routing product's backward never set a replayed LoRA peak)
    let at = [
        (
            e.pairs * INT64,
            e.pairs * e.h * (3 * product + cast),
            N::ZERO,
            false,
        ),
        (
            down_released,
            per_pair * (e.h + e.i) + e.pairs * e.score + down_grad,
            N::ZERO,
            true,
        ),
        (
            down_released + down_saves,
            per_pair * (e.i * 3),
            down_adapters,
            true,
        ),
        (
            down_released + down_saves + per_pair * (e.i * 3),
            per_pair * (e.i * 2 + e.h) + gate_up_grad,
            down_adapters,
            true,
        ),
    ];
    let shared = if e.shared == N::ZERO {
        N::ZERO
    } else {
        e.tokens * e.h * r.c
    };
    let per_block = step.t.full_grads / u128::from(step.layers.max(1));
    let mut out = Vec::new();
    let (saved, copies) = step.saved();
    for (released, in_flight, adapters, calibrated) in at {
        let in_flight = in_flight + r.sbh * r.w + shared;
        if step.t.checkpointed {
            let b = step.block(true);
            let layer = b.saved + r.recomputed_layer() - r.layer();
            let last = r.l - N::from(1u64);
            for k in [N::ZERO, last] {
                let inputs = (k + N::from(1u64)) * r.sbh * r.w + r.checkpoint_inputs();
                let grads = if step.t.accumulating {
                    step.t.full_grads
                } else {
                    per_block * (last - k) + adapters
                };
                let c = step.t.at(
                    grads,
                    b.copies,
                    inputs + layer - released + in_flight,
                    N::ZERO,
                );
                out.push((c, TrainMoment::BlockRecompute, calibrated));
            }
        } else {
            // The final norm's saves and the head's copy are released by the last block's
            // backward.
            let base = saved - r.sbh * FP32 - r.sb * FP32;
            let grads = if step.t.accumulating {
                step.t.full_grads
            } else {
                adapters
            };
            let c = step.t.at(
                grads,
                copies - step.head_copy(),
                base - released + in_flight,
                N::ZERO,
            );
            out.push((c, TrainMoment::MlpBackward, calibrated));
        }
    }
    out
}

/// The peak of a LoRA step on a mixture of experts: the largest of the loss's moments, eager
/// attention's backward and the experts' backward ([`moments`]); `None` (refused) where the
/// routing product's backward, or a recomputed block's forward through the experts, could set
/// it. That forward keeps, until `grouped_mm_experts_forward` returns, the gathered input and
/// the product `silu(gate) · up` that frozen experts do not save, and the output scaled by
/// the routing weights with its copy back in token order (a replay with a 512-token vocabulary
/// and 1024-wide experts on a 512-wide model peaks there): bounded by every saved tensor of
/// the last recomputed block with `ce·S·(h + I)` and `2·S·h` in the product's dtype beside,
/// and refused where that bound passes the moments modelled. Eager attention recomputed in a
/// checkpointed block is refused as in the Llama family.
pub(crate) fn peak(step: &LlamaLoraStep, e: &ExpertRun) -> Option<(Components, TrainMoment)> {
    let r = &step.r;
    let (mut best, mut moment) = step.peak_candidates();
    let mut uncalibrated = N::ZERO;
    for (c, m, calibrated) in moments(step, e) {
        if !calibrated {
            uncalibrated = uncalibrated.max(c.sum());
        } else if c.sum() > best.sum() {
            (best, moment) = (c, m);
        }
    }
    if uncalibrated >= best.sum() {
        return None;
    }
    // The experts' forward transients in the last block (recomputed, or the forward's own),
    // beside what is saved by then.
    let product = e.ce.max(e.score);
    let transients = e.pairs * e.ce * (e.h + e.i) + e.pairs * e.h * (2 * product);
    let last = r.l - N::from(1u64);
    let (saved, copies) = if step.t.checkpointed {
        let b = step.block(true);
        let inputs = r.l * r.sbh * r.w + r.checkpoint_inputs();
        (
            inputs + b.saved + r.recomputed_layer() - r.layer(),
            b.copies,
        )
    } else {
        let (saved, copies) = step.saved();
        (
            saved - r.sbh * FP32 - r.sb * FP32,
            copies - step.head_copy(),
        )
    };
    let forward = step.t.at(N::ZERO, copies, saved + transients, N::ZERO);
    if forward.sum() >= best.sum() {
        return None;
    }
    if step.t.checkpointed && !r.sdpa {
        let attention = [N::ZERO, last]
            .into_iter()
            .map(|k| step.recomputed(k, false).sum())
            .max()
            .unwrap_or(N::ZERO);
        if attention + attention / 4 >= best.sum() {
            return None;
        }
    }
    Some((best, moment))
}

/// The refusal of [`peak`]'s `None` on the mixture of experts `a` (none for a dense model).
pub(crate) fn refusal(a: &crate::estimate::arch::Architecture) -> Option<ScenarioError> {
    let crate::estimate::arch::Mlp::Moe(m) = &a.mlp else {
        return None;
    };
    Some(ScenarioError::key(
        "model",
        format!(
            "{}: with this vocabulary ({} tokens) beside {} experts {} wide per token, the \
             experts' forward, the routing product's backward or a recomputed block's eager \
             attention, not the loss, can set this LoRA step's peak, which vramdoc does not model within 1 %; estimate a longer sequence or \
             a larger batch, where the loss leads",
            a.name, a.vocab_size, m.experts_per_token, m.expert.intermediate
        ),
    ))
}
