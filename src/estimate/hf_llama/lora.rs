//! PEFT's LoRA on the Llama family: the Trainer step of `get_peft_model(model, LoraConfig(...))`
//! with every base parameter frozen (`lora_adapters` has what the adapters add).
//!
//! What a frozen block still saves, from `modeling_llama.py` read against the replay
//! (`tools/hf_replay/replay_lora.py --explain`): autograd saves a tensor only for a gradient it
//! will compute, so a frozen Linear keeps no input (only its weight, or under autocast with
//! float32 weights the weight's bf16 copy, where its input carries a gradient); a frozen
//! RMSNorm keeps its float32 input and `rsqrt` but not `x̂` (`weight · x̂` saves `x̂` only for
//! the weight's gradient); SwiGLU keeps the gate's and up's outputs and `silu`'s, but not the
//! product down_proj reads. Attention saves what a full fine-tune's does, less eager attention's
//! contiguous output (o_proj's input). The first block's input, the frozen embedding's output,
//! carries no gradient: until the first adapter nothing there is saved, unless gradient
//! checkpointing runs, where `enable_input_require_grads` makes the embedding's output require
//! grad (as `get_peft_model` and transformers do for a checkpointed model). The frozen head keeps
//! only its weight (its bf16 copy under autocast), and the embedding gets no gradient.

use super::saves::{LlamaRun, FP32};
use crate::estimate::lora_adapters::{AdapterInput, Adapters, LoraPeak};
use crate::estimate::lora_targets::LoraModule;
use crate::estimate::memory::{Components, TrainMoment};
use crate::estimate::num::N;
use crate::estimate::trainer::StepTotals;

/// A LoRA run of a Llama-family model.
pub(crate) struct LlamaLoraStep {
    /// The run's sizes.
    pub(crate) r: LlamaRun,
    /// What every moment shares.
    pub(crate) t: StepTotals,
    /// The adapters.
    pub(crate) adapters: Adapters,
    /// The adapted modules with their `(in, out)` features.
    pub(crate) modules: Vec<(LoraModule, u64, u64)>,
    /// The keys' (and the values') width, `kv_heads·head_dim`.
    pub(crate) kv: N,
    /// Blocks.
    pub(crate) layers: u64,
    /// Liger's fused linear cross-entropy in place of the head and loss (`lora_fused_ce.rs`).
    pub(crate) fused: bool,
}

/// One block's saves, and the adapters' weight copies autocast's cache keeps to the end of the
/// forward beside them.
#[derive(Default, Clone, Copy)]
pub(crate) struct LlamaLoraBlock {
    pub(crate) saved: N,
    pub(crate) copies: N,
    pub(crate) cached: N,
    /// Of `saved` and `copies`: what o_proj and everything after it keep (released before the
    /// block's softmax backward), and those modules' adapter parameters.
    after: N,
    after_copies: N,
    after_adapters: N,
}

impl LlamaLoraStep {
    /// The `out` features of `m` if it is adapted.
    pub(crate) fn adapted(&self, m: LoraModule) -> Option<N> {
        self.modules
            .iter()
            .find(|(x, _, _)| *x == m)
            .map(|&(_, _, o)| N::from(o))
    }

    /// A frozen Linear of `in·out` weights reading an input that carries a gradient: under
    /// autocast with float32 weights its bf16 weight copy is saved.
    pub(crate) fn frozen_copy(&self, weights: N, requires_grad: bool) -> N {
        if self.r.autocast && requires_grad {
            weights * 2
        } else {
            N::ZERO
        }
    }

    /// The Linears reading one input of `width` (`dtype` bytes, carrying a gradient or not),
    /// each `(module, out)`: their frozen copies and their adapters. Returns whether any output
    /// carries a gradient (its input's, or an adapter's).
    pub(crate) fn readers(
        &self,
        block: &mut LlamaLoraBlock,
        input: AdapterInput,
        readers: &[(LoraModule, N)],
        shared: bool,
    ) -> Vec<bool> {
        let mut x = input;
        x.counted = shared;
        readers
            .iter()
            .map(|&(m, out)| {
                block.copies = block.copies + self.frozen_copy(input.width * out, x.requires_grad);
                match self.adapted(m) {
                    Some(out) => {
                        block.saved = block.saved + self.adapters.saves(x, out);
                        block.cached = block.cached + self.adapters.cached_only(x);
                        x.counted = true;
                        true
                    }
                    None => x.requires_grad,
                }
            })
            .collect()
    }

