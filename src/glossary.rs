//! One vocabulary per language: `locales/glossary/<lang>.yaml` names, for each concept, the
//! term the site uses and the variants it rejects (also for terms kept in English on purpose),
//! and [`check_site`] finds every rejected variant in that language's guides
//! (`content/<guide>/<lang>.md`) and Fluent bundles (`locales/<lang>/*.ftl`), with file, line
//! and column. `vramdoc check` reports them.
//!
//! What is searched is the prose a reader sees: code (fenced blocks and inline spans), guide
//! expressions (`{{ … }}`), Fluent placeables (`{ … }`), message ids, comments and a guide's
//! pasted `error:` message are left out. Matching ignores case; a Latin-script variant matches
//! only as a whole word (`micro-lote` in "micro-lotes" does not), a CJK one anywhere, except
//! inside an occurrence of a preferred term (the variant "微批" inside the preferred "微批次";
//! the variant "很紧张" around the preferred "紧张" is still reported).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::diagnostics::Diagnostic;

/// The glossary folder under the site's `locales/`.
pub(crate) const GLOSSARY_DIR: &str = "glossary";

/// One language's glossary file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Glossary {
    /// One entry per concept.
    pub(crate) terms: Vec<Term>,
}

/// One concept: its preferred term and the variants the site does not use.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Term {
    /// What the term means (in English, for the maintainers).
    pub(crate) means: String,
    /// The term the site uses.
    pub(crate) preferred: String,
    /// Variants that must not appear.
    #[serde(default)]
    pub(crate) rejected: Vec<String>,
    /// Kept in English on purpose (a name, or the word readers search for).
    #[serde(default)]
    pub(crate) english: bool,
}

/// A rejected variant found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    /// 1-based line.
    pub(crate) line: usize,
    /// 1-based column, in characters.
    pub(crate) column: usize,
    /// The variant as written.
    pub(crate) found: String,
    /// The preferred term.
    pub(crate) preferred: String,
    /// What it means.
    pub(crate) means: String,
    /// The preferred term is English on purpose.
    pub(crate) english: bool,
}

impl Glossary {
    /// Parses a glossary file; the error names what is wrong.
    pub(crate) fn parse(text: &str) -> Result<Glossary, String> {
        let g: Glossary = yaml_serde::from_str(text).map_err(|e| e.to_string())?;
        for t in &g.terms {
            if t.preferred.trim().is_empty() || t.rejected.iter().any(|r| r.trim().is_empty()) {
                return Err(format!("`{}`: a term is empty", t.means));
            }
        }
        Ok(g)
    }

    /// Every rejected variant in `text`, a guide (`markdown`) or a Fluent file.
    pub(crate) fn scan(&self, text: &str, markdown: bool) -> Vec<Finding> {
        let lines = if markdown {
            markdown_prose(text)
        } else {
            fluent_prose(text)
        };
        let mut out = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            out.extend(self.scan_line(line).into_iter().map(|mut f| {
                f.line = i + 1;
                f
            }));
        }
        out
    }

    /// The rejected variants in one line of prose (line numbers left at 0).
    fn scan_line(&self, line: &str) -> Vec<Finding> {
        let folded: Vec<char> = line.chars().flat_map(char::to_lowercase).collect();
        // Lowercasing may change lengths only for rare letters; fall back to the line as is.
        let chars: Vec<char> = if folded.len() == line.chars().count() {
            folded
        } else {
            line.chars().collect()
        };
        let lower = |t: &str| -> Vec<char> { t.chars().flat_map(char::to_lowercase).collect() };
        // Where preferred terms stand: a shorter rejected variant inside one ("微批" inside
        // "微批次") is the preferred term, not a variant.
        let preferred: Vec<(usize, usize)> = self
            .terms
            .iter()
            .flat_map(|t| {
                let p = lower(&t.preferred);
                find_all(&chars, &p)
                    .into_iter()
                    .map(move |at| (at, at + p.len()))
            })
            .collect();
        let mut hits: Vec<(usize, usize, &Term)> = Vec::new();
        for term in &self.terms {
            for variant in &term.rejected {
                let v = lower(variant);
                for at in find_all(&chars, &v) {
                    let end = at + v.len();
                    let inside = preferred.iter().any(|&(s, e)| s <= at && end <= e);
                    if !inside && whole_word(&chars, at, v.len()) {
                        hits.push((at, end, term));
                    }
                }
            }
        }
        // The longest match at a place wins; a match inside another is the same place.
        hits.sort_by_key(|&(s, e, _)| (s, std::cmp::Reverse(e)));
        let mut out: Vec<Finding> = Vec::new();
        let mut covered = 0;
        for (start, end, term) in hits {
            if start < covered && !out.is_empty() {
                continue;
            }
            covered = end;
            out.push(Finding {
                line: 0,
                column: start + 1,
                found: line.chars().skip(start).take(end - start).collect(),
                preferred: term.preferred.clone(),
                means: term.means.clone(),
                english: term.english,
            });
        }
        out
    }
}

