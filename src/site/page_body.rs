//! A guide page's body: raw HTML dropped (unless the site allows it), `{{ }}` expanded, rendered
//! to HTML with its search sections, and linted, with as few parses of its Markdown as can be:
//! a body without expressions is parsed once, by the render, which also says what the raw-HTML
//! policy would drop and where the code is (for the typed-figure lint); a body with expressions
//! is parsed twice, its source once (the expressions outside code, and what the policy drops)
//! and the expanded text once by the render, since values and tables change the document (a `|`
//! in a table cell, a table's rows). A body the policy drops something from, a generated heading
//! id found to be a later explicit one (see [`markdown::render_html_observed`]) and, in a guide
//! with a scenario, a translation's body with notices spliced in (the typed-figure lint reads the
//! page's own body, which was not the text rendered) cost another parse each; they are rare, and
//! warned about or marked on the page.

use std::borrow::Cow;
use std::ops::Range;

use super::SiteContext;
use crate::content::Page;
use crate::diagnostics::Diagnostic;
use crate::expand::{self, lint, ExpandContext, Expanded, GuideData};
use crate::markdown::{self, RenderedMarkdown, SourceWatch};
use crate::search;

/// A page's body, expanded and rendered: the HTML, the Markdown edition's body, the charts
/// (paths relative to the output root), the headings and the warnings.
pub(super) struct Body {
    pub(super) html: String,
    pub(super) answer: Option<expand::ShortAnswer>,
    pub(super) markdown: String,
    pub(super) charts: Vec<(String, Vec<u8>)>,
    pub(super) headings: Vec<markdown::Heading>,
    pub(super) warnings: Vec<Diagnostic>,
    pub(super) sections: Vec<search::SearchSection>,
}

/// Expands `page`'s `body` (the page's own, or a translation's with notices spliced in; raw HTML
/// dropped unless the site allows it) and renders it.
pub(super) fn render_body(
    site: &SiteContext,
    page: &Page,
    body: &str,
    data: Option<&GuideData>,
) -> Result<Body, Vec<Diagnostic>> {
    let (lang, slug) = (page.src.lang.as_str(), page.src.slug.as_str());
    let loc = site
        .locales
        .get(lang)
        .ok_or_else(|| vec![Diagnostic::error(format!("no locale `{lang}`"))])?;
    let unsafe_html = site.config.unsafe_html;
    let mut labels = super::guides::variant_labels(page);
    // What the policy drops from the variant labels (warned after the body's).
    let mut from_labels = Vec::new();
    if !unsafe_html {
        for ((_, label), variant) in labels.iter_mut().zip(&page.front.variants) {
            let (clean, found) = markdown::strip_unsafe_html(label);
            if !found.is_empty() {
                *label = clean.into_owned();
                from_labels.extend(found.into_iter().map(|d| (d, Some(variant.line))));
            }
        }
    }
    let ctx = ExpandContext {
        loc,
        data,
        variant_labels: &labels,
        catalog: &site.catalog,
        charts: &site.charts,
        error: guide_error(page),
    };
    let head = search::Head {
        title: &page.front.title,
        slug,
        description: page.front.description.as_deref(),
        error: guide_error(page),
    };
    let pass = |text: &str, code| render_pass(page, text, code, &ctx, &head, unsafe_html);
    // A body with expressions: its source parsed once, for its code and what the policy drops.
    let source = body.contains("{{").then(|| markdown::watch_source(body));
    let must_strip = |w: &SourceWatch| !unsafe_html && w.unsafe_found;
    let done = match source {
        Some(w) if must_strip(&w) => None,
        Some(w) => Some(pass(body, Some(w.code))?),
        None => Some(pass(body, None)?).filter(|p| !must_strip(&p.watch)),
    };
    // The policy drops something: the body is stripped first, and that text rendered.
    let mut dropped = Vec::new();
    let mut own = std::ptr::eq(body, page.body());
    let Pass {
        mut expanded,
        mut rendered,
        sections,
        watch,
    } = match done {
        Some(p) => p,
        None => {
            let (clean, found) = markdown::strip_unsafe_html(body);
            own = own && matches!(clean, Cow::Borrowed(_));
            dropped.extend(found.into_iter().map(|d| (d, None)));
            pass(&clean, None)?
        }
    };
    dropped.extend(from_labels);
    let mut answer = data.and_then(|d| expand::short_answer(d, &ctx));
    if let Some(a) = &mut answer {
        rendered.html = expand::add_answer_targets(&rendered.html, a, &ctx);
    }
    let mut warnings = dropped_warnings(page, dropped);
    // What the typed-figure lint skips, when the text expanded is the page's own body: the code
    // and expressions expansion found, or (no expressions) the code the render's parse found.
    let skipped = match expanded.skipped.take() {
        Some(skipped) => own.then_some(skipped),
        None => own.then_some(watch.code),
    };
    warnings.extend(lint_page(page, data.is_some(), &rendered.html, skipped));
    // The Markdown edition links its charts through the base URL, so they still resolve when a
    // Jekyll blog publishes the page under a permalink of its own.
    let page_url = format!("{}{lang}/{slug}/", site.config.base_url);
    let mut markdown = expanded.markdown;
    for (file, _) in &expanded.charts {
        markdown = markdown.replace(&format!("]({file})"), &format!("]({page_url}{file})"));
    }
    let charts = (expanded.charts.into_iter())
        .map(|(file, svg)| (format!("{lang}/{slug}/{file}"), svg.into_bytes()))
        .collect();
    Ok(Body {
        html: rendered.html,
        answer,
        markdown,
        charts,
        headings: rendered.headings,
        warnings,
        sections,
    })
}

