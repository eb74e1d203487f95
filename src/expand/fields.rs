//! What a guide's `{{ }}` paths read: each dotted path resolved, when its expression is parsed,
//! to one of the estimator's typed fields ([`Field`]: of an `Estimate`, its [`Params`] and
//! [`Bytes`], the scenario's key table, the GPU, a variant's estimate, a catalog card), which
//! evaluation reads into a [`Figure`]. No JSON in between: the paths are the names of the
//! `vramdoc estimate --format json` fields, and a test walks that JSON to keep the two in step.

use std::borrow::Cow;

use super::data::{GuideData, GuideRun};
use super::generate_data::GenerateRun;
use crate::estimate::{Architecture, Bytes, GenerateBytes, GpuCatalog, Params, Solution, Verdict};
use crate::scenario::keys::{self, KeyValue};

/// One value a path reads, as the formatter tells them apart.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Figure<'a> {
    /// A whole number ≥ 0: bytes, a parameter count, a batch, a capacity.
    Whole(u64),
    /// A whole number that may be negative (`headroom_bytes`).
    Signed(i64),
    /// A number with a fraction (`scenario.dropout`).
    Float(f64),
    /// True or false (`fits`, `scenario.bias`, `gpu.bf16`).
    Flag(bool),
    /// A name (`gpu.name`, `scenario.dtype`, `peak_phase`).
    Text(Cow<'a, str>),
    /// The four-state verdict against the GPU.
    Verdict(Verdict),
    /// A field without a value for this scenario (`fits` or `gpu.name` when no GPU is named).
    Missing,
    /// A group of fields (`bytes`, `scenario`, `gpu`, `catalog.<id>`), not one value.
    Group,
}

impl Figure<'_> {
    /// The value as a whole number ≥ 0, if it is one.
    pub(crate) fn as_u64(&self) -> Option<u64> {
        match self {
            Figure::Whole(n) => Some(*n),
            Figure::Signed(i) => u64::try_from(*i).ok(),
            _ => None,
        }
    }

    /// The value as a signed whole number, if it is one that fits.
    pub(crate) fn as_i64(&self) -> Option<i64> {
        match self {
            Figure::Whole(n) => i64::try_from(*n).ok(),
            Figure::Signed(i) => Some(*i),
            _ => None,
        }
    }

    /// The value as a number, if it is one.
    pub(crate) fn as_f64(&self) -> Option<f64> {
        match self {
            Figure::Whole(n) => Some(*n as f64),
            Figure::Signed(i) => Some(*i as f64),
            Figure::Float(x) => Some(*x),
            _ => None,
        }
    }
}

impl<'a> From<KeyValue<'a>> for Figure<'a> {
    fn from(v: KeyValue<'a>) -> Self {
        match v {
            KeyValue::Whole(n) => Figure::Whole(n),
            KeyValue::Flag(b) => Figure::Flag(b),
            KeyValue::Float(x) => Figure::Float(x),
            KeyValue::Text(t) => Figure::Text(t),
            KeyValue::Unset => Figure::Missing,
        }
    }
}

