//! The computed data behind one guide: its estimate, its variants', the what-ifs, as the estimator's types,
//! computed once per guide and shared by all its translations.

use yaml_serde::Value as Yaml;

use crate::content::Variant;
use crate::estimate::{self, Estimate, GpuCatalog, Literal, Scenario, WhatIf};

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

/// Everything a guide's expressions can read, as the estimator's types.
#[derive(Debug, Clone)]
pub struct GuideData {
    /// The guide's scenario.
    pub(crate) scenario: Scenario,
    /// The scenario's estimate.
    pub(crate) estimate: Estimate,
    /// The variants, in front-matter order.
    pub(crate) variants: Vec<VariantData>,
    /// The computed what-if options.
    pub(crate) what_if: Vec<WhatIf>,
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

/// Computes a guide's data from its front matter `scenario:` and `variants:`.
pub fn guide_data(
    scenario: &Yaml,
    variants: &[Variant],
    catalog: &GpuCatalog,
) -> Result<GuideData, DataError> {
    let scen_err = |e: estimate::ScenarioError| DataError {
        key: e.key.as_ref().map(|k| format!("scenario.{k}")),
        message: e.message.clone(),
        line: None,
    };
    let base = Scenario::from_yaml(scenario).map_err(scen_err)?;
    base.validate(catalog).map_err(scen_err)?;
    let est = estimate::estimate(&base, catalog).map_err(scen_err)?;
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
        s.validate(catalog)
            .map_err(|e| at(format!("variant `{id}`: {}", e.message)))?;
        let e = estimate::estimate(&s, catalog)
            .map_err(|e| at(format!("variant `{id}`: {}", e.message)))?;
        let what_if = estimate::what_if(&s, catalog)
            .map_err(|e| at(format!("variant `{id}`: {}", e.message)))?;
        vdata.push(VariantData {
            id: id.clone(),
            estimate: e,
            what_if,
        });
    }
    let what_if = estimate::what_if(&base, catalog).map_err(scen_err)?;
    Ok(GuideData {
        scenario: base,
        estimate: est,
        variants: vdata,
        what_if,
    })
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
