//! The computed data behind one guide: its estimate, its variants', the what-ifs, as the estimator's types,
//! computed once per guide and shared by all its translations.

use yaml_serde::Value as Yaml;

use super::generate_data::{generate_data, is_generate, GenerateData, GenerateRun};
use crate::content::Variant;
use crate::estimate::{
    self, Architecture, Estimate, GpuCatalog, Literal, Scenario, ScenarioError, WhatIf,
};
use crate::scenario::{model, KEYS};

/// One named variant of the scenario (ids and overrides are the same in every language).
#[derive(Debug, Clone)]
pub(crate) struct VariantData {
    /// The id used in `variants.<id>.…` paths.
    pub(crate) id: String,
    /// The variant's estimate.
    pub(crate) estimate: Estimate,
    /// The variant's own what-if options (`options_table(variant="id")`), as for a scenario.
    pub(crate) what_if: Vec<WhatIf>,
}

/// Everything a guide's expressions can read, as the estimator's types: a training step's
/// estimate, or Hugging Face `generate`'s (`generate_data.rs`) when the scenario says
/// `phase: generate`.
#[derive(Debug, Clone)]
pub struct GuideData {
    /// What the guide's scenario computes.
    pub(crate) run: GuideRun,
}

/// A guide's computed run: a training step or `generate` calls.
#[derive(Debug, Clone)]
pub(crate) enum GuideRun {
    /// A training step (nanoGPT's or a catalog model's Trainer step).
    Train(Box<TrainData>),
    /// Hugging Face `generate` on catalog models.
    Generate(Box<GenerateData>),
}

/// A training guide's data.
#[derive(Debug, Clone)]
pub(crate) struct TrainData {
    /// The guide's scenario.
    pub(crate) scenario: Scenario,
    /// The scenario's estimate.
    pub(crate) estimate: Estimate,
    /// The variants, in front-matter order.
    pub(crate) variants: Vec<VariantData>,
    /// The computed what-if options.
    pub(crate) what_if: Vec<WhatIf>,
    /// The model the front matter's `model:` names (None: nanoGPT's, whose shape the scenario's
    /// keys give).
    pub(crate) model: Option<Architecture>,
}

/// A problem with a guide's scenario or variants: which key, and why.
#[derive(Debug, Clone)]
pub struct DataError {
    /// `scenario.<key>` or `variants[i].…` where known.
    pub(crate) key: Option<String>,
    /// What is wrong.
    pub(crate) message: String,
    /// The file line, when the error is in a variant (whose lines are known).
    pub(crate) line: Option<usize>,
}

/// Computes a guide's data from its front matter `scenario:` and `variants:`. A scenario that
/// names `model:` (a catalog id) is that model's Trainer step, as `vramdoc estimate --model`
/// computes it: nanoGPT-only keys are refused, the keys not given take Trainer's defaults; with
/// `phase: generate` it is Hugging Face `generate` on it.
pub fn guide_data(
    scenario: &Yaml,
    variants: &[Variant],
    catalog: &GpuCatalog,
) -> Result<GuideData, DataError> {
    let run = if is_generate(scenario) {
        GuideRun::Generate(Box::new(generate_data(scenario, variants, catalog)?))
    } else {
        GuideRun::Train(Box::new(train_data(scenario, variants, catalog)?))
    };
    Ok(GuideData { run })
}

/// A nanoGPT guide (no `model`) whose scenario or variant sets a key only Hugging Face models
/// have: the first such key, refused at its line (`prefix` locates it in the front matter).
fn refuse_model_only_keys(s: &Scenario, prefix: &str) -> Result<(), DataError> {
    match crate::scenario::model_only_keys(s).first() {
        Some((key, value)) => {
            let (message, help) = crate::scenario::model_only_key_message(key, value);
            Err(DataError {
                key: Some(format!("{prefix}{key}")),
                message: format!("{message} ({help})"),
                line: None,
            })
        }
        None => Ok(()),
    }
}

