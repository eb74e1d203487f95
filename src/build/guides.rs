//! Per-guide data: one estimate per guide, shared by its translations, which must agree on it.

use std::collections::BTreeMap;

use rayon::prelude::*;
use yaml_serde::Value as Yaml;

use super::Guides;
use crate::content::Page;
use crate::diagnostics::Diagnostic;
use crate::estimate::GpuCatalog;
use crate::expand::{self, GuideData};

/// One guide's data, or why it could not be computed.
type GuideResult = Result<Option<GuideData>, Vec<Diagnostic>>;

/// Computes each guide's data (guides without a scenario get none); all problems are returned.
pub(crate) fn compute<'a>(
    guides: &Guides<'a>,
    catalog: &GpuCatalog,
) -> (BTreeMap<&'a str, Option<GuideData>>, Vec<Diagnostic>) {
    let results: Vec<(&str, GuideResult)> = guides
        .par_iter()
        .map(|(slug, pages)| (*slug, one_guide(pages, catalog)))
        .collect();
    let mut data = BTreeMap::new();
    let mut errors = Vec::new();
    for (slug, r) in results {
        match r {
            Ok(d) => {
                data.insert(slug, d);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    (data, errors)
}

fn one_guide(pages: &[&Page], catalog: &GpuCatalog) -> Result<Option<GuideData>, Vec<Diagnostic>> {
    let Some(first) = pages.iter().find(|p| p.front.scenario.is_some()) else {
        return Ok(None);
    };
    let mut errors = Vec::new();
    for other in pages {
        if other.src.lang == first.src.lang {
            continue;
        }
        if scenario_of(other) != scenario_of(first) {
            errors.push(
                Diagnostic::error(format!(
                    "the translations disagree on the scenario: {} and {} must have the same `scenario:`",
                    first.src.shown.display(),
                    other.src.shown.display()
                ))
                .in_file(&other.src.shown)
                .at(other.front.scenario.as_ref().map_or(1, |s| s.1), 1)
                .with_help("a guide's translations share one scenario; copy it from the other file"),
            );
        }
        if variant_sets(other) != variant_sets(first) {
            errors.push(
                Diagnostic::error(format!(
                    "the translations disagree on the variants: {} and {} must have the same variant ids and `set:` values",
                    first.src.shown.display(),
                    other.src.shown.display()
                ))
                .in_file(&other.src.shown)
                .at(other.front.variants.as_ref().map_or(1, |s| s.1), 1)
                .with_help("only a variant's `label` may differ between languages"),
            );
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let (scenario, line) = first
        .front
        .scenario
        .as_ref()
        .map(|(v, l)| (v, *l))
        .unwrap_or((&Yaml::Null, 1));
    expand::guide_data(
        scenario,
        first.front.variants.as_ref().map(|v| &v.0),
        catalog,
    )
    .map(Some)
    .map_err(|e| {
        let line = e.key.as_deref().map_or(line, |k| key_line(first, line, k));
        vec![
            Diagnostic::error(format!("invalid scenario: {}", e.message))
                .in_file(&first.src.shown)
                .at(line, 1)
                .with_source(first.text.clone())
                .with_help(
                    "see the README's scenario keys; the estimator's defaults are nanoGPT's",
                ),
        ]
    })
}

fn scenario_of(p: &Page) -> Option<&Yaml> {
    p.front.scenario.as_ref().map(|s| &s.0)
}

/// The variants without their (per-language) labels.
fn variant_sets(p: &Page) -> Vec<(Option<Yaml>, Option<Yaml>)> {
    match p.front.variants.as_ref().map(|v| &v.0) {
        Some(Yaml::Sequence(items)) => items
            .iter()
            .map(|i| (i.get("id").cloned(), i.get("set").cloned()))
            .collect(),
        _ => Vec::new(),
    }
}

/// The (id, label) pairs of a page's variants, in its language.
pub(crate) fn variant_labels(p: &Page) -> Vec<(String, String)> {
    match p.front.variants.as_ref().map(|v| &v.0) {
        Some(Yaml::Sequence(items)) => items
            .iter()
            .filter_map(|i| {
                let id = i.get("id")?.as_str()?.to_string();
                let label = i
                    .get("label")
                    .and_then(Yaml::as_str)
                    .unwrap_or(&id)
                    .to_string();
                Some((id, label))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The file line of `key` (e.g. `scenario.n_head`, `variants[1]`) within the block at `line`.
fn key_line(page: &Page, line: usize, key: &str) -> usize {
    let leaf = key.rsplit('.').next().unwrap_or(key);
    let leaf = leaf.split('[').next().unwrap_or(leaf);
    page.text
        .lines()
        .enumerate()
        .skip(line)
        .take_while(|(_, l)| l.starts_with(' ') || l.starts_with('-') || l.is_empty())
        .find(|(_, l)| {
            l.trim_start()
                .trim_start_matches("- ")
                .starts_with(&format!("{leaf}:"))
        })
        .map_or(line, |(i, _)| i + 1)
}
