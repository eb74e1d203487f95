//! Front matter: the YAML between the leading `---` lines of a guide.
//!
//! `title` and `lang` are required strings; `translated` (bool), `type`, `layout`, `date`
//! (`YYYY-MM-DD`, optionally followed by a time) and `description` are typed; `scenario` and
//! `variants` are kept as YAML for the estimator; every other key is passed to templates as is.
//! Line numbers in errors count from the top of the file (the opening `---` is line 1).

use std::path::Path;
use std::sync::Arc;

use yaml_serde::Value as Yaml;

use crate::diagnostics::Diagnostic;

/// The typed front matter of one page.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontMatter {
    /// The page title (required).
    pub title: String,
    /// The page language (required; must match the file name).
    pub lang: String,
    /// True when the text was machine-translated (the page shows a notice).
    pub translated: bool,
    /// `type:` (e.g. `guide`, `note`).
    pub kind: Option<String>,
    /// `layout:` (e.g. `post`); passed to the Markdown edition.
    pub layout: Option<String>,
    /// `date:` as written, validated `YYYY-MM-DD[...]`.
    pub date: Option<String>,
    /// One-sentence summary for indexes and `<meta name="description">`.
    pub description: Option<String>,
    /// `scenario:` mapping, if any, with its line.
    pub scenario: Option<(Yaml, usize)>,
    /// `variants:` list, if any, with its line.
    pub variants: Option<(Yaml, usize)>,
    /// Every other key, as JSON for templates, in file order.
    pub extra: Vec<(String, serde_json::Value)>,
}

/// A page's text split into front matter and body.
#[derive(Debug, Clone)]
pub struct Split<'a> {
    /// The YAML between the delimiters.
    pub yaml: &'a str,
    /// 1-based line of the first YAML line.
    pub yaml_line: usize,
    /// The Markdown after the closing delimiter.
    pub body: &'a str,
    /// 1-based line of the body's first line.
    pub body_line: usize,
}

/// Splits `text` (BOM already removed, line endings normalized to `\n`) at its front matter.
pub fn split<'a>(text: &'a str, file: &Path, source: &Arc<str>) -> Result<Split<'a>, Diagnostic> {
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
pub fn parse(
    split: &Split<'_>,
    file: &Path,
    source: &Arc<str>,
) -> Result<FrontMatter, Vec<Diagnostic>> {
    let at = |line: usize, col: usize, msg: String| {
        Diagnostic::error(msg)
            .in_file(file)
            .at(line, col)
            .with_source(source.clone())
    };
    check_limits(split, file, source).map_err(|d| vec![d])?;
    let value: Yaml = if split.yaml.trim().is_empty() {
        Yaml::Mapping(Default::default())
    } else {
        yaml_serde::from_str(split.yaml).map_err(|e| {
            let (line, col) = e
                .location()
                .map(|l| (l.line(), l.column()))
                .unwrap_or((1, 1));
            let msg = shift_lines(&e.to_string(), split.yaml_line - 1);
            vec![at(
                line + split.yaml_line - 1,
                col,
                format!("invalid YAML in front matter: {msg}"),
            )
            .with_help("check the indentation and quote values that contain `:` or `#`")]
        })?
    };
    let Yaml::Mapping(map) = value else {
        return Err(vec![at(
            split.yaml_line,
            1,
            "front matter must be a mapping of `key: value` lines".into(),
        )]);
    };
    let key_line = |key: &str| key_line(split, key);
    let mut errors = Vec::new();
    let mut title = None;
    let mut lang = None;
    let mut fm = FrontMatter {
        title: String::new(),
        lang: String::new(),
        translated: false,
        kind: None,
        layout: None,
        date: None,
        description: None,
        scenario: None,
        variants: None,
        extra: Vec::new(),
    };
    for (k, v) in map {
        let Yaml::String(key) = k else {
            errors.push(at(
                split.yaml_line,
                1,
                format!("front matter keys must be strings, found {k:?}"),
            ));
            continue;
        };
        let line = key_line(&key);
        let want_string = |v: &Yaml, errors: &mut Vec<Diagnostic>| -> Option<String> {
            match v {
                Yaml::String(s) => Some(s.clone()),
                Yaml::Number(n) => Some(n.to_string()),
                Yaml::Null => None,
                other => {
                    errors.push(
                        at(
                            line,
                            1,
                            format!("`{key}` must be a string, found {}", type_name(other)),
                        )
                        .with_help(format!("write `{key}: \"...\"`")),
                    );
                    None
                }
            }
        };
        match key.as_str() {
            "title" => title = want_string(&v, &mut errors),
            "lang" => lang = want_string(&v, &mut errors),
            "type" => fm.kind = want_string(&v, &mut errors),
            "layout" => fm.layout = want_string(&v, &mut errors),
            "description" => fm.description = want_string(&v, &mut errors),
            "date" => {
                fm.date = want_string(&v, &mut errors);
                if let Some(d) = &fm.date {
                    if !is_date(d) {
                        errors.push(
                            at(
                                line,
                                1,
                                format!("`date` must look like 2026-11-20, found `{d}`"),
                            )
                            .with_help("write the date as YYYY-MM-DD, e.g. `date: 2026-11-20`"),
                        );
                    }
                }
            }
            "translated" => match v {
                Yaml::Bool(b) => fm.translated = b,
                other => errors.push(
                    at(
                        line,
                        1,
                        format!(
                            "`translated` must be true or false, found {}",
                            type_name(&other)
                        ),
                    )
                    .with_help("write `translated: true` or `translated: false`"),
                ),
            },
            "scenario" => fm.scenario = Some((v, line)),
            "variants" => fm.variants = Some((v, line)),
            _ => match serde_json::to_value(&v) {
                Ok(json) => fm.extra.push((key.clone(), json)),
                Err(e) => errors.push(at(
                    line,
                    1,
                    format!("`{key}` cannot be passed to templates: {e}"),
                )),
            },
        }
    }
    let reported = |errors: &[Diagnostic], key: &str| {
        errors
            .iter()
            .any(|d| d.message.starts_with(&format!("`{key}`")))
    };
    match title {
        Some(t) if !t.trim().is_empty() => fm.title = t,
        _ if reported(&errors, "title") => {}
        _ => errors.push(
            at(split.yaml_line, 1, "front matter has no `title`".into())
                .with_help("add `title: \"...\"`"),
        ),
    }
    match lang {
        Some(l) if !l.trim().is_empty() => fm.lang = l,
        _ if reported(&errors, "lang") => {}
        _ => errors.push(
            at(split.yaml_line, 1, "front matter has no `lang`".into())
                .with_help("add `lang: en` (or es, zh), matching the file name"),
        ),
    }
    if errors.is_empty() {
        Ok(fm)
    } else {
        Err(errors)
    }
}

