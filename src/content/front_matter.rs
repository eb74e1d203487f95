//! Front matter: the YAML between the leading `---` lines of a guide.
//!
//! `title` and `lang` are required strings; `translated` (bool), `type`, `layout`, `date` and
//! `updated` (calendar dates `YYYY-MM-DD`, optionally followed by a time) and `description` are
//! typed; `scenario` is kept as YAML for the estimator and `variants` parsed into
//! [`super::Variant`]s; every other key is passed to templates as is. YAML merge keys
//! (`<<: *anchor`) are applied. Line numbers in errors count from the top of the file (the
//! opening `---` is line 1), and each error is at its own line.

use std::path::Path;
use std::sync::Arc;

use yaml_serde::Value as Yaml;

use super::dates::check_date;
use super::published;
use super::variants::Variant;
use crate::diagnostics::Diagnostic;
use crate::yaml_input::{excess_flow_bracket, parse_positioned, Seg, YamlPositions};

/// The typed front matter of one page.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct FrontMatter {
    /// The page title (required).
    pub(crate) title: String,
    /// The page language (required; must match the file name).
    pub(crate) lang: String,
    /// True when the text was machine-translated (the page shows a notice).
    pub(crate) translated: bool,
    /// `type:` (e.g. `guide`, `note`).
    pub(crate) kind: Option<String>,
    /// `layout:` (e.g. `post`); passed to the Markdown edition.
    pub(crate) layout: Option<String>,
    /// `date:` as written, validated `YYYY-MM-DD[...]`.
    pub(crate) date: Option<String>,
    /// One-sentence summary for indexes and `<meta name="description">`.
    pub(crate) description: Option<String>,
    /// `scenario:` mapping, if any, with its line.
    pub(crate) scenario: Option<(Yaml, usize)>,
    /// The file line of each key of the `scenario:` mapping, where the YAML parser saw it.
    pub(crate) scenario_lines: Vec<(String, usize)>,
    /// `variants:`, parsed (see [`super::variants`]); empty when absent.
    pub(crate) variants: Vec<Variant>,
    /// Every other key, as JSON for templates, in file order.
    pub(crate) extra: Vec<(String, serde_json::Value)>,
}

impl FrontMatter {
    /// The file line of `key` in `scenario:`, where it was written; `None` when it was not.
    pub(crate) fn scenario_key_line(&self, key: &str) -> Option<usize> {
        let found = self.scenario_lines.iter().find(|(k, _)| k == key);
        found.map(|(_, line)| *line)
    }
}

/// A page's text split into front matter and body.
#[derive(Debug, Clone)]
pub(crate) struct Split<'a> {
    /// The YAML between the delimiters.
    pub(crate) yaml: &'a str,
    /// 1-based line of the first YAML line.
    pub(crate) yaml_line: usize,
    /// The Markdown after the closing delimiter.
    pub(crate) body: &'a str,
    /// 1-based line of the body's first line.
    pub(crate) body_line: usize,
}

/// Splits `text` (BOM already removed, line endings normalized to `\n`) at its front matter.
pub(crate) fn split<'a>(
    text: &'a str,
    file: &Path,
    source: &Arc<str>,
) -> Result<Split<'a>, Diagnostic> {
    let first = text.lines().next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err(Diagnostic::error(
            "missing front matter: the file must start with a `---` line",
        )
        .in_file(file)
        .at(1, 1)
        .with_source(source.clone())
        .with_help("begin the file with `---`, the YAML keys (`title`, `lang`), then `---`"));
    }
    let mut offset = first.len() + 1;
    for (i, line) in text[offset.min(text.len())..].split('\n').enumerate() {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed == "..." {
            let yaml = &text[first.len() + 1..offset];
            let body_start = (offset + line.len() + 1).min(text.len());
            return Ok(Split {
                yaml,
                yaml_line: 2,
                body: &text[body_start..],
                body_line: i + 3,
            });
        }
        offset += line.len() + 1;
    }
    Err(
        Diagnostic::error("unclosed front matter: no closing `---` line")
            .in_file(file)
            .at(1, 1)
            .with_source(source.clone())
            .with_help("end the YAML block with a line containing only `---`"),
    )
}