/// Start indexes of `needle` in `hay`.
fn find_all(hay: &[char], needle: &[char]) -> Vec<usize> {
    if needle.is_empty() || needle.len() > hay.len() {
        return Vec::new();
    }
    (0..=hay.len() - needle.len())
        .filter(|&i| hay[i..i + needle.len()] == *needle)
        .collect()
}

/// Whether the match `hay[at..at + len]` stands as a word: Latin letters and digits may not
/// continue it on either side (CJK has no spaces, so a CJK edge always counts as one).
fn whole_word(hay: &[char], at: usize, len: usize) -> bool {
    let latin = |c: char| c.is_ascii_alphanumeric() || c.is_alphabetic() && (c as u32) < 0x2E80;
    let joins = |edge: char, next: Option<&char>| {
        latin(edge) && next.is_some_and(|&c| latin(c) || c == '-' || c == '_')
    };
    let before = at.checked_sub(1).and_then(|i| hay.get(i));
    !(joins(hay[at], before) || joins(hay[at + len - 1], hay.get(at + len)))
}

/// A guide's lines as prose: code blocks, inline code, `{{ … }}` expressions, HTML comments and
/// the front matter's pasted `error:` message blanked (same line numbers, same columns).
fn markdown_prose(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fence: Option<String> = None;
    let mut in_error = false;
    let mut front = false;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if i == 0 && line == "---" {
            front = true;
            out.push(String::new());
            continue;
        }
        if front {
            if line == "---" {
                front = false;
                out.push(String::new());
                continue;
            }
            if in_error && (line.starts_with(' ') || line.is_empty()) {
                out.push(String::new());
                continue;
            }
            in_error = line.starts_with("error:");
            if in_error {
                out.push(String::new());
                continue;
            }
        }
        if let Some(f) = &fence {
            if trimmed.starts_with(f.as_str()) {
                fence = None;
            }
            out.push(String::new());
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(trimmed[..3].to_owned());
            out.push(String::new());
            continue;
        }
        out.push(blank_spans(
            line,
            &[("{{", "}}"), ("`", "`"), ("<!--", "-->")],
        ));
    }
    out
}

/// A Fluent file's lines as prose: comments, message ids and `{ … }` placeables blanked.
fn fluent_prose(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| {
            if line.trim_start().starts_with('#') {
                return String::new();
            }
            let body = match line.split_once(" = ") {
                Some((id, rest)) if !line.starts_with(' ') && !id.contains(' ') => {
                    format!("{}{rest}", " ".repeat(id.chars().count() + 3))
                }
                _ if line.starts_with(' ') => line.to_owned(),
                _ => String::new(),
            };
            blank_spans(&body, &[("{", "}"), ("`", "`")])
        })
        .collect()
}

