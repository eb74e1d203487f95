//! Planning a build: read every source cheaply (stat first, hash only what changed, parse only
//! what hashes differently), check the guides, and list the output jobs with the hash of their
//! inputs, each carrying what the previous build recorded for it. The guides of a manifest shard
//! whose recorded stamps all match are not planned at all: the shard's header stands for them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;

use super::manifest::{
    feed_stamps, hash, now_ns, shard_of, sort_in_site_order, DataEntry, Digest, FileStat,
    GuideEntry, Hasher, JobEntry, Listing, Manifest, OnDisk, PageEntry, ShardContext, ShardHeader,
    SourceEntry, Stamp, StoredManifest, Summary, SHARDS,
};
use super::SiteContext;
use crate::config::SiteConfig;
use crate::content::{self, GuideFolder, Page, PageSource};
use crate::diagnostics::Diagnostic;
use crate::estimate::ESTIMATOR_VERSION;
use crate::expand::GuideData;

/// One source page as the plan knows it.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub(crate) src: PageSource,
    pub(crate) hash: Digest,
    pub(crate) summary: Summary,
    /// The file's stamp, unless too recent to trust.
    pub(crate) stamp: Option<Stamp>,
}

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
    /// A language's index.
    Index(String),
    /// The language chooser.
    Root,
    /// `sitemap.xml`.
    Sitemap,
    /// `style.css`.
    Style,
    /// The part of a language's search index holding the guides of one manifest shard
    /// (`<lang>/search/<shard>.js`), so an edit re-indexes only the guides of its shard.
    Search(String, usize),
}

/// Outputs of the previous build whose job no longer exists (a deleted page or language).
#[derive(Debug, Clone)]
pub(crate) struct Removed {
    /// The job's id (`page:<lang>/<slug>`, `index:<lang>`).
    pub(crate) id: String,
    /// The folder its file names are relative to (`<lang>/<slug>/`, or empty).
    pub(crate) prefix: String,
    pub(crate) entry: JobEntry,
}

/// Everything a build or a check needs to know before rendering.
pub(crate) struct Plan {
    /// Every page, sorted by guide then language.
    pub(crate) sources: Vec<Source>,
    /// Languages each guide exists in, in site order.
    pub(crate) guides: BTreeMap<String, Vec<String>>,
    /// Per guide: its folder's stamp, unless too recent to trust.
    pub(crate) folders: BTreeMap<String, Option<Stamp>>,
    /// Per guide with a scenario: its data entry (inputs and data hashes).
    pub(crate) data: BTreeMap<String, DataEntry>,
    /// The data of the guides whose entry was computed while planning (its inputs changed), kept
    /// for rendering so that no guide's data is computed twice in one build.
    pub(crate) computed: BTreeMap<String, GuideData>,
    /// The page jobs (in the order of `sources`), then the site-wide ones.
    pub(crate) jobs: Vec<Job>,
    /// What the previous build wrote that no job writes any more.
    pub(crate) removed: Vec<Removed>,
    /// True when the previous build left a manifest: an incremental build.
    pub(crate) incremental: bool,
    /// Guides whose manifest entry may differ from the previous build's (a file's stamp, a
    /// folder's listing, a guide's data, a deleted guide): the manifest is rewritten for them
    /// even if no job renders.
    pub(crate) touched: BTreeSet<String>,
    /// Per language (in site order): pages of guides in shards left closed (unchanged, not
    /// decoded, so not in `sources`).
    pub(crate) closed_pages: Vec<usize>,
    /// Per language (in site order), per shard: true when the shard has pages in that language
    /// (the search index parts that exist; part 0 lists them).
    pub(crate) search_parts: Vec<Vec<bool>>,
    /// The entries of guides in closed shards, when the previous manifest was in memory (`serve`):
    /// put back unchanged into the next manifest.
    kept: BTreeMap<String, GuideEntry>,
    /// What the manifest on disk holds (see [`Manifest::stored`]).
    stored: Option<OnDisk>,
    /// The site-wide inputs the manifest's shard headers are written against.
    context: ShardContext,
}

impl Plan {
    /// True when a manifest shard on disk must be rewritten although none of its guides changed
    /// (it was written against other site-wide inputs).
    pub(crate) fn has_stale_shards(&self) -> bool {
        let context = &self.context.digest;
        self.stored.as_ref().is_some_and(|d| d.any_stale(context))
    }

    /// Per shard, whether the language has a search index part there (see `search_parts`).
    pub(crate) fn search_parts_of(&self, lang: &str) -> Option<&[bool]> {
        let k = self.context.languages.iter().position(|l| l == lang)?;
        self.search_parts.get(k).map(Vec::as_slice)
    }

