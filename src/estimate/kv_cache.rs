//! The key/value cache of Hugging Face `generate`: its bytes for any family of the architecture
//! description, any token count and batch, and each cache kind transformers offers (issue 22,
//! item 2). Pure arithmetic.
//!
//! Source: transformers 5.24's `cache_utils.py` (the version [`super::arch::HF_TRANSFORMERS`]
//! pins), read class by class; the byte counts are what `untyped_storage().nbytes()` gives for the
//! tensors each layer keeps (`tools/gpu_measure/hf_cases.py::cache_bytes` and
//! `tools/hf_replay/replay_generate.py` count them so). One layer holds keys and values of shape
//! `[batch, kv_heads, tokens, head_dim]` each, in the model's compute dtype (`e` bytes), so one
//! token costs `2·b·kv_heads·head_dim·e` bytes per layer: the formula every calculator uses. What
//! the classes add to it:
//!
//! - **`DynamicLayer`** (`DynamicCache`, full-attention layers): `torch.cat` of the old and the
//!   new states, exactly the `T` tokens seen so far.
//! - **`DynamicSlidingWindowLayer`** (sliding layers of Gemma 2/3, Mistral, nanochat): keeps
//!   `full[:, :, -(W-1):]`, a *view* of the concatenation, so its storage is the whole
//!   concatenation: after prefill the whole prompt (`P` tokens, even beyond the window), after any
//!   decoding step `min(T, W)` (the kept `W−1` plus the new one). Plus the 8-byte
//!   `_sliding_window_tensor` (int64) on the device. "Sliding layers hold at most the window" is
//!   true from the first decoding step on; right after prefill they hold the prompt.
//! - **`StaticLayer`** (`StaticCache`, `cache_implementation="static"`): `torch.zeros` of
//!   `max_cache_len` tokens at the first update, whatever has been generated, plus its int64
//!   `cumulative_length` (8 bytes). `generate` sizes it `max_length − 1`, i.e. prompt plus new
//!   tokens minus one (the last token is never fed back), times
//!   `max(num_beams, num_return_sequences) · batch` sequences.
//! - **`StaticSlidingWindowLayer`**: `min(W, max_cache_len)` tokens, plus `cumulative_length`.
//! - **`QuantizedCache`** (`cache_implementation="quantized"`; `backend` quanto, the default, for
//!   int4/int2, or HQQ for int8/int4): the prompt is quantized at prefill; then new tokens gather
//!   in a full-precision residual until it would reach `residual_length` (`R`, default 128), when
//!   everything is quantized again and the residual emptied. After `k` decoding steps the residual
//!   holds `k mod R` tokens. A quantized tensor stores `bits/8` bytes per element (quanto's
//!   `PackedTensor` and HQQ's bit-packing put two int4 values in a byte; int8 is one byte) and per
//!   group of `q_group_size` elements (default 64) a scale and a shift (quanto's `MaxOptimizer`:
//!   `scale`, `shift = −min`; HQQ: `scale`, `zero`), both in the compute dtype. transformers refuses
//!   a quantized cache for a model with sliding-window layers.
//! - **fp8** (`QuantizedCache(backend="fp8")`, `Fp8QuantizedLayer`): `float8_e4m3fn`, one byte
//!   per element, appended as is, with one float32 scale per tensor (4 bytes for keys, 4 for
//!   values); no residual. Same full-attention-only rule.
//!
//! nanochat's architecture under these classes has sliding layers (`SSSL`), but nanochat's own
//! `Engine` builds none of them: its `KVCache` (`nanochat/engine.py`) preallocates keys and
//! values of *every* layer, sliding ones included, for `prompt + max_tokens` positions (not
//! `− 1`) in `COMPUTE_DTYPE`, plus an int32 position per row: the same `2·kv_heads·head_dim·e`
//! per token and layer, with neither window nor growth. That cache is `nanochat/generate.rs`'s.

use serde::Serialize;

use super::arch::{Architecture, Span};
use super::error::ScenarioError;
use super::num::N;

/// The int64 tensor a layer keeps beside its states (`_sliding_window_tensor` of a dynamic
/// sliding layer, `cumulative_length` of a static layer).
const LAYER_COUNTER_BYTES: u64 = 8;

/// Bytes of one float32 per-tensor fp8 scale.
const FP8_SCALE_BYTES: u64 = 4;