/// Parses and type-checks the YAML of a front matter block. All problems are returned together.
pub(crate) fn parse(
    split: &Split<'_>,
    file: &Path,
    source: &Arc<str>,
) -> Result<FrontMatter, Vec<Diagnostic>> {
    check_limits(split, file, source).map_err(|d| vec![d])?;
    let mut check = FrontMatterChecker {
        split,
        file,
        source,
        at: YamlPositions::default(),
        errors: Vec::new(),
    };
    let (map, at) = check.mapping()?;
    check.at = at;
    let mut fm = FrontMatter::default();
    let (mut title, mut lang) = (None, None);
    for (k, v) in map {
        let Yaml::String(key) = k else {
            let d = check.at(
                split.yaml_line,
                format!("front matter keys must be strings, found {k:?}"),
            );
            check.errors.push(d);
            continue;
        };
        let line = check.key_line(&key);
        match key.as_str() {
            "title" => title = check.string(&key, line, &v),
            "lang" => lang = check.string(&key, line, &v),
            "type" => fm.kind = check.string(&key, line, &v),
            "layout" => fm.layout = check.string(&key, line, &v),
            "description" => fm.description = check.string(&key, line, &v),
            "date" => fm.date = check.date(&key, line, &v),
            "updated" => {
                check.date(&key, line, &v);
                check.extra(&mut fm.extra, &key, line, &v, "cannot be read");
            }
            "translated" => {
                if let Some(b) = check.boolean(&key, line, &v) {
                    fm.translated = b;
                }
            }
            "scenario" => {
                fm.scenario_lines = check.key_lines_under("scenario", &v);
                fm.scenario = Some((v, line));
            }
            "variants" => fm.variants = check.variants(&v, line),
            _ => check.extra(
                &mut fm.extra,
                &key,
                line,
                &v,
                "cannot be passed to templates",
            ),
        }
    }
    fm.title = check.required("title", title, "add `title: \"...\"`");
    fm.lang = check.required(
        "lang",
        lang,
        "add `lang: en` (or es, zh), matching the file name",
    );
    if check.errors.is_empty() {
        Ok(fm)
    } else {
        Err(check.errors)
    }
}

/// Collects the problems of one front matter block, each at its file line with the page as
/// snippet.
struct FrontMatterChecker<'a> {
    /// The block.
    split: &'a Split<'a>,
    /// The page's path, for messages.
    file: &'a Path,
    /// The page's text, shown as snippets.
    source: &'a Arc<str>,
    /// Where the block's keys and values were written (lines within the block).
    at: YamlPositions,
    /// The problems found so far, in the order they were found.
    errors: Vec<Diagnostic>,
}

