//! Planning a build: read every source cheaply (hash first, parse only what changed), check the
//! guides, and list the output jobs with the hash of their inputs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rayon::prelude::*;

use super::manifest::{hash, DataEntry, Hasher, Manifest, SourceEntry, Summary};
use super::SiteContext;
use crate::content::{self, Page, PageSource};
use crate::diagnostics::Diagnostic;
use crate::estimate::ESTIMATOR_VERSION;

/// One source page as the plan knows it.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub(crate) src: PageSource,
    pub(crate) hash: String,
    pub(crate) summary: Summary,
    /// Size and modification time, when known.
    pub(crate) stamp: Option<(u64, u128)>,
}

/// An output job and whether it must be rendered.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub(crate) id: String,
    pub(crate) kind: JobKind,
    pub(crate) inputs: String,
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
    pub(crate) sources: Vec<Source>,
    /// Languages each guide exists in, in site order.
    pub(crate) guides: BTreeMap<String, Vec<String>>,
    /// Per guide with a scenario: its data entry (inputs and data hashes).
    pub(crate) data: BTreeMap<String, DataEntry>,
    pub(crate) jobs: Vec<Job>,
    /// Job ids of the previous build that no longer exist.
    pub(crate) removed: Vec<String>,
    pub(crate) previous: Manifest,
}

/// Plans a build of `root` against the previous `manifest` (`force` renders everything;
/// `verify_outputs` also re-renders jobs whose recorded files are missing from `out`).
pub(crate) fn plan(
    site: &SiteContext,
    root: &Path,
    out: &Path,
    previous: Manifest,
    force: bool,
    verify_outputs: bool,
) -> Result<Plan, Vec<Diagnostic>> {
    let (found, mut errors) = content::discover(root, &site.config);
    let read: Vec<Result<Source, Vec<Diagnostic>>> = found
        .into_par_iter()
        .map(|src| read_source(src, &previous))
        .collect();
    let mut sources = Vec::new();
    for r in read {
        match r {
            Ok(s) => sources.push(s),
            Err(mut e) => errors.append(&mut e),
        }
    }
    let mut guides: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for s in &sources {
        guides
            .entry(s.src.slug.clone())
            .or_default()
            .push(s.src.lang.clone());
    }
    for langs in guides.values_mut() {
        langs.sort_by_key(|l| site.config.languages.iter().position(|x| x == l));
    }
    errors.extend(check_translations_agree(&sources));
    let data = guide_data_entries(site, &sources, &previous, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }

    let site_hash = site.inputs_hash.as_str();
    let mut jobs = Vec::new();
    // A build trusts its manifest (a file deleted by hand comes back with `--force`); `check`
    // also verifies that every recorded output is still there.
    let exists = |id: &str| {
        !verify_outputs
            || previous
                .jobs
                .get(id)
                .is_some_and(|j| j.files.keys().all(|f| out.join(f).exists()))
    };
    let mut push = |id: String, kind: JobKind, inputs: String| {
        let render =
            force || previous.jobs.get(&id).is_none_or(|j| j.inputs != inputs) || !exists(&id);
        jobs.push(Job {
            id,
            kind,
            inputs,
            render,
        });
    };
    for (i, s) in sources.iter().enumerate() {
        let mut h = Hasher::new();
        h.part(site_hash)
            .part(&s.hash)
            .part(guides[&s.src.slug].join(","));
        h.part(data.get(&s.src.slug).map_or("", |d| d.data.as_str()));
        if s.summary.uses_catalog {
            h.part(&site.catalog_hash);
        }
        push(
            format!("page:{}/{}", s.src.lang, s.src.slug),
            JobKind::Page(i),
            h.finish(),
        );
    }
    for lang in &site.config.languages {
        let mut h = Hasher::new();
        h.part(site_hash);
        for s in sources.iter().filter(|s| s.src.lang == *lang) {
            h.part(&s.src.slug).part(&s.summary.title);
            h.part(s.summary.date.as_deref().unwrap_or(""))
                .part(s.summary.description.as_deref().unwrap_or(""));
        }
        push(
            format!("index:{lang}"),
            JobKind::Index(lang.clone()),
            h.finish(),
        );
    }
    push(
        "root".into(),
        JobKind::Root,
        Hasher::new().part(site_hash).finish(),
    );
    let mut h = Hasher::new();
    h.part(site_hash);
    for s in &sources {
        h.part(&s.src.slug)
            .part(&s.src.lang)
            .part(s.summary.date.as_deref().unwrap_or(""));
        h.part(guides[&s.src.slug].join(","));
    }
    push("sitemap".into(), JobKind::Sitemap, h.finish());
    push(
        "style".into(),
        JobKind::Style,
        Hasher::new().part(site_hash).finish(),
    );

    let current: BTreeSet<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
    let removed = previous
        .jobs
        .keys()
        .filter(|id| !current.contains(id.as_str()))
        .cloned()
        .collect();
    Ok(Plan {
        sources,
        guides,
        data,
        jobs,
        removed,
        previous,
    })
}

