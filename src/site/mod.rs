//! Orchestration: plan the build, render the jobs whose inputs changed in parallel, and update
//! the output folder only when every job succeeded.
//!
//! A first build (or `--force`) renders everything into a staging folder beside `--out` and swaps
//! it in. Later builds read the manifest left in `--out`, render only the jobs whose inputs changed
//! into the staging folder, and move a file into `--out` only if its bytes changed, so unchanged
//! outputs keep their bytes and modification times. A failed build changes nothing.

mod guides;
mod inputs;
mod jobs;
mod listing;
pub mod manifest;
pub(crate) mod model;
pub(crate) mod observe;
pub mod output;
mod page_body;
mod page_cell;
mod pages;
pub(crate) mod plan;
mod request;
mod run_jobs;
mod scan;
mod sitewide;
pub(crate) mod stamp;
mod status_page;
mod store;
pub(crate) mod translated;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::diagnostics::{self, Diagnostic};
pub(crate) use inputs::{load_site, SiteContext};
use jobs::JobKind;
use manifest::{JobEntry, Manifest};
use plan::Plan;
pub(crate) use run_jobs::dry_run;

/// The output folder's name under the root when `--out` is not given.
pub(crate) use crate::site_paths::DEFAULT_OUT;

/// What to build and where.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BuildOptions {
    /// The site root (holds `vramdoc.yaml`, `content/`, optional `templates/` and `locales/`).
    pub(crate) root: PathBuf,
    /// The output folder.
    pub(crate) out: PathBuf,
    /// Render everything, ignoring the previous build's manifest.
    pub(crate) force: bool,
    /// The progress display for a build that renders this many jobs: the commands pass one that
    /// draws on stderr; by default, and with [`BuildOptions::quiet`], a hidden one.
    pub(crate) progress: fn(usize) -> indicatif::ProgressBar,
    /// When the build starts, in nanoseconds since the epoch (default: the system clock's now).
    /// Source stamps younger than 2 s before it are not trusted by the next build.
    pub(crate) now: Option<u64>,
    /// Where the build says what it is doing while it runs (that it waits for another build's
    /// lock; phase timings under `VRAMDOC_TIMINGS`): the commands pass a function that prints
    /// the line on stderr; by default nothing is said (this layer never prints).
    pub(crate) notify: fn(&str),
}

impl BuildOptions {
    /// Options for `root`, writing to `out` (default `root/public`).
    pub fn new(root: impl Into<PathBuf>, out: Option<PathBuf>) -> Self {
        let root = root.into();
        let out = out.unwrap_or_else(|| root.join(DEFAULT_OUT));
        BuildOptions {
            root,
            out,
            force: false,
            progress: no_progress,
            now: None,
            notify: |_| {},
        }
    }

    /// Sets where the build's running notes go (see [`BuildOptions::notify`]).
    pub fn notify(mut self, notify: fn(&str)) -> Self {
        self.notify = notify;
        self
    }

    /// Sets `force`.
    pub fn force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    /// With `true`, no progress display (the default, unless [`BuildOptions::progress`] set one).
    pub fn quiet(mut self, quiet: bool) -> Self {
        if quiet {
            self.progress = no_progress;
        }
        self
    }

    /// Sets the progress display (see [`BuildOptions::progress`]).
    pub fn progress(mut self, progress: fn(usize) -> indicatif::ProgressBar) -> Self {
        self.progress = progress;
        self
    }

    /// Sets the build's start time (see [`BuildOptions::now`]), so that stamps are judged
    /// against a given clock.
    pub fn at(mut self, now_ns: u64) -> Self {
        self.now = Some(now_ns);
        self
    }
}

/// Page counts of one language in a build.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LangCounts {
    /// Pages rendered this time.
    pub rebuilt: usize,
    /// Pages whose inputs had not changed.
    pub unchanged: usize,
    /// Pages whose source was deleted; their outputs were removed.
    pub removed: usize,
}

/// What a successful build did.
#[derive(Debug, Clone)]
pub struct BuildReport {
    /// Page counts per language.
    pub per_lang: BTreeMap<String, LangCounts>,
    /// Jobs rendered (pages and site-wide files such as the indexes).
    pub(crate) rendered: usize,
    /// Warnings (missing locale keys, lint findings).
    pub(crate) warnings: Vec<Diagnostic>,
    /// Wall-clock time.
    pub(crate) elapsed: Duration,
}

