//! What to change for Hugging Face `generate` (issue 22, item 5): the options of a generate
//! estimate, each estimated in full by the generate model ([`estimate_generate`]) and never
//! borrowed from another estimate, ranked least change to the output first:
//!
//! 1. the other cache class (`cache_implementation`): a `StaticCache` in place of the
//!    `DynamicCache` or the reverse; the same tokens come out, only the memory differs;
//! 2. 16-bit weights in place of float32 (`dtype=torch.bfloat16`, or float16 on a card without
//!    bf16, where bfloat16 weights also become float16: same bytes, a dtype the card runs): the
//!    numerics change slightly; then the Linears in bitsandbytes' LLM.int8() (`load_in_8bit`:
//!    int8 weights, outlier input columns kept in 16 bits, close to the 16-bit outputs); then
//!    HQQ's int8 KV cache (`kv_cache=quantized_int8`: a scale and zero per 64 elements, the last
//!    128 tokens in full precision); then transformers' float8 KV cache (`kv_cache=fp8`:
//!    `QuantizedCache(backend="fp8")`, a per-tensor scale, no residual); then optimum-quanto's
//!    int4 KV cache (`kv_cache=quantized`, the last 128 tokens kept in full
//!    precision), where the generate model computes it (the Llama family without sliding
//!    windows): the keys and values are approximated; then the Linears in 4-bit NF4
//!    (`load_in_4bit`, double quantization, computing in the model's 16-bit dtype): every
//!    weight approximated;
//! 3. fewer sequences at once: half the `num_return_sequences`, half the prompts, then the
//!    largest batch that fits (the `max_batch` solver): the same outputs over more calls;
//!    With beam search, half the beams (no fewer than the returned sequences), then none
//!    (`num_beams=1`: greedy, or sampling the returned sequences): the outputs change
//!    (`beam_generate::fewer_beams`);
//! 4. a shorter context: half the `max_new_tokens`, then the prompt cut to the longest context
//!    that fits (the `max_context` solver): the outputs themselves change;
//! 5. when no option above fits the card, the least change combined that does
//!    ([`GenerateWhatIfKind::Combination`]), tried in this order: 8-bit weights with the int4
//!    cache, 4-bit weights with the int4 cache, then 4-bit weights (with the int4 cache where it
//!    computes) and the prompt cut to the longest context that fits them.
//!
//! A candidate the generate model refuses (a quantized cache on GPT-2 or beside sliding-window
//! layers, bitsandbytes weights on a family whose quantized generate is not replayed) is left
//! out: an option without a computed figure would be a guess.

use serde::Serialize;

use super::error::ScenarioError;
use super::gpu::GpuCatalog;
use super::hf_generate::{estimate_generate, GenerateEstimate, Generation};
use super::kv_cache::CacheKind;
use super::sample::{estimate_sampling, Sampling};
use super::scenario::{Dtype, QuantType, Scenario};
use super::solve::{generate_max_batch, generate_max_context};
use super::whatif::Change;
use super::{Architecture, Verdict};

/// The kind of change a generate option makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GenerateWhatIfKind {
    /// `cache_implementation="static"` in place of the dynamic cache.
    StaticCache,
    /// The default `DynamicCache` in place of a static one.
    DynamicCache,
    /// 16-bit weights in place of float32.
    Dtype,
    /// The Linears in bitsandbytes' LLM.int8() (`load_in_8bit`).
    Int8Weights,
    /// HQQ's int8 KV cache (`cache_config={"backend": "hqq", "nbits": 8}`) in place of a dynamic
    /// or static one.
    Int8Cache,
    /// transformers' float8 KV cache (`cache_config={"backend": "fp8"}`) in place of a dynamic
    /// or static one.
    Fp8Cache,
    /// optimum-quanto's int4 KV cache (`cache_implementation="quantized"`) in place of a dynamic
    /// or static one.
    QuantizedCache,
    /// The Linears in bitsandbytes' 4-bit NF4 (`load_in_4bit`, double quantization).
    FourBitWeights,
    /// sample.py's 16-bit autocast in place of float32 (the weights stay float32).
    Autocast,
    /// Half the `num_return_sequences`.
    FewerSequences,
    /// Half the prompts of the batch.
    SmallerBatch,
    /// Half the beams (`num_beams`).
    FewerBeams,
    /// No beam search (`num_beams=1`).
    NoBeams,
    /// The largest batch of prompts that fits the card (`--solve max_batch`).
    MaxBatch,
    /// Half the `max_new_tokens`.
    FewerNewTokens,
    /// The prompt cut to the longest context that fits the card (`--solve max_context`).
    MaxContext,
    /// Several of the changes above together: the least that fits when none alone does.
    Combination,
}

