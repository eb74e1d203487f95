//! The render stage: the jobs a plan says must render, in parallel, into a staging folder (or,
//! for `vramdoc check`, a throwaway one), each guide's data computed once for them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rayon::prelude::*;

use super::guides::compute_one;
use super::jobs::{Job, JobKind};
use super::manifest::{hash, JobEntry, SiteJob};
use super::output;
use super::pages;
use super::plan::Plan;
use super::scan::Source;
use super::sitewide;
use super::store::part_of;
use super::SiteContext;
use crate::diagnostics::Diagnostic;
use crate::expand::GuideData;
use crate::search::{self, SearchSection};

/// A rendered job's manifest entry and warnings, or its errors.
type JobResult = Result<(JobEntry, Vec<Diagnostic>), Vec<Diagnostic>>;

/// A rendered job's manifest entry and warnings.
type RenderedJob = (JobEntry, Vec<Diagnostic>);

/// A search part: its language and number.
type Part = (String, usize);

/// Renders the jobs that must render, in parallel, into the staging folder: per job (indexed like
/// `plan.jobs`) the entry of what it wrote, and every error (warnings go to `warnings`). `out`
/// holds the previous build's search parts, whose pages not rendered again keep their sections.
pub(super) fn render(
    site: &SiteContext,
    plan: &Plan,
    staging: &output::Staging,
    out: Option<&Path>,
    progress: fn(usize) -> indicatif::ProgressBar,
    warnings: &mut Vec<Diagnostic>,
) -> (Vec<Option<JobEntry>>, Vec<Diagnostic>) {
    let selected: Vec<usize> = (0..plan.jobs.len())
        .filter(|&i| plan.jobs[i].render)
        .collect();
    let progress = progress(selected.len());
    let (results, errors) = render_jobs(site, plan, staging, out, &selected, &progress);
    progress.finish_and_clear();
    let mut rendered: Vec<Option<JobEntry>> = vec![None; plan.jobs.len()];
    for (i, (entry, mut w)) in results {
        warnings.append(&mut w);
        rendered[i] = Some(entry);
    }
    (rendered, errors)
}

/// Renders the jobs `selected` (indexes into `plan.jobs`): the pages first, each giving the
/// sections of its search part; then the search parts, from those sections and (for pages not
/// rendered) the part's previous file in `out`. A page whose sections cannot be had so renders
/// too. Returns what each job rendered, and every error.
fn render_jobs(
    site: &SiteContext,
    plan: &Plan,
    staging: &output::Staging,
    out: Option<&Path>,
    selected: &[usize],
    progress: &indicatif::ProgressBar,
) -> (Vec<(usize, RenderedJob)>, Vec<Diagnostic>) {
    let (searches, mut pages): (Vec<usize>, Vec<usize>) = (selected.iter())
        .partition(|&&i| matches!(plan.jobs[i].kind, JobKind::Site(SiteJob::Search(..))));
    let parts: BTreeSet<Part> = (searches.iter())
        .filter_map(|&i| match &plan.jobs[i].kind {
            JobKind::Site(SiteJob::Search(lang, part)) => Some((lang.clone(), *part)),
            _ => None,
        })
        .collect();
    let rendering: BTreeSet<usize> = pages.iter().copied().collect();
    let kept: Vec<(Part, Option<PreviousSections>)> = (parts.par_iter())
        .map(|part| {
            let previous = previous_part(plan, part, out, &rendering);
            (part.clone(), previous)
        })
        .collect();
    let mut previous: BTreeMap<Part, PreviousSections> = BTreeMap::new();
    for (part, p) in kept {
        match p {
            Some(p) => {
                previous.insert(part, p);
            }
            // No previous file to take sections from: every page of the part renders.
            None => pages.extend(page_jobs_of(plan, &part).filter(|i| !rendering.contains(i))),
        }
    }
    let to_page: BTreeSet<usize> = pages.iter().copied().collect();
    let data = match GuideDatas::new(site, plan, |i| to_page.contains(&i)) {
        Ok(d) => d,
        Err(e) => return (Vec::new(), e),
    };
    let data = &data;
    // Pages grouped by the search part that takes their sections (`None`: no part renders
    // with them), each part built as soon as its pages are: a build holds the sections of the
    // parts in flight, not of every page.
    let mut groups: BTreeMap<Option<&Part>, Vec<usize>> = BTreeMap::new();
    for part in &parts {
        groups.insert(Some(part), Vec::new());
    }
    for &i in &pages {
        let part = match plan.jobs[i].kind {
            JobKind::Page(k) => {
                let s = &plan.sources[k].src;
                parts.get(&(s.lang.clone(), part_of(&s.slug)))
            }
            _ => None,
        };
        groups.entry(part).or_default().push(i);
    }
    let search_job: BTreeMap<&Part, usize> = (searches.iter())
        .filter_map(|&i| match &plan.jobs[i].kind {
            JobKind::Site(SiteJob::Search(lang, part)) => {
                Some((parts.get(&(lang.clone(), *part))?, i))
            }
            _ => None,
        })
        .collect();
    let previous = &previous;
    let done: Vec<Vec<(usize, JobResult)>> = (groups.into_par_iter())
        .map(|(part, jobs)| {
            let rendered: Vec<(usize, JobResult, Vec<SearchSection>)> = (jobs.par_iter())
                .map(|&i| {
                    let (r, sections) =
                        run_job(site, plan, &plan.jobs[i], data, staging, &|_| None);
                    progress.inc(1);
                    (i, r, sections)
                })
                .collect();
            let mut fresh = PreviousSections::default();
            let mut results = Vec::with_capacity(rendered.len() + 1);
            let mut failed = false;
            for (i, r, sections) in rendered {
                if let (Some(_), JobKind::Page(k)) = (part, &plan.jobs[i].kind) {
                    fresh.insert(plan.sources[*k].src.slug.clone(), sections);
                }
                failed |= r.is_err();
                results.push((i, r));
            }
            let search = part.and_then(|p| Some((p, *search_job.get(p)?)));
            if let (Some((part, i)), false) = (search, failed) {
                let kept = previous.get(part);
                let sections_of = |slug: &str| {
                    let found = fresh.get(slug);
                    found
                        .or_else(|| kept.and_then(|p| p.get(slug)))
                        .map(Vec::as_slice)
                };
                let (r, _) = run_job(site, plan, &plan.jobs[i], data, staging, &sections_of);
                progress.inc(1);
                results.push((i, r));
            }
            results
        })
        .collect();
    let mut results = Vec::with_capacity(selected.len());
    let mut errors = Vec::new();
    for (i, r) in done.into_iter().flatten() {
        match r {
            Ok(r) => results.push((i, r)),
            Err(mut e) => errors.append(&mut e),
        }
    }
    (results, errors)
}

