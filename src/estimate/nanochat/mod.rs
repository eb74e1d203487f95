//! nanochat's training step (github.com/karpathy/nanochat at [`NANOCHAT_COMMIT`]): its own `GPT`
//! (`nanochat/gpt.py`: rotary, QK-norm, ReLU², value embeddings with their gates, the smear and
//! backout scalars, an untied head, the logit softcap of 15 in float32) and its `MuonAdamW`
//! (`nanochat/optim.py`: AdamW for the head, the embeddings and the scalars, Muon for the block
//! matrices, one group per shape), driven as `scripts/base_train.py` (and `scripts/chat_sft.py`,
//! the same step on a loaded model) drives them: per micro-step `loss = model(x, y)`,
//! `loss / grad_accum_steps`, `backward`; then `optimizer.step()` and
//! `model.zero_grad(set_to_none=True)`.
//!
//! Dtypes are nanochat's, not autocast's: the matrices and the head are float32 master weights
//! that each `Linear` casts to `COMPUTE_DTYPE` in its forward (the cast is saved for backward);
//! `wte` and the value embeddings are stored in `COMPUTE_DTYPE`; the logits are upcast to
//! float32 for the softcap and the loss. `dtype` is `COMPUTE_DTYPE`: bfloat16 (sm80+ GPUs) or
//! float32 (older GPUs, `NANOCHAT_DTYPE=float32`); float16 is refused.
//!
//! With `ddp_world_size` > 1 (torchrun's `--nproc-per-node`) nanochat uses no DDP: each rank
//! keeps every gradient, and `MuonAdamW` shards the state (ZeRO-2 style: an AdamW tensor of 1024
//! elements or more by rows, Muon's stacked matrices by chunks of ⌈K/world⌉), so the estimate is
//! rank 0's.
//!
//! Source: the fake-tensor replay of that step (`tools/nanochat_replay/replay_nanochat.py`;
//! torch 2.15) read against the code. Held to `tests/data/nanochat_replay.json`
//! (`tests/it/nanochat.rs`: every peak within 1 %, parameters, weights, gradients and optimizer
//! bytes exact). Stated assumptions: attention is nanochat's SDPA fallback (no FA3 kernel; FA3
//! keeps the same per-layer output and log-sum-exp but no sliding-window mask); `compile` true
//! (the scripts' `torch.compile(model)`, the default) keeps what inductor's partition saves and
//! allocates what its wrapper allocates (`compiled.rs`, held to
//! `tests/data/nanochat_compiled_replay.json`), `compile` false is the eager step (an upper
//! bound of the compiled one); the fused optimizer steps run eagerly either way.

mod activations;
mod compiled;
pub(crate) mod generate;
mod gpt;
mod optimizer;

pub use generate::{max_positions, ROTARY_FACTOR};
pub use gpt::{short_commit, GptConfig, NANOCHAT_VOCAB};

use super::arch::{Architecture, Span, NANOCHAT_COMMIT};
use super::error::ScenarioError;
use super::memory::{Components, TrainMoment};
use super::num::N;
use super::scenario::{Dtype, InitFrom, Scenario, Sharding};
use super::trainer::{Refusals, TrainerStep};

/// The sizes of one nanochat run, in elements and bytes.
pub(crate) struct Run {
    /// Micro-batch (`--device-batch-size`).
    b: u128,
    /// Sequence length (`--max-seq-len`).
    t: u128,
    /// Model width.
    h: u128,
    /// Layers (`--depth`).
    n: u128,
    /// Query heads (= key/value heads at the pinned commit's `base_train.py`).
    heads: u128,
    /// Key/value heads.
    kv_heads: u128,
    /// Head width.
    d: u128,
    /// The tokenizer's vocabulary.
    v: u128,
    /// The padded vocabulary (rows of `wte`, the value embeddings and `lm_head`).
    vp: u128,
    /// Bytes of `COMPUTE_DTYPE`.
    c: u128,
    /// Micro-steps per optimizer step on one rank.
    accumulation: u128,
    /// Ranks (`--nproc-per-node`).
    world: u128,
    /// Layers whose attention passes SDPA an explicit sliding-window mask.
    masked_layers: u128,
}