/// `line` with every span from an opener to its closer replaced by spaces, one per character,
/// so columns stay where they were. An unclosed span runs to the end of the line.
fn blank_spans(line: &str, pairs: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    'outer: while !rest.is_empty() {
        for (open, close) in pairs {
            if let Some(after) = rest.strip_prefix(open) {
                let end = after.find(close).map_or(after.len(), |e| e + close.len());
                let span = &rest[..open.len() + end];
                out.extend(std::iter::repeat_n(' ', span.chars().count()));
                rest = &rest[open.len() + end..];
                continue 'outer;
            }
        }
        let Some(c) = rest.chars().next() else { break };
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The glossary findings of the site at `root` for `languages`: one error per rejected variant
/// (file, line, column, the preferred term), and an error for a glossary that does not parse.
/// A language without a glossary file is not checked.
pub(crate) fn check_site(root: &Path, languages: &[String]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for lang in languages {
        let file = Path::new(crate::site_paths::LOCALES_DIR)
            .join(GLOSSARY_DIR)
            .join(format!("{lang}.yaml"));
        let Ok(text) = std::fs::read_to_string(root.join(&file)) else {
            continue;
        };
        let glossary = match Glossary::parse(&text) {
            Ok(g) => g,
            Err(e) => {
                out.push(
                    Diagnostic::error(format!("glossary does not parse: {e}"))
                        .in_file(&file)
                        .with_help("see locales/glossary/README.md for the format"),
                );
                continue;
            }
        };
        for (path, markdown) in files_of(root, lang) {
            let Ok(text) = std::fs::read_to_string(root.join(&path)) else {
                continue;
            };
            for f in glossary.scan(&text, markdown) {
                out.push(
                    Diagnostic::error(format!(
                        "`{}` is not this site's {lang} term for {}: write `{}`{}",
                        f.found,
                        f.means,
                        f.preferred,
                        if f.english {
                            " (kept in English on purpose)"
                        } else {
                            ""
                        }
                    ))
                    .in_file(&path)
                    .at(f.line, f.column)
                    .with_help(format!("the vocabulary is in {}", file.display())),
                );
            }
        }
    }
    out
}

/// The files in `lang` under `root`, relative to it, sorted: each guide's `<lang>.md` (true:
/// Markdown) and the `locales/<lang>/*.ftl` bundles.
fn files_of(root: &Path, lang: &str) -> Vec<(PathBuf, bool)> {
    let mut files = Vec::new();
    let content = Path::new(crate::site_paths::CONTENT_DIR);
    if let Ok(guides) = std::fs::read_dir(root.join(content)) {
        for guide in guides.flatten() {
            let page = content.join(guide.file_name()).join(format!("{lang}.md"));
            if root.join(&page).is_file() {
                files.push((page, true));
            }
        }
    }
    let bundles = Path::new(crate::site_paths::LOCALES_DIR).join(lang);
    if let Ok(entries) = std::fs::read_dir(root.join(&bundles)) {
        for e in entries.flatten() {
            let p = bundles.join(e.file_name());
            if p.extension().is_some_and(|x| x == "ftl") {
                files.push((p, false));
            }
        }
    }
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zh() -> Glossary {
        Glossary::parse(
            "terms:\n  - means: micro-batch\n    preferred: 微批次\n    rejected: [微批量, 批量]\n  - means: tight\n    preferred: 紧张\n    rejected: [很紧张]\n",
        )
        .unwrap()
    }

    #[test]
    fn finds_cjk_variants_with_their_columns_and_the_longest_wins() {
        let f = zh().scan("把微批量减半，显存很紧张。", true);
        let found: Vec<(&str, usize)> = f.iter().map(|f| (f.found.as_str(), f.column)).collect();
        assert_eq!(found, [("微批量", 2), ("很紧张", 10)]);
        assert!(zh().scan("微批次 8，显存紧张。", true).is_empty());
        // A shorter variant inside the preferred term is the preferred term.
        let g = Glossary::parse(
            "terms:\n  - means: micro-batch\n    preferred: 微批次\n    rejected: [微批]\n",
        )
        .unwrap();
        assert!(g.scan("微批次", true).is_empty());
        assert_eq!(g.scan("微批 8", true).len(), 1);
    }

    #[test]
    fn code_expressions_and_the_pasted_error_are_not_prose() {
        let text = "---\ntitle: 微批量\nerror: |\n  批量 in the log\n---\n\n`微批量` {{ 批量 }}\n\n```\n批量\n```\n正文批量\n";
        let f = zh().scan(text, true);
        let lines: Vec<usize> = f.iter().map(|f| f.line).collect();
        assert_eq!(lines, [2, 12]);
    }

    #[test]
    fn latin_variants_match_whole_words_and_ignore_case() {
        let es = Glossary::parse(
            "terms:\n  - means: micro-batch\n    preferred: microlote\n    rejected: [micro-lote]\n  - means: backward pass\n    preferred: pasada hacia atrás\n    rejected: [el backward]\n",
        )
        .unwrap();
        let f = es.scan("Con Micro-lote 8 y micro-lotes; durante el backward.", true);
        let found: Vec<&str> = f.iter().map(|f| f.found.as_str()).collect();
        assert_eq!(found, ["Micro-lote", "el backward"]);
    }

    #[test]
    fn fluent_ids_comments_and_placeables_are_skipped() {
        let f = zh().scan(
            "# 批量\n批量-id = 值 { $批量 } 微批量\n    续行批量\n",
            false,
        );
        let at: Vec<(usize, usize)> = f.iter().map(|f| (f.line, f.column)).collect();
        assert_eq!(at, [(2, 19), (3, 7)]);
    }

    #[test]
    fn a_bad_glossary_is_an_error() {
        assert!(Glossary::parse("terms: [{preferred: x}]").is_err());
        assert!(Glossary::parse("terms:\n  - {means: m, preferred: '', rejected: [a]}\n").is_err());
    }
}
