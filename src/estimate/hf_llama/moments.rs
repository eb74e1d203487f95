//! The candidate moments of a Llama-family training step, each read from the replay's list of
//! storages alive at that moment (`replay_llama.py --explain`), and the largest of them.
//!
//! With a real vocabulary (32k–152k) the peak is the loss's backward, the untied head's weight
//! gradient, or the end of backward (the tied embedding's gradient contributions summed); with
//! eager attention the last layer's softmax backward can pass them; with checkpointed blocks
//! the end of the forward (autocast's weight copies) or a recomputed block; with a small
//! vocabulary the end of the forward or the final norm's backward.

use super::saves::{LlamaRun, FP32};
use crate::estimate::memory::{Components, TrainMoment};
use crate::estimate::num::N;
use crate::estimate::trainer::StepTotals;

/// What every moment of a step shares.
pub(crate) struct LlamaStep {
    /// The run's sizes.
    pub(crate) r: LlamaRun,
    /// What every moment shares.
    pub(crate) t: StepTotals,
    /// Liger's fused linear cross-entropy in place of the head and loss (`fused_ce.rs`).
    pub(crate) fused: bool,
}

/// Which moment of a recomputed (checkpointed) block's backward.
#[derive(Clone, Copy)]
enum LlamaRecomputed {
    /// The backward of `silu(gate) · up`, after down_proj's.
    Mlp,
    /// The softmax's backward (eager attention).
    Attention,
}

impl LlamaStep {
    /// Everything the forward saved.
    pub(crate) fn saved(&self) -> N {
        if self.t.checkpointed {
            self.r.checkpointed()
        } else {
            self.r.saved()
        }
    }

    /// The gradients of earlier micro-steps: all of them when accumulating.
    fn earlier_grads(&self) -> N {
        self.t.earlier_grads()
    }

    /// Cross-entropy's backward (`ForCausalLMLoss` calls `logits.float()`, pads the labels
    /// rather than shifting the logits, then `cross_entropy`): at `log_softmax`'s backward its
    /// saved float32 output, the float32 gradient from `nll_loss` and the float32 result are
    /// alive, `12·s·b·V` bytes in every dtype; the 16-bit logits are gone (the step keeps only
    /// the loss).
    pub(crate) fn loss_backward(&self) -> Components {
        let copies = self.r.weight_copies(self.t.checkpointed);
        self.t.at(
            self.earlier_grads(),
            copies,
            self.saved(),
            self.r.sbv * (3 * FP32),
        )
    }

    /// The end of the forward, at `log_softmax`: the logits (`c`), their float32 copy (the
    /// same tensor in float32), the float32 log-softmax; under autocast the final norm's
    /// float32 output (the model's `hidden_states`), the padded labels (`8·b·(s + 1)`) and their shifted copy (`8·s·b`),
    /// the cache's copies attention did not save (`LlamaRun::cache_only`), and under autocast every
    /// weight's bf16 copy.
    pub(crate) fn loss_forward(&self) -> Components {
        let r = &self.r;
        let upcast = if r.c == FP32 { 0 } else { FP32 };
        let labels = r.b * (r.s + N::from(1u64)) * 8 + r.sb * 8;
        let cache = if self.t.checkpointed {
            N::ZERO
        } else {
            r.cache_only()
        };
        // The final norm's output is the head's saved input, except under autocast, where the
        // head saves a bf16 copy and the model's float32 `hidden_states` is still referenced.
        let hidden = if r.autocast { r.sbh * r.w } else { N::ZERO };
        let activations = self.saved() + hidden + labels + cache;
        // Autocast's cache keeps every weight copy until the forward leaves autocast, saved or
        // not (checkpointed blocks do not save theirs); the q/k/v bias copies (Qwen2's,
        // `2·(q + 2·kv)` bytes per layer) are left out.
        let copies = r.weight_copies(false);
        let logits = r.sbv * (r.c + upcast + FP32);
        self.t.at(self.earlier_grads(), copies, activations, logits)
    }