impl Run {
    fn of(a: &Architecture, s: &Scenario) -> Run {
        let n = a.layers;
        let t = s.block_size;
        // `_compute_window_sizes`: S = ⌈T/4/128⌉·128 tokens, the last layer always L;
        // `_sdpa_attention` builds a mask only where the window is shorter than the sequence.
        let short = t.div_ceil(4).div_ceil(128) * 128;
        let masked_layers = match &a.attention.sliding_window {
            Some(w) if short < t && !w.pattern.is_empty() => {
                // Layers 0..n−1 (the last is always L) whose pattern letter is S.
                let len = w.pattern.len() as u64;
                let local = |upto: u64| -> u64 {
                    w.pattern
                        .iter()
                        .take(usize::try_from(upto).unwrap_or(usize::MAX))
                        .filter(|s| **s == Span::Local)
                        .count() as u64
                };
                let layers = n.saturating_sub(1);
                u128::from((layers / len) * local(len) + local(layers % len))
            }
            _ => 0,
        };
        let world = u128::from(s.ddp_world_size.max(1));
        Run {
            b: u128::from(s.batch_size),
            t: u128::from(t),
            h: u128::from(a.hidden),
            n: u128::from(n),
            heads: u128::from(a.attention.heads),
            kv_heads: u128::from(a.attention.kv_heads),
            d: u128::from(a.attention.head_dim),
            v: u128::from(a.vocab_size),
            vp: u128::from(super::arch::nanochat_padded_vocab(a.vocab_size)),
            c: if s.dtype == Dtype::Float32 { 4 } else { 2 },
            accumulation: u128::from(s.gradient_accumulation_steps)
                .div_ceil(world)
                .max(1),
            world,
            masked_layers,
        }
    }

    /// Layers with a value embedding (`has_ve`): ⌈n/2⌉.
    fn ve_layers(&self) -> u128 {
        self.n.div_ceil(2)
    }

    /// Width of the keys and values.
    fn kv(&self) -> u128 {
        self.kv_heads * self.d
    }

    /// Bytes of the weights: float32 matrices, head and scalars; `wte` and the value
    /// embeddings in `COMPUTE_DTYPE` (`init_weights`).
    fn weight_bytes(&self) -> u128 {
        let embeddings = self.vp * self.h + self.ve_layers() * self.vp * self.kv();
        let fp32 = self.matrix_elements() + self.vp * self.h + self.scalars();
        embeddings * self.c + fp32 * 4
    }

    /// Elements of the block matrices (Muon's parameters).
    fn matrix_elements(&self) -> u128 {
        let q = self.heads * self.d;
        self.n * (q * self.h * 2 + 2 * self.kv() * self.h + 8 * self.h * self.h)
            + self.ve_layers() * self.kv_heads * 12
    }

    /// `resid_lambdas`, `x0_lambdas`, `smear_gate`, `smear_lambda`, `backout_lambda`.
    fn scalars(&self) -> u128 {
        2 * self.n + 26
    }

    /// The rotary `cos` and `sin` buffers: 10·T positions of D/2 each, in `COMPUTE_DTYPE`.
    fn buffer_bytes(&self) -> u128 {
        2 * 10 * self.t * (self.d / 2) * self.c
    }
}

