//! The mutation test over the bundled guides: hundreds of generated edits to English sections.
//! Every meaningful edit (a word, a number in prose, a code line, a list item, a link target)
//! marks exactly its section stale in es and zh; no cosmetic edit (rewrap, whitespace, trailing
//! spaces, emphasis markers, bullets, renumbered lists, blank lines, a changed scenario value or
//! GPU) marks anything; after marking the section it is current again.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::guides::{translations, GuideTexts};
use super::hash::section_hash;
use super::records::{self, Record, Records};
use super::sections::sections;
use super::status::State;
use crate::content::{page_source, parse};

const LANGS: [&str; 3] = ["en", "es", "zh"];

/// One generated edit: the English file before and after, and whether it changes meaning.
struct Edit {
    what: String,
    before: String,
    after: String,
    meaningful: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum TextLine {
    Prose,
    Item,
    Code,
    Other,
}

fn classify(lines: &[&str]) -> Vec<TextLine> {
    let mut fence = false;
    lines
        .iter()
        .map(|l| {
            let t = l.trim_start();
            if t.starts_with("```") {
                fence = !fence;
                return TextLine::Other;
            }
            if fence {
                return if t.is_empty() {
                    TextLine::Other
                } else {
                    TextLine::Code
                };
            }
            if t.is_empty() || t.starts_with('#') || t.starts_with('|') || t.starts_with("{{") {
                TextLine::Other
            } else if item_marker(l).is_some() {
                TextLine::Item
            } else {
                TextLine::Prose
            }
        })
        .collect()
}

/// The byte length of a list item's marker and the space after it (`- `, `12. `).
fn item_marker(line: &str) -> Option<usize> {
    let t = line.trim_start();
    let indent = line.len() - t.len();
    if t.starts_with("- ") || t.starts_with("* ") {
        return Some(indent + 2);
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0 && t[digits..].starts_with(". ")).then_some(indent + digits + 2)
}

/// Byte ranges of a line that edits must leave alone: code spans, `{{ }}` and link targets.
fn protected(line: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (open, close) in [("`", "`"), ("{{", "}}"), ("](", ")")] {
        let mut from = 0;
        while let Some(i) = line[from..].find(open).map(|i| i + from) {
            let Some(j) = line[i + open.len()..].find(close) else {
                break;
            };
            let end = i + open.len() + j + close.len();
            out.push((i, end));
            from = end;
        }
    }
    out
}

fn free(line: &str, at: usize, len: usize) -> bool {
    protected(line)
        .iter()
        .all(|&(a, b)| at + len <= a || at >= b)
}

/// Runs of ASCII letters (4 or more) or digits outside protected ranges, after the marker.
fn tokens(line: &str, digits: bool) -> Vec<(usize, usize)> {
    let start = item_marker(line).unwrap_or(0);
    let b = line.as_bytes();
    let kind = |c: u8| {
        if digits {
            c.is_ascii_digit()
        } else {
            c.is_ascii_alphabetic()
        }
    };
    let mut out = Vec::new();
    let mut i = start;
    while i < b.len() {
        if !kind(b[i]) {
            i += 1;
            continue;
        }
        let j = (i..b.len()).find(|&j| !kind(b[j])).unwrap_or(b.len());
        let joined = |k: usize| {
            b.get(k)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
        };
        let whole = (i == 0 || !joined(i - 1)) && !joined(j);
        if whole && (digits || j - i >= 4) && free(line, i, j - i) {
            out.push((i, j));
        }
        i = j;
    }
    out
}

/// Spaces between two words outside protected ranges (where a line may be split).
fn spaces(line: &str) -> Vec<usize> {
    let start = item_marker(line).unwrap_or(0);
    let b = line.as_bytes();
    (start + 1..b.len().saturating_sub(1))
        .filter(|&i| b[i] == b' ' && b[i - 1] != b' ' && b[i + 1].is_ascii_alphabetic())
        .filter(|&i| free(line, i, 1))
        .collect()
}

fn replace_line(body: &str, n: usize, new: &str) -> String {
    let mut lines: Vec<&str> = body.split('\n').collect();
    lines[n] = new;
    lines.join("\n")
}

/// The edits of one English file (front matter kept, so scenario edits are real edits).
fn edits_of(file: &str) -> Vec<Edit> {
    let lines: Vec<&str> = file.split('\n').collect();
    let body_start = 1 + lines[1..].iter().position(|l| *l == "---").unwrap_or(0) + 1;
    let kinds = classify(&lines[body_start..]);
    let mut out = Vec::new();
    let mut push = |what: String, after: String, meaningful: bool, before: &str| {
        out.push(Edit {
            what,
            before: before.to_string(),
            after,
            meaningful,
        })
    };
    for (k, kind) in kinds.iter().enumerate() {
        let n = body_start + k;
        let line = lines[n];
        let at = |what: &str| format!("{what} at line {}", n + 1);
        match kind {
            TextLine::Prose | TextLine::Item => {
                let words = tokens(line, false);
                for &(a, b) in [words.first(), words.last()].into_iter().flatten() {
                    let new = format!("{}{}zz{}", &line[..a], &line[a..b], &line[b..]);
                    push(at("a word"), replace_line(file, n, &new), true, file);
                }
                if let Some(&(a, b)) = tokens(line, true).first() {
                    let number: u64 = line[a..b].parse().unwrap_or(0);
                    let new = format!("{}{}{}", &line[..a], number + 1, &line[b..]);
                    push(at("a number"), replace_line(file, n, &new), true, file);
                }
                let linked = format!("{line} See [the notes](https://example.org/a).");
                let base = replace_line(file, n, &linked);
                let moved = replace_line(file, n, &linked.replace("/a)", "/b)"));
                push(at("a link target"), moved, true, &base);
                let sp = spaces(line);
                if let Some(&i) = sp.get(sp.len() / 2) {
                    let wrapped = format!("{}\n{}", &line[..i], &line[i + 1..]);
                    push(at("rewrap"), replace_line(file, n, &wrapped), false, file);
                    let broken = format!("{}  \n{}", &line[..i], &line[i + 1..]);
                    push(
                        at("hard break"),
                        replace_line(file, n, &broken),
                        false,
                        file,
                    );
                    let wide = format!("{}   {}", &line[..i], &line[i + 1..]);
                    push(at("spaces"), replace_line(file, n, &wide), false, file);
                }
                push(
                    at("trailing spaces"),
                    replace_line(file, n, &format!("{line}   ")),
                    false,
                    file,
                );
                if let Some(i) = line.find(" *").filter(|&i| free(line, i, 2)) {
                    if let Some(j) = line[i + 2..].find('*').map(|j| j + i + 2) {
                        let mut swapped = line.to_string();
                        swapped.replace_range(j..j + 1, "_");
                        swapped.replace_range(i + 1..i + 2, "_");
                        push(
                            at("emphasis marker"),
                            replace_line(file, n, &swapped),
                            false,
                            file,
                        );
                    }
                }
            }
            TextLine::Code => {
                push(
                    at("a code line"),
                    replace_line(file, n, &format!("{line}x")),
                    true,
                    file,
                );
                push(
                    at("code trailing spaces"),
                    replace_line(file, n, &format!("{line}  ")),
                    false,
                    file,
                );
            }
            TextLine::Other => {}
        }
        let next_is_end = kinds.get(k + 1).is_none_or(|x| *x != TextLine::Item);
        if *kind == TextLine::Item && next_is_end {
            let marker = &line[..item_marker(line).unwrap_or(0)];
            let added = format!("{line}\n{marker}An added item.");
            push(at("a list item"), replace_line(file, n, &added), true, file);
        }
        if *kind == TextLine::Prose && kinds.get(k + 1) == Some(&TextLine::Other) {
            push(
                at("blank line"),
                replace_line(file, n, &format!("{line}\n")),
                false,
                file,
            );
        }
    }
    // Whole lists: renumbered from 1, and other bullets.
    let renumbered: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(n, l)| match item_marker(l) {
            Some(m) if n >= body_start && l.as_bytes()[0].is_ascii_digit() => {
                format!("1. {}", &l[m..])
            }
            Some(m) if n >= body_start && l.starts_with("- ") => format!("* {}", &l[m..]),
            _ => l.to_string(),
        })
        .collect();
    push(
        "renumbered lists and bullets".into(),
        renumbered.join("\n"),
        false,
        file,
    );
    // The scenario and the GPU: computed figures change, the text does not.
    for (from, to) in [
        ("gpu: rtx-3060-12gb", "gpu: a100-80gb"),
        ("batch_size: 16", "batch_size: 12"),
        ("  n_layer: ", "  n_layer: 1"),
    ] {
        if let Some(i) = lines[..body_start].iter().position(|l| l.contains(from)) {
            let new = lines[i].replacen(from, to, 1);
            push(
                format!("scenario `{from}`"),
                replace_line(file, i, &new),
                false,
                file,
            );
        }
    }
    out
}

