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
//! - Hugging Face `generate` on GPT-2: up to GPT-2's positions (`prompt + new − 1 ≤
//!   n_positions`); the batch up to the first that does not fit (doubling, then bisection).
//! - nanochat's `Engine.generate`: up to its rotary tables (`prompt + new ≤ 10 ×
//!   sequence_len`, `nanochat::max_positions`); the batch is its `num_samples`.

use serde::Serialize;

use super::arch::{Family, Positions};
use super::error::ScenarioError;
use super::hf_generate::{estimate_generate, Generation};
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
    /// GPT-2's `n_positions`: generate cannot go further.
    Positions,
    /// nanochat's rotary tables (`10 × sequence_len` rows): its forward cannot go further.
    RotaryTables,
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
/// `max_new_tokens` stays.
pub fn generate_max_context(
    a: &Architecture,
    s: &Scenario,
    g: &Generation,
    catalog: &GpuCatalog,
) -> Result<Solution, ScenarioError> {
    needs_gpu(s)?;
    let new = g.max_new_tokens;
    let (max_prompt, at_bound) = match a.positions {
        // prompt + new − 1 ≤ n_positions.
        Positions::Learned { max_positions } => (
            (max_positions + 1).saturating_sub(new).max(1),
            Limit::Positions,
        ),
        Positions::Rotary { .. } if a.family == Family::Nanochat => (
            super::nanochat::max_positions(s).saturating_sub(new).max(1),
            Limit::RotaryTables,
        ),
        Positions::Rotary { .. } => (u64::MAX / 4, Limit::Memory),
    };
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
        Ok(estimate_generate(a, s, &at, catalog).is_ok_and(|e| e.verdict == Some(Verdict::Fits)))
    };
    let prompt = bisect(1, max_prompt, fits)?;
    Ok(context(prompt, new, max_prompt, at_bound))
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
    })
}