    /// The head's weight gradient, after the loss's backward. Under autocast: the bf16 gradient
    /// of the logits has been used and freed, the head's saved input and weight copy are
    /// released, and its bf16 weight gradient (`2·V·h`) and the float32 cast autograd makes of
    /// it (`4·V·h`) are alive beside the hidden state's float32 gradient (`4·s·b·h`, cast from
    /// bf16). Without autocast, `mm`'s outputs: the weight gradient (`w·V·h`) and the hidden
    /// state's gradient (`c·s·b·h`), beside the logits' gradient (`c·s·b·V`, cast from float32
    /// with bf16 weights) and the head's saved input.
    pub(crate) fn head_backward(&self) -> Components {
        let r = &self.r;
        let copies = r.weight_copies(self.t.checkpointed);
        if r.autocast {
            self.t.at(
                self.earlier_grads() + r.vh * 6,
                copies - r.vh * 2,
                self.saved() - r.sbh * 2 + r.sbh * FP32,
                N::ZERO,
            )
        } else {
            self.t.at(
                self.earlier_grads() + r.vh * r.w,
                copies,
                self.saved() + r.sbh * r.c,
                r.sbv * r.c,
            )
        }
    }

    /// The final norm's backward (`pow`'s, its last node): the head's saved input and the
    /// norm's `x̂` and `rsqrt` are released, its float32 input is still saved, and five float32
    /// `s·b·h` temporaries of `pow`'s, `mean`'s and the products' backward are in flight (the
    /// replay's peak with bf16 weights and a small vocabulary). Gradients: the earlier
    /// micro-steps', the head's (an untied head's, or a tied one's waiting contribution) and
    /// the norm's weight.
    pub(crate) fn final_norm_backward(&self) -> Components {
        let r = &self.r;
        // Liger's grad_weight of an untied head is added to `.grad` before the norm's backward
        // when accumulating (it is `.grad` itself otherwise).
        let head = if r.tied {
            r.vh * if r.autocast { FP32 } else { r.w }
        } else if self.fused && self.t.accumulating {
            N::ZERO
        } else {
            r.vh * r.w
        };
        let released = r.norm_output(1) + r.sbh * r.w + r.sb * FP32;
        let copies =
            r.weight_copies(self.t.checkpointed) - if r.autocast { r.vh * 2 } else { N::ZERO };
        self.t.at(
            self.earlier_grads() + head + r.h * r.w,
            copies,
            self.saved() - released + r.sbh * (5 * FP32),
            N::ZERO,
        )
    }

    /// The end of backward: every gradient, no activations. A tied weight's two contributions
    /// (the head's, waiting in autograd's input buffer, and the embedding's) and their sum are
    /// alive at once (the sum replaces `.grad`'s share of `full_grads` without accumulation, and
    /// is added to it with); an untied embedding's backward still holds the gradient of its
    /// output (`w·s·b·h`).
    pub(crate) fn backward_end(&self) -> Components {
        let r = &self.r;
        let (extra, activations) = if r.tied {
            let sums = if self.t.accumulating { 3u128 } else { 2 };
            (r.vh * (sums * r.w), N::ZERO)
        } else {
            (N::ZERO, r.sbh * r.w)
        };
        self.t
            .at(self.t.full_grads + extra, N::ZERO, activations, N::ZERO)
    }

    /// The last layer's softmax backward in eager attention (not checkpointed). Released by
    /// then: the final norm's saves, the layer's MLP and post-attention norm with the MLP's
    /// inputs, o_proj's input, the values and the softmax's 16-bit cast; in flight: the float32
    /// gradient of the softmax's output and its backward's float32 result (`8` bytes per
    /// score), the residual stream's gradient (`w·s·b·h`) and the values' gradient. Gradients
    /// so far without accumulation: the untied head's, the layer's MLP, o_proj and two norms;
    /// a tied head's contribution waits (float32 under autocast).
    pub(crate) fn attention_backward(&self) -> Components {
        let r = &self.r;
        let (freed, in_flight) = r.at_softmax_backward(r.kv_saved());
        let freed = freed + r.final_norm();
        let mut grads = if self.t.accumulating {
            self.t.full_grads
        } else {
            let head = if r.tied { N::ZERO } else { r.vh };
            (head + r.mlp_params + r.h * r.q + r.h * 2) * r.w
        };
        if r.tied {
            grads = grads + r.vh * if r.autocast { FP32 } else { r.w };
        }
        let copies = if r.autocast {
            r.weight_copies(false) - (r.vh + r.mlp_copied + r.h * r.q) * 2
        } else {
            N::ZERO
        };
        self.t
            .at(grads, copies, self.saved() - freed + in_flight, N::ZERO)
    }

