//! QLoRA on a mixture of experts: the loss's backward (`qlora::step`) or a recomputed block's
//! backward through the experts, whichever is larger.
//!
//! bitsandbytes quantizes `nn.Linear` layers only: transformers 5.24 keeps each layer's experts
//! as two 3-D parameters (and the router as a `TopKRouter`), which stay unquantized, and
//! `prepare_model_for_kbit_training` casts them to float32. `prepare_model_for_kbit_training`
//! also turns on gradient checkpointing (non-reentrant), so QLoRA always recomputes a block
//! during the backward; there the experts run in float32 (`torch._grouped_mm` in the weights'
//! dtype), and where LoRA adapts them (`lora.ParamWrapper`) each forward merges `W + B·A` into a
//! float32 copy of the whole `(E, out, in)` parameter. With Mixtral's 32k vocabulary these
//! tensors, not the loss's, set the peak.
//!
//! The block's moments are the experts' backward of a LoRA step (`lora.rs`: the product with
//! the routing weights, `down_proj`'s, the product `silu(gate) · up`'s, `gate_up_proj`'s) with
//! float32 experts, in the first and in the last recomputed block, beside what QLoRA's
//! recomputed block holds, read from the replay's storages alive at each such peak
//! (`tools/hf_replay/replay_moe_peft.py --explain`, torch 2.15, transformers 5.24, peft 0.21.2,
//! bitsandbytes 0.50.2):
//!
//! - resident: QLoRA's weights (`qlora::qlora_bytes`, the biases cast to the compute dtype),
//!   the optimizer's state, the adapters' gradients (all of them when accumulating; else those
//!   of the blocks above and, once `down_proj`'s backward is over, its adapters');
//! - the checkpoints: the float32 inputs of this block and the blocks below it
//!   (`(k + 1)·4·T·h`), the rotary `cos` and `sin` (`2·4·s·d`), the boolean mask (`b·s·s`), the
//!   position ids (`8·s`), the token batch (`8·T`) and the loss (two float32 scalars);
//! - the recomputed attention: both norms' float32 `rsqrt` (`4·T` each), three float32 `T·h`
//!   (the residual after the attention, the block output's gradient and one more), SDPA's saves
//!   (bf16 queries, keys and values repeated to every head and its output, `4·2·T·q`, the
//!   float32 log-sum-exp `4·T·heads`, the mask made additive in bf16 `2·b·s·s₁₆`); Qwen3's
//!   QK-norm's float32 inputs and `rsqrt`s; each adapted Linear's input cast to bf16 by autocast
//!   (`2·T·in`), its `A` output (`2·T·r`) and autocast's bf16 copies of its adapters;
//! - a shared expert (Qwen1.5-MoE): its 4-bit Linears' outputs cast back to the float32 input's
//!   dtype (gate, up and the `silu` between, `3·4·T·I_s`), its output and that output's
//!   gradient (`2·4·T·h`), each adapted Linear's bf16 input and `A` output (its gate's, run
//!   last, are released by then);
//! - the router's saves (`ExpertRun::router`), its frozen float32 weight's bf16 copy, or, where
//!   adapted, its merged float32 weight and its input in bf16;
//! - the experts' saves and the moments' released and in-flight tensors of `lora.rs`, in
//!   float32, with the inverse permutation still alive at the routing product's backward.
//!
//! Every replayed QLoRA run of Mixtral, Qwen1.5-MoE and Qwen3-MoE is within 0.24 % of this
//! (within 0.005 % for Mixtral's and Qwen3-30B-A3B's shapes, the whole 32- and 48-layer models
//! among them). The experts' forward in the recomputed block never set a replayed peak: at
//! `silu(gate) · up` it holds, beside the saves, the gathered input and the product (`4·S·(h +
//! I)`), less than the product's backward (`3·4·S·I` with the down projection's output
//! released) where `2·I > h` and less than the routing product's backward (`3·4·S·h` with every
//! save) where `3·h > I`, one of which always holds; at its end the replays' lists hold less than
//! at the routing product's backward (Qwen3-MoE's tiny shape, where a bound of every transient
//! passes that moment by 4 %, still peaks there).

