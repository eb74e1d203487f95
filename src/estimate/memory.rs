//! Where the bytes go in a nanoGPT training step and in `estimate_loss`, component by component.
//!
//! Source: an exact replay of nanoGPT's train step on PyTorch fake tensors (the project's
//! `tests/data/nanogpt_replay.json`, produced by `tools/nanogpt_replay`; `tests/it/calibration.rs`
//! holds every replayed config within 2 %, most within 0.1 %), with the per-layer activation
//! terms of Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
//! Models" (34·sbh per layer with dropout and 16-bit LayerNorm inputs), adapted to nanoGPT.
//! The components are here; the moments at which they peak are in `train.rs` and `eval.rs`.
//! torch.compile terms are estimates (±10–15 %), not replayed.
//! Notation: `L` n_layer, `a` n_head, `h` n_embd, `V` vocab_size, `s` block_size, `b` micro-batch,
//! `P` unique parameters, `P_lin` Linear-layer parameters (`lm_head` included);
//! `c` bytes of a compute-dtype element (2 under bf16/fp16, 4 in fp32), `r` bytes of a residual
//! stream element (nanoGPT's residual stream and LayerNorm inputs stay fp32 under autocast: 4;
//! pure bf16: 2), `p` bytes of a parameter (4; pure bf16: 2).

use serde::Serialize;

use super::finetune::{LoraTarget, Training};
use super::num::N;
use super::optimizer_state::optimizer_state;
use super::params;
use super::scenario::{Dtype, Optimizer, Scenario};
use super::{eval, train};

/// Element sizes of a scenario's precision mode.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Precision {
    /// Compute dtype bytes `c`: activations, autocast weight copies, logits.
    pub(crate) c: u128,
    /// Residual stream / LayerNorm input bytes `r`.
    pub(crate) r: u128,
    /// Parameter, gradient and (AdamW, SGD) optimizer-state bytes `p`.
    pub(crate) p: u128,
    /// Whether autocast casts the weights on the fly.
    pub(crate) autocast: bool,
    /// fp16 autocast: CUDA's softmax of a half input writes fp32 directly (no fp32 copy).
    pub(crate) fp16: bool,
}

impl Precision {
    /// The precision mode of a scenario.
    pub(crate) fn of(s: &Scenario) -> Precision {
        match (s.pure_bf16, s.dtype) {
            (true, _) => Precision {
                c: 2,
                r: 2,
                p: 2,
                autocast: false,
                fp16: false,
            },
            (false, Dtype::Float32) => Precision {
                c: 4,
                r: 4,
                p: 4,
                autocast: false,
                fp16: false,
            },
            (false, dtype) => Precision {
                c: 2,
                r: 4,
                p: 4,
                autocast: true,
                fp16: dtype == Dtype::Float16,
            },
        }
    }
}

/// The moment of a training step at which memory peaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrainMoment {
    /// The loss at the end of the forward: every activation saved plus the forward's locals
    /// (the peak for small vocabularies).
    LossForward,
    /// Cross-entropy's backward: every activation saved, the sbV buffers at their largest.
    LossBackward,
    /// The backward of the output head and of the final norm (Hugging Face's Llama family): the
    /// head's weight gradient (under autocast with its float32 cast), or the norm's float32
    /// temporaries, beside every saved activation.
    HeadBackward,
    /// The last block's MLP backward: the hidden layer's gradient beside every saved activation.
    MlpBackward,
    /// The end of backward: every gradient, the tied weight's two gradient contributions, no
    /// activations (then `optimizer.step()`, which adds nothing).
    BackwardEnd,
    /// Backward of the last block's manual attention (flash off): the s² score gradients.
    AttentionBackward,
    /// Recomputing one checkpointed block during backward.
    BlockRecompute,
    /// No training step (`eval_only`): the weights are all there is beside the evaluation.
    NoTraining,
}

impl TrainMoment {
    /// The moment as the estimate's JSON spells it (`loss_backward`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TrainMoment::LossForward => "loss_forward",
            TrainMoment::LossBackward => "loss_backward",
            TrainMoment::HeadBackward => "head_backward",
            TrainMoment::MlpBackward => "mlp_backward",
            TrainMoment::BackwardEnd => "backward_end",
            TrainMoment::AttentionBackward => "attention_backward",
            TrainMoment::BlockRecompute => "block_recompute",
            TrainMoment::NoTraining => "no_training",
        }
    }
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

