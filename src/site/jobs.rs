//! The jobs and diff stages of a plan: every output job with the digest of its inputs (a page's
//! source, languages and computed data; an index's or the sitemap's listing of every page), and
//! whether that differs from what the previous build recorded for it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rayon::prelude::*;

use super::manifest::{DataEntry, Digest, Hasher, JobEntry, NavLink, Neighbours, SiteJob};
use super::model::page_prefix;
use super::scan::Scanned;
use super::scan::Source;
use super::store::{Closed, SiteInputs};
use super::SiteContext;
use crate::diagnostics::Diagnostic;
use crate::estimate::ESTIMATOR_VERSION;
use crate::expand::GuideData;

/// An output job, whether it must be rendered, and what the previous build recorded for it.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub(crate) kind: JobKind,
    pub(crate) inputs: Digest,
    pub(crate) render: bool,
    pub(crate) previous: Option<JobEntry>,
}

/// What a job renders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JobKind {
    /// A guide page (HTML, Markdown edition, charts); the index into `Plan::sources`.
    Page(usize),
    /// A site-wide job.
    Site(SiteJob),
}

/// How a job's inputs are compared with what the previous build recorded for it (see
/// [`super::request::Purpose`]).
pub(super) struct Diff<'a> {
    pub(super) out: &'a Path,
    pub(super) verify_outputs: bool,
}

impl Diff<'_> {
    /// True when a job with `inputs` must render: nothing recorded, other inputs recorded, or
    /// (verifying outputs) a recorded file missing under `prefix`.
    pub(super) fn needs_render(
        &self,
        before: Option<&JobEntry>,
        inputs: &Digest,
        prefix: &str,
    ) -> bool {
        before.is_none_or(|j| {
            j.inputs != *inputs
                || (self.verify_outputs
                    && !j
                        .paths()
                        .all(|f| self.out.join(format!("{prefix}{f}")).exists()))
        })
    }
}

/// Per page, in parallel (in the order of `scanned.sources`): its job and input digest (the
/// site's inputs, the source's bytes, its guide's languages, its `neighbours` (indexed like the
/// sources) and computed data, and the catalog when the page reads it), carrying its entry in
/// `previous` (indexed like the sources).
pub(super) fn page_jobs(
    site: &SiteContext,
    scanned: &Scanned,
    previous: Vec<Option<JobEntry>>,
    neighbours: &[Neighbours],
    data: &BTreeMap<String, DataEntry>,
    diff: &Diff<'_>,
) -> Vec<Job> {
    (scanned.sources.par_iter())
        .zip(previous)
        .enumerate()
        .map(|(i, (s, previous))| {
            let mut h = Hasher::new();
            h.digest(&site.inputs_hash)
                .digest(&s.hash)
                .part(scanned.langs_of(i));
            for link in [&neighbours[i].previous, &neighbours[i].next] {
                match link {
                    Some(l) => h.part(&l.slug).part(&l.title),
                    None => h.part(""),
                };
            }
            if let Some(d) = data.get(&s.src.slug) {
                h.digest(&d.data);
            }
            if s.summary.uses_catalog {
                h.digest(&site.catalog_hash);
            }
            // A translation's notices: only pages whose notices change render again.
            if let Some(d) = scanned.notices[i]
                .as_ref()
                .and_then(|n| n.rendered_digest())
            {
                h.digest(d);
            }
            let inputs = h.finish();
            let prefix = if diff.verify_outputs {
                page_prefix(&s.src.lang, &s.src.slug)
            } else {
                String::new()
            };
            Job {
                render: diff.needs_render(previous.as_ref(), &inputs, &prefix),
                kind: JobKind::Page(i),
                inputs,
                previous,
            }
        })
        .collect()
}

/// Each page's neighbours in its language's index (indexed like `sources`), or `None` when
/// some page's cannot be known: guides are `closed` (only the others' pages are in `sources`)
/// and a page has none recorded. With guides closed the listings are unchanged (else every
/// guide is planned), so the recorded neighbours are still right.
pub(super) fn neighbours(
    sources: &[Source],
    recorded: &mut [Option<Neighbours>],
    closed: &Closed,
) -> Option<Vec<Neighbours>> {
    if closed.any() {
        return recorded.iter_mut().map(Option::take).collect();
    }
    let mut order: Vec<usize> = (0..sources.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&sources[a], &sources[b]);
        (a.src.lang.cmp(&b.src.lang)).then(a.listed().index_order(&b.listed()))
    });
    let link = |i: usize| NavLink {
        slug: sources[i].src.slug.clone(),
        title: sources[i].summary.title.clone(),
    };
    let same_lang = |a: usize, b: usize| sources[a].src.lang == sources[b].src.lang;
    let mut out = vec![Neighbours::default(); sources.len()];
    for (at, &i) in order.iter().enumerate() {
        let before = at.checked_sub(1).map(|p| order[p]);
        let after = order.get(at + 1).copied();
        out[i] = Neighbours {
            previous: before.filter(|&p| same_lang(p, i)).map(link),
            next: after.filter(|&n| same_lang(n, i)).map(link),
        };
    }
    Some(out)
}

