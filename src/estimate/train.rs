//! The training step's peak: the largest of its candidate moments, with its breakdown.
//!
//! Moments (checked against the replay's live-storage lists): the loss at the end of the forward
//! (small vocabularies), nll_loss/log_softmax backward (large vocabularies), the last block's
//! MLP backward (small vocabularies in fp32), the backward of the last block's manual attention
//! (flash off), a checkpointed block's recompute, and the end of backward (tiny batches).

use super::finetune::{LoraTarget, Training};
use super::memory::{
    autocast_copies, backward_tokens, block_half_bytes, embedding_locals, final_saved,
    layer_half_bytes, tokens, weights, Components, MicroBatchShapes, Precision, Totals,
    TrainMoment,
};
use super::num::N;
use super::scenario::Scenario;

/// Bytes of an fp32 element: nll_loss runs in fp32 under autocast.
const FP32: u128 = 4;

/// Bytes per `s·b·V` element alive at cross-entropy's backward.
///
/// `F.cross_entropy` is `nll_loss(log_softmax(x, dim, x.dtype))`. CUDA autocast has no rule for
/// cross_entropy, keeps log_softmax's explicit dtype (so it runs in 16 bits) and runs nll_loss
/// in fp32 (the replay's selftest checks this op stream against real CUDA autocast dispatch).
/// Under autocast the worst moment is nll_loss's backward: train.py's kept `logits` (`c`), the
/// 16-bit log-softmax (`c`), nll_loss's saved fp32 copy of it (4) and its fp32 gradient (4):
/// 12 bytes. Without autocast it is log_softmax's backward: kept logits, saved output, incoming
/// gradient and result, `4c` (16 in fp32, 8 pure bf16). torch.compile fuses the loss: the kept
/// logits and their gradient, `2c` (an estimate).
fn loss_backward_logits(s: &Scenario, x: Precision) -> u128 {
    match (s.compile, x.autocast) {
        (true, _) => 2 * x.c,
        (false, true) => 2 * x.c + 2 * FP32,
        (false, false) => 4 * x.c,
    }
}

/// Bytes per `s·b·V` element alive while the loss is computed at the end of the forward (and in
/// `estimate_loss`): the previous micro-step's `logits` (train.py keeps the variable until the
/// forward returns), the new ones, the log-softmax and, under autocast, nll_loss's fp32 copy:
/// 10 under autocast, 12 in fp32, 6 pure bf16; compiled, the two logits tensors.
pub(crate) fn loss_forward_logits(s: &Scenario, x: Precision) -> u128 {
    if s.compile {
        2 * x.c
    } else {
        3 * x.c + if x.autocast { FP32 } else { 0 }
    }
}

/// Gradients that exist early in the backward of a step without accumulation (`.grad` was set
/// to None): `wte`'s (from lm_head) and, roughly, the last block's MLP, attention projection and
/// LayerNorms: `p·(V·h + 9h² + 8h)`; of these only what trains (frozen embeddings: no `V·h`;
/// LoRA: the last block's adapters).
fn early_grads(s: &Scenario, x: Precision) -> N {
    let (v, h) = (N::from(s.vocab_size), N::from(s.n_embd));
    let train = Training::of(s);
    let wte = if train.embeddings { v * h } else { N::ZERO };
    let block = if train.base {
        h * h * 9 + h * 8
    } else {
        train.lora_per_block(h)
    };
    (wte + block) * x.p
}

/// The training step's peak and the moment it occurs: cross-entropy's backward, unless a later
/// candidate holds strictly more.
pub(crate) fn train_peak(s: &Scenario, x: Precision, t: &Totals) -> (Components, TrainMoment) {
    let step = NanoGptStep::of(s, x, t);
    let mut best = (step.base, TrainMoment::LossBackward);
    let mut consider = |c: Components, m: TrainMoment| {
        if c.sum() > best.0.sum() {
            best = (c, m);
        }
    };
    consider(step.loss_forward(), TrainMoment::LossForward);
    consider(step.backward_end(), TrainMoment::BackwardEnd);
    consider(step.mlp_backward(), TrainMoment::MlpBackward);
    if s.grad_checkpoint {
        consider(step.block_recompute(), TrainMoment::BlockRecompute);
    }
    if !s.flash {
        consider(step.attention_backward(), TrainMoment::AttentionBackward);
    }
    best
}