    /// The gradients during the backward of the block `above` blocks below the last, with
    /// `early` elements of its own done: every one when accumulating, else the head's, the
    /// final norm's and those blocks'; a tied head's contribution waits (float32 under
    /// autocast).
    pub(crate) fn grads_in_block(&self, early: N, above: N) -> N {
        let r = &self.r;
        let waiting = if r.tied {
            r.vh * if r.autocast { FP32 } else { r.w }
        } else {
            N::ZERO
        };
        if self.t.accumulating {
            return self.t.full_grads + waiting;
        }
        let head = if r.tied { N::ZERO } else { r.vh };
        waiting + (head + r.h + above * self.t.block_params + early) * r.w
    }

    /// A checkpointed block `k` recomputed in the backward, at `moment`. Alive: the inputs of
    /// blocks `0..=k` (`w·s·b·h` each; the ones above were released with their blocks), the
    /// mask, `cos`, `sin` and `position_ids`, the block's recomputed saves
    /// (`LlamaRun::recomputed_layer`) and its bf16 weight copies under autocast, and:
    /// - at the product's backward in the MLP (`silu(gate) · up`): down_proj's input and weight
    ///   copy are released; in flight the gradients of the product, of `silu`'s output and of
    ///   up's (`3·c·s·b·I`) and of the block's output (`w·s·b·h`);
    /// - at the softmax's backward (eager): released and in flight as in
    ///   [`LlamaStep::attention_backward`], less the final norm (freed long before).
    ///
    /// Accumulating, every gradient exists and the last block (`k = L − 1`) holds the most
    /// inputs; without, the gradients grow as the backward goes down while the inputs shrink,
    /// so the first block is a candidate too (the replay's runs without accumulation peak
    /// there).
    fn recomputed(&self, k: N, moment: LlamaRecomputed) -> Components {
        let r = &self.r;
        let inputs = (k + N::from(1u64)) * r.sbh * r.w + r.checkpoint_inputs();
        let layer = r.recomputed_layer();
        let copies = r.block_linear * 2;
        let above = r.l - N::from(1u64) - k;
        let (activations, copies, early) = match moment {
            LlamaRecomputed::Mlp => (
                layer - r.sbi * r.c + r.sbi * (3 * r.c) + r.sbh * r.w,
                copies - r.h * r.i * 2,
                r.h * r.i,
            ),
            LlamaRecomputed::Attention => {
                let (freed, in_flight) = r.at_softmax_backward(r.recomputed_kv());
                (
                    layer - freed + in_flight,
                    copies - (r.mlp_copied + r.h * r.q) * 2,
                    r.mlp_params + r.h * r.q + r.h,
                )
            }
        };
        let copies = if r.autocast { copies } else { N::ZERO };
        self.t.at(
            self.grads_in_block(early, above),
            copies,
            inputs + activations,
            N::ZERO,
        )
    }

    /// The largest candidate and its moment (the loss's backward wins ties).
    pub(crate) fn peak(&self) -> (Components, TrainMoment) {
        let mut best = if self.fused {
            (self.fused_forward(), TrainMoment::LossForward)
        } else {
            (self.loss_backward(), TrainMoment::LossBackward)
        };
        let mut consider = |c: Components, m: TrainMoment| {
            if c.sum() > best.0.sum() {
                best = (c, m);
            }
        };
        if !self.fused {
            consider(self.loss_forward(), TrainMoment::LossForward);
            consider(self.head_backward(), TrainMoment::HeadBackward);
        } else if !self.t.checkpointed && self.r.experts.is_none() {
            consider(self.last_mlp_backward(), TrainMoment::MlpBackward);
        }
        consider(self.backward_end(), TrainMoment::BackwardEnd);
        consider(self.final_norm_backward(), TrainMoment::HeadBackward);
        if !self.r.sdpa && !self.t.checkpointed {
            consider(self.attention_backward(), TrainMoment::AttentionBackward);
        }
        if let Some(e) = &self.r.experts {
            for (c, m) in crate::estimate::hf_moe::moments(self, e) {
                consider(c, m);
            }
        }
        if self.t.checkpointed {
            let last = self.r.l - N::from(1u64);
            for k in [N::ZERO, last] {
                if self.r.experts.is_none() {
                    consider(
                        self.recomputed(k, LlamaRecomputed::Mlp),
                        TrainMoment::BlockRecompute,
                    );
                }
                if !self.r.sdpa {
                    consider(
                        self.recomputed(k, LlamaRecomputed::Attention),
                        TrainMoment::BlockRecompute,
                    );
                }
            }
        }
        best
    }
}
