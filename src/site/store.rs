//! What the previous build recorded, as the planner sees it. The manifest keeps its guides in
//! shards, each headed by what its guides contribute to the listings; only this module and the
//! manifest know that. The planner gets a [`Closed`] set of guides it need not plan (their
//! shard's recorded stamps all match what `stat` says now, or a watcher reported nothing there)
//! and asks this module what those guides contribute: page counts, listing and sitemap digests,
//! and the search index parts, which are split the same way so an edit re-indexes one part.

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;

use super::manifest::{
    feed_stamps, shard_of, Digest, GuideEntry, Hasher, JobEntry, Listing, Manifest, OnDisk,
    ShardContext, ShardHeader, SiteJob, StoredManifest, SHARDS,
};
use super::scan::{FolderMeta, Source};
use super::SiteContext;
use crate::content::GuideFolder;
use crate::estimate::ESTIMATOR_VERSION;

/// What the records were written against (site inputs, catalog, estimator, languages): records
/// written against anything else are not trusted.
pub(super) type Context = ShardContext;

/// The number of search index parts a language can have.
pub(super) const PARTS: usize = SHARDS;

/// The search index part (and manifest shard) holding guide `slug`.
pub(super) fn part_of(slug: &str) -> usize {
    shard_of(slug)
}

/// The guides left unplanned: those of the manifest shards known unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Closed([bool; SHARDS]);

impl Closed {
    /// Every guide planned.
    pub(super) fn none() -> Closed {
        Closed([false; SHARDS])
    }

    /// Closed exactly where `shards` says (tests).
    #[cfg(test)]
    pub(super) fn of(shards: [bool; SHARDS]) -> Closed {
        Closed(shards)
    }

    /// Every shard closed (tests).
    #[cfg(test)]
    pub(super) fn all() -> Closed {
        Closed([true; SHARDS])
    }

    /// Only shard `i` closed (tests).
    #[cfg(test)]
    pub(super) fn with_shard(i: usize) -> Closed {
        let mut c = Closed::none();
        c.0[i] = true;
        c
    }

    /// True when some guides are left unplanned.
    pub(super) fn any(&self) -> bool {
        self.0.contains(&true)
    }

    /// True when guide `slug` is left unplanned.
    pub(super) fn holds(&self, slug: &str) -> bool {
        self.0[shard_of(slug)]
    }

    /// The records of the guides not closed, decoded from `stored` (`None`: unreadable).
    pub(super) fn decode(&self, stored: &StoredManifest) -> Option<Manifest> {
        stored.decode(&self.0)
    }

    /// Takes the closed guides' entries out of a manifest kept in memory.
    pub(super) fn split_off(&self, manifest: &mut Manifest) -> BTreeMap<String, GuideEntry> {
        manifest.split_off_shards(&self.0)
    }

    /// The shards whose headers (written against `context`) recorded the very stamps `stat`
    /// gives now for their guide `folders`.
    pub(super) fn by_stamps(
        stored: &StoredManifest,
        folders: &[(GuideFolder, Option<FolderMeta>)],
        context: &Context,
    ) -> Closed {
        let mut closed = Closed::none();
        let observed = observed_stamps(folders);
        for ((c, header), observed) in closed.0.iter_mut().zip(stored.headers()).zip(&observed) {
            *c = header.context == context.digest
                && header.stamps.is_some()
                && header.stamps == *observed;
        }
        closed
    }

    /// The shards of a manifest kept in memory (`on_disk`: what it was written as) that hold no
    /// guide a watcher reported `changed` and were written against `context`.
    pub(super) fn by_watcher(
        on_disk: &OnDisk,
        changed: &BTreeSet<&str>,
        context: &Context,
    ) -> Closed {
        let mut closed = Closed::none();
        for (i, h) in on_disk.headers().iter().enumerate().take(SHARDS) {
            closed.0[i] =
                h.context == context.digest && !changed.iter().any(|slug| shard_of(slug) == i);
        }
        closed
    }
}

/// What the closed guides' records say of them: the manifest's shard headers, when known.
#[derive(Debug, Clone, Copy)]
pub(super) struct Headers<'a>(pub(super) Option<&'a [ShardHeader]>);

/// The site-wide inputs the records are trusted against.
pub(super) fn context(site: &SiteContext) -> Context {
    let mut h = Hasher::new();
    h.digest(&site.inputs_hash)
        .digest(&site.catalog_hash)
        .part(ESTIMATOR_VERSION);
    for lang in &site.config.languages {
        h.part(lang);
    }
    ShardContext {
        digest: h.finish(),
        languages: site.config.languages.clone(),
        default_language: site.config.default_language.clone(),
    }
}

