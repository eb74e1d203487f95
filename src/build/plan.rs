//! Planning a build: read every source cheaply (hash first, parse only what changed), check the
//! guides, and list the output jobs with the hash of their inputs.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs::Metadata;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::manifest::{
    hash, now_ns, DataEntry, Digest, GuideEntry, Hasher, JobEntry, Manifest, SourceEntry, Stamp,
    Summary,
};
use super::SiteContext;
use crate::config::SiteConfig;
use crate::content::{self, GuideFolder, Page, PageSource};
use crate::diagnostics::Diagnostic;
use crate::estimate::ESTIMATOR_VERSION;

/// One source page as the plan knows it.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub(crate) src: PageSource,
    pub(crate) hash: Digest,
    pub(crate) summary: Summary,
    /// The file's stamp, unless too recent to trust.
    pub(crate) stamp: Option<Stamp>,
}

/// An output job and whether it must be rendered.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub(crate) id: String,
    pub(crate) kind: JobKind,
    pub(crate) inputs: Digest,
    pub(crate) render: bool,
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
    pub(crate) jobs: Vec<Job>,
    /// Job ids of the previous build that no longer exist.
    pub(crate) removed: Vec<String>,
    /// The previous build's jobs.
    pub(crate) previous_jobs: BTreeMap<String, JobEntry>,
    /// True when something the manifest records about the sources changed (a file's stamp, a
    /// folder's listing, a guide's data), so it must be rewritten even if no job renders.
    pub(crate) sources_changed: bool,
}

