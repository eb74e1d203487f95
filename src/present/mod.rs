//! How results are shown: labels, verdict words, units and tables for `vramdoc estimate`,
//! `vramdoc diagnose` and the guides' blocks, in every locale. The commands and the page expander
//! compute; this module turns what they computed into text.
//!
//! - [`rows`]: the rows an estimate is shown as (memory lines, option rows) and their labels.
//! - [`verdict`]: the verdict in words, every form it takes (name, table cell, sentence, note).
//! - [`table`]: the table writers, one per format (terminal text, Markdown).
//! - [`text`]: terminal text measure (wide characters, wrapping).
//! - [`html`]: data escaped for a page, byte figures carrying their exact count.
//! - [`guide_tables`]: a guide's breakdown, parameter and options tables.
//! - [`estimate_report`]: `vramdoc estimate`'s table and Markdown for a training run.
//! - [`sample_report`]: the same for a sampling run (nanoGPT's `sample.py`).
//! - [`diagnosis_report`]: `vramdoc diagnose`'s table and Markdown, and the guide block
//!   `{{ diagnosis() }}`.

pub(crate) mod diagnosis_report;
pub(crate) mod estimate_report;
pub mod format;
pub(crate) mod guide_tables;
pub(crate) mod html;
pub(crate) mod rows;
pub(crate) mod sample_report;
pub(crate) mod table;
pub(crate) mod text;
pub(crate) mod verdict;

pub use format::Format;
pub use rows::option_key;
pub(crate) use rows::*;
pub(crate) use verdict::{verdict_name, verdict_of_fits, verdict_of_state};
