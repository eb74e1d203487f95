//! Flags memory figures typed by hand into a guide's prose ("6.14 GiB"), so guides cannot drift
//! from the estimator again. Figures inside code and inside `{{ }}` are not prose, and a whole
//! number of GB ("a 12 GB card") names a product, not a computed figure.

use std::ops::Range;

/// Units that mark a number as a memory figure.
const UNITS: &[&str] = &["GiB", "MiB", "KiB", "TiB", "GB", "MB", "KB", "TB"];

/// Every hand-typed memory figure in `body` outside code and expressions: (byte range, text).
pub fn typed_memory_figures(body: &str) -> Vec<(Range<usize>, String)> {
    // One parse for both: the code, and the expressions outside it.
    let mut skip = super::parse::code_ranges(body);
    if body.contains("{{") {
        let found = super::parse::find_outside(body, &skip);
        skip.extend(found.into_iter().map(|f| f.span));
    }
    typed_memory_figures_outside(body, skip)
}

/// [`typed_memory_figures`], given the ranges of `body` that are code or expressions (what
/// [`super::Expanded::skipped`] records of the body it expanded).
pub(crate) fn typed_memory_figures_outside(
    body: &str,
    mut skip: Vec<Range<usize>>,
) -> Vec<(Range<usize>, String)> {
    // Figures are found in text order, so one cursor over the sorted ranges answers "inside
    // code or an expression?" for all of them.
    skip.sort_by_key(|r| (r.start, r.end));
    let mut skip_at = 0;
    let mut max_end = 0;
    let bytes = body.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit()
            || (i > 0
                && (bytes[i - 1].is_ascii_alphanumeric()
                    || bytes[i - 1] == b'.'
                    || bytes[i - 1] == b','))
        {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len()
            && (bytes[i].is_ascii_digit()
                || ((bytes[i] == b'.' || bytes[i] == b',')
                    && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)))
        {
            i += 1;
        }
        let mut j = i;
        while j < bytes.len() && (bytes[j] == b' ' || body[j..].starts_with('\u{a0}')) {
            j += if bytes[j] == b' ' { 1 } else { 2 };
        }
        if let Some(unit) = UNITS.iter().find(|u| body[j..].starts_with(**u)) {
            let end = j + unit.len();
            let word_ends = body[end..]
                .chars()
                .next()
                .is_none_or(|c| !c.is_ascii_alphanumeric());
            // A whole number of GB names a card's size ("a 12 GB card"), not a computed figure.
            let card_size = *unit == "GB" && !body[start..i].contains(['.', ',']);
            while skip.get(skip_at).is_some_and(|r| r.start <= start) {
                max_end = max_end.max(skip[skip_at].end);
                skip_at += 1;
            }
            if word_ends && !card_size && max_end <= start {
                out.push((start..end, body[start..end].to_string()));
            }
            i = end;
        }
    }
    out
}

/// Whether a typed figure ("6.14 GiB") is quoted from the guide's out-of-memory message (its
/// front matter `error:`): a measured value, not one to compute. Spaces are ignored.
pub(crate) fn in_quoted_message(figure: &str, message: &str) -> bool {
    let squeeze = |s: &str| -> String { s.chars().filter(|c| !c.is_whitespace()).collect() };
    let figure = squeeze(figure);
    !figure.is_empty() && squeeze(message).contains(&figure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_prose_figures_only() {
        let body = "The logits take 6.14 GiB, 1.6 GB or 500 MB, and 12GB cards fail.\n\n`6582 MiB` in code is fine, {{ bytes.peak | bytes }} too.\n\n```\n1.6 GB\n```\nA 4090 is not a figure; nor is H100.\n";
        let found: Vec<String> = typed_memory_figures(body)
            .into_iter()
            .map(|(_, s)| s)
            .collect();
        assert_eq!(found, vec!["6.14 GiB", "1.6 GB", "500 MB"]);
    }
}
