//! vramdoc: GPU-memory troubleshooting guides in, a static multilingual site out.
//!
//! The modules follow the pipeline (see `ARCHITECTURE.md`):
//! `content` → `estimate` → `expand` → `markdown` / `chart` → `render` → `build`.

mod assets;
mod cache;
pub mod chart;
pub mod check;
pub mod cli;
pub mod config;
pub mod content;
pub mod diagnose;
pub mod diagnostics;
pub mod estimate;
pub mod expand;
pub mod i18n;
pub mod markdown;
pub mod present;
pub mod render;
pub mod report;
pub mod search;
#[cfg(feature = "serve")]
pub mod serve;
pub mod site;
pub mod site_files;
pub mod site_paths;