fn body(slug: &str, lang: &str, text: &str) -> String {
    let dir: Arc<Path> = Arc::from(Path::new("."));
    let page =
        parse(page_source(slug, lang, &dir), text.as_bytes()).expect("a bundled page parses");
    page.body().to_string()
}

/// Records saying every section of es and zh was translated from `en`.
fn marked(en: &str) -> Records {
    let list: BTreeMap<String, Record> = sections(en)
        .iter()
        .map(|s| {
            let record = Record {
                hash: section_hash(s.text),
                source: records::stored_text(s.text),
            };
            (s.id.clone(), record)
        })
        .collect();
    [("es".to_string(), list.clone()), ("zh".to_string(), list)].into()
}

/// The sections that are not current, per language.
fn drift(guide: &GuideTexts) -> Vec<(String, String, State)> {
    let langs: Vec<String> = LANGS.iter().map(|l| l.to_string()).collect();
    let (_, list) = translations(guide, &langs, "en", None);
    let mut out = Vec::new();
    for t in list {
        let status = t.status.expect("a bundled translation exists");
        assert!(status.aligned(), "{} {}: {status:?}", t.guide, t.lang);
        for s in status
            .sections
            .into_iter()
            .filter(|s| s.state != State::Current)
        {
            out.push((t.lang.clone(), s.id, s.state));
        }
    }
    out
}

