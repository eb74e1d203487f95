//! The site-wide context of a build: configuration, locale bundles, templates, GPU catalog, and
//! the hashes of all of them (what every page's rendering depends on).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::manifest::{Digest, Hasher};
use crate::config::SiteConfig;
use crate::content::published;
use crate::diagnostics::Diagnostic;
use crate::estimate::GpuCatalog;
use crate::i18n::Locales;
use crate::scenario::catalog::add_file;
use crate::site_files;
use crate::site_paths::{SitePaths, CATALOG_FILE};
use crate::templates::Renderer;

/// Everything a page needs to render, loaded once per build.
pub(crate) struct SiteContext {
    pub(crate) config: SiteConfig,
    pub(crate) locales: Arc<Locales>,
    pub(crate) renderer: Renderer,
    pub(crate) catalog: GpuCatalog,
    /// Hash of the configuration, templates, locales and static files.
    pub(crate) inputs_hash: Digest,
    /// Hash of the GPU catalog.
    pub(crate) catalog_hash: Digest,
    /// Charts drawn so far in this build, shared between pages.
    pub(crate) charts: crate::expand::ChartCache,
}

/// Loads the configuration, locale bundles, templates and GPU catalog, and hashes them.
pub(crate) fn load_site(root: &Path) -> Result<(SiteContext, Vec<Diagnostic>), Vec<Diagnostic>> {
    let config = SiteConfig::load(root)?;
    // Checked before anything in them is read: each problem is reported, all at once.
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for dir in SITE_DIRS {
        let (found, mut bad) = site_files::walk(root, dir, config.follow_external_symlinks);
        files.push(found);
        errors.append(&mut bad);
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let locales = Arc::new(Locales::load(
        Some(root),
        &config.languages,
        &config.default_language,
    )?);
    let mut warnings = locales.missing_key_warnings();
    warnings.extend_from_slice(locales.load_warnings());
    let renderer = Renderer::new(root, locales.clone())?;
    warnings.extend_from_slice(renderer.warnings());
    let (catalog, catalog_hash) = load_catalog(root)?;
    let inputs_hash = site_inputs_hash(root, &files[..3]);
    Ok((
        SiteContext {
            config,
            locales,
            renderer,
            catalog,
            inputs_hash,
            catalog_hash,
            charts: Default::default(),
        },
        warnings,
    ))
}

impl SiteContext {
    /// The problems met while formatting messages since the last call (see
    /// `Locales::take_warnings`).
    pub(crate) fn message_warnings(&self) -> Vec<Diagnostic> {
        self.locales.take_warnings(self.renderer.unknown_keys())
    }
}

/// The site's folders of site-wide inputs, each checked by [`site_files::walk`] before the build
/// reads anything in them (templates, locales and static files are hashed, in this order).
use crate::site_paths::INPUT_DIRS as SITE_DIRS;

/// Hash of every site-wide input a page's rendering depends on: vramdoc's version, the
/// configuration, and the embedded and site templates, locales and static files (`files`: those
/// of the site, per folder, sorted). Files are named by their path relative to the root, so
/// `--root .`, `--root $PWD` and `serve` (which makes the root absolute) share one cache.
fn site_inputs_hash(root: &Path, files: &[Vec<PathBuf>]) -> Digest {
    let mut h = Hasher::new();
    h.part(env!("CARGO_PKG_VERSION"));
    h.part(std::fs::read(SitePaths::new(root).config()).unwrap_or_default());
    for set in [
        crate::assets::TEMPLATES,
        crate::assets::LOCALES,
        crate::assets::STATIC,
    ] {
        for (name, text) in set {
            h.part(name).part(text);
        }
    }
    for f in files.iter().flatten() {
        let rel = f.strip_prefix(root).unwrap_or(f);
        h.part(rel.to_string_lossy().as_bytes())
            .part(site_files::read(f, f).unwrap_or_default());
    }
    h.finish()
}

/// The built-in GPU catalog plus the site's own `data/gpus.yaml`, if any, and its hash.
fn load_catalog(root: &Path) -> Result<(GpuCatalog, Digest), Vec<Diagnostic>> {
    let mut catalog = GpuCatalog::builtin();
    let path = SitePaths::new(root).catalog();
    if std::fs::metadata(&path).is_ok() {
        let text =
            site_files::read_to_string(&path, Path::new(CATALOG_FILE)).map_err(|e| vec![e])?;
        // Every bad entry, each at its line (a control character in a name among them).
        let help = "each entry needs an id, a name and capacity_bytes";
        add_file(&mut catalog, &text, Path::new(CATALOG_FILE), Some(help))?;
        unpublishable_names(&catalog, &text)?;
    }
    // The catalog's serialized data, not its `Debug` text (which may change with the code).
    let mut hasher = Hasher::new();
    for gpu in catalog.iter() {
        hasher.part(serde_json::to_vec(gpu).unwrap_or_default());
    }
    let h = hasher.finish();
    Ok((catalog, h))
}

/// Refuses GPU names and ids of the site's catalog that hold a character that may not be
/// published (`content::published`): they reach the guides' tables, charts and feeds. Each is
/// reported at the line of its entry's `id` (the built-in entries are clean).
fn unpublishable_names(catalog: &GpuCatalog, text: &str) -> Result<(), Vec<Diagnostic>> {
    let source: std::sync::Arc<str> = std::sync::Arc::from(text);
    let mut errors = Vec::new();
    for gpu in catalog.iter() {
        let texts = [("name", &gpu.name), ("id", &gpu.id)].into_iter();
        let aliases = gpu.aliases.iter().map(|a| ("alias", a));
        for (what, t) in texts.chain(aliases) {
            let Some(msg) =
                published::refusal(&format!("the {what} of GPU `{}`", gpu.id.escape_debug()), t)
            else {
                continue;
            };
            let line = text
                .lines()
                .position(|l| l.contains(gpu.id.as_str()))
                .map_or(1, |i| i + 1);
            errors.push(
                Diagnostic::error(msg)
                    .in_file(CATALOG_FILE)
                    .at(line, 1)
                    .with_source(source.clone())
                    .with_help(published::HELP),
            );
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}