    /// A job's id, for messages: `page:<lang>/<slug>`, `index:<lang>`, `root`, `sitemap`, `style`,
    /// `search:<lang>:<shard>`.
    pub(crate) fn job_id(&self, job: &Job) -> String {
        match &job.kind {
            JobKind::Page(i) => {
                let s = &self.sources[*i].src;
                format!("page:{}/{}", s.lang, s.slug)
            }
            kind => site_job_id(kind),
        }
    }

    /// The folder a job's recorded file names are relative to: `<lang>/<slug>/` for a page,
    /// the output root (empty) for the others.
    pub(crate) fn job_prefix(&self, job: &Job) -> String {
        match &job.kind {
            JobKind::Page(i) => {
                let s = &self.sources[*i].src;
                page_prefix(&s.lang, &s.slug)
            }
            _ => String::new(),
        }
    }

    /// The manifest recording this plan's sources and, per job, the entry `rendered` gives it
    /// (indexed like `jobs`) or else its previous one.
    pub(crate) fn into_manifest(self, rendered: Vec<Option<JobEntry>>) -> Manifest {
        let mut touched = self.touched;
        for (job, new) in self.jobs.iter().zip(&rendered) {
            if let (JobKind::Page(i), Some(_)) = (&job.kind, new) {
                touched.insert(self.sources[*i].src.slug.clone());
            }
        }
        let mut outputs: Vec<Option<JobEntry>> = vec![None; self.sources.len()];
        let mut site_jobs = BTreeMap::new();
        for (job, new) in self.jobs.into_iter().zip(rendered) {
            let entry = new.or(job.previous);
            match job.kind {
                JobKind::Page(i) => outputs[i] = entry,
                kind => {
                    if let Some(entry) = entry {
                        site_jobs.insert(site_job_id(&kind), entry);
                    }
                }
            }
        }
        // Sources are sorted by guide like the folders: one walk, no lookups.
        let mut data = self.data;
        let mut pages = self.sources.into_iter().zip(outputs).peekable();
        let mut guides: BTreeMap<String, GuideEntry> = self
            .folders
            .into_iter()
            .map(|(slug, folder)| {
                let mut entries = Vec::new();
                while let Some((s, output)) = pages.next_if(|(s, _)| s.src.slug == slug) {
                    let source = SourceEntry {
                        hash: s.hash,
                        stamp: s.stamp,
                        summary: s.summary,
                    };
                    entries.push((s.src.lang, PageEntry { source, output }));
                }
                let data = data.remove(&slug);
                let entry = GuideEntry {
                    folder,
                    pages: entries,
                    data,
                };
                (slug, entry)
            })
            .collect();
        let mut kept = self.kept;
        guides.append(&mut kept);
        let mut manifest = Manifest::new(guides, site_jobs)
            .stored_as(self.stored)
            .with_context(self.context);
        manifest.touch(touched);
        manifest
    }
}

/// The id of a site-wide job.
fn site_job_id(kind: &JobKind) -> String {
    match kind {
        JobKind::Index(lang) => format!("index:{lang}"),
        JobKind::Root => "root".into(),
        JobKind::Sitemap => "sitemap".into(),
        JobKind::Style => "style".into(),
        JobKind::Search(lang, shard) => format!("search:{lang}:{shard:02x}"),
        JobKind::Page(_) => String::new(),
    }
}

/// The output folder of a page, with a trailing `/`.
fn page_prefix(lang: &str, slug: &str) -> String {
    format!("{lang}/{slug}/")
}

/// How a plan finds out which sources changed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scan<'a> {
    /// Stat every guide folder and page (a page is read only if its stamp changed).
    Everything,
    /// Only these paths (relative to the root, as a file watcher reported them) changed since the
    /// previous manifest was written: the other guides are taken from it without a system call.
    Only(&'a BTreeSet<PathBuf>),
}

/// The previous build, as a plan gets it.
pub(crate) enum Previous {
    /// None: a first build, `--force`, or an unreadable manifest.
    Nothing,
    /// Read from the output folder. Unless `decode_all` (the manifest is kept in memory after
    /// the build), a shard whose recorded stamps match what `stat` says now is left undecoded.
    Stored {
        manifest: StoredManifest,
        decode_all: bool,
    },
    /// Kept in memory by `serve` since its last build.
    Remembered(Manifest),
}

