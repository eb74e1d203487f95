//! Gemma 2 and Gemma 3 with Liger Kernel's fused linear cross-entropy
//! (`fused_linear_cross_entropy: true`, `estimate::fused_ce`): `apply_liger_kernel_to_gemma2`'s
//! `lce_forward` and `apply_liger_kernel_to_gemma3_text`'s `causal_forward` (liger-kernel 0.8.5)
//! hand the final norm's output, the tied head's weight and `final_logit_softcapping` to
//! `LigerFusedLinearCrossEntropyFunction`, whose Triton kernel applies the softcap to each
//! chunk's logits in place: no `s·b·V` tensor exists, the softcap's `tanh` output included.
//!
//! Read from the replay (`tools/hf_replay/replay_fused_ce.py --gemma --explain`, the function
//! ported allocation for allocation) against Liger's source: the fused function's moment is the
//! Llama family's (`hf_llama/fused_ce.rs`), on Gemma's saves; the tied head's `grad_weight`
//! waits for the embedding's gradient as the head's own did, so the end of backward is
//! unchanged.

use super::moments::GemmaStep;
use super::saves::FP32;
use crate::estimate::arch::Span;
use crate::estimate::fused_ce::Chunking;
use crate::estimate::memory::Components;
use crate::estimate::num::N;

/// A whole element count as `u64` (saturating).
fn whole(n: N) -> u64 {
    u64::try_from(n.0).unwrap_or(u64::MAX)
}

impl GemmaStep<'_> {
    /// The fused head and loss in the forward, at its largest chunk moment. Alive: everything
    /// the forward saved but the head's input and the softcap's `tanh` (the final norm's own
    /// saves stay), the final norm's output (`w·s·b·h`, the function's input), the labels
    /// (`8·b·(s + 1) + 8·s·b`), the cache's copies attention did not save, under autocast every
    /// weight's bf16 copy; the function's `grad_input` (`w·s·b·h`), the tied head's
    /// `grad_weight` (`w·V·h`, shown with the gradients), `loss_1d` (`4·s·b`) and the label
    /// mask (`s·b` bytes); one chunk's logits in the matmul's dtype; under autocast the chunk's
    /// bf16 cast (`2·chunk·h`) and the transposed head's (`2·V·h`, not cached) beside the
    /// cached cast of the head when there is more than one chunk; in float32 the weight
    /// gradient's `V·h` product per chunk.
    pub(super) fn fused_forward(&self) -> Components {
        let r = self.r;
        let vocab = whole(r.sbv) / whole(r.sb).max(1);
        let chunking = Chunking::of(whole(r.sb), whole(r.h), vocab);
        let labels = r.b * (r.s + N::from(1u64)) * 8 + r.sb * 8;
        let activations = self.fused_saved() + r.sbh * r.w + labels + r.cache_only();
        let resident = r.sbh * r.w + r.sb * (FP32 + 1);
        let logits = chunking.logits(vocab) * r.c;
        let transient = if r.autocast {
            let cached_beside = if chunking.chunks > 1 {
                r.vh * 2
            } else {
                N::ZERO
            };
            N::from(chunking.chunk_size) * r.h * 2 + cached_beside
        } else if r.c == FP32 {
            r.vh * FP32
        } else {
            N::ZERO
        };
        self.t.at(
            self.t.earlier_grads() + r.vh * r.w,
            r.weight_copies(false),
            activations,
            resident + logits + transient,
        )
    }

    /// What the forward saved with the fused function in place of the head: all of
    /// [`GemmaStep::saved`] but the head's input and the logit softcap's `tanh`.
    fn fused_saved(&self) -> N {
        let r = self.r;
        let tanh = if r.logit_softcap {
            r.sbv * r.c
        } else {
            N::ZERO
        };
        self.saved() - r.norm_output(1) - tanh
    }

    /// The last layer's eager softmax backward (not checkpointed): with no logits left it can
    /// pass the other moments at long sequences. Released by then: the final norm's saves, the
    /// layer's MLP, its three norms after attention with the MLP's input, o_proj's input
    /// (`c·s·b·q`), the values and the softmax's 16-bit cast; in flight the float32 gradient
    /// of the softmax's output and its backward's float32 result (8 bytes per score), the
    /// residual stream's gradient (`w·s·b·h`) and the values' gradient. Gradients: every one
    /// when accumulating, else the layer's MLP, o_proj and three norms; the tied head's
    /// `grad_weight` (`w·V·h`) waits for the embedding's. Under autocast the copies of those
    /// modules' weights are released; nothing keeps the head's.
    pub(super) fn fused_attention_backward(&self) -> Components {
        let r = self.r;
        let q = N(r.sbq.0 / r.sb.0.max(1));
        let i = N(r.sbi.0 / r.sb.0.max(1));
        let (_, value) = r.kv_saved(Span::Global);
        let cast = if r.c == FP32 { 0 } else { r.c };
        let freed = r.norm_site()
            + r.mlp()
            + r.norm_site() * 3
            + r.norm_output(2)
            + r.sbq * r.c
            + value
            + r.scores * cast;
        let in_flight = r.scores * (2 * FP32) + r.sbh * r.w + value;
        let layer = r.h * i * 3 + q * r.h + r.h * 3;
        let grads = if self.t.accumulating {
            self.t.full_grads
        } else {
            layer * r.w
        };
        let copies = if r.autocast {
            (r.l * r.block_linear - r.h * i * 3 - q * r.h) * 2
        } else {
            N::ZERO
        };
        self.t.at(
            grads + r.vh * r.w,
            copies,
            self.fused_saved() - freed + in_flight,
            N::ZERO,
        )
    }
}
