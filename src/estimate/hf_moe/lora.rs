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

/// The backward of adapted experts' projections, where the merged parameter's gradient, a
/// whole `(E, out, in)` tensor in the experts' dtype, is made (then turned into the adapters'
/// gradients by `baddbmm`'s backward): in the last block without checkpointing, or in a
/// recomputed block (the first and the last) with it. None where no expert is adapted.
///
/// At `down_proj`'s backward: released (as in a full fine-tune, `moments.rs`) the down
/// projection's output, the gathered routing weights and the inverse permutation; in flight
/// the gradients of its output (`ce·S·h`), of its input (`ce·S·I`) and of the routing weights
/// (`S·score`), the merged weight's gradient (`ce·E·h·I`) and the block output's gradient
/// (`w·T·h`). At `gate_up_proj`'s: also released `down_proj`'s merged copy and its input where
/// it was adapted, the up projection's and `silu`'s outputs; in flight the gradients of its
/// output (`ce·S·2I`) and input (`ce·S·h`), the merged weight's (`ce·E·2I·h`).
pub(crate) fn moments(step: &LlamaLoraStep, e: &ExpertRun) -> Vec<(Components, TrainMoment)> {
    let r = &step.r;
    let gate_up = step.adapted(LoraModule::ExpertsGateUp).is_some();
    let down = step.adapted(LoraModule::ExpertsDown).is_some();
    if !gate_up && !down {
        return Vec::new();
    }
    let per_pair = e.pairs * e.ce;
    let down_released = per_pair * e.h + e.pairs * (e.score + INT64);
    let down_weight = e.experts * e.h * e.i * e.ce;
    let mut at = Vec::new();
    if down {
        let in_flight = per_pair * (e.h + e.i) + e.pairs * e.score + down_weight;
        at.push((down_released, in_flight, N::ZERO));
    }
    if gate_up {
        let down_saves = if down {
            down_weight + per_pair * e.i
        } else {
            N::ZERO
        };
        let released = down_released + down_saves + per_pair * (e.i * 3);
        let in_flight = per_pair * (e.i * 2 + e.h) + e.experts * e.i * 2 * e.h * e.ce;
        let adapters = if down {
            step.adapters.rank * e.experts * (e.h + e.i) * FP32
        } else {
            N::ZERO
        };
        at.push((released, in_flight, adapters));
    }
    let per_block = step.t.full_grads / u128::from(step.layers.max(1));
    let mut out = Vec::new();
    let (saved, copies) = step.saved();
    for (released, in_flight, adapters) in at {
        let in_flight = in_flight + r.sbh * r.w;
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
                out.push((c, TrainMoment::BlockRecompute));
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
            out.push((c, TrainMoment::MlpBackward));
        }
    }
    out
}