/// Plans a build of `root` against the `previous` build (`force` renders everything;
/// `verify_outputs` also re-renders jobs whose recorded files are missing from `out`).
pub(crate) fn plan(
    site: &SiteContext,
    root: &Path,
    out: &Path,
    previous: impl FnOnce() -> Previous + Send,
    force: bool,
    verify_outputs: bool,
    scan: Scan<'_>,
) -> Result<Plan, Vec<Diagnostic>> {
    let now = now_ns();
    let config = &site.config;
    let content_dir = ContentDir::open(root);
    let stat_all = || {
        content::guide_folders(root).map(|folders| {
            folders
                .into_par_iter()
                .map(|f| {
                    let meta = FolderMeta::of(&f, &content_dir, config);
                    (f, Some(meta))
                })
                .collect::<Vec<_>>()
        })
    };
    // Without a watcher's word, every folder and page is statted while the previous manifest is
    // read on another thread (the two together are most of a no-change build). With it (`serve`
    // remembers its manifest), only the guides it reported are looked at.
    let context = shard_context(site);
    let mut closed = [false; SHARDS];
    let (previous, folders, changed_guides) = match scan {
        Scan::Only(paths) => {
            let previous = previous();
            match (&previous, changed_guides(paths)) {
                (Previous::Remembered(m), Some(changed)) => {
                    // A shard holding no reported guide is unchanged: its entries stay as they are.
                    if let Some(on_disk) = m.stored() {
                        let unchanged = |i: usize, h: &ShardHeader| {
                            h.context == context.digest
                                && !changed.iter().any(|slug| shard_of(slug) == i)
                        };
                        for (i, h) in on_disk.headers().iter().enumerate().take(SHARDS) {
                            closed[i] = unchanged(i, h);
                        }
                    }
                    // Every known folder, closed shards' too: a second pass may need them.
                    let folders = known_folders(root, m.guides.keys(), &changed);
                    let folders = folders.into_iter().map(|f| (f, None)).collect();
                    (previous, Ok(folders), Some(changed))
                }
                _ => (previous, stat_all(), None),
            }
        }
        Scan::Everything => {
            let (previous, folders) = rayon::join(previous, stat_all);
            (previous, folders, None)
        }
    };
    let folders = folders.map_err(|e| vec![e])?;
    let (stored, remembered, decode_all) = match previous {
        Previous::Nothing => (None, None, true),
        Previous::Stored {
            manifest,
            decode_all,
        } => (Some(manifest), None, decode_all),
        Previous::Remembered(m) => (None, Some(m), true),
    };
    // A shard whose recorded stamps are what `stat` says now holds only unchanged guides.
    if let Some(stored) = stored.as_ref().filter(|_| !decode_all && !verify_outputs) {
        let observed = observed_stamps(&folders);
        for ((c, header), observed) in closed.iter_mut().zip(stored.headers()).zip(&observed) {
            *c = header.context == context.digest
                && header.stamps.is_some()
                && header.stamps == *observed;
        }
    }
    // A remembered manifest is split: the guides of unchanged shards are kept aside whole.
    let (mut remembered, mut kept) = match remembered {
        Some(mut m) => {
            let kept = m.split_off_shards(&closed);
            (Some(m), kept)
        }
        None => (None, BTreeMap::new()),
    };
    let remembered_headers = remembered.as_ref().and_then(Manifest::stored);
    let planner = Planner {
        site,
        out,
        content_dir: &content_dir,
        folders: &folders,
        changed_guides: changed_guides.as_ref(),
        force,
        verify_outputs,
        now,
        context: &context,
        headers: match (&stored, &remembered_headers) {
            (Some(s), _) => Some(s.headers()),
            (None, Some(on_disk)) => Some(on_disk.headers()),
            (None, None) => None,
        },
    };
    loop {
        let (manifest, incremental) = match (&stored, remembered.take()) {
            (Some(s), _) => match s.decode(&closed) {
                Some(m) => (m, true),
                None => (Manifest::default(), false),
            },
            (None, Some(m)) => {
                let incremental = !m.is_empty() || !kept.is_empty();
                (m, incremental)
            }
            (None, None) => (Manifest::default(), false),
        };
        // A corrupt shard: plan as a first build.
        if !incremental {
            closed = [false; SHARDS];
        }
        // A second pass of a remembered manifest needs its open part again.
        let again = (!kept.is_empty()).then(|| manifest.clone());
        match planner.pass(manifest, incremental, &closed)? {
            Some(mut plan) => {
                plan.kept = kept;
                return Ok(plan);
            }
            // An index or the sitemap must be rendered, which needs every page: open every
            // shard (decoded again from disk, or the kept guides put back).
            None => {
                closed = [false; SHARDS];
                if let Some(mut m) = again {
                    m.guides.append(&mut kept);
                    remembered = Some(m);
                }
            }
        }
    }
}

/// What every pass of a plan shares.
struct Planner<'a> {
    site: &'a SiteContext,
    out: &'a Path,
    content_dir: &'a ContentDir,
    folders: &'a [(GuideFolder, Option<FolderMeta>)],
    changed_guides: Option<&'a BTreeSet<&'a str>>,
    force: bool,
    verify_outputs: bool,
    now: u64,
    context: &'a ShardContext,
    /// The guide shards' headers, when known (for closed shards' counts and index digests).
    headers: Option<&'a [ShardHeader]>,
}

