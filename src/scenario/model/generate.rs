//! A model's generate phase (`phase = generate` with `model`): Hugging Face `generate`'s
//! settings read from the inputs (`prompt_tokens`, `max_new_tokens`, `num_return_sequences`,
//! `num_beams` (greedy beam search above 1: `estimate/beam_generate.rs`), `kv_cache`, and the
//! scenario's `batch_size` and `dtype`, the weights'), with the defaults
//! said in a note; for nanochat, `Engine.generate`'s (`batch_size` its `num_samples`,
//! `max_new_tokens` its `max_tokens`, `block_size` the checkpoint's `sequence_len`, `dtype` its
//! COMPUTE_DTYPE).

use super::Model;
use crate::diagnostics::Diagnostic;
use crate::estimate::arch::Family;
use crate::estimate::kv_cache::CacheKind;
use crate::estimate::{Generation, Literal, Scenario};
use crate::scenario::pyconfig::Session;

/// The keys the generate phase defaults when no input set them: one prompt, eager execution;
/// for Gemma 2 eager attention, which `from_pretrained` picks (transformers has no SDPA for its
/// softcapping). The weights' dtype (`dtype`) is `weights_dtype`'s ([`super::weights`]): the
/// model's own, as `from_pretrained(dtype="auto")` loads it.
pub(super) fn defaults(
    session: &mut Session<'_>,
    scenario: &mut Scenario,
    model: &Model,
) -> Result<Vec<String>, Diagnostic> {
    let mut defaults = vec![("batch_size", Literal::Int(1), "one prompt (--batch_size)")];
    if let Some(sequence) = model.sequence_len {
        // nanochat: its Engine samples `batch_size` rows (num_samples) of one prompt, in
        // COMPUTE_DTYPE, with the checkpoint's sequence_len sizing the rotary tables.
        defaults[0].2 = "one row (num_samples, --batch_size)";
        defaults.push((
            "dtype",
            Literal::Str("bfloat16".to_owned()),
            "COMPUTE_DTYPE bfloat16 (an sm80+ GPU's; --dtype=float32 before Ampere)",
        ));
        defaults.push((
            "block_size",
            Literal::Int(i64::try_from(sequence).unwrap_or(i64::MAX)),
            "the checkpoint's sequence_len (--block_size), whose rotary tables hold ten times as many positions",
        ));
    }
    if model.architecture.family == Family::Gemma2 {
        defaults.push((
            "flash",
            Literal::Bool(false),
            "eager attention (transformers has no SDPA for Gemma 2's softcapping)",
        ));
    }
    let mut assumed = Vec::new();
    for (key, value, words) in defaults {
        if session.origins.contains_key(key) {
            continue;
        }
        session.set_default(key, &value);
        scenario
            .set(key, value)
            .map_err(|e| Diagnostic::error(e.to_string()))?;
        assumed.push(words);
    }
    for (key, words) in [
        ("prompt_tokens", "a 512-token prompt (--prompt_tokens)"),
        ("max_new_tokens", "500 new tokens (--max_new_tokens)"),
    ] {
        if !session.origins.contains_key(key) {
            assumed.push(words);
        }
    }
    Ok(if assumed.is_empty() {
        Vec::new()
    } else {
        vec![format!(
            "generate: where no input set them, {}",
            assumed.join(", ")
        )]
    })
}

/// What `kv_cache` accepts, for messages.
pub(crate) const CACHE_KINDS_HELP: &str =
    "use dynamic, static, quantized (int4), quantized_int2, quantized_int8 or fp8";

/// The cache a `kv_cache` value names (case and `-`/`_` ignored); `None` when transformers builds
/// no such cache.
pub(crate) fn cache_kind(text: &str) -> Option<CacheKind> {
    Some(
        match text.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "dynamic" => CacheKind::Dynamic,
            "static" => CacheKind::Static,
            "quantized" | "quantized_int4" | "int4" => CacheKind::QUANTIZED_INT4,
            "quantized_int2" | "int2" => CacheKind::QUANTIZED_INT2,
            "quantized_int8" | "int8" => CacheKind::QUANTIZED_INT8,
            "fp8" => CacheKind::Fp8,
            _ => return None,
        },
    )
}

/// The `generate` call the inputs describe; errors at the setting's line.
pub(super) fn generation(
    session: &Session<'_>,
    scenario: &Scenario,
) -> Result<Generation, Diagnostic> {
    let at = |key: &str, msg: String| match session.origins.get(key) {
        Some(o) => o.error(&msg),
        None => Diagnostic::error(msg),
    };
    let count = |key: &str| -> Result<u64, Diagnostic> {
        match session.literal(key) {
            Some(Ok(Literal::Int(n))) if n >= 1 => Ok(n as u64),
            Some(Ok(other)) => Err(at(
                key,
                format!("`{key}` = {other:?}: generate needs a whole number of at least 1"),
            )),
            Some(Err(msg)) => Err(at(key, format!("`{key}` {msg}"))),
            None => Err(at(key, format!("`{key}` is not set"))),
        }
    };
    let cache = match session.literal("kv_cache") {
        Some(Ok(Literal::Str(s))) => cache_kind(&s).ok_or_else(|| {
            at(
                "kv_cache",
                format!("`kv_cache` = {s}: not a cache transformers builds"),
            )
            .with_help(CACHE_KINDS_HELP)
        })?,
        _ => CacheKind::Dynamic,
    };
    let num_return_sequences = count("num_return_sequences")?;
    let num_beams = count("num_beams")?;
    Ok(Generation {
        prompt_tokens: count("prompt_tokens")?,
        max_new_tokens: count("max_new_tokens")?,
        batch_size: scenario.batch_size,
        num_return_sequences,
        // More sequences than beams sample; with beams they are the best beams (greedy).
        do_sample: num_return_sequences > 1 && num_beams == 1,
        num_beams,
        cache,
    })
}