impl FrontMatterChecker<'_> {
    /// An error `msg` at file line `line`, column 1.
    fn at(&self, line: usize, msg: String) -> Diagnostic {
        self.at_col(line, 1, msg)
    }

    /// An error `msg` at file line `line` and column `col`.
    fn at_col(&self, line: usize, col: usize, msg: String) -> Diagnostic {
        Diagnostic::error(msg)
            .in_file(self.file)
            .at(line, col)
            .with_source(self.source.clone())
    }

    /// The block's YAML as a mapping (an empty block is an empty one); a syntax error, located
    /// in the file, or a block that is not a mapping is the only problem reported.
    fn mapping(&self) -> Result<(yaml_serde::Mapping, YamlPositions), Vec<Diagnostic>> {
        let split = self.split;
        let (value, at) = if split.yaml.trim().is_empty() {
            (Yaml::Mapping(Default::default()), YamlPositions::default())
        } else {
            let doc = parse_positioned(split.yaml).map_err(|e| {
                let (line, col) = e.line_col.unwrap_or((1, 1));
                let msg = shift_lines(&e.message, split.yaml_line - 1);
                vec![self
                    .at_col(
                        line + split.yaml_line - 1,
                        col,
                        format!("invalid YAML in front matter: {msg}"),
                    )
                    .with_help(e.help)]
            })?;
            (doc.value, doc.at)
        };
        let Yaml::Mapping(map) = value else {
            return Err(vec![self.at(
                split.yaml_line,
                "front matter must be a mapping of `key: value` lines".into(),
            )]);
        };
        Ok((map, at))
    }

    /// The file line of each (string) key of the mapping `value` of the top-level `key`.
    fn key_lines_under(&self, key: &str, value: &Yaml) -> Vec<(String, usize)> {
        let offset = self.split.yaml_line - 1;
        let keys = value.as_mapping().into_iter().flatten();
        keys.filter_map(|(k, _)| {
            let name = k.as_str()?;
            let (line, _) = self.at.key(&[Seg::key(key), Seg::key(name)])?;
            Some((name.to_owned(), line + offset))
        })
        .collect()
    }

    /// The file line of the top-level `key`, or the block's first line when it is not written
    /// as a key.
    fn key_line(&self, key: &str) -> usize {
        self.at
            .key(&[Seg::key(key)])
            .map_or(self.split.yaml_line, |(line, _)| {
                line + self.split.yaml_line - 1
            })
    }

    /// The text of `key`'s value `v` (a number as written); nothing for a null, and an error
    /// for any other kind of value.
    fn string(&mut self, key: &str, line: usize, v: &Yaml) -> Option<String> {
        match v {
            Yaml::String(s) => {
                if let Some(msg) = published::refusal(&format!("`{key}`"), s) {
                    let d = self.at(line, msg).with_help(published::HELP);
                    self.errors.push(d);
                }
                Some(s.clone())
            }
            Yaml::Number(n) => Some(n.to_string()),
            Yaml::Null => None,
            other => {
                let d = self
                    .at(
                        line,
                        format!("`{key}` must be a string, found {}", type_name(other)),
                    )
                    .with_help(format!("write `{key}: \"...\"`"));
                self.errors.push(d);
                None
            }
        }
    }

    /// The text of a `date:` or `updated:` value, which must be a calendar date (an error
    /// otherwise, the text still returned).
    fn date(&mut self, key: &str, line: usize, v: &Yaml) -> Option<String> {
        let date = self.string(key, line, v);
        if let Some(d) = &date {
            if let Err(why) = check_date(d) {
                let e = date_error(self.at(line, String::new()), key, d, &why);
                self.errors.push(e);
            }
        }
        date
    }

    /// The boolean value of `translated:`; an error for anything else.
    fn boolean(&mut self, key: &str, line: usize, v: &Yaml) -> Option<bool> {
        match v {
            Yaml::Bool(b) => Some(*b),
            other => {
                let d = self
                    .at(
                        line,
                        format!("`{key}` must be true or false, found {}", type_name(other)),
                    )
                    .with_help(format!("write `{key}: true` or `{key}: false`"));
                self.errors.push(d);
                None
            }
        }
    }

    /// Appends `key: v` to `extra` as JSON for templates; `failure` says what fails when the
    /// value has no JSON form.
    fn extra(
        &mut self,
        extra: &mut Vec<(String, serde_json::Value)>,
        key: &str,
        line: usize,
        v: &Yaml,
        failure: &str,
    ) {
        match serde_json::to_value(v) {
            Ok(json) => {
                if let Some(msg) = forbidden_in(&json).and_then(|t| {
                    published::refusal(&format!("a text under `{key}` (passed to templates)"), t)
                }) {
                    let d = self.at(line, msg).with_help(published::HELP);
                    self.errors.push(d);
                }
                extra.push((key.to_string(), json));
            }
            Err(e) => {
                let d = self.at(line, format!("`{key}` {failure}: {e}"));
                self.errors.push(d);
            }
        }
    }

    /// The variants of `variants:` (written at `line`); their problems become errors at
    /// their lines and leave the list empty.
    fn variants(&mut self, v: &Yaml, line: usize) -> Vec<Variant> {
        match super::variants::parse(v, line, &self.at, self.split.yaml_line) {
            Ok(list) => list,
            Err(list) => {
                for (l, msg, help) in list {
                    let d = self.at(l, msg).with_help(help);
                    self.errors.push(d);
                }
                Vec::new()
            }
        }
    }

    /// The required `key`'s value; when absent or blank, an error at the block's first line
    /// with `help`, unless the value was already reported as malformed.
    fn required(&mut self, key: &str, value: Option<String>, help: &str) -> String {
        match value {
            Some(v) if !v.trim().is_empty() => return v,
            _ if self.reported(key) => {}
            _ => {
                let d = self
                    .at(self.split.yaml_line, format!("front matter has no `{key}`"))
                    .with_help(help);
                self.errors.push(d);
            }
        }
        String::new()
    }

    /// True when a problem with `key` (a message starting with it) is already recorded.
    fn reported(&self, key: &str) -> bool {
        self.errors
            .iter()
            .any(|d| d.message.starts_with(&format!("`{key}`")))
    }
}