impl Planner<'_> {
    /// Plans the guides of the shards not `closed` against `previous` (their decoded entries).
    /// `None` when shards are closed but a site-wide job that lists every page must render.
    fn pass(
        &self,
        previous: Manifest,
        incremental: bool,
        closed: &[bool; SHARDS],
    ) -> Result<Option<Plan>, Vec<Diagnostic>> {
        let (site, config, now) = (self.site, &self.site.config, self.now);
        let stored = previous.stored();
        let Manifest {
            guides: mut previous_guides,
            site_jobs: mut previous_site_jobs,
            ..
        } = previous;
        // Each folder of an open shard takes its previous entry along (moved, not copied).
        let tasks: Vec<_> = self
            .folders
            .iter()
            .filter(|(f, _)| !closed[shard_of(&f.name)])
            .map(|(f, meta)| {
                let prev = previous_guides.remove(&f.name);
                let trusted = self
                    .changed_guides
                    .is_some_and(|c| !c.contains(f.name.as_str()));
                (f, meta.as_ref(), prev, trusted)
            })
            .collect();
        let mut touched = BTreeSet::new();
        let mut removed: Vec<Removed> = Vec::new();
        for (slug, guide) in previous_guides {
            removed.extend(removed_pages(&slug, guide.pages));
            touched.insert(slug);
        }
        let read: Vec<GuideRead> = tasks
            .into_par_iter()
            .map(|(folder, meta, prev, trusted)| match prev {
                Some(prev) if trusted => GuideRead::unchanged(folder, prev),
                prev => {
                    let fresh;
                    let meta = match meta {
                        Some(m) => m,
                        None => {
                            fresh = FolderMeta::of(folder, self.content_dir, config);
                            &fresh
                        }
                    };
                    read_guide(folder, meta, prev, config, now)
                }
            })
            .collect();
        let count = read.iter().map(|r| r.sources.len()).sum();
        let mut sources = Vec::with_capacity(count);
        let mut previous_outputs = Vec::with_capacity(count);
        // Per guide, its languages joined (which its page jobs hash); per source, its guide's index.
        let mut guide_langs: Vec<String> = Vec::new();
        let mut guide_of_source: Vec<usize> = Vec::with_capacity(count);
        let mut errors = Vec::new();
        let mut guides: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut folder_stamps = BTreeMap::new();
        let mut previous_data = BTreeMap::new();
        for mut r in read {
            if r.changed {
                touched.insert(r.slug.clone());
            }
            errors.append(&mut r.errors);
            removed.append(&mut r.removed);
            if r.sources.is_empty() {
                continue;
            }
            if let Some(d) = r.previous_data {
                previous_data.insert(r.slug.clone(), d);
            }
            let mut langs: Vec<String> = r.sources.iter().map(|s| s.src.lang.clone()).collect();
            sort_in_site_order(&mut langs, &config.languages);
            guide_of_source.extend(std::iter::repeat_n(guide_langs.len(), r.sources.len()));
            guide_langs.push(langs.join(","));
            guides.insert(r.slug.clone(), langs);
            folder_stamps.insert(r.slug, r.folder);
            sources.append(&mut r.sources);
            previous_outputs.append(&mut r.outputs);
        }
        let site_hash = site.inputs_hash;
        let langs = &config.languages;
        let langs_of = |i: usize| guide_langs[guide_of_source[i]].as_str();
        let (index_inputs, sitemap_inputs, search) = listing_inputs(
            sources.iter().enumerate().map(|(i, s)| (s, langs_of(i))),
            closed,
            self.headers,
            langs,
            &site_hash,
        );
        // An index or the sitemap that must render needs every page, closed shards' too: known
        // here, before any guide's data or page job is computed for nothing. (Shards are only
        // closed without `--force` or output checks, so changed inputs are what renders.)
        if closed.contains(&true) && errors.is_empty() {
            let differs = |kind: JobKind, inputs: &Digest| {
                previous_site_jobs
                    .get(&site_job_id(&kind))
                    .is_none_or(|j| j.inputs != *inputs)
            };
            let mut indexes = langs.iter().zip(&index_inputs);
            // A search part reads only its own shard's pages: it needs the others opened only
            // when its own shard is closed (its inputs changed with nothing in the shard changing).
            let mut searches = langs.iter().zip(&search.digests).flat_map(|(l, parts)| {
                parts
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| closed[i])
                    .map(move |(i, d)| (JobKind::Search(l.clone(), i), d))
            });
            if differs(JobKind::Sitemap, &sitemap_inputs)
                || indexes.any(|(l, inputs)| differs(JobKind::Index(l.clone()), inputs))
                || searches.any(|(kind, inputs)| differs(kind, inputs))
            {
                return Ok(None);
            }
        }
        let (data, computed) =
            guide_data_entries(site, &sources, &previous_data, &mut touched, &mut errors);
        if !errors.is_empty() {
            return Err(errors);
        }

        let (force, verify_outputs, out) = (self.force, self.verify_outputs, self.out);
        // A build trusts its manifest (a file deleted by hand comes back with `--force`); `check`
        // also verifies that every recorded output is still there.
        let needs_render = |before: Option<&JobEntry>, inputs: &Digest, prefix: &str| {
            force
                || before.is_none_or(|j| {
                    j.inputs != *inputs
                        || (verify_outputs
                            && !j.paths().all(|f| out.join(format!("{prefix}{f}")).exists()))
                })
        };
        // Per page, in parallel: its job, carrying its previous entry.
        let mut jobs: Vec<Job> = sources
            .par_iter()
            .zip(previous_outputs)
            .enumerate()
            .map(|(i, (s, previous))| {
                let mut h = Hasher::new();
                h.digest(&site_hash).digest(&s.hash).part(langs_of(i));
                if let Some(d) = data.get(&s.src.slug) {
                    h.digest(&d.data);
                }
                if s.summary.uses_catalog {
                    h.digest(&site.catalog_hash);
                }
                let inputs = h.finish();
                let prefix = if verify_outputs {
                    page_prefix(&s.src.lang, &s.src.slug)
                } else {
                    String::new()
                };
                Job {
                    render: needs_render(previous.as_ref(), &inputs, &prefix),
                    kind: JobKind::Page(i),
                    inputs,
                    previous,
                }
            })
            .collect();
        let mut site_job = |kind: JobKind, inputs: Digest| {
            let previous = previous_site_jobs.remove(&site_job_id(&kind));
            jobs.push(Job {
                render: needs_render(previous.as_ref(), &inputs, ""),
                kind,
                inputs,
                previous,
            });
        };
        for (lang, inputs) in langs.iter().zip(index_inputs) {
            site_job(JobKind::Index(lang.clone()), inputs);
        }
        site_job(JobKind::Root, Hasher::new().digest(&site_hash).finish());
        site_job(JobKind::Sitemap, sitemap_inputs);
        site_job(JobKind::Style, Hasher::new().digest(&site_hash).finish());
        for (lang, parts) in langs.iter().zip(search.digests) {
            for (shard, inputs) in parts.into_iter().enumerate() {
                site_job(JobKind::Search(lang.clone(), shard), inputs);
            }
        }
        for (id, entry) in previous_site_jobs {
            removed.push(Removed {
                id,
                prefix: String::new(),
                entry,
            });
        }
        let mut closed_pages = vec![0; langs.len()];
        if let Some(headers) = self.headers {
            for (h, _) in headers.iter().zip(closed).filter(|(_, &c)| c) {
                for (n, &pages) in closed_pages.iter_mut().zip(&h.pages) {
                    *n += pages as usize;
                }
            }
        }
        Ok(Some(Plan {
            sources,
            guides,
            folders: folder_stamps,
            data,
            computed,
            jobs,
            removed,
            incremental,
            touched,
            closed_pages,
            search_parts: search.present,
            kept: BTreeMap::new(),
            stored,
            context: self.context.clone(),
        }))
    }
}

