//! Reading a model's `config.json` facts (a Hugging Face `config.json`, or a catalog entry's
//! `config:` mapping) with every error located at the line and column of the value at fault, or
//! of the mapping when a key is missing. Errors are collected, so one run reports them all.

use std::path::Path;
use std::sync::Arc;

use yaml_serde::Value;

use crate::diagnostics::Diagnostic;
use crate::yaml_input::{Seg, YamlPositions};

/// A mapping of config facts, where it was written, and the errors found reading it.
pub(crate) struct Facts<'a> {
    map: &'a yaml_serde::Mapping,
    at: &'a YamlPositions,
    /// The path of the mapping within its document (empty for a `config.json`).
    prefix: Vec<Seg>,
    file: &'a Path,
    source: Arc<str>,
    /// Every problem found so far, in reading order.
    pub(crate) errors: Vec<Diagnostic>,
}

impl<'a> Facts<'a> {
    /// The facts of `map`, found at `prefix` in the document `file` (text `source`, positions
    /// `at`).
    pub(crate) fn new(
        map: &'a yaml_serde::Mapping,
        at: &'a YamlPositions,
        prefix: Vec<Seg>,
        file: &'a Path,
        source: Arc<str>,
    ) -> Facts<'a> {
        Facts {
            map,
            at,
            prefix,
            file,
            source,
            errors: Vec::new(),
        }
    }

    /// The value of `key`, unless it is missing or `null` (transformers reads both as its
    /// default).
    pub(crate) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// Whether the mapping has `key`, `null` included.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    /// Where `key`'s value was written; for a missing key, where the mapping starts.
    fn position(&self, key: Option<&str>) -> (usize, usize) {
        let mut path = self.prefix.clone();
        if let Some(key) = key {
            path.push(Seg::key(key));
            if let Some(p) = self.at.value(&path) {
                return p;
            }
            path.pop();
        }
        if path.is_empty() {
            return (1, 1);
        }
        self.at.key(&path).unwrap_or((1, 1))
    }

    /// Records an error at `key`'s value (the mapping, when `None` or missing).
    pub(crate) fn error(&mut self, key: Option<&str>, message: String, help: &str) {
        let (line, col) = self.position(key);
        self.errors.push(
            Diagnostic::error(message)
                .in_file(self.file)
                .at(line, col)
                .with_source(Arc::clone(&self.source))
                .with_help(help.to_owned()),
        );
    }

    /// A whole number of at least 1 (`default` when missing; an error, and 1, when required and
    /// missing or not such a number).
    fn whole(&mut self, key: &str, default: Option<u64>) -> u64 {
        match (self.get(key), default) {
            (None, Some(d)) => d,
            (None, None) => {
                self.error(
                    None,
                    format!("the config has no `{key}`, which the model's shape needs"),
                    "give the model's own config.json, unedited (or add the key as transformers writes it)",
                );
                1
            }
            (Some(v), _) => match v.as_u64().filter(|&n| n >= 1) {
                Some(n) => n,
                None => {
                    self.error(
                        Some(key),
                        format!(
                            "`{key}` must be a whole number of at least 1, got {}",
                            shown(v)
                        ),
                        "write it as config.json does, e.g. 4096",
                    );
                    1
                }
            },
        }
    }

    /// A required whole number ≥ 1.
    pub(crate) fn count(&mut self, key: &str) -> u64 {
        self.whole(key, None)
    }

    /// A whole number ≥ 1, `default` when missing or `null`.
    pub(crate) fn count_or(&mut self, key: &str, default: u64) -> u64 {
        self.whole(key, Some(default))
    }

    /// A boolean, `default` when missing or `null`.
    pub(crate) fn flag_or(&mut self, key: &str, default: bool) -> bool {
        match self.get(key) {
            None => default,
            Some(Value::Bool(b)) => *b,
            Some(v) => {
                let msg = format!("`{key}` must be true or false, got {}", shown(v));
                self.error(Some(key), msg, "write true or false, as config.json does");
                default
            }
        }
    }

    /// A number, if given (and not `null`).
    pub(crate) fn number(&mut self, key: &str) -> Option<f64> {
        let v = self.get(key)?;
        match v.as_f64() {
            Some(x) if x.is_finite() => Some(x),
            _ => {
                let msg = format!("`{key}` must be a number, got {}", shown(v));
                self.error(Some(key), msg, "write a number, as config.json does");
                None
            }
        }
    }

    /// A string, `default` when missing or `null`.
    pub(crate) fn text_or(&mut self, key: &str, default: &str) -> String {
        match self.get(key) {
            None => default.to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => {
                let msg = format!("`{key}` must be a string, got {}", shown(v));
                self.error(Some(key), msg, "write it in quotes, as config.json does");
                default.to_owned()
            }
        }
    }

    /// Refuses a value of `key` other than `modelled` (its default being `default`): the family's
    /// tensors were derived for that value only.
    pub(crate) fn expect_text(&mut self, key: &str, default: &str, modelled: &[&str]) {
        let value = self.text_or(key, default);
        if !modelled.contains(&value.as_str()) {
            self.error(
                Some(key),
                format!(
                    "`{key}` = \"{}\" is not modelled: vramdoc derives this model's tensors for {} only, and another value saves other tensors",
                    crate::terminal::visible_line(&value),
                    modelled.join(" or ")
                ),
                "vramdoc would be wrong about this model: it is refused rather than estimated as another one",
            );
        }
    }

    /// Refuses `key` = `!modelled` (its default being `default`).
    pub(crate) fn expect_flag(&mut self, key: &str, default: bool, modelled: bool, why: &str) {
        if self.flag_or(key, default) != modelled {
            self.error(
                Some(key),
                format!("`{key}` = {} is not modelled: {why}", !modelled),
                "vramdoc would be wrong about this model: it is refused rather than estimated as another one",
            );
        }
    }

    /// Refuses a non-empty list (or any other value) for `key`.
    pub(crate) fn expect_empty(&mut self, key: &str, why: &str) {
        match self.get(key) {
            None => {}
            Some(Value::Sequence(items)) if items.is_empty() => {}
            Some(v) => {
                let msg = format!("`{key}` = {} is not modelled: {why}", shown(v));
                self.error(
                    Some(key),
                    msg,
                    "vramdoc would be wrong about this model: it is refused rather than estimated as another one",
                );
            }
        }
    }

    /// A list of strings, if given.
    pub(crate) fn texts(&mut self, key: &str) -> Option<Vec<String>> {
        let v = self.get(key)?;
        let items = v.as_sequence().and_then(|items| {
            items
                .iter()
                .map(|i| i.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        });
        if items.is_none() {
            let msg = format!("`{key}` must be a list of strings, got {}", shown(v));
            self.error(Some(key), msg, "write it as config.json does");
        }
        items
    }
}

/// A value as the message shows it: one line, at most 60 characters.
fn shown(v: &Value) -> String {
    let text = match v {
        Value::String(s) => format!("\"{s}\""),
        other => yaml_serde::to_string(other)
            .unwrap_or_default()
            .trim()
            .to_owned(),
    };
    let line = crate::terminal::visible_line(&text);
    match line.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    }
}