impl Plan {
    /// The manifest recording this plan's sources and, per job, the entry `rendered` gives it or
    /// else its previous one.
    pub(crate) fn into_manifest(self, mut rendered: BTreeMap<String, JobEntry>) -> Manifest {
        let mut previous_jobs = self.previous_jobs;
        let mut jobs = BTreeMap::new();
        for job in self.jobs {
            let entry = rendered
                .remove(&job.id)
                .or_else(|| previous_jobs.remove(&job.id));
            if let Some(entry) = entry {
                jobs.insert(job.id, entry);
            }
        }
        let mut data = self.data;
        let mut guides: BTreeMap<String, GuideEntry> = self
            .folders
            .into_iter()
            .map(|(slug, folder)| {
                let data = data.remove(&slug);
                let entry = GuideEntry {
                    folder,
                    pages: Vec::new(),
                    data,
                };
                (slug, entry)
            })
            .collect();
        for s in self.sources {
            if let Some(g) = guides.get_mut(&s.src.slug) {
                let entry = SourceEntry {
                    hash: s.hash,
                    stamp: s.stamp,
                    summary: s.summary,
                };
                g.pages.push((s.src.lang, entry));
            }
        }
        Manifest { guides, jobs }
    }
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

/// Plans a build of `root` against the `previous` manifest (`force` renders everything;
/// `verify_outputs` also re-renders jobs whose recorded files are missing from `out`).
pub(crate) fn plan(
    site: &SiteContext,
    root: &Path,
    out: &Path,
    previous: impl FnOnce() -> Manifest + Send,
    force: bool,
    verify_outputs: bool,
    scan: Scan<'_>,
) -> Result<Plan, Vec<Diagnostic>> {
    let now = now_ns();
    let config = &site.config;
    let changed_guides = match scan {
        Scan::Only(paths) => changed_guides(paths),
        Scan::Everything => None,
    };
    // Without a watcher's word, every folder and page is statted: while the previous manifest
    // is decoded on one thread, the others stat (the two together are most of a no-change build).
    let (previous, folders): (Manifest, Vec<(GuideFolder, Option<FolderMeta>)>) =
        match &changed_guides {
            Some(changed) => {
                let previous = previous();
                let folders = known_folders(root, &previous.guides, changed);
                (previous, folders.into_iter().map(|f| (f, None)).collect())
            }
            None => {
                let (previous, statted) = rayon::join(previous, || {
                    content::guide_folders(root).map(|folders| {
                        folders
                            .into_par_iter()
                            .map(|f| {
                                let meta = FolderMeta::of(&f, config);
                                (f, Some(meta))
                            })
                            .collect()
                    })
                });
                (previous, statted.map_err(|e| vec![e])?)
            }
        };
    let Manifest {
        guides: mut previous_guides,
        jobs: previous_jobs,
    } = previous;
    let mut sources_changed = previous_guides.len() != folders.len();
    // Each folder takes its previous entry along (moved, not copied).
    let tasks: Vec<_> = folders
        .into_iter()
        .map(|(f, meta)| {
            let prev = previous_guides.remove(&f.name);
            let trusted = changed_guides
                .as_ref()
                .is_some_and(|c| !c.contains(f.name.as_str()));
            (f, meta, prev, trusted)
        })
        .collect();
    sources_changed |= !previous_guides.is_empty();
    let read: Vec<GuideRead> = tasks
        .into_par_iter()
        .map(|(folder, meta, prev, trusted)| match prev {
            Some(prev) if trusted => GuideRead::unchanged(&folder, prev),
            prev => {
                let meta = meta.unwrap_or_else(|| FolderMeta::of(&folder, config));
                read_guide(&folder, meta, prev, config, now)
            }
        })
        .collect();
    let mut sources = Vec::new();
    let mut errors = Vec::new();
    let mut guides: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut folder_stamps = BTreeMap::new();
    let mut previous_data = BTreeMap::new();
    let site_order = |l: &String| site.config.languages.iter().position(|x| x == l);
    for mut r in read {
        sources_changed |= r.changed;
        errors.append(&mut r.errors);
        if r.sources.is_empty() {
            continue;
        }
        if let Some(d) = r.previous_data {
            previous_data.insert(r.slug.clone(), d);
        }
        let mut langs: Vec<String> = r.sources.iter().map(|s| s.src.lang.clone()).collect();
        langs.sort_by_key(site_order);
        guides.insert(r.slug.clone(), langs);
        folder_stamps.insert(r.slug, r.folder);
        sources.append(&mut r.sources);
    }
    let (data, data_changed) = guide_data_entries(site, &sources, &previous_data, &mut errors);
    sources_changed |= data_changed;
    if !errors.is_empty() {
        return Err(errors);
    }

    let site_hash = site.inputs_hash;
    // A build trusts its manifest (a file deleted by hand comes back with `--force`); `check`
    // also verifies that every recorded output is still there.
    let needs_render = |id: &str, inputs: &Digest| {
        force
            || previous_jobs.get(id).is_none_or(|j| {
                j.inputs != *inputs || (verify_outputs && !j.paths().all(|f| out.join(f).exists()))
            })
    };
    let job = |id: String, kind: JobKind, inputs: Digest| Job {
        render: needs_render(&id, &inputs),
        id,
        kind,
        inputs,
    };
    let langs_of: HashMap<&str, String> = guides
        .iter()
        .map(|(slug, langs)| (slug.as_str(), langs.join(",")))
        .collect();
    // Per page, in parallel: its job and whether the previous build had it.
    let pages: Vec<(Job, bool)> = sources
        .par_iter()
        .enumerate()
        .map(|(i, s)| {
            let mut h = Hasher::new();
            h.digest(&site_hash)
                .digest(&s.hash)
                .part(&langs_of[s.src.slug.as_str()]);
            if let Some(d) = data.get(&s.src.slug) {
                h.digest(&d.data);
            }
            if s.summary.uses_catalog {
                h.digest(&site.catalog_hash);
            }
            let id = format!("page:{}/{}", s.src.lang, s.src.slug);
            let known = previous_jobs.contains_key(&id);
            (job(id, JobKind::Page(i), h.finish()), known)
        })
        .collect();
    let mut found = 0;
    let mut jobs = Vec::with_capacity(pages.len() + site.config.languages.len() + 3);
    for (job, known) in pages {
        found += usize::from(known);
        jobs.push(job);
    }
    // What the language indexes and the sitemap show of every page, hashed in bulk.
    let mut listed: HashMap<&str, Hasher> = HashMap::new();
    let mut mapped = Hasher::new();
    mapped.digest(&site_hash);
    for s in &sources {
        let date = s.summary.date.as_deref().unwrap_or("");
        listed
            .entry(s.src.lang.as_str())
            .or_insert_with(|| {
                let mut h = Hasher::new();
                h.digest(&site_hash);
                h
            })
            .part(&s.src.slug)
            .part(&s.summary.title)
            .part(date)
            .part(s.summary.description.as_deref().unwrap_or(""));
        mapped
            .part(&s.src.slug)
            .part(&s.src.lang)
            .part(date)
            .part(&langs_of[s.src.slug.as_str()]);
    }
    let mut push = |id: String, kind: JobKind, inputs: Digest| jobs.push(job(id, kind, inputs));
    for lang in &site.config.languages {
        let inputs = listed
            .get(lang.as_str())
            .map_or_else(|| Hasher::new().digest(&site_hash).finish(), Hasher::finish);
        push(
            format!("index:{lang}"),
            JobKind::Index(lang.clone()),
            inputs,
        );
    }
    push(
        "root".into(),
        JobKind::Root,
        Hasher::new().digest(&site_hash).finish(),
    );
    push("sitemap".into(), JobKind::Sitemap, mapped.finish());
    push(
        "style".into(),
        JobKind::Style,
        Hasher::new().digest(&site_hash).finish(),
    );

    // Every previous job still exists unless fewer of them are found than were recorded (the
    // site-wide jobs always exist once a site was built).
    let found = found + jobs[sources.len()..].len();
    let removed = if found == previous_jobs.len() {
        Vec::new()
    } else {
        let current: HashSet<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
        previous_jobs
            .keys()
            .filter(|id| !current.contains(id.as_str()))
            .cloned()
            .collect()
    };
    Ok(Plan {
        sources,
        guides,
        folders: folder_stamps,
        data,
        jobs,
        removed,
        previous_jobs,
        sources_changed,
    })
}

/// What the file system says of a guide folder before the manifest is consulted: the folder's
/// metadata, and that of `<lang>.md` for each configured language (in the site's order).
struct FolderMeta {
    folder: Option<Metadata>,
    pages: Vec<Option<Metadata>>,
}

impl FolderMeta {
    fn of(folder: &GuideFolder, config: &SiteConfig) -> FolderMeta {
        let pages = config
            .languages
            .iter()
            .map(|l| std::fs::metadata(folder.path.join(format!("{l}.md"))).ok())
            .collect();
        FolderMeta {
            folder: std::fs::metadata(&folder.path).ok(),
            pages,
        }
    }
}

/// One guide folder read against its previous manifest entry.
struct GuideRead {
    slug: String,
    folder: Option<Stamp>,
    sources: Vec<Source>,
    errors: Vec<Diagnostic>,
    /// The previous build's data entry of the guide.
    previous_data: Option<DataEntry>,
    /// True when the folder's listing or a page's entry differs from the previous build's.
    changed: bool,
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
fn known_folders(
    root: &Path,
    previous: &BTreeMap<String, GuideEntry>,
    changed: &BTreeSet<&str>,
) -> Vec<GuideFolder> {
    let content = root.join("content");
    let names: BTreeSet<&str> = previous
        .keys()
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

impl GuideRead {
    /// A guide the file watcher saw no change in: its previous entry, without a system call.
    fn unchanged(folder: &GuideFolder, previous: GuideEntry) -> GuideRead {
        let sources = previous
            .pages
            .into_iter()
            .map(|(lang, e)| Source {
                src: content::page_source(&folder.name, &lang, &folder.path),
                hash: e.hash,
                summary: e.summary,
                stamp: e.stamp,
            })
            .collect();
        GuideRead {
            slug: folder.name.clone(),
            folder: previous.folder,
            sources,
            errors: Vec::new(),
            previous_data: previous.data,
            changed: false,
        }
    }
}

/// Reads one guide folder: its listing is reused when the folder's stamp is unchanged, and each
/// page is hashed only when its own stamp changed (and parsed only when its bytes did).
fn read_guide(
    folder: &GuideFolder,
    meta: FolderMeta,
    previous: Option<GuideEntry>,
    config: &SiteConfig,
    now: u64,
) -> GuideRead {
    let slug = folder.name.clone();
    let FolderMeta {
        folder: meta,
        pages,
    } = meta;
    let stamp = meta.as_ref().and_then(|m| Stamp::of(m, now));
    let (mut previous_pages, previous_folder, previous_data) = match previous {
        Some(g) => (g.pages, g.folder, g.data),
        None => Default::default(),
    };
    let listing_unchanged = previous_folder
        .zip(meta.as_ref())
        .is_some_and(|(s, m)| s.matches(m))
        && previous_pages
            .iter()
            .all(|(l, _)| config.languages.contains(l));
    let (found, mut errors) = if listing_unchanged {
        let found = previous_pages
            .iter()
            .map(|(lang, _)| content::page_source(&slug, lang, &folder.path))
            .collect();
        (found, Vec::new())
    } else {
        content::list_guide(folder, config)
    };
    let mut changed = stamp != previous_folder || found.len() != previous_pages.len();
    let mut sources = Vec::with_capacity(found.len());
    for src in found {
        let prev = previous_pages
            .iter()
            .position(|(l, _)| *l == src.lang)
            .map(|i| previous_pages.swap_remove(i).1);
        let meta = config
            .languages
            .iter()
            .position(|l| *l == src.lang)
            .and_then(|i| pages[i].clone());
        match read_source(src, meta, prev, now) {
            Ok((s, c)) => {
                changed |= c;
                sources.push(s);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    errors.extend(check_translations_agree(&sources));
    GuideRead {
        slug,
        folder: stamp,
        sources,
        errors,
        previous_data,
        changed,
    }
}

/// Hashes a source unless its stamp is unchanged, and parses it only when its bytes changed.
/// Returns the source and whether its manifest entry changed.
fn read_source(
    src: PageSource,
    meta: Option<Metadata>,
    previous: Option<SourceEntry>,
    now: u64,
) -> Result<(Source, bool), Vec<Diagnostic>> {
    let cannot = |e: std::io::Error| {
        vec![Diagnostic::error(format!("cannot read: {e}")).in_file(&src.shown)]
    };
    let meta = match meta {
        Some(m) => m,
        None => std::fs::metadata(&src.path).map_err(cannot)?,
    };
    let (previous, unchanged) = match previous {
        Some(e) if e.stamp.is_some_and(|s| s.matches(&meta)) => (None, Some(e)),
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
    let stamp = Stamp::of(&meta, now);
    let bytes = std::fs::read(&src.path).map_err(cannot)?;
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
    let scenario_hash = match &fm.scenario {
        None => None,
        Some((scenario, _)) => {
            let mut h = Hasher::new();
            h.part(yaml_serde::to_string(scenario).unwrap_or_default());
            for (id, set) in super::guides::variant_sets(page) {
                h.part(yaml_serde::to_string(&id).unwrap_or_default());
                h.part(yaml_serde::to_string(&set).unwrap_or_default());
            }
            Some(h.finish())
        }
    };
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
                let line = content::load(&s.src)
                    .ok()
                    .and_then(|p| p.front.scenario.map(|(_, l)| l))
                    .unwrap_or(1);
                errors.push(
                    Diagnostic::error(format!(
                        "the translations disagree on the scenario or variants: {} and {} must have the same `scenario:` and variant `id`/`set:` values",
                        f.src.shown.display(),
                        s.src.shown.display()
                    ))
                    .in_file(&s.src.shown)
                    .at(line, 1)
                    .with_help("a guide's translations share one scenario; only titles, prose and variant labels differ"),
                );
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
/// catalog or estimator change rebuilds exactly the pages whose numbers changed). Also says
/// whether any entry differs from the previous build's.
fn guide_data_entries(
    site: &SiteContext,
    sources: &[Source],
    previous: &BTreeMap<String, DataEntry>,
    errors: &mut Vec<Diagnostic>,
) -> (BTreeMap<String, DataEntry>, bool) {
    let mut firsts: BTreeMap<&str, (&Source, Digest)> = BTreeMap::new();
    for s in sources {
        if let Some(h) = s.summary.scenario_hash {
            firsts.entry(s.src.slug.as_str()).or_insert((s, h));
        }
    }
    let mut changed = firsts.len() != previous.len();
    let computed: Vec<(String, Result<DataEntry, Vec<Diagnostic>>)> = firsts
        .par_iter()
        .map(|(slug, (s, scenario_hash))| {
            let inputs = data_inputs(site, scenario_hash);
            if let Some(prev) = previous.get(*slug).filter(|d| d.inputs == inputs) {
                return (slug.to_string(), Ok(*prev));
            }
            let entry = content::load(&s.src)
                .and_then(|p| super::guides::compute_one(&p, &site.catalog))
                .map(|d| DataEntry {
                    inputs,
                    data: super::guides::data_hash(&d),
                });
            (slug.to_string(), entry)
        })
        .collect();
    let mut out = BTreeMap::new();
    for (slug, r) in computed {
        match r {
            Ok(e) => {
                changed |= previous.get(&slug) != Some(&e);
                out.insert(slug, e);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    (out, changed)
}
