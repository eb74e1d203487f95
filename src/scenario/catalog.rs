//! The GPU catalog a command reads: the built-in cards plus a `--catalog FILE`'s, every bad
//! entry located at its line.

use crate::diagnostics::Diagnostic;
use crate::estimate::GpuCatalog;
use crate::scenario::input;

/// The built-in GPU catalog plus `--catalog FILE`'s cards (`estimate` and `diagnose`); every
/// bad entry is reported, each at its line.
pub(crate) fn catalog_with(path: Option<&std::path::Path>) -> Result<GpuCatalog, Vec<Diagnostic>> {
    let mut catalog = GpuCatalog::builtin();
    let Some(path) = path else {
        return Ok(catalog);
    };
    let text = input::read_capped_text(Some(path)).map_err(|e| {
        vec![Diagnostic::error(format!("cannot read the GPU catalog: {e}")).in_file(path)]
    })?;
    let doc = input::parse_yaml(path, &text, crate::yaml_input::MAX_CATALOG_YAML_BYTES)
        .map_err(|d| vec![*d])?;
    let source: std::sync::Arc<str> = std::sync::Arc::from(text.as_str());
    catalog
        .extend_checked(&doc.value, &doc.at)
        .map_err(|problems| {
            problems
                .into_iter()
                .map(|p| {
                    let d = Diagnostic::error(p.message).in_file(path);
                    match p.line {
                        Some(line) => d.at(line, 1).with_source(source.clone()),
                        None => d,
                    }
                })
                .collect::<Vec<_>>()
        })?;
    Ok(catalog)
}