/// One expansion and render of a body's `text`.
struct Pass {
    expanded: Expanded,
    rendered: RenderedMarkdown,
    sections: Vec<search::SearchSection>,
    /// What the render's parse saw of the expanded text (of `text` itself when it has no `{{`).
    watch: SourceWatch,
}

/// Expands `text` (`code`: its code's byte ranges, when a parse already found them) and renders
/// the result, collecting its search sections and watching its events from the same parse.
fn render_pass(
    page: &Page,
    text: &str,
    code: Option<Vec<Range<usize>>>,
    ctx: &ExpandContext<'_>,
    head: &search::Head<'_>,
    unsafe_html: bool,
) -> Result<Pass, Vec<Diagnostic>> {
    let expanded = expand::expand(
        text,
        code,
        page.body_line,
        ctx,
        &page.src.shown(),
        &page.text,
    )?;
    let mut collector = search::Collector::new(&page.src.lang, head);
    let mut watch = SourceWatch::default();
    let picture = |file: &str| expand::chart_picture(&expanded.pictures, file);
    let rendered =
        markdown::render_html_observed(&expanded.markdown, unsafe_html, picture, |e, range| {
            collector.event(e);
            watch.event(e, range);
        });
    let ids: Vec<&str> = rendered.headings.iter().map(|h| h.id.as_str()).collect();
    let sections = collector.finish(&ids);
    Ok(Pass {
        expanded,
        rendered,
        sections,
        watch,
    })
}

/// One warning per raw HTML fragment or unsafe link removed from the page (`None`: from its
/// body, at the fragment's line; `Some(line)`: from the label of the variant at that line).
fn dropped_warnings(
    page: &Page,
    dropped: Vec<(markdown::Dropped, Option<usize>)>,
) -> Vec<Diagnostic> {
    let mut lines = expand::LineCounter::new(page.body(), page.body_line);
    dropped
        .into_iter()
        .map(|(d, variant_line)| {
            let (line, col) = match variant_line {
                None => lines.locate(d.offset),
                Some(line) => (line, 1),
            };
            let place = if variant_line.is_some() { " in a variant label" } else { "" };
            let message = match d.what {
                markdown::DroppedKind::RawHtml(html) => format!("raw HTML `{html}`{place} was dropped"),
                markdown::DroppedKind::UnsafeUrl(url) => {
                    format!("link to `{url}`{place} was dropped (unsafe URL scheme); its text is kept")
                }
            };
            Diagnostic::warning(message)
                .in_file(page.src.shown())
                .at(line, col)
                .with_source(page.text.clone())
                .with_help("write Markdown instead; a site whose every author is trusted can set `markdown: { unsafe_html: true }` in vramdoc.yaml")
        })
        .collect()
}

/// The front matter's `error:` (the out-of-memory message the guide explains), if any.
fn guide_error(page: &Page) -> Option<&str> {
    page.front
        .extra
        .iter()
        .find(|(k, _)| k == "error")
        .and_then(|(_, v)| v.as_str())
}

/// Warnings about a page's prose: hand-typed memory figures (in computed guides, where an
/// expression could give the figure) and emphasis markers that CommonMark left as literal asterisks.
/// `skipped`: the code and expressions of the page's body, when expansion found them there (not
/// in a body with notices or raw HTML removed).
fn lint_page(
    page: &Page,
    computed: bool,
    html: &str,
    skipped: Option<Vec<std::ops::Range<usize>>>,
) -> Vec<Diagnostic> {
    let body = page.body();
    let typed = if computed {
        let error = guide_error(page).unwrap_or_default();
        let found = match skipped {
            Some(skipped) => lint::typed_memory_figures_outside(body, skipped),
            None => lint::typed_memory_figures(body),
        };
        found
            .into_iter()
            .filter(|(_, text)| !lint::in_quoted_message(text, error))
            .collect()
    } else {
        Vec::new()
    };
    let mut lines = expand::LineCounter::new(body, page.body_line);
    let mut warnings: Vec<Diagnostic> = typed
        .into_iter()
        .map(|(range, text)| {
            let (line, col) = lines.locate(range.start);
            Diagnostic::warning(format!("memory figure `{text}` typed by hand"))
                .in_file(page.src.shown())
                .at(line, col)
                .with_source(page.text.clone())
                .with_help("compute it with an expression, e.g. `{{ bytes.peak | bytes }}`, or put a quoted measurement in `code`")
        })
        .collect();
    for snippet in markdown::stray_emphasis_markers(html) {
        warnings.push(
            Diagnostic::warning(format!("literal `**` or `__` in the rendered page near `{snippet}`"))
                .in_file(page.src.shown())
                .with_help("CommonMark does not close emphasis before a letter after punctuation: move the punctuation outside `**...**`"),
        );
    }
    warnings
}
