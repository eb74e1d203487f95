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
mod tests {
    use super::*;
    use crate::site::manifest::{
        hash, GuideEntry, Manifest, PageEntry, ShardContext, SourceEntry, Summary,
    };
    use std::sync::Arc;

    fn entry(inputs: &[u8], files: &[&str]) -> JobEntry {
        JobEntry {
            inputs: hash(inputs),
            files: files.iter().map(|f| (f.to_string(), hash(b""))).collect(),
        }
    }

    #[test]
    fn a_job_renders_when_its_inputs_differ_or_a_checked_output_is_missing() {
        let out = tempfile::tempdir().unwrap();
        std::fs::write(out.path().join("there.html"), "").unwrap();
        let build = Diff {
            out: out.path(),
            verify_outputs: false,
        };
        let check = Diff {
            verify_outputs: true,
            ..build
        };
        let there = entry(b"a", &["there.html"]);
        let gone = entry(b"a", &["gone.html"]);
        assert!(build.needs_render(None, &hash(b"a"), ""));
        assert!(build.needs_render(Some(&there), &hash(b"b"), ""));
        assert!(!build.needs_render(Some(&there), &hash(b"a"), ""));
        assert!(!build.needs_render(Some(&gone), &hash(b"a"), ""));
        assert!(!check.needs_render(Some(&there), &hash(b"a"), ""));
        assert!(check.needs_render(Some(&gone), &hash(b"a"), ""));
    }

    #[test]
    fn site_jobs_come_in_a_fixed_order_and_take_their_previous_entries() {
        let langs = ["en".to_string(), "zh".to_string()];
        let inputs = SiteInputs {
            site: hash(b"site"),
            indexes: vec![hash(b"en"), hash(b"zh")],
            sitemap: hash(b"map"),
            search: SearchInputs {
                digests: vec![vec![hash(b"en 00")], Vec::new()],
                present: vec![vec![true], Vec::new()],
            },
        };
        let plain = Hasher::new().digest(&hash(b"site")).finish();
        let mut previous = BTreeMap::from([
            (
                SiteJob::Root,
                JobEntry {
                    inputs: plain,
                    files: Vec::new(),
                },
            ),
            (SiteJob::Index("fr".into()), entry(b"fr", &[])),
        ]);
        let out = tempfile::tempdir().unwrap();
        let diff = Diff {
            out: out.path(),
            verify_outputs: false,
        };
        let jobs = site_jobs(&langs, inputs, &mut previous, &diff);
        let kinds: Vec<String> = jobs
            .iter()
            .map(|j| match &j.kind {
                JobKind::Site(s) => format!("{s}:{}", j.render),
                JobKind::Page(_) => unreachable!(),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "index:en:true",
                "index:zh:true",
                "root:false",
                "sitemap:true",
                "style:true",
                "search:en:00:true"
            ]
        );
        assert_eq!(jobs[1].inputs, hash(b"zh"));
        // What is left is a job that no longer exists (a removed language).
        assert_eq!(
            previous.keys().collect::<Vec<_>>(),
            [&SiteJob::Index("fr".into())]
        );
    }

    #[test]
    fn closed_shards_are_opened_only_for_a_listing_or_a_closed_search_part_that_changed() {
        let langs = ["en".to_string()];
        let inputs = || SiteInputs {
            site: hash(b"site"),
            indexes: vec![hash(b"en")],
            sitemap: hash(b"map"),
            search: SearchInputs {
                digests: vec![vec![hash(b"part 0"), hash(b"part 1")]],
                present: vec![vec![true, true]],
            },
        };
        let entry = |d: Digest| JobEntry {
            inputs: d,
            files: Vec::new(),
        };
        let recorded = BTreeMap::from([
            (SiteJob::Index("en".into()), entry(hash(b"en"))),
            (SiteJob::Sitemap, entry(hash(b"map"))),
            (SiteJob::Search("en".into(), 0), entry(hash(b"part 0"))),
            (SiteJob::Search("en".into(), 1), entry(hash(b"part 1"))),
        ]);
        let mut closed = [false; SHARDS];
        let mut changed = inputs();
        changed.indexes[0] = hash(b"renamed");
        assert!(!needs_closed_shards(&langs, &changed, &closed, &recorded));
        closed[1] = true;
        assert!(!needs_closed_shards(&langs, &inputs(), &closed, &recorded));
        assert!(needs_closed_shards(&langs, &changed, &closed, &recorded));
        // Shard 0 is open: its search part renders from its own pages.
        let mut part0 = inputs();
        part0.search.digests[0][0] = hash(b"edited");
        assert!(!needs_closed_shards(&langs, &part0, &closed, &recorded));
        let mut part1 = inputs();
        part1.search.digests[0][1] = hash(b"edited");
        assert!(needs_closed_shards(&langs, &part1, &closed, &recorded));
    }

