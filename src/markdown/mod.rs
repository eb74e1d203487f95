//! Guide bodies (already expanded Markdown) to HTML.
//!
//! pulldown-cmark parses with tables, footnotes, strikethrough, task lists and heading
//! attributes (`{#custom-id}`); smart punctuation stays off so code-like prose keeps its ASCII
//! quotes. A rewrite pass between parser and writer adds page-unique heading ids with anchor
//! links, highlights fenced code at build time with class-based spans (see [`highlight_css`]),
//! wraps tables in a scrollable `<div class="table-wrap">` and gathers footnotes in a
//! `<section class="footnotes">` at the end. Pure: strings in, strings out.

mod escape;
pub(crate) use escape::escape_html;
mod highlight;
mod lint;
pub(crate) mod parses;
mod rewrite;
mod safety;
pub(crate) mod slug;

use std::borrow::Cow;
use std::ops::Range;

pub use parses::{count_parses, parses_under};
pub(crate) use parses::{on_page, parser};
use pulldown_cmark::{html, Event, Options, Tag, TagEnd};
pub(crate) use safety::{Dropped, DroppedKind, SourceWatch};

/// The HTML of a guide body and the headings it contains (for a table of contents).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedMarkdown {
    /// The body as an HTML fragment.
    pub html: String,
    /// Every heading, in document order.
    pub headings: Vec<Heading>,
}

/// One heading of a rendered page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// 1 for `#`, up to 6.
    pub level: u8,
    /// The `id` attribute: explicit `{#id}` or the slug of the text, unique within the page.
    pub id: String,
    /// The heading's plain text (no markup, no raw HTML tags).
    pub text: String,
}

/// Parser options every guide is rendered with.
pub(crate) fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
}

/// Render a guide body (already expanded: it may contain inline raw HTML like
/// `<span class="figure" title="6,593,445,888 bytes">6.14 GiB</span>` and image links to .svg
/// files). Raw HTML other than those figure spans, and links or images with unsafe URL schemes,
/// are dropped (see [`render_html_with`]); text inside code is escaped and never re-interpreted.
pub fn render_html(markdown: &str) -> RenderedMarkdown {
    render_html_with(markdown, false)
}

/// [`render_html`], keeping every raw HTML fragment and URL when `unsafe_html` is true (the
/// site's `markdown: { unsafe_html: true }`). The events stream from parser to writer, so memory
/// stays proportional to the page, not to its number of lines.
pub fn render_html_with(markdown: &str, unsafe_html: bool) -> RenderedMarkdown {
    render_html_observed(markdown, unsafe_html, |_| None, |_, _| {})
}