impl BuildReport {
    /// The one-line summary `vramdoc build` prints.
    pub fn summary(&self, out: &Path) -> String {
        let per: Vec<String> = self
            .per_lang
            .iter()
            .map(|(l, c)| {
                format!(
                    "{l}: rebuilt {}, unchanged {}, removed {}",
                    c.rebuilt, c.unchanged, c.removed
                )
            })
            .collect();
        let total: usize = self
            .per_lang
            .values()
            .map(|c| c.rebuilt + c.unchanged)
            .sum();
        format!(
            "built {total} pages into {} in {} ms ({})",
            out.display(),
            self.elapsed.as_millis(),
            per.join("; ")
        )
    }
}

/// What a long-running process (`vramdoc serve`) keeps between builds of one site: the manifest
/// the last successful build wrote, so it is neither read nor decoded again, and the source paths
/// a file watcher reported changed since, so the guides it did not report are not even statted.
#[derive(Debug, Default)]
pub struct KeptBuild {
    manifest: Option<Manifest>,
    /// `None`: unknown (check every source).
    changed: Option<BTreeSet<PathBuf>>,
}

impl KeptBuild {
    /// Nothing known yet: the next build reads the manifest and checks every source.
    pub fn new() -> KeptBuild {
        KeptBuild::default()
    }

    /// Records source paths (relative to the site root) reported changed since the last build.
    pub fn changed(&mut self, paths: &[PathBuf]) {
        if let Some(c) = &mut self.changed {
            c.extend(paths.iter().cloned());
        }
    }

    /// Forgets what is known to have changed (a watcher error): the next build checks everything.
    pub(crate) fn forget_changes(&mut self) {
        self.changed = None;
    }
}

/// What a failed build left in the output folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutputState {
    /// Exactly what was there before the build.
    Unchanged,
    /// Not as it was: restoring it failed half-way, and the diagnostics say what is where. A
    /// partly updated output's manifest stays marked incomplete, so the next build rewrites it.
    Changed,
}

/// Why a build failed: every diagnostic (errors and warnings), and the output folder's state.
#[derive(Debug, Clone)]
pub(crate) struct BuildFailure {
    /// Errors and warnings, sorted.
    pub(crate) diagnostics: Vec<Diagnostic>,
    /// What became of the output folder.
    pub(crate) output: OutputState,
}

/// A failure that left the output folder untouched.
fn unchanged(diagnostics: Vec<Diagnostic>) -> BuildFailure {
    BuildFailure {
        diagnostics,
        output: OutputState::Unchanged,
    }
}

/// Builds the site. On failure returns every diagnostic (errors and warnings); `out` is left
/// untouched unless restoring it failed (see [`try_build`]).
pub fn build(opts: &BuildOptions) -> Result<BuildReport, Vec<Diagnostic>> {
    try_build(opts, None).map_err(|f| f.diagnostics)
}

/// Builds the site using and updating `kept` (see [`KeptBuild`]).
pub fn build_with(
    opts: &BuildOptions,
    kept: &mut KeptBuild,
) -> Result<BuildReport, Vec<Diagnostic>> {
    try_build(opts, Some(kept)).map_err(|f| f.diagnostics)
}

/// Builds the site, with `kept` if given; a failure also says what state the output folder
/// is in.
pub(crate) fn try_build(
    opts: &BuildOptions,
    mut kept: Option<&mut KeptBuild>,
) -> Result<BuildReport, BuildFailure> {
    let start = Instant::now();
    let mut phases = Phases::new(opts.notify);
    // `a/x/../b` is `a/b` before anything is created (no stray `a/x/`); a symlinked `--out` is
    // written where it leads, so the link stays and its target is updated.
    let out = output::normalize(&opts.out);
    let opts = &BuildOptions {
        out: output::resolve_out(&out).map_err(|e| unchanged(vec![e]))?,
        ..opts.clone()
    };
    // Refused before the lock file is created beside it: a refused folder leaves nothing behind.
    output::check_output(&opts.out, &opts.root).map_err(|e| unchanged(vec![e]))?;
    let (site, mut warnings) = load_site(&opts.root).map_err(unchanged)?;
    // Held until the build ends, from before the previous manifest is read: another build of the
    // same output folder waits for this one, then plans from what it wrote.
    let _lock = output::OutputLock::take(&opts.out, opts.notify).map_err(|e| unchanged(vec![e]))?;
    phases.mark("load site");
    let fail = |errors: Vec<Diagnostic>, warnings: &[Diagnostic]| {
        unchanged(with_warnings(errors, warnings))
    };
    let mut plan = plan_build(&site, opts, kept.as_deref_mut()).map_err(|e| fail(e, &warnings))?;
    warnings.append(&mut plan.warnings);
    phases.mark("read manifest, plan");
    let staging =
        output::Staging::new(&opts.out, &opts.root).map_err(|e| fail(vec![e], &warnings))?;
    let previous_out = plan.incremental.then_some(opts.out.as_path());
    let (rendered, errors) = run_jobs::render(
        &site,
        &plan,
        &staging,
        previous_out,
        opts.progress,
        &mut warnings,
    );
    phases.mark("render");
    warnings.append(&mut site.message_warnings());
    if !errors.is_empty() {
        return Err(fail(errors, &warnings));
    }
    let per_lang = counts(&site, &plan);
    let rendered_jobs = rendered.iter().filter(|r| r.is_some()).count();
    let next =
        put_in_place(staging, plan, rendered, kept.is_some()).map_err(|(errors, output)| {
            BuildFailure {
                diagnostics: with_warnings(errors, &warnings),
                output,
            }
        })?;
    match (kept, next) {
        (Some(m), next) => {
            m.manifest = next;
            m.changed = Some(BTreeSet::new());
        }
        (None, Some(next)) => drop_in_background(next),
        (None, None) => {}
    }
    phases.mark("write");
    diagnostics::sort(&mut warnings);
    Ok(BuildReport {
        per_lang,
        rendered: rendered_jobs,
        warnings,
        elapsed: start.elapsed(),
    })
}