use super::ExpertRun;
use crate::estimate::arch::Architecture;
use crate::estimate::lora_targets::LoraModule;
use crate::estimate::memory::{Components, TrainMoment};
use crate::estimate::num::N;
use crate::estimate::qlora::{LossBackward, QloraBytes};
use crate::estimate::scenario::Scenario;
use crate::estimate::trainer::TrainerStep;

/// Bytes of a float32, a bfloat16 and an int64 element.
const FP32: u128 = 4;
const BF16: u128 = 2;
const INT64: u128 = 8;

/// Which of the experts' parameters LoRA adapts (`lora.ParamWrapper`).
#[derive(Clone, Copy)]
struct AdaptedExperts {
    gate_up: bool,
    down: bool,
}

/// What a recomputed block holds beside the experts' moments, and what the moments need.
struct RecomputedBlock {
    /// Autocast's bf16 copies of weights (adapters, the frozen router).
    copies: N,
    /// Activations of the recomputed block and its experts' saves (the checkpoints apart).
    saved: N,
    /// The adapters' gradients of one block, and `down_proj`'s adapters' in it.
    per_block_grads: N,
    down_adapter_grads: N,
}

/// The QLoRA step of the mixture of experts `a` under `run`: the larger of the loss's backward
/// (`loss`) and the recomputed blocks' moments; `None` for a dense model.
pub(crate) fn step(
    a: &Architecture,
    run: &Scenario,
    q: &QloraBytes,
    loss: &LossBackward,
) -> Option<TrainerStep> {
    let e = ExpertRun::of(a, run, FP32, BF16)?;
    let modules = run.lora_targets.resolve(a).unwrap_or_default();
    let adapted = AdaptedExperts {
        gate_up: modules.contains(&LoraModule::ExpertsGateUp),
        down: modules.contains(&LoraModule::ExpertsDown),
    };
    let mut best = loss.step(run, q);
    let block = block(a, run, q, &e, &modules, adapted);
    let (s, b) = (N::from(run.block_size), N::from(run.batch_size));
    let layers = N::from(a.layers);
    // The checkpoints other than the block inputs: rotary cos and sin, the boolean mask, the
    // position ids, the token batch and the loss.
    let fixed = s * N::from(a.attention.head_dim) * (2 * FP32)
        + b * s * s
        + s * INT64
        + e.tokens * INT64
        + N(2 * FP32);
    let accumulating = run.gradient_accumulation_steps >= 2;
    for (released, in_flight, down_done) in moments(&e, adapted) {
        for k in [N::ZERO, layers - N::from(1u64)] {
            let gradients = if accumulating {
                q.grads
            } else {
                block.per_block_grads * (layers - N::from(1u64) - k)
                    + if down_done {
                        block.down_adapter_grads
                    } else {
                        N::ZERO
                    }
            };
            let at = |optimizer: N| Components {
                weights: loss.weights,
                gradients,
                optimizer,
                autocast_weights: block.copies,
                activations: (k + N::from(1u64)) * e.tokens * e.h * FP32 + fixed + block.saved
                    - released
                    + in_flight,
                logits: N::ZERO,
            };
            best.first = best.first.max(at(N::ZERO).sum());
            if at(q.optimizer).sum() > best.train.sum() {
                best.train = at(q.optimizer);
                best.moment = TrainMoment::BlockRecompute;
            }
        }
    }
    Some(best)
}

