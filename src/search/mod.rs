//! Offline search: an index per language, read by `static/vramdoc.js` in the browser. The index is
//! a set of scripts (`<lang>/search/00.js` … one part per manifest shard, so an edit re-indexes
//! only the guides of its shard) that each push their part onto a global, not files the page
//! fetches, because Chromium refuses `fetch()` from `file://` pages while it loads
//! `<script src>`: the search then works from disk, under `serve` and from any base path alike.
//! Part `00` is always written and lists the parts that exist (a shard without guides in the
//! language has none).
//!
//! Terms are folded ([`fold`]: decomposed, combining marks dropped, lower-cased, so `Acumulación`
//! is `acumulacion`). Words of spaced scripts are terms; runs of Chinese, Japanese or Korean
//! characters, which have no spaces, are cut into overlapping character bigrams (`梯度累积` →
//! `梯度 度累 累积`; a lone character is its own term), the segmentation Lucene's CJK analyzer
//! uses. A query is cut the same way and every term must occur in the guide, so a query matches
//! wherever its text occurs, whatever a dictionary would have called a word.
//!
//! The text indexed is each page's title, slug, description, the out-of-memory message it
//! explains (front matter `error:`), headings and body as the page shows them (expressions
//! expanded: a figure in a table finds its guide), section by section, so a result links to the
//! section where its terms weigh most. The page job collects them from its own render
//! ([`Collector`]); a part is put together from its pages' sections ([`index_part`]), those of
//! pages not rendered again taken from the part's previous file ([`previous_sections`]). Each
//! section also carries its text (up to [`EXCERPT_CHARS`]), from which the script cuts the
//! result's snippet and checks quoted phrases; and [`synonyms`] add a token wherever a word
//! readers use for the same thing occurs.

mod page;
mod part;
mod synonyms;

pub(crate) use page::{Collector, Head, SearchSection};
pub(crate) use part::{index_part, previous_sections, Doc};

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// The file of part `part` of a language's index, relative to the output root.
pub(crate) fn part_path(lang: &str, part: usize) -> String {
    format!("{lang}/search/{part:02x}.js")
}

/// Folds text for matching: canonical decomposition, combining marks dropped, lower-cased.
pub(crate) fn fold(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    text.nfd()
        .filter(|&c| !is_combining_mark(c))
        .flat_map(char::to_lowercase)
        .collect()
}

/// True for characters of scripts written without spaces between words (Han, kana, Hangul,
/// Bopomofo): their runs are cut into bigrams.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF   // Hiragana, Katakana
        | 0x3100..=0x312F // Bopomofo
        | 0x3400..=0x4DBF // CJK Extension A
        | 0x4E00..=0x9FFF // CJK Unified Ideographs
        | 0xAC00..=0xD7AF // Hangul syllables
        | 0xF900..=0xFAFF // CJK Compatibility Ideographs
        | 0x20000..=0x3134F) // CJK Extensions B–G
}

/// Calls `term` for every term of `text` in order: folded words of spaced scripts (runs of
/// letters and digits), and the bigrams of runs of [`is_cjk`] characters.
pub(crate) fn terms(text: &str, mut term: impl FnMut(&str)) {
    let folded = fold(text);
    let mut word = String::new();
    let mut run: Vec<char> = Vec::new();
    let mut buf = String::with_capacity(8);
    let mut flush_run = |run: &mut Vec<char>, term: &mut dyn FnMut(&str)| {
        if run.len() == 1 {
            buf.clear();
            buf.push(run[0]);
            term(&buf);
        }
        for pair in run.windows(2) {
            buf.clear();
            buf.extend(pair);
            term(&buf);
        }
        run.clear();
    };
    for c in folded.chars() {
        if is_cjk(c) {
            if !word.is_empty() {
                term(&word);
                word.clear();
            }
            run.push(c);
        } else {
            flush_run(&mut run, &mut term);
            if c.is_alphanumeric() {
                word.push(c);
            } else if !word.is_empty() {
                term(&word);
                word.clear();
            }
        }
    }
    flush_run(&mut run, &mut term);
    if !word.is_empty() {
        term(&word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<String> {
        let mut v = Vec::new();
        terms(text, |t| v.push(t.to_string()));
        v
    }

    #[test]
    fn folds_accents_and_case() {
        assert_eq!(
            all("Acumulación de MEMORIA"),
            ["acumulacion", "de", "memoria"]
        );
    }

    #[test]
    fn cuts_cjk_runs_into_bigrams() {
        assert_eq!(
            all("梯度累积 (batch)显存"),
            ["梯度", "度累", "累积", "batch", "显存"]
        );
        assert_eq!(all("存 GPU"), ["存", "gpu"]);
    }
}