/// Refuses what the replay does not cover, naming each key (all at once).
fn check(a: &Architecture, s: &Scenario) -> Result<(), ScenarioError> {
    let mut r = Refusals::none();
    let mut not = |yes: bool, key: &'static str, why: &'static str| r.not(yes, key, why);
    not(
        s.dtype == Dtype::Float16,
        "dtype",
        "float16 (NANOCHAT_DTYPE=float16, with GradScaler and float32 embeddings) is not \
         replayed: use bfloat16 or float32",
    );
    not(s.dropout > 0.0, "dropout", "nanochat's GPT has no dropout");
    not(
        s.block_size < 2,
        "block_size",
        "gpt.py's training forward asserts at least 2 tokens",
    );
    not(
        a.attention.head_dim % 8 != 0,
        "model",
        "a head width that is not a multiple of 8 (FA3 needs one, and the replay covers no \
         other)",
    );
    not(
        s.half_weights(),
        "pure_bf16",
        "nanochat keeps float32 master weights for its matrices and head (only wte and the \
         value embeddings are stored in COMPUTE_DTYPE)",
    );
    not(
        !s.flash,
        "flash",
        "nanochat's attention is FA3 or PyTorch's SDPA, never an eager softmax: set it to true",
    );
    not(
        s.optimizer != super::scenario::Optimizer::Adamw,
        "optimizer",
        "nanochat's optimizer is its MuonAdamW, which the estimate models",
    );
    not(
        s.grad_checkpoint,
        "grad_checkpoint",
        "nanochat does not checkpoint activations",
    );
    not(
        s.sharding != Sharding::None,
        "sharding",
        "nanochat shards its optimizer state itself; set ddp_world_size (torchrun's \
         --nproc-per-node) only",
    );
    not(
        s.gradient_as_bucket_view,
        "gradient_as_bucket_view",
        "nanochat uses no DDP wrapper, so there are no gradient buckets",
    );
    not(
        s.load_in_4bit,
        "load_in_4bit",
        "nanochat trains its own float32 weights; bitsandbytes' 4-bit weights are not its code",
    );
    not(
        s.lora_rank > 0 || s.freeze_embeddings,
        "lora_rank",
        "nanochat trains every parameter",
    );
    not(
        s.init_from != InitFrom::Scratch || s.eval_only,
        "init_from",
        "nanoGPT's train.py settings have no meaning for nanochat",
    );
    r.result_for(&format!(
        "nanochat (commit {}) is modelled as base_train.py's step only",
        &NANOCHAT_COMMIT[..7]
    ))
}

/// nanochat's step of `a` under `run`: refused settings first, then the peak of a step once
/// the optimizer state exists (eager: the largest of the loss's backward, the head's backward
/// and the optimizer step; compiled: of the loss's forward with the C++ backend's float32
/// buffer, the loss's backward and the optimizer step) and the first step's peak (the same moments without that state; its
/// `optimizer.step()` creates the state during the step).
pub(crate) fn step(a: &Architecture, s: &Scenario) -> Result<TrainerStep, ScenarioError> {
    check(a, s)?;
    let r = Run::of(a, s);
    if !optimizer::shards_evenly(&r) {
        return Err(ScenarioError {
            key: Some("ddp_world_size".to_owned()),
            message: format!(
                "nanochat's sharded AdamW needs the padded vocabulary ({}) and the other large \
                 tensors' rows divisible by the {} ranks (optim.py asserts it)",
                r.vp, r.world
            ),
        });
    }
    let state = optimizer::state_bytes(&r);
    let at = |state: u128| {
        if s.compile {
            compiled_peak(&r, state, true)
        } else {
            peak(&r, state)
        }
    };
    let second = at(state);
    // The first step has no state until its optimizer.step() creates it, tensor by tensor and
    // group by group, before each update: its forward and backward run without state, and each
    // moment of its optimizer step has the state made so far.
    let before = at(0).0.sum().0;
    let without_state = optimizer_moment(&r, 0).sum().0 - optimizer::step_transients(&r);
    let first = before.max(without_state + optimizer::first_step_peak(&r));
    Ok(TrainerStep {
        train: second.0,
        moment: second.1,
        first: N(first),
    })
}

/// What the compiled forward saves for backward (inductor's partition, `compiled::saved`), in
/// bytes, for `a` under `s`.
pub fn compiled_saved_bytes(a: &Architecture, s: &Scenario) -> u128 {
    compiled::saved(&Run::of(a, s))
}

/// The compiled step's peak without the float32 logits buffer of inductor's C++ backend (the low
/// end of the compiled range, `compiled.rs`); `None` for the eager step or another family.
pub fn compiled_low_peak(a: &Architecture, s: &Scenario) -> Option<u128> {
    if a.family != super::arch::Family::Nanochat || !s.compile {
        return None;
    }
    let r = Run::of(a, s);
    Some(
        compiled_peak(&r, optimizer::state_bytes(&r), false)
            .0
            .sum()
            .0,
    )
}

/// One process's view of `run` for the estimate's batch figures: nanochat's ranks each run
/// their share of the job's micro-batches (no DDP wrapper); a Trainer step is one process.
pub(crate) fn process(a: &Architecture, run: &Scenario) -> Scenario {
    match a.family {
        super::arch::Family::Nanochat => run.per_process(),
        _ => run.clone(),
    }
}

