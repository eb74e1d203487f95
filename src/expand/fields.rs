//! What a guide's `{{ }}` paths read: each dotted path matched against the estimator's typed
//! fields ([`Estimate`], its [`Params`] and [`Bytes`], the scenario's key table, the GPU, the
//! variants, the catalog), giving a [`Figure`]. No JSON in between: the paths are the names of the
//! `vramdoc estimate --format json` fields, and a test walks that JSON to keep the two in step.

use std::borrow::Cow;

use super::data::GuideData;
use crate::estimate::{Bytes, Estimate, GpuCatalog, Params, Verdict};
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
pub(crate) const GPU_FIELDS: [&str; 4] = ["id", "name", "capacity_bytes", "bf16"];

impl GuideData {
    /// The value at a dotted `path` (`bytes.logits`, `variants.<id>.fits`,
    /// `catalog.<gpu-id>.name`), read from the typed estimate; an unknown path is an error that
    /// names it.
    pub(crate) fn lookup<'a>(
        &'a self,
        path: &[String],
        catalog: &'a GpuCatalog,
    ) -> Result<Figure<'a>, String> {
        let unknown = || format!("unknown name `{}`", path.join("."));
        let segs: Vec<&str> = path.iter().map(String::as_str).collect();
        let (est, rest) = match segs.as_slice() {
            ["variants", id, rest @ ..] => (self.variant(id)?, rest),
            ["catalog", id, rest @ ..] => {
                let gpu = catalog
                    .get(id)
                    .ok_or_else(|| format!("no GPU `{id}` in the catalog"))?;
                return match rest {
                    ["id"] => Ok(Figure::Text(Cow::Borrowed(&gpu.id))),
                    ["name"] => Ok(Figure::Text(Cow::Borrowed(&gpu.name))),
                    ["capacity_bytes"] => Ok(Figure::Whole(gpu.capacity_bytes)),
                    [] => Ok(Figure::Group),
                    _ => Err(unknown()),
                };
            }
            ["variants" | "catalog"] => return Err(unknown()),
            all => (&self.estimate, all),
        };
        let Some((head, tail)) = rest.split_first() else {
            return Err(format!(
                "`{}` is a group of values; name one of its fields",
                path.join(".")
            ));
        };
        estimate_field(est, head, tail).ok_or_else(unknown)
    }
}

/// Field `head`, then `tail`, of an estimate; `None` when there is no such field.
fn estimate_field<'a>(est: &'a Estimate, head: &str, tail: &[&str]) -> Option<Figure<'a>> {
    let optional = |v: Option<Figure<'a>>| v.unwrap_or(Figure::Missing);
    let figure = match (head, tail) {
        ("scenario" | "params" | "bytes", []) => Figure::Group,
        ("scenario", [key]) => keys::get(key)?.resolved(&est.scenario).into(),
        ("params", [name]) => {
            let (_, get) = PARAMS.iter().find(|(n, _)| n == name)?;
            Figure::Whole(get(&est.params))
        }
        ("bytes", [name]) => {
            let (_, get) = BYTES.iter().find(|(n, _)| n == name)?;
            Figure::Whole(get(&est.bytes)?)
        }
        ("gpu", []) => est.gpu.as_ref().map_or(Figure::Missing, |_| Figure::Group),
        ("gpu", [field]) => match (&est.gpu, *field) {
            // A field of a GPU when the scenario names none: the value is missing, not unknown.
            (None, f) if GPU_FIELDS.contains(&f) => Figure::Missing,
            (Some(g), "id") => Figure::Text(Cow::Borrowed(&g.id)),
            (Some(g), "name") => Figure::Text(Cow::Borrowed(&g.name)),
            (Some(g), "capacity_bytes") => Figure::Whole(g.capacity_bytes),
            (Some(g), "bf16") => Figure::Flag(g.bf16),
            _ => return None,
        },
        (_, [_, ..]) => return None,
        ("peak_phase", []) => Figure::Text(Cow::Borrowed(est.peak_phase.as_str())),
        ("train_peak_moment", []) => Figure::Text(Cow::Borrowed(est.train_peak_moment.as_str())),
        ("effective_batch", []) => Figure::Whole(est.effective_batch),
        ("tokens_per_step", []) => Figure::Whole(est.tokens_per_step),
        ("accumulation_per_gpu", []) => Figure::Whole(est.accumulation_per_gpu),
        ("verdict", []) => optional(est.verdict.map(Figure::Verdict)),
        ("fits", []) => optional(est.fits.map(Figure::Flag)),
        ("headroom_bytes", []) => optional(est.headroom_bytes.map(Figure::Signed)),
        ("estimator_version", []) => Figure::Text(Cow::Borrowed(est.estimator_version)),
        _ => return None,
    };
    Some(figure)
}

#[cfg(test)]
#[path = "fields_tests.rs"]
mod tests;
