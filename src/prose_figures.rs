//! Prose that gives an option's verdict quotes the figure the option's row shows.
//!
//! The options table shows each option's total (what nvidia-smi would show) beside its verdict;
//! a sentence such as "which brings the peak to 6.13 GiB. Verdict: fits" next to a row saying
//! 7.72 GiB reads as a contradiction. The rule [`check_guide`] enforces, per paragraph or list
//! item of a guide (the unit a reader takes in at once): where the text gives the verdict of a
//! variant (`{{ variants.X.fits | verdict }}`, `{{ variants.X.verdict }}`) or of the scenario
//! (`{{ fits | verdict }}`, `{{ verdict }}`), it also quotes that one's total
//! (`{{ variants.X.bytes.total … }}`, `{{ bytes.total … }}`). Other figures of it (its peak) may
//! stand beside the total, named as what they are; they may not replace it.

use std::collections::BTreeMap;

/// A verdict given without the total of the same option in its paragraph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unbound {
    /// 1-based line of the verdict expression.
    pub(crate) line: usize,
    /// 1-based column of it, in characters.
    pub(crate) column: usize,
    /// The option: a variant id, or "" for the guide's scenario.
    pub(crate) option: String,
    /// The figures of that option the paragraph does quote (`bytes.peak`, ...).
    pub(crate) quoted: Vec<String>,
}

/// One `{{ … }}` expression: its line, column and text inside the braces, trimmed.
struct ExprText {
    line: usize,
    column: usize,
    text: String,
}

/// The guide body's paragraphs and list items (front matter and code blocks left out), each as
/// its expressions.
fn units(text: &str) -> Vec<Vec<ExprText>> {
    let mut out: Vec<Vec<ExprText>> = Vec::new();
    let mut current: Vec<ExprText> = Vec::new();
    let mut fence = false;
    let mut front = false;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if i == 0 && line == "---" {
            front = true;
            continue;
        }
        if front {
            front = line != "---";
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = !fence;
            out.push(std::mem::take(&mut current));
            continue;
        }
        if fence {
            continue;
        }
        let list_item = trimmed
            .split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
            || trimmed.starts_with("- ")
            || trimmed.starts_with("* ");
        if trimmed.is_empty() || list_item || trimmed.starts_with('#') {
            out.push(std::mem::take(&mut current));
        }
        let mut rest = line;
        let mut offset = 0;
        while let Some(at) = rest.find("{{") {
            let Some(end) = rest[at..].find("}}") else {
                break;
            };
            current.push(ExprText {
                line: i + 1,
                column: line[..offset + at].chars().count() + 1,
                text: rest[at + 2..at + end].trim().to_owned(),
            });
            offset += at + end + 2;
            rest = &line[offset..];
        }
    }
    out.push(current);
    out.retain(|u| !u.is_empty());
    out
}

/// The option an expression's path belongs to and the rest of the path: `variants.X.bytes.peak`
/// → ("X", "bytes.peak"), `bytes.total` → ("", "bytes.total"); `None` for other roots.
fn option_of(path: &str) -> Option<(&str, &str)> {
    if let Some(rest) = path.strip_prefix("variants.") {
        return rest.split_once('.');
    }
    let root = path.split('.').next()?;
    ["bytes", "fits", "verdict"]
        .contains(&root)
        .then_some(("", path))
}

/// The verdicts in `text` (a guide) given without their option's total in the same paragraph or
/// list item.
pub(crate) fn check_guide(text: &str) -> Vec<Unbound> {
    let mut out = Vec::new();
    for unit in units(text) {
        let mut verdicts: Vec<(&ExprText, &str)> = Vec::new();
        let mut figures: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for e in &unit {
            let (path, filter) = match e.text.split_once('|') {
                Some((p, f)) => (p.trim(), Some(f.trim())),
                None => (e.text.as_str(), None),
            };
            let Some((option, field)) = option_of(path) else {
                continue;
            };
            match (field, filter) {
                ("fits", Some("verdict")) | ("verdict", None | Some("verdict")) => {
                    verdicts.push((e, option))
                }
                (f, _) if f.starts_with("bytes.") => {
                    figures.entry(option).or_default().push(f.to_owned())
                }
                _ => {}
            }
        }
        for (e, option) in verdicts {
            let quoted = figures.get(option).cloned().unwrap_or_default();
            if !quoted.iter().any(|f| f == "bytes.total") {
                out.push(Unbound {
                    line: e.line,
                    column: e.column,
                    option: option.to_owned(),
                    quoted,
                });
            }
        }
    }
    out
}

