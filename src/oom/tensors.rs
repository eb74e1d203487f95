//! Which tensor a failed allocation is, and in which phase of nanoGPT's loop it failed.
//!
//! The candidates are the large tensors of the estimator's model of a training step (exact replay
//! of nanoGPT's train step; docs/memory-model.md): logits and their fp32 copy, the evaluation's
//! logits, the token embedding's gradient and AdamW moments, attention scores without flash, and
//! the per-layer activations. A candidate matches when its size is within the message's rounding
//! plus the caching allocator's: PyTorch rounds requests of 10 MiB and more up to a multiple of
//! 2 MiB (`CUDACachingAllocator.cpp`, `get_allocation_size`).

use serde::Serialize;

use super::message::{OomMessage, Size};
use crate::estimate::{Dtype, Estimate, Optimizer};

/// The caching allocator's rounding of large blocks: 2 MiB.
const ROUND_LARGE: u64 = 2 << 20;

/// A phase of nanoGPT's `train.py` loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Phase {
    /// `estimate_loss()` (at iteration 0 it runs before the first training step).
    Evaluation,
    /// A micro-step's forward (`model(X, Y)`).
    Forward,
    /// A micro-step's backward (`loss.backward()`).
    Backward,
    /// A micro-step, forward or backward (no traceback to tell which).
    TrainingStep,
    /// `optimizer.step()` (the AdamW moments are created at the first one).
    OptimizerStep,
}

/// How the phase was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PhaseSource {
    /// The traceback's frames.
    Traceback,
    /// The memory in use: the phase whose estimated peak is closest to what PyTorch held plus
    /// the failed allocation.
    Memory,
    /// The matched tensor exists in one phase only.
    Tensor,
}

/// A tensor of the scenario that an allocation can be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Candidate {
    /// Which tensor (`logits`, `logits_fp32`, `eval_logits`, …).
    pub(crate) kind: &'static str,
    /// Its shape, as PyTorch prints it.
    pub(crate) shape: String,
    /// Its dtype (`bfloat16`, `float16`, `float32`).
    pub(crate) dtype: &'static str,
    /// Its bytes.
    pub(crate) bytes: u64,
    /// The phases in which it is allocated.
    #[serde(skip)]
    pub(crate) phases: &'static [Phase],
}

/// The scenario's large tensors, each with the phases that allocate it.
pub(crate) fn candidates(e: &Estimate) -> Vec<Candidate> {
    let d = Dims::of(e);
    let mut out = Vec::new();
    logits(&d, &mut out);
    embedding(&d, &mut out);
    if !d.flash {
        attention(&d, &mut out);
    }
    block_activations(&d, &mut out);
    out
}

/// The scenario's sizes and dtypes that the candidates' shapes and bytes follow from.
struct Dims {
    /// Micro-batch size.
    b: u64,
    /// Evaluation batch size.
    eb: u64,
    /// Sequence length (`block_size`).
    t: u64,
    /// Vocabulary size.
    v: u64,
    /// Embedding width (`n_embd`).
    h: u64,
    /// Attention heads.
    a: u64,
    /// Bytes per element of the run's 16-bit (or float32) activations.
    c: u64,
    /// The dtype of those activations, as PyTorch names it.
    half: &'static str,
    /// Bytes per element of a parameter (and its gradient and moments).
    p: u64,
    /// The parameters' dtype, as PyTorch names it.
    p_dtype: &'static str,
    /// Mixed precision: 16-bit activations with fp32 copies where autocast makes them.
    autocast: bool,
    /// Whether the optimizer keeps full-size moments (not 8-bit AdamW).
    full_moments: bool,
    /// Flash attention (no attention-score tensors).
    flash: bool,
}

impl Dims {
    /// The sizes of `e`'s scenario.
    fn of(e: &Estimate) -> Dims {
        let s = &e.scenario;
        Dims {
            b: s.batch_size,
            eb: s.eval_batch(),
            t: s.block_size,
            v: s.vocab_size,
            h: s.n_embd,
            a: s.n_head,
            c: if s.dtype == Dtype::Float32 { 4 } else { 2 },
            half: match s.dtype {
                Dtype::Float32 => "float32",
                Dtype::Bfloat16 => "bfloat16",
                Dtype::Float16 => "float16",
            },
            p: if s.pure_bf16 { 2 } else { 4 },
            p_dtype: if s.pure_bf16 { "bfloat16" } else { "float32" },
            autocast: s.dtype != Dtype::Float32 && !s.pure_bf16,
            full_moments: s.optimizer != Optimizer::Adamw8bit,
            flash: s.flash,
        }
    }
}