/// The inputs of each language's index (in site order), of the sitemap and of each language's
/// search index parts (per shard): what they show of every page, hashed shard by shard. `pages`
/// (source and its guide's languages, sorted by guide) are those of the open shards; a closed
/// shard's part comes from its header.
fn listing_inputs<'a>(
    pages: impl Iterator<Item = (&'a Source, &'a str)>,
    closed: &[bool; SHARDS],
    headers: Option<&[ShardHeader]>,
    langs: &[String],
    site_hash: &Digest,
) -> (Vec<Digest>, Digest, SearchInputs) {
    let mut parts_present = vec![vec![false; SHARDS]; langs.len()];
    let mut listings: Vec<Option<Listing>> = closed
        .iter()
        .map(|&c| (!c).then(|| Listing::new(langs.len())))
        .collect();
    for (s, guide_langs) in pages {
        if let Some(listing) = &mut listings[shard_of(&s.src.slug)] {
            let at = langs.iter().position(|l| *l == s.src.lang);
            listing.page(at, &s.src.slug, &s.src.lang, &s.summary, guide_langs);
            listing.text(at, &s.src.slug, &s.hash);
            if let Some(k) = at {
                parts_present[k][shard_of(&s.src.slug)] = true;
            }
        }
    }
    let parts: Vec<(Vec<Digest>, Digest)> = listings
        .par_iter()
        .enumerate()
        .map(
            |(i, listing)| match (listing, headers.and_then(|h| h.get(i))) {
                (Some(l), _) => l.finish(),
                (None, Some(h)) => (h.listed.clone(), h.mapped),
                (None, None) => Listing::new(langs.len()).finish(),
            },
        )
        .collect();
    let searched: Vec<Vec<Digest>> = listings
        .iter()
        .enumerate()
        .map(
            |(i, listing)| match (listing, headers.and_then(|h| h.get(i))) {
                (Some(l), _) => l.searched(),
                (None, Some(h)) => h.searched.clone(),
                (None, None) => Listing::new(langs.len()).searched(),
            },
        )
        .collect();
    if let Some(headers) = headers {
        for (i, h) in headers.iter().enumerate().filter(|&(i, _)| closed[i]) {
            for (k, present) in parts_present.iter_mut().enumerate() {
                present[i] = h.pages.get(k).is_some_and(|&n| n > 0);
            }
        }
    }
    // Part 0 also lists which parts exist.
    let search = (0..langs.len())
        .map(|k| {
            searched
                .iter()
                .enumerate()
                .map(|(i, part)| {
                    let mut h = Hasher::new();
                    h.digest(site_hash)
                        .digest(&part.get(k).copied().unwrap_or_default());
                    if i == 0 {
                        for &present in &parts_present[k] {
                            h.part(if present { "1" } else { "0" });
                        }
                    }
                    h.finish()
                })
                .collect()
        })
        .collect();
    let index = (0..langs.len())
        .map(|k| {
            let mut h = Hasher::new();
            h.digest(site_hash);
            for (listed, _) in &parts {
                h.digest(&listed.get(k).copied().unwrap_or_default());
            }
            h.finish()
        })
        .collect();
    let mut sitemap = Hasher::new();
    sitemap.digest(site_hash);
    for (_, mapped) in &parts {
        sitemap.digest(mapped);
    }
    let search = SearchInputs {
        digests: search,
        present: parts_present,
    };
    (index, sitemap.finish(), search)
}