impl GenerateWhatIfKind {
    /// Every kind, in ranking order (for checks that each has its messages).
    pub const ALL: [GenerateWhatIfKind; 17] = [
        GenerateWhatIfKind::StaticCache,
        GenerateWhatIfKind::DynamicCache,
        GenerateWhatIfKind::Dtype,
        GenerateWhatIfKind::Int8Weights,
        GenerateWhatIfKind::Int8Cache,
        GenerateWhatIfKind::Fp8Cache,
        GenerateWhatIfKind::QuantizedCache,
        GenerateWhatIfKind::FourBitWeights,
        GenerateWhatIfKind::Autocast,
        GenerateWhatIfKind::FewerSequences,
        GenerateWhatIfKind::SmallerBatch,
        GenerateWhatIfKind::MaxBatch,
        GenerateWhatIfKind::FewerBeams,
        GenerateWhatIfKind::NoBeams,
        GenerateWhatIfKind::FewerNewTokens,
        GenerateWhatIfKind::MaxContext,
        GenerateWhatIfKind::Combination,
    ];
}

/// One computed generate option (`estimate --phase generate --format json`'s `what_if`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GenerateWhatIf {
    /// What kind of change.
    pub kind: GenerateWhatIfKind,
    /// The keys it changes, as the CLI's `--key=value`.
    pub changes: Vec<Change>,
    /// The changed `generate` call (Hugging Face).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<Generation>,
    /// The changed sampling run (nanoGPT's `sample.py`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Sampling>,
    /// The changed weights' dtype.
    pub dtype: Dtype,
    /// Its KV cache at its largest.
    pub kv_cache: u64,
    /// Its peak (allocated) bytes.
    pub peak: u64,
    /// Its total (nvidia-smi) bytes.
    pub total: u64,
    /// Its total with the overhead at the low end.
    pub total_low: u64,
    /// Its total with the overhead at the high end.
    pub total_high: u64,
    /// Base total minus this option's total (negative: it needs more).
    pub saving_bytes: i64,
    /// Its four-state verdict against the scenario's GPU, if one is named.
    pub verdict: Option<Verdict>,
    /// `verdict == fits`, if a GPU is named.
    pub fits: Option<bool>,
}

/// The options for `generate` of `g` on model `a` with the scenario `s`, in ranking order. The
/// base must estimate (its error is returned); a candidate the model refuses is skipped.
pub fn what_if_generate(
    a: &Architecture,
    s: &Scenario,
    g: &Generation,
    catalog: &GpuCatalog,
) -> Result<Vec<GenerateWhatIf>, ScenarioError> {
    let base = estimate_generate(a, s, g, catalog)?;
    let mut o = GenerateOptions {
        a,
        s,
        g,
        catalog,
        base_total: base.bytes.total,
        out: Vec::new(),
    };
    o.other_cache();
    o.half_precision();
    o.int8_weights();
    o.quantized_cache();
    o.four_bit_weights();
    o.fewer_sequences()?;
    for (kind, changes, changed) in super::beam_generate::fewer_beams(g) {
        o.push(kind, changes, changed, s.dtype);
    }
    o.shorter_context()?;
    o.combination();
    Ok(o.out)
}

/// The options of one call as they are computed.
struct GenerateOptions<'a> {
    a: &'a Architecture,
    s: &'a Scenario,
    g: &'a Generation,
    catalog: &'a GpuCatalog,
    /// The call's own total, which each saving is measured against.
    base_total: u64,
    out: Vec<GenerateWhatIf>,
}

/// A change of one key.
fn change(key: &str, value: impl ToString) -> Change {
    Change {
        key: key.to_owned(),
        value: value.to_string(),
    }
}