#[test]
fn generated_edits_mark_exactly_their_section_and_marking_makes_it_current() {
    let content = Path::new(env!("CARGO_MANIFEST_DIR")).join("content");
    let mut slugs: Vec<String> = std::fs::read_dir(&content)
        .expect("the bundled guides")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    slugs.sort();
    let (mut meaningful, mut cosmetic) = (0, 0);
    for slug in &slugs {
        let read = |lang: &str| {
            std::fs::read_to_string(content.join(slug).join(format!("{lang}.md"))).expect("page")
        };
        let en_file = read("en");
        let mut guide = GuideTexts {
            slug: slug.clone(),
            dir: content.join(slug),
            bodies: LANGS
                .iter()
                .map(|l| (l.to_string(), body(slug, l, &read(l))))
                .collect(),
            records: Records::new(),
            records_error: None,
        };
        for edit in edits_of(&en_file) {
            let before = body(slug, "en", &edit.before);
            let after = body(slug, "en", &edit.after);
            guide.records = marked(&before);
            guide.bodies.insert("en".into(), after.clone());
            let found = drift(&guide);
            let context = format!(
                "{slug}: {} ({})",
                edit.what,
                if edit.meaningful {
                    "meaningful"
                } else {
                    "cosmetic"
                }
            );
            if !edit.meaningful {
                assert!(found.is_empty(), "{context}: {found:?}");
                cosmetic += 1;
                continue;
            }
            meaningful += 1;
            // The section the edit is in: the first whose text differs.
            let (old, new) = (sections(&before), sections(&after));
            let id = (old.iter().zip(&new))
                .find(|(a, b)| a.text != b.text)
                .map(|(_, b)| b.id.clone())
                .unwrap_or_else(|| panic!("{context}: no section changed"));
            let expected: Vec<_> = ["es", "zh"]
                .iter()
                .map(|l| (l.to_string(), id.clone(), State::Stale))
                .collect();
            assert_eq!(found, expected, "{context}");
            // `mark` for that section in both languages: current again.
            let s = new.iter().find(|s| s.id == id).expect("the edited section");
            for lang in ["es", "zh"] {
                let record = Record {
                    hash: section_hash(s.text),
                    source: records::stored_text(s.text),
                };
                guide
                    .records
                    .get_mut(lang)
                    .expect("marked")
                    .insert(id.clone(), record);
            }
            assert!(
                drift(&guide).is_empty(),
                "{context}: still stale after mark"
            );
        }
    }
    eprintln!("{meaningful} meaningful, {cosmetic} cosmetic edits");
    assert!(
        meaningful >= 150 && cosmetic >= 50 && meaningful + cosmetic >= 200,
        "{meaningful} meaningful, {cosmetic} cosmetic edits"
    );
}

#[test]
fn the_bundled_guides_ship_current_records() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = crate::config::SiteConfig::load(root).expect("the bundled site's configuration");
    let (guides, errors) = super::guides::read_guides(root, &config);
    assert!(errors.is_empty(), "{errors:?}");
    for guide in &guides {
        assert!(
            drift(guide).is_empty(),
            "{}: {:?}",
            guide.slug,
            drift(guide)
        );
    }
}