/// Per guide shard: the digest of its guides' slugs and what `stat` says of their folders and
/// pages (see [`feed_stamps`]), or `None` when a folder could not be statted.
fn observed_stamps(folders: &[(GuideFolder, Option<FolderMeta>)]) -> Vec<Option<Digest>> {
    let mut by_shard: Vec<Vec<&(GuideFolder, Option<FolderMeta>)>> = vec![Vec::new(); SHARDS];
    for f in folders {
        by_shard[shard_of(&f.0.name)].push(f);
    }
    by_shard
        .par_iter()
        .map(|guides| {
            let mut h = Hasher::new();
            let mut pages = Vec::new();
            for (folder, meta) in guides {
                let meta = meta.as_ref()?;
                pages.clear();
                pages.extend(meta.pages.iter().map(|p| p.map(|s| *s.fields())));
                pages.push(meta.records.map(|s| *s.fields()));
                feed_stamps(&mut h, &folder.name, meta.folder?.fields(), &pages);
            }
            Some(h.finish())
        })
        .collect()
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

/// True when shards are `closed` but a job that reads their pages must render (its inputs differ
/// from those `recorded`): an index or the sitemap, which list every page, or a closed shard's
/// search part (its inputs changed with nothing in the shard changing). Such a plan is made
/// again with every shard open. (Shards are only closed without `--force` or output checks, so
/// changed inputs are what renders.)
pub(super) fn needs_closed_guides(
    langs: &[String],
    inputs: &SiteInputs,
    closed: &Closed,
    recorded: &BTreeMap<SiteJob, JobEntry>,
) -> bool {
    if !closed.any() {
        return false;
    }
    let indexes =
        (langs.iter().map(|l| SiteJob::Index(l.clone()))).zip(inputs.indexes.iter().copied());
    let searches = langs
        .iter()
        .zip(&inputs.search.digests)
        .flat_map(|(l, parts)| {
            (parts.iter().enumerate())
                .filter(|&(i, _)| closed.0[i])
                .map(move |(i, d)| (SiteJob::Search(l.clone(), i), *d))
        });
    let mut listings = indexes
        .chain([(SiteJob::Sitemap, inputs.sitemap)])
        .chain(searches);
    listings.any(|(job, inputs)| recorded.get(&job).is_none_or(|j| j.inputs != inputs))
}

/// Per language: the pages of the guides in `closed` shards, from their headers.
pub(super) fn closed_page_counts(
    headers: Headers<'_>,
    closed: &Closed,
    languages: usize,
) -> Vec<usize> {
    let mut counts = vec![0; languages];
    for (h, _) in (headers.0)
        .unwrap_or_default()
        .iter()
        .zip(&closed.0)
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
/// shard's part comes from its header. The search parts also show the figures the pages
/// compute, which change with `figures` ([`figures_digest`]) and each page's scenario (in its
/// bytes).
pub(super) fn listing_inputs<'a>(
    pages: impl Iterator<Item = (&'a Source, &'a str, Option<&'a Digest>)>,
    closed: &Closed,
    headers: Headers<'_>,
    langs: &[String],
    (site_hash, figures): (&Digest, &Digest),
) -> SiteInputs {
    let mut present = vec![vec![false; SHARDS]; langs.len()];
    let mut listings: Vec<Option<Listing>> = (closed.0)
        .iter()
        .map(|&c| (!c).then(|| Listing::new(langs.len())))
        .collect();
    for (s, guide_langs, notices) in pages {
        let shard = shard_of(&s.src.slug);
        if let Some(listing) = &mut listings[shard] {
            let at = langs.iter().position(|l| *l == s.src.lang);
            listing.page(at, &s.listed(), guide_langs, notices);
            listing.text(at, &s.src.slug, &s.hash, notices);
            if let Some(k) = at {
                present[k][shard] = true;
            }
        }
    }
    // A closed shard's part comes from its header.
    let header = |i: usize| headers.0.and_then(|h| h.get(i));
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
        .filter(|&i| closed.0[i])
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
        search: search_inputs(
            &searched,
            present,
            &Hasher::new().digest(site_hash).digest(figures).finish(),
        ),
    }
}

/// What a guide's computed figures depend on besides its scenario: the GPU catalog and the
/// estimator.
pub(super) fn figures_digest(site: &SiteContext) -> Digest {
    let mut h = Hasher::new();
    h.digest(&site.catalog_hash).part(ESTIMATOR_VERSION);
    h.finish()
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

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