impl GenerateOptions<'_> {
    /// Estimates the call `g` with weights in `dtype` and appends it as an option of `kind`,
    /// unless the generate model refuses it.
    fn push(
        &mut self,
        kind: GenerateWhatIfKind,
        changes: Vec<Change>,
        g: Generation,
        dtype: Dtype,
    ) {
        let s = Scenario {
            dtype,
            ..self.s.clone()
        };
        self.push_scenario(kind, changes, g, &s);
    }

    /// Estimates the call `g` under scenario `s` and appends it as an option of `kind`, unless
    /// the generate model refuses it.
    fn push_scenario(
        &mut self,
        kind: GenerateWhatIfKind,
        changes: Vec<Change>,
        g: Generation,
        s: &Scenario,
    ) {
        let Ok(e) = estimate_generate(self.a, s, &g, self.catalog) else {
            return;
        };
        self.out.push(option(kind, changes, &e, self.base_total));
    }

    /// LLM.int8() Linears for 16-bit (or float32) ones.
    fn int8_weights(&mut self) {
        if self.s.load_in_8bit || self.s.load_in_4bit {
            return;
        }
        let s = Scenario {
            load_in_8bit: true,
            ..self.s.clone()
        };
        let changes = vec![change("load_in_8bit", true)];
        self.push_scenario(GenerateWhatIfKind::Int8Weights, changes, *self.g, &s);
    }

    /// 4-bit NF4 Linears with double quantization, computing in the model's dtype (no cast
    /// around each Linear), for any other weights.
    fn four_bit_weights(&mut self) {
        if self.s.load_in_4bit {
            return;
        }
        let (s, changes) = (nf4(self.s), nf4_changes(self.s));
        self.push_scenario(GenerateWhatIfKind::FourBitWeights, changes, *self.g, &s);
    }

    /// The other of the two replayed cache classes.
    fn other_cache(&mut self) {
        let (kind, cache) = match self.g.cache {
            CacheKind::Dynamic => (GenerateWhatIfKind::StaticCache, CacheKind::Static),
            CacheKind::Static => (GenerateWhatIfKind::DynamicCache, CacheKind::Dynamic),
            _ => return,
        };
        let g = Generation { cache, ..*self.g };
        self.push(
            kind,
            vec![change("kv_cache", cache.as_str())],
            g,
            self.s.dtype,
        );
    }

    /// HQQ's int8 cache, transformers' fp8 cache, then optimum-quanto's int4 cache, for a
    /// dynamic or static one, where the model computes them.
    fn quantized_cache(&mut self) {
        if !matches!(self.g.cache, CacheKind::Dynamic | CacheKind::Static) {
            return;
        }
        for (kind, cache) in [
            (GenerateWhatIfKind::Int8Cache, CacheKind::QUANTIZED_INT8),
            (GenerateWhatIfKind::Fp8Cache, CacheKind::Fp8),
            (
                GenerateWhatIfKind::QuantizedCache,
                CacheKind::QUANTIZED_INT4,
            ),
        ] {
            let g = Generation { cache, ..*self.g };
            let changes = vec![change("kv_cache", kv_cache_value(cache))];
            self.push(kind, changes, g, self.s.dtype);
        }
    }

    /// bfloat16 weights for float32 ones; float16 for either on a card without bf16.
    fn half_precision(&mut self) {
        let Some(dtype) = half_precision(self.s, self.catalog) else {
            return;
        };
        let mut changes = vec![change("dtype", dtype.as_str())];
        // A Hugging Face model's `weights_dtype` names the same dtype (the scenario layer
        // resolved it): changed with it, so the option's flags agree.
        if self.s.weights_dtype != super::WeightsDtype::Auto {
            changes.push(change("weights_dtype", dtype.as_str()));
        }
        self.push(GenerateWhatIfKind::Dtype, changes, *self.g, dtype);
    }

    /// When a card is named and no option fits it: the first combination of quantized weights,
    /// the int4 cache and the longest prompt that fits ([`GenerateWhatIfKind::Combination`]).
    fn combination(&mut self) {
        if self.s.gpu.is_none() || self.out.iter().any(|o| o.fits == Some(true)) {
            return;
        }
        let (g, cache) = (*self.g, CacheKind::QUANTIZED_INT4);
        let eight = Scenario {
            load_in_8bit: true,
            load_in_4bit: false,
            ..self.s.clone()
        };
        let four = nf4(self.s);
        let base = self.s;
        let weights = |s: &Scenario| -> Vec<Change> {
            if s.load_in_8bit {
                return vec![change("load_in_8bit", true)];
            }
            nf4_changes(base)
        };
        let quantized = Generation { cache, ..g };
        let cached = |s: &Scenario| {
            let mut c = weights(s);
            c.push(change("kv_cache", cache.as_str()));
            c
        };
        let mut tries = vec![
            (cached(&eight), quantized, eight.clone()),
            (cached(&four), quantized, four.clone()),
        ];
        // The int4 cache where the model computes it, then the longest prompt that fits.
        let with_cache = estimate_generate(self.a, &four, &quantized, self.catalog).is_ok();
        let (base, mut changes) = if with_cache {
            (quantized, cached(&four))
        } else {
            (g, weights(&four))
        };
        // A model whose 4-bit generate is refused has no such prompt.
        let solved = generate_max_context(self.a, &four, &base, self.catalog).ok();
        if let Some(p) = solved
            .and_then(|s| s.prompt_tokens)
            .filter(|&p| p < g.prompt_tokens)
        {
            changes.push(change("prompt_tokens", p));
            let shorter = Generation {
                prompt_tokens: p,
                ..base
            };
            tries.push((changes, shorter, four));
        }
        for (changes, changed, s) in tries {
            let Ok(e) = estimate_generate(self.a, &s, &changed, self.catalog) else {
                continue;
            };
            if e.fits == Some(true) {
                let o = option(
                    GenerateWhatIfKind::Combination,
                    changes,
                    &e,
                    self.base_total,
                );
                self.out.push(o);
                break;
            }
        }
    }

    /// Half the returned sequences, half the prompts, then the largest batch that fits.
    fn fewer_sequences(&mut self) -> Result<(), ScenarioError> {
        let g = *self.g;
        if g.num_return_sequences > 1 {
            let r = g.num_return_sequences / 2;
            let changed = Generation {
                num_return_sequences: r,
                do_sample: r > 1 || g.do_sample,
                ..g
            };
            let changes = vec![change("num_return_sequences", r)];
            self.push(
                GenerateWhatIfKind::FewerSequences,
                changes,
                changed,
                self.s.dtype,
            );
        }
        let half = g.batch_size / 2;
        if half >= 1 {
            let changed = Generation {
                batch_size: half,
                ..g
            };
            let changes = vec![change("batch_size", half)];
            self.push(
                GenerateWhatIfKind::SmallerBatch,
                changes,
                changed,
                self.s.dtype,
            );
        }
        if self.s.gpu.is_none() {
            return Ok(());
        }
        let solved = generate_max_batch(self.a, self.s, &g, self.catalog)?;
        if let Some(b) = solved.value.filter(|&b| b < g.batch_size && b != half) {
            let changed = Generation { batch_size: b, ..g };
            let changes = vec![change("batch_size", b)];
            self.push(GenerateWhatIfKind::MaxBatch, changes, changed, self.s.dtype);
        }
        Ok(())
    }

    /// Half the new tokens, then the prompt cut to the longest context that fits.
    fn shorter_context(&mut self) -> Result<(), ScenarioError> {
        let g = *self.g;
        if g.max_new_tokens >= 2 {
            let n = g.max_new_tokens / 2;
            let changed = Generation {
                max_new_tokens: n,
                ..g
            };
            let changes = vec![change("max_new_tokens", n)];
            self.push(
                GenerateWhatIfKind::FewerNewTokens,
                changes,
                changed,
                self.s.dtype,
            );
        }
        if self.s.gpu.is_none() {
            return Ok(());
        }
        let solved = generate_max_context(self.a, self.s, &g, self.catalog)?;
        if let Some(p) = solved.prompt_tokens.filter(|&p| p < g.prompt_tokens) {
            let changed = Generation {
                prompt_tokens: p,
                ..g
            };
            let changes = vec![change("prompt_tokens", p)];
            self.push(
                GenerateWhatIfKind::MaxContext,
                changes,
                changed,
                self.s.dtype,
            );
        }
        Ok(())
    }
}