/// What the search index parts are built from: per language (in site order), per shard.
struct SearchInputs {
    /// Each part's inputs digest.
    digests: Vec<Vec<Digest>>,
    /// Whether the part exists (the shard has pages in the language).
    present: Vec<Vec<bool>>,
}

/// The site-wide inputs a manifest shard's header is trusted against.
fn shard_context(site: &SiteContext) -> ShardContext {
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
                feed_stamps(&mut h, &folder.name, meta.folder?.fields(), &pages);
            }
            Some(h.finish())
        })
        .collect()
}

/// The outputs of a guide's pages that are gone.
fn removed_pages(
    slug: &str,
    pages: Vec<(String, PageEntry)>,
) -> impl Iterator<Item = Removed> + '_ {
    pages.into_iter().filter_map(move |(lang, page)| {
        page.output.map(|entry| Removed {
            id: format!("page:{lang}/{slug}"),
            prefix: page_prefix(&lang, slug),
            entry,
        })
    })
}

/// What the file system says of a guide folder before the manifest is consulted: the folder's
/// stat, and that of `<lang>.md` for each configured language (in the site's order).
struct FolderMeta {
    folder: Option<FileStat>,
    pages: Vec<Option<FileStat>>,
}

impl FolderMeta {
    fn of(folder: &GuideFolder, content: &ContentDir, config: &SiteConfig) -> FolderMeta {
        let pages = config
            .languages
            .iter()
            .map(|l| content.stat(folder, Some(l)))
            .collect();
        FolderMeta {
            folder: content.stat(folder, None),
            pages,
        }
    }
}

/// The content folder, open where the platform allows, to stat guide folders and pages relative
/// to it.
struct ContentDir {
    #[cfg(unix)]
    fd: Option<rustix::fd::OwnedFd>,
}

impl ContentDir {
    fn open(root: &Path) -> ContentDir {
        #[cfg(unix)]
        {
            use rustix::fs::{Mode, OFlags};
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let fd = rustix::fs::open(root.join("content"), flags, Mode::empty()).ok();
            ContentDir { fd }
        }
        #[cfg(not(unix))]
        {
            let _ = root;
            ContentDir {}
        }
    }

    /// Stats guide folder `folder`, or its page `<lang>.md`.
    fn stat(&self, folder: &GuideFolder, lang: Option<&str>) -> Option<FileStat> {
        #[cfg(unix)]
        if let Some(fd) = &self.fd {
            let rel = match lang {
                Some(l) => format!("{}/{l}.md", folder.name),
                None => folder.name.clone(),
            };
            return FileStat::at(fd, &rel);
        }
        match lang {
            Some(l) => FileStat::of_path(&folder.path.join(format!("{l}.md"))),
            None => FileStat::of_path(&folder.path),
        }
    }
}

