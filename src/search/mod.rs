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
//! explains (front matter `error:`), headings and body as written (Markdown syntax and `{{ }}`
//! expressions left out), section by section, so a result links to the section where its terms
//! weigh most. Each section also carries its text (up to [`EXCERPT_CHARS`]), from which the
//! script cuts the result's snippet and checks quoted phrases; and [`synonyms`] add a token
//! wherever a word readers use for the same thing occurs.

mod synonyms;

use std::collections::BTreeMap;

// FxHash: the index hashes every word of every page twice; SipHash's resistance to chosen keys
// buys nothing for the site's own text and cost about a tenth of a clean build's user time.
use rustc_hash::FxHashMap as HashMap;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use rayon::prelude::*;
use serde::Serialize;
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

use crate::content::{self, PageSource};
use crate::diagnostics::Diagnostic;
use crate::markdown::slug::{slugify, IdRegistry};

/// The file of part `part` of a language's index, relative to the output root.
pub(crate) fn part_path(lang: &str, part: usize) -> String {
    format!("{lang}/search/{part:02x}.js")
}

/// Format version of the index object (`v`), checked by the script.
const VERSION: u32 = 2;

/// The most characters of a section's text an index keeps (its excerpt): all of most sections,
/// so snippets come from where the terms are and quoted phrases are checked against the text
/// itself, while a very long section cannot grow the index without bound. The text is most of
/// the index's size: the bundled site's index grows from 164 to 263 kB (15 pages in three
/// languages), `gen_site.py`'s 3,000 plain pages from 11.8 to 24.4 MB, before compression.
/// `static/search.js` (`FULL_TEXT`) must use the same figure.
const EXCERPT_CHARS: usize = 1000;

/// Weight of a term in a page's title (added to its first section).
const TITLE_WEIGHT: u32 = 12;
/// Weight of a term in a section's heading.
const HEADING_WEIGHT: u32 = 6;
/// Weight of a term in the page's description (added to its first section).
const DESCRIPTION_WEIGHT: u32 = 3;
/// The most one term weighs in one section (a term repeated 100 times is not 100 times better).
const MAX_WEIGHT: u32 = 60;

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

/// One page to index, in the order the language index lists it.
pub(crate) struct Doc<'a> {
    /// Where the page's source is.
    pub(crate) src: &'a PageSource,
    /// Its title.
    pub(crate) title: &'a str,
    /// Its description, if any.
    pub(crate) description: Option<&'a str>,
}

/// A section of a page: its heading and anchor (both empty for the text before the first
/// heading) and its terms with their weights.
struct Section {
    heading: String,
    anchor: String,
    weights: HashMap<String, u32>,
    /// The start of its body text, whitespace collapsed, at most [`EXCERPT_CHARS`] characters.
    excerpt: String,
}

impl Section {
    fn new(heading: String, anchor: String) -> Section {
        Section {
            heading,
            anchor,
            weights: HashMap::default(),
            excerpt: String::new(),
        }
    }

    /// Adds the terms of `text`, each occurrence weighing `weight`, and the token of each synonym
    /// group a run of them belongs to.
    fn add(&mut self, text: &str, weight: u32, groups: &[synonyms::IndexedGroup]) {
        let weights = &mut self.weights;
        let mut bump = |t: &str| match weights.get_mut(t) {
            Some(w) => *w = (*w + weight).min(MAX_WEIGHT),
            None => {
                weights.insert(t.to_string(), weight.min(MAX_WEIGHT));
            }
        };
        let mut recent = synonyms::Recent::new(groups);
        terms(text, |t| {
            bump(t);
            recent.push(t, &mut bump);
        });
    }

    /// Adds body text: its terms, and its start to the excerpt.
    fn add_text(&mut self, text: &str, groups: &[synonyms::IndexedGroup]) {
        self.add(text, 1, groups);
        let mut have = self.excerpt.chars().count();
        for word in text.split_whitespace() {
            if have >= EXCERPT_CHARS {
                break;
            }
            if !self.excerpt.is_empty() {
                self.excerpt.push(' ');
                have += 1;
            }
            for c in word.chars().take(EXCERPT_CHARS.saturating_sub(have)) {
                self.excerpt.push(c);
                have += 1;
            }
        }
        self.excerpt = self.excerpt.replace(COMPUTED, "…");
    }
}

