//! The decoding steps of Hugging Face `generate` with optimum-quanto's quantized KV cache
//! (`cache_implementation="quantized"`, `QuantoQuantizedLayer`, int4 or int2; transformers 5.24's
//! `cache_utils.py`, optimum-quanto 0.2.7), beside what `hf_generate` computes for the other
//! caches. Source: `tools/hf_replay/replay_generate.py`'s quanto runs (`--explain` lists the
//! storages at each peak), read against `QuantizedLayer.update`.
//!
//! Per layer and step `update` dequantizes the `Q` quantized tokens of keys and of values (two
//! `Q`-token tensors in the compute dtype), concatenates them with the full-precision residual and
//! the new token into the keys and values it returns (two `T`-token tensors), and keeps the new
//! token in the residual. When the residual would reach `residual_length` it quantizes the
//! returned tensors instead (a *flush*): quanto's `quantize_affine` writes one byte per element,
//! `PackedTensor.pack` a packed copy (`bits/8` bytes per element) with one shifted temporary of
//! the same size, beside the new scale and shift (two compute-dtype values per group); the old
//! quantized states and every layer's residual are dropped only after both are quantized.
//!
//! Moments, with `kv = sequences·kv_heads·head_dim` elements per token of one layer's keys:
//! - a plain step `k` (the last layer): the cache after step `k`, `2·Q + 2·T` tokens of dequantized
//!   and returned states, and the step's own activations and the previous float32 logits;
//! - a flush step (the first layer, quantizing its values, every layer's residual still full):
//!   the cache before the step with the first layer's keys already quantized anew (`T` tokens in
//!   place of `Q`), the same `2·Q + 2·T` tokens, and the values' `kv·T` one-byte elements, their
//!   packed copy and its temporary and their scale and shift;
//! - the logits moment, as for the other caches, with the cache at its largest.
//!
//! The largest plain step is the last (if it is not a flush) and the largest flush the last one.
//!
//! **HQQ's int8** (`HQQQuantizedLayer`, hqq 0.2.8): the same moments, one byte per element and a
//! scale and zero per group; a flush quantizes with HQQ's optimizer instead ([`hqq_quantize`]),
//! and so does the prefill, once per layer's keys and values ([`hqq_prefill`]). Source:
//! `replay_generate.py`'s `hqq-int8` runs.
//!
//! **transformers' fp8 cache** (`cache_config={"backend": "fp8"}`, `Fp8QuantizedLayer`): each
//! step appends the new token's float8 states (`torch.cat`: the layer's old keys and values stay
//! alive, as locals of `update`, beside the new ones) and dequantizes the whole layer back
//! (`(q.float() * scale).to(dtype)`): the returned keys in the compute dtype, then the values'
//! float32 copy and its scaled product, `T·kv·(e + 8)` bytes with the layer's old `2·(T−1)·kv`
//! float8 bytes ([`fp8_moment`]). The prefill quantizes the prompt's states once (their float32
//! copies are smaller than the prefill's MLP moment in every replayed run).

use super::arch::Architecture;
use super::error::ScenarioError;
use super::kv_cache::{cache_bytes, CacheKind, CacheRun};
use super::num::N;

/// The quantized cache's settings: optimum-quanto's int4/int2, or HQQ's int8.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quanto {
    /// 2 or 4 (quanto), 8 (HQQ).
    pub bits: u8,
    /// Elements per scale/shift group (`q_group_size`).
    pub group_size: u64,
    /// Full-precision tokens before a flush (`residual_length`).
    pub residual_length: u64,
}

impl Quanto {
    /// The settings of `kind`, if it is quanto's cache (int4 or int2) or HQQ's int8.
    pub(crate) fn of(kind: CacheKind) -> Option<Quanto> {
        match kind {
            CacheKind::Quantized {
                bits: bits @ (2 | 4 | 8),
                group_size,
                residual_length,
            } => Some(Quanto {
                bits,
                group_size,
                residual_length,
            }),
            _ => None,
        }
    }
}

