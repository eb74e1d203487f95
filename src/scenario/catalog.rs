//! The GPU catalog a command or a site reads: the built-in cards plus a catalog file's
//! (`--catalog FILE`, a site's `data/gpus.yaml`), every bad entry located at its line.

use std::path::Path;
use std::sync::Arc;

use crate::diagnostics::Diagnostic;
use crate::estimate::GpuCatalog;
use crate::scenario::input;

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
