//! The bundled, offline model catalog (`data/models/*.yaml`, compiled into the binary): popular
//! Hugging Face models (and nanochat's) by a short id, each with the `config.json` facts its
//! architecture description reads, where they were taken from, and its published parameter
//! count. An entry's `config:` is read by the same reader as a user's `config.json`
//! ([`super::config`]), so the catalog and a downloaded config give the same model.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use super::config::{self, ReadModel};
use super::facts::Facts;
use crate::yaml_input::{parse_positioned, Located, Seg};

/// One catalog file: its name under `data/models/`, text and parsed document.
struct ModelCatalogFile {
    name: String,
    text: Arc<str>,
    doc: Located,
}

/// Where an entry's facts come from, as the JSON's `model.source` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ModelSource {
    /// The Hugging Face repository (or, for nanochat, where the weights or code are).
    pub(crate) repo: String,
    /// Repositories of the same architecture (instruct and chat fine-tunes, whose config.json
    /// has the same shape), which `--model` also takes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) aliases: Vec<String>,
    /// The branch or release the config facts were taken from.
    pub(crate) revision: String,
    /// When they were transcribed (year and month).
    pub(crate) taken: String,
    /// Parameters, as `model.num_parameters()` counts them (a tied head once).
    pub(crate) params: u64,
    /// The model card's own figure (`7.61B`), rounded or truncated as cards print it.
    pub(crate) published: String,
    /// Where that figure is published.
    pub(crate) published_source: String,
    /// Where the `config.json`'s `torch_dtype` (`config:`), any alias's that differs
    /// (`alias_dtypes`), or the checkpoint's dtype (`checkpoint_dtype`) were read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) dtype_source: Option<String>,
}

/// One catalog entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    id: String,
    repo: String,
    #[serde(default)]
    aliases: Vec<String>,
    revision: String,
    taken: String,
    params: u64,
    published: String,
    published_source: String,
    #[serde(default)]
    dtype_source: Option<String>,
    /// Aliases whose `torch_dtype` is recorded on its own: it differs from the repository's
    /// (Gemma 2's base checkpoints are float32, its `-it` ones bfloat16), or only the alias's
    /// `config.json` was sourced.
    #[serde(default)]
    alias_dtypes: std::collections::BTreeMap<String, String>,
    /// The dtype of the checkpoint's first floating-point tensor, for a `config.json` that
    /// names no dtype (GPT-2's): what `dtype="auto"` then loads.
    #[serde(default)]
    checkpoint_dtype: Option<String>,
    /// Read from the positioned document by [`ModelEntry::read`]; required here.
    #[allow(dead_code)]
    config: yaml_serde::Value,
}

/// A catalog entry, found by its id.
#[derive(Debug, Clone)]
pub(crate) struct ModelEntry {
    /// What `--model` takes.
    pub(crate) id: String,
    /// Where its facts come from.
    pub(crate) source: ModelSource,
    /// The `torch_dtype` of the aliases recorded on their own (`alias_dtypes`).
    pub(crate) alias_dtypes: Vec<(String, crate::estimate::Dtype)>,
    /// The checkpoint's floating-point dtype, recorded where the `config.json` names none.
    pub(crate) checkpoint_dtype: Option<crate::estimate::Dtype>,
    /// Which file and which item of its `models:` list.
    file: usize,
    index: usize,
}

/// The catalog, parsed once.
struct Catalog {
    files: Vec<ModelCatalogFile>,
    entries: Vec<ModelEntry>,
}

/// The parsed catalog, or why the bundled files do not parse (a build defect, which a test
/// keeps from shipping; reported as an error, never a panic).
fn catalog() -> Result<&'static Catalog, String> {
    static CATALOG: OnceLock<Result<Catalog, String>> = OnceLock::new();
    CATALOG.get_or_init(load).as_ref().map_err(Clone::clone)
}

/// Parses every embedded `data/models/*.yaml`, in file-name order.
fn load() -> Result<Catalog, String> {
    let mut files = Vec::new();
    let mut entries = Vec::new();
    // The folder's README.md describes the files; the catalog is the YAML.
    let yaml = crate::assets::MODELS
        .iter()
        .filter(|(name, _)| name.ends_with(".yaml"));
    for (name, text) in yaml {
        let doc = parse_positioned(text)
            .map_err(|e| format!("data/models/{name}: invalid YAML: {}", e.message))?;
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct CatalogDoc {
            models: Vec<RawEntry>,
        }
        let file: CatalogDoc = yaml_serde::from_value(doc.value.clone())
            .map_err(|e| format!("data/models/{name}: {e}"))?;
        for (index, raw) in file.models.into_iter().enumerate() {
            if entries.iter().any(|e: &ModelEntry| e.id == raw.id) {
                return Err(format!(
                    "data/models/{name}: the id {} is listed twice",
                    raw.id
                ));
            }
            let mut alias_dtypes = Vec::new();
            for (alias, d) in &raw.alias_dtypes {
                let dtype = crate::estimate::Dtype::parse(d)
                    .filter(|_| raw.aliases.contains(alias))
                    .ok_or_else(|| {
                        format!("data/models/{name}: {}: alias_dtypes {alias}: {d}", raw.id)
                    })?;
                alias_dtypes.push((alias.clone(), dtype));
            }
            let checkpoint_dtype = match &raw.checkpoint_dtype {
                Some(d) => Some(crate::estimate::Dtype::parse(d).ok_or_else(|| {
                    format!("data/models/{name}: {}: checkpoint_dtype {d}", raw.id)
                })?),
                None => None,
            };
            entries.push(ModelEntry {
                id: raw.id,
                alias_dtypes,
                checkpoint_dtype,
                source: ModelSource {
                    repo: raw.repo,
                    aliases: raw.aliases,
                    revision: raw.revision,
                    taken: raw.taken,
                    params: raw.params,
                    published: raw.published,
                    published_source: raw.published_source,
                    dtype_source: raw.dtype_source,
                },
                file: files.len(),
                index,
            });
        }
        files.push(ModelCatalogFile {
            name: (*name).to_owned(),
            text: Arc::from(*text),
            doc,
        });
    }
    Ok(Catalog { files, entries })
}

