//! The candidate moments of a Hugging Face GPT-2 training step, each read from the replay's
//! list of storages alive at that moment (`replay_gpt2.py --explain`).
//!
//! Large vocabularies peak at cross-entropy's backward; small ones (a character-level model)
//! during the last block's backward: `gelu_new`'s backward under SDPA, the softmax's backward
//! under eager attention, and with checkpointed blocks the recomputed last block's softmax
//! backward. By then the head's backward has run: the logits' buffers, ln_f's saved tensors and
//! the head's 16-bit weight copy are gone, and the head's gradient contribution to the tied
//! weight (`4·V·h`) waits in autograd's input buffer for the embedding's.

use super::saves::{Gpt2Run, FP32};
use crate::estimate::memory::{Components, TrainMoment};
use crate::estimate::num::N;
use crate::estimate::trainer::StepTotals;

/// What every moment of a step shares.
pub(super) struct Gpt2Step {
    /// The run's sizes.
    pub(super) r: Gpt2Run,
    /// What every moment shares.
    pub(super) t: StepTotals,
}

/// Which of a recomputed block's backward moments.
#[derive(Clone, Copy)]
enum Gpt2Recomputed {
    /// `gelu_new`'s backward.
    Mlp,
    /// The softmax's backward.
    Attention,
}

impl Gpt2Step {
    /// The moment's components from its gradients, weight copies and activations (no logits).
    fn at(&self, gradients: N, autocast_weights: N, activations: N) -> Components {
        self.t.at(gradients, autocast_weights, activations, N::ZERO)
    }

    /// Every weight copy the forward saved.
    fn all_copies(&self) -> N {
        if self.t.checkpointed {
            self.r.head_copy()
        } else {
            self.r.l * self.r.block_copies() + self.r.head_copy()
        }
    }

    /// The gradients during the last block's backward: every one when accumulating, else the
    /// ones computed so far (`early`, elements); and the head's contribution to the tied weight.
    fn grads_in_backward(&self, early: N) -> N {
        self.grads_in_block(early, N::ZERO)
    }

    /// The same during the backward of the block `done` blocks below the last (those blocks'
    /// gradients complete too, without accumulation).
    fn grads_in_block(&self, early: N, done: N) -> N {
        let grads = if self.t.accumulating {
            self.t.full_grads
        } else {
            (early + done * self.t.block_params) * FP32
        };
        grads + self.r.vh * FP32
    }

    /// Cross-entropy's backward: every saved activation, and at `log_softmax`'s backward its
    /// saved fp32 output, the fp32 gradient from `nll_loss` and the fp32 result (`12·sbV`).
    pub(super) fn loss_backward(&self) -> Components {
        let saved = if self.t.checkpointed {
            self.r.checkpointed()
        } else {
            self.r.saved()
        };
        let grads = if self.t.accumulating {
            self.t.full_grads
        } else {
            N::ZERO
        };
        Components {
            logits: self.r.sbv * (3 * FP32),
            ..self.at(grads, self.all_copies(), saved)
        }
    }

    /// The end of the forward: the 16-bit logits, their fp32 copy (the same tensor in float32)
    /// and the fp32 log-softmax; ln_f's fp32 output is still referenced.
    pub(super) fn loss_forward(&self) -> Components {
        let b = self.loss_backward();
        let upcast = if self.r.autocast() { FP32 } else { 0 };
        Components {
            activations: b.activations + self.r.sbh * FP32,
            logits: self.r.sbv * (self.r.c + upcast + FP32),
            ..b
        }
    }

    /// The end of backward: every gradient, the tied weight's two contributions summed (and,
    /// accumulating, added to `.grad`), no activations.
    pub(super) fn backward_end(&self) -> Components {
        let contributions = if self.t.accumulating { 2u128 } else { 1 };
        self.at(
            self.t.full_grads + self.r.vh * (contributions * FP32),
            N::ZERO,
            N::ZERO,
        )
    }

    /// `gelu_new`'s backward in the last block (not checkpointed): ln_f's saves, the MLP
    /// dropout's mask and mlp.c_proj's input and weight copy are released; in flight are the
    /// GELU's gradients (`Gpt2Run::gelu_backward_in_flight`) and the residual stream's fp32
    /// gradient. Gradients so far without accumulation: mlp.c_proj's
    /// weight and bias and ln_f's.
    pub(super) fn mlp_backward(&self) -> Components {
        let r = &self.r;
        let activations = r.saved() - r.norm_site() - r.dropout_mask() - r.sbi * r.c
            + r.gelu_backward_in_flight()
            + r.sbh * FP32;
        let copies =
            self.all_copies() - r.head_copy() - if r.autocast() { r.ih * 2 } else { N::ZERO };
        let early = r.ih + r.h * 3;
        self.at(self.grads_in_backward(early), copies, activations)
    }

    /// mlp.c_proj's weight gradient in the last block (not checkpointed), as autograd casts it
    /// back to float32: the node has released its saved input (`gelu_new`'s output) and weight
    /// copy and written the gradient of its input (`c·sbI`); the 16-bit weight gradient and its
    /// float32 cast (`(c + 4)·I·h`; float32: the one `4·I·h`) are alive beside the others (the
    /// replay's peak at micro-batch 1, where the weights outweigh the activations).
    pub(super) fn mlp_weight_grad(&self) -> Components {
        let r = &self.r;
        let activations = r.saved() - r.norm_site() - r.dropout_mask() + r.sbh * FP32;
        let copies =
            self.all_copies() - r.head_copy() - if r.autocast() { r.ih * 2 } else { N::ZERO };
        let weight_grad = if r.autocast() {
            r.ih * (r.c + FP32)
        } else {
            r.ih * FP32
        };
        self.at(
            self.grads_in_backward(r.h * 3) + weight_grad,
            copies,
            activations,
        )
    }

