//! A generate guide's data: a scenario with `phase: generate` and a catalog `model:` is Hugging
//! Face `generate` on that model, as `vramdoc estimate --model M --phase generate` computes it,
//! with both solvers' answers on its card (`solve.max_context`, `solve.max_batch`). Each variant
//! may change the run, the card or the model (a guide compares models on cards).
//!
//! `generate`'s own settings (`prompt_tokens`, `max_new_tokens`, `num_return_sequences`,
//! `num_beams`, `kv_cache`) are read here; the other keys go through the scenario's key table. Where the front
//! matter sets none, the CLI's defaults hold: one prompt of 512 tokens, 500 new tokens, weights
//! in bfloat16, a dynamic cache, eager execution.

use yaml_serde::Value as Yaml;

use super::data::{literal, DataError};
use crate::content::Variant;
use crate::estimate::kv_cache::{cache_bytes, CacheKind, CacheRun};
use crate::estimate::{
    self, Architecture, Dtype, GenerateEstimate, Generation, GpuCatalog, Literal, Phase, Scenario,
    ScenarioError, Solution,
};
use crate::scenario::{model, KEYS};

/// `generate`'s settings that are not scenario keys.
const GENERATE_KEYS: [&str; 5] = [
    "prompt_tokens",
    "max_new_tokens",
    "num_return_sequences",
    "num_beams",
    "kv_cache",
];

/// One `generate` call of a guide: its estimate and, when it names a card, what fits there.
#[derive(Debug, Clone)]
pub(crate) struct GenerateRun {
    /// The scenario (card, dtype, batch, other processes).
    pub(crate) scenario: Scenario,
    /// The estimate (its architecture and generation included).
    pub(crate) estimate: GenerateEstimate,
    /// The longest context that fits (`None`: no card named).
    pub(crate) max_context: Option<Solution>,
    /// The largest batch that fits (`None`: no card named).
    pub(crate) max_batch: Option<Solution>,
    /// One token's keys and values in every layer, in this run's cache (`kv_cache::cache_bytes`
    /// of one sequence holding one token).
    pub(crate) kv_per_token: u64,
    /// The same call's cache at its largest as transformers' `QuantizedCache` with its defaults
    /// (4-bit quanto, groups of 64, a 128-token residual) would hold it, whatever cache the run
    /// uses: the cache alone (`None` where the model has no such cache).
    pub(crate) kv_cache_quantized: Option<u64>,
}

impl GenerateRun {
    /// The model generated with.
    pub(crate) fn model(&self) -> &Architecture {
        &self.estimate.architecture
    }

    /// The `generate` call.
    pub(crate) fn generation(&self) -> &Generation {
        &self.estimate.generation
    }
}

/// A generate guide's runs: the scenario's and each variant's, by id.
#[derive(Debug, Clone)]
pub(crate) struct GenerateData {
    /// The scenario's run.
    pub(crate) run: GenerateRun,
    /// The variants' runs, in front-matter order.
    pub(crate) variants: Vec<(String, GenerateRun)>,
}

impl GenerateData {
    /// The run of variant `id`.
    pub(crate) fn variant(&self, id: &str) -> Result<&GenerateRun, String> {
        self.variants
            .iter()
            .find(|(v, _)| v == id)
            .map(|(_, r)| r)
            .ok_or_else(|| {
                let known: Vec<&str> = self.variants.iter().map(|(v, _)| v.as_str()).collect();
                format!("no variant with id `{id}` (known: {})", known.join(", "))
            })
    }
}

/// The settings of one run as written: scenario keys and `generate`'s own, each with its value.
type Settings = Vec<(String, Literal)>;

/// Whether the front matter's scenario describes Hugging Face `generate` on a catalog model.
pub(crate) fn is_generate(scenario: &Yaml) -> bool {
    let phase = scenario.get("phase").and_then(Yaml::as_str);
    phase.is_some_and(|p| p.trim().eq_ignore_ascii_case("generate"))
}

/// Computes a generate guide's data from its `scenario:` and `variants:`.
pub(crate) fn generate_data(
    scenario: &Yaml,
    variants: &[Variant],
    catalog: &GpuCatalog,
) -> Result<GenerateData, DataError> {
    let at_key = |key: &str, message: String| DataError {
        key: Some(format!("scenario.{key}")),
        message,
        line: None,
    };
    let Yaml::Mapping(map) = scenario else {
        return Err(at_key(
            "phase",
            "a scenario must be a mapping of keys".into(),
        ));
    };
    let mut base: Settings = Vec::new();
    for (k, v) in map {
        let key = k.as_str().unwrap_or_default().to_owned();
        let value = literal(v)
            .ok_or_else(|| at_key(&key, format!("`{key}` must be a number, string or boolean")))?;
        base.push((key, value));
    }
    let run = run_of(&base, catalog).map_err(|(key, message)| at_key(&key, message))?;
    let mut runs = Vec::new();
    for v in variants {
        let mut settings = base.clone();
        for s in &v.set {
            let value = literal(&s.value).ok_or_else(|| DataError {
                key: Some(format!("variants.{}.set.{}", v.id, s.key)),
                message: format!("`{}` in variant `{}` must be a scalar", s.key, v.id),
                line: Some(s.line),
            })?;
            settings.retain(|(k, _)| *k != s.key);
            settings.push((s.key.clone(), value));
        }
        let r = run_of(&settings, catalog).map_err(|(key, message)| {
            let line = v
                .set
                .iter()
                .find(|s| s.key == key)
                .map_or(v.line, |s| s.line);
            DataError {
                key: Some(format!("variants.{}.set.{key}", v.id)),
                message: format!("variant `{}`: {message}", v.id),
                line: Some(line),
            }
        })?;
        runs.push((v.id.clone(), r));
    }
    Ok(GenerateData {
        run,
        variants: runs,
    })
}

