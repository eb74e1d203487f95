//! How results are shown: labels, verdict words, units and tables for `vramdoc estimate`,
//! `vramdoc diagnose` and the guides' blocks, in every locale. The commands and the page expander
//! compute; this module turns what they computed into text. It reads the estimator's and the
//! diagnosis's types, the locale bundles and Markdown's escaping, and nothing of its callers
//! (`callers_stay_outside` checks the `use` lines): no clap, no site, no expander, no terminal.
//!
//! - [`rows`]: the rows an estimate is shown as (memory lines, option rows) and their labels.
//! - [`verdict`]: the verdict in words, every form it takes (name, table cell, sentence, note).
//! - [`table`]: the table writers, one per format (terminal text, Markdown).
//! - [`text`]: terminal text measure (wide characters, wrapping).
//! - [`html`]: data escaped for a page, byte figures carrying their exact count.
//! - [`guide_tables`]: a guide's breakdown, parameter and options tables.
//! - [`short_answer`]: the short answer under a guide's title.
//! - [`solve_table`]: a generate guide's table of the solvers' answers, one row per model and card.
//! - [`estimate_report`]: `vramdoc estimate`'s table and Markdown for a training run.
//! - [`sample_report`]: the same for a sampling run (nanoGPT's `sample.py`).
//! - [`diagnosis_report`]: `vramdoc diagnose`'s table and Markdown, and the guide block
//!   `{{ diagnosis() }}`.
//! - [`other_errors_report`]: `diagnose`'s report on a CUDA, cuBLAS, cuDNN or NCCL memory error.
//! - [`snapshot_report`]: `diagnose`'s report on a memory readout (`memory_summary()`,
//!   `nvidia-smi`).

pub(crate) mod diagnosis_report;
pub(crate) mod estimate_report;
pub mod format;
pub(crate) mod generate_options;
pub(crate) mod generate_report;
pub(crate) mod guide_tables;
pub(crate) mod html;
pub(crate) mod nanochat_labels;
pub(crate) mod other_errors_report;
pub(crate) mod rows;
pub(crate) mod sample_report;
pub(crate) mod short_answer;
pub(crate) mod snapshot_report;
pub(crate) mod solve_report;
pub(crate) mod solve_table;
pub(crate) mod table;
pub(crate) mod text;
pub(crate) mod verdict;

pub use format::Format;
pub use rows::option_key;
pub(crate) use rows::*;
pub use table::wrap_tables_to;
pub(crate) use verdict::{verdict_name, verdict_of_fits};

#[cfg(test)]
mod tests {
    /// The modules `present` may name: what it shows (the estimator's and the diagnosis's types,
    /// the scenario keys' table), how (locales, Markdown escaping) and itself.
    const ALLOWED: [&str; 6] = ["estimate", "oom", "scenario", "i18n", "markdown", "present"];

    #[test]
    fn callers_stay_outside() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/present");
        let mut files = vec![dir.join("rows/tests.rs")];
        for entry in std::fs::read_dir(&dir).expect("read src/present").flatten() {
            if entry.path().extension().is_some_and(|e| e == "rs") {
                files.push(entry.path());
            }
        }
        assert!(files.len() > 10, "the sources were not found: {files:?}");
        // Spelt in two pieces so that this test's own text does not match.
        let clap = ["clap", "::"].concat();
        let mut wrong = Vec::new();
        for file in &files {
            let text = std::fs::read_to_string(file).expect("read a source file");
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                if code.contains(&clap) {
                    wrong.push(format!("{}:{}: {clap}", file.display(), n + 1));
                }
                for (i, _) in code.match_indices("crate::") {
                    let name: String = code[i + "crate::".len()..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() && !ALLOWED.contains(&name.as_str()) {
                        wrong.push(format!("{}:{}: crate::{name}", file.display(), n + 1));
                    }
                }
            }
        }
        assert!(wrong.is_empty(), "present names its callers: {wrong:#?}");
    }
}
