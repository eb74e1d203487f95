//! A model given as the path of a Hugging Face `config.json` (or its folder): where the file is,
//! and reading it into a [`Model`] with every error at its line.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::facts::Facts;
use super::{config, nanochat_commit, transformers, weights, Model, ModelInfo};
use crate::diagnostics::Diagnostic;
use crate::scenario::input;
use crate::scenario::pyconfig::ValueOrigin;

/// The most of a `config.json` vramdoc reads (a released one is a few KiB).
const MAX_CONFIG_BYTES: usize = crate::yaml_input::MAX_CATALOG_YAML_BYTES;

/// Whether a value that names no catalog entry was meant as a path.
pub(super) fn looks_like_path(value: &str) -> bool {
    value.ends_with(".json")
        || value.starts_with('.')
        || value.starts_with('/')
        || value.starts_with('~')
        || value.contains('\\')
}

/// The `config.json` `value` would be: relative to the file that set `model`, else to the
/// working folder; a folder means its `config.json`.
pub(super) fn config_path(value: &str, origin: Option<&ValueOrigin>) -> Option<PathBuf> {
    let given = Path::new(value);
    let base = match origin {
        Some(ValueOrigin::File { path, .. }) if given.is_relative() => {
            path.parent().map(Path::to_path_buf)
        }
        _ => None,
    };
    let path = match base {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(given),
        _ => given.to_path_buf(),
    };
    Some(if path.is_dir() {
        path.join("config.json")
    } else {
        path
    })
}

/// Reads a `config.json` file into its model; every error at its line.
pub(super) fn read_config_file(path: &Path) -> Result<Model, Vec<Diagnostic>> {
    let text = input::read_capped_text(Some(path)).map_err(|e| {
        vec![Diagnostic::error(format!("cannot read the model's config.json: {e}")).in_file(path)]
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    // JSON's own errors first (the YAML reader that gives the positions reads JSON too, but
    // would word a JSON mistake as YAML's).
    if let Err(e) = serde_json::from_str::<serde_json::Value>(text) {
        if e.line() > 0 && text.len() <= MAX_CONFIG_BYTES {
            return Err(vec![Diagnostic::error(format!("invalid JSON: {e}"))
                .in_file(path)
                .at(e.line(), e.column().max(1))
                .with_source(Arc::from(text))
                .with_help("a config.json is JSON: check the commas, quotes and brackets just before this point")]);
        }
    }
    let doc = input::parse_yaml(path, text, MAX_CONFIG_BYTES).map_err(|d| vec![*d])?;
    let Some(map) = doc.value.as_mapping() else {
        return Err(vec![Diagnostic::error(
            "a config.json is a JSON object of the model's settings ({\"model_type\": ...})",
        )
        .in_file(path)
        .at(1, 1)]);
    };
    let source: Arc<str> = Arc::from(text);
    let mut facts = Facts::new(map, &doc.at, Vec::new(), path, source);
    let name = path.display().to_string();
    let read = config::read(&mut facts, name.clone());
    let errors = std::mem::take(&mut facts.errors);
    match read {
        Some(read) if errors.is_empty() => Ok(Model {
            info: ModelInfo {
                id: None,
                path: Some(name),
                family: read.architecture.family,
                model_type: read.model_type,
                computed: read.architecture.family.computed(),
                transformers: transformers(read.architecture.family),
                nanochat: nanochat_commit(read.architecture.family),
                source: None,
            },
            loaded: read.torch_dtype.map(|(dtype, key)| weights::LoadDtype {
                dtype,
                why: format!("{}'s {key}", path.display()),
            }),
            architecture: read.architecture,
            dropout: read.dropout,
            sequence_len: read.sequence_len,
        }),
        _ if !errors.is_empty() => Err(errors),
        _ => Err(vec![
            Diagnostic::error("the config.json could not be read").in_file(path)
        ]),
    }
}
