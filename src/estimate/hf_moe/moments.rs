//! The moments of a mixture-of-experts step the dense Llama step does not have: the experts'
//! backward, where a whole layer's expert weight gradient (`E·2·I·h` for the gate and up
//! projections) is made at once, in the last layer (not checkpointed) or in a recomputed
//! checkpointed block (the first and the last).
//!
//! Source: the replay's storages alive at those peaks (`replay_moe.py --explain`).

use super::ExpertRun;
use crate::estimate::hf_llama::moments::LlamaStep;
use crate::estimate::memory::{Components, TrainMoment};
use crate::estimate::num::N;

/// Bytes of an int64 index.
const INT64: u128 = 8;

/// Which grouped matrix product's backward.
#[derive(Clone, Copy)]
enum Projection {
    /// The product with the routing weights: its gradient, and the routing weights'.
    Routing,
    /// `down_proj`'s: its weight gradient `(E, h, I)` made.
    Down,
    /// The product `silu(gate) · up`'s, after `down_proj`'s.
    Product,
    /// `gate_up_proj`'s: its weight gradient `(E, 2·I, h)` made.
    GateUp,
}

/// The experts' candidate moments of `step`.
pub(crate) fn moments(step: &LlamaStep, e: &ExpertRun) -> Vec<(Components, TrainMoment)> {
    let r = &step.r;
    let mut out = Vec::new();
    for p in [
        Projection::Routing,
        Projection::Down,
        Projection::Product,
        Projection::GateUp,
    ] {
        if step.t.checkpointed {
            let last = r.l - N::from(1u64);
            for k in [N::ZERO, last] {
                let inputs = (k + N::from(1u64)) * r.sbh * r.w + r.checkpoint_inputs();
                let copies = if r.autocast {
                    r.block_linear * 2
                } else {
                    N::ZERO
                };
                let base = inputs + r.recomputed_layer();
                out.push((
                    at(step, e, p, base, copies, last - k),
                    TrainMoment::BlockRecompute,
                ));
            }
        } else {
            // The final norm's saves and the head's copy are released by the last layer's
            // backward.
            let base = step.saved() - r.final_norm();
            let copies = r.weight_copies(false) - if r.autocast { r.vh * 2 } else { N::ZERO };
            out.push((
                at(step, e, p, base, copies, N::ZERO),
                TrainMoment::MlpBackward,
            ));
        }
    }
    out
}

/// The moment of projection `p`'s backward in a block `above` blocks below the last, with
/// `base` the activations alive before the block's MLP backward starts (its own saves among
/// them) and `copies` autocast's weight copies then.
///
/// At the product with the routing weights (`proj_out · weights`): the inverse permutation is
/// released; in flight the gradient of the product (the index's backward) and the two products
/// of its backward, in the product's dtype, and the gradient of `proj_out` cast to the
/// experts' dtype where the two differ.
///
/// Released at the projections' backward: the down projection's output and the routing weights it was scaled by,
/// the inverse permutation; at `gate_up`'s, also the product, `silu`'s output and the up
/// projection's output. In flight: at `down`'s, the gradient of its output (`ce·S·h`), of its
/// input (`ce·S·I`) and of the routing weights (`S` of the routing weights' dtype); at the
/// product's, released also the product (down's input), in flight the gradient of the product
/// and its two products (`ce·S·I` each); at `gate_up`'s, the gradient of its output (`ce·S·2I`, the gate and up halves joined) and of its
/// input (`ce·S·h`); the gradient of the block's output (`w·T·h`) in all, and with a shared
/// expert the gradient of its output (`c·T·h`), waiting for its MLP's backward. The new weight
/// gradient is made beside the gradients so far (beside all of them when accumulating).
fn at(step: &LlamaStep, e: &ExpertRun, p: Projection, base: N, copies: N, above: N) -> Components {
    let r = &step.r;
    let per_pair = e.pairs * e.ce;
    let down_released = per_pair * e.h + e.pairs * (e.score + INT64);
    let weight = e.experts * e.h * e.i;
    // The product with the routing weights is in the promoted dtype of the two (float32 for
    // Mixtral's float32 weights on bf16 experts).
    let product = e.ce.max(e.score);
    let cast = if product == e.ce { 0 } else { e.ce };
    let (released, in_flight, early, new) = match p {
        Projection::Routing => (
            e.pairs * INT64,
            e.pairs * e.h * (3 * product + cast),
            N::ZERO,
            N::ZERO,
        ),
        Projection::Down => (
            down_released,
            per_pair * (e.h + e.i) + e.pairs * e.score,
            N::ZERO,
            weight,
        ),
        Projection::Product => (
            down_released + per_pair * e.i,
            per_pair * (e.i * 3),
            weight,
            N::ZERO,
        ),
        Projection::GateUp => (
            down_released + per_pair * (e.i * 4),
            per_pair * (e.i * 2 + e.h),
            weight,
            weight * 2,
        ),
    };
    // Qwen2-MoE's shared expert: its gated product's backward runs first (created last), so
    // the gradient of the shared expert's output waits for its MLP's backward, which runs after
    // the experts' (created before them); its saved output and gate are released.
    let shared = if e.shared == N::ZERO {
        N::ZERO
    } else {
        e.tokens * e.h * e.c
    };
    let grads = if step.t.accumulating {
        step.grads_in_block(N::ZERO, above) + new * r.w
    } else {
        step.grads_in_block(early + new, above)
    };
    step.t.at(
        grads,
        copies,
        base - released + in_flight + shared + r.sbh * r.w,
        N::ZERO,
    )
}