/// One guide folder read against its previous manifest entry.
struct GuideRead {
    slug: String,
    folder: Option<Stamp>,
    sources: Vec<Source>,
    /// Per source: the previous build's output entry.
    outputs: Vec<Option<JobEntry>>,
    /// Pages of the previous build that are gone.
    removed: Vec<Removed>,
    errors: Vec<Diagnostic>,
    /// The previous build's data entry of the guide.
    previous_data: Option<DataEntry>,
    /// True when the folder's listing or a page's entry differs from the previous build's.
    changed: bool,
}

impl GuideRead {
    /// A guide the file watcher saw no change in: its previous entry, without a system call.
    fn unchanged(folder: &GuideFolder, previous: GuideEntry) -> GuideRead {
        let dir: Arc<Path> = Arc::from(folder.path.as_path());
        let (sources, outputs) = previous
            .pages
            .into_iter()
            .map(|(lang, page)| {
                let source = Source {
                    src: content::page_source(&folder.name, &lang, &dir),
                    hash: page.source.hash,
                    summary: page.source.summary,
                    stamp: page.source.stamp,
                };
                (source, page.output)
            })
            .unzip();
        GuideRead {
            slug: folder.name.clone(),
            folder: previous.folder,
            sources,
            outputs,
            removed: Vec::new(),
            errors: Vec::new(),
            previous_data: previous.data,
            changed: false,
        }
    }
}

/// The guides (folder names) that `paths` touch, or `None` when a change there needs a full scan
/// (the content folder itself, or the site configuration, which can change the languages).
fn changed_guides(paths: &BTreeSet<PathBuf>) -> Option<BTreeSet<&str>> {
    let mut guides = BTreeSet::new();
    for p in paths {
        let mut parts = p.components().map(|c| c.as_os_str().to_str());
        match (parts.next(), parts.next()) {
            (Some(Some("content")), Some(Some(slug))) => {
                guides.insert(slug);
            }
            (Some(Some("content")), None) => return None,
            (Some(Some(crate::config::CONFIG_FILE)), None) => return None,
            (Some(Some("content")), Some(None)) => return None,
            _ => {}
        }
    }
    Some(guides)
}

/// The guide folders without listing `content/`: the previous build's, plus the changed ones that
/// exist now (a new guide), less the changed ones that are gone. Sorted by name.
fn known_folders<'a>(
    root: &Path,
    previous: impl Iterator<Item = &'a String>,
    changed: &BTreeSet<&'a str>,
) -> Vec<GuideFolder> {
    let content = root.join("content");
    let names: BTreeSet<&str> = previous
        .map(String::as_str)
        .filter(|n| !changed.contains(n))
        .chain(
            changed
                .iter()
                .copied()
                .filter(|n| !n.starts_with('.') && content.join(n).is_dir()),
        )
        .collect();
    names
        .into_iter()
        .map(|name| GuideFolder {
            name: name.to_string(),
            path: content.join(name),
        })
        .collect()
}