/// `x × y`, saturating.
fn m(x: u64, y: u64) -> u64 {
    x.saturating_mul(y)
}

/// A candidate from its parts.
fn candidate(
    kind: &'static str,
    shape: String,
    dtype: &'static str,
    bytes: u64,
    phases: &'static [Phase],
) -> Candidate {
    Candidate {
        kind,
        shape,
        dtype,
        bytes,
        phases,
    }
}

/// Logits: (b·s, V) as the loss sees them, in training and in evaluation; train.py keeps them,
/// cross-entropy saves a log-softmax of the same size, and its backward writes an fp32 gradient
/// of it.
fn logits(d: &Dims, out: &mut Vec<Candidate>) {
    use Phase::*;
    let &Dims {
        b,
        eb,
        t,
        v,
        c,
        half,
        ..
    } = d;
    out.push(candidate(
        "logits",
        format!("({}, {v})", m(b, t)),
        half,
        m(m(m(b, t), v), c),
        &[Forward, Backward],
    ));
    if d.autocast {
        // nll_loss is on CUDA autocast's fp32 list: an fp32 copy in the forward, an fp32
        // gradient in the backward.
        out.push(candidate(
            "logits_fp32",
            format!("({}, {v})", m(b, t)),
            "float32",
            m(m(m(b, t), v), 4),
            &[Forward, Backward],
        ));
    }
    out.push(candidate(
        "eval_logits",
        format!("({}, {v})", m(eb, t)),
        half,
        m(m(m(eb, t), v), c),
        &[Evaluation],
    ));
    if d.autocast {
        out.push(candidate(
            "eval_logits_fp32",
            format!("({}, {v})", m(eb, t)),
            "float32",
            m(m(m(eb, t), v), 4),
            &[Evaluation],
        ));
    }
}

/// The largest parameter, wte (tied to lm_head): its gradient in the backward, its optimizer
/// state at the first step (torch.optim creates the moments lazily, per parameter).
fn embedding(d: &Dims, out: &mut Vec<Candidate>) {
    let &Dims {
        v, h, p, p_dtype, ..
    } = d;
    out.push(candidate(
        "wte_grad",
        format!("({v}, {h})"),
        p_dtype,
        m(m(v, h), p),
        &[Phase::Backward],
    ));
    if d.full_moments {
        out.push(candidate(
            "wte_moment",
            format!("({v}, {h})"),
            p_dtype,
            m(m(v, h), p),
            &[Phase::OptimizerStep],
        ));
    }
}

/// Manual attention (no flash): the (b, a, s, s) scores, fp32 softmax and its 16-bit copy, and
/// the evaluation's scores when its batch differs.
fn attention(d: &Dims, out: &mut Vec<Candidate>) {
    use Phase::*;
    let &Dims {
        b,
        eb,
        t,
        a,
        c,
        half,
        ..
    } = d;
    let scores = m(m(m(b, a), t), t);
    out.push(candidate(
        "attention_scores_fp32",
        format!("({b}, {a}, {t}, {t})"),
        "float32",
        m(scores, 4),
        &[Forward, Backward],
    ));
    if c != 4 {
        out.push(candidate(
            "attention_scores",
            format!("({b}, {a}, {t}, {t})"),
            half,
            m(scores, c),
            &[Forward, Backward],
        ));
    }
    let eval_scores = m(m(m(eb, a), t), t);
    if eb != b {
        out.push(candidate(
            "eval_attention_scores_fp32",
            format!("({eb}, {a}, {t}, {t})"),
            "float32",
            m(eval_scores, 4),
            &[Evaluation],
        ));
    }
}

/// One block's MLP hidden layer (b, s, 4h), its qkv projection (b, s, 3h) and the residual
/// stream (b, s, h).
fn block_activations(d: &Dims, out: &mut Vec<Candidate>) {
    use Phase::*;
    let &Dims {
        b, t, h, c, half, ..
    } = d;
    out.push(candidate(
        "mlp_hidden",
        format!("({b}, {t}, {})", m(4, h)),
        half,
        m(m(m(b, t), m(4, h)), c),
        &[Forward, Backward],
    ));
    out.push(candidate(
        "qkv",
        format!("({b}, {t}, {})", m(3, h)),
        half,
        m(m(m(b, t), m(3, h)), c),
        &[Forward, Backward],
    ));
    out.push(candidate(
        "residual",
        format!("({b}, {t}, {h})"),
        "float32",
        m(m(m(b, t), h), 4),
        &[Forward, Backward],
    ));
}