/// A named field of `params.…`.
pub(crate) type ParamsField = (&'static str, fn(&Params) -> u64);

/// A named field of `bytes.…` (`None`: not in this estimate).
pub(crate) type BytesField = (&'static str, fn(&Bytes) -> Option<u64>);

/// The fields of `params.…`, by name.
pub(crate) const PARAMS: &[ParamsField] = &[
    ("total", |p| p.total),
    ("non_embedding", |p| p.non_embedding),
    ("embedding", |p| p.embedding),
    ("trainable", |p| p.trainable),
    ("lora", |p| p.lora),
    ("decay", |p| p.decay),
    ("no_decay", |p| p.no_decay),
    ("decay_tensors", |p| p.decay_tensors),
    ("no_decay_tensors", |p| p.no_decay_tensors),
    ("linear", |p| p.linear),
];

/// The fields of `bytes.…`, by name (`None`: the field is not in this estimate's JSON either).
pub(crate) const BYTES: &[BytesField] = &[
    ("weights", |b| Some(b.weights)),
    ("gradients", |b| Some(b.gradients)),
    ("optimizer", |b| Some(b.optimizer)),
    ("autocast_weights", |b| Some(b.autocast_weights)),
    ("activations", |b| Some(b.activations)),
    ("logits", |b| Some(b.logits)),
    ("train_peak", |b| Some(b.train_peak)),
    ("eval_peak", |b| Some(b.eval_peak)),
    ("eval_first_peak", |b| Some(b.eval_first_peak)),
    ("peak", |b| Some(b.peak)),
    ("resume_load_peak", |b| Some(b.resume_load_peak)),
    ("resume_retained", |b| Some(b.resume_retained)),
    ("ddp_buckets", |b| Some(b.ddp_buckets)),
    ("overhead", |b| Some(b.overhead)),
    ("total", |b| Some(b.total)),
    ("total_low", |b| Some(b.total_low)),
    ("total_high", |b| Some(b.total_high)),
    ("other_processes", |b| Some(b.other_processes)),
    ("first_step_peak", |b| b.first_step_peak),
    ("logits_tensor", |b| Some(b.logits_tensor)),
    ("eval_logits_tensor", |b| Some(b.eval_logits_tensor)),
    ("cuda_context", |b| Some(b.cuda_context)),
    ("allocator_slack", |b| Some(b.allocator_slack)),
    ("cublas_workspace", |b| Some(b.cublas_workspace)),
];

/// A named field of a generate estimate's `bytes.…`.
pub(crate) type GenerateBytesField = (&'static str, fn(&GenerateBytes) -> u64);

/// The fields of a generate estimate's `bytes.…`, by name (`estimate --phase generate`'s JSON).
pub(crate) const GENERATE_BYTES: &[GenerateBytesField] = &[
    ("weights", |b| b.weights),
    ("kv_cache", |b| b.kv_cache),
    ("kv_cache_after_prefill", |b| b.kv_cache_after_prefill),
    ("kv_cache_at_end", |b| b.kv_cache_at_end),
    ("prefill_peak", |b| b.prefill_peak),
    ("decode_peak", |b| b.decode_peak),
    ("peak", |b| b.peak),
    ("overhead", |b| b.overhead),
    ("total", |b| b.total),
    ("total_low", |b| b.total_low),
    ("total_high", |b| b.total_high),
    ("other_processes", |b| b.other_processes),
    ("cuda_context", |b| b.cuda_context),
    ("allocator_slack", |b| b.allocator_slack),
    ("cublas_workspace", |b| b.cublas_workspace),
];

/// A named field of `generation.…`.
pub(crate) type GenerationField = (&'static str, fn(&GenerateRun) -> Figure<'static>);

/// The fields of `generation.…` (the `generate` call), by name.
pub(crate) const GENERATION: &[GenerationField] = &[
    ("prompt_tokens", |r| {
        Figure::Whole(r.generation().prompt_tokens)
    }),
    ("max_new_tokens", |r| {
        Figure::Whole(r.generation().max_new_tokens)
    }),
    ("batch_size", |r| Figure::Whole(r.generation().batch_size)),
    ("num_return_sequences", |r| {
        Figure::Whole(r.generation().num_return_sequences)
    }),
    ("do_sample", |r| Figure::Flag(r.generation().do_sample)),
    ("num_beams", |r| Figure::Whole(r.generation().num_beams)),
];

/// A named field of `solve.…`: the solvers' answers on the run's card.
pub(crate) type SolveField = (&'static str, fn(&GenerateRun) -> Option<u64>);

/// The fields of `solve.…`, by name: `max_context` with its `prompt_tokens` and
/// `max_new_tokens` (as `--solve max_context` prints them), `max_batch`, and the two bounds the
/// context is the lesser of, `memory_max_context` and the model's `position_limit`. Missing when
/// the run names no card or nothing fits.
pub(crate) const SOLVE: &[SolveField] = &[
    ("max_context", |r| r.max_context.and_then(|s| s.value)),
    ("prompt_tokens", |r| {
        r.max_context.and_then(|s| s.prompt_tokens)
    }),
    ("max_new_tokens", |r| {
        r.max_context
            .and_then(|s: Solution| s.value.map(|_| r.generation().max_new_tokens))
    }),
    ("max_batch", |r| r.max_batch.and_then(|s| s.value)),
    ("memory_max_context", |r| {
        r.max_context.and_then(|s| s.memory_max_context)
    }),
    ("position_limit", |r| {
        r.max_context
            .and_then(|s| s.position_limit.map(|p| p.positions))
    }),
];

/// A named field of `architecture.…` (the path after it, and the value).
pub(crate) type ArchitectureField = (&'static [&'static str], fn(&Architecture) -> u64);

/// The shape fields of a generate run's `architecture.…`, as its JSON names them.
pub(crate) const ARCHITECTURE: &[ArchitectureField] = &[
    (&["layers"], |a| a.layers),
    (&["hidden"], |a| a.hidden),
    (&["vocab_size"], |a| a.vocab_size),
    (&["attention", "heads"], |a| a.attention.heads),
    (&["attention", "kv_heads"], |a| a.attention.kv_heads),
    (&["attention", "head_dim"], |a| a.attention.head_dim),
];

/// The fields of `gpu`.
#[cfg(test)]
pub(crate) const GPU_FIELDS: [&str; 4] = ["id", "name", "capacity_bytes", "bf16"];

/// A `{{ }}` path resolved to a typed field when its expression is parsed (an unknown path is a
/// parse error naming it), so evaluating it only reads the value: which estimate (the guide's, a
/// variant's) or catalog card it reads, and which of its fields.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Field {
    of: Owner,
    what: What,
    /// The path as written, for messages.
    name: String,
}

/// Whose value a path reads; a variant or card is found by its id when the value is read.
#[derive(Debug, Clone, PartialEq)]
enum Owner {
    Guide,
    Variant(String),
    Catalog(String),
}

/// Which field: of an estimate (the guide's or a variant's) or of a catalog card.
#[derive(Debug, Clone, Copy, PartialEq)]
enum What {
    /// `variants.<id>` alone: a group, once the variant is known.
    Estimate,
    /// `scenario`, `params`, `bytes`, `catalog.<id>`.
    Group,
    /// `scenario.<key>`: the key's row in [`keys::KEYS`].
    Scenario(usize),
    /// `params.<name>`: the row in [`PARAMS`].
    Params(usize),
    /// `bytes.<name>`: the row in [`BYTES`] (a training estimate) and in [`GENERATE_BYTES`] (a
    /// generate estimate), where the name is one.
    Bytes(Option<usize>, Option<usize>),
    /// `generation.<name>`: the row in [`GENERATION`].
    Generation(usize),
    /// `solve.<name>`: the row in [`SOLVE`].
    Solve(usize),
    /// `context_tokens` (generate).
    ContextTokens,
    /// `peak_moment` (generate: prefill or decode).
    PeakMoment,
    /// `architecture.<path>` (generate): the row in [`ARCHITECTURE`].
    Architecture(usize),
    /// `kv_cache_per_token` (generate): one token's keys and values in every layer.
    KvPerToken,
    /// `kv_cache_quantized` (generate): the cache as a 4-bit `QuantizedCache` would hold it.
    KvQuantized,
    /// `generation`, `solve`, `architecture` (generate): groups.
    GenerateGroup,
    /// `gpu` alone: a group when a GPU is named.
    Gpu,
    /// `gpu.<field>`, or `catalog.<id>.<field>`.
    Card(CardField),
    PeakPhase,
    TrainPeakMoment,
    EffectiveBatch,
    TokensPerStep,
    AccumulationPerGpu,
    Verdict,
    Fits,
    HeadroomBytes,
    EstimatorVersion,
}

/// A field of a GPU (`bf16` only for the scenario's `gpu`, not for a catalog card).
#[derive(Debug, Clone, Copy, PartialEq)]
enum CardField {
    Id,
    Name,
    CapacityBytes,
    Bf16,
}

impl Field {
    /// The field a dotted `path` names (`bytes.logits`, `variants.<id>.fits`,
    /// `catalog.<gpu-id>.name`); an unknown path is an error that names it.
    pub(crate) fn resolve(path: &[String]) -> Result<Field, String> {
        let name = path.join(".");
        let unknown = || format!("unknown name `{name}`");
        let segs: Vec<&str> = path.iter().map(String::as_str).collect();
        let (of, rest) = match segs.as_slice() {
            ["variants", id, rest @ ..] => (Owner::Variant((*id).to_owned()), rest),
            ["catalog", id, rest @ ..] => {
                let what = match rest {
                    ["id"] => What::Card(CardField::Id),
                    ["name"] => What::Card(CardField::Name),
                    ["capacity_bytes"] => What::Card(CardField::CapacityBytes),
                    [] => What::Group,
                    _ => return Err(unknown()),
                };
                let of = Owner::Catalog((*id).to_owned());
                return Ok(Field { of, what, name });
            }
            ["variants" | "catalog"] => return Err(unknown()),
            all => (Owner::Guide, all),
        };
        let what = match rest.split_first() {
            None => What::Estimate,
            Some((head, tail)) => estimate_field(head, tail).ok_or_else(unknown)?,
        };
        Ok(Field { of, what, name })
    }

    /// The path as written.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// For `fits` (the guide's or a variant's), the `verdict` beside it: `false` may be "tight".
    pub(crate) fn verdict_beside(&self) -> Option<Field> {
        (self.what == What::Fits).then(|| Field {
            what: What::Verdict,
            ..self.clone()
        })
    }

    /// The value in `data` (and, for `catalog.<id>`, in `catalog`).
    pub(crate) fn read<'a>(
        &self,
        data: &'a GuideData,
        catalog: &'a GpuCatalog,
    ) -> Result<Figure<'a>, String> {
        let train = match &data.run {
            GuideRun::Train(t) => t,
            GuideRun::Generate(g) => {
                return match &self.of {
                    Owner::Guide => self.read_generate(&g.run),
                    Owner::Variant(id) => self.read_generate(g.variant(id)?),
                    Owner::Catalog(id) => self.read_card(id, catalog),
                }
            }
        };
        let est = match &self.of {
            Owner::Guide => &train.estimate,
            Owner::Variant(id) => train.variant(id)?,
            Owner::Catalog(id) => return self.read_card(id, catalog),
        };
        let shared = SharedFields {
            scenario: &est.scenario,
            params: &est.params,
            gpu: est.gpu.as_ref(),
            verdict: est.verdict,
            fits: est.fits,
            headroom: est.headroom_bytes,
            version: est.estimator_version,
        };
        if let Some(figure) = self.read_shared(&shared) {
            return figure;
        }
        let unknown = || format!("unknown name `{}`", self.name);
        Ok(match self.what {
            What::Group => Figure::Group,
            // A field this estimate does not have is not in its JSON either.
            What::Bytes(Some(i), _) => {
                let (_, get) = BYTES.get(i).ok_or_else(unknown)?;
                Figure::Whole(get(&est.bytes).ok_or_else(unknown)?)
            }
            What::PeakPhase => Figure::Text(Cow::Borrowed(est.peak_phase.as_str())),
            What::TrainPeakMoment => Figure::Text(Cow::Borrowed(est.train_peak_moment.as_str())),
            What::EffectiveBatch => Figure::Whole(est.effective_batch),
            What::TokensPerStep => Figure::Whole(est.tokens_per_step),
            What::AccumulationPerGpu => Figure::Whole(est.accumulation_per_gpu),
            _ => {
                return Err(format!(
                    "`{}` is a field of a generate estimate, and this guide's scenario trains",
                    self.name
                ))
            }
        })
    }

    /// The fields a training and a generate estimate share (`None`: not one of them).
    fn read_shared<'a>(&self, s: &SharedFields<'a>) -> Option<Result<Figure<'a>, String>> {
        let optional = |v: Option<Figure<'a>>| v.unwrap_or(Figure::Missing);
        let unknown = || format!("unknown name `{}`", self.name);
        Some(Ok(match self.what {
            What::Estimate => {
                return Some(Err(format!(
                    "`{}` is a group of values; name one of its fields",
                    self.name
                )))
            }
            What::Scenario(i) => match keys::KEYS.get(i) {
                Some(k) => k.resolved(s.scenario).into(),
                None => return Some(Err(unknown())),
            },
            What::Params(i) => match PARAMS.get(i) {
                Some((_, get)) => Figure::Whole(get(s.params)),
                None => return Some(Err(unknown())),
            },
            What::Gpu => s.gpu.map_or(Figure::Missing, |_| Figure::Group),
            // A field of a GPU when the scenario names none: the value is missing, not unknown.
            What::Card(field) => card_field(s.gpu, field),
            What::Verdict => optional(s.verdict.map(Figure::Verdict)),
            What::Fits => optional(s.fits.map(Figure::Flag)),
            What::HeadroomBytes => optional(s.headroom.map(Figure::Signed)),
            What::EstimatorVersion => Figure::Text(Cow::Borrowed(s.version)),
            _ => return None,
        }))
    }

    /// The value in a generate run (`estimate --phase generate`'s JSON, with both solvers).
    fn read_generate<'a>(&self, run: &'a GenerateRun) -> Result<Figure<'a>, String> {
        let est = &run.estimate;
        let shared = SharedFields {
            scenario: &run.scenario,
            params: &est.params,
            gpu: est.gpu.as_ref(),
            verdict: est.verdict,
            fits: est.fits,
            headroom: est.headroom_bytes,
            version: est.estimator_version,
        };
        if let Some(figure) = self.read_shared(&shared) {
            return figure;
        }
        let optional = |v: Option<Figure<'a>>| v.unwrap_or(Figure::Missing);
        let unknown = || format!("unknown name `{}`", self.name);
        Ok(match self.what {
            What::Group | What::GenerateGroup => Figure::Group,
            What::Bytes(_, Some(i)) => {
                let (_, get) = GENERATE_BYTES.get(i).ok_or_else(unknown)?;
                Figure::Whole(get(&est.bytes))
            }
            What::Generation(i) => {
                let (_, get) = GENERATION.get(i).ok_or_else(unknown)?;
                get(run)
            }
            What::Solve(i) => {
                let (_, get) = SOLVE.get(i).ok_or_else(unknown)?;
                optional(get(run).map(Figure::Whole))
            }
            What::ContextTokens => Figure::Whole(est.context_tokens),
            What::Architecture(i) => {
                let (_, get) = ARCHITECTURE.get(i).ok_or_else(unknown)?;
                Figure::Whole(get(&est.architecture))
            }
            What::KvPerToken => Figure::Whole(run.kv_per_token),
            What::KvQuantized => optional(run.kv_cache_quantized.map(Figure::Whole)),
            What::PeakMoment => Figure::Text(Cow::Borrowed(match est.peak_moment {
                crate::estimate::GenerateMoment::Prefill => "prefill",
                crate::estimate::GenerateMoment::Decode => "decode",
                crate::estimate::GenerateMoment::Load => "load",
            })),
            _ => {
                return Err(format!(
                    "`{}` is a field of a training estimate, and this guide's scenario generates",
                    self.name
                ))
            }
        })
    }

    /// A field of catalog card `id`.
    fn read_card<'a>(&self, id: &str, catalog: &'a GpuCatalog) -> Result<Figure<'a>, String> {
        let gpu = catalog
            .get(id)
            .ok_or_else(|| format!("no GPU `{id}` in the catalog"))?;
        Ok(match self.what {
            What::Card(CardField::Id) => Figure::Text(Cow::Borrowed(&gpu.id)),
            What::Card(CardField::Name) => Figure::Text(Cow::Borrowed(&gpu.name)),
            What::Card(CardField::CapacityBytes) => Figure::Whole(gpu.capacity_bytes),
            _ => Figure::Group,
        })
    }
}