/// Every entry, in file-name and list order.
pub(crate) fn entries() -> Result<&'static [ModelEntry], String> {
    catalog().map(|c| c.entries.as_slice())
}

/// The entry `name` names: its id, or its repository or an alias's (`meta-llama/Llama-3.1-8B`,
/// `meta-llama/Llama-3.1-8B-Instruct`, with or without the owner), compared without regard to
/// case.
pub(crate) fn find(name: &str) -> Result<Option<&'static ModelEntry>, String> {
    let want = name.trim().trim_end_matches('/').to_ascii_lowercase();
    let found = entries()?.iter().find(|e| {
        e.id == want
            || std::iter::once(&e.source.repo)
                .chain(&e.source.aliases)
                .any(|repo| {
                    let repo = repo.to_ascii_lowercase();
                    let short = repo.rsplit('/').next().unwrap_or(&repo).to_owned();
                    repo == want || short == want
                })
    });
    Ok(found)
}

/// The ids closest to `name` by edit distance (at most three, each within a third of its
/// length), for a "did you mean" line.
pub(crate) fn closest(name: &str) -> Vec<&'static str> {
    let want = name.trim().to_ascii_lowercase();
    let want = want.rsplit('/').next().unwrap_or(&want).to_owned();
    let Ok(all) = entries() else {
        return Vec::new();
    };
    let mut scored: Vec<(usize, &'static str)> = all
        .iter()
        .map(|e| (distance(&want, &e.id), e.id.as_str()))
        .filter(|(d, id)| *d <= id.chars().count().max(3) / 3)
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, id)| id).collect()
}

/// Edit distance between two short strings, an adjacent swap counting as one edit (optimal
/// string alignment: `rtx-4900` is one edit from `rtx-4090`, two from `rtx-4060`).
pub(crate) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // d[i][j]: the distance between a[..i] and b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j - 1] + cost)
                .min(d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

impl ModelEntry {
    /// The `torch_dtype` of the alias `name` names (as [`find`] compares names), where the entry
    /// records that alias's own.
    pub(crate) fn alias_dtype(&self, name: &str) -> Option<crate::estimate::Dtype> {
        let want = name.trim().trim_end_matches('/').to_ascii_lowercase();
        self.alias_dtypes.iter().find_map(|(alias, d)| {
            let alias = alias.to_ascii_lowercase();
            let short = alias.rsplit('/').next().unwrap_or(&alias);
            (alias == want || short == want).then_some(*d)
        })
    }

    /// The entry's model, read from its `config:` facts as a `config.json` is read; an error
    /// names the catalog file and line (a defect of the bundled data).
    pub(crate) fn read(&self) -> Result<ReadModel, String> {
        let c = catalog()?;
        let file = c
            .files
            .get(self.file)
            .ok_or_else(|| format!("catalog entry {} has no file", self.id))?;
        let prefix = vec![
            Seg::key("models"),
            Seg::Index(self.index),
            Seg::key("config"),
        ];
        let map = file
            .doc
            .value
            .get("models")
            .and_then(|m| m.get(self.index))
            .and_then(|e| e.get("config"))
            .and_then(|c| c.as_mapping())
            .ok_or_else(|| format!("catalog entry {}: `config` is not a mapping", self.id))?;
        let shown = Path::new("data/models").join(&file.name);
        let mut facts = Facts::new(map, &file.doc.at, prefix, &shown, Arc::clone(&file.text));
        let read = config::read(&mut facts, self.id.clone());
        match (read, facts.errors.first()) {
            (Some(model), None) => Ok(model),
            (_, Some(d)) => Err(format!("{}: {}", d.location(), d.message)),
            (None, None) => Err(format!("catalog entry {}: unreadable", self.id)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance() {
        assert_eq!(distance("llama", "llama"), 0);
        assert_eq!(distance("lama-3.1-8b", "llama-3.1-8b"), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("qwen25-7b", "qwen2.5-7b"), 1);
    }
}
