//! Solvers for the generate phase (issue 22, item 3): the longest context (prompt plus new
//! tokens) and the largest batch whose verdict on the scenario's card is *fits*.
//!
//! Both search a memory that never decreases with the searched quantity (held by
//! `tests/it/solve.rs`'s property test), so a bisection finds the boundary: the answer fits and
//! one more token (or sequence) does not, unless the model's own limit comes first. The context
//! grows the prompt and keeps `max_new_tokens` as given.
//!
//! - nanoGPT's `sample.py` crops the context to `block_size` (`idx[:, -block_size:]`): a longer
//!   sequence costs only its token ids (8 bytes a token), and the model never sees more than
//!   `block_size` tokens, so the context is searched up to `block_size` (every generated token
//!   sees the whole sequence) and the answer says when that crop, not memory, is the limit.
//!   sample.py draws one sample at a time (batch 1): it has no batch to solve for.
//! - Hugging Face `generate`: two bounds, both reported. The memory bound is the longest context
//!   the card holds, searched with the positions not checked (for GPT-2, whose table a longer
//!   sequence would index past, what the card would hold were the table longer); the position
//!   bound is the model's (`Architecture::position_limit`: `prompt + new − 1 ≤` GPT-2's
//!   `n_positions`, a rotary model's `max_position_embeddings` or YaRN's extended length). The
//!   answer is the lesser, and `limited_by` says which binds: a rotary model runs past its
//!   positions in transformers (one warning) but was never trained there, so such a context is
//!   not counted as fitting. The batch: up to the first that does not fit (doubling, then
//!   bisection), with the position bound attached when the run's own context passes it.

use serde::Serialize;

use super::arch::PositionLimit;
use super::error::ScenarioError;
use super::hf_generate::{estimate_generate, estimate_generate_memory, Generation};
use super::sample::{estimate_sampling, sampled_model, Sampling};
use super::{Architecture, GpuCatalog, Scenario, Verdict};

/// What stopped the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The card: one more token (or sequence) does not fit.
    Memory,
    /// nanoGPT's `block_size`: sample.py crops longer contexts.
    BlockSize,
    /// The model's positions (GPT-2's `n_positions`, where generate cannot go further; a rotary
    /// model's `max_position_embeddings`, past which it was never trained).
    Positions,
}

/// A solver's answer (`solve.max_context` or `solve.max_batch` in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Solution {
    /// The largest value that fits, or `None` when even the smallest does not.
    pub value: Option<u64>,
    /// The prompt tokens at that context (`max_context` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// What bounds the answer.
    pub limited_by: Limit,
    /// `max_context`: the longest context the card holds, the positions aside (`None` when not
    /// even a one-token prompt fits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_max_context: Option<u64>,
    /// The model's position bound: for `max_context` always (Hugging Face `generate`), for
    /// `max_batch` when the run's own context passes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position_limit: Option<PositionLimit>,
}

/// The largest batch a bisection tries (beyond every card).
const MAX_BATCH_SEARCHED: u64 = 1 << 40;

/// The card's verdict is *fits*. Errors when the scenario names no card.
fn needs_gpu(s: &Scenario) -> Result<(), ScenarioError> {
    if s.gpu.is_none() {
        return Err(ScenarioError::key(
            "gpu",
            "a solver needs a card to fit: give one with --gpu ID",
        ));
    }
    Ok(())
}

