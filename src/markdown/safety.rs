//! The raw HTML policy: guides are written by translators and contributors, so raw HTML and links
//! or images with script-capable URL schemes are dropped (as Hugo does) unless the site sets
//! `markdown: { unsafe_html: true }`. The figure spans vramdoc itself writes are kept.

use std::borrow::Cow;
use std::ops::Range;

use pulldown_cmark::{Event, Tag, TagEnd};

/// Something dropped from a guide's Markdown source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// Byte offset in the source where it began.
    pub(crate) offset: usize,
    /// What it was, for a warning: the start of the raw HTML, or the unsafe URL.
    pub(crate) what: DroppedKind,
}

/// The kind of thing dropped, with a short excerpt of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DroppedKind {
    /// Raw HTML (a tag, comment or HTML block).
    RawHtml(String),
    /// A link or image whose URL has an unsafe scheme (`javascript:`, `vbscript:`, `data:`,
    /// `file:`); the link text is kept as plain text.
    UnsafeUrl(String),
}

/// True for the inline HTML vramdoc's expressions write: `<span class="figure" title="...">`
/// (with a plain title), `</span>`, and the `<br>` between the settings of an options table's cell.
pub(crate) fn is_vramdoc_markup(html: &str) -> bool {
    html == "</span>"
        || html == "<br>"
        || html
            .strip_prefix("<span class=\"figure\" title=\"")
            .and_then(|rest| rest.strip_suffix("\">"))
            .is_some_and(|title| !title.contains(['"', '<', '>']))
}

/// True for a URL whose scheme can run script or smuggle content: `javascript:`, `vbscript:`,
/// `data:` and `file:` (ASCII case and the whitespace browsers ignore do not matter).
pub(crate) fn is_unsafe_url(url: &str) -> bool {
    let scheme: String = url
        .chars()
        .filter(|c| !c.is_ascii_whitespace() && !c.is_control())
        .take(11)
        .flat_map(char::to_lowercase)
        .collect();
    ["javascript:", "vbscript:", "data:", "file:"]
        .iter()
        .any(|s| scheme.starts_with(s))
}

/// What one parse of a guide's source shows (fed each event with its range): whether
/// [`strip_unsafe`] would drop anything from it, and the byte ranges of its code (fenced,
/// indented and inline), where `{{ }}` is not an expression and a figure is not typed prose.
#[derive(Debug, Default)]
pub(crate) struct SourceWatch {
    /// Raw HTML or an unsafe link or image was seen: the source must be stripped first.
    pub(crate) unsafe_found: bool,
    /// The code's byte ranges, in document order.
    pub(crate) code: Vec<Range<usize>>,
}

impl SourceWatch {
    /// Takes one event of the parse and its byte range.
    pub(crate) fn event(&mut self, event: &Event<'_>, range: Range<usize>) {
        match event {
            Event::Start(Tag::CodeBlock(_)) | Event::Code(_) => self.code.push(range),
            // [`strip_unsafe`] drops exactly these, so it finds nothing when none is seen.
            Event::Html(html) | Event::InlineHtml(html) if !is_vramdoc_markup(html) => {
                self.unsafe_found = true;
            }
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. })
                if is_unsafe_url(dest_url) =>
            {
                self.unsafe_found = true;
            }
            _ => {}
        }
    }
}

