//! Markdown to HTML (placeholder until the full renderer lands: same API).

/// A heading of the rendered document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// 1–6.
    pub level: u8,
    /// The anchor id.
    pub id: String,
    /// The plain text.
    pub text: String,
}

/// Rendered HTML plus the document's headings.
#[derive(Debug, Clone)]
pub struct RenderedMarkdown {
    /// The HTML.
    pub html: String,
    /// Headings in order.
    pub headings: Vec<Heading>,
}

/// Renders Markdown to HTML.
pub fn render_html(markdown: &str) -> RenderedMarkdown {
    use pulldown_cmark::{html, Options, Parser};
    let mut out = String::new();
    html::push_html(&mut out, Parser::new_ext(markdown, Options::all()));
    RenderedMarkdown {
        html: out,
        headings: Vec::new(),
    }
}

/// CSS for highlighted code.
pub fn highlight_css() -> String {
    String::new()
}