/// What a training and a generate estimate both have, for the fields they share.
struct SharedFields<'a> {
    scenario: &'a crate::estimate::Scenario,
    params: &'a Params,
    gpu: Option<&'a crate::estimate::GpuRef>,
    verdict: Option<Verdict>,
    fits: Option<bool>,
    headroom: Option<i64>,
    version: &'static str,
}

/// A field of the estimate's GPU; missing, not unknown, when the scenario names none.
fn card_field(gpu: Option<&crate::estimate::GpuRef>, field: CardField) -> Figure<'_> {
    match (gpu, field) {
        (None, _) => Figure::Missing,
        (Some(g), CardField::Id) => Figure::Text(Cow::Borrowed(&g.id)),
        (Some(g), CardField::Name) => Figure::Text(Cow::Borrowed(&g.name)),
        (Some(g), CardField::CapacityBytes) => Figure::Whole(g.capacity_bytes),
        (Some(g), CardField::Bf16) => Figure::Flag(g.bf16),
    }
}

impl GuideData {
    /// The value at a dotted `path`: [`Field::resolve`] then [`Field::read`].
    #[cfg(test)]
    pub(crate) fn lookup<'a>(
        &'a self,
        path: &[String],
        catalog: &'a GpuCatalog,
    ) -> Result<Figure<'a>, String> {
        Field::resolve(path)?.read(self, catalog)
    }
}