/// The site-wide jobs, in a fixed order, each taking its entry out of `previous`.
pub(super) fn site_jobs(
    langs: &[String],
    inputs: SiteInputs,
    previous: &mut BTreeMap<SiteJob, JobEntry>,
    diff: &Diff<'_>,
) -> Vec<Job> {
    let plain = Hasher::new().digest(&inputs.site).finish();
    let indexes = langs.iter().zip(inputs.indexes);
    let search = langs
        .iter()
        .zip(inputs.search.digests)
        .flat_map(|(lang, parts)| {
            (parts.into_iter().enumerate()).map(|(i, d)| (SiteJob::Search(lang.clone(), i), d))
        });
    let wanted = (indexes.map(|(lang, d)| (SiteJob::Index(lang.clone()), d)))
        .chain([
            (SiteJob::Root, plain),
            (SiteJob::Sitemap, inputs.sitemap),
            (SiteJob::Style, plain),
        ])
        .chain(search);
    wanted
        .map(|(job, inputs)| {
            let previous = previous.remove(&job);
            Job {
                render: diff.needs_render(previous.as_ref(), &inputs, ""),
                kind: JobKind::Site(job),
                inputs,
                previous,
            }
        })
        .collect()
}

/// Hash of everything a guide's computed data depends on.
pub(super) fn data_inputs(site: &SiteContext, scenario_hash: &Digest) -> Digest {
    Hasher::new()
        .digest(scenario_hash)
        .digest(&site.catalog_hash)
        .part(ESTIMATOR_VERSION)
        .finish()
}

/// Each guide's data entry: reused when its inputs are unchanged, else computed now (so that a
/// catalog or estimator change rebuilds exactly the pages whose numbers changed). Guides whose
/// entry differs from the previous build's are added to `touched`. The data computed is
/// returned beside the entries.
pub(super) fn guide_data_entries(
    site: &SiteContext,
    sources: &[Source],
    previous: &BTreeMap<String, DataEntry>,
    touched: &mut BTreeSet<String>,
    errors: &mut Vec<Diagnostic>,
) -> (BTreeMap<String, DataEntry>, BTreeMap<String, GuideData>) {
    let mut firsts: BTreeMap<&str, (&Source, Digest)> = BTreeMap::new();
    for s in sources {
        if let Some(h) = s.summary.scenario_hash {
            firsts.entry(s.src.slug.as_str()).or_insert((s, h));
        }
    }
    for slug in previous.keys().filter(|s| !firsts.contains_key(s.as_str())) {
        touched.insert(slug.clone());
    }
    type Computed = Result<(DataEntry, Option<GuideData>), Vec<Diagnostic>>;
    let computed: Vec<(String, Computed)> = firsts
        .par_iter()
        .map(|(slug, (s, scenario_hash))| {
            let inputs = data_inputs(site, scenario_hash);
            if let Some(prev) = previous.get(*slug).filter(|d| d.inputs == inputs) {
                return (slug.to_string(), Ok((*prev, None)));
            }
            let entry = (s.page())
                .and_then(|p| super::guides::compute_one(&p, &site.catalog))
                .map(|d| {
                    let entry = DataEntry {
                        inputs,
                        data: super::guides::data_hash(&d),
                    };
                    (entry, Some(d))
                });
            (slug.to_string(), entry)
        })
        .collect();
    let mut out = BTreeMap::new();
    let mut datas = BTreeMap::new();
    for (slug, r) in computed {
        match r {
            Ok((e, d)) => {
                if previous.get(&slug) != Some(&e) {
                    touched.insert(slug.clone());
                }
                if let Some(d) = d {
                    datas.insert(slug.clone(), d);
                }
                out.insert(slug, e);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    (out, datas)
}

#[cfg(test)]
#[path = "jobs_tests.rs"]
mod tests;