/// Model-wide totals, computed once per estimate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Totals {
    /// Unique parameters `P`.
    pub(crate) params: N,
    /// Parameters with gradients and optimizer state (`P`, less what the patches freeze).
    pub(crate) trainable: N,
    /// Elements of the 16-bit weight copies saved for backward under autocast ([`saved_copies`]).
    pub(crate) saved_copies: N,
    /// Elements of the 16-bit weight copies autocast caches for a whole forward
    /// ([`cached_copies`]).
    pub(crate) cached_copies: N,
    /// Optimizer state bytes.
    pub(crate) optimizer: N,
}

/// Computes every component for a validated scenario whose parameters are `counted`.
pub(crate) fn memory(s: &Scenario, counted: &params::CountedParams) -> Memory {
    let p = &counted.params;
    let x = Precision::of(s);
    let t = Totals {
        params: N::from(p.total),
        trainable: N::from(p.trainable),
        saved_copies: saved_copies(s, p),
        cached_copies: cached_copies(s, p),
        optimizer: optimizer_state(s, x, &counted.groups),
    };
    let v = N::from(s.vocab_size);
    let train = train::train_peak(s, x, &t);
    let eval_first = eval::eval_peak(s, x, &t, N::ZERO);
    let eval = eval::eval_peak(s, x, &t, t.optimizer);
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

/// What a run's set-up keeps beside the training step, for `init_from = 'resume'` and DDP.
///
/// Source: the replay's `runs` (`tests/data/nanogpt_replay.json`, `tools/nanogpt_replay`;
/// closed forms in `tests/data/README.md`), read against nanoGPT's train.py and torch 2.x:
/// - Resume: `torch.load(ckpt_path, map_location=device)` puts the checkpoint on the GPU: the
///   model's state dict (`weights`: `p·P` plus the mask buffers) and the optimizer's state with
///   its per-tensor `step` scalars (4 bytes each with fused AdamW). The model is built on the CPU
///   and moved over while all of it is held: the load peak is `2·weights + optimizer + steps`.
///   `optimizer.load_state_dict` keeps the checkpoint's tensors (a shallow copy), and train.py's
///   global `state_dict = checkpoint['model']` keeps the checkpoint's weights alive after
///   `checkpoint = None`: every later moment holds `weights` more than a run from scratch, and
///   the first evaluation already holds the optimizer state.
/// - DDP (`gradient_as_bucket_view=False`, nanoGPT's default): the reducer's buckets hold a copy
///   of every gradient, `p·P` in all (25 MiB buckets after a 1 MiB first one), from the
///   wrapping on. With `gradient_as_bucket_view=True` the gradients are views into the buckets:
///   no second copy (PyTorch's `DistributedDataParallel` documentation).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Setup {
    /// The checkpoint's weights that stay referenced after loading (resume).
    pub(crate) retained: N,
    /// The peak while the checkpoint is loaded (resume), else 0.
    pub(crate) load_peak: N,
    /// Optimizer state and step scalars held from iteration 0 (resume).
    pub(crate) loaded_optimizer: N,
    /// DDP's gradient buckets.
    pub(crate) ddp_buckets: N,
}

/// The [`Setup`] of a scenario whose parameters are `counted`.
pub(crate) fn setup(s: &Scenario, counted: &params::CountedParams) -> Setup {
    let p = &counted.params;
    let x = Precision::of(s);
    let total = N::from(p.total);
    let weights = weights(s, x, total);
    let mut out = Setup::default();
    if s.init_from == super::InitFrom::Resume {
        let steps = match s.optimizer {
            Optimizer::Sgd => N::ZERO,
            Optimizer::Adamw | Optimizer::Adamw8bit | Optimizer::PagedAdamw8bit => {
                N::from(p.decay_tensors + p.no_decay_tensors) * 4
            }
        };
        let optimizer = optimizer_state(s, x, &counted.groups) + steps;
        out.retained = weights;
        out.loaded_optimizer = optimizer;
        out.load_peak = weights * 2 + optimizer;
    }
    if s.ddp_world_size > 1 && !s.gradient_as_bucket_view {
        // The reducer buckets the gradients of the parameters that require grad.
        out.ddp_buckets = N::from(p.trainable) * x.p;
    }
    out
}

