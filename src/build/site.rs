//! The site-wide context of a build: configuration, locale bundles, templates, GPU catalog, and
//! the hashes of all of them (what every page's rendering depends on).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::manifest::{Digest, Hasher};
use crate::config::SiteConfig;
use crate::diagnostics::Diagnostic;
use crate::estimate::GpuCatalog;
use crate::i18n::Locales;
use crate::render::Renderer;

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
    let inputs_hash = site_inputs_hash(root);
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

/// Hash of every site-wide input a page's rendering depends on: vramdoc's version, the
/// configuration, and the embedded and site templates, locales and static files. Files are named
/// by their path relative to the root, so `--root .`, `--root $PWD` and `serve` (which makes the
/// root absolute) share one cache.
fn site_inputs_hash(root: &Path) -> Digest {
    let mut h = Hasher::new();
    h.part(env!("CARGO_PKG_VERSION"));
    h.part(std::fs::read(root.join(crate::config::CONFIG_FILE)).unwrap_or_default());
    for set in [
        crate::assets::TEMPLATES,
        crate::assets::LOCALES,
        crate::assets::STATIC,
    ] {
        for (name, text) in set {
            h.part(name).part(text);
        }
    }
    for dir in ["templates", "locales", "static"] {
        let mut files = Vec::new();
        collect_files(&root.join(dir), &mut files);
        files.sort();
        for f in files {
            let rel = f.strip_prefix(root).unwrap_or(&f);
            h.part(rel.to_string_lossy().as_bytes())
                .part(std::fs::read(&f).unwrap_or_default());
        }
    }
    h.finish()
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The built-in GPU catalog plus the site's own `data/gpus.yaml`, if any, and its hash.
fn load_catalog(root: &Path) -> Result<(GpuCatalog, Digest), Vec<Diagnostic>> {
    let mut catalog = GpuCatalog::builtin();
    let path = root.join("data").join("gpus.yaml");
    if let Ok(text) = std::fs::read_to_string(&path) {
        catalog.extend_from_yaml(&text).map_err(|e| {
            vec![Diagnostic::error(e.message.clone())
                .in_file("data/gpus.yaml")
                .with_help("each entry needs an id, a name and capacity_bytes")]
        })?;
    }
    // The catalog's serialized data, not its `Debug` text (which may change with the code).
    let mut hasher = Hasher::new();
    for gpu in catalog.iter() {
        hasher.part(serde_json::to_vec(gpu).unwrap_or_default());
    }
    let h = hasher.finish();
    Ok((catalog, h))
}
