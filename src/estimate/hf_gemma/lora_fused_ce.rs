//! PEFT's LoRA on Gemma 2 and Gemma 3 with Liger Kernel's fused linear cross-entropy
//! (`lora_rank > 0`, `fused_linear_cross_entropy: true`; `estimate::fused_ce`): the frozen tied
//! head and the loss, Gemma 2's final softcap included (applied in Liger's kernel, in place),
//! become one chunked function in the forward; the head being frozen, it allocates no
//! `grad_weight`.
//!
//! Read from the replay (`tools/hf_replay/replay_fused_ce_peft.py --gemma --explain`:
//! `replay_gemma_peft.py`'s LoRA step with liger-kernel 0.8.5's function ported allocation for
//! allocation). The two moments are the Llama family's (`hf_llama/lora_fused_ce.rs`): the
//! fused function at a chunk, and the final norm's backward. Where a block's backward may pass
//! them (`GemmaLoraStep::block_bound`, with its margin) the step is refused as without Liger.

use super::lora::GemmaLoraStep;
use super::saves::FP32;
use crate::estimate::fused_ce::Chunking;
use crate::estimate::memory::{Components, TrainMoment};
use crate::estimate::num::N;

/// A whole element count as `u64` (saturating).
fn whole(n: N) -> u64 {
    u64::try_from(n.0).unwrap_or(u64::MAX)
}

impl GemmaLoraStep {
    /// The fused step's two candidate moments, the final norm's backward first (it wins ties):
    /// - the fused function at a chunk: everything the forward saved, the adapters' weight
    ///   copies autocast's cache alone holds and the cache's tensors attention did not save
    ///   (not checkpointed), the final norm's output (`w·s·b·h`, the function's input), the
    ///   labels (`8·b·(s + 1) + 8·s·b`), `grad_input` (`w·s·b·h`), `loss_1d` and the label mask
    ///   (`5·s·b`), a chunk's logits in the compute dtype, and with float32 weights under
    ///   autocast the chunk's bf16 cast (`2·chunk·h`) and the frozen head's (`2·V·h`, not
    ///   cached: it needs no gradient); checkpointed, the previous micro-step's embedding output
    ///   and its gradient (`2·w·s·b·h`);
    /// - the final norm's backward: everything saved, and five float32 `s·b·h` temporaries.
    pub(super) fn fused_moments(&self) -> [(Components, TrainMoment); 2] {
        let r = &self.r;
        let (saved, copies) = self.saved();
        let vocab = whole(r.sbv) / whole(r.sb).max(1);
        let chunking = Chunking::of(whole(r.sb), whole(r.h), vocab);
        let cached = if self.t.checkpointed {
            N::ZERO
        } else {
            self.blocks().cached + r.cache_only()
        };
        let labels = r.b * (r.s + N::from(1u64)) * 8 + r.sb * 8;
        let resident = r.sbh * (2 * r.w) + r.sb * (FP32 + 1);
        let logits = chunking.logits(vocab) * r.c;
        let transient = if r.autocast && r.w == FP32 {
            r.vh * 2 + N::from(chunking.chunk_size) * r.h * 2
        } else {
            N::ZERO
        };
        // Checkpointed, the previous micro-step's embedding output (a leaf that
        // `enable_input_require_grads` made require grad) and its gradient, held by that
        // step's loss until the new loss replaces it (in the first step's first micro-step too
        // in this estimate: a bound there).
        let previous = if self.t.checkpointed {
            r.sbh * (2 * r.w)
        } else {
            N::ZERO
        };
        let earlier = self.t.earlier_grads();
        [
            (
                self.t
                    .at(earlier, copies, saved + r.sbh * (5 * FP32), N::ZERO),
                TrainMoment::HeadBackward,
            ),
            (
                self.t.at(
                    earlier,
                    copies,
                    saved + cached + labels + resident + previous,
                    logits + transient,
                ),
                TrainMoment::LossForward,
            ),
        ]
    }
}
