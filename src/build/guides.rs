//! A guide's computed data (one estimate per guide, shared by its translations) and the parts of
//! its front matter that describe it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

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

/// Each guide's computed data for the pages a build renders: made when the guide's first page
/// needs it and freed once its last page has rendered, so memory holds the estimates of the
/// guides being rendered, not the whole site's (pages are rendered guide by guide).
pub(crate) struct GuideDataStore {
    slots: HashMap<String, Slot>,
}

/// One guide's data and how many of its pages have yet to use it.
struct Slot {
    state: Mutex<SlotState>,
    pages_left: AtomicUsize,
}

enum SlotState {
    NotYet,
    Ready(Arc<GuideData>),
    /// Computing it failed; the first page that asked reported why.
    Failed,
    /// Every page used it.
    Freed,
}

impl GuideDataStore {
    /// A store for the page jobs `wanted` selects whose guide has a scenario.
    pub(crate) fn new(plan: &Plan, wanted: impl Fn(&Job) -> bool) -> GuideDataStore {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for job in plan.jobs.iter().filter(|j| wanted(j)) {
            if let JobKind::Page(i) = job.kind {
                let slug = plan.sources[i].src.slug.as_str();
                if plan.data.contains_key(slug) {
                    *counts.entry(slug).or_default() += 1;
                }
            }
        }
        let slots = counts
            .into_iter()
            .map(|(slug, n)| {
                let slot = Slot {
                    state: Mutex::new(SlotState::NotYet),
                    pages_left: AtomicUsize::new(n),
                };
                (slug.to_string(), slot)
            })
            .collect();
        GuideDataStore { slots }
    }

    /// The data of the guide of page `page` (an index into the plan's sources; `None` without a
    /// scenario), computed by the first of its pages that asks while the others wait for it. An
    /// error goes to that first page only.
    pub(crate) fn get(
        &self,
        site: &SiteContext,
        plan: &Plan,
        page: usize,
    ) -> Result<Option<Arc<GuideData>>, Vec<Diagnostic>> {
        let slug = plan.sources[page].src.slug.as_str();
        let Some(slot) = self.slots.get(slug) else {
            return Ok(None);
        };
        let mut state = slot.state.lock().unwrap_or_else(PoisonError::into_inner);
        match &*state {
            SlotState::Ready(data) => return Ok(Some(data.clone())),
            SlotState::Failed => return Err(Vec::new()),
            SlotState::NotYet | SlotState::Freed => {}
        }
        // A guide's pages are adjacent in the plan: its first page with a scenario is near.
        let same = |s: &&super::plan::Source| s.src.slug == slug;
        let first = page - plan.sources[..page].iter().rev().take_while(same).count();
        let source = plan.sources[first..]
            .iter()
            .take_while(same)
            .find(|s| s.summary.scenario_hash.is_some());
        let computed = match source {
            Some(s) => content::load(&s.src).and_then(|p| compute_one(&p, &site.catalog)),
            None => return Ok(None),
        };
        match computed {
            Ok(data) => {
                let data = Arc::new(data);
                *state = SlotState::Ready(data.clone());
                Ok(Some(data))
            }
            Err(e) => {
                *state = SlotState::Failed;
                Err(e)
            }
        }
    }

    /// Records that a page of guide `slug` is done with its data; the last one frees it.
    pub(crate) fn done(&self, slug: &str) {
        if let Some(slot) = self.slots.get(slug) {
            if slot.pages_left.fetch_sub(1, Ordering::AcqRel) == 1 {
                let mut state = slot.state.lock().unwrap_or_else(PoisonError::into_inner);
                if matches!(*state, SlotState::Ready(_)) {
                    *state = SlotState::Freed;
                }
            }
        }
    }
}
