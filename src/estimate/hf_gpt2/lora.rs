//! PEFT's LoRA on Hugging Face's GPT-2: the Trainer step of `get_peft_model(model,
//! LoraConfig(...))` (PEFT wraps GPT-2's `Conv1D` layers with `fan_in_fan_out`), every base
//! parameter frozen (`lora_adapters` has what the adapters add).
//!
//! What a frozen block still saves, from `modeling_gpt2.py` read against the replay
//! (`tools/hf_replay/replay_lora.py --explain`): a frozen `Conv1D` (`addmm`) keeps no input,
//! only under autocast its weight's 16-bit copy where its input carries a gradient; LayerNorm
//! keeps its float32 input, mean and rstd (its input's gradient needs them, frozen or not);
//! attention and `gelu_new` save what a full fine-tune's do, less the inputs of the frozen
//! projections (eager attention's merged output, `gelu_new`'s 16-bit output); a dropout keeps its
//! mask where its input carries a gradient. The first block's input, the frozen embeddings' sum,
//! carries none: its ln_1 and the embedding dropout save nothing, unless gradient checkpointing
//! makes the embedding's output require grad (`enable_input_require_grads`). The frozen tied head
//! keeps its 16-bit copy under autocast, and nothing gets the embedding's gradient.

use super::saves::{Gpt2Run, FP32};
use crate::estimate::lora_adapters::{AdapterInput, Adapters, LoraPeak};
use crate::estimate::lora_targets::LoraModule;
use crate::estimate::memory::{Components, TrainMoment};
use crate::estimate::num::N;
use crate::estimate::trainer::StepTotals;

/// A LoRA run of Hugging Face's GPT-2.
pub(super) struct Gpt2LoraStep {
    /// The run's sizes.
    pub(super) r: Gpt2Run,
    /// What every moment shares.
    pub(super) t: StepTotals,
    /// The adapters.
    pub(super) adapters: Adapters,
    /// The adapted modules with their `(in, out)` features.
    pub(super) modules: Vec<(LoraModule, u64, u64)>,
}

/// One block's saves and weight copies, and the adapters' copies only autocast's cache holds.
#[derive(Default, Clone, Copy)]
struct Gpt2LoraBlock {
    saved: N,
    copies: N,
    cached: N,
}

impl Gpt2LoraStep {
    /// One Conv1D of `weights` elements reading `x` (an adapter's `out` features when adapted):
    /// its frozen 16-bit copy under autocast, its adapter's saves. Whether its output carries a
    /// gradient.
    fn conv(&self, b: &mut Gpt2LoraBlock, m: LoraModule, weights: N, x: AdapterInput) -> bool {
        if self.r.autocast() && x.requires_grad {
            b.copies = b.copies + weights * 2;
        }
        match self.modules.iter().find(|(y, _, _)| *y == m) {
            Some(&(_, _, out)) => {
                b.saved = b.saved + self.adapters.saves(x, N::from(out));
                b.cached = b.cached + self.adapters.cached_only(x);
                true
            }
            None => x.requires_grad,
        }
    }

    /// What one block saves when its input carries a gradient (`requires_grad`) or not.
    fn block(&self, requires_grad: bool) -> Gpt2LoraBlock {
        let r = &self.r;
        let mut b = Gpt2LoraBlock::default();
        let norm = r.sbh * FP32 + r.sb * 8;
        // LayerNorm's output is float32 (autocast runs it in float32).
        let normed = |g: bool, width: N| AdapterInput {
            width,
            bytes: FP32,
            requires_grad: g,
            counted: false,
        };
        if requires_grad {
            b.saved = b.saved + norm;
        }
        let qkv = self.conv(
            &mut b,
            LoraModule::CAttn,
            r.hh * 3,
            normed(requires_grad, r.h),
        );
        if qkv {
            // Eager attention's merged output is the frozen c_proj's input, not saved.
            let merged = if r.sdpa { N::ZERO } else { r.sbh * r.c };
            b.saved = b.saved + r.attention() - merged;
        }
        let merged = AdapterInput {
            width: r.h,
            bytes: r.c,
            requires_grad: qkv,
            // SDPA's output, reshaped in place, is saved by the kernel already.
            counted: r.sdpa,
        };
        let attn_out = self.conv(&mut b, LoraModule::AttnProj, r.hh, merged);
        if attn_out {
            b.saved = b.saved + r.dropout_mask();
        }
        let mlp_in = requires_grad || attn_out;
        if mlp_in {
            b.saved = b.saved + norm;
        }
        let fc = self.conv(&mut b, LoraModule::CFc, r.ih, normed(mlp_in, r.h));
        if fc {
            // gelu_new's saves but mlp.c_proj's 16-bit input: `(12 + c)·s·b·I`.
            b.saved = b.saved + r.gelu() - r.sbi * r.c;
        }
        // gelu_new's output is float32 (its product of a float32 factor).
        let gelu = AdapterInput {
            width: r.i,
            bytes: FP32,
            requires_grad: fc,
            counted: false,
        };
        let out = self.conv(&mut b, LoraModule::MlpProj, r.ih, gelu);
        if out {
            b.saved = b.saved + r.dropout_mask();
        }
        b
    }

