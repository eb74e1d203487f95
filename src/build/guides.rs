//! A guide's computed data (one estimate per guide, shared by its translations) and the parts of
//! its front matter that describe it.

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;
use yaml_serde::Value as Yaml;

use super::plan::{Job, JobKind, Plan};
use super::SiteContext;
use crate::content;

use super::manifest::Hasher;
use crate::content::Page;
use crate::diagnostics::Diagnostic;
use crate::estimate::GpuCatalog;
use crate::expand::{self, GuideData};

/// Computes the data of the guide whose `scenario:` page is `page`.
pub(crate) fn compute_one(page: &Page, catalog: &GpuCatalog) -> Result<GuideData, Vec<Diagnostic>> {
    let (scenario, line) = page
        .front
        .scenario
        .as_ref()
        .map(|(v, l)| (v, *l))
        .unwrap_or((&Yaml::Null, 1));
    expand::guide_data(
        scenario,
        page.front.variants.as_ref().map(|v| &v.0),
        catalog,
    )
    .map_err(|e| {
        let line = e.key.as_deref().map_or(line, |k| key_line(page, line, k));
        vec![
            Diagnostic::error(format!("invalid scenario: {}", e.message))
                .in_file(page.src.shown())
                .at(line, 1)
                .with_source(page.text.clone())
                .with_help(
                    "see the README's scenario keys; the estimator's defaults are nanoGPT's",
                ),
        ]
    })
}

/// Hash of what a guide's pages show from its data. The catalog of other GPUs is left out: only
/// pages that name `catalog.` depend on it (see the page job's inputs).
pub(crate) fn data_hash(d: &GuideData) -> super::manifest::Digest {
    let mut h = Hasher::new();
    let mut root = d.root.clone();
    if let Some(m) = root.as_object_mut() {
        m.remove("catalog");
    }
    h.part(root.to_string());
    for w in &d.what_if {
        h.part(w.to_string());
    }
    h.finish()
}

/// The variants without their (per-language) labels.
pub(crate) fn variant_sets(p: &Page) -> Vec<(Option<Yaml>, Option<Yaml>)> {
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

/// Computes the data of every guide that has a page to render.
pub(crate) fn guide_data_to_render(
    site: &SiteContext,
    plan: &Plan,
) -> Result<BTreeMap<String, GuideData>, Vec<Diagnostic>> {
    guide_data_for(site, plan, |j| j.render)
}

/// Computes the data of every guide with a scenario.
pub(crate) fn guide_data_to_render_all(
    site: &SiteContext,
    plan: &Plan,
) -> Result<BTreeMap<String, GuideData>, Vec<Diagnostic>> {
    guide_data_for(site, plan, |_| true)
}

/// Computes the data of the guides with a job that `wanted` selects.
fn guide_data_for(
    site: &SiteContext,
    plan: &Plan,
    wanted: impl Fn(&Job) -> bool,
) -> Result<BTreeMap<String, GuideData>, Vec<Diagnostic>> {
    let slugs: BTreeSet<&str> = plan
        .jobs
        .iter()
        .filter(|j| wanted(j))
        .filter_map(|j| match j.kind {
            JobKind::Page(i) => Some(plan.sources[i].src.slug.as_str()),
            _ => None,
        })
        .filter(|slug| plan.data.contains_key(*slug))
        .collect();
    // The first page of each guide that carries the scenario.
    let mut with_scenario = BTreeMap::new();
    for s in plan
        .sources
        .iter()
        .filter(|s| s.summary.scenario_hash.is_some())
    {
        with_scenario.entry(s.src.slug.as_str()).or_insert(s);
    }
    let results: Vec<Result<(String, GuideData), Vec<Diagnostic>>> = slugs
        .par_iter()
        .map(|slug| {
            let source = with_scenario.get(slug).ok_or_else(Vec::new)?;
            let page = content::load(&source.src)?;
            compute_one(&page, &site.catalog).map(|d| (slug.to_string(), d))
        })
        .collect();
    let mut out = BTreeMap::new();
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok((slug, d)) => {
                out.insert(slug, d);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}