/// `errors` followed by `warnings`, sorted by place.
fn with_warnings(mut errors: Vec<Diagnostic>, warnings: &[Diagnostic]) -> Vec<Diagnostic> {
    errors.extend_from_slice(warnings);
    diagnostics::sort(&mut errors);
    errors
}

/// Puts a rendered build in place: a first build swaps the staging folder in; a later one moves
/// in what changed and rewrites the manifest where it must. Every change to the output folder is
/// journaled by `staging`, so a failure half-way puts back what was already changed; the error
/// says whether that worked. Returns the next manifest, when it is kept
/// (`keep`, for `serve`) or must be dropped.
fn put_in_place(
    staging: output::Staging,
    plan: Plan,
    rendered: Vec<Option<JobEntry>>,
    keep: bool,
) -> Result<Option<Manifest>, (Vec<Diagnostic>, OutputState)> {
    let incremental = plan.incremental;
    let any_rendered = rendered.iter().any(Option::is_some);
    let rewrite = !incremental || !plan.touched.is_empty() || any_rendered;
    let rewrite = rewrite || !plan.removed.is_empty() || plan.has_stale_records();
    let moves_outputs = incremental && (any_rendered || !plan.removed.is_empty());
    let next = match write(&staging, plan, rendered, moves_outputs, rewrite, keep) {
        Ok(next) => next,
        Err(mut errors) => {
            let output = match staging.rollback() {
                Ok(()) => OutputState::Unchanged,
                Err(d) => {
                    errors.push(d);
                    OutputState::Changed
                }
            };
            return Err((errors, output));
        }
    };
    if moves_outputs {
        // Kept aside with the replaced files until the staging folder goes.
        let _ = staging.remove_from_output(manifest::DIRTY);
    }
    if !incremental {
        staging.commit().map_err(|(e, output)| (vec![e], output))?;
    }
    Ok(next)
}

/// Plans a build as `opts` say, with what `kept` remembers (taken: a successful build leaves
/// its successor there, a failed one nothing, so the next build reads the manifest from disk and
/// checks everything).
fn plan_build(
    site: &SiteContext,
    opts: &BuildOptions,
    kept: Option<&mut KeptBuild>,
) -> Result<Plan, Vec<Diagnostic>> {
    // A manifest kept in memory afterwards is decoded whole.
    let decode_all = kept.is_some();
    let (remembered, scan_only) = match kept {
        Some(m) if !opts.force && opts.out.join(output::MARKER).exists() => {
            let remembered = m.manifest.take();
            let changed = m.changed.clone().filter(|_| remembered.is_some());
            (remembered, changed)
        }
        _ => (None, None),
    };
    let previous = || match remembered {
        Some(m) => plan::Previous::Remembered(m),
        None => previous_manifest(&opts.out, opts.force, decode_all),
    };
    let scan = match &scan_only {
        Some(paths) => plan::Scan::Only(paths),
        None => plan::Scan::Everything,
    };
    let request = plan::PlanRequest {
        root: &opts.root,
        out: &opts.out,
        purpose: plan::Purpose::Build,
        scan,
        now: opts.now.unwrap_or_else(manifest::now_ns),
    };
    plan::plan(site, &request, previous)
}