/// The `kv_cache` value that names `cache`: `quantized` (int4), `quantized_int8`, `fp8`, ….
fn kv_cache_value(cache: CacheKind) -> String {
    match cache {
        CacheKind::Quantized { bits, .. } if bits != 4 => format!("quantized_int{bits}"),
        other => other.as_str().to_owned(),
    }
}

/// `s` with its Linears in 4-bit NF4, double-quantized, computing in the model's dtype (no cast
/// around each Linear).
fn nf4(s: &Scenario) -> Scenario {
    Scenario {
        load_in_8bit: false,
        load_in_4bit: true,
        bnb_4bit_quant_type: QuantType::Nf4,
        bnb_4bit_use_double_quant: true,
        bnb_4bit_compute_dtype: s.dtype,
        ..s.clone()
    }
}

/// The keys [`nf4`] changes in `s`.
fn nf4_changes(s: &Scenario) -> Vec<Change> {
    let mut changes = Vec::new();
    if s.load_in_8bit {
        changes.push(change("load_in_8bit", false));
    }
    changes.extend([
        change("load_in_4bit", true),
        change("bnb_4bit_quant_type", QuantType::Nf4.as_str()),
        change("bnb_4bit_use_double_quant", true),
        change("bnb_4bit_compute_dtype", s.dtype.as_str()),
    ]);
    changes
}

