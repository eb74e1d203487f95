//! Planning a build: read every source cheaply (stat first, hash only what changed, parse only
//! what hashes differently), check the guides, and list the output jobs with the hash of their
//! inputs, each carrying what the previous build recorded for it. Guides the store knows unchanged
//! ([`Closed`]) are not planned at all: what the store recorded of them stands for them.
//!
//! The stages: [`super::scan`] (stat, read, hash, parse), [`super::jobs`] (each job's input
//! digest, and the diff against the previous build's); this module puts them together.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use super::jobs::{guide_data_entries, neighbours, page_jobs, site_jobs, Diff, Job, JobKind};
use super::manifest::{
    DataEntry, GuideEntry, JobEntry, Manifest, Neighbours, OnDisk, PageEntry, SiteJob, SourceEntry,
    Stamp, StoredManifest,
};
use super::model::{page_prefix, JobId, RecordsEntry, Removed};
use super::observe::{observe, Observed};
pub(crate) use super::request::{PlanRequest, Previous, Purpose, Scan};
use super::scan::{
    read_guide, ContentDir, FolderMeta, GuideRead, KeptText, ReadOnce, Scanned, Source,
};
use super::store::{
    self, closed_page_counts, listing_inputs, needs_closed_guides, Closed, Context, Headers,
    SiteInputs,
};
use super::translated::Notices;
use super::SiteContext;
use crate::content::{self, GuideFolder};
use crate::diagnostics::Diagnostic;
use crate::expand::GuideData;

/// Everything a build or a check needs to know before rendering.
pub(crate) struct Plan {
    /// What the plan found worth a word but not an error: files and folders under `content/`
    /// that are not read.
    pub(crate) warnings: Vec<Diagnostic>,
    /// Every page, sorted by guide then language.
    pub(crate) sources: Vec<Source>,
    /// Per source: the guides before and after it in its language's index.
    pub(crate) neighbours: Vec<Neighbours>,
    /// Per source: its translation notices, if any section is not current.
    pub(crate) notices: Vec<Option<Arc<Notices>>>,
    /// Per guide with a translation records file: what it records.
    pub(crate) records: BTreeMap<String, RecordsEntry>,
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
    /// Per language (in site order): pages of the closed guides (unchanged, not
    /// decoded, so not in `sources`).
    pub(crate) closed_pages: Vec<usize>,
    /// Per language (in site order), per search index part: true when the part has pages in that language
    /// (the search index parts that exist; part 0 lists them).
    pub(crate) search_parts: Vec<Vec<bool>>,
    /// The entries of the closed guides, when the previous manifest was in memory (`serve`):
    /// put back unchanged into the next manifest.
    kept: BTreeMap<String, GuideEntry>,
    /// What the manifest on disk holds (see [`Manifest::stored`]).
    stored: Option<OnDisk>,
    /// The site-wide inputs the records are written against.
    context: Context,
}

impl Plan {
    /// True when records on disk must be rewritten although none of their guides changed
    /// (it was written against other site-wide inputs).
    pub(crate) fn has_stale_records(&self) -> bool {
        let context = &self.context.digest;
        self.stored.as_ref().is_some_and(|d| d.any_stale(context))
    }

    /// True when a translation's notices quote source `i` (its page is read when they render).
    pub(crate) fn quoted_by_notices(&self, i: usize) -> bool {
        let src = &self.sources[i].src;
        let guide = self.sources.partition_point(|s| s.src.slug < src.slug);
        (guide..self.sources.len())
            .take_while(|&j| self.sources[j].src.slug == src.slug)
            .any(|j| {
                (self.notices[j].as_deref()).is_some_and(|n| n.tracked && n.source_lang == src.lang)
            })
    }

