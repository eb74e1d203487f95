//! vramdoc: GPU-memory troubleshooting guides in, a static multilingual site out.
//!
//! A code map (the data flow and each stage's files are in `ARCHITECTURE.md`):
//! - the site build: [`content`] (guides, front matter, variants) → [`estimate`] (the pure
//!   memory model) → [`expand`] (`{{ }}` expressions, tables, charts through [`present`] and
//!   [`chart`]) → [`markdown`] → `render` (tera) → [`site`] (plan, render jobs in parallel, put
//!   the output in place, incrementally); `search` indexes what it writes, `check` dry-runs it
//!   and `serve` rebuilds it on every change;
//! - the commands at the edge: [`cli`] (everything clap: flags, typed requests, the runners that
//!   print) runs `vramdoc estimate` through [`scenario`] (the input language: one table of keys,
//!   YAML and nanoGPT Python inputs, `meta.pkl` and checkpoints, the GPU catalog) and
//!   [`estimate`], and `vramdoc diagnose` through [`oom`] (out-of-memory messages, pure); both
//!   print through [`present`];
//! - shared: [`i18n`] (Fluent bundles, locale number formats), [`diagnostics`] (located errors),
//!   `yaml_input` (YAML with bounds and the position of every key and value),
//!   `assets` (the embedded defaults and the derived fingerprints, see [`fingerprint`]).

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
pub(crate) mod render;
pub mod scenario;
pub(crate) mod search;
#[cfg(feature = "serve")]
pub(crate) mod serve;
pub mod site;
pub(crate) mod site_files;
pub(crate) mod site_paths;
pub mod terminal;
pub mod translations;
pub(crate) mod yaml_input;
// The fuzz targets' entry point (tests/fuzz), not an API.
#[doc(hidden)]
pub mod fuzzing;