/// Weights: `p·P`, plus the causal-mask buffer `p·s²` that every manual-attention block
/// registers (`torch.tril(torch.ones(s, s))`, in the parameter dtype) when flash is off.
pub(crate) fn weights(s: &Scenario, x: Precision, p_total: N) -> N {
    let ctx = N::from(s.block_size);
    let masks = if s.flash {
        N::ZERO
    } else {
        N::from(s.n_layer) * ctx * ctx * x.p
    };
    p_total * x.p + masks
}

/// Autocast's 16-bit copies of the Linear weights (`2·P_lin` bytes): cast during the forward and
/// saved for backward, so all are alive when the backward starts. Zero without autocast.
pub(crate) fn autocast_copies(t: &Totals, x: Precision) -> N {
    if x.autocast {
        t.saved_copies * 2
    } else {
        N::ZERO
    }
}

/// Elements of the 16-bit weight copies that the backward needs, under autocast.
///
/// Full training, and frozen embeddings alone: every Linear weight, `P_lin` (a frozen `lm_head`
/// is not cached, but its copy is saved for the gradient of its input). LoRA: a frozen Linear
/// saves its weight's copy only when its input needs a gradient, which in block 0 begins at the
/// first adapter (its `ln_1` is frozen and its input, the frozen embeddings' output, needs
/// none), so block 0's `c_attn` copy and those before the first target are freed at once; the
/// adapters' `A` and `B` are cached and saved (`+ P_lora`). The copies of frozen biases are
/// neither cached nor saved.
pub(crate) fn saved_copies(s: &Scenario, p: &params::Params) -> N {
    let train = Training::of(s);
    if !train.lora() {
        return N::from(p.linear);
    }
    let (h, v, l) = (N::from(s.n_embd), N::from(s.vocab_size), N::from(s.n_layer));
    let hh = h * h;
    let mut unsaved = hh * 3; // block 0's c_attn
    let mut flowing = train.targets.has(LoraTarget::CAttn);
    for (target, sq) in [
        (LoraTarget::AttnProj, 1),
        (LoraTarget::CFc, 4),
        (LoraTarget::MlpProj, 4),
    ] {
        if !flowing {
            unsaved = unsaved + hh * sq;
        }
        flowing |= train.targets.has(target);
    }
    v * h + l * hh * 12 - unsaved + N::from(p.lora)
}

/// Elements of the 16-bit weight copies autocast caches (and keeps until the forward's
/// `autocast` context exits): those of leaf fp32 parameters that require grad (PyTorch's
/// `cached_cast`), i.e. the trainable Linear parameters and the LoRA adapters. An evaluation
/// holds them all at its end; a frozen weight's copy lives only while its matmul runs.
pub(crate) fn cached_copies(s: &Scenario, p: &params::Params) -> N {
    let train = Training::of(s);
    if train.lora() {
        N::from(p.lora)
    } else if train.embeddings {
        N::from(p.linear)
    } else {
        N::from(p.linear) - N::from(s.vocab_size) * N::from(s.n_embd)
    }
}

/// Activations one block saves for backward at micro-batch `b`, in half-bytes (one unit = ½ byte,
/// so that torch.compile's 34.5·sbh stays exact). `first`: block 0, whose input (the embeddings'
/// output) needs no gradient when the embeddings are frozen.
///
/// Flash, dropout 0, eager, full training: `(2r + 14c)·sbh` = 36·sbh under autocast, 64·sbh in
/// fp32, 32·sbh pure bf16: the two LayerNorm inputs (`r` each; Korthikanti counts them at 2 bytes,
/// nanoGPT's are fp32), the c_attn input, q/k/v (3c), the attention output that c_proj reads
/// (flash returns it already in c_proj's layout: one tensor, c), the c_fc input, the GELU input
/// (4c) and output (4c); flash adds its fp32 logsumexp (`4·a·s·b`). torch.compile saves about
/// 1.5·sbh less per block under autocast (34.5·sbh; `0.75c`), an estimate (±10–15 %).
/// Flash off: the fp32 softmax output plus its 16-bit copy for `att @ v` (`6·a·s²·b` under
/// autocast, `4` in fp32 where one tensor serves both, `2` pure bf16) and masked_fill's bool
/// mask (`s²`). Dropout > 0: two 1-byte masks (`2·sbh`) and, flash off, the attention dropout's
/// mask and output (`+1`, `+5`, `+3` per a·s²·b element).
///
/// LoRA (`finetune.rs`; PyTorch autograd saves a tensor only for a gradient it will compute):
/// a frozen Linear saves no input for its weight gradient, so the c_attn and c_fc inputs (`c`
/// each), the GELU output (`4c`, mlp.c_proj's input) and, flash off, c_proj's input (`c`; with
/// flash it is flash's own saved output) go; the LayerNorm inputs, q/k/v, the attention output,
/// the GELU input and the dropout masks stay, as the gradient flows through every block. A
/// targeted Linear saves what its adapter needs: `A`'s input (`c` per input element, `4c` for
/// mlp.c_proj; PEFT casts a 16-bit input to the adapter's fp32 and autocast casts it back, so
/// under autocast attn.c_proj's is a tensor of its own beside flash's output) and `B`'s input
/// `x·A` (`c·s·b·r`). In block 0 with frozen embeddings nothing before the first trainable
/// point needs a gradient: only the adapters' inputs are saved until the first adapter, then
/// everything as above. (With `lora_dropout > 0`, not modelled, each adapter would also save a
/// 1-byte dropout mask per input element.)
pub(crate) fn block_half_bytes(s: &Scenario, x: Precision, b: u64, first: bool) -> N {
    let mut block = BlockSaves::new(s, x, b, first);
    block.attention_half();
    block.mlp_half();
    // Bytes saved, doubled into half-bytes (plus the compile adjustment).
    let mut half = block.bytes * 2;
    if s.compile {
        half = half - block.sbh * (3 * x.c / 2);
    }
    half
}

