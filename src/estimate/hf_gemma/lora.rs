//! PEFT's LoRA on Gemma 2 and Gemma 3: the Trainer step of `get_peft_model(model,
//! LoraConfig(...))` with every base parameter frozen, the tied embedding and head among them
//! (`lora_adapters` has what the adapters add, shared with GPT-2 and the Llama family).
//!
//! What a frozen Gemma block still saves, from `modeling_gemma2.py` / `modeling_gemma3.py` read
//! against the replay (`tools/hf_replay/replay_gemma_peft.py --explain`): autograd saves a
//! tensor only for a gradient it will compute, so a frozen Linear keeps no input (only, under
//! autocast with float32 weights, its weight's bf16 copy where its input carries a gradient);
//! each frozen `(1 + w)` RMSNorm keeps its float32 input, its `rsqrt` column and the float32
//! `1 + w` vector, but not `x̂` (the product with `1 + w` saves `x̂` only for the weight's
//! gradient); Gemma 3's QK-norms likewise per head; the gated MLP keeps the gate's and up's
//! outputs and the GELU's, not the product down_proj reads. Attention saves what a full
//! fine-tune's does (`GemmaRun::attention`: sliding-window masks, Gemma 2's softcapping `tanh`),
//! less eager attention's contiguous output where o_proj is frozen. Until the first adapter
//! nothing carries a gradient (the embedding and its `√hidden` scale are frozen), unless
//! gradient checkpointing runs, where `enable_input_require_grads` makes the embedding's output
//! require grad. The frozen tied head keeps only its weight (its bf16 copy under autocast); the
//! final norm and Gemma 2's final softcapping `tanh` are kept as in a full fine-tune.

use super::saves::{GemmaRun, FP32};
use crate::estimate::arch::Span;
use crate::estimate::lora_adapters::{self, Adapted, AdapterInput, Adapters, LoraPeak};
use crate::estimate::lora_targets::LoraModule;
use crate::estimate::memory::{Components, TrainMoment};
use crate::estimate::num::N;
use crate::estimate::trainer::StepTotals;

/// A LoRA run of a Gemma model.
pub(super) struct GemmaLoraStep {
    /// The run's sizes.
    pub(super) r: GemmaRun,
    /// What every moment shares.
    pub(super) t: StepTotals,
    /// The adapters.
    pub(super) adapters: Adapters,
    /// The adapted modules with their `(in, out)` features.
    pub(super) modules: Vec<Adapted>,
    /// The queries' width `heads·head_dim`, the keys' (and values') `kv_heads·head_dim`, the
    /// MLP's intermediate width.
    pub(super) q: N,
    pub(super) kv: N,
    pub(super) i: N,
    /// Liger's fused linear cross-entropy in place of the head and loss (`lora_fused_ce.rs`).
    pub(super) fused: bool,
}

/// What one block saves, and the adapters' weight copies autocast's cache keeps to the end of
/// the forward beside them.
#[derive(Default, Clone, Copy)]
pub(super) struct GemmaLoraBlock {
    pub(super) saved: N,
    pub(super) copies: N,
    pub(super) cached: N,
}

impl GemmaLoraStep {
    /// Whether `m` is adapted.
    fn adapted(&self, m: LoraModule) -> bool {
        self.modules.iter().any(|(x, _, _)| *x == m)
    }

    /// A frozen `(1 + w)` RMSNorm over `elements` whose input carries a gradient: the float32
    /// input, one `rsqrt` per `rows`, the float32 `1 + w` of `width`.
    fn frozen_norm(elements: N, rows: N, width: N) -> N {
        elements * FP32 + rows * FP32 + width * FP32
    }

    /// One of the hidden-width frozen norms.
    fn norm(&self) -> N {
        Self::frozen_norm(self.r.sbh, self.r.sb, self.r.h)
    }

    /// The Linears reading one input, each `(module, out)`: their frozen weight copies (bf16
    /// under autocast with float32 weights, where the input carries a gradient) and their
    /// adapters. Returns, per reader, whether its output carries a gradient.
    fn readers(
        &self,
        block: &mut GemmaLoraBlock,
        input: AdapterInput,
        readers: &[(LoraModule, N)],
    ) -> Vec<bool> {
        let mut x = input;
        let mut grads = Vec::with_capacity(readers.len());
        for &(m, out) in readers {
            if self.r.autocast && self.r.w == FP32 && x.requires_grad {
                block.copies = block.copies + input.width * out * 2;
            }
            let (saved, cached, grad) = self.adapters.reader(&mut x, out, self.adapted(m));
            block.saved = block.saved + saved;
            block.cached = block.cached + cached;
            grads.push(grad);
        }
        grads
    }