/// What the candidate moments of one training step share.
struct NanoGptStep<'a> {
    s: &'a Scenario,
    x: Precision,
    /// The micro-batch.
    b: u64,
    /// Its tensor shapes.
    d: MicroBatchShapes,
    /// What trains.
    train: Training,
    /// Whether `.grad` survives between micro-steps (`gradient_accumulation_steps >= 2`).
    accumulating: bool,
    /// Every trainable parameter's gradient, `p·P_trainable`.
    full_grads: N,
    /// The gradients that exist early in the backward.
    early: N,
    /// One block's saved activations (any block but block 0).
    layer: N,
    /// What the blocks save for backward.
    blocks: N,
    /// Cross-entropy's backward: every activation saved, the sbV buffers at their largest.
    base: Components,
}

impl<'a> NanoGptStep<'a> {
    /// The shared terms, and cross-entropy's backward from them.
    fn of(s: &'a Scenario, x: Precision, t: &Totals) -> NanoGptStep<'a> {
        let b = s.batch_size;
        let d = MicroBatchShapes::at(s, b);
        let l = N::from(s.n_layer);
        let full_grads = t.trainable * x.p;
        let accumulating = s.gradient_accumulation_steps >= 2;
        // With accumulation, .grad lives from the second micro-step on; without, zero_grad
        // (set_to_none=True) freed it before the forward.
        let early = if accumulating {
            full_grads
        } else {
            early_grads(s, x)
        };
        let layer = layer_half_bytes(s, x, b) / 2;
        // Checkpointing keeps only each block's input, the residual stream. Block 0 saves less
        // when its input needs no gradient (frozen embeddings under LoRA).
        let blocks = if s.grad_checkpoint {
            l * d.sbh * x.r
        } else {
            (l - N::from(1u64)) * layer + block_half_bytes(s, x, b, true) / 2
        };
        let base = Components {
            weights: weights(s, x, t.params),
            gradients: if accumulating { full_grads } else { N::ZERO },
            optimizer: t.optimizer,
            autocast_weights: autocast_copies(t, x),
            activations: blocks + final_saved(s, x) + backward_tokens(s, b),
            logits: d.sbv * loss_backward_logits(s, x),
        };
        NanoGptStep {
            s,
            x,
            b,
            d,
            train: Training::of(s),
            accumulating,
            full_grads,
            early,
            layer,
            blocks,
            base,
        }
    }

    /// The loss at the end of the forward: the forward's locals are still alive (tok_emb,
    /// pos_emb and, under autocast, ln_f's fp32 output beside lm_head's saved 16-bit copy).
    fn loss_forward(&self) -> Components {
        let (s, x, b, d) = (self.s, self.x, self.b, self.d);
        let saved = self.blocks + final_saved(s, x);
        let ln_f_out = if x.autocast { d.sbh * x.r } else { N::ZERO };
        Components {
            activations: saved + embedding_locals(s, x, b) + ln_f_out + tokens(s, b, 2),
            logits: d.sbv * loss_forward_logits(s, x),
            ..self.base
        }
    }

    /// The end of backward: every gradient exists, and the tied wte/lm_head weight's two
    /// contributions (lm_head's, then the embedding's, `V·h` each) meet in autograd's input
    /// buffer and are summed out of place: both and their sum live at once, three `p·V·h`
    /// beside the other gradients; `full_grads` counts the tied weight's `.grad` once, which
    /// exists only when accumulating (three extra, else two).
    /// The replay, real tensors (`tools/nanogpt_replay/replay.py --selftest` logs autograd's
    /// `add`) and the H200 agree (`tests/it/gpu_measured.rs`: GPT-2 124M at s512 b1 fp32, the
    /// one measured config that peaks here, is 11.8 MiB above this, 47.2 MiB if summed in place).
    /// The optimizer step that follows holds no more: fused AdamW has no temporaries.
    /// Frozen embeddings: no gradient for the tied weight at all.
    fn backward_end(&self) -> Components {
        let (s, x) = (self.s, self.x);
        let contributions = N::from(match (self.train.embeddings, self.accumulating) {
            (false, _) => 0u64,
            (true, true) => 3,
            (true, false) => 2,
        });
        let vh = N::from(s.vocab_size) * N::from(s.n_embd);
        Components {
            gradients: self.full_grads + vh * contributions * x.p,
            autocast_weights: N::ZERO,
            activations: tokens(s, self.b, 2),
            logits: self.d.sbv * x.c,
            ..self.base
        }
    }

    /// During backward: the final activations are freed, the residual-stream gradient (r)
    /// lives, and a checkpointed run holds one recomputed block.
    fn in_backward(&self) -> N {
        let (s, d) = (self.s, self.d);
        let recomputed = if s.grad_checkpoint {
            self.layer
        } else {
            N::ZERO
        };
        self.blocks + d.sbh * self.x.r + backward_tokens(s, self.b) + recomputed
    }

    /// A moment during backward: the early gradients, one logits-sized gradient, and
    /// `activations`.
    fn during_backward(&self, activations: N) -> Components {
        Components {
            gradients: self.early,
            activations,
            logits: self.d.sbv * self.x.c,
            ..self.base
        }
    }

    /// The last block's MLP backward: the gradient of its 4h-wide hidden layer (`4c·sbh`)
    /// beside every block's saved activations (the peak for small vocabularies in fp32).
    fn mlp_backward(&self) -> Components {
        self.during_backward(self.in_backward() + self.d.sbh * (4 * self.x.c))
    }

    /// Recomputing one checkpointed block during backward.
    fn block_recompute(&self) -> Components {
        self.during_backward(self.in_backward())
    }

    /// The backward of the last block's manual attention (flash off). The last block's MLP
    /// activations and c_proj input are freed (`r + 10c`); the gradient of the attention
    /// output (c) and the softmax backward's score gradients live. Per a·s²·b element: the
    /// fp32 gradient of the scores and the result (8), less the 16-bit copy of the softmax
    /// that `att @ v` saved and has released by then (bf16 autocast 6; fp16 autocast 4, as the
    /// half-to-float softmax's gradient is 16-bit; fp32 8, where the copy is the softmax
    /// itself; pure bf16 4).
    fn attention_backward(&self) -> Components {
        let (x, d) = (self.x, self.d);
        let per_score = match (x.autocast, x.fp16, x.c) {
            (true, false, _) => 6,
            (false, _, 4) => 8,
            _ => 4,
        };
        let activations =
            self.in_backward() - self.attention_freed() + d.sbh * x.c + d.scores * per_score;
        self.during_backward(activations)
    }

    /// What the last block has freed when its attention's backward runs: its MLP activations
    /// and c_proj input (`r + 10c`); under LoRA, ln_2's and GELU's inputs and the adapters
    /// after the attention.
    fn attention_freed(&self) -> N {
        let (s, x, d, train) = (self.s, self.x, self.d, self.train);
        if train.base {
            return d.sbh * (x.r + 10 * x.c);
        }
        let sbr = N::from(s.block_size) * N::from(self.b) * N::from(train.rank);
        let adapters: N = [
            (LoraTarget::AttnProj, 1),
            (LoraTarget::CFc, 1),
            (LoraTarget::MlpProj, 4),
        ]
        .into_iter()
        .filter(|(t, _)| train.targets.has(*t))
        .map(|(_, w)| d.sbh * (w * x.c) + sbr * x.c)
        .sum();
        d.sbh * (x.r + 4 * x.c) + adapters
    }
}