/// 1-based file line of a top-level `key:` in the front matter (the block's first line if absent).
pub fn key_line(split: &Split<'_>, key: &str) -> usize {
    split
        .yaml
        .split('\n')
        .position(|l| {
            l.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
                || l.strip_prefix(&format!("\"{key}\""))
                    .is_some_and(|r| r.trim_start().starts_with(':'))
        })
        .map(|i| i + split.yaml_line)
        .unwrap_or(split.yaml_line)
}

fn type_name(v: &Yaml) -> &'static str {
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

/// `YYYY-MM-DD`, optionally followed by a time (`T...` or ` ...`).
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..10].iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        })
        && (b.len() == 10 || b[10] == b'T' || b[10] == b' ')
        && (1..=12).contains(&s[5..7].parse::<u8>().unwrap_or(0))
        && (1..=31).contains(&s[8..10].parse::<u8>().unwrap_or(0))
}

/// Keys of the extra map, for templates, as a JSON object in file order.
pub fn extra_json(fm: &FrontMatter) -> serde_json::Map<String, serde_json::Value> {
    fm.extra.iter().cloned().collect()
}

/// The largest front matter accepted, in bytes (a guide's is a few hundred).
pub const MAX_FRONT_MATTER_BYTES: usize = 64 * 1024;

/// The most `[` and `{` (YAML flow collections, or those characters in strings) a front matter
/// may contain: the YAML scanner's time grows with nesting depth times length.
pub const MAX_FLOW_BRACKETS: usize = 512;

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
    let mut line = split.yaml_line;
    let mut brackets = 0;
    for b in split.yaml.bytes() {
        match b {
            b'\n' => line += 1,
            b'[' | b'{' => {
                brackets += 1;
                if brackets > MAX_FLOW_BRACKETS {
                    return Err(error(
                        line,
                        format!("front matter has more than {MAX_FLOW_BRACKETS} `[` and `{{`"),
                        "write lists and mappings as indented YAML blocks, not deeply nested `[...]` or `{...}`",
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}