/// The largest `x` in `lo..=hi` with `fits(x)`, assuming `fits` holds up to some point and not
/// after; `None` when `fits(lo)` fails.
fn bisect(
    lo: u64,
    hi: u64,
    mut fits: impl FnMut(u64) -> Result<bool, ScenarioError>,
) -> Result<Option<u64>, ScenarioError> {
    if lo > hi || !fits(lo)? {
        return Ok(None);
    }
    if fits(hi)? {
        return Ok(Some(hi));
    }
    let (mut good, mut bad) = (lo, hi);
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if fits(mid)? {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Ok(Some(good))
}

/// The context's answer, from the largest prompt that fits under `max_prompt`.
fn context(prompt: Option<u64>, new: u64, max_prompt: u64, at_bound: Limit) -> Solution {
    Solution {
        value: prompt.map(|p| p + new),
        prompt_tokens: prompt,
        limited_by: if prompt == Some(max_prompt) {
            at_bound
        } else {
            Limit::Memory
        },
        memory_max_context: None,
        position_limit: None,
    }
}

/// sample.py's longest context on the scenario's card: the prompt grows, `max_new_tokens` stays.
pub fn sampling_max_context(
    s: &Scenario,
    run: &Sampling,
    catalog: &GpuCatalog,
) -> Result<Solution, ScenarioError> {
    needs_gpu(s)?;
    let block = sampled_model(s).block_size;
    let new = run.max_new_tokens;
    let max_prompt = block.saturating_sub(new).max(1);
    let fits = |prompt: u64| -> Result<bool, ScenarioError> {
        let r = Sampling {
            prompt_tokens: prompt,
            ..*run
        };
        Ok(estimate_sampling(s, &r, catalog)?.verdict == Some(Verdict::Fits))
    };
    let prompt = bisect(1, max_prompt, fits)?;
    Ok(context(prompt, new, max_prompt, Limit::BlockSize))
}

/// Hugging Face `generate`'s longest context on the scenario's card: the prompt grows,
/// `max_new_tokens` stays. The memory bound is searched over every prompt length, the answer
/// is the lesser of it and the model's position bound.
pub fn generate_max_context(
    a: &Architecture,
    s: &Scenario,
    g: &Generation,
    catalog: &GpuCatalog,
) -> Result<Solution, ScenarioError> {
    needs_gpu(s)?;
    let new = g.max_new_tokens;
    let limit = a.position_limit();
    // A first estimate surfaces the settings' own errors instead of "nothing fits".
    estimate_generate(
        a,
        s,
        &Generation {
            prompt_tokens: 1,
            ..*g
        },
        catalog,
    )?;
    let fits = |prompt: u64| -> Result<bool, ScenarioError> {
        let at = Generation {
            prompt_tokens: prompt,
            ..*g
        };
        // Past the first estimate only sizes beyond 2^63 bytes fail: they do not fit.
        Ok(estimate_generate_memory(a, s, &at, catalog)
            .is_ok_and(|e| e.verdict == Some(Verdict::Fits)))
    };
    let memory = bisect(1, u64::MAX / 4, fits)?;
    // The longest prompt within the positions (none when the new tokens alone pass them).
    let within = limit.max_context.checked_sub(new).filter(|&p| p >= 1);
    let prompt = match (memory, within) {
        (Some(m), Some(w)) => Some(m.min(w)),
        _ => None,
    };
    let by_positions = within.is_none() || memory.zip(within).is_some_and(|(m, w)| w < m);
    Ok(Solution {
        value: prompt.map(|p| p + new),
        prompt_tokens: prompt,
        limited_by: if memory.is_some() && by_positions {
            Limit::Positions
        } else {
            Limit::Memory
        },
        memory_max_context: memory.map(|p| p + new),
        position_limit: Some(limit),
    })
}

/// Hugging Face `generate`'s largest batch of prompts on the scenario's card.
pub fn generate_max_batch(
    a: &Architecture,
    s: &Scenario,
    g: &Generation,
    catalog: &GpuCatalog,
) -> Result<Solution, ScenarioError> {
    needs_gpu(s)?;
    estimate_generate(
        a,
        s,
        &Generation {
            batch_size: 1,
            ..*g
        },
        catalog,
    )?;
    let fits = |batch: u64| -> Result<bool, ScenarioError> {
        let at = Generation {
            batch_size: batch,
            ..*g
        };
        // Past the first estimate only sizes beyond 2^63 bytes fail: they do not fit.
        Ok(estimate_generate(a, s, &at, catalog).is_ok_and(|e| e.verdict == Some(Verdict::Fits)))
    };
    // Double to the first batch that does not fit, then bisect below it.
    let mut hi = 1u64;
    while hi < MAX_BATCH_SEARCHED && fits(hi)? {
        hi *= 2;
    }
    let value = bisect(1, hi, fits)?;
    Ok(Solution {
        value,
        prompt_tokens: None,
        limited_by: Limit::Memory,
        memory_max_context: None,
        position_limit: a.runs_past_positions(g.prompt_tokens.saturating_add(g.max_new_tokens)),
    })
}
