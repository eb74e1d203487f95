//! vramdoc: GPU-memory troubleshooting guides in, a static multilingual site out.
//!
//! The modules follow the pipeline (see `ARCHITECTURE.md`):
//! `content` → `estimate` → `expand` → `markdown` / `chart` → `render` → `build`.

mod assets;
mod cache;
pub mod chart;
pub(crate) mod check;
pub mod cli;
pub(crate) mod config;
pub mod content;
pub mod diagnose;
pub mod diagnostics;
pub mod estimate;
pub mod expand;
pub mod i18n;
pub mod markdown;
pub mod present;
pub(crate) mod render;
pub mod report;
pub(crate) mod search;
#[cfg(feature = "serve")]
pub(crate) mod serve;
pub mod site;
pub(crate) mod site_files;
pub(crate) mod site_paths;
pub mod translations;
