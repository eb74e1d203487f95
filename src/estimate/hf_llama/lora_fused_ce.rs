//! PEFT's LoRA on the Llama family with Liger Kernel's fused linear cross-entropy
//! (`lora_rank > 0`, `fused_linear_cross_entropy: true`; `estimate::fused_ce`): the frozen head
//! and the loss become one chunked function in the forward, and with no `s·b·V` buffer left
//! the peak moves to the fused function's chunk, into the last block, or to eager attention's
//! or a recomputed block's backward (`lora.rs`).
//!
//! Read from the replay (`tools/hf_replay/replay_fused_ce_peft.py --explain`: `replay_lora.py`'s
//! step with liger-kernel 0.8.5's function ported allocation for allocation) against Liger's
//! source. `Trainer(use_liger_kernel=True)` patches `model.get_base_model()`; PEFT froze the
//! head, so `fused_linear_cross_entropy_forward` finds `weight.requires_grad` false and
//! allocates no `grad_weight`: only `grad_input` (the input's shape and dtype), `loss_1d`
//! (float32, one per token), the ignored-label mask and one chunk's logits.

use super::lora::LlamaLoraStep;
use super::saves::FP32;
use crate::estimate::fused_ce::Chunking;
use crate::estimate::lora_targets::LoraModule;
use crate::estimate::memory::{Components, TrainMoment};
use crate::estimate::num::N;

/// A whole element count as `u64` (saturating).
fn whole(n: N) -> u64 {
    u64::try_from(n.0).unwrap_or(u64::MAX)
}

impl LlamaLoraStep {
    /// The run's chunking and vocabulary.
    fn chunking(&self) -> (Chunking, u64) {
        let r = &self.r;
        let vocab = whole(r.sbv) / whole(r.sb).max(1);
        (Chunking::of(whole(r.sb), whole(r.h), vocab), vocab)
    }

    /// The fused head and loss in the forward, at its largest chunk moment. Alive: everything
    /// the forward saved, the adapters' weight copies autocast's cache alone holds and the
    /// cache's copies attention did not save (not checkpointed), the final norm's output
    /// (`w·s·b·h`, the function's input), the labels (padded, `8·b·(s + 1)`, and shifted,
    /// `8·s·b`); the function's `grad_input` (`w·s·b·h`), `loss_1d` (`4·s·b`) and mask (`s·b`
    /// bytes), one chunk's logits (`chunk·V` in the matmul's dtype, `c`) and, with float32
    /// weights under autocast (no `mm(out=)`: the input is not in autocast's dtype), the
    /// matmul's casts: the input chunk (`2·chunk·h`) and the frozen head (`2·V·h`, made anew
    /// for every product: autocast caches casts of weights that require grad only).
    pub(crate) fn fused_forward(&self) -> Components {
        let r = &self.r;
        let (chunking, vocab) = self.chunking();
        let (saved, copies) = self.saved();
        let cached = if self.t.checkpointed {
            N::ZERO
        } else {
            self.blocks().cached + r.cache_only()
        };
        let labels = r.b * (r.s + N::from(1u64)) * 8 + r.sb * 8;
        let hidden = r.sbh * r.w;
        // Checkpointed, the previous micro-step's embedding output (a leaf that
        // `enable_input_require_grads` made require grad) and its gradient, held by that
        // step's loss until the new loss replaces it.
        let previous = if self.t.checkpointed {
            r.sbh * (2 * r.w)
        } else {
            N::ZERO
        };
        let resident = r.sbh * r.w + r.sb * (FP32 + 1) + previous;
        let logits = chunking.logits(vocab) * r.c;
        let transient = if r.autocast {
            r.vh * 2 + N::from(chunking.chunk_size) * r.h * 2
        } else {
            N::ZERO
        };
        self.t.at(
            self.t.earlier_grads(),
            copies,
            saved + cached + labels + hidden + resident,
            logits + transient,
        )
    }

    /// The last block's MLP backward at `silu(gate) · up` (not checkpointed, a dense MLP), the
    /// first moment after the fused function with a block's tensors in flight: the final
    /// norm's saves and down_proj's adapter saves are released; in flight the gradients of the
    /// product, `silu`'s output and up's (`3·c·s·b·I`), with an adapted down_proj its input's
    /// float32 gradient from the adapter (`4·s·b·I`), and the residual stream's gradient
    /// (`w·s·b·h`). Gradients: the earlier micro-steps', or down_proj's adapter's.
    pub(crate) fn fused_last_mlp_backward(&self) -> Components {
        let r = &self.r;
        let (saved, copies) = self.saved();
        let down = self.adapted(LoraModule::DownProj).is_some();
        let freed = r.sbh * FP32 + r.sb * FP32 + self.down_saves();
        let adapter = if down { r.sbi * FP32 } else { N::ZERO };
        let in_flight = r.sbi * (3 * r.c) + adapter + r.sbh * r.w;
        let grads = if self.t.accumulating {
            self.t.full_grads
        } else if down {
            self.adapters.rank * (r.i + r.h) * FP32
        } else {
            N::ZERO
        };
        self.t.at(grads, copies, saved - freed + in_flight, N::ZERO)
    }

    /// The final norm's backward, the first node after the fused function's (it hands back
    /// `grad_input`, which the norm's output cast consumes): every saved tensor, the frozen
    /// norm's float32 input and `rsqrt` among them, and five float32 `s·b·h` temporaries of
    /// `pow`'s, `mean`'s and the products' backward in flight. Gradients: the earlier
    /// micro-steps'.
    pub(crate) fn fused_final_norm_backward(&self) -> Components {
        let r = &self.r;
        let (saved, copies) = self.saved();
        self.t.at(
            self.t.earlier_grads(),
            copies,
            saved + r.sbh * (5 * FP32),
            N::ZERO,
        )
    }