/// The sections a part's previous file holds, by slug.
type PreviousSections = rustc_hash::FxHashMap<String, Vec<SearchSection>>;

/// The sections of the pages of search part `part` that do not render (`rendering`), from the
/// part's previous file under `out`: `Some` (empty when every page renders), or `None` when a
/// page's cannot be had so (no previous build, the file gone or written by another version).
fn previous_part(
    plan: &Plan,
    (lang, part): &Part,
    out: Option<&Path>,
    rendering: &BTreeSet<usize>,
) -> Option<PreviousSections> {
    let missing: Vec<&str> = page_jobs_of(plan, &(lang.clone(), *part))
        .filter(|i| !rendering.contains(i))
        .filter_map(|i| match plan.jobs[i].kind {
            JobKind::Page(k) => Some(plan.sources[k].src.slug.as_str()),
            _ => None,
        })
        .collect();
    if missing.is_empty() {
        return Some(PreviousSections::default());
    }
    let bytes = std::fs::read(out?.join(search::part_path(lang, *part))).ok()?;
    let previous = search::previous_sections(&bytes)?;
    missing
        .iter()
        .all(|slug| previous.contains_key(*slug))
        .then_some(previous)
}

/// The page jobs (indexes into `plan.jobs`) of search part `part`.
fn page_jobs_of<'p>(plan: &'p Plan, (lang, part): &'p Part) -> impl Iterator<Item = usize> + 'p {
    (plan.jobs.iter().enumerate()).filter_map(move |(i, job)| match job.kind {
        JobKind::Page(k) => {
            let s = &plan.sources[k].src;
            (s.lang == *lang && part_of(&s.slug) == *part).then_some(i)
        }
        _ => None,
    })
}

/// Renders every job of `plan` into a throwaway folder, writing nothing to `out`: the errors and
/// warnings a build would report. Used by `vramdoc check`.
pub(crate) fn dry_run(
    site: &SiteContext,
    plan: &Plan,
    root: &Path,
) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    let scratch = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            return (
                vec![Diagnostic::error(format!(
                    "cannot create a scratch folder: {e}"
                ))],
                Vec::new(),
            )
        }
    };
    let staging = match output::Staging::new(&scratch.path().join("out"), root) {
        Ok(s) => s,
        Err(e) => return (vec![e], Vec::new()),
    };
    let all: Vec<usize> = (0..plan.jobs.len()).collect();
    let hidden = indicatif::ProgressBar::hidden();
    let (results, errors) = render_jobs(site, plan, &staging, None, &all, &hidden);
    let mut warnings: Vec<Diagnostic> = (results.into_iter()).flat_map(|(_, (_, w))| w).collect();
    warnings.append(&mut site.message_warnings());
    (errors, warnings)
}

