//! Where the bytes go in a nanoGPT training step and in `estimate_loss`, component by component.
//!
//! Source: an exact replay of nanoGPT's train step on PyTorch fake tensors (the project's
//! `tests/data/nanogpt_replay.json` and `ESTIMATOR-NOTES.md`), with the per-layer activation
//! terms of Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
//! Models" (34·sbh per layer with dropout and 16-bit LayerNorm inputs), adapted to nanoGPT.
//! Notation: `L` n_layer, `a` n_head, `h` n_embd, `V` vocab_size, `s` block_size, `b` micro-batch,
//! `P` unique parameters, `P_lin` Linear-layer parameters (`lm_head` included);
//! `c` bytes of a compute-dtype element (2 under bf16/fp16, 4 in fp32), `r` bytes of a residual
//! stream element (nanoGPT's residual stream and LayerNorm inputs stay fp32 under autocast: 4;
//! pure bf16: 2), `p` bytes of a parameter (4; pure bf16: 2).

use serde::Serialize;

use super::num::N;
use super::params;
use super::scenario::{Dtype, Optimizer, Scenario};

/// Element sizes of a scenario's precision mode.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Precision {
    /// Compute dtype bytes `c`: activations, autocast weight copies, logits.
    pub(crate) c: u128,
    /// Residual stream / LayerNorm input bytes `r`.
    pub(crate) r: u128,
    /// Parameter, gradient and (AdamW, SGD) optimizer-state bytes `p`.
    pub(crate) p: u128,
    /// Bytes of the log-softmax that cross-entropy keeps (autocast runs it in fp32).
    pub(crate) ls: u128,
    /// Whether autocast casts the weights on the fly.
    pub(crate) autocast: bool,
}

impl Precision {
    /// The precision mode of a scenario.
    pub(crate) fn of(s: &Scenario) -> Precision {
        match (s.pure_bf16, s.dtype) {
            (true, _) => Precision {
                c: 2,
                r: 2,
                p: 2,
                ls: 2,
                autocast: false,
            },
            (false, Dtype::Float32) => Precision {
                c: 4,
                r: 4,
                p: 4,
                ls: 4,
                autocast: false,
            },
            (false, _) => Precision {
                c: 2,
                r: 4,
                p: 4,
                ls: 4,
                autocast: true,
            },
        }
    }
}

/// The moment of a training step at which memory peaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrainMoment {
    /// Cross-entropy's backward: every activation saved, the sbV buffers at their largest.
    LossBackward,
    /// `optimizer.step()`: gradients and optimizer state, no activations.
    OptimizerStep,
    /// Backward of the last block's manual attention (flash off): the s² score gradients.
    AttentionBackward,
    /// Recomputing one checkpointed block during backward.
    BlockRecompute,
}

/// The memory held at one moment, split as the JSON contract's `bytes` fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Components {
    pub(crate) weights: N,
    pub(crate) gradients: N,
    pub(crate) optimizer: N,
    pub(crate) autocast_weights: N,
    pub(crate) activations: N,
    pub(crate) logits: N,
}

impl Components {
    /// Everything alive at this moment.
    pub(crate) fn sum(&self) -> N {
        self.weights
            + self.gradients
            + self.optimizer
            + self.autocast_weights
            + self.activations
            + self.logits
    }
}

/// The memory model's results, before conversion to the public integers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Memory {
    pub(crate) train: Components,
    pub(crate) train_moment: TrainMoment,
    /// `estimate_loss` after the first step (optimizer state exists).
    pub(crate) eval: N,
    /// `estimate_loss` at iteration 0 (no optimizer state yet).
    pub(crate) eval_first: N,
    pub(crate) logits_tensor: N,
    pub(crate) eval_logits_tensor: N,
}

/// Computes every component for a validated scenario.
pub(crate) fn memory(s: &Scenario) -> Memory {
    let x = Precision::of(s);
    let p_total = params::total(s);
    let v = N::from(s.vocab_size);
    let h = N::from(s.n_embd);
    let train = train_peak(s, x, p_total, v, h);
    let eval_first = eval_peak(s, x, p_total, N::ZERO);
    let eval = eval_peak(s, x, p_total, optimizer_state(s, x));
    let tokens = |b: u64| N::from(s.block_size) * N::from(b) * v;
    Memory {
        train: train.0,
        train_moment: train.1,
        eval,
        eval_first,
        logits_tensor: tokens(s.batch_size) * x.c,
        eval_logits_tensor: tokens(s.eval_batch()) * x.c,
    }
}

/// Weights: `p·P`, plus the causal-mask buffer `p·s²` that every manual-attention block
/// registers (`torch.tril(torch.ones(s, s))`, in the parameter dtype) when flash is off.
fn weights(s: &Scenario, x: Precision, p_total: N) -> N {
    let ctx = N::from(s.block_size);
    let masks = if s.flash {
        N::ZERO
    } else {
        N::from(s.n_layer) * ctx * ctx * x.p
    };
    p_total * x.p + masks
}