    /// The last block's down_proj in the forward (not checkpointed, down_proj adapted), inside
    /// PEFT's `Linear.forward`: every block's saves and the copies autocast's cache holds (the
    /// final norm's not yet), and in flight the embedding's output (`LlamaModel.forward`'s
    /// `inputs_embeds`), the block's input and its residual after attention (`w·s·b·h` each; in
    /// float32 they are the norms' saved inputs, counted there),
    /// eager attention's causal mask (`w·b·s·s`), the post-attention norm's output and the base
    /// layer's result (`c·s·b·h` each), the product down_proj reads (`c·s·b·I`), and, where
    /// `lora_A` does not save them, PEFT's float32 copy of the product (`4·s·b·I` where `c` is
    /// 2: under autocast, or beside dropout) and then the larger of two moments: at `lora_A`
    /// under autocast, dropout's float32 output (`4·s·b·I`, with `lora_dropout`), or at
    /// `lora_B(…) * scaling`, `lora_B`'s output and its scaled copy (`s·b·h` each, bf16 under
    /// autocast, else float32).
    pub(crate) fn last_down_forward(&self) -> Components {
        let r = &self.r;
        let b = self.blocks();
        let (_, copies) = self.saved();
        // In float32 the block's input and residual are the norms' saved inputs themselves.
        let residuals = if r.w == FP32 { 1 } else { 3 };
        let mask = if r.sdpa {
            N::ZERO
        } else {
            r.b * r.s * r.s * r.w
        };
        let in_flight = self.down_in_flight() + r.sbh * (residuals * r.w) + mask;
        self.t.at(
            self.t.earlier_grads(),
            copies,
            b.saved + r.rope() + b.cached + r.cache_only() + in_flight,
            N::ZERO,
        )
    }

    /// A checkpointed block `k` recomputed in the backward, at its down_proj adapter's forward
    /// (the moment of [`LlamaLoraStep::last_down_forward`] inside the recomputation): the
    /// inputs of blocks `0..=k` and what every checkpointed block receives, the block's
    /// recomputed saves (`LlamaLoraStep::recomputed`'s) and weight copies, the gradient of the
    /// block's output (`w·s·b·h`), and in flight the residual after attention (`w·s·b·h`, in
    /// float32 the post-attention norm's saved input), the norm's output and the base layer's
    /// result (`c·s·b·h` each), the product (`c·s·b·I`), PEFT's float32 copy of it and the
    /// larger of dropout's float32 output and `lora_B`'s two outputs, as in the forward.
    /// Gradients: the earlier micro-steps', or the adapters of the blocks above.
    pub(crate) fn recomputed_down_forward(&self, k: N) -> Components {
        let r = &self.r;
        let b = self.block(true);
        let layer = b.saved + r.recomputed_layer() - r.layer();
        let inputs = (k + N::from(1u64)) * r.sbh * r.w + r.checkpoint_inputs();
        let residual = if r.w == FP32 { N::ZERO } else { r.sbh * r.w };
        let in_flight = self.down_in_flight() + residual + r.sbh * r.w;
        let above = r.l - N::from(1u64) - k;
        let grads = if self.t.accumulating {
            self.t.full_grads
        } else {
            self.t.full_grads / u128::from(self.layers.max(1)) * above
        };
        self.t
            .at(grads, b.copies, inputs + layer + in_flight, N::ZERO)
    }

    /// What PEFT's `Linear.forward` of an adapted down_proj holds beside the block's saves:
    /// the post-attention norm's output and the base layer's result (`c·s·b·h` each), the
    /// product (`c·s·b·I`), PEFT's float32 copy of it where `lora_A` does not save it (`4·s·b·I`
    /// where `c` is 2: under autocast, or beside dropout), then the larger of two moments: at
    /// `lora_A` under autocast, dropout's float32 output (`4·s·b·I`), or at
    /// `lora_B(…) * scaling`, `lora_B`'s output and its scaled copy (`s·b·h` each, bf16 under
    /// autocast, else float32).
    fn down_in_flight(&self) -> N {
        let r = &self.r;
        let (autocast, dropout) = (self.adapters.autocast, self.adapters.dropout);
        let upcast = if r.c == FP32 || !(autocast || dropout) {
            N::ZERO
        } else {
            r.sbi * FP32
        };
        let dropped = if autocast && dropout {
            r.sbi * FP32
        } else {
            N::ZERO
        };
        let scaled = r.sbh * (2 * if autocast { 2 } else { FP32 });
        r.sbi * r.c + upcast + dropped.max(scaled) + r.sbh * (2 * r.c)
    }

    /// The largest of the fused step's moments (the fused function wins ties).
    pub(crate) fn fused_candidates(&self) -> (Components, TrainMoment) {
        let mut best = (self.fused_forward(), TrainMoment::LossForward);
        let mut consider = |c: Components, m: TrainMoment| {
            if c.sum() > best.0.sum() {
                best = (c, m);
            }
        };
        consider(self.fused_final_norm_backward(), TrainMoment::HeadBackward);
        if !self.t.checkpointed && self.r.experts.is_none() {
            consider(self.fused_last_mlp_backward(), TrainMoment::MlpBackward);
            if self.adapted(LoraModule::DownProj).is_some() {
                consider(self.last_down_forward(), TrainMoment::LossForward);
            }
        }
        if !self.r.sdpa && !self.t.checkpointed {
            consider(self.attention_backward(), TrainMoment::AttentionBackward);
        }
        if self.t.checkpointed && self.adapted(LoraModule::DownProj).is_some() {
            for k in [N::ZERO, self.r.l - N::from(1u64)] {
                consider(self.recomputed_down_forward(k), TrainMoment::BlockRecompute);
            }
        }
        best
    }
}
