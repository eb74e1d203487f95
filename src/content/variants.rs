//! A guide's `variants:`: named what-ifs of its scenario, parsed once, with their lines.
//!
//! ```yaml
//! variants:
//!   - id: micro8                      # a name for `variants.<id>.…` paths, unique in the guide
//!     label: "Micro-batch 8"          # per language; the id when absent
//!     set: { batch_size: 8 }          # scenario keys and scalar values
//! ```
//! Any other key, a duplicate id, a label that is not text and a `set:` value that is not a
//! scalar are errors at their line.

use crate::yaml_input::{Seg, YamlPositions};
use yaml_serde::{Mapping, Value as Yaml};

use super::front_matter::type_name;

/// One named variant of a guide's scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// The id (letters, digits, `_` and `-`), unique among the guide's variants.
    pub id: String,
    /// The label shown in the options table, in the page's language (the id when absent).
    pub label: String,
    /// The overridden scenario keys, in file order.
    pub set: Vec<Setting>,
    /// 1-based file line of the variant's `- ` item.
    pub line: usize,
}

/// One `key: value` of a variant's `set:`.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// The scenario key.
    pub key: String,
    /// The value: a number, string, boolean or null.
    pub value: Yaml,
    /// 1-based file line where the key is written.
    pub line: usize,
}

/// A problem in `variants:`: its file line, the message and advice.
pub(crate) type VariantError = (usize, String, String);

/// The keys a variant may have.
const KEYS: [&str; 3] = ["id", "label", "set"];

/// Parses the value of `variants:`, written at file line `key_line`; `at` locates the front
/// matter's keys and values, its line 1 being file line `first_line`. Returns every problem
/// found.
pub(crate) fn parse(
    value: &Yaml,
    key_line: usize,
    at: &YamlPositions,
    first_line: usize,
) -> Result<Vec<Variant>, Vec<VariantError>> {
    let items = match value {
        Yaml::Sequence(items) => items,
        Yaml::Null => return Ok(Vec::new()),
        _ => {
            return Err(vec![(
                key_line,
                "`variants` must be a list".into(),
                "write each variant as a `- id: ...` item under `variants:`".into(),
            )])
        }
    };
    let mut errors = Vec::new();
    let mut variants: Vec<Variant> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let offset = first_line - 1;
        let start = at
            .value(&[Seg::key("variants"), Seg::Index(i)])
            .map_or(key_line, |(line, _)| line + offset);
        let block = Block {
            at,
            offset,
            item: i,
            in_set: false,
            start,
        };
        if let Some(variant) = parse_item(item, i + 1, block, &variants, &mut errors) {
            variants.push(variant);
        }
    }
    if errors.is_empty() {
        Ok(variants)
    } else {
        Err(errors)
    }
}

/// Parses variant number `n` (1-based), written in `block`, recording its problems in `errors`;
/// `earlier` are the variants before it. Nothing when it has no usable id (or is no mapping).
fn parse_item(
    item: &Yaml,
    n: usize,
    block: Block<'_>,
    earlier: &[Variant],
    errors: &mut Vec<VariantError>,
) -> Option<Variant> {
    let line = block.start;
    let Yaml::Mapping(map) = item else {
        errors.push((
            line,
            format!("variant {n} must be a mapping with `id`, `label` and `set`"),
            "write `- id: name`, then `label:` and `set:` under it".into(),
        ));
        return None;
    };
    unknown_keys(map, n, block, errors);
    let id = read_id(map, n, block, errors)?;
    if let Some(first) = earlier.iter().find(|v| v.id == id) {
        errors.push((
            block.key_line("id"),
            format!(
                "duplicate variant id `{id}` (first used at line {})",
                first.line
            ),
            "give each variant its own id".into(),
        ));
    }
    let label = read_label(map, &id, block, errors);
    let set = read_set(map, &id, block, errors);
    Some(Variant {
        id,
        label,
        set,
        line,
    })
}

/// Records an error for each key of variant `n` other than [`KEYS`].
fn unknown_keys(map: &Mapping, n: usize, block: Block<'_>, errors: &mut Vec<VariantError>) {
    for k in map.keys() {
        let name = k.as_str().map_or_else(|| format!("{k:?}"), str::to_string);
        if !KEYS.contains(&name.as_str()) {
            errors.push((
                block.key_line(&name),
                format!("unknown key `{name}` in variant {n}"),
                "a variant has only `id`, `label` and `set`".into(),
            ));
        }
    }
}