    /// What one block saves when its input carries a gradient (`requires_grad`) or not.
    pub(crate) fn block(&self, requires_grad: bool) -> LlamaLoraBlock {
        let r = &self.r;
        let mut b = LlamaLoraBlock::default();
        let norm = r.sbh * FP32 + r.sb * FP32;
        if requires_grad {
            b.saved = b.saved + norm;
        }
        let normed = |g: bool, width: N| AdapterInput {
            width,
            bytes: r.w,
            requires_grad: g,
            counted: false,
        };
        let attention_in: Vec<(LoraModule, N)> = if r.attention_readers == 1 {
            vec![(LoraModule::QkvProj, r.q + self.kv * 2)]
        } else {
            let kv = self.kv;
            vec![
                (LoraModule::QProj, r.q),
                (LoraModule::KProj, kv),
                (LoraModule::VProj, kv),
            ]
        };
        let qkv = self.readers(&mut b, normed(requires_grad, r.h), &attention_in, false);
        let attention = qkv.iter().any(|g| *g);
        if attention {
            // Eager attention's contiguous output is o_proj's input, which a frozen o_proj
            // does not save.
            let output = if r.sdpa { N::ZERO } else { r.sbq * r.c };
            b.saved = b.saved + r.attention() - output + self.qk_norm();
        }
        let (saved_before, copies_before) = (b.saved, b.copies);
        let o_in = AdapterInput {
            width: r.q,
            bytes: r.c,
            requires_grad: attention,
            counted: false,
        };
        let o = self.readers(&mut b, o_in, &[(LoraModule::OProj, r.h)], r.sdpa)[0];
        let mlp_in = requires_grad || o;
        if mlp_in {
            b.saved = b.saved + norm;
        }
        match &r.experts {
            Some(e) => crate::estimate::hf_moe::lora::mlp(self, &mut b, e, normed(mlp_in, r.h)),
            None => self.dense_mlp(&mut b, normed(mlp_in, r.h)),
        }
        b.after = b.saved - saved_before;
        b.after_copies = b.copies - copies_before;
        b.after_adapters = self
            .modules
            .iter()
            .filter(|(m, _, _)| !attention_in.iter().any(|(x, _)| x == m))
            .map(|&(_, i, o)| self.adapters.rank * (N::from(i) + N::from(o)))
            .sum();
        b
    }

    /// The dense MLP of a block reading `x` (the post-attention norm's output).
    fn dense_mlp(&self, b: &mut LlamaLoraBlock, x: AdapterInput) {
        self.swiglu(b, x, self.r.i, self.r.mlp_readers == 1);
    }

    /// A SwiGLU MLP `i` wide (`fused`: Phi-3's `gate_up_proj`) reading `x`, its Linears
    /// adapted as `modules` says; returns whether its output carries a gradient.
    pub(crate) fn swiglu(
        &self,
        b: &mut LlamaLoraBlock,
        x: AdapterInput,
        i: N,
        fused: bool,
    ) -> bool {
        let r = &self.r;
        let sbi = r.sb * i;
        let mlp_readers: Vec<(LoraModule, N)> = if fused {
            vec![(LoraModule::GateUpProj, i * 2)]
        } else {
            vec![(LoraModule::GateProj, i), (LoraModule::UpProj, i)]
        };
        let gu = self.readers(b, x, &mlp_readers, false);
        let (gate, up) = (gu[0], gu[gu.len() - 1]);
        // silu saves the gate's output, the product silu's output (for up's gradient) and up's
        // output (for silu's): Phi-3's fused output holds gate and up in one tensor.
        let mlp = match (gate, up, fused) {
            (true, _, true) | (true, true, false) => 3,
            (true, false, false) => 2,
            (false, true, false) => 1,
            _ => 0,
        };
        b.saved = b.saved + sbi * (mlp * r.c);
        let down_in = AdapterInput {
            width: i,
            bytes: r.c,
            requires_grad: gate || up,
            counted: false,
        };
        self.readers(b, down_in, &[(LoraModule::DownProj, r.h)], false)[0]
    }

    /// Qwen3's q/k norms with frozen weights: the float32 input and `rsqrt`, no `x̂`.
    fn qk_norm(&self) -> N {
        let r = &self.r;
        if !r.qk_norm {
            return N::ZERO;
        }
        (r.sbq + r.sbkv) * FP32 + r.sb * (r.heads + r.kv_heads) * FP32
    }