/// Optimizer state. AdamW: two moments in the parameter dtype, `2·p·P` (8 bytes per parameter
/// with nanoGPT's fp32 parameters). SGD with momentum: one buffer, `p·P`. bitsandbytes
/// `AdamW8bit`: tensors of ≥ 4096 elements keep two 1-byte moments, one fp32 absmax per
/// 256-element block per moment, and two 256-entry fp32 quantization maps; smaller tensors keep
/// two fp32 moments (`min_8bit_size = 4096`).
pub(crate) fn optimizer_state(s: &Scenario, x: Precision) -> N {
    match s.optimizer {
        Optimizer::Adamw => params::total(s) * (2 * x.p),
        Optimizer::Sgd => params::total(s) * x.p,
        Optimizer::Adamw8bit => params::tensor_groups(s)
            .iter()
            .map(|g| {
                let per_tensor = if g.numel >= N(4096) {
                    g.numel * 2 + (g.numel + N(255)) / 256 * 8 + N(2 * 256 * 4)
                } else {
                    g.numel * 8
                };
                per_tensor * g.count
            })
            .sum(),
    }
}

/// Autocast's 16-bit copies of the Linear weights (`2·P_lin`): cast during the forward and
/// saved for backward, so all are alive when the backward starts. Zero without autocast.
fn autocast_copies(s: &Scenario, x: Precision) -> N {
    if x.autocast {
        params::linear(s) * 2
    } else {
        N::ZERO
    }
}

/// Activations one block saves for backward at micro-batch `b`, in half-bytes (one unit = ½ byte,
/// so that torch.compile's 34.5·sbh stays exact).
///
/// Flash, dropout 0, eager: `(2r + 14c)·sbh` = 36·sbh under autocast, 64·sbh in fp32,
/// 32·sbh pure bf16: the two LayerNorm inputs (`r` each; Korthikanti counts them at 2 bytes,
/// nanoGPT's are fp32), the c_attn input, q/k/v (3c), the attention output that c_proj reads
/// (flash returns it already in c_proj's layout: one tensor, c), the c_fc input, the GELU input
/// (4c) and output (4c); flash adds its fp32 logsumexp (`4·a·s·b`). torch.compile saves about
/// 1.5·sbh less per block under autocast (34.5·sbh; `0.75c`), an estimate (±10–15 %).
/// Flash off: the fp32 softmax output plus its 16-bit copy for `att @ v` (`6·a·s²·b` under
/// autocast, `4` in fp32 where one tensor serves both, `2` pure bf16) and masked_fill's bool
/// mask (`s²`). Dropout > 0: two 1-byte masks (`2·sbh`) and, flash off, the attention dropout's
/// mask and output (`+1`, `+5`, `+3` per a·s²·b element).
fn layer_half_bytes(s: &Scenario, x: Precision, b: u64) -> N {
    let (seq, a, h, batch) = (
        N::from(s.block_size),
        N::from(s.n_head),
        N::from(s.n_embd),
        N::from(b),
    );
    let sbh = seq * batch * h;
    let mut half = 2 * (2 * x.r + 14 * x.c);
    if s.compile {
        half -= 3 * x.c / 2;
    }
    let mut bytes = sbh * half;
    let dropout = s.dropout > 0.0;
    if dropout {
        bytes = bytes + sbh * 4;
    }
    if s.flash {
        bytes = bytes + a * seq * batch * 8;
    } else {
        let scores = a * seq * seq * batch;
        let per_score = match (x.autocast, x.c) {
            (true, _) => 6 + u128::from(dropout),
            (false, 4) => 4 + 5 * u128::from(dropout),
            (false, _) => 2 + 3 * u128::from(dropout),
        };
        bytes = bytes + scores * (2 * per_score) + seq * seq * 2;
    }
    bytes
}

/// The inputs of `ln_f` (`r·sbh`) and of `lm_head` (`c·sbh`), plus the embedding dropout's
/// 1-byte mask when dropout > 0.
fn final_saved(s: &Scenario, x: Precision) -> N {
    let sbh = N::from(s.block_size) * N::from(s.batch_size) * N::from(s.n_embd);
    sbh * (x.r + x.c) + if s.dropout > 0.0 { sbh } else { N::ZERO }
}

/// `count` int64 token tensors of shape (b, s): train.py keeps the current X, Y (saved by the
/// embedding and the loss) and prefetches the next pair before backward.
fn tokens(s: &Scenario, b: u64, count: u128) -> N {
    N::from(s.block_size) * N::from(b) * (8 * count)
}

/// Bytes per `s·b·V` logits element alive at cross-entropy's backward. Eager: train.py's kept
/// `logits` (`c`), the log-softmax cross-entropy saves (`ls`: fp32 under autocast, which runs
/// cross-entropy in fp32) and two gradient buffers of the same dtype (`2·ls`): 14 under
/// autocast, 16 in fp32, 8 pure bf16. torch.compile fuses the loss: the kept logits and their
/// gradient, `2c`.
fn loss_backward_logits(s: &Scenario, x: Precision) -> u128 {
    if s.compile {
        2 * x.c
    } else {
        x.c + 3 * x.ls
    }
}