    /// The softmax's backward in the last block's eager attention (not checkpointed): the
    /// block's MLP, both norms after the attention (ln_2, ln_f), its two dropout masks, the
    /// output and value copies and, per score, all but the softmax are released; in flight per
    /// score the gradient of the softmax's output and the result, plus the residual stream's
    /// fp32 gradient and the values' gradient. Gradients so far without accumulation: the
    /// block's MLP and c_proj and the two norms.
    pub(super) fn attention_backward(&self) -> Components {
        let r = &self.r;
        let freed = r.gelu()
            + r.norm_site() * 2
            + r.dropout_mask() * 2
            + r.sbh * r.c
            + r.sb_kv * r.c
            + r.scores * r.per_score_freed_early();
        let in_flight = r.scores * r.per_score_grad() + r.sbh * (FP32 + r.c);
        let copies = self.all_copies()
            - r.head_copy()
            - if r.autocast() {
                (r.ih * 2 + r.hh) * 2
            } else {
                N::ZERO
            };
        let early = r.ih * 2 + r.i + r.hh + r.h * 6;
        self.at(
            self.grads_in_backward(early),
            copies,
            r.saved() - freed + in_flight,
        )
    }

    /// Checkpointed blocks: a moment of the recomputed block `k` (eager attention). Alive: the
    /// inputs of blocks `0..=k` (`4·sbh` each; block `k + 1`'s was released with it), the float32
    /// mask and the embedding dropout's mask, and of the recomputation:
    /// - at `gelu_new`'s backward, everything the block saves (as without checkpointing; its
    ///   ln_1 input is the block's input) but mlp.c_proj's input and the MLP dropout's mask, with
    ///   the same gradients in flight as [`Gpt2Step::mlp_backward`], and the block's weight copies
    ///   but mlp.c_proj's;
    /// - at the softmax's backward, the fp32 softmax, the query and key copies, ln_1's output and
    ///   statistics and c_attn's weight copy, in flight as in [`Gpt2Step::attention_backward`].
    ///
    /// Accumulating, every gradient exists and the last block (`k = L − 1`) holds the most;
    /// without, the gradients grow as the backward goes down while the inputs shrink, so block 0
    /// is a candidate too (the replay's float32 run without accumulation peaks there).
    fn recomputed(&self, k: N, moment: Gpt2Recomputed) -> Components {
        let r = &self.r;
        let inputs = (k + N::from(1u64)) * r.sbh * FP32 + r.dropout_mask() + r.mask_2d * FP32;
        let (saved, in_flight, copies, early) = match moment {
            Gpt2Recomputed::Mlp => {
                let layer = r.norm_site() * 2 + r.dropout_mask() * 2 + r.gelu() + r.attention();
                let saved = layer - r.sbh * FP32 - r.sbi * r.c - r.dropout_mask();
                let copies = r.block_copies() - if r.autocast() { r.ih * 2 } else { N::ZERO };
                (
                    saved,
                    // The replay's peak here comes before the 16-bit gradient of `0.5·x`: the
                    // three float32 gradients only.
                    r.sbi * (3 * FP32) + r.sbh * FP32,
                    copies,
                    r.ih + r.h * 3,
                )
            }
            Gpt2Recomputed::Attention => {
                let saved = r.scores * FP32 + r.sbh * (3 * r.c) + r.sb * 8;
                let in_flight = r.scores * r.per_score_grad() + r.sbh * (FP32 + r.c);
                let copy = if r.autocast() { r.hh * 3 * 2 } else { N::ZERO };
                (saved, in_flight, copy, r.ih * 2 + r.i + r.hh + r.h * 6)
            }
        };
        let done = r.l - N::from(1u64) - k;
        self.at(
            self.grads_in_block(early, done),
            copies,
            inputs + saved + in_flight,
        )
    }

    /// The largest candidate and its moment (cross-entropy's backward wins ties).
    pub(super) fn peak(&self) -> (Components, TrainMoment) {
        let mut best = (self.loss_backward(), TrainMoment::LossBackward);
        let mut consider = |c: Components, m: TrainMoment| {
            if c.sum() > best.0.sum() {
                best = (c, m);
            }
        };
        consider(self.loss_forward(), TrainMoment::LossForward);
        consider(self.backward_end(), TrainMoment::BackwardEnd);
        if self.t.checkpointed {
            let last = self.r.l - N::from(1u64);
            for k in [last, N::ZERO] {
                for moment in [Gpt2Recomputed::Mlp, Gpt2Recomputed::Attention] {
                    consider(self.recomputed(k, moment), TrainMoment::BlockRecompute);
                }
            }
        } else {
            consider(self.mlp_weight_grad(), TrainMoment::MlpBackward);
            consider(self.mlp_backward(), TrainMoment::MlpBackward);
            if !self.r.sdpa {
                consider(self.attention_backward(), TrainMoment::AttentionBackward);
            }
        }
        best
    }
}