    /// The page of guide `slug` in `lang`, as this build read it (or reads it now).
    pub(crate) fn source_page(
        &self,
        slug: &str,
        lang: &str,
    ) -> Result<Arc<crate::content::Page>, Vec<Diagnostic>> {
        let at = self.sources.partition_point(|s| s.src.slug.as_str() < slug);
        let found = (self.sources[at..].iter())
            .take_while(|s| s.src.slug == slug)
            .find(|s| s.src.lang == lang);
        match found {
            Some(s) => s.page(),
            None => {
                let dir = (self.sources.get(at).map(|s| s.src.dir.clone()))
                    .ok_or_else(|| vec![Diagnostic::error(format!("no guide `{slug}`"))])?;
                Ok(Arc::new(crate::content::load(
                    &crate::content::page_source(slug, lang, &dir),
                )?))
            }
        }
    }

    /// Per search index part, whether the language has one there (see `search_parts`).
    pub(crate) fn search_parts_of(&self, lang: &str) -> Option<&[bool]> {
        let k = self.context.languages.iter().position(|l| l == lang)?;
        self.search_parts.get(k).map(Vec::as_slice)
    }

    /// A job's id.
    pub(crate) fn job_id(&self, job: &Job) -> JobId {
        match &job.kind {
            JobKind::Page(i) => {
                let s = &self.sources[*i].src;
                JobId::Page {
                    lang: s.lang.clone(),
                    slug: s.slug.clone(),
                }
            }
            JobKind::Site(job) => JobId::Site(job.clone()),
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
                JobKind::Site(job) => {
                    if let Some(entry) = entry {
                        site_jobs.insert(job, entry);
                    }
                }
            }
        }
        // Sources are sorted by guide like the folders: one walk, no lookups.
        let mut data = self.data;
        let mut records = self.records;
        let mut pages = (self.sources.into_iter())
            .zip(outputs.into_iter().zip(self.neighbours))
            .peekable();
        let mut guides: BTreeMap<String, GuideEntry> = self
            .folders
            .into_iter()
            .map(|(slug, folder)| {
                let mut entries = Vec::new();
                while let Some((s, (output, neighbours))) =
                    pages.next_if(|(s, _)| s.src.slug == slug)
                {
                    let source = SourceEntry {
                        hash: s.hash,
                        stamp: s.stamp,
                        summary: s.summary,
                    };
                    let neighbours = Some(neighbours);
                    let page = PageEntry {
                        source,
                        output,
                        neighbours,
                    };
                    entries.push((s.src.lang, page));
                }
                let data = data.remove(&slug);
                let entry = GuideEntry {
                    folder,
                    pages: entries,
                    data,
                    records: records.remove(&slug),
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

/// Plans a build as `request` says, against the `previous` build (read while the sources are
/// statted; [`Previous::Nothing`] renders everything).
pub(crate) fn plan(
    site: &SiteContext,
    request: &PlanRequest<'_>,
    previous: impl FnOnce() -> Previous + Send,
) -> Result<Plan, Vec<Diagnostic>> {
    let content_dir = ContentDir::open(request.root);
    let context = store::context(site);
    let Observed {
        previous,
        folders,
        changed_guides,
        mut closed,
        outputs_missing,
    } = observe(site, request, previous, &content_dir, &context)?;
    // An output deleted by hand is rendered again: every recorded output is verified.
    let verify_outputs = request.purpose == Purpose::Check || outputs_missing;
    let (stored, remembered, decode_all) = match previous {
        Previous::Nothing => (None, None, true),
        Previous::Stored {
            manifest,
            decode_all,
        } => (Some(manifest), None, decode_all),
        Previous::Remembered(m) => (None, Some(m), true),
    };
    // Guides whose recorded stamps are what `stat` says now are unchanged.
    if let Some(stored) = stored.as_ref().filter(|_| !decode_all && !verify_outputs) {
        closed = Closed::by_stamps(stored, &folders, &context);
    }
    // A remembered manifest is split: the closed guides are kept aside whole.
    let (remembered, kept) = match remembered {
        Some(mut m) => {
            let kept = closed.split_off(&mut m);
            (Some(m), kept)
        }
        None => (None, BTreeMap::new()),
    };
    let remembered_headers = remembered.as_ref().and_then(Manifest::stored);
    let planner = Planner {
        site,
        out: request.out,
        content_dir: &content_dir,
        folders: &folders,
        changed_guides: changed_guides.as_ref(),
        verify_outputs,
        now: request.now,
        context: &context,
        headers: Headers(match (&stored, &remembered_headers) {
            (Some(s), _) => Some(s.headers()),
            (None, Some(on_disk)) => Some(on_disk.headers()),
            (None, None) => None,
        }),
        read_once: ReadOnce::new(),
    };
    let mut plan = planner.passes(stored.as_ref(), remembered, kept, closed)?;
    plan.warnings.extend(content::ignored_entries(request.root));
    Ok(plan)
}

/// What every pass of a plan shares.
struct Planner<'a> {
    site: &'a SiteContext,
    out: &'a Path,
    content_dir: &'a ContentDir,
    folders: &'a [(GuideFolder, Option<FolderMeta>)],
    changed_guides: Option<&'a BTreeSet<&'a str>>,
    verify_outputs: bool,
    now: u64,
    context: &'a Context,
    /// What the records say of the closed guides, when known.
    headers: Headers<'a>,
    /// The pages read by a pass, for the next (a page is read and summarized once per build).
    read_once: ReadOnce<(Source, bool)>,
}

impl Planner<'_> {
    /// Plans with the guides `closed` left aside (the others decoded from `stored`, or the
    /// `remembered` manifest's open part with `kept` holding the closed guides); when a listing
    /// job must render after all, plans again with every guide.
    fn passes(
        &self,
        stored: Option<&StoredManifest>,
        mut remembered: Option<Manifest>,
        mut kept: BTreeMap<String, GuideEntry>,
        mut closed: Closed,
    ) -> Result<Plan, Vec<Diagnostic>> {
        loop {
            let (manifest, incremental) = match (stored, remembered.take()) {
                (Some(s), _) => match closed.decode(s) {
                    Some(m) => (m, true),
                    None => (Manifest::default(), false),
                },
                (None, Some(m)) => {
                    let incremental = !m.is_empty() || !kept.is_empty();
                    (m, incremental)
                }
                (None, None) => (Manifest::default(), false),
            };
            // Unreadable records: plan as a first build.
            if !incremental {
                closed = Closed::none();
            }
            // A second pass of a remembered manifest needs its open part again.
            let again = (!kept.is_empty()).then(|| manifest.clone());
            match self.pass(manifest, incremental, &closed)? {
                Some(mut plan) => {
                    plan.kept = kept;
                    return Ok(plan);
                }
                // An index or the sitemap must be rendered, which needs every page: plan every
                // guide (decoded again from disk, or the kept guides put back).
                None => {
                    closed = Closed::none();
                    if let Some(mut m) = again {
                        m.guides.append(&mut kept);
                        remembered = Some(m);
                    }
                }
            }
        }
    }

    /// Plans the guides not `closed` against `previous` (their decoded entries):
    /// scan them, list the jobs with their input digests, and diff those against the previous
    /// build's. `None` when guides are closed but a site-wide job that lists every page must
    /// render.
    fn pass(
        &self,
        previous: Manifest,
        incremental: bool,
        closed: &Closed,
    ) -> Result<Option<Plan>, Vec<Diagnostic>> {
        let (site, langs) = (self.site, &self.site.config.languages);
        let stored = previous.stored();
        let Manifest {
            guides: previous_guides,
            site_jobs: previous_site_jobs,
            ..
        } = previous;
        // Scan: the guides not closed, read against their previous entries.
        let mut scanned = Scanned::gather(self.scan(previous_guides, closed), &site.config);
        let mut site_inputs = listing_inputs(
            scanned.pages(),
            closed,
            self.headers,
            langs,
            (&site.inputs_hash, &store::figures_digest(site)),
        );
        // Known here, before any guide's data or page job is computed for nothing.
        if scanned.errors.is_empty()
            && needs_closed_guides(langs, &site_inputs, closed, &previous_site_jobs)
        {
            return Ok(None);
        }
        // Previous/next links: from the listings when no guide is closed, else as recorded.
        let Some(neighbours) =
            neighbours(&scanned.sources, &mut scanned.previous_neighbours, closed)
        else {
            return Ok(None);
        };
        let (data, computed) = guide_data_entries(
            site,
            &scanned.sources,
            &scanned.previous_data,
            &mut scanned.touched,
            &mut scanned.errors,
        );
        if !scanned.errors.is_empty() {
            return Err(scanned.errors);
        }
        let search_parts = std::mem::take(&mut site_inputs.search.present);
        let jobs = self.jobs(
            &mut scanned,
            site_inputs,
            previous_site_jobs,
            &neighbours,
            &data,
        );
        Ok(Some(Plan {
            sources: scanned.sources,
            neighbours,
            notices: std::mem::take(&mut scanned.notices),
            records: std::mem::take(&mut scanned.records),
            guides: scanned.guides,
            folders: scanned.folders,
            data,
            computed,
            jobs,
            removed: std::mem::take(&mut scanned.removed),
            incremental,
            touched: scanned.touched,
            closed_pages: closed_page_counts(self.headers, closed, langs.len()),
            search_parts,
            kept: BTreeMap::new(),
            stored,
            context: self.context.clone(),
            warnings: std::mem::take(&mut scanned.warnings),
        }))
    }

    /// The jobs, each diffed against what the previous build recorded for it (page jobs in the
    /// order of the sources, then the site-wide ones); previous site-wide jobs that no longer
    /// exist join `scanned.removed`.
    fn jobs(
        &self,
        scanned: &mut Scanned,
        site_inputs: SiteInputs,
        mut previous_site_jobs: BTreeMap<SiteJob, JobEntry>,
        neighbours: &[Neighbours],
        data: &BTreeMap<String, DataEntry>,
    ) -> Vec<Job> {
        let diff = Diff {
            out: self.out,
            verify_outputs: self.verify_outputs,
        };
        let previous_outputs = std::mem::take(&mut scanned.previous_outputs);
        let mut jobs = page_jobs(
            self.site,
            scanned,
            previous_outputs,
            neighbours,
            data,
            &diff,
        );
        let langs = &self.site.config.languages;
        jobs.extend(site_jobs(
            langs,
            site_inputs,
            &mut previous_site_jobs,
            &diff,
        ));
        (scanned.removed).extend(previous_site_jobs.into_iter().map(|(job, entry)| Removed {
            id: JobId::Site(job),
            entry,
        }));
        jobs
    }

    /// Reads every guide folder not closed in parallel, each against its previous entry
    /// (moved out of `previous`); what is left in `previous` is a deleted guide.
    fn scan(
        &self,
        mut previous: BTreeMap<String, GuideEntry>,
        closed: &Closed,
    ) -> (Vec<GuideRead>, BTreeMap<String, GuideEntry>) {
        let (config, now) = (&self.site.config, self.now);
        let kept = KeptText::new();
        let tasks: Vec<_> = self
            .folders
            .iter()
            .filter(|(f, _)| !closed.holds(&f.name))
            .map(|(f, meta)| {
                let prev = previous.remove(&f.name);
                let trusted = self
                    .changed_guides
                    .is_some_and(|c| !c.contains(f.name.as_str()));
                (f, meta.as_ref(), prev, trusted)
            })
            .collect();
        let read = tasks
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
                    read_guide(folder, meta, prev, (config, now), (&kept, &self.read_once))
                }
            })
            .collect();
        (read, previous)
    }
}