/// Field `head`, then `tail`, of an estimate; `None` when there is no such field.
fn estimate_field(head: &str, tail: &[&str]) -> Option<What> {
    let what = match (head, tail) {
        ("scenario" | "params" | "bytes", []) => What::Group,
        ("scenario", [key]) => What::Scenario(keys::KEYS.iter().position(|k| k.name == *key)?),
        ("params", [name]) => What::Params(PARAMS.iter().position(|(n, _)| n == name)?),
        ("bytes", [name]) => {
            let train = BYTES.iter().position(|(n, _)| n == name);
            let generate = GENERATE_BYTES.iter().position(|(n, _)| n == name);
            if train.is_none() && generate.is_none() {
                return None;
            }
            What::Bytes(train, generate)
        }
        ("generation" | "solve" | "architecture", []) => What::GenerateGroup,
        ("generation", [name]) => What::Generation(GENERATION.iter().position(|(n, _)| n == name)?),
        ("solve", [name]) => What::Solve(SOLVE.iter().position(|(n, _)| n == name)?),
        ("context_tokens", []) => What::ContextTokens,
        ("kv_cache_per_token", []) => What::KvPerToken,
        ("kv_cache_quantized", []) => What::KvQuantized,
        ("architecture", path) => {
            What::Architecture(ARCHITECTURE.iter().position(|(p, _)| *p == path)?)
        }
        ("peak_moment", []) => What::PeakMoment,
        ("gpu", []) => What::Gpu,
        ("gpu", [field]) => What::Card(match *field {
            "id" => CardField::Id,
            "name" => CardField::Name,
            "capacity_bytes" => CardField::CapacityBytes,
            "bf16" => CardField::Bf16,
            _ => return None,
        }),
        (_, [_, ..]) => return None,
        ("peak_phase", []) => What::PeakPhase,
        ("train_peak_moment", []) => What::TrainPeakMoment,
        ("effective_batch", []) => What::EffectiveBatch,
        ("tokens_per_step", []) => What::TokensPerStep,
        ("accumulation_per_gpu", []) => What::AccumulationPerGpu,
        ("verdict", []) => What::Verdict,
        ("fits", []) => What::Fits,
        ("headroom_bytes", []) => What::HeadroomBytes,
        ("estimator_version", []) => What::EstimatorVersion,
        _ => return None,
    };
    Some(what)
}

#[cfg(test)]
#[path = "fields_tests.rs"]
mod tests;