/// 1-based file line of a top-level `key:` in the front matter (the block's first line if absent).
pub(crate) fn key_line(split: &Split<'_>, key: &str) -> usize {
    YamlPositions::of(split.yaml)
        .key(&[Seg::key(key)])
        .map_or(split.yaml_line, |(line, _)| line + split.yaml_line - 1)
}

/// The error for a `date:` or `updated:` value that is not a calendar date.
fn date_error(d: Diagnostic, key: &str, value: &str, why: &str) -> Diagnostic {
    Diagnostic {
        message: format!("`{key}` must be a calendar date like 2026-11-20, found `{value}`: {why}"),
        ..d
    }
    .with_help(format!(
        "write `{key}: YYYY-MM-DD` (a real day), optionally with a time: `{key}: 2026-11-20T09:30:00Z`"
    ))
}

/// How a YAML value is named in an error message ("a list", "a number", ...).
pub(crate) fn type_name(v: &Yaml) -> &'static str {
    match v {
        Yaml::Null => "nothing",
        Yaml::Bool(_) => "a boolean",
        Yaml::Number(_) => "a number",
        Yaml::String(_) => "a string",
        Yaml::Sequence(_) => "a list",
        Yaml::Mapping(_) => "a mapping",
        Yaml::Tagged(_) => "a tagged value",
    }
}

/// Rewrites the parser's "line N" (counted within the YAML block) as file lines.
fn shift_lines(msg: &str, by: usize) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(i) = rest.find("line ") {
        out.push_str(&rest[..i + 5]);
        rest = &rest[i + 5..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        match rest[..digits].parse::<usize>() {
            Ok(n) => out.push_str(&(n + by).to_string()),
            Err(_) => out.push_str(&rest[..digits]),
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

/// The first string (key or value) in `json` holding a character that may not be published;
/// walked without recursion, as block YAML may nest deeply.
fn forbidden_in(json: &serde_json::Value) -> Option<&str> {
    let mut todo = vec![json];
    while let Some(v) = todo.pop() {
        match v {
            serde_json::Value::String(s) if published::forbidden_char(s).is_some() => {
                return Some(s)
            }
            serde_json::Value::Array(items) => todo.extend(items),
            serde_json::Value::Object(map) => {
                if let Some(k) = map.keys().find(|k| published::forbidden_char(k).is_some()) {
                    return Some(k);
                }
                todo.extend(map.values());
            }
            _ => {}
        }
    }
    None
}

/// Keys of the extra map, for templates, as a JSON object in file order.
pub(crate) fn extra_json(fm: &FrontMatter) -> serde_json::Map<String, serde_json::Value> {
    fm.extra.iter().cloned().collect()
}

/// The largest front matter accepted, in bytes (a guide's is a few hundred).
pub(crate) const MAX_FRONT_MATTER_BYTES: usize = 64 * 1024;

/// The most `[` and `{` (YAML flow collections, or those characters in strings) a front matter
/// may contain: the YAML scanner's time grows with nesting depth times length.
pub(crate) const MAX_FLOW_BRACKETS: usize = 512;

/// Refuses front matter too large or too bracket-heavy to parse in linear time, before the YAML
/// parser sees it (100,000 nested `[` took it 10 s).
fn check_limits(split: &Split<'_>, file: &Path, source: &Arc<str>) -> Result<(), Diagnostic> {
    let error = |line: usize, msg: String, help: &str| {
        Diagnostic::error(msg)
            .in_file(file)
            .at(line, 1)
            .with_source(source.clone())
            .with_help(help.to_string())
    };
    if split.yaml.len() > MAX_FRONT_MATTER_BYTES {
        return Err(error(
            split.yaml_line,
            format!(
                "front matter is {} KiB; the limit is {} KiB",
                split.yaml.len().div_ceil(1024),
                MAX_FRONT_MATTER_BYTES / 1024
            ),
            "keep the front matter to the page's settings and put long text in the body",
        ));
    }
    if let Some(line) = excess_flow_bracket(split.yaml, MAX_FLOW_BRACKETS) {
        return Err(error(
            split.yaml_line + line - 1,
            format!("front matter has more than {MAX_FLOW_BRACKETS} `[` and `{{`"),
            "write lists and mappings as indented YAML blocks, not deeply nested `[...]` or `{...}`",
        ));
    }
    Ok(())
}
