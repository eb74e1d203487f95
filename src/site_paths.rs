//! Every folder and file name of a site, relative to its root (and of its output), in one place.

use std::path::{Path, PathBuf};

/// The site's configuration file.
pub(crate) const CONFIG_FILE: &str = "vramdoc.yaml";
/// The guides: `content/<guide>/<lang>.md`.
pub(crate) const CONTENT_DIR: &str = "content";
/// The site's own templates, overriding the embedded ones by name.
pub(crate) const TEMPLATES_DIR: &str = "templates";
/// The site's own Fluent bundles: `locales/<lang>/*.ftl`.
pub(crate) const LOCALES_DIR: &str = "locales";
/// Files copied to the output as they are.
pub(crate) const STATIC_DIR: &str = "static";
/// Data the estimator reads (the GPU catalog).
pub(crate) const DATA_DIR: &str = "data";
/// The site's GPU catalog, merged over the built-in one.
pub(crate) const CATALOG_FILE: &str = "data/gpus.yaml";
/// The output folder's name under the root when `--out` is not given.
pub(crate) const DEFAULT_OUT: &str = "public";
/// The manifest's folder inside the output folder.
pub(crate) const MANIFEST_DIR: &str = ".vramdoc-manifest";

/// The folders of site-wide inputs, in the order their files are hashed.
pub(crate) const INPUT_DIRS: [&str; 4] = [TEMPLATES_DIR, LOCALES_DIR, STATIC_DIR, DATA_DIR];
/// The folders whose changes `serve` rebuilds for (with the configuration file).
pub(crate) const SOURCE_DIRS: [&str; 5] = [
    CONTENT_DIR,
    TEMPLATES_DIR,
    LOCALES_DIR,
    DATA_DIR,
    STATIC_DIR,
];

/// A site's paths under its root.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SitePaths<'a> {
    root: &'a Path,
}

impl<'a> SitePaths<'a> {
    /// The paths of the site at `root`.
    pub(crate) fn new(root: &'a Path) -> SitePaths<'a> {
        SitePaths { root }
    }

    /// `vramdoc.yaml`.
    pub(crate) fn config(&self) -> PathBuf {
        self.root.join(CONFIG_FILE)
    }

    /// `content/`.
    pub(crate) fn content(&self) -> PathBuf {
        self.root.join(CONTENT_DIR)
    }

    /// `templates/`.
    pub(crate) fn templates(&self) -> PathBuf {
        self.root.join(TEMPLATES_DIR)
    }

    /// `locales/<lang>/`.
    pub(crate) fn locale(&self, lang: &str) -> PathBuf {
        self.root.join(LOCALES_DIR).join(lang)
    }

    /// `data/gpus.yaml`.
    pub(crate) fn catalog(&self) -> PathBuf {
        self.root.join(CATALOG_FILE)
    }
}