/// Where the first numbered list after `{{ options_table() }}` names variants in another order
/// than the table's rows (the front matter's `variants:` order): the 1-based line of the list
/// item naming the first variant out of order, that variant and the one named before it that
/// comes after it in the table.
pub(crate) fn list_out_of_order(text: &str) -> Option<(usize, String, String)> {
    let order: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("  - id: "))
        .map(str::trim)
        .collect();
    let rank = |id: &str| order.iter().position(|o| *o == id);
    let mut lines = text.lines().enumerate();
    lines.find(|(_, l)| l.trim() == "{{ options_table() }}")?;
    let numbered = |l: &str| {
        l.split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    };
    let list = lines
        .skip_while(|(_, l)| !numbered(l))
        .take_while(|(_, l)| numbered(l));
    let mut seen: Vec<&str> = Vec::new();
    for (i, line) in list {
        for part in line.split("variants.").skip(1) {
            let id = part.split('.').next().unwrap_or_default();
            if seen.contains(&id) || rank(id).is_none() {
                continue;
            }
            if let Some(later) = seen.iter().find(|s| rank(s) > rank(id)) {
                return Some((i + 1, id.to_owned(), (*later).to_owned()));
            }
            seen.push(id);
        }
    }
    None
}

/// The unbound verdicts of every guide page under `root`'s `content/`, as located errors.
pub(crate) fn check_site(root: &std::path::Path) -> Vec<crate::diagnostics::Diagnostic> {
    let content = std::path::Path::new(crate::site_paths::CONTENT_DIR);
    let mut pages = Vec::new();
    for guide in std::fs::read_dir(root.join(content))
        .into_iter()
        .flatten()
        .flatten()
    {
        for page in std::fs::read_dir(guide.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = page.file_name();
            if page.path().extension().is_some_and(|x| x == "md") {
                pages.push(content.join(guide.file_name()).join(name));
            }
        }
    }
    pages.sort();
    let mut out = Vec::new();
    for page in pages {
        let Ok(text) = std::fs::read_to_string(root.join(&page)) else {
            continue;
        };
        if let Some((line, id, before)) = list_out_of_order(&text) {
            out.push(
                crate::diagnostics::Diagnostic::error(format!(
                    "the list below the options table names `{id}` after `{before}`, but the table's rows (the front matter's variants) put `{id}` first"
                ))
                .in_file(&page)
                .at(line, 1)
                .with_help("order the front matter's `variants:` as the list names them, so the rows follow the list"),
            );
        }
        for u in check_guide(&text) {
            let (of, total) = if u.option.is_empty() {
                (
                    "the scenario".to_owned(),
                    "{{ bytes.total | bytes }}".to_owned(),
                )
            } else {
                (
                    format!("variant `{}`", u.option),
                    format!("{{{{ variants.{}.bytes.total | bytes }}}}", u.option),
                )
            };
            let quoted = if u.quoted.is_empty() {
                "no figure of it".to_owned()
            } else {
                format!("only `{}`", u.quoted.join("`, `"))
            };
            out.push(
                crate::diagnostics::Diagnostic::error(format!(
                    "this paragraph gives the verdict of {of} but quotes {quoted}, not the total its table row shows"
                ))
                .in_file(&page)
                .at(u.line, u.column)
                .with_help(format!(
                    "quote {total} (what nvidia-smi would show) in the same paragraph; name any other figure as what it is (the peak)"
                )),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_beside_the_peak_alone_is_flagged_and_beside_the_total_is_not() {
        let text = "---\ntitle: x\n---\n\n1. Halve it, which brings the peak to {{ variants.m8.bytes.peak | bytes }}. Verdict: {{ variants.m8.fits | verdict }}.\n2. Or {{ variants.m4.bytes.total | bytes }} in total (peak {{ variants.m4.bytes.peak | bytes }}), verdict: {{ variants.m4.verdict }}.\n\nThe run needs {{ bytes.total | bytes }}.\nVerdict: {{ fits | verdict }}.\n\nVerdict: {{ verdict }} at {{ bytes.peak | bytes }} peak.\n";
        let found = check_guide(text);
        let got: Vec<(usize, usize, &str, Vec<String>)> = found
            .iter()
            .map(|u| (u.line, u.column, u.option.as_str(), u.quoted.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (5, 86, "m8", vec!["bytes.peak".to_owned()]),
                (11, 10, "", vec!["bytes.peak".to_owned()]),
            ]
        );
    }

    #[test]
    fn the_list_below_the_table_follows_the_rows() {
        let front = "---\nvariants:\n  - id: a\n    set: {}\n  - id: b\n    set: {}\n---\n\n{{ options_table() }}\n\n";
        let good = format!("{front}1. {{{{ variants.a.fits }}}} then {{{{ variants.b.fits }}}}\n2. {{{{ variants.a.bytes.total }}}}\n");
        assert_eq!(list_out_of_order(&good), None);
        let bad = format!("{front}1. {{{{ variants.b.fits }}}}\n2. {{{{ variants.a.fits }}}}\n\nLater {{{{ variants.a.fits }}}}\n");
        assert_eq!(list_out_of_order(&bad), Some((12, "a".into(), "b".into())));
    }

    #[test]
    fn another_options_total_does_not_count_and_code_is_not_prose() {
        let text = "{{ variants.a.bytes.total | bytes }}, verdict {{ variants.b.fits | verdict }}\n\n```\n{{ variants.c.fits | verdict }}\n```\n";
        let found = check_guide(text);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].option, "b");
        assert!(found[0].quoted.is_empty());
    }
}