    /// What one block of `span` saves when its input carries a gradient (`requires_grad`) or
    /// not.
    fn block(&self, span: Span, requires_grad: bool) -> GemmaLoraBlock {
        let r = &self.r;
        let (q, kv, i) = (self.q, self.kv, self.i);
        let mut b = GemmaLoraBlock::default();
        if requires_grad {
            b.saved = b.saved + self.norm();
        }
        let normed = |g: bool, width: N| AdapterInput {
            width,
            bytes: r.w,
            requires_grad: g,
            counted: false,
        };
        let qkv = self.readers(
            &mut b,
            normed(requires_grad, r.h),
            &[
                (LoraModule::QProj, q),
                (LoraModule::KProj, kv),
                (LoraModule::VProj, kv),
            ],
        );
        let attention = qkv.iter().any(|g| *g);
        let eager = r.eager_like(span);
        if attention {
            b.saved = b.saved + self.attention(span, &qkv);
            if r.qk_norm {
                let norm = |g: bool, elements: N, heads: N| {
                    if g {
                        Self::frozen_norm(elements, r.sb * heads, r.head_dim)
                    } else {
                        N::ZERO
                    }
                };
                b.saved = b.saved + norm(qkv[0], r.sbq, r.heads) + norm(qkv[1], r.sbkv, r.kv_heads);
            }
        }
        // SDPA's kernels save their output, o_proj's input; eager attention does not.
        let o_in = AdapterInput {
            width: q,
            bytes: r.c,
            requires_grad: attention,
            counted: !eager,
        };
        let o = self.readers(&mut b, o_in, &[(LoraModule::OProj, r.h)])[0];
        // The post-attention norm reads o_proj's output; the residual sum carries a gradient
        // from the block's input or from it.
        if o {
            b.saved = b.saved + self.norm();
        }
        let mlp_in = requires_grad || o;
        if mlp_in {
            b.saved = b.saved + self.norm();
        }
        let gu = self.readers(
            &mut b,
            normed(mlp_in, r.h),
            &[(LoraModule::GateProj, i), (LoraModule::UpProj, i)],
        );
        let (gate, up) = (gu[0], gu[1]);
        // `gelu(gate) · up`: the GELU saves the gate's output; the product saves up's output
        // for the GELU's gradient and the GELU's output for up's.
        let mlp = match (gate, up) {
            (true, true) => 3u128,
            (true, false) => 2,
            (false, true) => 1,
            (false, false) => 0,
        };
        b.saved = b.saved + r.sbi * (mlp * r.c);
        let down_in = AdapterInput {
            width: i,
            bytes: r.c,
            requires_grad: gate || up,
            counted: false,
        };
        let down = self.readers(&mut b, down_in, &[(LoraModule::DownProj, r.h)])[0];
        if down {
            b.saved = b.saved + self.norm();
        }
        b
    }

    /// What one layer's attention of `span` saves when the queries, keys and values carry a
    /// gradient as `qkv` says (one at least): a full fine-tune's (`GemmaRun::attention`), less
    /// eager attention's contiguous output, which only o_proj kept. Eager attention (and
    /// float32 SDPA's math composite, which saves the same) keeps each input of its two
    /// matmuls only for the other's gradient: the queries for the keys', the keys for the
    /// queries', the probabilities' 16-bit cast for the values', the values for the
    /// probabilities' (which need the queries' or the keys'). SDPA's kernels save all four
    /// whatever needs a gradient.
    fn attention(&self, span: Span, qkv: &[bool]) -> N {
        let r = &self.r;
        let full = r.attention(span);
        if !r.eager_like(span) {
            return full;
        }
        let (keys, values) = r.kv_saved(span);
        let (q, k, v) = (qkv[0], qkv[1], qkv[2]);
        let cast = if r.c == FP32 { 0 } else { r.c };
        let mut unsaved = r.sbq * r.c;
        if !k {
            unsaved = unsaved + r.sbq * r.c;
        }
        if !q {
            unsaved = unsaved + keys;
        }
        if !v {
            unsaved = unsaved + r.scores * cast;
        }
        if !q && !k {
            unsaved = unsaved + values;
        }
        full - unsaved
    }

    /// Every block, by span: the first (local where the model has local layers) with its
    /// input's gradient only under checkpointing, the rest with (an adapter below feeds them).
    pub(super) fn blocks(&self) -> GemmaLoraBlock {
        let r = &self.r;
        let first_span = if r.local > 0 {
            Span::Local
        } else {
            Span::Global
        };
        let mut all = self.block(first_span, self.t.checkpointed);
        for (span, count) in [(Span::Local, r.local), (Span::Global, r.global)] {
            let n = if span == first_span {
                count.saturating_sub(1)
            } else {
                count
            };
            let b = self.block(span, true);
            all.saved = all.saved + b.saved * N::from(n);
            all.copies = all.copies + b.copies * N::from(n);
            all.cached = all.cached + b.cached * N::from(n);
        }
        all
    }