/// Writes a successful build: moves its files in (an incremental build), then the manifest
/// shards that changed (`rewrite`); returns the next manifest
/// when `rewrite` or `keep` (for `serve`'s memory).
fn write(
    staging: &output::Staging,
    plan: Plan,
    rendered: Vec<Option<JobEntry>>,
    moves_outputs: bool,
    rewrite: bool,
    keep: bool,
) -> Result<Option<Manifest>, Vec<Diagnostic>> {
    let incremental = plan.incremental;
    // While outputs are being replaced the manifest on disk no longer describes them: marked
    // so, a build that stops half-way leaves a manifest the next build does not trust.
    if moves_outputs {
        staging
            .write_output(manifest::DIRTY, b"")
            .map_err(|e| vec![e])?;
    }
    if incremental {
        move_outputs(staging, &plan, &rendered)?;
    }
    if !(rewrite || keep) {
        drop_in_background(plan);
        return Ok(None);
    }
    let mut next = plan.into_manifest(rendered);
    let shards = if rewrite {
        next.changed_shards()
    } else {
        Vec::new()
    };
    for (path, bytes) in &shards {
        if incremental {
            staging.write_output(path, bytes)
        } else {
            staging.write(path, bytes)
        }
        .map_err(|e| vec![e])?;
    }
    Ok(Some(next))
}

/// The previous build's manifest, unless forced or the output folder is not ours; `decode_all`
/// when no shard may be left undecoded (see [`plan::Previous`]).
pub(crate) fn previous_manifest(out: &Path, force: bool, decode_all: bool) -> plan::Previous {
    if force || !out.join(output::MARKER).exists() {
        return plan::Previous::Nothing;
    }
    match manifest::StoredManifest::read(out) {
        Some(manifest) => plan::Previous::Stored {
            manifest,
            decode_all,
        },
        None => plan::Previous::Nothing,
    }
}

/// Moves changed files into the output folder and deletes outputs that are gone.
fn move_outputs(
    staging: &output::Staging,
    plan: &Plan,
    rendered: &[Option<JobEntry>],
) -> Result<(), Vec<Diagnostic>> {
    for (job, entry) in plan.jobs.iter().zip(rendered) {
        let Some(entry) = entry else { continue };
        let prefix = plan.job_prefix(job);
        let before = job.previous.as_ref();
        for (name, h) in &entry.files {
            let path = format!("{prefix}{name}");
            let same =
                before.and_then(|b| b.file(name)) == Some(h) && staging.out().join(&path).exists();
            if !same {
                staging.move_into_output(&path).map_err(|e| vec![e])?;
            }
        }
        for old in before.into_iter().flat_map(JobEntry::paths) {
            if entry.file(old).is_none() {
                staging
                    .remove_from_output(&format!("{prefix}{old}"))
                    .map_err(|e| vec![e])?;
            }
        }
    }
    for gone in &plan.removed {
        let prefix = gone.id.prefix();
        for name in gone.entry.paths() {
            staging
                .remove_from_output(&format!("{prefix}{name}"))
                .map_err(|e| vec![e])?;
        }
    }
    Ok(())
}

/// Per-language page counts: rebuilt, unchanged, removed.
fn counts(site: &SiteContext, plan: &Plan) -> BTreeMap<String, LangCounts> {
    let mut per: BTreeMap<String, LangCounts> = site
        .config
        .languages
        .iter()
        .map(|l| (l.clone(), LangCounts::default()))
        .collect();
    for (lang, &closed) in site.config.languages.iter().zip(&plan.closed_pages) {
        per.entry(lang.clone()).or_default().unchanged += closed;
    }
    for job in &plan.jobs {
        if let JobKind::Page(i) = job.kind {
            let c = per.entry(plan.sources[i].src.lang.clone()).or_default();
            if job.render {
                c.rebuilt += 1;
            } else {
                c.unchanged += 1;
            }
        }
    }
    for gone in &plan.removed {
        if let model::JobId::Page { lang, .. } = &gone.id {
            per.entry(lang.clone()).or_default().removed += 1;
        }
    }
    per
}

/// A hidden progress display: the site build draws nothing unless its caller asks.
fn no_progress(_jobs: usize) -> indicatif::ProgressBar {
    indicatif::ProgressBar::hidden()
}

/// Frees a large structure (a site's plan or manifest: hundreds of thousands of small
/// allocations) on another thread, so a build does not wait for it.
fn drop_in_background<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new()
        .name("vramdoc-drop".into())
        .spawn(move || drop(value));
}

/// Phase timings, told to the build's `notify` when `VRAMDOC_TIMINGS` is set: where a build's
/// time goes.
struct Phases {
    last: Option<Instant>,
    notify: fn(&str),
}

impl Phases {
    fn new(notify: fn(&str)) -> Phases {
        Phases {
            last: std::env::var_os("VRAMDOC_TIMINGS").map(|_| Instant::now()),
            notify,
        }
    }

    /// Tells the time since the previous mark under `name`.
    fn mark(&mut self, name: &str) {
        if let Some(last) = self.last {
            let now = Instant::now();
            (self.notify)(&format!(
                "timing: {name:<14} {:>8.2} ms",
                (now - last).as_secs_f64() * 1e3
            ));
            self.last = Some(now);
        }
    }
}