    /// Every block: the first with its input's gradient (only under checkpointing), the rest
    /// with (an adapter below feeds them).
    pub(crate) fn blocks(&self) -> LlamaLoraBlock {
        let first = self.block(self.t.checkpointed);
        let rest = self.block(true);
        let others = self.r.l - N::from(1u64);
        LlamaLoraBlock {
            saved: first.saved + rest.saved * others,
            copies: first.copies + rest.copies * others,
            cached: first.cached + rest.cached * others,
            ..rest
        }
    }

    /// The head's bf16 weight copy under autocast (saved: the final norm's output carries a
    /// gradient); none with the fused cross-entropy, which calls no Linear (its casts of the
    /// frozen head are transient, `lora_fused_ce.rs`).
    pub(crate) fn head_copy(&self) -> N {
        if self.r.autocast && !self.fused {
            self.r.vh * 2
        } else {
            N::ZERO
        }
    }

    /// Everything saved and the weight copies among it: the blocks (or, checkpointed, their
    /// inputs, `cos`, `sin`, `position_ids` and the mask), the final norm's float32 input and
    /// `rsqrt`, `cos` and `sin`.
    pub(crate) fn saved(&self) -> (N, N) {
        let r = &self.r;
        let final_norm = r.sbh * FP32 + r.sb * FP32;
        if self.t.checkpointed {
            let inputs = r.l * r.sbh * r.w + r.checkpoint_inputs();
            return (inputs + final_norm, self.head_copy());
        }
        let b = self.blocks();
        (b.saved + final_norm + r.rope(), b.copies + self.head_copy())
    }

    /// Cross-entropy's backward: every saved tensor beside `log_softmax`'s backward buffers
    /// (`12·s·b·V`, as in a full fine-tune).
    fn loss_backward(&self) -> Components {
        let (saved, copies) = self.saved();
        self.t.at(
            self.t.earlier_grads(),
            copies,
            saved,
            self.r.sbv * (3 * FP32),
        )
    }

    /// The end of the forward, at `log_softmax`: every saved tensor, the adapters' weight
    /// copies only the cache holds, the logits and their float32 copies, under autocast the
    /// final norm's float32 output, the labels, and the cache's copies attention did not save.
    fn loss_forward(&self) -> Components {
        let r = &self.r;
        let (saved, copies) = self.saved();
        let cached = if self.t.checkpointed {
            N::ZERO
        } else {
            self.blocks().cached + r.cache_only()
        };
        let upcast = if r.c == FP32 { 0 } else { FP32 };
        let hidden = if r.autocast { r.sbh * r.w } else { N::ZERO };
        let labels = r.b * (r.s + N::from(1u64)) * 8 + r.sb * 8;
        self.t.at(
            self.t.earlier_grads(),
            copies,
            saved + cached + hidden + labels,
            r.sbv * (r.c + upcast + FP32),
        )
    }

    /// The last block's softmax backward in eager attention (not checkpointed), as in a full
    /// fine-tune (`LlamaRun::at_softmax_backward`): the final norm's saves, the head's copy and
    /// the block's o_proj, post-attention norm and MLP with their adapters are released, and
    /// the softmax's 16-bit cast; in flight the float32 gradient of the softmax's output and
    /// its backward's result (8 bytes per score) and the residual stream's gradient. Gradients:
    /// the earlier micro-steps', or those of the released modules' adapters.
    pub(crate) fn attention_backward(&self) -> Components {
        let r = &self.r;
        let (saved, copies) = self.saved();
        let last = self.block(true);
        let released = r.sbh * FP32 + r.sb * FP32 + last.after + r.scores * r.score_cast();
        let in_flight = r.scores * (2 * FP32) + r.sbh * r.w;
        let grads = if self.t.accumulating {
            self.t.full_grads
        } else {
            last.after_adapters * FP32
        };
        self.t.at(
            grads,
            copies - self.head_copy() - last.after_copies,
            saved - released + in_flight,
            N::ZERO,
        )
    }