/// The id of variant `n`: a name (a number counts as written); an error when it is missing or
/// not a name.
fn read_id(
    map: &Mapping,
    n: usize,
    block: Block<'_>,
    errors: &mut Vec<VariantError>,
) -> Option<String> {
    match map.get("id") {
        Some(Yaml::String(s)) if is_id(s) => Some(s.clone()),
        Some(Yaml::Number(num)) if is_id(&num.to_string()) => Some(num.to_string()),
        Some(other) => {
            errors.push((
                block.key_line("id"),
                format!("variant id {} is not a name", shown(other)),
                "use letters, digits, `_` and `-`, e.g. `id: micro8`".into(),
            ));
            None
        }
        None => {
            errors.push((
                block.start,
                format!("variant {n} has no `id`"),
                "add `id: name` (letters, digits, `_` and `-`)".into(),
            ));
            None
        }
    }
}

/// The label of variant `id`: its text (a number as written), or the id when absent, null or
/// not text (the last an error).
fn read_label(map: &Mapping, id: &str, block: Block<'_>, errors: &mut Vec<VariantError>) -> String {
    match map.get("label") {
        None | Some(Yaml::Null) => id.to_string(),
        Some(Yaml::String(s)) => {
            if let Some(msg) = super::published::refusal(&format!("the label of variant `{id}`"), s)
            {
                errors.push((block.key_line("label"), msg, super::published::HELP.into()));
            }
            s.clone()
        }
        Some(Yaml::Number(n)) => n.to_string(),
        Some(other) => {
            errors.push((
                block.key_line("label"),
                format!(
                    "the label of variant `{id}` must be text, found {}",
                    type_name(other)
                ),
                "write `label: \"...\"` (quote it if it contains `[`, `{` or `:`)".into(),
            ));
            id.to_string()
        }
    }
}

/// The settings of variant `id`'s `set:`, which must be a mapping (an error otherwise, with no
/// settings).
fn read_set(
    map: &Mapping,
    id: &str,
    block: Block<'_>,
    errors: &mut Vec<VariantError>,
) -> Vec<Setting> {
    match map.get("set") {
        Some(Yaml::Mapping(pairs)) => settings(pairs, id, block, errors),
        other => {
            errors.push((
                other.map_or(block.start, |_| block.key_line("set")),
                format!("variant `{id}` needs a `set:` mapping of scenario keys"),
                "add e.g. `set: { batch_size: 8 }`".into(),
            ));
            Vec::new()
        }
    }
}

/// The `key: value` pairs of variant `id`'s `set:` mapping, each located at its key; a key
/// that is not a name or a value that is not a scalar is an error, and left out.
fn settings(
    pairs: &Mapping,
    id: &str,
    block: Block<'_>,
    errors: &mut Vec<VariantError>,
) -> Vec<Setting> {
    let set_line = block.key_line("set");
    let inner = Block {
        start: set_line,
        in_set: true,
        ..block
    };
    let mut set = Vec::new();
    for (k, v) in pairs {
        let Some(key) = k.as_str() else {
            errors.push((
                set_line,
                format!(
                    "`set:` of variant `{id}` has a key that is not a name: {}",
                    shown(k)
                ),
                "write scenario keys such as `batch_size: 8`".into(),
            ));
            continue;
        };
        let kline = inner.key_line(key);
        match v {
            Yaml::Bool(_) | Yaml::Number(_) | Yaml::String(_) | Yaml::Null => set.push(Setting {
                key: key.to_string(),
                value: v.clone(),
                line: kline,
            }),
            other => errors.push((
                kline,
                format!(
                    "`{key}` in variant `{id}` must be a number, string or boolean, found {}",
                    type_name(other)
                ),
                format!("write `{key}: value`"),
            )),
        }
    }
    set
}

/// True for an id usable in `variants.<id>` paths: letters, digits, `_` and `-`.
fn is_id(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn shown(v: &Yaml) -> String {
    match v {
        Yaml::String(s) => format!("`{s}`"),
        other => type_name(other).to_string(),
    }
}

/// One variant item, for locating its keys.
#[derive(Clone, Copy)]
struct Block<'a> {
    /// Where the front matter's keys and values were written.
    at: &'a YamlPositions,
    /// File line of the front matter's line 0.
    offset: usize,
    /// The item's index in `variants:`.
    item: usize,
    /// Whether its keys are those of the item's `set:`.
    in_set: bool,
    /// File line of the item (or of its `set:`), where a key written nowhere is located.
    start: usize,
}

impl Block<'_> {
    /// The file line of `key:` in this item (or its `set:`), else [`Block::start`].
    fn key_line(&self, key: &str) -> usize {
        let mut path = vec![Seg::key("variants"), Seg::Index(self.item)];
        if self.in_set {
            path.push(Seg::key("set"));
        }
        path.push(Seg::key(key));
        self.at
            .key(&path)
            .map_or(self.start, |(line, _)| line + self.offset)
    }
}