/// Whether `bytes` is what the message's `requested` can stand for.
pub(crate) fn size_matches(bytes: u64, requested: Size) -> bool {
    let rounded = if bytes >= 10 << 20 {
        bytes.div_ceil(ROUND_LARGE).saturating_mul(ROUND_LARGE)
    } else {
        bytes
    };
    [bytes, rounded]
        .iter()
        .any(|b| b.abs_diff(requested.bytes) <= requested.tolerance.max(1))
}

/// The phase the traceback names: `estimate_loss` → evaluation, a backward frame → backward, an
/// optimizer's `step` → optimizer step, any other frame → a micro-step's forward.
pub(crate) fn phase_from_traceback(m: &OomMessage) -> Option<Phase> {
    if m.frames.is_empty() && m.code.is_empty() {
        return None;
    }
    let has = |needle: &str| {
        m.frames.iter().any(|f| f.contains(needle)) || m.code.iter().any(|c| c.contains(needle))
    };
    Some(if has("estimate_loss") {
        Phase::Evaluation
    } else if has("backward") {
        Phase::Backward
    } else if m
        .frames
        .iter()
        .any(|f| f == "step" || f.contains("adam") || f.contains("sgd"))
        || m.code.iter().any(|c| c.contains(".step("))
    {
        Phase::OptimizerStep
    } else {
        Phase::Forward
    })
}

/// The tensor and phase of a failed allocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Identified {
    /// The matched tensor, if one has the requested size.
    pub(crate) tensor: Option<Candidate>,
    /// The phase, if known.
    pub(crate) phase: Option<Phase>,
    /// How the phase was found.
    pub(crate) phase_source: Option<PhaseSource>,
    /// For an evaluation: whether it ran before the first optimizer step (iteration 0, where
    /// nanoGPT evaluates before it trains), judged by the memory in use.
    pub(crate) before_first_step: Option<bool>,
    /// The candidate closest in size, when none matches.
    pub(crate) nearest: Option<Candidate>,
}

/// Matches the requested size against the scenario's tensors and settles the phase.
///
/// The traceback decides the phase when there is one. Without it, the phase is the one whose
/// estimated peak (`eval_first_peak` at iteration 0, `eval_peak` later, `train_peak` for a
/// micro-step) is closest to what PyTorch held plus the failed allocation, among the phases that
/// allocate a tensor of that size.
pub(crate) fn identify(m: &OomMessage, e: &Estimate) -> Identified {
    let all = candidates(e);
    let at_failure = m.allocated.bytes.saturating_add(m.requested.bytes);
    let gap = |peak: u64| peak.abs_diff(at_failure);
    let matching: Vec<&Candidate> = all
        .iter()
        .filter(|c| size_matches(c.bytes, m.requested))
        .collect();
    let b = &e.bytes;
    let (phase, source) = match phase_from_traceback(m) {
        Some(p) => (Some(p), Some(PhaseSource::Traceback)),
        None => {
            let eval = matching
                .iter()
                .any(|c| c.phases.contains(&Phase::Evaluation));
            let train = matching
                .iter()
                .any(|c| c.phases.iter().any(|p| *p != Phase::Evaluation));
            let eval_gap = gap(b.eval_first_peak).min(gap(b.eval_peak));
            match (eval, train) {
                (true, true) if eval_gap <= gap(b.train_peak) => {
                    (Some(Phase::Evaluation), Some(PhaseSource::Memory))
                }
                (true, true) => (Some(Phase::TrainingStep), Some(PhaseSource::Memory)),
                (true, false) => (Some(Phase::Evaluation), Some(PhaseSource::Tensor)),
                (false, true) => match matching.first().map(|c| c.phases) {
                    Some([only]) => (Some(*only), Some(PhaseSource::Tensor)),
                    _ => (Some(Phase::TrainingStep), Some(PhaseSource::Tensor)),
                },
                (false, false) => (None, None),
            }
        }
    };
    let fits_phase = |c: &Candidate, p: Phase| {
        c.phases.contains(&p)
            || (p == Phase::TrainingStep && c.phases.iter().any(|q| *q != Phase::Evaluation))
    };
    let tensor = matching
        .iter()
        .find(|c| phase.is_some_and(|p| fits_phase(c, p)))
        .or(matching.first())
        .map(|c| (*c).clone());
    let before_first_step =
        (phase == Some(Phase::Evaluation)).then(|| gap(b.eval_first_peak) <= gap(b.eval_peak));
    let nearest = if tensor.is_none() {
        all.iter()
            .min_by_key(|c| c.bytes.abs_diff(m.requested.bytes))
            .cloned()
    } else {
        None
    };
    Identified {
        tensor,
        phase,
        phase_source: source,
        before_first_step,
        nearest,
    }
}