/// The largest moment of the decoding steps' cache handling, in bytes, beside `step` (the step's
/// own activations and the previous float32 logits) and `ids` (the token ids alive).
pub(crate) fn cache_moments(
    a: &Architecture,
    run: &CacheRun,
    q: Quanto,
    step: N,
) -> Result<N, ScenarioError> {
    let steps = run.new_tokens.saturating_sub(1);
    if steps == 0 {
        return Ok(N::ZERO);
    }
    let e = u128::from(run.element_bytes);
    let kv = N::from(run.sequences) * N::from(a.attention.kv_heads) * N::from(a.attention.head_dim);
    let p = N::from(run.prompt);
    let r = q.residual_length;
    // The cache after `k` decoding steps (`k = 0`: after the prefill).
    let after = |k: u64| -> Result<N, ScenarioError> {
        let at = CacheRun {
            new_tokens: k + 1,
            ..*run
        };
        Ok(N::from(cache_bytes(a, &at)?.at_end))
    };
    // Tokens quantized before step `k` and tokens returned by it.
    let tokens = |k: u64| {
        let quantized = p + N::from(k - 1) - N::from((k - 1) % r);
        (quantized, p + N::from(k))
    };
    let states = |k: u64| {
        let (quantized, total) = tokens(k);
        kv * (quantized * 2 + total * 2) * e
    };
    let mut largest = N::ZERO;
    if steps % r != 0 {
        largest = largest.max(after(steps)? + states(steps) + step);
    }
    // Packed bytes, and scale-and-shift bytes, of `elements` quantized elements.
    let packed = |elements: N| (elements * u128::from(q.bits) + N::from(7u64)) / 8;
    let scales =
        |elements: N| (elements + N::from(q.group_size - 1)) / u128::from(q.group_size) * (2 * e);
    if steps >= r {
        let k = steps - steps % r;
        let (quantized, total) = tokens(k);
        let (old, new) = (kv * quantized, kv * total);
        // The first layer's keys are already the new ones: the old are gone.
        let keys_grown = packed(new) + scales(new) - packed(old) - scales(old);
        let values = if q.bits == 8 {
            hqq_quantize(new, e, q.group_size)
        } else {
            new + packed(new) * 2 + scales(new)
        };
        largest = largest.max(after(k - 1)? + keys_grown + states(k) + values + step);
    }
    Ok(largest)
}

/// What HQQ 0.2.8's `Quantizer.quantize` (`hqq/core/quantize.py` 75-177, with
/// `optimize_weights_proximal_legacy`, `hqq/core/optimize.py` 209-256, in float16 on a GPU)
/// holds at once while it quantizes `n` elements in `e` bytes to 8 bits: their float32 copy
/// (`tensor.float()`, none for float32), the float16 copy it optimizes, two iterations' rounded and
/// reconstructed tensors (the previous ones stay bound while the next are made) and the
/// shrinkage's four temporaries (`W_f − W_r`, its `abs`, `pow`, the scaled `pow`): `18·n` float16
/// bytes; and per group of `group` elements five float32 statistics (min, max, their difference,
/// the clamped scale, the zero) and two float16 ones.
pub(crate) fn hqq_quantize(n: N, e: u128, group: u64) -> N {
    let float = if e == 4 { N::ZERO } else { n * 4 };
    let groups = (n + N::from(group - 1)) / u128::from(group);
    float + n * 18 + groups * (5 * 4 + 2 * 2)
}

/// HQQ's prefill moment beside the ids: the last layer quantizing its prompt values, with every
/// earlier layer's keys and values and its own keys already quantized (`2·L − 1` tensors), the
/// hidden-wide tensors alive in the attention (the embedding, the residual, the RMSNorm output and
/// the rotated queries, `3h + heads·head_dim`, and the rotated keys, the values and their
/// contiguous copy, `3·kv_width`), RoPE's cos and sin, and [`hqq_quantize`] of the values.
pub(crate) fn hqq_prefill(a: &Architecture, run: &CacheRun, q: Quanto) -> N {
    let e = u128::from(run.element_bytes);
    let at = &a.attention;
    let rows = N::from(run.sequences) * N::from(run.prompt);
    let n = rows * N::from(at.kv_width());
    let quantized = n + (n + N::from(q.group_size - 1)) / u128::from(q.group_size) * (2 * e);
    let widths =
        N::from(a.hidden) * 3 + N::from(at.heads * at.head_dim) + N::from(at.kv_width()) * 3;
    quantized * (2 * u128::from(a.layers) - 1)
        + rows * widths * e
        + rows * N::from(at.head_dim) * (2 * e)
        + hqq_quantize(n, e, q.group_size)
}

/// The last decoding step's largest fp8-cache moment: the cache at its end (`at_end`), the last
/// layer's old float8 keys and values (`2·(T−1)·kv` bytes), its returned keys (`T·kv·e`) and its
/// values' float32 copy and scaled product (`2·T·kv·4`), beside `step` (the step's activations
/// and the previous float32 logits). Zero without a decoding step.
pub(crate) fn fp8_moment(a: &Architecture, run: &CacheRun, at_end: N, step: N) -> N {
    if run.new_tokens < 2 {
        return N::ZERO;
    }
    let e = u128::from(run.element_bytes);
    let kv = N::from(run.sequences) * N::from(a.attention.kv_heads) * N::from(a.attention.head_dim);
    let t = N::from(run.prompt) + N::from(run.new_tokens - 1);
    let old = kv * (t - N::from(1u64)) * 2;
    at_end + old + kv * t * (e + 8) + step
}

/// Why a quantized cache is refused: quanto's, HQQ's and the fp8 cache are replayed on
/// Llama-family models only.
pub(crate) fn refusal(cache: CacheKind) -> String {
    format!(
        "the {} cache's bytes are computed (estimate::kv_cache), but its dequantizing decoding \
         steps are replayed on Llama-family models only (optimum-quanto's int4 and int2, HQQ's \
         int8, transformers' fp8): use the dynamic or static cache",
        name(cache)
    )
}

/// A cache's name in messages: `int8 quantized`, `fp8`, `dynamic`.
fn name(cache: CacheKind) -> String {
    match cache {
        CacheKind::Quantized { bits, .. } => format!("int{bits} quantized"),
        other => other.as_str().to_owned(),
    }
}
