//! A failed allocation in generation, matched against the generation run's own tensors: Hugging
//! Face `generate` (`--model ID --phase generate`) or nanoGPT's `sample.py`.
//!
//! The candidates are the estimator's named list (`estimate::generate_tensors`,
//! `estimate::sample_tensors`): the KV cache's growth, the prefill's activations, the last
//! position's logits, sample.py's cropped-context forward. A tensor whose size grows with the
//! tokens matches when some token count in its range gives the requested size (within the
//! message's rounding and the allocator's 2 MiB, as [`super::tensors::size_matches`]); when the
//! rounding lets several counts match, all of them are named (`[8, 12, 1030–1045, 64]`).

use serde::Serialize;

use super::message::{OomMessage, PrintedSize};
use super::tensors::{
    phase_from_traceback, size_matches, Candidate, Identified, LoopPhase, PhaseSource,
};
use crate::estimate::{
    generate_tensors, sample_tensors, Dtype, GenerateEstimate, GpuRef, GrowingTensor,
    SampleEstimate, Verdict,
};

/// A generation run's estimate: Hugging Face `generate`'s or nanoGPT `sample.py`'s.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub(crate) enum GenerationEstimate {
    /// `model.generate` on a Hugging Face model.
    Generate(Box<GenerateEstimate>),
    /// nanoGPT's `sample.py`.
    Sample(Box<SampleEstimate>),
}

/// The figures of an estimate the diagnosis prints and checks (a training or generation run).
pub(crate) struct EstimateTotals<'a> {
    pub(crate) peak: u64,
    pub(crate) total_low: u64,
    pub(crate) total_high: u64,
    pub(crate) other_processes: u64,
    pub(crate) gpu: Option<&'a GpuRef>,
    pub(crate) verdict: Option<Verdict>,
    pub(crate) fits: Option<bool>,
    pub(crate) dtype: Dtype,
}

impl GenerationEstimate {
    /// Its totals, verdict and card.
    pub(crate) fn totals(&self) -> EstimateTotals<'_> {
        match self {
            GenerationEstimate::Generate(e) => EstimateTotals {
                peak: e.bytes.peak,
                total_low: e.bytes.total_low,
                total_high: e.bytes.total_high,
                other_processes: e.bytes.other_processes,
                gpu: e.gpu.as_ref(),
                verdict: e.verdict,
                fits: e.fits,
                dtype: e.dtype,
            },
            GenerationEstimate::Sample(e) => EstimateTotals {
                peak: e.bytes.peak,
                total_low: e.bytes.total_low,
                total_high: e.bytes.total_high,
                other_processes: e.bytes.other_processes,
                gpu: e.gpu.as_ref(),
                verdict: e.verdict,
                fits: e.fits,
                dtype: e.scenario.dtype,
            },
        }
    }

    /// The run's large tensors.
    fn tensors(&self) -> Vec<GrowingTensor> {
        match self {
            GenerationEstimate::Generate(e) => {
                generate_tensors(&e.architecture, e.dtype, &e.generation)
            }
            GenerationEstimate::Sample(e) => sample_tensors(&e.scenario, &e.sampling),
        }
    }
}

/// The token counts in `t`'s range whose size is what `requested` can stand for: the first and
/// the last (the sizes grow with the tokens, so the counts between match too).
fn matching_tokens(t: &GrowingTensor, requested: PrintedSize) -> Option<(u64, u64)> {
    let (lo, hi) = t.tokens;
    if t.token_axes == 0 || lo > hi {
        return size_matches(t.bytes(0), requested).then_some((0, 0));
    }
    // No count below `from` can match: its size, even rounded up by 2 MiB, is short of the
    // request.
    let floor = requested
        .bytes
        .saturating_sub(requested.tolerance.max(1))
        .saturating_sub(2 << 20);
    let from = first_at_least(t, lo, hi, floor);
    let ceiling = requested.bytes.saturating_add(requested.tolerance.max(1));
    let mut found: Option<(u64, u64)> = None;
    let mut n = from;
    while n <= hi && t.bytes(n) <= ceiling {
        if size_matches(t.bytes(n), requested) {
            found = Some(found.map_or((n, n), |(a, _)| (a, n)));
        }
        n += 1;
    }
    found
}

/// The smallest token count in `lo..=hi` whose size is at least `bytes` (`hi + 1` if none): a
/// bisection, the sizes never decreasing with the tokens.
fn first_at_least(t: &GrowingTensor, lo: u64, hi: u64, bytes: u64) -> u64 {
    let (mut a, mut b) = (lo, hi.saturating_add(1));
    while a < b {
        let mid = a + (b - a) / 2;
        if t.bytes(mid) >= bytes {
            b = mid;
        } else {
            a = mid + 1;
        }
    }
    a
}

/// A tensor as a candidate, its token axes written as the counts that match.
fn candidate(t: &GrowingTensor, (first, last): (u64, u64)) -> Candidate {
    let tokens = if first == last {
        first.to_string()
    } else {
        format!("{first}–{last}")
    };
    Candidate {
        kind: t.name,
        shape: t.shape_text(&tokens),
        dtype: t.dtype,
        bytes: t.bytes(last),
        phases: vec![LoopPhase::Generation],
    }
}

/// Matches the requested size against the generation run's tensors. The phase is generation,
/// from the traceback when it names it, else from the matched tensor; a traceback through a
/// training step (a backward, an optimizer step) is not a generation run's, and no tensor is
/// matched to it.
pub(crate) fn identify(m: &OomMessage, e: &GenerationEstimate) -> Identified {
    let traced = phase_from_traceback(m);
    let training_traceback = matches!(
        traced,
        Some(LoopPhase::Backward | LoopPhase::OptimizerStep | LoopPhase::Evaluation)
    );
    let all = e.tensors();
    let tensor = if training_traceback {
        None
    } else {
        all.iter()
            .find_map(|t| matching_tokens(t, m.requested).map(|r| candidate(t, r)))
    };
    let (phase, phase_source) = match (traced, &tensor) {
        (Some(LoopPhase::Generation), _) => {
            (Some(LoopPhase::Generation), Some(PhaseSource::Traceback))
        }
        (Some(p), _) if training_traceback => (Some(p), Some(PhaseSource::Traceback)),
        (_, Some(_)) => (Some(LoopPhase::Generation), Some(PhaseSource::Tensor)),
        _ => (None, None),
    };
    let nearest = if tensor.is_none() && !training_traceback {
        all.iter()
            .map(|t| {
                let (lo, hi) = t.tokens;
                let n = first_at_least(t, lo, hi, m.requested.bytes).min(hi);
                candidate(t, (n, n))
            })
            .min_by_key(|c| c.bytes.abs_diff(m.requested.bytes))
    } else {
        None
    };
    Identified {
        tensor,
        phase,
        phase_source,
        before_first_step: None,
        nearest,
        evaluation_not_modelled: false,
        generation_not_modelled: false,
    }
}
