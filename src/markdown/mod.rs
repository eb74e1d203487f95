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
mod rewrite;
pub(crate) mod slug;

use pulldown_cmark::{html, Event, Options, Parser};

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
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
}

/// Render a guide body (already expanded: it may contain inline raw HTML like
/// `<span class="figure" title="6,593,445,888 bytes">6.14 GiB</span>` and image links to .svg
/// files). Raw HTML passes through; text inside code is escaped and never re-interpreted.
pub fn render_html(markdown: &str) -> RenderedMarkdown {
    let events: Vec<Event<'_>> = Parser::new_ext(markdown, options()).collect();
    let (events, headings) = rewrite::Rewriter::rewrite(events);
    let mut html = String::with_capacity(markdown.len() + markdown.len() / 2);
    html::push_html(&mut html, events.into_iter());
    RenderedMarkdown { html, headings }
}

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
