//! Orchestration: read the site, render every output in parallel, write the output folder once.
//!
//! `build` never writes a partial site: pages render into a staging folder beside `--out` and
//! replace it only when every page succeeded (see [`output`]). All problems are collected and
//! returned together.

mod guides;
mod indexes;
pub mod output;
mod pages;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::config::SiteConfig;
use crate::content::{self, Page};
use crate::diagnostics::{self, Diagnostic};
use crate::estimate::GpuCatalog;
use crate::i18n::Locales;
use crate::render::Renderer;

/// What to build and where.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BuildOptions {
    /// The site root (holds `vramdoc.yaml`, `content/`, optional `templates/` and `locales/`).
    pub root: PathBuf,
    /// The output folder.
    pub out: PathBuf,
}

impl BuildOptions {
    /// Options for `root`, writing to `out` (default `root/public`).
    pub fn new(root: impl Into<PathBuf>, out: Option<PathBuf>) -> Self {
        let root = root.into();
        let out = out.unwrap_or_else(|| root.join("public"));
        BuildOptions { root, out }
    }
}

/// What a successful build did.
#[derive(Debug, Clone)]
pub struct BuildReport {
    /// Guide pages written per language.
    pub pages_per_lang: BTreeMap<String, usize>,
    /// Files written in all.
    pub files: usize,
    /// Warnings (missing locale keys, lint findings).
    pub warnings: Vec<Diagnostic>,
    /// Wall-clock time.
    pub elapsed: Duration,
}

impl BuildReport {
    /// The one-line summary `vramdoc build` prints.
    pub fn summary(&self, out: &Path) -> String {
        let per: Vec<String> = self
            .pages_per_lang
            .iter()
            .map(|(l, n)| format!("{l} {n}"))
            .collect();
        format!(
            "built {} pages ({}) into {} in {} ms",
            self.pages_per_lang.values().sum::<usize>(),
            per.join(", "),
            out.display(),
            self.elapsed.as_millis()
        )
    }
}

/// Everything a page needs to render, loaded once per build.
pub(crate) struct SiteContext {
    pub(crate) config: SiteConfig,
    pub(crate) locales: Arc<Locales>,
    pub(crate) renderer: Renderer,
    pub(crate) catalog: GpuCatalog,
}

/// Builds the site. On failure returns every diagnostic (errors and warnings) and leaves `out`
/// untouched.
pub fn build(opts: &BuildOptions) -> Result<BuildReport, Vec<Diagnostic>> {
    let start = Instant::now();
    let (site, mut warnings) = load_site(&opts.root)?;
    let (sources, mut errors) = content::discover(&opts.root, &site.config);
    let loaded: Vec<Result<Page, Vec<Diagnostic>>> =
        sources.par_iter().map(content::load).collect();
    let mut pages = Vec::new();
    for r in loaded {
        match r {
            Ok(p) => pages.push(p),
            Err(mut e) => errors.append(&mut e),
        }
    }
    let guides = group_guides(&pages);
    let (guide_data, mut data_errors) = guides::compute(&guides, &site.catalog);
    errors.append(&mut data_errors);
    let staging = if errors.is_empty() {
        match output::Staging::new(&opts.out, &opts.root) {
            Ok(s) => Some(s),
            Err(e) => {
                errors.push(e);
                None
            }
        }
    } else {
        None
    };
    let mut files = 0;
    if let Some(staging) = &staging {
        let results: Vec<Result<pages::Rendered, Vec<Diagnostic>>> = pages
            .par_iter()
            .map(|p| {
                let slug = p.src.slug.as_str();
                let data = guide_data.get(slug).and_then(Option::as_ref);
                pages::render_guide(&site, p, &guides[slug], data, staging)
            })
            .collect();
        for r in results {
            match r {
                Ok(rendered) => {
                    files += rendered.files;
                    warnings.extend(rendered.warnings);
                }
                Err(mut e) => errors.append(&mut e),
            }
        }
        if errors.is_empty() {
            match indexes::write_indexes(&site, &pages, &guides, staging) {
                Ok(n) => files += n,
                Err(mut e) => errors.append(&mut e),
            }
        }
    }
    if diagnostics::error_count(&errors) > 0 {
        errors.append(&mut warnings);
        diagnostics::sort(&mut errors);
        return Err(errors);
    }
    if let Some(staging) = staging {
        staging.commit().map_err(|e| vec![e])?;
    }
    let mut pages_per_lang: BTreeMap<String, usize> = site
        .config
        .languages
        .iter()
        .map(|l| (l.clone(), 0))
        .collect();
    for p in &pages {
        *pages_per_lang.entry(p.src.lang.clone()).or_default() += 1;
    }
    diagnostics::sort(&mut warnings);
    Ok(BuildReport {
        pages_per_lang,
        files,
        warnings,
        elapsed: start.elapsed(),
    })
}

/// Loads the configuration, locale bundles and templates.
pub(crate) fn load_site(root: &Path) -> Result<(SiteContext, Vec<Diagnostic>), Vec<Diagnostic>> {
    let config = SiteConfig::load(root)?;
    let locales = Arc::new(Locales::load(
        Some(root),
        &config.languages,
        &config.default_language,
    )?);
    let warnings = locales.missing_key_warnings();
    let renderer = Renderer::new(root, locales.clone())?;
    let catalog = load_catalog(root)?;
    Ok((
        SiteContext {
            config,
            locales,
            renderer,
            catalog,
        },
        warnings,
    ))
}

/// The built-in GPU catalog plus the site's own `data/gpus.yaml`, if any.
fn load_catalog(root: &Path) -> Result<GpuCatalog, Vec<Diagnostic>> {
    let mut catalog = GpuCatalog::builtin();
    let path = root.join("data").join("gpus.yaml");
    if let Ok(text) = std::fs::read_to_string(&path) {
        catalog.extend_from_yaml(&text).map_err(|e| {
            vec![
                Diagnostic::error(format!("invalid GPU catalog: {}", e.message))
                    .in_file("data/gpus.yaml")
                    .with_help("each entry needs an id, a name and capacity_bytes"),
            ]
        })?;
    }
    Ok(catalog)
}

/// The languages each guide exists in, by slug, in the site's language order.
pub(crate) type Guides<'a> = BTreeMap<&'a str, Vec<&'a Page>>;

fn group_guides(pages: &[Page]) -> Guides<'_> {
    let mut guides: Guides<'_> = BTreeMap::new();
    for p in pages {
        guides.entry(p.src.slug.as_str()).or_default().push(p);
    }
    guides
}