/// Bytes of nanochat's weights (float32 matrices, head and scalars; `wte` and the value
/// embeddings in `COMPUTE_DTYPE`), of its gradients (the same dtypes: every parameter trains)
/// and of rank 0's optimizer state, for `a` under `s`.
pub fn static_bytes(a: &Architecture, s: &Scenario) -> (u128, u128, u128) {
    let r = Run::of(a, s);
    (
        r.weight_bytes(),
        r.weight_bytes(),
        optimizer::state_bytes(&r),
    )
}

/// The weights with the rotary buffers, and the token batch `x`, `y` (int64).
fn resident(r: &Run) -> (u128, u128) {
    (r.weight_bytes() + r.buffer_bytes(), 2 * r.b * r.t * 8)
}

/// `optimizer.step()` at its largest: every gradient, the state, and Muon's and AdamW's
/// transients (`optimizer.rs`).
fn optimizer_moment(r: &Run, state: u128) -> Components {
    let (weights, tokens) = resident(r);
    Components {
        weights: N(weights),
        gradients: N(r.weight_bytes()),
        optimizer: N(state),
        autocast_weights: N::ZERO,
        activations: N(optimizer::step_transients(r) + tokens),
        logits: N::ZERO,
    }
}

/// The step's peak with `state` bytes of optimizer state (the optimizer step only when there is
/// state), and its moment.
fn peak(r: &Run, state: u128) -> (Components, TrainMoment) {
    let (weights, tokens) = resident(r);
    let saved = activations::saved(r);
    let grads_between = if r.accumulation >= 2 {
        r.weight_bytes()
    } else {
        0
    };
    let at = |gradients: u128, casts: u128, acts: u128, logits: u128| Components {
        weights: N(weights),
        gradients: N(gradients),
        optimizer: N(state),
        autocast_weights: N(casts),
        activations: N(acts + tokens),
        logits: N(logits),
    };
    let casts = activations::weight_casts(r);
    let mut best = (
        at(grads_between, casts, saved, activations::loss_backward(r)),
        TrainMoment::LossBackward,
    );
    let head = activations::head_backward(r);
    let head_copy = if r.c == 4 { 0 } else { r.vp * r.h * r.c };
    let candidate = at(
        grads_between + head.1,
        casts.saturating_sub(head_copy),
        (saved + head.0).saturating_sub(activations::head_released(r)),
        0,
    );
    if candidate.sum().0 > best.0.sum().0 {
        best = (candidate, TrainMoment::HeadBackward);
    }
    if state > 0 {
        let candidate = optimizer_moment(r, state);
        if candidate.sum().0 > best.0.sum().0 {
            best = (candidate, TrainMoment::OptimizerStep);
        }
    }
    best
}

/// The compiled step's peak with `state` bytes of optimizer state, and its moment: the loss's
/// forward with the C++ backend's float32 logits buffer (only `with_cpp_buffer`), the loss's
/// backward (the head output's gradient beside everything saved), and the optimizer step.
fn compiled_peak(r: &Run, state: u128, with_cpp_buffer: bool) -> (Components, TrainMoment) {
    let (weights, tokens) = resident(r);
    let grads_between = if r.accumulation >= 2 {
        r.weight_bytes()
    } else {
        0
    };
    let casts = activations::weight_casts(r);
    let logits = compiled::saved_logits(r);
    let saved = compiled::saved(r) - casts - logits;
    let at = |extra: u128| Components {
        weights: N(weights),
        gradients: N(grads_between),
        optimizer: N(state),
        autocast_weights: N(casts),
        activations: N(saved + tokens),
        logits: N(logits + extra),
    };
    let mut best = (at(compiled::loss_backward(r)), TrainMoment::LossBackward);
    let forward = at(compiled::cpp_loss_buffer(r));
    if with_cpp_buffer && forward.sum().0 > best.0.sum().0 {
        best = (forward, TrainMoment::LossForward);
    }
    if state > 0 {
        let candidate = optimizer_moment(r, state);
        if candidate.sum().0 > best.0.sum().0 {
            best = (candidate, TrainMoment::OptimizerStep);
        }
    }
    best
}
