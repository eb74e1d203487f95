//! The jobs and diff stages of a plan: every output job with the digest of its inputs (a page's
//! source, languages and computed data; an index's or the sitemap's listing of every page), and
//! whether that differs from what the previous build recorded for it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rayon::prelude::*;

use super::manifest::{
    shard_of, DataEntry, Digest, Hasher, JobEntry, Listing, NavLink, Neighbours, ShardHeader,
    SiteJob, SHARDS,
};
use super::model::page_prefix;
use super::scan::Scanned;
use super::scan::Source;
use super::SiteContext;
use crate::content;
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
/// some page's cannot be known: shards are `closed` (only the open shards' pages are in
/// `sources`) and a page has none recorded. With shards closed the listings are unchanged (else
/// every shard is opened), so the recorded neighbours are still right.
pub(super) fn neighbours(
    sources: &[Source],
    recorded: &mut [Option<Neighbours>],
    closed: &[bool; SHARDS],
) -> Option<Vec<Neighbours>> {
    if closed.contains(&true) {
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

/// What the site-wide jobs' input digests are made of.
#[derive(Debug, PartialEq)]
pub(super) struct SiteInputs {
    /// The site's own inputs (configuration, templates, locales).
    pub(super) site: Digest,
    /// Per language in site order: what its index lists (see [`listing_inputs`]).
    pub(super) indexes: Vec<Digest>,
    /// What the sitemap lists.
    pub(super) sitemap: Digest,
    /// What the search index parts read.
    pub(super) search: SearchInputs,
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

/// True when shards are `closed` but a job that reads their pages must render (its inputs differ
/// from those `recorded`): an index or the sitemap, which list every page, or a closed shard's
/// search part (its inputs changed with nothing in the shard changing). Such a plan is made
/// again with every shard open. (Shards are only closed without `--force` or output checks, so
/// changed inputs are what renders.)
pub(super) fn needs_closed_shards(
    langs: &[String],
    inputs: &SiteInputs,
    closed: &[bool; SHARDS],
    recorded: &BTreeMap<SiteJob, JobEntry>,
) -> bool {
    if !closed.contains(&true) {
        return false;
    }
    let indexes =
        (langs.iter().map(|l| SiteJob::Index(l.clone()))).zip(inputs.indexes.iter().copied());
    let searches = langs
        .iter()
        .zip(&inputs.search.digests)
        .flat_map(|(l, parts)| {
            (parts.iter().enumerate())
                .filter(|&(i, _)| closed[i])
                .map(move |(i, d)| (SiteJob::Search(l.clone(), i), *d))
        });
    let mut listings = indexes
        .chain([(SiteJob::Sitemap, inputs.sitemap)])
        .chain(searches);
    listings.any(|(job, inputs)| recorded.get(&job).is_none_or(|j| j.inputs != inputs))
}

/// Per language: the pages of the guides in `closed` shards, from their headers.
pub(super) fn closed_page_counts(
    headers: Option<&[ShardHeader]>,
    closed: &[bool; SHARDS],
    languages: usize,
) -> Vec<usize> {
    let mut counts = vec![0; languages];
    for (h, _) in headers
        .unwrap_or_default()
        .iter()
        .zip(closed)
        .filter(|(_, &c)| c)
    {
        for (n, &pages) in counts.iter_mut().zip(&h.pages) {
            *n += pages as usize;
        }
    }
    counts
}

/// The inputs of each language's index (in site order), of the sitemap and of each language's
/// search index parts (per shard): what they show of every page, hashed shard by shard. `pages`
/// (source and its guide's languages, sorted by guide) are those of the open shards; a closed
/// shard's part comes from its header.
pub(super) fn listing_inputs<'a>(
    pages: impl Iterator<Item = (&'a Source, &'a str)>,
    closed: &[bool; SHARDS],
    headers: Option<&[ShardHeader]>,
    langs: &[String],
    site_hash: &Digest,
) -> SiteInputs {
    let mut present = vec![vec![false; SHARDS]; langs.len()];
    let mut listings: Vec<Option<Listing>> = closed
        .iter()
        .map(|&c| (!c).then(|| Listing::new(langs.len())))
        .collect();
    for (s, guide_langs) in pages {
        let shard = shard_of(&s.src.slug);
        if let Some(listing) = &mut listings[shard] {
            let at = langs.iter().position(|l| *l == s.src.lang);
            listing.page(at, &s.listed(), guide_langs);
            listing.text(at, &s.src.slug, &s.hash);
            if let Some(k) = at {
                present[k][shard] = true;
            }
        }
    }
    // A closed shard's part comes from its header.
    let header = |i: usize| headers.and_then(|h| h.get(i));
    let parts: Vec<(Vec<Digest>, Digest, Vec<Digest>)> = (listings.par_iter().enumerate())
        .map(|(i, listing)| match (listing, header(i)) {
            (Some(l), _) => {
                let (listed, mapped) = l.finish();
                (listed, mapped, l.searched())
            }
            (None, Some(h)) => (h.listed.clone(), h.mapped, h.searched.clone()),
            (None, None) => {
                let empty = Listing::new(langs.len());
                let (listed, mapped) = empty.finish();
                (listed, mapped, empty.searched())
            }
        })
        .collect();
    for (i, h) in (0..SHARDS)
        .filter(|&i| closed[i])
        .filter_map(|i| Some((i, header(i)?)))
    {
        for (k, present) in present.iter_mut().enumerate() {
            present[i] = h.pages.get(k).is_some_and(|&n| n > 0);
        }
    }
    let index = (0..langs.len())
        .map(|k| {
            let mut h = Hasher::new();
            h.digest(site_hash);
            for (listed, _, _) in &parts {
                h.digest(&listed.get(k).copied().unwrap_or_default());
            }
            h.finish()
        })
        .collect();
    let mut sitemap = Hasher::new();
    sitemap.digest(site_hash);
    for (_, mapped, _) in &parts {
        sitemap.digest(mapped);
    }
    let searched: Vec<&[Digest]> = parts.iter().map(|(_, _, s)| s.as_slice()).collect();
    SiteInputs {
        site: *site_hash,
        indexes: index,
        sitemap: sitemap.finish(),
        search: search_inputs(&searched, present, site_hash),
    }
}

/// Per language, per shard: the inputs of its search index part (what the part reads of its
/// shard's pages, `searched[shard][language]`; part 0 also lists which parts exist).
fn search_inputs(
    searched: &[&[Digest]],
    present: Vec<Vec<bool>>,
    site_hash: &Digest,
) -> SearchInputs {
    let digests = (present.iter().enumerate())
        .map(|(k, present_k)| {
            (searched.iter().enumerate())
                .map(|(i, part)| {
                    let mut h = Hasher::new();
                    h.digest(site_hash)
                        .digest(&part.get(k).copied().unwrap_or_default());
                    if i == 0 {
                        for &p in present_k {
                            h.part(if p { "1" } else { "0" });
                        }
                    }
                    h.finish()
                })
                .collect()
        })
        .collect();
    SearchInputs { digests, present }
}

/// What the search index parts are built from: per language (in site order), per shard.
#[derive(Debug, PartialEq)]
pub(super) struct SearchInputs {
    /// Each part's inputs digest.
    pub(super) digests: Vec<Vec<Digest>>,
    /// Whether the part exists (the shard has pages in the language).
    pub(super) present: Vec<Vec<bool>>,
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
            let entry = content::load(&s.src)
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