/// The option of `kind` from its full estimate `e`.
fn option(
    kind: GenerateWhatIfKind,
    changes: Vec<Change>,
    e: &GenerateEstimate,
    base_total: u64,
) -> GenerateWhatIf {
    let b = &e.bytes;
    GenerateWhatIf {
        kind,
        changes,
        generation: Some(e.generation),
        sampling: None,
        dtype: e.dtype,
        kv_cache: b.kv_cache,
        peak: b.peak,
        total: b.total,
        total_low: b.total_low,
        total_high: b.total_high,
        saving_bytes: saving(base_total, b.total),
        verdict: e.verdict,
        fits: e.fits,
    }
}

/// The 16-bit dtype to offer for `s`: bfloat16 for float32, float16 for either on a card without
/// bf16 (same bytes as bfloat16, but a dtype the card runs); None when there is nothing to offer.
fn half_precision(s: &Scenario, catalog: &GpuCatalog) -> Option<Dtype> {
    let bf16 = s
        .gpu
        .as_deref()
        .and_then(|id| catalog.get(id))
        .is_none_or(|card| card.bf16);
    match s.dtype {
        Dtype::Float32 if bf16 => Some(Dtype::Bfloat16),
        Dtype::Float32 | Dtype::Bfloat16 if !bf16 => Some(Dtype::Float16),
        _ => None,
    }
}

/// The options for nanoGPT's `sample.py` sampling `run` from the model of `s`, each estimated in
/// full by [`estimate_sampling`], ranked as Hugging Face's: 16-bit autocast in place of float32
/// (`dtype`, float16 on a card without bf16), then half the `max_new_tokens`. A smaller
/// `block_size` crop is not offered: sample.py crops to the model's own `block_size`, and a
/// shorter crop is a code change the sampling model does not compute.
pub fn what_if_sampling(
    s: &Scenario,
    run: &Sampling,
    catalog: &GpuCatalog,
) -> Result<Vec<GenerateWhatIf>, ScenarioError> {
    let base = estimate_sampling(s, run, catalog)?.bytes.total;
    let mut candidates = Vec::new();
    if let Some(dtype) = half_precision(s, catalog) {
        let changes = vec![change("dtype", dtype.as_str())];
        let changed = Scenario { dtype, ..s.clone() };
        candidates.push((GenerateWhatIfKind::Autocast, changes, changed, *run));
    }
    if run.max_new_tokens >= 2 {
        let n = run.max_new_tokens / 2;
        let changed = Sampling {
            max_new_tokens: n,
            ..*run
        };
        let changes = vec![change("max_new_tokens", n)];
        candidates.push((
            GenerateWhatIfKind::FewerNewTokens,
            changes,
            s.clone(),
            changed,
        ));
    }
    let mut out = Vec::new();
    for (kind, changes, scenario, sampling) in candidates {
        let Ok(e) = estimate_sampling(&scenario, &sampling, catalog) else {
            continue;
        };
        let b = &e.bytes;
        out.push(GenerateWhatIf {
            kind,
            changes,
            generation: None,
            sampling: Some(sampling),
            dtype: scenario.dtype,
            kv_cache: b.kv_cache,
            peak: b.peak,
            total: b.total,
            total_low: b.total_low,
            total_high: b.total_high,
            saving_bytes: saving(base, b.total),
            verdict: e.verdict,
            fits: e.fits,
        });
    }
    Ok(out)
}

/// `base − total`, clamped to `i64`.
fn saving(base: u64, total: u64) -> i64 {
    let d = i128::from(base) - i128::from(total);
    i64::try_from(d).unwrap_or(if d > 0 { i64::MAX } else { i64::MIN })
}