/// Renders one job into the staging folder; returns its manifest entry and warnings, and a
/// page's search sections. A search part takes its pages' sections from `sections` (by slug).
fn run_job<'s>(
    site: &SiteContext,
    plan: &Plan,
    job: &Job,
    data: &GuideDatas<'_>,
    staging: &output::Staging,
    sections: &dyn Fn(&str) -> Option<&'s [SearchSection]>,
) -> (JobResult, Vec<SearchSection>) {
    let mut page_sections = Vec::new();
    let r = write_job(site, plan, job, data, staging, sections, &mut page_sections);
    (r, page_sections)
}

fn write_job<'s>(
    site: &SiteContext,
    plan: &Plan,
    job: &Job,
    data: &GuideDatas<'_>,
    staging: &output::Staging,
    sections: &dyn Fn(&str) -> Option<&'s [SearchSection]>,
    page_sections: &mut Vec<SearchSection>,
) -> JobResult {
    let many = |r: Result<Vec<sitewide::File>, Diagnostic>| {
        r.map(|f| (f, Vec::new())).map_err(|e| vec![e])
    };
    let (files, warnings) = match &job.kind {
        JobKind::Page(i) => {
            let source = &plan.sources[*i];
            let guide = data.get(&source.src.slug);
            let page = source.page()?;
            let notices = plan.notices[*i].as_deref().filter(|n| n.tracked);
            // The page a translation's notices quote, as this build read it.
            let original = match notices {
                Some(n) => Some(plan.source_page(&source.src.slug, &n.source_lang)?),
                None => None,
            };
            let available: Vec<&str> = plan.guides[&source.src.slug]
                .iter()
                .map(String::as_str)
                .collect();
            let place = pages::PagePlace {
                available: &available,
                neighbours: &plan.neighbours[*i],
                notices: notices.zip(original.as_deref()),
            };
            let r = pages::render_guide(site, &page, &place, guide)?;
            if !plan.quoted_by_notices(*i) {
                source.page.release();
            }
            *page_sections = r.sections;
            (r.files, r.warnings)
        }
        JobKind::Site(SiteJob::Index(lang)) => many(sitewide::language_index(site, plan, lang))?,
        JobKind::Site(SiteJob::Root) => many(sitewide::root(site))?,
        JobKind::Site(SiteJob::Sitemap) => many(sitewide::sitemap(site, plan))?,
        JobKind::Site(SiteJob::Style) => (sitewide::style(), Vec::new()),
        JobKind::Site(SiteJob::Search(lang, part)) => {
            many(sitewide::search_index(plan, lang, *part, sections))?
        }
    };
    let prefix = plan.job_prefix(job);
    let mut entry = JobEntry {
        inputs: job.inputs,
        files: Vec::with_capacity(files.len()),
    };
    let mut made: Option<&str> = None;
    for (path, bytes) in &files {
        let dir = path.rsplit_once('/').map(|(d, _)| d);
        if dir.is_some() && dir == made {
            staging
                .write_in_existing_dir(path, bytes)
                .map_err(|e| vec![e])?;
        } else {
            staging.write(path, bytes).map_err(|e| vec![e])?;
            made = dir;
        }
        let name = path.strip_prefix(&prefix).unwrap_or(path);
        entry.files.push((name.to_string(), hash(bytes)));
    }
    entry.files.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((entry, warnings))
}

/// Each guide's computed data for the pages a build renders, by slug: the data the plan computed
/// (a guide whose scenario, catalog or estimator changed), and the data of the other guides with a
/// page to render (a page edited, a scenario unchanged), computed here once, in parallel.
pub(crate) struct GuideDatas<'a> {
    planned: &'a BTreeMap<String, GuideData>,
    extra: BTreeMap<String, GuideData>,
}

impl<'a> GuideDatas<'a> {
    /// The data of the guides of the page jobs `wanted` selects (by index into `plan.jobs`).
    pub(crate) fn new(
        site: &SiteContext,
        plan: &'a Plan,
        wanted: impl Fn(usize) -> bool,
    ) -> Result<GuideDatas<'a>, Vec<Diagnostic>> {
        // Per guide still to compute: the first of its pages that has a scenario.
        let mut missing: BTreeMap<&str, usize> = BTreeMap::new();
        let jobs = plan.jobs.iter().enumerate();
        for job in jobs.filter(|(i, _)| wanted(*i)).map(|(_, j)| j) {
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
                let same = |s: &&Source| s.src.slug == slug;
                let first = page - plan.sources[..page].iter().rev().take_while(same).count();
                let source = plan.sources[first..]
                    .iter()
                    .take_while(same)
                    .find(|s| s.summary.scenario_hash.is_some());
                let data = source
                    .map(|s| s.page().and_then(|p| compute_one(&p, &site.catalog)))
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
