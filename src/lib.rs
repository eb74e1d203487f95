//! vramdoc: GPU-memory troubleshooting guides in, a static multilingual site out.
//!
//! A code map, one line per module (the data flow and each stage's files are in
//! `ARCHITECTURE.md`; `code_map_names_every_module` keeps this list whole):
//! - the site build: [`content`] (guides, front matter, variants) → [`estimate`] (the pure
//!   memory model) → [`expand`] (`{{ }}` expressions and the charts of [`chart`]) → [`present`]
//!   (labels, verdict words, units, tables) → [`markdown`] (Markdown to HTML) → `templates` (the
//!   tera environment) → [`site`] (plan, run the page jobs in parallel, put the output in place,
//!   incrementally). `search` builds the offline search index of what it writes, `check`
//!   dry-runs it with the `glossary` and `prose_figures` checks, and `serve` rebuilds it on every
//!   change; [`translations`] tracks which translated sections are stale. `config` reads
//!   `vramdoc.yaml`, `site_paths` names a site's folders and files, `site_files` reads them.
//! - the commands at the edge: [`cli`] (everything clap: flags, typed requests, the runners that
//!   print through [`terminal`]) runs `vramdoc estimate` through [`scenario`] (the input
//!   language: one table of keys, YAML and nanoGPT Python inputs, `meta.pkl` and checkpoints, the
//!   GPU catalog) and [`estimate`], and `vramdoc diagnose` through [`oom`] (out-of-memory
//!   messages, pure); both print through [`present`].
//! - shared: [`i18n`] (Fluent bundles, locale number formats), [`diagnostics`] (located errors),
//!   `yaml_input` (the YAML users write, with the position of every key and value), `cache` (a
//!   byte-bounded memo map), `assets` (the embedded defaults) and [`fingerprint`] (the
//!   estimator's and the manifest's fingerprints, derived from their sources); `fuzzing` is the
//!   fuzz targets' entry point.

mod assets;
mod cache;
pub mod chart;
pub(crate) mod check;
pub mod cli;
pub(crate) mod config;
pub mod content;
pub mod diagnostics;
pub mod estimate;
pub mod expand;
#[doc(hidden)]
pub mod fingerprint;
pub(crate) mod glossary;
pub mod i18n;
pub mod markdown;
pub mod oom;
pub mod present;
pub(crate) mod prose_figures;
pub mod scenario;
pub(crate) mod search;
#[cfg(feature = "serve")]
pub(crate) mod serve;
pub mod site;
pub(crate) mod site_files;
pub(crate) mod site_paths;
pub(crate) mod templates;
pub mod terminal;
pub mod translations;
pub(crate) mod yaml_input;
// The fuzz targets' entry point (tests/fuzz), not an API.
#[doc(hidden)]
pub mod fuzzing;

#[cfg(test)]
mod tests {
    /// The crate doc above is a code map: every module declared here is named in it.
    #[test]
    fn code_map_names_every_module() {
        let text = include_str!("lib.rs");
        let doc: String = text
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .collect::<Vec<_>>()
            .join("\n");
        let modules: Vec<&str> = text
            .lines()
            .filter_map(|l| l.trim().strip_suffix(';'))
            .filter_map(|l| l.rsplit_once("mod ").map(|(_, name)| name))
            .filter(|name| name.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
            .collect();
        assert!(modules.len() > 20, "modules not found: {modules:?}");
        let missing: Vec<&&str> = modules
            .iter()
            .filter(|m| !doc.contains(&format!("`{m}`")) && !doc.contains(&format!("[`{m}`]")))
            .collect();
        assert!(
            missing.is_empty(),
            "lib.rs's code map does not name {missing:?}"
        );
    }
}
