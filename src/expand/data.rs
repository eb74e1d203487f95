//! The computed data behind one guide: its estimate, its variants', the what-ifs and the catalog,
//! computed once per guide and shared by all its translations.

use serde_json::{json, Map, Value};
use yaml_serde::Value as Yaml;

use crate::content::Variant;
use crate::estimate::{self, GpuCatalog, Literal, Scenario};

/// One named variant of the scenario (ids and overrides are the same in every language).
#[derive(Debug, Clone)]
pub struct VariantData {
    /// The id used in `variants.<id>.…` paths.
    pub id: String,
    /// The overridden keys and their values, as written.
    pub set: Vec<(String, String)>,
    /// The variant's estimate, as JSON.
    pub estimate: Value,
}

/// Everything a guide's expressions can read.
#[derive(Debug, Clone)]
pub struct GuideData {
    /// The guide's scenario.
    pub scenario: Scenario,
    /// The lookup root: the estimate's fields plus `variants` and `catalog`.
    pub root: Value,
    /// The variants, in front-matter order.
    pub variants: Vec<VariantData>,
    /// The computed what-if options, as JSON (see `estimate::WhatIf`).
    pub what_if: Vec<Value>,
}

/// A problem with a guide's scenario or variants: which key, and why.
#[derive(Debug, Clone)]
pub struct DataError {
    /// `scenario.<key>` or `variants[i].…` where known.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
    /// The file line, when the error is in a variant (whose lines are known).
    pub line: Option<usize>,
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
    let mut root = serde_json::to_value(&est).map_err(|e| DataError {
        key: None,
        message: e.to_string(),
        line: None,
    })?;
    let mut vdata = Vec::new();
    for v in variants {
        let id = &v.id;
        let mut s = base.clone();
        let mut pairs = Vec::new();
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
            pairs.push((setting.key.clone(), display_literal(&lit)));
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
        let ev = serde_json::to_value(&e).map_err(|e| at(e.to_string()))?;
        vdata.push(VariantData {
            id: id.clone(),
            set: pairs,
            estimate: ev,
        });
    }
    let what_if = estimate::what_if(&base, catalog)
        .map_err(scen_err)?
        .iter()
        .filter_map(|w| serde_json::to_value(w).ok())
        .collect();
    let mut vmap = Map::new();
    for v in &vdata {
        vmap.insert(v.id.clone(), v.estimate.clone());
    }
    let mut cmap = Map::new();
    for g in catalog.iter() {
        cmap.insert(
            g.id.clone(),
            json!({ "id": g.id, "name": g.name, "capacity_bytes": g.capacity_bytes }),
        );
    }
    if let Value::Object(m) = &mut root {
        m.insert("variants".into(), Value::Object(vmap));
        m.insert("catalog".into(), Value::Object(cmap));
    }
    Ok(GuideData {
        scenario: base,
        root,
        variants: vdata,
        what_if,
    })
}

/// A YAML scalar as an estimator literal.
pub fn literal(v: &Yaml) -> Option<Literal> {
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

fn display_literal(l: &Literal) -> String {
    match l {
        Literal::Int(i) => i.to_string(),
        Literal::Float(f) => f.to_string(),
        Literal::Bool(b) => b.to_string(),
        Literal::Str(s) => s.clone(),
        Literal::None => "None".into(),
    }
}

/// Looks up a dotted path in the guide's data.
pub fn lookup<'a>(root: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(root, |v, seg| v.get(seg.as_str()))
}
