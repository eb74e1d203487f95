//! The render stage: the jobs a plan says must render, in parallel, into a staging folder (or,
//! for `vramdoc check`, a throwaway one), each guide's data computed once for them.

use std::collections::BTreeMap;
use std::io::IsTerminal;
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
use super::SiteContext;
use crate::content;
use crate::diagnostics::Diagnostic;
use crate::expand::GuideData;

/// A rendered job's manifest entry and warnings, or its errors.
type JobResult = Result<(JobEntry, Vec<Diagnostic>), Vec<Diagnostic>>;

/// Renders the jobs that must render, in parallel, into the staging folder: per job (indexed like
/// `plan.jobs`) the entry of what it wrote, and every error (warnings go to `warnings`).
pub(super) fn render(
    site: &SiteContext,
    plan: &Plan,
    data: &GuideDatas<'_>,
    staging: &output::Staging,
    quiet: bool,
    warnings: &mut Vec<Diagnostic>,
) -> (Vec<Option<JobEntry>>, Vec<Diagnostic>) {
    let to_render: Vec<usize> = (0..plan.jobs.len())
        .filter(|&i| plan.jobs[i].render)
        .collect();
    let progress = progress_bar(to_render.len(), quiet);
    // Search index parts re-read and parse their pages: they run after the pages, so a large
    // page is never parsed by both at once (peak memory stays that of one parse).
    let (search, pages): (Vec<usize>, Vec<usize>) = to_render
        .iter()
        .partition(|&&i| matches!(plan.jobs[i].kind, JobKind::Site(SiteJob::Search(..))));
    let wave = |jobs: &[usize]| -> Vec<(usize, JobResult)> {
        jobs.par_iter()
            .map(|&i| {
                let r = run_job(site, plan, &plan.jobs[i], data, staging);
                progress.inc(1);
                (i, r)
            })
            .collect()
    };
    let mut results = wave(&pages);
    results.extend(wave(&search));
    progress.finish_and_clear();
    let mut errors = Vec::new();
    let mut rendered: Vec<Option<JobEntry>> = vec![None; plan.jobs.len()];
    for (i, r) in results {
        match r {
            Ok((entry, mut w)) => {
                warnings.append(&mut w);
                rendered[i] = Some(entry);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    (rendered, errors)
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
    let mut all = Vec::new();
    let data = match GuideDatas::new(site, plan, |_| true) {
        Ok(d) => d,
        Err(e) => return (e, Vec::new()),
    };
    let results: Vec<JobResult> = plan
        .jobs
        .par_iter()
        .map(|job| run_job(site, plan, job, &data, &staging))
        .collect();
    let mut warnings = Vec::new();
    for r in results {
        match r {
            Ok((_, mut w)) => warnings.append(&mut w),
            Err(mut e) => all.append(&mut e),
        }
    }
    warnings.append(&mut site.message_warnings());
    (all, warnings)
}

/// Renders one job into the staging folder; returns its manifest entry and warnings.
fn run_job(
    site: &SiteContext,
    plan: &Plan,
    job: &Job,
    data: &GuideDatas<'_>,
    staging: &output::Staging,
) -> JobResult {
    let many = |r: Result<Vec<sitewide::File>, Diagnostic>| {
        r.map(|f| (f, Vec::new())).map_err(|e| vec![e])
    };
    let (files, warnings) = match &job.kind {
        JobKind::Page(i) => {
            let source = &plan.sources[*i];
            let guide = data.get(&source.src.slug);
            let page = content::load(&source.src)?;
            let available: Vec<&str> = plan.guides[&source.src.slug]
                .iter()
                .map(String::as_str)
                .collect();
            let place = pages::PagePlace {
                available: &available,
                neighbours: &plan.neighbours[*i],
                notices: plan.notices[*i].as_deref().filter(|n| n.tracked),
            };
            let r = pages::render_guide(site, &page, &place, guide)?;
            (r.files, r.warnings)
        }
        JobKind::Site(SiteJob::Index(lang)) => many(sitewide::language_index(site, plan, lang))?,
        JobKind::Site(SiteJob::Root) => many(sitewide::root(site))?,
        JobKind::Site(SiteJob::Sitemap) => many(sitewide::sitemap(site, plan))?,
        JobKind::Site(SiteJob::Style) => (sitewide::style(), Vec::new()),
        JobKind::Site(SiteJob::Search(lang, part)) => {
            (sitewide::search_index(plan, lang, *part)?, Vec::new())
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

/// A progress bar on stderr for builds of more than a few hundred pages, hidden when stderr is
/// not a terminal or with `--quiet`.
fn progress_bar(jobs: usize, quiet: bool) -> indicatif::ProgressBar {
    if quiet || jobs < 300 || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(jobs as u64);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} pages {elapsed}")
    {
        bar.set_style(style);
    }
    bar
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
                let same = |s: &&Source| s.src.slug == slug;
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
