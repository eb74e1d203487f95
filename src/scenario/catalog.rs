//! The GPU catalog a command or a site reads: the built-in cards plus a catalog file's
//! (`--catalog FILE`, a site's `data/gpus.yaml`), every bad entry located at its line. The
//! YAML reading of a catalog, the built-in one included, and the checks of its entries live
//! here; [`crate::estimate::gpu`] holds the cards and their lookups.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde::Deserialize;

use crate::diagnostics::Diagnostic;
use crate::estimate::{Gpu, GpuCatalog, ScenarioError};
use crate::scenario::input;
use crate::yaml_input::Seg;

/// The catalog compiled into the binary.
const BUILTIN_YAML: &str = include_str!("../../data/gpus.yaml");

/// The built-in GPU catalog plus `--catalog FILE`'s cards (`estimate` and `diagnose`); every
/// bad entry is reported, each at its line.
pub(crate) fn catalog_with(path: Option<&Path>) -> Result<GpuCatalog, Vec<Diagnostic>> {
    let mut catalog = GpuCatalog::builtin();
    let Some(path) = path else {
        return Ok(catalog);
    };
    let text = input::read_capped_text(Some(path)).map_err(|e| {
        vec![Diagnostic::error(format!("cannot read the GPU catalog: {e}")).in_file(path)]
    })?;
    add_file(&mut catalog, &text, path, None)?;
    Ok(catalog)
}

/// Adds the cards of a catalog file's `text` (`shown` in messages) to `catalog`, after the
/// bracket and size checks; nothing is added when an entry is bad, and every bad entry is an
/// error at the line its entry starts on, with `help` when given.
pub(crate) fn add_file(
    catalog: &mut GpuCatalog,
    text: &str,
    shown: &Path,
    help: Option<&str>,
) -> Result<(), Vec<Diagnostic>> {
    let max = crate::yaml_input::MAX_CATALOG_YAML_BYTES;
    let doc = input::parse_yaml(shown, text, max).map_err(|d| vec![*d])?;
    let source: Arc<str> = Arc::from(text);
    catalog
        .extend_checked(&doc.value, &doc.at)
        .map_err(|problems| {
            problems
                .into_iter()
                .map(|p| {
                    let mut d = Diagnostic::error(p.message).in_file(shown);
                    if let Some(help) = help {
                        d = d.with_help(help);
                    }
                    match p.line {
                        Some(line) => d.at(line, 1).with_source(Arc::clone(&source)),
                        None => d,
                    }
                })
                .collect()
        })
}

/// The YAML document: a `gpus:` list (each entry read on its own, so every bad one is reported).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GpuCatalogFile {
    gpus: Vec<yaml_serde::Value>,
}

/// What a catalog looks like, for its errors.
const CATALOG_SHAPE: &str = "expected `gpus:` followed by entries with id, name and capacity_bytes";

/// One problem of a catalog file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CatalogProblem {
    /// The 1-based line its entry starts on, where it can be told.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// Refuses a control character in an entry's id, name or aliases: they are printed in tables,
/// verdicts and pages, where an escape sequence would reach the terminal or break the XML.
fn check_plain_text(gpu: &Gpu) -> Result<(), ScenarioError> {
    let texts = [&gpu.id, &gpu.name].into_iter().chain(&gpu.aliases);
    match texts.flat_map(|t| t.chars()).find(|c| c.is_control()) {
        None => Ok(()),
        Some(c) => Err(ScenarioError::general(format!(
            "invalid GPU catalog entry \"{}\": a control character (U+{:04X}) in its id, name or aliases; write them as plain text",
            crate::terminal::visible_line(&gpu.id),
            c as u32
        ))),
    }
}

impl GpuCatalog {
    /// The catalog in `data/gpus.yaml`, compiled into the binary.
    pub fn builtin() -> GpuCatalog {
        static BUILTIN: OnceLock<GpuCatalog> = OnceLock::new();
        BUILTIN
            .get_or_init(|| {
                let mut catalog = GpuCatalog::default();
                // The file ships with the binary and a unit test parses it: failing here is a
                // build defect, not a user error.
                catalog
                    .extend_from_yaml(BUILTIN_YAML)
                    .unwrap_or_else(|e| panic!("built-in data/gpus.yaml is invalid: {e}"));
                catalog
            })
            .clone()
    }

    /// Adds the `gpus:` entries of a YAML document; an entry whose id exists replaces it. The
    /// first problem is the error (see [`GpuCatalog::extend_checked`] for all of them).
    pub fn extend_from_yaml(&mut self, yaml: &str) -> Result<(), ScenarioError> {
        let most = crate::yaml_input::MAX_CATALOG_YAML_BYTES;
        if yaml.len() > most {
            return Err(ScenarioError::general(format!(
                "invalid GPU catalog: it is {} KiB, over the {} KiB vramdoc reads",
                yaml.len().div_ceil(1024),
                most / 1024
            )));
        }
        let max = crate::yaml_input::MAX_FILE_FLOW_BRACKETS;
        if let Some(line) = crate::yaml_input::excess_flow_bracket(yaml, max) {
            return Err(ScenarioError::general(format!(
                "invalid GPU catalog: more than {max} `[` and `{{` (line {line}); write entries as indented YAML blocks"
            )));
        }
        let doc: yaml_serde::Value = yaml_serde::from_str(yaml).map_err(|e| {
            ScenarioError::general(format!("invalid GPU catalog: {e}; {CATALOG_SHAPE}"))
        })?;
        let at = crate::yaml_input::YamlPositions::of(yaml);
        self.extend_checked(&doc, &at).map_err(|problems| {
            let first = problems.into_iter().next();
            ScenarioError::general(first.map_or_else(String::new, |p| match p.line {
                Some(line) => format!("{} (the entry at line {line})", p.message),
                None => p.message,
            }))
        })
    }