/// What one block saves for backward ([`block_half_bytes`]), added up sublayer by sublayer in
/// forward order.
struct BlockSaves<'a> {
    s: &'a Scenario,
    x: Precision,
    /// What trains.
    train: Training,
    /// The micro-batch.
    batch: N,
    /// `s·b·h`: one residual-stream-sized tensor.
    sbh: N,
    /// `s·b·r`: one LoRA `x·A` (r the LoRA rank).
    sbr: N,
    /// Whether the activations flowing here need a gradient (or the layer's own weight does).
    req: bool,
    /// Bytes saved so far.
    bytes: N,
}

impl<'a> BlockSaves<'a> {
    /// Nothing saved yet; the gradient flows into block 0 only when it trains or the
    /// embeddings do.
    fn new(s: &'a Scenario, x: Precision, b: u64, first: bool) -> BlockSaves<'a> {
        let batch = N::from(b);
        let sbh = N::from(s.block_size) * batch * N::from(s.n_embd);
        let train = Training::of(s);
        BlockSaves {
            s,
            x,
            train,
            batch,
            sbh,
            sbr: N::from(s.block_size) * batch * N::from(train.rank),
            req: train.base || !first || train.embeddings,
            bytes: N::ZERO,
        }
    }

    /// Whether `t` is an adapted Linear of a LoRA fine-tune.
    fn lora(&self, t: LoraTarget) -> bool {
        !self.train.base && self.train.targets.has(t) && self.train.lora()
    }

    /// A frozen, adapted Linear of input width `w·sbh`: A's input and x·A.
    fn adapter(&self, w: u128) -> N {
        self.sbh * (w * self.x.c) + self.sbr * self.x.c
    }

    /// Saves `n` more bytes.
    fn save(&mut self, n: N) {
        self.bytes = self.bytes + n;
    }

    /// A LayerNorm's input (`r`), when the gradient flows through it.
    fn layer_norm(&mut self) {
        if self.req {
            self.save(self.sbh * self.x.r);
        }
    }

    /// A Linear of input width `w·sbh`: its input for the weight gradient, or for its adapter;
    /// the gradient flows from an adapter on.
    fn linear(&mut self, t: LoraTarget, w: u128) {
        if self.train.base {
            self.save(self.sbh * (w * self.x.c));
        } else if self.lora(t) {
            self.save(self.adapter(w));
        }
        self.req |= self.lora(t);
    }

    /// A dropout's 1-byte mask, when dropout is on and the gradient flows.
    fn dropout_mask(&mut self) {
        if self.req && self.s.dropout > 0.0 {
            self.save(self.sbh);
        }
    }

    /// ln_1, c_attn, the attention, c_proj and resid_dropout.
    fn attention_half(&mut self) {
        self.layer_norm();
        self.linear(LoraTarget::CAttn, 1);
        self.attention();
        self.attention_c_proj();
        self.dropout_mask();
    }

    /// q, k, v, then flash's output and logsumexp, or the manual scores.
    fn attention(&mut self) {
        if !self.req {
            return;
        }
        let (s, x, sbh, batch) = (self.s, self.x, self.sbh, self.batch);
        let (seq, a) = (N::from(s.block_size), N::from(s.n_head));
        let dropout = s.dropout > 0.0;
        self.save(sbh * (3 * x.c));
        if s.flash {
            self.save(sbh * x.c + a * seq * batch * 4);
        } else {
            let scores = a * seq * seq * batch;
            let per_score = match (x.autocast, x.c) {
                (true, _) => 6 + u128::from(dropout),
                (false, 4) => 4 + 5 * u128::from(dropout),
                (false, _) => 2 + 3 * u128::from(dropout),
            };
            self.save(scores * per_score + seq * seq);
        }
    }

    /// attn.c_proj's input: flash's saved output when it is the same tensor.
    fn attention_c_proj(&mut self) {
        let (sbh, c) = (self.sbh, self.x.c);
        let shared = self.s.flash && self.req;
        if self.train.base {
            if !self.s.flash {
                self.save(sbh * c);
            }
        } else if self.lora(LoraTarget::AttnProj) {
            self.save(self.adapter(1));
            if shared && !self.x.autocast {
                self.bytes = self.bytes - sbh * c;
            }
        }
        self.req |= self.lora(LoraTarget::AttnProj);
    }

    /// ln_2, c_fc, GELU's input, then its output (mlp.c_proj's input), and the MLP's dropout.
    fn mlp_half(&mut self) {
        self.layer_norm();
        self.linear(LoraTarget::CFc, 1);
        if self.req {
            self.save(self.sbh * (4 * self.x.c));
        }
        self.linear(LoraTarget::MlpProj, 4);
        self.dropout_mask();
    }
}

/// [`block_half_bytes`] of every block but block 0.
pub(crate) fn layer_half_bytes(s: &Scenario, x: Precision, b: u64) -> N {
    block_half_bytes(s, x, b, false)
}

/// The inputs of `ln_f` (`r·sbh`) and of `lm_head` (`c·sbh`, saved only for the gradient of
/// `lm_head.weight` = `wte.weight`: not when the embeddings are frozen), plus the embedding
/// dropout's 1-byte mask when dropout > 0 (not when the embeddings are frozen: the dropout's
/// input then needs no gradient).
pub(crate) fn final_saved(s: &Scenario, x: Precision) -> N {
    let sbh = N::from(s.block_size) * N::from(s.batch_size) * N::from(s.n_embd);
    let train = Training::of(s);
    if !train.embeddings {
        return sbh * x.r;
    }
    sbh * (x.r + x.c) + if s.dropout > 0.0 { sbh } else { N::ZERO }
}

/// Token tensors alive during the backward: the current X and Y and the prefetched next pair;
/// with frozen embeddings the embedding saves no X, so the old one is freed at the prefetch.
pub(crate) fn backward_tokens(s: &Scenario, b: u64) -> N {
    tokens(s, b, if Training::of(s).embeddings { 4 } else { 3 })
}

/// `count` int64 token tensors of shape (b, s): train.py keeps the current X, Y (saved by the
/// embedding and the loss) and prefetches the next pair before backward.
pub(crate) fn tokens(s: &Scenario, b: u64, count: u128) -> N {
    N::from(s.block_size) * N::from(b) * (8 * count)
}

/// Shapes of one micro-batch, in [`N`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct MicroBatchShapes {
    /// `s·b·h`: one residual-stream-sized tensor, in elements.
    pub(crate) sbh: N,
    /// `s·b·V`: one logits-sized tensor.
    pub(crate) sbv: N,
    /// `a·s²·b`: one layer's attention scores.
    pub(crate) scores: N,
}

impl MicroBatchShapes {
    /// The shapes at micro-batch `b`.
    pub(crate) fn at(s: &Scenario, b: u64) -> MicroBatchShapes {
        let (seq, batch) = (N::from(s.block_size), N::from(b));
        MicroBatchShapes {
            sbh: seq * batch * N::from(s.n_embd),
            sbv: seq * batch * N::from(s.vocab_size),
            scores: N::from(s.n_head) * seq * seq * batch,
        }
    }
}

/// The forward's locals `tok_emb` (`p·sbh`, the embedding output in the parameter dtype) and
/// `pos_emb` (`p·s·h`): Python keeps them until `GPT.forward` returns.
pub(crate) fn embedding_locals(s: &Scenario, x: Precision, b: u64) -> N {
    let (seq, h) = (N::from(s.block_size), N::from(s.n_embd));
    (seq * N::from(b) * h + seq * h) * x.p
}