    /// A checkpointed block `k` recomputed in the backward (`LlamaStep::recomputed` for a full
    /// fine-tune): the inputs of blocks `0..=k`, `cos`, `sin`, `position_ids` and the mask, the
    /// block's recomputed saves (attention as a recomputation runs it: SDPA with the mask,
    /// `LlamaRun::recomputed_layer`) and weight copies, and in flight either the MLP's backward
    /// (down_proj's saves released; the gradients of the product, `silu`'s output and up's,
    /// `3·c·s·b·I`, and of the block's output) or, in eager attention, the softmax's (as in
    /// [`LlamaLoraStep::attention_backward`]). Gradients: the earlier micro-steps', or the adapters of
    /// the blocks above and of the released modules.
    pub(crate) fn recomputed(&self, k: N, mlp: bool) -> Components {
        let r = &self.r;
        let b = self.block(true);
        let layer = b.saved + r.recomputed_layer() - r.layer();
        let inputs = (k + N::from(1u64)) * r.sbh * r.w + r.checkpoint_inputs();
        let (activations, copies) = if mlp || r.sdpa {
            let down = self.down_saves();
            // An adapted down_proj's backward also holds its input's float32 gradient from the
            // adapter (in float32 it is one of the three), and the block output's gradient
            // twice (the residual's and the MLP's).
            let adapter = if down > N::ZERO && r.c != FP32 {
                r.sbi * FP32
            } else {
                N::ZERO
            };
            (
                layer - down + r.sbi * (3 * r.c) + adapter + r.sbh * (2 * r.w),
                b.copies,
            )
        } else {
            (
                layer - b.after - r.scores * r.score_cast() + r.scores * (2 * FP32) + r.sbh * r.w,
                b.copies - b.after_copies,
            )
        };
        let above = r.l - N::from(1u64) - k;
        let grads = if self.t.accumulating {
            self.t.full_grads
        } else {
            self.t.full_grads / u128::from(self.layers.max(1)) * above + b.after_adapters * FP32
        };
        self.t.at(grads, copies, inputs + activations, N::ZERO)
    }

    /// What down_proj's adapter saves (released first in a block's backward).
    pub(crate) fn down_saves(&self) -> N {
        let r = &self.r;
        match self.adapted(LoraModule::DownProj) {
            Some(out) => self.adapters.saves(
                AdapterInput {
                    width: r.i,
                    bytes: r.c,
                    requires_grad: true,
                    counted: false,
                },
                out,
            ),
            None => N::ZERO,
        }
    }

    /// The largest candidate and its moment (the loss's backward wins ties); `None` where a
    /// recomputed block's eager attention could set the peak. That moment (the recomputed
    /// softmax beside the adapters' dropout and casts redone) is not calibrated: the replay's
    /// checkpointed eager run with a 1024-token vocabulary peaks 16 % above
    /// [`LlamaLoraStep::recomputed`]'s attention candidate, so unless that candidate with a quarter
    /// more stays below the other moments the step is refused, not underestimated.
    fn peak_moment(&self) -> Option<(Components, TrainMoment)> {
        if let Some(e) = &self.r.experts {
            return crate::estimate::hf_moe::lora::peak(self, e);
        }
        let (mut best, mut moment) = self.peak_candidates();
        if !self.t.checkpointed {
            return Some((best, moment));
        }
        let blocks = [N::ZERO, self.r.l - N::from(1u64)];
        for k in blocks {
            let c = self.recomputed(k, true);
            if c.sum() > best.sum() {
                (best, moment) = (c, TrainMoment::BlockRecompute);
            }
        }
        if !self.r.sdpa {
            let attention = blocks
                .into_iter()
                .map(|k| self.recomputed(k, false).sum())
                .max()
                .unwrap_or(N::ZERO);
            if attention + attention / 4 >= best.sum() {
                return None;
            }
        }
        Some((best, moment))
    }

    /// The largest of the loss's moments (or the fused cross-entropy's, `lora_fused_ce.rs`)
    /// and eager attention's backward.
    pub(crate) fn peak_candidates(&self) -> (Components, TrainMoment) {
        if self.fused {
            return self.fused_candidates();
        }
        let mut best = (self.loss_backward(), TrainMoment::LossBackward);
        let mut consider = |c: Components, m: TrainMoment| {
            if c.sum() > best.0.sum() {
                best = (c, m);
            }
        };
        consider(self.loss_forward(), TrainMoment::LossForward);
        if !self.r.sdpa && !self.t.checkpointed {
            consider(self.attention_backward(), TrainMoment::AttentionBackward);
        }
        best
    }
}

impl LoraPeak for LlamaLoraStep {
    fn totals(&mut self) -> &mut StepTotals {
        &mut self.t
    }

    fn peak(&self) -> Option<(Components, TrainMoment)> {
        self.peak_moment()
    }
}