/// [`render_html_with`], showing `observe` every event the parser gives with its byte range,
/// in order, as the writer pulls it (the search index collects a page's text and headings so,
/// and [`SourceWatch`] what the raw-HTML policy would drop, from the one parse that renders
/// it), and wrapping each image for which `picture` gives an opening (a chart's `<picture>`
/// with its narrow `<source>`) in it and `</picture>`.
///
/// Generated heading ids avoid every explicit `{#id}` of the page, even one further down. The
/// one parse reserves each explicit id as it comes; only when an id generated earlier turns out
/// to be one of them (`## Setup` above `## Other {#setup}`) is the page rendered again, with
/// all of them reserved from the start (`observe` sees the first parse only: the events are the
/// same).
pub(crate) fn render_html_observed(
    markdown: &str,
    unsafe_html: bool,
    picture: impl Fn(&str) -> Option<String>,
    mut observe: impl FnMut(&Event<'_>, Range<usize>),
) -> RenderedMarkdown {
    let (rendered, collided) = render_pass(markdown, &[], unsafe_html, &picture, &mut observe);
    match collided {
        // With every explicit id reserved, no generated id is one of them.
        Some(explicit) => render_pass(markdown, &explicit, unsafe_html, &picture, &mut |_, _| {}).0,
        None => rendered,
    }
}

/// One render of `markdown` with `reserved` ids kept from generated ones, and the page's
/// explicit ids when a generated id is one of them (the render is then wrong).
fn render_pass(
    markdown: &str,
    reserved: &[String],
    unsafe_html: bool,
    picture: &dyn Fn(&str) -> Option<String>,
    observe: &mut dyn FnMut(&Event<'_>, Range<usize>),
) -> (RenderedMarkdown, Option<Vec<String>>) {
    let events = parser(markdown).into_offset_iter().map(|(event, range)| {
        observe(&event, range);
        event
    });
    let mut rewriter = rewrite::Rewriter::new(events, reserved, unsafe_html);
    let mut html = String::with_capacity(markdown.len() + markdown.len() / 2);
    // Per open image: whether it is wrapped.
    let mut wrapped: Vec<bool> = Vec::new();
    let events = rewriter.by_ref().flat_map(|event| {
        let (before, after) = match &event {
            Event::Start(Tag::Image { dest_url, .. }) => {
                let open = picture(dest_url);
                wrapped.push(open.is_some());
                (open, None)
            }
            Event::End(TagEnd::Image) => {
                (None, wrapped.pop().unwrap_or(false).then_some("</picture>"))
            }
            _ => (None, None),
        };
        let before = before.map(|h| Event::InlineHtml(h.into()));
        let after = after.map(|h| Event::InlineHtml(h.into()));
        before.into_iter().chain([event]).chain(after)
    });
    html::push_html(&mut html, events);
    let collided = rewriter.collided();
    let rendered = RenderedMarkdown {
        html,
        headings: rewriter.into_headings(),
    };
    (rendered, collided)
}

/// What the raw-HTML policy would drop from a guide's source and where its code is, from one
/// parse (a body with `{{ }}` is parsed so before it is expanded).
pub(crate) fn watch_source(markdown: &str) -> SourceWatch {
    let mut watch = SourceWatch::default();
    for (event, range) in parser(markdown).into_offset_iter() {
        watch.event(&event, range);
    }
    watch
}

/// A guide's Markdown source with raw HTML and links or images with unsafe URL schemes
/// (`javascript:`, `vbscript:`, `data:`, `file:`) removed, and what was removed (for warnings).
/// Line breaks are kept, so later messages point at the right lines.
///
/// Removing can make new constructs (`[x]<b>(javascript:y)` becomes a link), so the result is
/// stripped again until nothing more goes (what the first pass found is reported); after
/// [`MAX_STRIP_PASSES`], whatever Markdown is left is escaped as plain text.
pub fn strip_unsafe_html(markdown: &str) -> (Cow<'_, str>, Vec<Dropped>) {
    let (mut text, dropped) = safety::strip_unsafe(markdown);
    if dropped.is_empty() {
        return (text, dropped);
    }
    for _ in 1..MAX_STRIP_PASSES {
        let (again, more) = safety::strip_unsafe(&text);
        if more.is_empty() {
            return (text, dropped);
        }
        text = Cow::Owned(again.into_owned());
    }
    (Cow::Owned(safety::escape_all(&text)), dropped)
}

/// How many times [`strip_unsafe_html`] strips before it escapes the rest.
pub(crate) const MAX_STRIP_PASSES: usize = 8;

/// Class-based CSS for highlighted code: token classes carry the `hl-` prefix and take their
/// colours from variables that the dark colour scheme redefines.
pub fn highlight_css() -> String {
    highlight::highlight_css().to_owned()
}

/// Heading slug: lower-case, spaces and punctuation → single hyphens, letters of every script
/// kept (`显存不足的原因` stays as it is; `¿Qué hace batch_size?` → `qué-hace-batch_size`).
pub fn slugify(text: &str) -> String {
    slug::slugify(text)
}

/// Text snippets of rendered `html` where a literal `**` or `__` survived outside code and
/// pre-formatted elements: emphasis CommonMark did not apply, as in `**注意：**显存` (the
/// closing `**` follows punctuation and precedes a letter, so it cannot close). One snippet per
/// cluster of nearby markers, with some context on each side.
pub fn stray_emphasis_markers(html: &str) -> Vec<String> {
    lint::stray_emphasis_markers(html)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every explicit heading id of `markdown`, by a parse of its own (what the render reserved
    /// up front before it reserved them as they come).
    fn explicit_ids(markdown: &str) -> Vec<String> {
        parses::uncounted(markdown)
            .filter_map(|event| match event {
                Event::Start(Tag::Heading { id: Some(id), .. }) => Some(id.into_string()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn reserving_explicit_ids_as_they_come_renders_as_reserving_them_first() {
        let pages = [
            "## Setup\n\n## Other {#setup}\n",
            "## Setup\n\n## Setup\n\n## Again {#setup-1}\n\n## Setup\n",
            "Text.[^a]\n\n[^a]: Note.\n\n## Notes {#fn-a}\n",
            "## A {#b}\n\n## B\n\n## B\n",
            "## ???\n\n## Later {#section}\n\n> ## Quoted {#later}\n\n## Later\n",
            "No headings at all, {braces} and `{#code}`.\n",
        ];
        for page in pages {
            let (first, collided) = render_pass(page, &[], false, &|_| None, &mut |_, _| {});
            let (reserved, _) =
                render_pass(page, &explicit_ids(page), false, &|_| None, &mut |_, _| {});
            let rendered = render_html(page);
            assert_eq!(rendered, reserved, "{page}");
            // The second render happens exactly when the first would have differed.
            assert_eq!(collided.is_some(), first != reserved, "{page}");
        }
    }

    #[test]
    fn the_watch_sees_what_the_policy_drops() {
        let pages = [
            ("Plain text: a colon.\n", false),
            ("Text <b>bold</b>.\n", true),
            ("<div>\nblock\n</div>\n", true),
            (
                "[x](javascript:alert(1)) and ![y](data:image/png,z)\n",
                true,
            ),
            ("`<b>` in code and\n\n```\n<script>\n```\n", false),
            (
                "<span class=\"figure\" title=\"1 byte\">1 B</span>\n",
                false,
            ),
            ("[ok](https://example.org/) <!-- comment -->\n", true),
        ];
        for (page, drops) in pages {
            let watch = watch_source(page);
            let (_, dropped) = safety::strip_unsafe(page);
            assert_eq!(watch.unsafe_found, drops, "{page}");
            assert_eq!(watch.unsafe_found, !dropped.is_empty(), "{page}");
        }
        let code = watch_source("a `b` c\n\n```\nd\n```\n").code;
        assert_eq!(code, [2..5, 9..18]);
    }
}
