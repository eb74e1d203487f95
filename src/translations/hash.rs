//! The hash of a section's meaning: blake3 over its normalized Markdown events, so formatting
//! does not count and content does.
//!
//! Not counted: line wrapping (soft and hard breaks are spaces), runs of whitespace, trailing
//! spaces, `*` versus `_` emphasis, `-`/`*`/`+` bullets, ordered-list numbers, tight versus
//! loose lists, trailing spaces in code. Counted: every word and number of the text, heading
//! text and level, each code line, inline code, link and image targets and titles, list items,
//! table cells, raw HTML. `{{ }}` expressions and inline figures are source text, so they count
//! as the expression as written and never as the value a build computes: a changed scenario,
//! estimator or GPU catalog changes no hash. A reference-style link resolves only within the
//! section (its definition elsewhere is not part of the section's hash).

use pulldown_cmark::{CodeBlockKind, Event, Tag, TagEnd};

use crate::site::manifest::{Digest, Hasher};

/// The normalized hash of one section's Markdown text (a parse of its own: see
/// [`section_hashes`]).
pub(crate) fn section_hash(text: &str) -> Digest {
    crate::markdown::parses::count_one();
    hash_uncounted(text)
}

/// The normalized hash of each of `sections`, a page's sections in order: one pass over the
/// page's text, each section parsed alone (a hash means the section as written, so a reference
/// defined in another section does not resolve in it; that is why the page's own parse cannot
/// give these).
pub(crate) fn section_hashes<'a>(sections: impl IntoIterator<Item = &'a str>) -> Vec<Digest> {
    crate::markdown::parses::count_one();
    sections.into_iter().map(hash_uncounted).collect()
}

/// [`section_hash`], its parse already counted.
fn hash_uncounted(text: &str) -> Digest {
    let mut n = Normalizer::default();
    for event in crate::markdown::parses::uncounted(text) {
        n.event(event);
    }
    n.flush();
    n.hasher.finish()
}

#[derive(Default)]
struct Normalizer {
    hasher: Hasher,
    /// Text not yet fed: consecutive text, breaks and spaces are joined and collapsed first.
    pending: String,
    /// Inside a code block: its text, fed line by line at its end.
    code: Option<String>,
    /// Per open tag: whether its end is fed (a paragraph directly in a list item is not).
    open: Vec<bool>,
    /// Per open tag: whether it is a list item.
    in_item: Vec<bool>,
}

impl Normalizer {
    fn token(&mut self, kind: &str, value: &str) {
        self.hasher.part(kind).part(value);
    }

    /// Feeds the pending text, whitespace collapsed and trimmed.
    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let text = self
            .pending
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        self.pending.clear();
        if !text.is_empty() {
            self.token("t", &text);
        }
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some(code) = &mut self.code {
            match event {
                Event::Text(t) => code.push_str(&t),
                Event::End(TagEnd::CodeBlock) => self.end_code(),
                _ => {}
            }
            return;
        }
        match event {
            Event::Text(t) => self.pending.push_str(&t),
            Event::SoftBreak | Event::HardBreak => self.pending.push(' '),
            Event::Start(tag) => self.start(tag),
            Event::End(_) => {
                self.flush();
                self.in_item.pop();
                if self.open.pop().unwrap_or(true) {
                    self.token("/", "");
                }
            }
            other => {
                self.flush();
                let (kind, value) = match &other {
                    Event::Code(c) => ("c", c.to_string()),
                    Event::Html(h) | Event::InlineHtml(h) => ("h", collapse(h)),
                    Event::InlineMath(m) => ("m", m.to_string()),
                    Event::DisplayMath(m) => ("M", m.to_string()),
                    Event::FootnoteReference(l) => ("f", l.to_string()),
                    Event::TaskListMarker(done) => ("x", done.to_string()),
                    Event::Rule => ("r", String::new()),
                    _ => ("?", String::new()),
                };
                self.token(kind, &value);
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        self.flush();
        let parent_is_item = self.in_item.last().copied().unwrap_or(false);
        self.in_item.push(matches!(tag, Tag::Item));
        if let Tag::CodeBlock(kind) = &tag {
            let info = match kind {
                CodeBlockKind::Fenced(i) => i.trim().to_string(),
                CodeBlockKind::Indented => String::new(),
            };
            self.token("code", &info);
            self.code = Some(String::new());
            return;
        }
        if matches!(tag, Tag::Paragraph) && parent_is_item {
            // Tight and loose lists differ only in these paragraphs.
            self.open.push(false);
            return;
        }
        self.open.push(true);
        let (kind, value) = match tag {
            Tag::Paragraph => ("p", String::new()),
            Tag::Heading { level, .. } => ("hd", (level as u8).to_string()),
            Tag::BlockQuote(k) => ("bq", format!("{k:?}")),
            Tag::List(start) => ("list", start.is_some().to_string()),
            Tag::Item => ("li", String::new()),
            Tag::FootnoteDefinition(l) => ("fn", l.to_string()),
            Tag::Table(_) => ("table", String::new()),
            Tag::TableHead => ("thead", String::new()),
            Tag::TableRow => ("tr", String::new()),
            Tag::TableCell => ("td", String::new()),
            Tag::Emphasis => ("em", String::new()),
            Tag::Strong => ("strong", String::new()),
            Tag::Strikethrough => ("del", String::new()),
            Tag::Link {
                dest_url, title, ..
            } => ("a", format!("{dest_url} {title}")),
            Tag::Image {
                dest_url, title, ..
            } => ("img", format!("{dest_url} {title}")),
            other => ("tag", format!("{other:?}")),
        };
        self.token(kind, &value);
    }

    /// Feeds a code block's lines, trailing spaces and trailing blank lines dropped.
    fn end_code(&mut self) {
        let code = self.code.take().unwrap_or_default();
        let mut lines: Vec<&str> = code.lines().map(str::trim_end).collect();
        while lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        for line in lines {
            self.token("l", line);
        }
        self.in_item.pop();
        self.token("/", "");
    }
}

/// Whitespace runs as one space, trimmed.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[path = "hash_tests.rs"]
mod tests;