    #[test]
    fn neighbours_follow_each_languages_index_or_what_was_recorded() {
        let dir: Arc<Path> = Arc::from(Path::new("/nowhere"));
        let source = |slug: &str, lang: &str, date: Option<&str>| Source {
            src: content::page_source(slug, lang, &dir),
            hash: hash(slug.as_bytes()),
            summary: Summary {
                title: format!("{slug} {lang}"),
                date: date.map(String::from),
                description: None,
                updated: None,
                scenario_hash: None,
                uses_catalog: false,
            },
            stamp: None,
        };
        // Sorted by guide then language, as the scan gives them.
        let sources = vec![
            source("a", "en", None),
            source("a", "es", None),
            source("b", "en", Some("2026-01-01")),
            source("c", "en", Some("2026-05-01")),
            source("c", "es", Some("2026-05-01")),
        ];
        let link = |slug: &str, lang: &str| {
            Some(NavLink {
                slug: slug.into(),
                title: format!("{slug} {lang}"),
            })
        };
        let open = neighbours(&sources, &mut vec![None; 5], &[false; SHARDS]).unwrap();
        // en: c (newest), b, a (undated); es: c, a.
        assert_eq!(
            (&open[3].previous, &open[3].next),
            (&None, &link("b", "en"))
        );
        assert_eq!(
            (&open[2].previous, &open[2].next),
            (&link("c", "en"), &link("a", "en"))
        );
        assert_eq!(
            (&open[0].previous, &open[0].next),
            (&link("b", "en"), &None)
        );
        assert_eq!(
            (&open[4].previous, &open[4].next),
            (&None, &link("a", "es"))
        );
        assert_eq!(
            (&open[1].previous, &open[1].next),
            (&link("c", "es"), &None)
        );
        // With a shard closed, the recorded ones are taken, and none recorded means opening all.
        let mut closed = [false; SHARDS];
        closed[7] = true;
        let mut recorded: Vec<_> = open.iter().cloned().map(Some).collect();
        assert_eq!(neighbours(&sources, &mut recorded, &closed), Some(open));
        let mut missing = vec![Some(Neighbours::default()); 4];
        missing.push(None);
        assert_eq!(neighbours(&sources, &mut missing, &closed), None);
    }

    #[test]
    fn closed_shards_list_their_pages_through_their_headers_exactly_as_open_ones() {
        let langs = vec!["en".to_string(), "es".to_string()];
        let summary = |slug: &str, lang: &str| Summary {
            title: format!("{slug} {lang}"),
            date: Some("2026-01-02".into()),
            description: (lang == "en").then(|| "about".into()),
            updated: None,
            scenario_hash: None,
            uses_catalog: false,
        };
        let slugs = ["alpha", "beta", "gamma", "delta"];
        let mut guides = BTreeMap::new();
        let mut sources = Vec::new();
        let dir: Arc<Path> = Arc::from(Path::new("/nowhere"));
        for slug in slugs {
            // `delta` has no Spanish page.
            let page_langs: &[&str] = if slug == "delta" {
                &["en"]
            } else {
                &["en", "es"]
            };
            let mut pages = Vec::new();
            for lang in page_langs {
                let source = SourceEntry {
                    hash: hash(slug.as_bytes()),
                    stamp: None,
                    summary: summary(slug, lang),
                };
                pages.push((
                    lang.to_string(),
                    PageEntry {
                        source,
                        output: None,
                        neighbours: None,
                    },
                ));
                sources.push(Source {
                    src: content::page_source(slug, lang, &dir),
                    hash: hash(slug.as_bytes()),
                    summary: summary(slug, lang),
                    stamp: None,
                });
            }
            let guide = GuideEntry {
                folder: None,
                pages,
                data: None,
            };
            guides.insert(slug.to_string(), guide);
        }
        sources.sort_by(|a, b| (&a.src.slug, &a.src.lang).cmp(&(&b.src.slug, &b.src.lang)));
        let context = ShardContext {
            digest: hash(b"context"),
            languages: langs.clone(),
        };
        let mut manifest = Manifest::new(guides, BTreeMap::new()).with_context(context);
        manifest.changed_shards();
        let headers = manifest.stored().unwrap().headers().to_vec();
        let langs_of = |slug: &str| if slug == "delta" { "en" } else { "en,es" };
        let pages = || sources.iter().map(|s| (s, langs_of(&s.src.slug)));
        let site = hash(b"site");
        let open = listing_inputs(pages(), &[false; SHARDS], None, &langs, &site);
        let closed = listing_inputs(pages(), &[true; SHARDS], Some(&headers), &langs, &site);
        assert_eq!(open, closed);
        // Half open, half from headers: the same again.
        let mut half = [false; SHARDS];
        half[shard_of("alpha")] = true;
        let mixed = listing_inputs(pages(), &half, Some(&headers), &langs, &site);
        assert_eq!(open, mixed);
        // And a title change shows.
        let mut renamed = sources.clone();
        renamed[0].summary.title = "Renamed".into();
        let pages = renamed.iter().map(|s| (s, langs_of(&s.src.slug)));
        let changed = listing_inputs(pages, &[false; SHARDS], None, &langs, &site);
        assert_ne!(open.indexes[0], changed.indexes[0]);
        assert_ne!(open.sitemap, changed.sitemap);
        // The search parts hash the pages' bytes (unchanged here), not their summaries.
        assert_eq!(open.search, changed.search);
        // So does a description that goes, even to an empty one.
        let mut blank = sources.clone();
        blank[0].summary.description = Some(String::new());
        let pages = blank.iter().map(|s| (s, langs_of(&s.src.slug)));
        let blanked = listing_inputs(pages, &[false; SHARDS], None, &langs, &site);
        assert_ne!(open.indexes[0], blanked.indexes[0]);
        blank[0].summary.description = None;
        let pages = blank.iter().map(|s| (s, langs_of(&s.src.slug)));
        assert_ne!(
            blanked,
            listing_inputs(pages, &[false; SHARDS], None, &langs, &site)
        );
    }
}