/// Hashes a source; parses it only when the previous build did not see these exact bytes.
fn read_source(src: PageSource, previous: &Manifest) -> Result<Source, Vec<Diagnostic>> {
    let cannot = |e: std::io::Error| {
        vec![Diagnostic::error(format!("cannot read: {e}")).in_file(&src.shown)]
    };
    let key = src.shown.to_string_lossy().replace('\\', "/");
    let stamp = stamp(&std::fs::metadata(&src.path).map_err(cannot)?);
    if let Some(entry) = previous
        .sources
        .get(&key)
        .filter(|e| stamp.is_some_and(|s| e.stamp == s))
    {
        return Ok(Source {
            hash: entry.hash.clone(),
            summary: entry.summary.clone(),
            stamp,
            src,
        });
    }
    let bytes = std::fs::read(&src.path).map_err(cannot)?;
    let h = hash(&bytes);
    if let Some(entry) = previous.sources.get(&key).filter(|e| e.hash == h) {
        return Ok(Source {
            src,
            hash: h,
            summary: entry.summary.clone(),
            stamp,
        });
    }
    let page = content::parse(src.clone(), &bytes)?;
    let summary = summarize(&page);
    Ok(Source {
        src,
        hash: h,
        summary,
        stamp,
    })
}

/// A file's size and modification time, if the platform gives one.
fn stamp(meta: &std::fs::Metadata) -> Option<(u64, u128)> {
    let modified = meta
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some((meta.len(), modified.as_nanos()))
}

/// The parts of a parsed page that other outputs depend on.
pub(crate) fn summarize(page: &Page) -> Summary {
    let fm = &page.front;
    let scenario_hash = match &fm.scenario {
        None => String::new(),
        Some((scenario, _)) => {
            let mut h = Hasher::new();
            h.part(yaml_serde::to_string(scenario).unwrap_or_default());
            for (id, set) in super::guides::variant_sets(page) {
                h.part(yaml_serde::to_string(&id).unwrap_or_default());
                h.part(yaml_serde::to_string(&set).unwrap_or_default());
            }
            h.finish()
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

/// Translations of one guide must share scenario and variant overrides.
fn check_translations_agree(sources: &[Source]) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    let mut first: BTreeMap<&str, &Source> = BTreeMap::new();
    for s in sources {
        match first.get(s.src.slug.as_str()) {
            None => {
                first.insert(&s.src.slug, s);
            }
            Some(f) if f.summary.scenario_hash != s.summary.scenario_hash => {
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
            Some(_) => {}
        }
    }
    errors
}

/// Hash of everything a guide's computed data depends on.
fn data_inputs(site: &SiteContext, scenario_hash: &str) -> String {
    Hasher::new()
        .part(scenario_hash)
        .part(&site.catalog_hash)
        .part(ESTIMATOR_VERSION)
        .finish()
}

/// Each guide's data entry: reused when its inputs are unchanged, else computed now (so that a
/// catalog or estimator change rebuilds exactly the pages whose numbers changed).
fn guide_data_entries(
    site: &SiteContext,
    sources: &[Source],
    previous: &Manifest,
    errors: &mut Vec<Diagnostic>,
) -> BTreeMap<String, DataEntry> {
    let mut firsts: BTreeMap<&str, &Source> = BTreeMap::new();
    for s in sources
        .iter()
        .filter(|s| !s.summary.scenario_hash.is_empty())
    {
        firsts.entry(s.src.slug.as_str()).or_insert(s);
    }
    let computed: Vec<(String, Result<DataEntry, Vec<Diagnostic>>)> = firsts
        .par_iter()
        .map(|(slug, s)| {
            let inputs = data_inputs(site, &s.summary.scenario_hash);
            if let Some(prev) = previous
                .guide_data
                .get(*slug)
                .filter(|d| d.inputs == inputs)
            {
                return (slug.to_string(), Ok(prev.clone()));
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
                out.insert(slug, e);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    out
}

/// The manifest entry of a source.
pub(crate) fn source_entry(s: &Source) -> (String, SourceEntry) {
    (
        s.src.shown.to_string_lossy().replace('\\', "/"),
        SourceEntry {
            hash: s.hash.clone(),
            stamp: s.stamp.unwrap_or_default(),
            summary: s.summary.clone(),
        },
    )
}