/// The experts' moments of `lora.rs` with float32 experts: `(released, in flight, whether
/// down_proj's adapters have their gradients)` at the product with the routing weights,
/// `down_proj`'s backward, the product `silu(gate) · up`'s and `gate_up_proj`'s. Beside them
/// the block output's gradient is in `RecomputedBlock::saved`.
fn moments(e: &ExpertRun, adapted: AdaptedExperts) -> [(N, N, bool); 4] {
    let (gate_up, down) = (adapted.gate_up, adapted.down);
    let per_pair = e.pairs * FP32;
    let down_released = per_pair * e.h + e.pairs * (e.score + INT64);
    let down_weight = e.experts * e.h * e.i * FP32;
    let (down_saves, down_grad) = if down {
        (down_weight + per_pair * e.i, down_weight)
    } else {
        (N::ZERO, N::ZERO)
    };
    let gate_up_grad = if gate_up {
        e.experts * e.i * 2 * e.h * FP32
    } else {
        N::ZERO
    };
    [
        // The routing product in float32: its gradient and its backward's two results.
        (N::ZERO, per_pair * e.h * 3, false),
        (
            down_released,
            per_pair * (e.h + e.i) + e.pairs * e.score + down_grad,
            false,
        ),
        (down_released + down_saves, per_pair * e.i * 3, down),
        (
            down_released + down_saves + per_pair * e.i * 3,
            per_pair * (e.i * 2 + e.h) + gate_up_grad,
            down,
        ),
    ]
}

/// What a recomputed block of `a` holds under QLoRA beside its checkpoints (module docs).
fn block(
    a: &Architecture,
    run: &Scenario,
    q: &QloraBytes,
    e: &ExpertRun,
    modules: &[LoraModule],
    adapted: AdaptedExperts,
) -> RecomputedBlock {
    let at = &a.attention;
    let (s, b, t, h) = (
        N::from(run.block_size),
        N::from(run.batch_size),
        e.tokens,
        e.h,
    );
    let (qw, kw) = (N::from(at.q_width()), N::from(at.kv_width()));
    let (heads, kv_heads) = (N::from(at.heads), N::from(at.kv_heads));
    let r = N::from(run.lora_rank);
    let padded = N::from(run.block_size.div_ceil(16) * 16);
    let mut saved = t * (2 * FP32)
        + t * h * (3 * FP32)
        + t * qw * (4 * BF16)
        + t * heads * FP32
        + N(2 * INT64)
        + b * s * padded * BF16;
    if at.qk_norm.is_some() {
        saved = saved + t * (qw + kw) * FP32 + t * (heads + kv_heads) * FP32;
    }
    let mut copies = N::ZERO;
    for m in modules {
        let (input, output) = m.features(a);
        let (input, output) = (N::from(input), N::from(output));
        match m {
            LoraModule::QProj
            | LoraModule::KProj
            | LoraModule::VProj
            | LoraModule::OProj
            | LoraModule::GateProj
            | LoraModule::UpProj
            | LoraModule::DownProj => {
                saved = saved + t * input * BF16 + t * r * BF16;
                copies = copies + r * (input + output) * BF16;
            }
            _ => {}
        }
    }
    if e.shared > N::ZERO {
        saved = saved + t * e.shared * (3 * FP32) + t * h * (2 * FP32);
    }
    saved = saved + e.router();
    if modules.contains(&LoraModule::Router) {
        saved = saved + e.experts * h * FP32 + t * h * BF16;
    } else {
        copies = copies + e.experts * h * BF16;
    }
    // The experts' saves: per pair the up projection's, silu's and the down projection's
    // outputs, the gathered routing weights, three int64 indices; the offsets; an adapted
    // parameter's merged copy with its input (the gathered input, the product).
    saved =
        saved + e.pairs * (e.i * 3 + h) * FP32 + e.pairs * (e.score + INT64 * 3) + e.experts * FP32;
    if adapted.gate_up {
        saved = saved + e.experts * e.i * 2 * h * FP32 + e.pairs * h * FP32;
    }
    if adapted.down {
        saved = saved + e.experts * h * e.i * FP32 + e.pairs * e.i * FP32;
    }
    let down_adapter_grads = if adapted.down {
        let (input, output) = LoraModule::ExpertsDown.features(a);
        r * N::from(input + output) * FP32
    } else {
        N::ZERO
    };
    RecomputedBlock {
        copies,
        saved,
        per_block_grads: q.grads / u128::from(a.layers.max(1)),
        down_adapter_grads,
    }
}