/// `markdown` with raw HTML and unsafe links and images removed, and what was removed. Line
/// breaks are kept, so later messages still point at the right lines; an unsafe link becomes
/// its text. Borrows when nothing was removed.
pub(crate) fn strip_unsafe(markdown: &str) -> (Cow<'_, str>, Vec<Dropped>) {
    if !markdown.contains(['<', ':']) {
        return (Cow::Borrowed(markdown), Vec::new());
    }
    let mut edits: Vec<(Range<usize>, String)> = Vec::new();
    let mut dropped = Vec::new();
    // The unsafe link or image being replaced: its range, its text so far, its nesting depth.
    let mut open: Option<(Range<usize>, String, usize)> = None;
    let mut in_html_block = false;
    for (event, range) in super::parser(markdown).into_offset_iter() {
        if let Some((_, text, depth)) = &mut open {
            match &event {
                Event::Text(t) | Event::Code(t) => escape_markdown(text, t),
                Event::SoftBreak | Event::HardBreak => text.push('\n'),
                Event::Start(Tag::Link { .. } | Tag::Image { .. }) => *depth += 1,
                Event::End(TagEnd::Link | TagEnd::Image) if *depth > 0 => *depth -= 1,
                Event::End(TagEnd::Link | TagEnd::Image) => {
                    let (whole, mut text, _) = open.take().expect("open link");
                    let lines = markdown[whole.clone()].matches('\n').count();
                    let have = text.matches('\n').count();
                    text.extend(std::iter::repeat_n('\n', lines.saturating_sub(have)));
                    edits.push((whole, text));
                }
                _ => {}
            }
            continue;
        }
        let block = matches!(event, Event::Html(_));
        match event {
            Event::Start(Tag::HtmlBlock) => in_html_block = false,
            Event::Html(html) | Event::InlineHtml(html) if !is_vramdoc_markup(&html) => {
                // An HTML block comes as one event per line: one warning for the block. Each
                // inline tag is its own (`## </script><script>` drops two).
                if !in_html_block {
                    dropped.push(Dropped {
                        offset: range.start,
                        what: DroppedKind::RawHtml(excerpt(&html)),
                    });
                }
                in_html_block = block;
                let lines = markdown[range.clone()].matches('\n').count();
                edits.push((range, "\n".repeat(lines)));
            }
            Event::End(TagEnd::HtmlBlock) => in_html_block = false,
            Event::InlineHtml(_) | Event::Html(_) => {}
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. })
                if is_unsafe_url(&dest_url) =>
            {
                dropped.push(Dropped {
                    offset: range.start,
                    what: DroppedKind::UnsafeUrl(excerpt(&dest_url)),
                });
                open = Some((range, String::new(), 0));
            }
            _ => in_html_block = false,
        }
    }
    if edits.is_empty() {
        return (Cow::Borrowed(markdown), dropped);
    }
    let mut out = String::with_capacity(markdown.len());
    let mut last = 0;
    for (range, replacement) in edits {
        if range.start < last {
            continue;
        }
        out.push_str(&markdown[last..range.start]);
        out.push_str(&replacement);
        last = range.end;
    }
    out.push_str(&markdown[last..]);
    (Cow::Owned(out), dropped)
}

/// The first line of `text`, at most 40 characters, for a message.
fn excerpt(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or("");
    let mut short: String = line.chars().take(40).collect();
    if short.len() < line.len() {
        short.push('…');
    }
    short
}

/// `text` with every ASCII punctuation character backslash-escaped: plain text, whatever it was.
pub(crate) fn escape_all(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    escape_markdown(&mut out, text);
    out
}

/// Appends `text` with ASCII punctuation backslash-escaped, so it reads as plain text again.
fn escape_markdown(out: &mut String, text: &str) {
    for c in text.chars() {
        if c.is_ascii_punctuation() {
            out.push('\\');
        }
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_schemes() {
        assert!(is_unsafe_url("javascript:alert(1)"));
        assert!(is_unsafe_url(" JavaScript:alert(1)"));
        assert!(is_unsafe_url("java\tscript:x"));
        assert!(is_unsafe_url("data:text/html,<b>"));
        assert!(!is_unsafe_url("https://example.org/"));
        assert!(!is_unsafe_url("sweep.svg"));
        assert!(!is_unsafe_url("#javascript:"));
    }

    #[test]
    fn figure_spans_are_ours() {
        assert!(is_vramdoc_markup(
            "<span class=\"figure\" title=\"6,593,445,888 bytes\">"
        ));
        assert!(!is_vramdoc_markup(
            "<span class=\"figure\" title=\"x\" onclick=\"y\">"
        ));
    }
}