    /// Every block: the first with its input's gradient only under checkpointing.
    fn blocks(&self) -> Gpt2LoraBlock {
        let first = self.block(self.t.checkpointed);
        let rest = self.block(true);
        let others = self.r.l - N::from(1u64);
        Gpt2LoraBlock {
            saved: first.saved + rest.saved * others,
            copies: first.copies + rest.copies * others,
            cached: first.cached + rest.cached * others,
        }
    }

    /// Everything saved, and the weight copies among it: the blocks (or, checkpointed, every
    /// block's float32 input and the last block's output, the embedding dropout's mask and the
    /// float32 attention mask), ln_f's statistics and float32 input, the head's 16-bit copy.
    fn saved(&self) -> (N, N) {
        let r = &self.r;
        let head = r.head_copy();
        if self.t.checkpointed {
            let saved = (r.l + N::from(1u64)) * r.sbh * FP32
                + r.sb * 8
                + r.dropout_mask()
                + r.mask_2d * FP32;
            return (saved, head);
        }
        let b = self.blocks();
        (b.saved + r.sbh * FP32 + r.sb * 8, b.copies + head)
    }

    /// Cross-entropy's backward: every saved tensor beside `log_softmax`'s backward buffers
    /// (`12·s·b·V`).
    fn loss_backward(&self) -> Components {
        let (saved, copies) = self.saved();
        self.t.at(
            self.t.earlier_grads(),
            copies,
            saved,
            self.r.sbv * (3 * FP32),
        )
    }

    /// The end of the forward: the logits, their float32 copy and log-softmax, ln_f's float32
    /// output, and the adapters' copies only the cache holds.
    fn loss_forward(&self) -> Components {
        let r = &self.r;
        let (saved, copies) = self.saved();
        let cached = if self.t.checkpointed {
            N::ZERO
        } else {
            self.blocks().cached
        };
        let upcast = if r.autocast() { FP32 } else { 0 };
        self.t.at(
            self.t.earlier_grads(),
            copies,
            saved + cached + r.sbh * FP32,
            r.sbv * (r.c + upcast + FP32),
        )
    }

    /// The largest candidate and its moment (the loss's backward wins ties), or `None` where a
    /// block's backward could pass the loss: only the loss's moments are modelled for GPT-2's
    /// LoRA (every replayed run peaks there). A later moment holds no more saved tensors than
    /// the loss's backward (ln_f's and the logits' are released first; a checkpointed block's
    /// recomputation adds one block's saves and weight copies), every gradient at most, and in
    /// flight the larger of `gelu_new`'s backward and eager attention's softmax backward with
    /// the residual stream's gradient twice; when that bound reaches the loss's moment the step
    /// is refused, not underestimated (a small vocabulary).
    fn peak_moment(&self) -> Option<(Components, TrainMoment)> {
        let backward = self.loss_backward();
        let forward = self.loss_forward();
        let best = if forward.sum() > backward.sum() {
            (forward, TrainMoment::LossForward)
        } else {
            (backward, TrainMoment::LossBackward)
        };
        let r = &self.r;
        let softmax = if r.sdpa {
            N::ZERO
        } else {
            r.scores * (2 * FP32)
        };
        let in_flight = r.gelu_backward_in_flight().max(softmax) + r.sbh * (2 * FP32);
        let recomputed = if self.t.checkpointed {
            let b = self.block(true);
            b.saved + b.copies
        } else {
            N::ZERO
        };
        let bound = backward.sum() - backward.logits - backward.gradients
            + self.t.full_grads
            + recomputed
            + in_flight;
        (bound < best.0.sum()).then_some(best)
    }
}

impl LoraPeak for Gpt2LoraStep {
    fn totals(&mut self) -> &mut StepTotals {
        &mut self.t
    }

    fn peak(&self) -> Option<(Components, TrainMoment)> {
        self.peak_moment()
    }
}