/// Reads one guide folder: its listing is reused when the folder's stamp is unchanged, and each
/// page is hashed only when its own stamp changed (and parsed only when its bytes did).
fn read_guide(
    folder: &GuideFolder,
    meta: &FolderMeta,
    previous: Option<GuideEntry>,
    config: &SiteConfig,
    now: u64,
) -> GuideRead {
    let slug = folder.name.clone();
    let FolderMeta {
        folder: meta,
        pages,
    } = meta;
    let meta = *meta;
    let stamp = meta.and_then(|m| Stamp::of(&m, now));
    let (mut previous_pages, previous_folder, previous_data) = match previous {
        Some(g) => (g.pages, g.folder, g.data),
        None => Default::default(),
    };
    let listing_unchanged = previous_folder
        .zip(meta)
        .is_some_and(|(s, m)| s.matches(&m))
        && previous_pages
            .iter()
            .all(|(l, _)| config.languages.contains(l));
    let (found, mut errors) = if listing_unchanged {
        let dir: Arc<Path> = Arc::from(folder.path.as_path());
        let found = previous_pages
            .iter()
            .map(|(lang, _)| content::page_source(&slug, lang, &dir))
            .collect();
        (found, Vec::new())
    } else {
        content::list_guide(folder, config)
    };
    let mut changed = stamp != previous_folder || found.len() != previous_pages.len();
    let mut sources = Vec::with_capacity(found.len());
    let mut outputs = Vec::with_capacity(found.len());
    for src in found {
        let prev = previous_pages
            .iter()
            .position(|(l, _)| *l == src.lang)
            .map(|i| previous_pages.swap_remove(i).1);
        let (prev_source, prev_output) = match prev {
            Some(p) => (Some(p.source), p.output),
            None => (None, None),
        };
        let meta = config
            .languages
            .iter()
            .position(|l| *l == src.lang)
            .and_then(|i| pages[i]);
        match read_source(src, meta, prev_source, now) {
            Ok((s, c)) => {
                changed |= c;
                sources.push(s);
                outputs.push(prev_output);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    errors.extend(check_translations_agree(&sources));
    GuideRead {
        removed: removed_pages(&slug, previous_pages).collect(),
        slug,
        folder: stamp,
        sources,
        outputs,
        errors,
        previous_data,
        changed,
    }
}

/// Hashes a source unless its stamp is unchanged, and parses it only when its bytes changed.
/// Returns the source and whether its manifest entry changed.
fn read_source(
    src: PageSource,
    stat: Option<FileStat>,
    previous: Option<SourceEntry>,
    now: u64,
) -> Result<(Source, bool), Vec<Diagnostic>> {
    let cannot = |e: std::io::Error| {
        vec![Diagnostic::error(format!("cannot read: {e}")).in_file(src.shown())]
    };
    let stat = match stat {
        Some(s) => Some(s),
        // Not statted yet, or the stat failed: ask again, for the error's sake.
        None => FileStat::from_metadata(&std::fs::metadata(src.path()).map_err(cannot)?),
    };
    let (previous, unchanged) = match previous {
        Some(e) if e.stamp.zip(stat).is_some_and(|(s, f)| s.matches(&f)) => (None, Some(e)),
        other => (other, None),
    };
    if let Some(e) = unchanged {
        let source = Source {
            hash: e.hash,
            summary: e.summary,
            stamp: e.stamp,
            src,
        };
        return Ok((source, false));
    }
    let stamp = stat.and_then(|f| Stamp::of(&f, now));
    let bytes = crate::site_files::read(&src.path(), &src.shown()).map_err(|e| vec![e])?;
    let h = hash(&bytes);
    if let Some(e) = previous.filter(|e| e.hash == h) {
        let changed = e.stamp != stamp;
        let source = Source {
            src,
            hash: h,
            summary: e.summary,
            stamp,
        };
        return Ok((source, changed));
    }
    let page = content::parse(src.clone(), &bytes)?;
    let summary = summarize(&page);
    let source = Source {
        src,
        hash: h,
        summary,
        stamp,
    };
    Ok((source, true))
}

/// The parts of a parsed page that other outputs depend on.
pub(crate) fn summarize(page: &Page) -> Summary {
    let fm = &page.front;
    let scenario_hash = content::agree::shared_text(page).map(|text| {
        let mut h = Hasher::new();
        h.part(text);
        h.finish()
    });
    let updated = fm
        .extra
        .iter()
        .find(|(k, _)| k == "updated")
        .and_then(|(_, v)| v.as_str().map(str::to_string));
    Summary {
        title: fm.title.clone(),
        date: fm.date.clone(),
        description: fm.description.clone(),
        updated: updated.or_else(|| fm.date.clone()),
        scenario_hash,
        uses_catalog: page.body().contains("catalog."),
    }
}

/// The translations of one guide (its pages) must share scenario and variant overrides.
fn check_translations_agree(guide: &[Source]) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    let Some(f) = guide.first() else {
        return errors;
    };
    for s in &guide[1..] {
        match () {
            () if f.summary.scenario_hash != s.summary.scenario_hash => {
                let pages = content::load(&f.src).and_then(|a| Ok((a, content::load(&s.src)?)));
                let found = pages
                    .as_ref()
                    .ok()
                    .and_then(|(a, b)| content::agree::first_difference(a, b));
                let (message, line) = match found {
                    Some(d) => (
                        format!(
                            "the translations disagree on `{}`: `{}` in {}, `{}` here",
                            d.key,
                            d.first,
                            f.src.shown().display(),
                            d.second
                        ),
                        d.line,
                    ),
                    None => (
                        format!(
                            "the translations disagree on the scenario or variants: {} and {} must have the same `scenario:` and variant `id`/`set:` values",
                            f.src.shown().display(),
                            s.src.shown().display()
                        ),
                        1,
                    ),
                };
                let mut d = Diagnostic::error(message)
                    .in_file(s.src.shown())
                    .at(line, 1)
                    .with_help("a guide's translations share one scenario; only titles, prose and variant labels differ");
                if let Ok((_, b)) = &pages {
                    d = d.with_source(b.text.clone());
                }
                errors.push(d);
            }
            () => {}
        }
    }
    errors
}

/// Hash of everything a guide's computed data depends on.
fn data_inputs(site: &SiteContext, scenario_hash: &Digest) -> Digest {
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
fn guide_data_entries(
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