/// A training guide's data: the scenario's estimate, its variants' and the what-ifs.
fn train_data(
    scenario: &Yaml,
    variants: &[Variant],
    catalog: &GpuCatalog,
) -> Result<TrainData, DataError> {
    let scen_err = |e: ScenarioError| DataError {
        key: e.key.as_ref().map(|k| format!("scenario.{k}")),
        message: e.message.clone(),
        line: None,
    };
    let mut base = Scenario::from_yaml(scenario).map_err(scen_err)?;
    let settled = match base.model.clone() {
        Some(id) => Some(settle_model(scenario, &id, &mut base)?),
        None => {
            refuse_model_only_keys(&base, "scenario.")?;
            base.validate(catalog).map_err(scen_err)?;
            None
        }
    };
    let model = settled.as_ref().map(|m| m.architecture.clone());
    let a = model.as_ref();
    let est = estimate_with(a, &base, catalog).map_err(scen_err)?;
    let mut vdata = Vec::new();
    for v in variants {
        let id = &v.id;
        let mut s = base.clone();
        for setting in &v.set {
            let at = |m: String| DataError {
                key: Some(format!("variants.{id}.set.{}", setting.key)),
                message: m,
                line: Some(setting.line),
            };
            let outside = |a: &Architecture| !model::applies(&setting.key, a.family);
            if a.as_ref()
                .is_some_and(|a| setting.key == "model" || outside(a))
            {
                return Err(at(format!(
                    "variant `{id}`, `{}`: a variant of a guide's model changes its run \
                     settings only (not nanoGPT's keys, nor the model)",
                    setting.key
                )));
            }
            let lit = literal(&setting.value).ok_or_else(|| {
                at(format!(
                    "`{}` in variant `{id}` must be a number, string or boolean",
                    setting.key
                ))
            })?;
            s.set(&setting.key, lit)
                .map_err(|e| at(format!("variant `{id}`, `{}`: {}", setting.key, e.message)))?;
        }
        let at = |m: String| DataError {
            key: Some(format!("variants.{id}")),
            message: m,
            line: Some(v.line),
        };
        if let Some(m) = &settled {
            let set = |k: &str| scenario.get(k).is_some() || v.set.iter().any(|x| x.key == k);
            settle_weights(m, &mut s, &set)
                .map_err(|e| at(format!("variant `{id}`: {}", e.message)))?;
        }
        if a.is_none() {
            refuse_model_only_keys(&s, &format!("variants.{id}.set."))?;
            s.validate(catalog)
                .map_err(|e| at(format!("variant `{id}`: {}", e.message)))?;
        }
        let e = estimate_with(a, &s, catalog)
            .map_err(|e| at(format!("variant `{id}`: {}", e.message)))?;
        let what_if = what_if_with(a, &s, catalog)
            .map_err(|e| at(format!("variant `{id}`: {}", e.message)))?;
        vdata.push(VariantData {
            id: id.clone(),
            estimate: e,
            what_if,
        });
    }
    let what_if = what_if_with(a, &base, catalog).map_err(scen_err)?;
    Ok(TrainData {
        scenario: base,
        estimate: est,
        variants: vdata,
        what_if,
        model,
    })
}

