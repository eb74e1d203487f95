//! What a guide's `{{ }}` paths read: each dotted path resolved, when its expression is parsed,
//! to one of the estimator's typed fields ([`Field`]: of an `Estimate`, its [`Params`] and
//! [`Bytes`], the scenario's key table, the GPU, a variant's estimate, a catalog card), which
//! evaluation reads into a [`Figure`]. No JSON in between: the paths are the names of the
//! `vramdoc estimate --format json` fields, and a test walks that JSON to keep the two in step.

use std::borrow::Cow;

use super::data::GuideData;
use crate::estimate::{Bytes, GpuCatalog, Params, Verdict};
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
    /// `bytes.<name>`: the row in [`BYTES`].
    Bytes(usize),
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
        let est = match &self.of {
            Owner::Guide => &data.estimate,
            Owner::Variant(id) => data.variant(id)?,
            Owner::Catalog(id) => {
                let gpu = catalog
                    .get(id)
                    .ok_or_else(|| format!("no GPU `{id}` in the catalog"))?;
                return Ok(match self.what {
                    What::Card(CardField::Id) => Figure::Text(Cow::Borrowed(&gpu.id)),
                    What::Card(CardField::Name) => Figure::Text(Cow::Borrowed(&gpu.name)),
                    What::Card(CardField::CapacityBytes) => Figure::Whole(gpu.capacity_bytes),
                    _ => Figure::Group,
                });
            }
        };
        let optional = |v: Option<Figure<'a>>| v.unwrap_or(Figure::Missing);
        let unknown = || format!("unknown name `{}`", self.name);
        Ok(match self.what {
            What::Estimate => {
                return Err(format!(
                    "`{}` is a group of values; name one of its fields",
                    self.name
                ))
            }
            What::Group => Figure::Group,
            What::Scenario(i) => keys::KEYS
                .get(i)
                .ok_or_else(unknown)?
                .resolved(&est.scenario)
                .into(),
            What::Params(i) => {
                let (_, get) = PARAMS.get(i).ok_or_else(unknown)?;
                Figure::Whole(get(&est.params))
            }
            // A field this estimate does not have is not in its JSON either.
            What::Bytes(i) => {
                let (_, get) = BYTES.get(i).ok_or_else(unknown)?;
                Figure::Whole(get(&est.bytes).ok_or_else(unknown)?)
            }
            What::Gpu => est.gpu.as_ref().map_or(Figure::Missing, |_| Figure::Group),
            // A field of a GPU when the scenario names none: the value is missing, not unknown.
            What::Card(field) => match (&est.gpu, field) {
                (None, _) => Figure::Missing,
                (Some(g), CardField::Id) => Figure::Text(Cow::Borrowed(&g.id)),
                (Some(g), CardField::Name) => Figure::Text(Cow::Borrowed(&g.name)),
                (Some(g), CardField::CapacityBytes) => Figure::Whole(g.capacity_bytes),
                (Some(g), CardField::Bf16) => Figure::Flag(g.bf16),
            },
            What::PeakPhase => Figure::Text(Cow::Borrowed(est.peak_phase.as_str())),
            What::TrainPeakMoment => Figure::Text(Cow::Borrowed(est.train_peak_moment.as_str())),
            What::EffectiveBatch => Figure::Whole(est.effective_batch),
            What::TokensPerStep => Figure::Whole(est.tokens_per_step),
            What::AccumulationPerGpu => Figure::Whole(est.accumulation_per_gpu),
            What::Verdict => optional(est.verdict.map(Figure::Verdict)),
            What::Fits => optional(est.fits.map(Figure::Flag)),
            What::HeadroomBytes => optional(est.headroom_bytes.map(Figure::Signed)),
            What::EstimatorVersion => Figure::Text(Cow::Borrowed(est.estimator_version)),
        })
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
        ("bytes", [name]) => What::Bytes(BYTES.iter().position(|(n, _)| n == name)?),
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