/// One run from its settings: the model settled, `generate`'s defaults where none is given, the
/// estimate and the solvers. Errors name the key.
fn run_of(settings: &Settings, catalog: &GpuCatalog) -> Result<GenerateRun, (String, String)> {
    let get = |key: &str| settings.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let Some(Literal::Str(id)) = get("model") else {
        return Err((
            "phase".into(),
            "phase = generate in a guide is Hugging Face generate on a catalog model: name it \
             with `model:` (nanoGPT's sampling with sample.py is estimated on the command line: \
             vramdoc estimate sample.py)"
                .into(),
        ));
    };
    let m = model::from_catalog(id).map_err(|e| ("model".to_owned(), e))?;
    let family = m.architecture.family;
    let mut s = Scenario::default();
    // The CLI's generate defaults: one prompt, eager execution; the weights' dtype below.
    for (key, value) in [
        ("batch_size", Literal::Int(1)),
        ("compile", Literal::Bool(false)),
    ] {
        s.set(key, value).map_err(|e| (key.to_owned(), e.message))?;
    }
    for (key, value) in settings {
        if GENERATE_KEYS.contains(&key.as_str()) {
            continue;
        }
        let row = KEYS.iter().find(|k| k.name == key);
        if row.is_some_and(|k| !k.phases.contains(&Phase::Generate) || !k.families.contains(family))
        {
            return Err((
                key.clone(),
                format!("`{key}` does not apply to Hugging Face generate on {id}: remove it"),
            ));
        }
        s.set(key, value.clone())
            .map_err(|e: ScenarioError| (key.clone(), e.message))?;
    }
    // The weights' dtype as the CLI resolves it: `weights_dtype`, `dtype`, or the model's own.
    let given = |key: &str| settings.iter().any(|(k, _)| k == key);
    let resolved =
        model::weights::resolve(&m, &s, &given).map_err(|(key, msg)| (key.to_owned(), msg))?;
    if let Some((dtype, _)) = resolved {
        model::weights::apply(&mut s, dtype, &given);
    }
    let count = |key: &str, default: u64| -> Result<u64, (String, String)> {
        match get(key) {
            None => Ok(default),
            Some(Literal::Int(n)) if *n >= 1 => Ok(*n as u64),
            Some(other) => Err((
                key.to_owned(),
                format!("`{key}` = {other:?}: generate needs a whole number of at least 1"),
            )),
        }
    };
    let cache = match get("kv_cache") {
        None => CacheKind::Dynamic,
        Some(Literal::Str(text)) => model::cache_kind(text).ok_or_else(|| {
            (
                "kv_cache".to_owned(),
                format!(
                    "`kv_cache` = {text}: not a cache transformers builds ({})",
                    model::CACHE_KINDS_HELP
                ),
            )
        })?,
        Some(other) => {
            return Err((
                "kv_cache".into(),
                format!("`kv_cache` = {other:?}: {}", model::CACHE_KINDS_HELP),
            ))
        }
    };
    let num_return_sequences = count("num_return_sequences", 1)?;
    let num_beams = count("num_beams", 1)?;
    let g = Generation {
        prompt_tokens: count("prompt_tokens", 512)?,
        max_new_tokens: count("max_new_tokens", 500)?,
        batch_size: s.batch_size,
        num_return_sequences,
        do_sample: num_return_sequences > 1 && num_beams == 1,
        num_beams,
        cache,
    };
    let err = |e: ScenarioError| (e.key.unwrap_or_else(|| "model".into()), e.message);
    let a = &m.architecture;
    let estimate = estimate::estimate_generate(a, &s, &g, catalog).map_err(err)?;
    let (max_context, max_batch) = if s.gpu.is_some() {
        (
            Some(estimate::generate_max_context(a, &s, &g, catalog).map_err(err)?),
            Some(estimate::generate_max_batch(a, &s, &g, catalog).map_err(err)?),
        )
    } else {
        (None, None)
    };
    let one = CacheRun {
        kind: g.cache,
        element_bytes: if s.dtype == Dtype::Float32 { 4 } else { 2 },
        sequences: 1,
        prompt: 1,
        new_tokens: 1,
    };
    let kv_per_token = cache_bytes(a, &one).map_err(err)?.at_end;
    let quantized = CacheRun {
        kind: CacheKind::QUANTIZED_INT4,
        sequences: g.sequences().to_u64("the sequences").map_err(err)?,
        prompt: g.prompt_tokens,
        new_tokens: g.max_new_tokens,
        ..one
    };
    let kv_cache_quantized = cache_bytes(a, &quantized).ok().map(|c| c.largest);
    Ok(GenerateRun {
        scenario: s,
        estimate,
        max_context,
        max_batch,
        kv_per_token,
        kv_cache_quantized,
    })
}