/// The catalog model `id` a guide's scenario names, with the scenario's keys checked against
/// it (nanoGPT-only keys refused, each named, the error at the first) and Trainer's defaults
/// set on the keys the scenario does not give, and the weights' dtype resolved
/// ([`settle_weights`]).
fn settle_model(yaml: &Yaml, id: &str, s: &mut Scenario) -> Result<model::Model, DataError> {
    let m = model::from_catalog(id).map_err(|message| DataError {
        key: Some("scenario.model".to_owned()),
        message,
        line: None,
    })?;
    let given = |key: &str| yaml.get(key).is_some();
    let family = m.architecture.family;
    let wrong: Vec<&str> = (KEYS.iter())
        .filter(|k| !k.families.contains(family) && given(k.name))
        .map(|k| k.name)
        .collect();
    if let Some(first) = wrong.first() {
        return Err(DataError {
            key: Some(format!("scenario.{first}")),
            message: format!(
                "model: {id} takes its shape from its own config and trains as a Trainer step: \
                 remove {} (keys of nanoGPT's train.py), or remove `model` to estimate \
                 nanoGPT's model",
                wrong
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            line: None,
        });
    }
    for (key, value, _) in model::trainer_default_values(&m) {
        if !given(key) {
            s.set(key, value).map_err(|e| DataError {
                key: Some(format!("scenario.{key}")),
                message: e.message,
                line: None,
            })?;
        }
    }
    settle_weights(&m, s, &given)?;
    s.attention_agrees(given("flash")).map_err(|e| DataError {
        key: Some("scenario.attn_implementation".to_owned()),
        message: e.message,
        line: None,
    })?;
    Ok(m)
}

/// The weights' dtype of a guide's run of `m`, as the command line resolves it
/// (`model::weights`): `weights_dtype`, `pure_bf16`, or the model's own; `given` says which
/// keys the guide sets.
fn settle_weights(
    m: &model::Model,
    s: &mut Scenario,
    given: &dyn Fn(&str) -> bool,
) -> Result<(), DataError> {
    let resolved = model::weights::resolve(m, s, given).map_err(|(key, message)| DataError {
        key: Some(format!("scenario.{key}")),
        message,
        line: None,
    })?;
    if let Some((dtype, _)) = resolved {
        model::weights::apply(s, dtype, given);
    }
    Ok(())
}

/// The estimate of `s`: of the model `a` when the guide names one, else nanoGPT's.
pub(crate) fn estimate_with(
    a: Option<&Architecture>,
    s: &Scenario,
    catalog: &GpuCatalog,
) -> Result<Estimate, ScenarioError> {
    match a {
        Some(a) => estimate::estimate_model(a, s, catalog),
        None => estimate::estimate(s, catalog),
    }
}

/// The what-ifs of `s`: of the model `a` when the guide names one, else nanoGPT's.
fn what_if_with(
    a: Option<&Architecture>,
    s: &Scenario,
    catalog: &GpuCatalog,
) -> Result<Vec<WhatIf>, ScenarioError> {
    match a {
        Some(a) => estimate::what_if_model(a, s, catalog),
        None => estimate::what_if(s, catalog),
    }
}

/// A YAML scalar as an estimator literal.
pub(crate) fn literal(v: &Yaml) -> Option<Literal> {
    match v {
        Yaml::Bool(b) => Some(Literal::Bool(*b)),
        Yaml::Number(n) => n
            .as_i64()
            .map(Literal::Int)
            .or_else(|| n.as_f64().map(Literal::Float)),
        Yaml::String(s) => Some(Literal::Str(s.clone())),
        Yaml::Null => Some(Literal::None),
        _ => None,
    }
}

impl GuideData {
    /// The training step's data, or an error saying that `what` needs a training guide.
    pub(crate) fn train(&self, what: &str) -> Result<&TrainData, String> {
        match &self.run {
            GuideRun::Train(t) => Ok(t),
            GuideRun::Generate(_) => Err(format!(
                "{what} shows a training step, and this guide's scenario generates \
                 (phase: generate): use chart(\"context\"), solve_table() or the generate \
                 fields (bytes.kv_cache, solve.max_context, …)"
            )),
        }
    }

    /// The `generate` runs, or an error saying that `what` needs a generate guide.
    pub(crate) fn generate(&self, what: &str) -> Result<&GenerateData, String> {
        match &self.run {
            GuideRun::Generate(g) => Ok(g),
            GuideRun::Train(_) => Err(format!(
                "{what} shows Hugging Face generate: the guide's scenario needs \
                 `phase: generate` and a catalog `model:`"
            )),
        }
    }
}

impl GuideData {
    /// What the guide's pages show of its data, part by part (the variants with their ids), for
    /// the build's hash of it.
    pub(crate) fn shown_parts(&self, mut part: impl FnMut(&str)) {
        match &self.run {
            GuideRun::Train(t) => {
                part(&json(&t.estimate));
                for v in &t.variants {
                    part(&v.id);
                    part(&json(&v.estimate));
                    v.what_if.iter().for_each(|w| part(&json(w)));
                }
                t.what_if.iter().for_each(|w| part(&json(w)));
            }
            GuideRun::Generate(g) => {
                let run = |r: &GenerateRun| {
                    json(&r.estimate) + &json(&r.max_context) + &json(&r.max_batch)
                };
                part(&run(&g.run));
                for (id, r) in &g.variants {
                    part(id);
                    part(&run(r));
                }
            }
        }
    }
}

/// A value as JSON text ("" if it cannot be written).
fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

impl TrainData {
    /// The estimate of variant `id`.
    pub(crate) fn variant(&self, id: &str) -> Result<&Estimate, String> {
        self.variant_data(id).map(|v| &v.estimate)
    }

    /// Variant `id`: its estimate and its what-ifs.
    pub(crate) fn variant_data(&self, id: &str) -> Result<&VariantData, String> {
        self.variants.iter().find(|v| v.id == id).ok_or_else(|| {
            let known: Vec<&str> = self.variants.iter().map(|v| v.id.as_str()).collect();
            format!("no variant with id `{id}` (known: {})", known.join(", "))
        })
    }
}