    /// Adds the `gpus:` entries of `doc` (`at`: where its nodes were written), checking every
    /// entry first: all problems are returned, each at the line its entry starts on, and nothing
    /// is added when there is one.
    pub(crate) fn extend_checked(
        &mut self,
        doc: &yaml_serde::Value,
        at: &crate::yaml_input::YamlPositions,
    ) -> Result<(), Vec<CatalogProblem>> {
        let file: GpuCatalogFile = yaml_serde::from_value(doc.clone()).map_err(|e| {
            vec![CatalogProblem {
                line: None,
                message: format!("invalid GPU catalog: {e}; {CATALOG_SHAPE}"),
            }]
        })?;
        let mut gpus = Vec::new();
        let mut problems = Vec::new();
        for (i, entry) in file.gpus.into_iter().enumerate() {
            let path = [Seg::key("gpus"), Seg::Index(i)];
            let line = at.value(&path).map(|(line, _)| line);
            let checked = yaml_serde::from_value::<Gpu>(entry)
                .map_err(|e| format!("invalid GPU catalog entry {}: {e}", i + 1))
                .and_then(|mut gpu| {
                    gpu.id = gpu.id.trim().to_ascii_lowercase();
                    check_plain_text(&gpu)
                        .and_then(|()| check(&gpu))
                        .map(|()| gpu)
                        .map_err(|e| e.message)
                });
            match checked {
                Ok(gpu) => gpus.push(gpu),
                Err(message) => problems.push(CatalogProblem { line, message }),
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        self.insert_all(gpus);
        Ok(())
    }
}

/// Rejects entries the estimator cannot use.
fn check(gpu: &Gpu) -> Result<(), ScenarioError> {
    let bad = |what: &str| {
        Err(ScenarioError::general(format!(
            "invalid GPU catalog entry \"{}\": {what}",
            gpu.id
        )))
    };
    if gpu.id.is_empty() || gpu.id.contains(char::is_whitespace) {
        return bad("the id must be non-empty and without spaces, e.g. rtx-4070");
    }
    let capacities =
        std::iter::once(gpu.capacity_bytes).chain(gpu.variants.iter().map(|v| v.capacity_bytes));
    for c in capacities {
        if c == 0 || c > i64::MAX as u64 {
            return bad("capacity_bytes must be between 1 and 2^63 - 1");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_and_overrides() {
        let mut catalog = GpuCatalog::builtin();
        assert_eq!(
            catalog.get("RTX-3060").map(|g| g.id.as_str()),
            Some("rtx-3060-12gb")
        );
        catalog
            .extend_from_yaml("gpus:\n  - {id: rtx-4070, name: Mine, capacity_bytes: 1000}\n  - {id: toy, name: Toy, capacity_bytes: 7}\n")
            .unwrap();
        assert_eq!(
            catalog.get("rtx-4070").map(|g| g.capacity_bytes),
            Some(1000)
        );
        assert_eq!(catalog.get("toy").map(|g| g.bf16), Some(true));
        let err = catalog.extend_from_yaml("gpus:\n  - {id: z, name: Z, capacity_bytes: 0}\n");
        assert!(err.is_err());
    }

    #[test]
    fn every_bad_entry_is_found_with_its_line_and_nothing_is_added() {
        let yaml = "gpus:\n  - {id: a, name: A, capacity_bytes: 0}\n  - {id: ok, name: OK, capacity_bytes: 5}\n  # a comment\n  - id: b\n    name: \"B\\e\"\n    capacity_bytes: 5\n";
        let mut catalog = GpuCatalog::builtin();
        let doc = yaml_serde::from_str(yaml).unwrap();
        let at = crate::yaml_input::YamlPositions::of(yaml);
        let problems = catalog.extend_checked(&doc, &at).unwrap_err();
        let lines: Vec<_> = problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, [Some(2), Some(5)], "{problems:?}");
        assert!(problems[1].message.contains("U+001B"), "{problems:?}");
        assert!(catalog.get("ok").is_none());
        let e = catalog.extend_from_yaml(yaml).unwrap_err();
        assert!(e.message.ends_with("(the entry at line 2)"), "{e}");
        let deep = format!("gpus: {}", "[".repeat(100_000));
        let e = catalog.extend_from_yaml(&deep).unwrap_err();
        assert!(e.message.contains("more than 4096"), "{e}");
    }
}
