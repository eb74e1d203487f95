//! A guide's computed data (one estimate per guide, shared by its translations) and the parts of
//! its front matter that describe it.

use std::collections::BTreeMap;

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
    expand::guide_data(scenario, &page.front.variants, catalog).map_err(|e| {
        let line = e
            .line
            .unwrap_or_else(|| e.key.as_deref().map_or(line, |k| key_line(page, line, k)));
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
    h.part(serde_json::to_string(&d.estimate).unwrap_or_default());
    for v in &d.variants {
        h.part(&v.id);
        h.part(serde_json::to_string(&v.estimate).unwrap_or_default());
        for w in &v.what_if {
            h.part(serde_json::to_string(w).unwrap_or_default());
        }
    }
    for w in &d.what_if {
        h.part(serde_json::to_string(w).unwrap_or_default());
    }
    h.finish()
}

/// The (id, label) pairs of a page's variants, in its language.
pub(crate) fn variant_labels(p: &Page) -> Vec<(String, String)> {
    p.front
        .variants
        .iter()
        .map(|v| (v.id.clone(), v.label.clone()))
        .collect()
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

/// Each guide's computed data for the pages a build renders, by slug: the data the plan computed
/// (a guide whose scenario, catalog or estimator changed), and the data of the other guides with a
/// page to render (a page edited, a scenario unchanged), computed here once, in parallel.
pub(crate) struct GuideDatas<'a> {
    planned: &'a BTreeMap<String, GuideData>,
    extra: BTreeMap<String, GuideData>,
}

impl<'a> GuideDatas<'a> {
    /// The data of the guides of the page jobs `wanted` selects.
    pub(crate) fn new(
        site: &SiteContext,
        plan: &'a Plan,
        wanted: impl Fn(&Job) -> bool,
    ) -> Result<GuideDatas<'a>, Vec<Diagnostic>> {
        // Per guide still to compute: the first of its pages that has a scenario.
        let mut missing: BTreeMap<&str, usize> = BTreeMap::new();
        for job in plan.jobs.iter().filter(|j| wanted(j)) {
            if let JobKind::Page(i) = job.kind {
                let slug = plan.sources[i].src.slug.as_str();
                if plan.data.contains_key(slug) && !plan.computed.contains_key(slug) {
                    missing.entry(slug).or_insert(i);
                }
            }
        }
        type Computed = Result<Option<GuideData>, Vec<Diagnostic>>;
        let computed: Vec<(String, Computed)> = missing
            .into_par_iter()
            .map(|(slug, page)| {
                let same = |s: &&super::plan::Source| s.src.slug == slug;
                let first = page - plan.sources[..page].iter().rev().take_while(same).count();
                let source = plan.sources[first..]
                    .iter()
                    .take_while(same)
                    .find(|s| s.summary.scenario_hash.is_some());
                let data = source
                    .map(|s| content::load(&s.src).and_then(|p| compute_one(&p, &site.catalog)))
                    .transpose();
                (slug.to_owned(), data)
            })
            .collect();
        let mut extra = BTreeMap::new();
        let mut errors = Vec::new();
        for (slug, r) in computed {
            match r {
                Ok(Some(d)) => {
                    extra.insert(slug, d);
                }
                Ok(None) => {}
                Err(mut e) => errors.append(&mut e),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(GuideDatas {
            planned: &plan.computed,
            extra,
        })
    }

    /// The data of guide `slug`, if it has a scenario.
    pub(crate) fn get(&self, slug: &str) -> Option<&GuideData> {
        self.planned.get(slug).or_else(|| self.extra.get(slug))
    }
}