/// The training step's peak: the largest of its candidate moments, with its breakdown.
fn train_peak(s: &Scenario, x: Precision, p_total: N, v: N, h: N) -> (Components, TrainMoment) {
    let l = N::from(s.n_layer);
    let sbv = N::from(s.block_size) * N::from(s.batch_size) * v;
    let full_grads = p_total * x.p;
    // With accumulation, .grad lives from the second micro-step on; with one micro-step,
    // zero_grad(set_to_none=True) freed it and only lm_head's (= wte's) gradient exists early on.
    let (loss_grads, early_grads) = if s.gradient_accumulation_steps >= 2 {
        (full_grads, full_grads)
    } else {
        (N::ZERO, v * h * x.p)
    };
    let layer = layer_half_bytes(s, x, s.batch_size);
    let kept_layers = if s.grad_checkpoint {
        // Checkpointing keeps only each block's input, the residual stream.
        l * N::from(s.block_size) * N::from(s.batch_size) * h * x.r
    } else {
        l * layer / 2
    };
    let base = Components {
        weights: weights(s, x, p_total),
        gradients: loss_grads,
        optimizer: optimizer_state(s, x),
        autocast_weights: autocast_copies(s, x),
        activations: kept_layers + final_saved(s, x) + tokens(s, s.batch_size, 4),
        logits: sbv * loss_backward_logits(s, x),
    };
    let mut best = (base, TrainMoment::LossBackward);
    let mut consider = |c: Components, m: TrainMoment| {
        if c.sum() > best.0.sum() {
            best = (c, m);
        }
    };
    consider(
        Components {
            gradients: full_grads,
            autocast_weights: N::ZERO,
            activations: tokens(s, s.batch_size, 2),
            logits: sbv * x.c,
            ..base
        },
        TrainMoment::OptimizerStep,
    );
    let one_block = if s.grad_checkpoint {
        layer / 2
    } else {
        N::ZERO
    };
    if s.grad_checkpoint {
        consider(
            Components {
                gradients: early_grads,
                activations: base.activations + one_block,
                logits: sbv * x.c,
                ..base
            },
            TrainMoment::BlockRecompute,
        );
    }
    if !s.flash {
        // Softmax backward holds the fp32 gradient of the scores and its result (8 bytes per
        // a·s²·b element; 4 pure bf16) on top of everything saved.
        let scores = N::from(s.n_head)
            * N::from(s.block_size)
            * N::from(s.block_size)
            * N::from(s.batch_size);
        let transient = scores * if x.c == 2 && !x.autocast { 4 } else { 8 };
        consider(
            Components {
                gradients: early_grads,
                activations: base.activations + one_block + transient,
                logits: sbv * x.c,
                ..base
            },
            TrainMoment::AttentionBackward,
        );
    }
    best
}

/// `estimate_loss()` at the eval micro-batch, under `no_grad`: no saved activations.
///
/// Eager: the previous batch's `logits` (still bound in the loop), the new ones, autocast's fp32
/// copy for cross-entropy and its log-softmax: `2c + 4 + 4` = 12 bytes per s·b·V element under
/// autocast, `4 + 4 + 4` in fp32, `2 + 2 + 2` pure bf16; compiled: the two logits tensors, `2c`.
/// Plus weights, optimizer state (`optimizer`: zero at iteration 0), the autocast copies, the
/// residual stream (`r·sbh`) and X, Y. Flash off, the largest block's transient scores (masked
/// scores, their fp32 copy and the softmax: 10 bytes per a·s²·b element under autocast, 8 in
/// fp32, 4 pure bf16) can exceed the logits on small vocabularies.
fn eval_peak(s: &Scenario, x: Precision, p_total: N, optimizer: N) -> N {
    let b = s.eval_batch();
    let (seq, batch) = (N::from(s.block_size), N::from(b));
    let sbh = seq * batch * N::from(s.n_embd);
    let sbv = seq * batch * N::from(s.vocab_size);
    let fixed = weights(s, x, p_total) + optimizer + autocast_copies(s, x) + tokens(s, b, 2);
    let per_logit = if s.compile {
        2 * x.c
    } else {
        2 * x.c + if x.autocast { 4 } else { 0 } + x.ls
    };
    let logits_moment = sbh * x.r + sbv * per_logit;
    if s.flash {
        return fixed + logits_moment;
    }
    let scores = N::from(s.n_head) * seq * seq * batch;
    let per_score = match (x.autocast, x.c) {
        (true, _) => 10,
        (false, 4) => 8,
        (false, _) => 4,
    };
    let attention_moment = sbh * (x.r + 3 * x.c) + scores * per_score + sbv * x.c;
    fixed + logits_moment.max(attention_moment)
}
