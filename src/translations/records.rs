//! The records of what each translated section was made from, kept in the repository beside
//! the guide as `content/<guide>/translations.yaml` ([`RECORDS_FILE`]): per language, per section
//! id, the hash of the source-language section ([`super::hash::section_hash`]) and its text, so
//! a later change to the source can be shown word by word.
//!
//! The file is written by `vramdoc translations mark` in one fixed layout that diffs well: the
//! languages and sections sorted, each source text a literal block scalar, one line per line.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use crate::diagnostics::Diagnostic;
use crate::site::manifest::Digest;
use crate::yaml_input::{Seg, YamlPositions};

/// The records file's name inside a guide folder.
pub(crate) const RECORDS_FILE: &str = "translations.yaml";

/// What one translated section was made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    /// The source section's normalized hash when it was translated.
    pub(crate) hash: Digest,
    /// The source section's text then.
    pub(crate) source: String,
}

/// A guide's records: language → section id → record.
pub(crate) type Records = BTreeMap<String, BTreeMap<String, Record>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRecord {
    hash: String,
    source: String,
}

/// Parses a records file's text (`shown`: its path in messages). An empty file has no records.
pub(crate) fn parse(text: &str, shown: &Path) -> Result<Records, Diagnostic> {
    let located = |message: String, line: usize| {
        Diagnostic::error(message)
            .in_file(shown)
            .at(line.max(1), 1)
            .with_source(Arc::from(text))
            .with_help("this file is written by `vramdoc translations mark <lang> <guide>`; run it again to rewrite it")
    };
    if text.trim().is_empty() {
        return Ok(Records::new());
    }
    let raw: BTreeMap<String, BTreeMap<String, RawRecord>> =
        yaml_serde::from_str(text).map_err(|e| {
            let line = e.location().map_or(1, |l| l.line());
            located(format!("invalid translation records: {e}"), line)
        })?;
    let mut records = Records::new();
    for (lang, sections) in raw {
        let mut out = BTreeMap::new();
        for (id, r) in sections {
            let hash = parse_digest(&r.hash).ok_or_else(|| {
                let path = [Seg::key(&lang), Seg::key(&id), Seg::key("hash")];
                let at = YamlPositions::of(text).value(&path);
                let line = at.map_or(1, |(line, _)| line);
                located(
                    format!(
                        "section `{id}` of `{lang}`: `{}` is not a 32-digit lower-case hex hash",
                        r.hash
                    ),
                    line,
                )
            })?;
            out.insert(
                id,
                Record {
                    hash,
                    source: r.source,
                },
            );
        }
        records.insert(lang, out);
    }
    Ok(records)
}

/// The records file's text: a comment, then per language and section its hash and source text.
pub(crate) fn write(records: &Records) -> String {
    let mut out = String::from(
        "# What each translated section was made from, written by `vramdoc translations mark`:\n\
         # per language and section id, the hash of the source section and its text then.\n",
    );
    for (lang, sections) in records.iter().filter(|(_, s)| !s.is_empty()) {
        out.push_str(&format!("{lang}:\n"));
        for (id, r) in sections {
            out.push_str(&format!("  {}:\n    hash: {}\n", quoted(id), r.hash));
            if r.source.is_empty() {
                out.push_str("    source: \"\"\n");
                continue;
            }
            // Content indented two past `source:` (the indicator lets a line start with spaces);
            // `-` drops the final line break, which the stored text does not have.
            out.push_str("    source: |2-\n");
            for line in r.source.split('\n') {
                if !line.is_empty() {
                    out.push_str("      ");
                    out.push_str(line);
                }
                out.push('\n');
            }
        }
    }
    out
}

/// A section's text as it is recorded: line breaks as `\n`, no blank lines around it, no
/// trailing spaces at its end.
pub(crate) fn stored_text(section: &str) -> String {
    section
        .replace("\r\n", "\n")
        .trim_matches('\n')
        .trim_end()
        .to_string()
}

/// A section id as a YAML key: plain when it is a slug, else double-quoted.
fn quoted(id: &str) -> String {
    let plain = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
        && !id.starts_with('-');
    if plain {
        id.to_string()
    } else {
        serde_json::to_string(id).unwrap_or_default()
    }
}

fn parse_digest(hex: &str) -> Option<Digest> {
    if hex.len() != 32 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut d = [0u8; 16];
    for (i, byte) in d.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(Digest(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(source: &str) -> Record {
        Record {
            hash: super::super::hash::section_hash(source),
            source: source.to_string(),
        }
    }

    #[test]
    fn written_records_read_back_unchanged() {
        let tricky = "## The problem {#the-problem}\n\n    indented code: yes # not a comment\n\n- item: \"quoted\"\n\ttab\n\n{{ table(\"a\") }}  trailing";
        let mut records = Records::new();
        records
            .entry("es".into())
            .or_default()
            .insert("the-problem".into(), record(tricky));
        records.entry("es".into()).or_default().insert(
            "_intro".into(),
            record("    starts with spaces\nthen: colon"),
        );
        records
            .entry("zh".into())
            .or_default()
            .insert("该节".into(), record("## 问题\n\n中文"));
        let text = write(&records);
        assert_eq!(parse(&text, Path::new("t.yaml")).unwrap(), records);
        assert!(text.contains("es:\n  _intro:\n    hash: "), "{text}");
    }

    #[test]
    fn a_bad_hash_names_the_file_and_line() {
        let text = "es:\n  a:\n    hash: xyz\n    source: a\n";
        let e = parse(text, Path::new("content/g/translations.yaml")).unwrap_err();
        assert!(
            e.message.contains("`xyz` is not a 32-digit"),
            "{}",
            e.message
        );
        assert_eq!(e.location(), "content/g/translations.yaml:3:1");
        let e = parse("es: [", Path::new("t.yaml")).unwrap_err();
        assert!(
            e.message.contains("invalid translation records"),
            "{}",
            e.message
        );
    }

    #[test]
    fn stored_text_drops_only_the_frame() {
        assert_eq!(stored_text("\n## A\r\n\r\ntext  \n\n"), "## A\n\ntext");
    }
}