/// Which cache `generate` builds (`cache_implementation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum CacheKind {
    /// `DynamicCache`: grows with the sequence (the default).
    Dynamic,
    /// `StaticCache`: preallocated to the maximum length at the first forward.
    Static,
    /// `QuantizedCache` with an integer backend.
    Quantized {
        /// Bits per element (quanto: 2 or 4; HQQ: 1, 2, 3, 4 or 8).
        bits: u8,
        /// Elements per scale/shift group (`q_group_size`).
        group_size: u64,
        /// Tokens kept in full precision before they are quantized (`residual_length`).
        residual_length: u64,
    },
    /// `QuantizedCache(backend="fp8")`: float8 states with a per-tensor float32 scale.
    Fp8,
}

impl CacheKind {
    /// HF's `QuantizedCache` defaults: 4 bits (quanto), groups of 64, a 128-token residual.
    pub const QUANTIZED_INT4: CacheKind = CacheKind::Quantized {
        bits: 4,
        group_size: 64,
        residual_length: 128,
    };

    /// 2-bit integers (quanto), HF's other defaults.
    pub const QUANTIZED_INT2: CacheKind = CacheKind::Quantized {
        bits: 2,
        group_size: 64,
        residual_length: 128,
    };

    /// 8-bit integers (the HQQ backend; quanto has only 2 and 4 bits), HF's other defaults.
    pub const QUANTIZED_INT8: CacheKind = CacheKind::Quantized {
        bits: 8,
        group_size: 64,
        residual_length: 128,
    };

    /// The name used in messages and the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheKind::Dynamic => "dynamic",
            CacheKind::Static => "static",
            CacheKind::Quantized { .. } => "quantized",
            CacheKind::Fp8 => "fp8",
        }
    }
}

/// A generation's cache: what it is and what it must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheRun {
    /// The cache class.
    pub kind: CacheKind,
    /// Bytes of one compute element (the states' dtype): 2 for bf16/fp16, 4 for float32.
    pub element_bytes: u64,
    /// Sequences in the cache: `batch · max(num_beams, num_return_sequences)` (`generate`'s
    /// `expand_size`); vramdoc computes `num_beams = 1` only (beam search is refused at its key).
    pub sequences: u64,
    /// Tokens of the prompt (`P`).
    pub prompt: u64,
    /// New tokens generated (`N ≥ 1`); the cache ends holding `P + N − 1` tokens.
    pub new_tokens: u64,
}

/// The cache's bytes at the moments that matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CacheBytes {
    /// Right after the prefill forward.
    pub after_prefill: u64,
    /// After the last decoding step (what `generate` returns).
    pub at_end: u64,
    /// The largest it is at any step.
    pub largest: u64,
}

/// How many layers of each span, and the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerSpans {
    /// Full-attention layers.
    pub global: u64,
    /// Sliding-window layers.
    pub local: u64,
    /// The window (`sliding_window`), 0 without sliding layers.
    pub window: u64,
}

/// The layers of `a` by span: layer `i` follows `pattern[i mod len]`.
pub fn layer_spans(a: &Architecture) -> LayerSpans {
    match &a.attention.sliding_window {
        Some(sw) if !sw.pattern.is_empty() => {
            let len = sw.pattern.len() as u64;
            let local_in_pattern = sw.pattern.iter().filter(|s| **s == Span::Local).count() as u64;
            let whole = a.layers / len;
            let rest = (a.layers % len) as usize;
            let local_in_rest = sw.pattern[..rest]
                .iter()
                .filter(|s| **s == Span::Local)
                .count() as u64;
            let local = whole * local_in_pattern + local_in_rest;
            LayerSpans {
                global: a.layers - local,
                local,
                window: sw.window,
            }
        }
        _ => LayerSpans {
            global: a.layers,
            local: 0,
            window: 0,
        },
    }
}

/// `2·b·kv_heads·head_dim`: keys plus values of one token in one layer, in elements.
fn token_elements(a: &Architecture, sequences: u64) -> N {
    N::from(2u64)
        * N::from(sequences)
        * N::from(a.attention.kv_heads)
        * N::from(a.attention.head_dim)
}

