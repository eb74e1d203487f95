//! The Llama family's step with Liger Kernel's fused linear cross-entropy
//! (`fused_linear_cross_entropy: true`, `estimate::fused_ce`): the head and the loss become one
//! chunked function in the forward, which computes their gradients there; no `s·b·V` buffer
//! exists at any moment.
//!
//! Read from the replay (`tools/hf_replay/replay_fused_ce.py --explain`, liger-kernel 0.8.5
//! ported allocation for allocation) against Liger's source. The moments after the forward are
//! the step's own (`moments.rs`: the final norm's backward, the eager softmax's, a recomputed
//! block's, the end of backward) and come out the same: the head saves nothing, and the norm's
//! output it no longer saves was its input, counted there as released; the gradient the final
//! norm receives is `grad_input` (the input's dtype, as the head's was), and the head's weight
//! gradient is `grad_weight` in the weight's dtype, stolen by `.grad` (untied) or waiting for
//! the embedding's (tied), as the head's own was.

use super::moments::LlamaStep;
use super::saves::FP32;
use crate::estimate::fused_ce::Chunking;
use crate::estimate::memory::Components;
use crate::estimate::num::N;

impl LlamaStep {
    /// The fused head and loss in the forward, at its largest chunk moment. Alive: everything
    /// the forward saved but the head's input (the head is no `Linear` now), the final norm's
    /// output as `hidden_states` (`w·s·b·h`: it is the function's input), the labels (padded,
    /// `8·b·(s + 1)`, and shifted, `8·s·b`), the cache's copies attention did not save, under
    /// autocast every weight's bf16 copy; and the function's own buffers:
    /// - `grad_input` (`w·s·b·h`), `grad_weight` (`w·V·h`), `loss_1d` (`4·s·b`) and the
    ///   ignored-label mask (`s·b` bytes), through the whole loop;
    /// - one chunk's logits (`chunk·V` elements in the matmul's dtype: `c`);
    /// - and at the chunk's largest moment, in float32 without autocast the weight gradient's
    ///   `mm(grad_logits.t(), input_chunk)` (`4·V·h`, added to `grad_weight`: no out-of-place
    ///   `addmm` for float32 logits); under autocast the logits' matmul `input_chunk @
    ///   weight.t()` with its casts, the input chunk (`2·chunk·h`) and the transposed weight
    ///   (`2·V·h`, a view, which autocast does not cache, beside the cached cast of the weight
    ///   itself from the chunk before when there is more than one chunk); with bf16 weights
    ///   nothing more (`mm(out=)` and `addmm(out=)` into the buffers).
    pub(crate) fn fused_forward(&self) -> Components {
        let r = &self.r;
        let whole = |n: N| u64::try_from(n.0).unwrap_or(u64::MAX);
        let vocab = whole(r.sbv) / whole(r.sb).max(1);
        let chunking = Chunking::of(whole(r.sb), whole(r.h), vocab);
        let chunk = N::from(chunking.chunk_size);
        let labels = r.b * (r.s + N::from(1u64)) * 8 + r.sb * 8;
        let cache = if self.t.checkpointed {
            N::ZERO
        } else {
            r.cache_only()
        };
        let hidden = r.sbh * r.w;
        let activations = self.saved() - r.norm_output(1) + hidden + labels + cache;
        // grad_weight is the head's gradient, made early: shown with the gradients.
        let grad_weight = r.vh * r.w;
        let resident = r.sbh * r.w + r.sb * (FP32 + 1);
        let logits = chunking.logits(vocab) * r.c;
        let transient = if r.autocast {
            let cached_beside = if chunking.chunks > 1 {
                r.vh * 2
            } else {
                N::ZERO
            };
            chunk * r.h * 2 + cached_beside
        } else if r.c == FP32 {
            r.vh * FP32
        } else {
            N::ZERO
        };
        self.t.at(
            self.t.earlier_grads() + grad_weight,
            r.weight_copies(false),
            activations,
            resident + logits + transient,
        )
    }

    /// The last block's MLP backward, at the product `silu(gate) · up` (not checkpointed, a
    /// dense MLP): with no logits left this can be the peak. The final norm's saves and
    /// down_proj's input (the product, `c·s·b·I`) are released; in flight the product's
    /// gradient and the two it makes, `silu`'s output's and up's (`3·c·s·b·I`), and the
    /// residual stream's gradient (`w·s·b·h`); gradients so far: the head's, the final norm's
    /// and down_proj's (all of them when accumulating), a tied head's waiting; under autocast
    /// the head's and down_proj's weight copies are gone.
    pub(crate) fn last_mlp_backward(&self) -> Components {
        let r = &self.r;
        let freed = r.final_norm() + r.sbi * r.c;
        let in_flight = r.sbi * (3 * r.c) + r.sbh * r.w;
        let copies = if r.autocast {
            r.weight_copies(false) - r.vh * 2 - r.h * r.i * 2
        } else {
            N::ZERO
        };
        self.t.at(
            self.grads_in_block(r.h * r.i, N::ZERO),
            copies,
            self.saved() - freed + in_flight,
            N::ZERO,
        )
    }
}
