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

use super::variants::Variant;
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
    /// `variants:`, parsed (see [`super::variants`]); empty when absent.
    pub variants: Vec<Variant>,
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
        parse_yaml(split.yaml).map_err(|e| {
            let (line, col) = e.line_col.unwrap_or((1, 1));
            let msg = shift_lines(&e.message, split.yaml_line - 1);
            vec![at(
                line + split.yaml_line - 1,
                col,
                format!("invalid YAML in front matter: {msg}"),
            )
            .with_help(e.help)]
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
        variants: Vec::new(),
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
                    if let Err(why) = check_date(d) {
                        errors.push(date_error(at(line, 1, String::new()), "date", d, &why));
                    }
                }
            }
            "updated" => {
                if let Some(d) = want_string(&v, &mut errors) {
                    if let Err(why) = check_date(&d) {
                        errors.push(date_error(at(line, 1, String::new()), "updated", &d, &why));
                    }
                }
                match serde_json::to_value(&v) {
                    Ok(json) => fm.extra.push((key.clone(), json)),
                    Err(e) => errors.push(at(line, 1, format!("`updated` cannot be read: {e}"))),
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
            "variants" => {
                let lines: Vec<&str> = split.yaml.split('\n').collect();
                match super::variants::parse(&v, line, &lines, split.yaml_line) {
                    Ok(list) => fm.variants = list,
                    Err(list) => errors.extend(
                        list.into_iter()
                            .map(|(l, msg, help)| at(l, 1, msg).with_help(help)),
                    ),
                }
            }
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

/// Why the YAML of a front matter block does not parse, located within the block.
struct YamlError {
    /// The parser's message.
    message: String,
    /// 1-based line and column within the block, where known.
    line_col: Option<(usize, usize)>,
    /// What to do.
    help: &'static str,
}

/// Parses a front matter block, applying YAML merge keys (`<<: *anchor`). Errors the parser
/// reports without a usable place (a duplicate key is reported at its mapping's start, an alias
/// bomb and a bad merge nowhere) are located at the first line at which the block, cut after that
/// line, fails the same way.
fn parse_yaml(yaml: &str) -> Result<Yaml, YamlError> {
    /// How a parse failed: the kind of error, to compare prefixes with.
    fn kind(e: &yaml_serde::Error) -> Option<&'static str> {
        let msg = e.to_string();
        [
            "duplicate entry",
            "repetition limit exceeded",
            "recursion limit exceeded",
        ]
        .into_iter()
        .find(|k| msg.contains(k))
    }
    let parse = |text: &str| -> Result<Yaml, (yaml_serde::Error, bool)> {
        let mut v: Yaml = yaml_serde::from_str(text).map_err(|e| (e, false))?;
        v.apply_merge().map_err(|e| (e, true))?;
        Ok(v)
    };
    let (err, merge) = match parse(yaml) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let message = err.to_string();
    let relocate = merge || kind(&err).is_some();
    let line_col = if relocate {
        let want = kind(&err);
        let fails_alike = |n: usize| {
            let prefix: String = yaml.split_inclusive('\n').take(n).collect();
            match parse(&prefix) {
                Err((e, m)) => m == merge && kind(&e) == want,
                Ok(_) => false,
            }
        };
        let lines = yaml.split_inclusive('\n').count();
        // The smallest failing prefix, by bisection (the whole block fails).
        let (mut lo, mut hi) = (1, lines);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if fails_alike(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let text = yaml.split('\n').nth(hi - 1).unwrap_or("");
        let col = text.len() - text.trim_start().len() + 1;
        Some((hi, col))
    } else {
        err.location().map(|l| (l.line(), l.column()))
    };
    let help = match (merge, kind(&err)) {
        (true, _) => {
            "a merge key `<<:` takes a mapping or a list of mappings, e.g. `<<: *defaults`"
        }
        (_, Some("duplicate entry")) => "remove one of the two entries with this key",
        (_, Some(_)) => "aliases (`*name`) here expand too much: write the values out",
        _ => "check the indentation and quote values that contain `:` or `#`",
    };
    // The parser's own "at line N" would now contradict the located line.
    let message = if relocate {
        message
            .split(" at line ")
            .next()
            .unwrap_or(&message)
            .to_string()
    } else {
        message
    };
    Err(YamlError {
        message,
        line_col,
        help,
    })
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

/// Checks a `date:`/`updated:` value: a real calendar date `YYYY-MM-DD`, optionally followed by
/// `T` or a space and a time `HH:MM[:SS[.fraction]]` with an optional `Z` or `±HH:MM` offset.
/// The error says what is wrong.
pub fn check_date(s: &str) -> Result<(), String> {
    let b = s.as_bytes();
    let shape = b.len() >= 10
        && b[..10].iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
    if !shape {
        return Err("it is not written YYYY-MM-DD".into());
    }
    let num = |r: std::ops::Range<usize>| s[r].parse::<u32>().unwrap_or(0);
    let (year, month, day) = (num(0..4), num(5..7), num(8..10));
    if !(1..=12).contains(&month) {
        return Err(format!("there is no month {month:02}"));
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if !(1..=days).contains(&day) {
        return Err(format!("{year:04}-{month:02} has {days} days"));
    }
    match b.get(10) {
        None => Ok(()),
        Some(b'T' | b' ') => check_time(&s[11..]),
        Some(_) => Err("the date must be followed by nothing, or `T`/a space and a time".into()),
    }
}

/// Checks `HH:MM[:SS[.fraction]]` followed by nothing, `Z` or `±HH:MM`.
fn check_time(t: &str) -> Result<(), String> {
    let bad = || {
        Err(format!(
            "the time `{t}` is not HH:MM[:SS] with an optional Z or ±HH:MM"
        ))
    };
    let two = |s: &str, max: u32| -> Option<u32> {
        (s.len() == 2 && s.bytes().all(|c| c.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
            .filter(|v| *v <= max)
    };
    let (clock, zone) = match t.find(['Z', 'z', '+', '-']) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t.trim_end(), ""),
    };
    let clock = clock.trim_end();
    let (hms, frac) = match clock.split_once('.') {
        Some((hms, frac)) => (hms, Some(frac)),
        None => (clock, None),
    };
    let parts: Vec<&str> = hms.split(':').collect();
    let ok_clock = matches!(parts.len(), 2 | 3)
        && two(parts[0], 23).is_some()
        && two(parts[1], 59).is_some()
        && parts.get(2).is_none_or(|s| two(s, 60).is_some())
        && frac.is_none_or(|f| {
            parts.len() == 3 && !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit())
        });
    let ok_zone = match zone {
        "" | "Z" | "z" => true,
        z => z[1..]
            .split_once(':')
            .is_some_and(|(h, m)| two(h, 23).is_some() && two(m, 59).is_some()),
    };
    if ok_clock && ok_zone {
        Ok(())
    } else {
        bad()
    }
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