/// The cache's bytes for `run` on model `a` (module docs for each kind's rule).
pub fn cache_bytes(a: &Architecture, run: &CacheRun) -> Result<CacheBytes, ScenarioError> {
    if run.prompt == 0 || run.new_tokens == 0 {
        return Err(ScenarioError::general(
            "a generation needs a prompt of at least one token and at least one new token",
        ));
    }
    let spans = layer_spans(a);
    let tok = token_elements(a, run.sequences);
    let e = N::from(run.element_bytes);
    let (p, t) = (
        N::from(run.prompt),
        N::from(run.prompt) + N::from(run.new_tokens - 1),
    );
    let full = |tokens: N| tok * tokens * e;
    let u = |n: N| n.to_u64("the KV cache");
    match run.kind {
        CacheKind::Dynamic => {
            let w = N::from(spans.window);
            let (g, l) = (N::from(spans.global), N::from(spans.local));
            let counters = l * LAYER_COUNTER_BYTES as u128;
            let after_prefill = (g + l) * full(p) + counters;
            let local_end = if run.new_tokens == 1 { p } else { t.min(w) };
            let at_end = g * full(t) + l * full(local_end) + counters;
            Ok(CacheBytes {
                after_prefill: u(after_prefill)?,
                at_end: u(at_end)?,
                largest: u(after_prefill.max(at_end))?,
            })
        }
        CacheKind::Static => {
            let max_len = t;
            let w = N::from(spans.window);
            let layers = N::from(spans.global) * full(max_len)
                + N::from(spans.local) * full(max_len.min(w))
                + N::from(a.layers) * LAYER_COUNTER_BYTES as u128;
            let b = u(layers)?;
            Ok(CacheBytes {
                after_prefill: b,
                at_end: b,
                largest: b,
            })
        }
        CacheKind::Quantized {
            bits,
            group_size,
            residual_length,
        } => {
            full_attention_only(a, spans, run.kind)?;
            if !matches!(bits, 1..=8) || group_size == 0 || residual_length == 0 {
                return Err(ScenarioError::general(
                    "a quantized cache needs 1 to 8 bits, a group size and a residual length of at least 1",
                ));
            }
            let layers = N::from(a.layers);
            let quantized = |tokens: N| {
                let elements = tok * tokens;
                // bits/8 per element (rounded up to whole bytes), a scale and a shift per group.
                let packed = (elements * u128::from(bits) + N::from(7u64)) / 8;
                let groups = (elements + N::from(group_size - 1)) / u128::from(group_size);
                packed + groups * 2 * e
            };
            let at_step = |k: u64| {
                let residual = N::from(k % residual_length);
                let seen = p + N::from(k);
                layers * (quantized(seen - residual) + full(residual))
            };
            let steps = run.new_tokens - 1;
            let mut largest = at_step(steps).max(at_step(0));
            // The residual is fullest just before the last flush.
            if steps >= residual_length {
                let before_flush = steps - steps % residual_length - 1;
                largest = largest.max(at_step(before_flush));
            }
            Ok(CacheBytes {
                after_prefill: u(at_step(0))?,
                at_end: u(at_step(steps))?,
                largest: u(largest)?,
            })
        }
        CacheKind::Fp8 => {
            full_attention_only(a, spans, run.kind)?;
            let layers = N::from(a.layers);
            let scales = layers * (2 * FP8_SCALE_BYTES) as u128;
            let after_prefill = layers * tok * p + scales;
            let at_end = layers * tok * t + scales;
            Ok(CacheBytes {
                after_prefill: u(after_prefill)?,
                at_end: u(at_end)?,
                largest: u(at_end)?,
            })
        }
    }
}

/// transformers' `QuantizedCache` refuses models with other than full-attention layers.
fn full_attention_only(
    a: &Architecture,
    spans: LayerSpans,
    kind: CacheKind,
) -> Result<(), ScenarioError> {
    if spans.local == 0 {
        return Ok(());
    }
    Err(ScenarioError::key(
        "kv_cache",
        format!(
            "{} has {} sliding-window layers, and transformers {}'s QuantizedCache (the {} cache) \
             supports only models whose every layer is full attention; use the dynamic or static cache",
            a.name,
            spans.local,
            super::arch::HF_TRANSFORMERS,
            kind.as_str()
        ),
    ))
}

#[cfg(test)]
#[path = "kv_cache_tests.rs"]
mod tests;