    /// The head's bf16 weight copy under autocast with float32 weights (saved: the final norm's
    /// output carries a gradient); none with the fused cross-entropy, which calls no Linear.
    fn head_copy(&self) -> N {
        if self.r.autocast && self.r.w == FP32 && !self.fused {
            self.r.vh * 2
        } else {
            N::ZERO
        }
    }

    /// The final frozen norm, and Gemma 2's final softcapping `tanh` output (`c·s·b·V`; none
    /// with the fused cross-entropy, whose kernel caps the logits in place).
    fn final_norm(&self) -> N {
        let r = &self.r;
        let tanh = if r.logit_softcap && !self.fused {
            r.sbv * r.c
        } else {
            N::ZERO
        };
        self.norm() + tanh
    }

    /// Everything saved and the weight copies among it: the blocks (or, checkpointed, their
    /// inputs with the rotary tables, `position_ids` and the masks), the final norm, `cos` and
    /// `sin`.
    pub(super) fn saved(&self) -> (N, N) {
        let r = &self.r;
        if self.t.checkpointed {
            let inputs = r.l * r.sbh * r.w + r.checkpoint_inputs();
            return (inputs + self.final_norm(), self.head_copy());
        }
        let b = self.blocks();
        (
            b.saved + self.final_norm() + r.rope(),
            b.copies + self.head_copy(),
        )
    }

    /// The loss's two moments (`lora_adapters::loss_moments`): what only the forward holds
    /// is the adapters' weight copies only the cache holds, the cache's tensors attention did
    /// not save, under autocast the final norm's output, and the labels (padded, `8·b·(s + 1)`,
    /// and shifted, `8·s·b`).
    fn loss_moments(&self) -> [(Components, TrainMoment); 2] {
        let r = &self.r;
        let cached = if self.t.checkpointed {
            N::ZERO
        } else {
            self.blocks().cached + r.cache_only()
        };
        let hidden = if r.autocast { r.sbh * r.w } else { N::ZERO };
        let labels = r.b * (r.s + N::from(1u64)) * 8 + r.sb * 8;
        lora_adapters::loss_moments(&self.t, self.saved(), cached + hidden + labels, r.sbv, r.c)
    }

    /// A bound on any block's backward (recomputed under checkpointing): everything the forward
    /// saved and, for checkpointed blocks, one block's recomputed saves, with that block's
    /// widest backward in flight (the MLP's `3·c·s·b·I` and two `s·b·h` gradients in float32,
    /// or eager attention's float32 softmax gradient and result, 8 bytes per score), every
    /// adapter gradient and the weight copies (a recomputed block's too); and the part of it a
    /// block adds (its recomputed saves and copies, what is in flight), which the bound's
    /// margin is taken of.
    fn block_bound(&self) -> (N, N) {
        let r = &self.r;
        let (saved, copies) = self.saved();
        // A recomputed block's saves and its frozen weights' bf16 copies; without
        // checkpointing both are among `saved` and `copies` already.
        let (recomputed, block_copies) = if self.t.checkpointed {
            let (local, global) = (
                self.block(Span::Local, true),
                self.block(Span::Global, true),
            );
            (
                local.saved.max(global.saved) + r.rope(),
                local.copies.max(global.copies),
            )
        } else {
            (N::ZERO, N::ZERO)
        };
        let scores = if r.sdpa { N::ZERO } else { r.scores * 8 };
        let in_flight = (r.sbi * (3 * r.c) + r.sbh * (2 * FP32)).max(scores + r.sbh * FP32);
        let bound = self
            .t
            .at(
                self.t.full_grads,
                copies + block_copies,
                saved + recomputed + in_flight,
                N::ZERO,
            )
            .sum();
        (bound, recomputed + in_flight + block_copies)
    }

    /// The larger of the loss's moments (its backward wins ties); `None` where a block's
    /// backward could reach it, its own part counted a quarter larger (not modelled).
    fn peak_moment(&self) -> Option<(Components, TrainMoment)> {
        let [mut best, forward] = if self.fused {
            self.fused_moments()
        } else {
            self.loss_moments()
        };
        if forward.0.sum() > best.0.sum() {
            best = forward;
        }
        let (bound, own) = self.block_bound();
        if bound + own / 4 >= best.0.sum() {
            return None;
        }
        Some(best)
    }
}

impl LoraPeak for GemmaLoraStep {
    fn totals(&mut self) -> &mut StepTotals {
        &mut self.t
    }

    fn peak(&self) -> Option<(Components, TrainMoment)> {
        self.peak_moment()
    }
}