/// What a page contributes to its first section besides its text: title, slug, description and
/// the out-of-memory message it explains.
struct Heading<'a> {
    title: &'a str,
    slug: &'a str,
    description: Option<&'a str>,
    error: Option<&'a str>,
}

/// Stands for an expression's output in the text indexed: not a letter or digit, so it
/// separates terms, and a heading holding it has a computed id.
const COMPUTED: char = '\u{E000}';

/// `body` with every `{{ … }}` expression replaced by [`COMPUTED`] (its output is computed, not
/// written, and may be a table).
fn without_expressions(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        out.push(COMPUTED);
        rest = match rest[start..].find("}}") {
            Some(end) => &rest[start + end + 2..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// A page's sections: the first holds its title, description and the text before the first
/// heading. Anchors are the ids the Markdown renderer gives the headings (explicit `{#id}` ids
/// reserved first, then slugs made unique in order); a heading holding an expression, whose
/// rendered text is not known here, links to the page itself.
fn sections(head: &Heading<'_>, body: &str, groups: &[synonyms::IndexedGroup]) -> Vec<Section> {
    let body = without_expressions(body);
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES;
    // Streamed, as the page renderer does: a page of many short lines would otherwise hold its
    // whole event list, beside the renderer's, at once.
    let mut ids = IdRegistry::default();
    for id in crate::markdown::explicit_heading_ids(&body) {
        ids.reserve(&id);
    }
    let events = Parser::new_ext(&body, options);
    let mut first = Section::new(String::new(), String::new());
    first.add(head.title, TITLE_WEIGHT, groups);
    first.add(head.slug, TITLE_WEIGHT, groups);
    first.add(head.description.unwrap_or(""), DESCRIPTION_WEIGHT, groups);
    first.add(head.error.unwrap_or(""), DESCRIPTION_WEIGHT, groups);
    let mut out = vec![first];
    // The heading being read: its explicit id and its text so far.
    let mut heading: Option<(Option<String>, String)> = None;
    let mut text = String::new();
    let flush = |text: &mut String, out: &mut Vec<Section>| {
        if let Some(s) = out.last_mut() {
            s.add_text(text, groups);
        }
        text.clear();
    };
    for event in events {
        match event {
            Event::Start(Tag::Heading { id, .. }) => {
                flush(&mut text, &mut out);
                heading = Some((id.map(|i| i.into_string()), String::new()));
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((id, words)) = heading.take() {
                    let words = words.trim().to_string();
                    let anchor = match id {
                        Some(id) => id,
                        None if words.contains(COMPUTED) => String::new(),
                        None => ids.unique(&slugify(&words)),
                    };
                    let words = words.replace(COMPUTED, "…");
                    let mut s = Section::new(words, anchor);
                    let heading_text = s.heading.clone();
                    s.add(&heading_text, HEADING_WEIGHT, groups);
                    out.push(s);
                }
            }
            Event::Text(t) | Event::Code(t) => match &mut heading {
                Some((_, words)) => words.push_str(&t),
                None => text.push_str(&t),
            },
            Event::SoftBreak | Event::HardBreak | Event::End(_) if heading.is_none() => {
                text.push(' ');
            }
            _ => {}
        }
    }
    flush(&mut text, &mut out);
    out
}

/// One part of the index, as written to its file (pushed onto `window.vramdocSearch`).
#[derive(Serialize)]
struct Index<'a> {
    /// Format version.
    v: u32,
    /// The language.
    lang: &'a str,
    /// This part's number.
    part: usize,
    /// In part 0 only: the numbers of the language's parts (those with guides, and 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    parts: Option<Vec<usize>>,
    /// In part 0 only: the synonym groups, each a token and its members' terms, which the
    /// script turns a query's members into.
    #[serde(skip_serializing_if = "Option::is_none")]
    syn: Option<Vec<synonyms::IndexedGroup>>,
    /// Per page: title, link relative to the language folder, description.
    docs: Vec<(&'a str, String, &'a str)>,
    /// Per section (all pages of the part, in order): its page, heading, anchor and excerpt.
    sections: Vec<(u32, String, String, String)>,
    /// Per term, sorted: its sections and weights as flat pairs, the section number given as
    /// the difference from the previous pair's.
    terms: BTreeMap<String, Vec<u32>>,
}

/// Builds part `part` of the index of `lang` from its pages (in the order given); reads every
/// page. `parts` lists the language's parts, given to part 0.
pub(crate) fn index_part(
    lang: &str,
    part: usize,
    parts: Option<&[usize]>,
    docs: &[Doc<'_>],
) -> Result<(String, Vec<u8>), Vec<Diagnostic>> {
    let groups = synonyms::groups(lang);
    let per_doc: Vec<Result<Vec<Section>, Vec<Diagnostic>>> = docs
        .par_iter()
        .map(|d| {
            let page = content::load(d.src)?;
            let error = (page.front.extra.iter())
                .find(|(k, _)| k == "error")
                .and_then(|(_, v)| v.as_str());
            let head = Heading {
                title: d.title,
                slug: &d.src.slug,
                description: d.description,
                error,
            };
            Ok(sections(&head, page.body(), &groups))
        })
        .collect();
    let mut errors = Vec::new();
    let mut index = Index {
        v: VERSION,
        lang,
        part,
        parts: parts.map(|p| {
            let mut all = vec![0];
            all.extend(p.iter().copied().filter(|&i| i != 0));
            all
        }),
        syn: (part == 0).then(|| synonyms::groups(lang)),
        docs: Vec::with_capacity(docs.len()),
        sections: Vec::new(),
        terms: BTreeMap::new(),
    };
    // Per term: the last section it was seen in and its postings so far.
    let mut postings: HashMap<String, (u32, Vec<u32>)> = HashMap::default();
    for (doc_no, (d, secs)) in docs.iter().zip(per_doc).enumerate() {
        let secs = match secs {
            Ok(s) => s,
            Err(mut e) => {
                errors.append(&mut e);
                continue;
            }
        };
        let doc_no = doc_no as u32;
        index.docs.push((
            d.title,
            format!("{}/index.html", d.src.slug),
            d.description.unwrap_or(""),
        ));
        for s in secs {
            let sec_no = index.sections.len() as u32;
            for (term, weight) in s.weights {
                match postings.get_mut(&term) {
                    Some((last, list)) => {
                        list.extend([sec_no - *last, weight]);
                        *last = sec_no;
                    }
                    None => {
                        postings.insert(term, (sec_no, vec![sec_no, weight]));
                    }
                }
            }
            index
                .sections
                .push((doc_no, s.heading, s.anchor, s.excerpt));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    index.terms = postings
        .into_iter()
        .map(|(t, (_, list))| (t, list))
        .collect();
    let json = serde_json::to_string(&index).unwrap_or_default();
    let mut bytes = Vec::with_capacity(json.len() + 64);
    bytes.extend_from_slice(
        b"/* vramdoc search index part: generated, do not edit. */\n(window.vramdocSearch = window.vramdocSearch || []).push(",
    );
    bytes.extend_from_slice(json.as_bytes());
    bytes.extend_from_slice(b");\n");
    Ok((part_path(lang, part), bytes))
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

    #[test]
    fn sections_follow_headings_and_ids() {
        let head = Heading {
            title: "T",
            slug: "t",
            description: None,
            error: None,
        };
        let s = sections(
            &head,
            "intro\n\n## Un título\n\ntexto\n\n## Un título\n\n## B {#own}\n",
            &[],
        );
        let anchors: Vec<&str> = s.iter().map(|s| s.anchor.as_str()).collect();
        assert_eq!(anchors, ["", "un-título", "un-título-1", "own"]);
        assert!(s[1].weights.contains_key("texto"));
    }
}
