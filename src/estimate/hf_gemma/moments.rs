//! The candidate moments of a Gemma training step, each read from the replay's list of storages
//! alive at that moment (`replay_gemma.py --explain`), and the largest of them.
//!
//! Every replayed run peaks at one of three moments: the loss's backward (the 256k-token
//! vocabularies make `12·s·b·V` the largest buffer), the end of the forward (small
//! vocabularies, under autocast), or the end of backward (the tied embedding's two gradient
//! contributions and their sum). With checkpointed blocks a recomputed block's backward can set
//! the peak with a small vocabulary; that moment is not modelled to 1 %, so `peak` returns a
//! bound on it and `hf_gemma::step` refuses the run where the bound reaches the others.

use super::saves::{GemmaRun, FP32};
use crate::estimate::arch::Span;
use crate::estimate::memory::{Components, TrainMoment};
use crate::estimate::num::N;
use crate::estimate::trainer::StepTotals;

/// One step's moments: the run's sizes and what every moment shares.
pub(super) struct GemmaStep<'a> {
    pub(super) r: &'a GemmaRun,
    pub(super) t: &'a StepTotals,
    /// Liger's fused linear cross-entropy in place of the head and loss (`fused_ce.rs`).
    pub(super) fused: bool,
}

impl GemmaStep<'_> {
    /// Everything the forward saved.
    pub(super) fn saved(&self) -> N {
        if self.t.checkpointed {
            self.r.checkpointed_saves()
        } else {
            self.r.saved()
        }
    }

    /// Cross-entropy's backward: `ForCausalLMLoss`'s float32 logits, log-softmax output and its
    /// gradient, `12·s·b·V` bytes, beside every saved activation (the logit softcapping's
    /// `tanh` output among them).
    fn loss_backward(&self) -> Components {
        self.t.at(
            self.t.earlier_grads(),
            self.r.weight_copies(self.t.checkpointed),
            self.saved(),
            self.r.sbv * (3 * FP32),
        )
    }

    /// The end of the forward, at `log_softmax`: the logits (`c`), their float32 copy and the
    /// float32 log-softmax; under autocast the final norm's float32 output; the padded labels
    /// (`8·b·(s + 1)`) and their shifted copy (`8·s·b`); the cache's copies attention did not
    /// save; every autocast weight copy (the cache of casts lives until autocast ends). The
    /// masks are gone: the model's forward has returned.
    fn loss_forward(&self) -> Components {
        let r = self.r;
        let upcast = if r.c == FP32 { 0 } else { FP32 };
        let labels = r.b * (r.s + N::from(1u64)) * 8 + r.sb * 8;
        let hidden = if r.autocast { r.sbh * r.w } else { N::ZERO };
        self.t.at(
            self.t.earlier_grads(),
            r.weight_copies(false),
            self.saved() + hidden + labels + r.cache_only(),
            r.sbv * (r.c + upcast + FP32),
        )
    }

    /// The end of backward: every gradient and the tied weight's two contributions (the
    /// head's, waiting in autograd's input buffer, and the embedding's) and their sum; no
    /// activations.
    fn backward_end(&self) -> Components {
        let sums = if self.t.accumulating { 3u128 } else { 2 };
        self.t.at(
            self.t.full_grads + self.r.vh * (sums * self.r.w),
            N::ZERO,
            N::ZERO,
            N::ZERO,
        )
    }

    /// A bound on a recomputed (checkpointed) block's backward: every block's input and the
    /// checkpoint inputs, one block's recomputed saves with its MLP backward in flight
    /// (`3·c·s·b·I` and the block output's gradient), every gradient with the tied head's
    /// waiting contribution, and the block's autocast weight copies.
    pub(super) fn recompute_bound(&self) -> N {
        let r = self.r;
        let layer = r.layer(Span::Local).max(r.layer(Span::Global));
        let in_flight = r.sbi * (3 * r.c) + r.sbh * r.w;
        let copies = if r.autocast {
            r.block_linear * 2
        } else {
            N::ZERO
        };
        let waiting = r.vh * if r.autocast { FP32 } else { r.w };
        self.t
            .at(
                self.t.full_grads + waiting,
                copies,
                r.l * r.sbh * r.w + r.checkpoint_inputs() + layer + in_flight,
                N::ZERO,
            )
            .sum()
    }

    /// The largest candidate and its moment (the loss's backward wins ties).
    pub(super) fn peak(&self) -> (Components, TrainMoment) {
        if self.fused {
            let mut best = (self.fused_forward(), TrainMoment::LossForward);
            let mut others = vec![(self.backward_end(), TrainMoment::BackwardEnd)];
            if !self.r.sdpa && !self.t.checkpointed {
                others.push((
                    self.fused_attention_backward(),
                    TrainMoment::AttentionBackward,
                ));
            }
            for (c, m) in others {
                if c.sum() > best.0.sum() {
                    best = (c, m);
                }
            }
            return best;
        }
        let mut best = (self.loss_backward(), TrainMoment::LossBackward);
        for (c, m) in [
            (self.loss_forward(), TrainMoment::LossForward),
            (self.backward_end(), TrainMoment::BackwardEnd),
        ] {
            if c.sum() > best.0.sum() {
                best = (c, m);
            }
        }
        best
    }
}
