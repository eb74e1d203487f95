//! One guide page in one language: the HTML page and its Markdown edition.

use fluent_bundle::FluentValue;
use serde::Serialize;
use tera::Context;

use super::model::{NavLink, Neighbours};
use super::translated::Notices;
use super::SiteContext;
use crate::content::Page;
use crate::diagnostics::Diagnostic;
use crate::expand::{self, lint, ExpandContext, GuideData};
use crate::markdown;
use crate::search;
use crate::translations::notices::{with_notices, NoticeText};

/// What rendering one job produced: files (relative path, bytes), warnings and, for a guide
/// page, its sections as the search index holds them.
pub(crate) struct Rendered {
    pub(crate) files: Vec<(String, Vec<u8>)>,
    pub(crate) warnings: Vec<Diagnostic>,
    pub(crate) sections: Vec<search::SearchSection>,
}

/// A link to the same page in another language (or the same one, `current`).
#[derive(Serialize)]
pub(crate) struct LangLink {
    pub(crate) lang: String,
    pub(crate) name: String,
    pub(crate) href: String,
    pub(crate) current: bool,
}

/// An absolute URL of one translation, for `hreflang`.
#[derive(Serialize)]
pub(crate) struct Alternate {
    pub(crate) lang: String,
    pub(crate) url: String,
}

#[derive(Serialize)]
struct PageCtx<'a> {
    title: &'a str,
    slug: &'a str,
    lang: &'a str,
    date: Option<&'a str>,
    date_display: Option<String>,
    description: Option<&'a str>,
    translated: bool,
    kind: Option<&'a str>,
    layout: Option<&'a str>,
    extra: serde_json::Map<String, serde_json::Value>,
    content: String,
    toc: Vec<TocEntry>,
    url: String,
}

#[derive(Serialize)]
struct TocEntry {
    level: u8,
    id: String,
    text: String,
}

/// Where a page sits in the site: the languages its guide exists in and its neighbours in its
/// language's index.
pub(crate) struct PagePlace<'a> {
    pub(crate) available: &'a [&'a str],
    pub(crate) neighbours: &'a Neighbours,
    /// A translation's notices, when a section is not current, and the page they quote.
    pub(crate) notices: Option<(&'a Notices, &'a Page)>,
}

/// A previous/next link as the guide template receives it.
#[derive(Serialize)]
struct NavCtx<'a> {
    title: &'a str,
    href: String,
}

impl<'a> NavCtx<'a> {
    fn of(link: &'a Option<NavLink>) -> Option<NavCtx<'a>> {
        link.as_ref().map(|l| NavCtx {
            title: &l.title,
            href: format!("../{}/index.html", l.slug),
        })
    }
}

/// A page's body, expanded and rendered: the HTML, the Markdown edition's body, the charts
/// (paths relative to the output root), the headings and the warnings.
struct Body {
    html: String,
    answer: Option<expand::ShortAnswer>,
    markdown: String,
    charts: Vec<(String, Vec<u8>)>,
    headings: Vec<markdown::Heading>,
    warnings: Vec<Diagnostic>,
    sections: Vec<search::SearchSection>,
}

/// Renders `page` at `place`: its HTML page, Markdown edition and charts.
pub(crate) fn render_guide(
    site: &SiteContext,
    page: &Page,
    place: &PagePlace<'_>,
    data: Option<&GuideData>,
) -> Result<Rendered, Vec<Diagnostic>> {
    let noticed = (place.notices).map(|(n, original)| noticed_body(site, page, n, original));
    let Body {
        mut html,
        answer,
        markdown,
        charts,
        headings,
        warnings,
        sections,
    } = render_body(site, page, noticed.as_deref().unwrap_or(page.body()), data)?;
    let (lang, slug) = (page.src.lang.as_str(), page.src.slug.as_str());
    if let Some((n, _)) = place.notices {
        html = mark_notices(&html, site, lang, &n.source_lang);
    }
    let dir = format!("{lang}/{slug}");
    let mut ctx = guide_context(site, page, place, html, &headings);
    ctx.insert("answer", &answer);
    let at_page = |d: Diagnostic| vec![d.in_file(page.src.shown())];
    let html = site.renderer.render("guide.html", &ctx).map_err(at_page)?;
    let mut files = charts;
    files.push((format!("{dir}/index.html"), html.into_bytes()));

    let mut md_ctx = Context::new();
    md_ctx.insert("lang", lang);
    md_ctx.insert("front_matter", &markdown_front_matter(page)?);
    // The notices' links, absolute in the Markdown edition like its charts'.
    let markdown = match place.notices {
        Some((n, _)) => {
            let relative = format!("](../../{}/{slug}/", n.source_lang);
            let absolute = format!("]({}{}/{slug}/", site.config.base_url, n.source_lang);
            markdown.replace(&relative, &absolute)
        }
        None => markdown,
    };
    md_ctx.insert("body", markdown.trim_start_matches('\n'));
    let md = site.renderer.render("guide.md", &md_ctx).map_err(at_page)?;
    files.push((format!("{dir}/index.md"), md.into_bytes()));
    Ok(Rendered {
        files,
        warnings,
        sections,
    })
}

/// Expands `page`'s body (raw HTML dropped unless the site allows it) and renders it.
fn render_body(
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
    let mut dropped = Vec::new();
    let body = if unsafe_html {
        std::borrow::Cow::Borrowed(body)
    } else {
        let (body, found) = markdown::strip_unsafe_html(body);
        dropped.extend(found.into_iter().map(|d| (d, None)));
        for ((_, label), variant) in labels.iter_mut().zip(&page.front.variants) {
            let (clean, found) = markdown::strip_unsafe_html(label);
            if !found.is_empty() {
                *label = clean.into_owned();
                dropped.extend(found.into_iter().map(|d| (d, Some(variant.line))));
            }
        }
        body
    };
    let ctx = ExpandContext {
        loc,
        data,
        variant_labels: &labels,
        catalog: &site.catalog,
        charts: &site.charts,
        error: guide_error(page),
    };
    let mut expanded = expand::expand(&body, page.body_line, &ctx, &page.src.shown(), &page.text)?;
    let head = search::Head {
        title: &page.front.title,
        slug,
        description: page.front.description.as_deref(),
        error: guide_error(page),
    };
    let mut collector = search::Collector::new(lang, &head);
    let picture = |file: &str| expand::chart_picture(&expanded.pictures, file);
    let mut rendered =
        markdown::render_html_observed(&expanded.markdown, unsafe_html, picture, |e| {
            collector.event(e)
        });
    let ids: Vec<&str> = rendered.headings.iter().map(|h| h.id.as_str()).collect();
    let sections = collector.finish(&ids);
    let mut answer = data.and_then(|d| expand::short_answer(d, &ctx));
    if let Some(a) = &mut answer {
        rendered.html = expand::add_answer_targets(&rendered.html, a, &ctx);
    }
    let mut warnings = dropped_warnings(page, dropped);
    // The body expanded is the page's own unless notices were spliced in or HTML removed.
    let own = std::ptr::eq(body.as_ref(), page.body());
    let skipped = own.then(|| expanded.skipped.take()).flatten();
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

/// The guide template's context: the site, the language links, the page's meta tags, its
/// fields, contents list and previous/next links.
fn guide_context(
    site: &SiteContext,
    page: &Page,
    place: &PagePlace<'_>,
    content: String,
    headings: &[markdown::Heading],
) -> Context {
    let (lang, slug) = (page.src.lang.as_str(), page.src.slug.as_str());
    let available = place.available;
    let mut ctx = Context::new();
    ctx.insert("lang", lang);
    ctx.insert("root", "../../");
    ctx.insert("lang_index", &true);
    ctx.insert("site", &site_ctx(site, lang));
    ctx.insert(
        "languages",
        &lang_links(site, available, lang, |l| {
            format!("../../{l}/{slug}/index.html")
        }),
    );
    ctx.insert(
        "alternates",
        &alternates(site, available, |l| format!("{l}/{slug}/")),
    );
    ctx.insert(
        "x_default",
        &x_default(site, available, |l| format!("{l}/{slug}/")),
    );
    let fm = &page.front;
    let url = format!("{}{lang}/{slug}/", site.config.base_url);
    ctx.insert(
        "meta",
        &page_meta(
            &fm.title,
            fm.description.as_deref(),
            Some(&url),
            "article",
            lang,
        ),
    );
    ctx.insert("previous", &NavCtx::of(&place.neighbours.previous));
    ctx.insert("next", &NavCtx::of(&place.neighbours.next));
    let toc = (headings.iter().filter(|h| h.level <= 3))
        .map(|h| TocEntry {
            level: h.level,
            id: h.id.clone(),
            text: h.text.clone(),
        })
        .collect();
    ctx.insert(
        "page",
        &PageCtx {
            title: &fm.title,
            slug,
            lang,
            date: fm.date.as_deref(),
            date_display: fm.date.as_deref().map(|d| display_date(site, lang, d)),
            description: fm.description.as_deref(),
            translated: fm.translated,
            kind: fm.kind.as_deref(),
            layout: fm.layout.as_deref(),
            extra: crate::content::front_matter::extra_json(fm),
            content,
            toc,
            url,
        },
    );
    ctx
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

/// What the `<head>` says about a page to search engines and link previews: title, description,
/// canonical URL (none for a 404 page), Open Graph type and locale.
#[derive(Serialize)]
pub(crate) struct PageMeta<'a> {
    title: &'a str,
    description: Option<&'a str>,
    url: Option<&'a str>,
    og_type: &'a str,
    og_locale: String,
}

/// The [`PageMeta`] of a page in `lang`. Open Graph wants `language_TERRITORY`; the territory is
/// the one a bare language code most often means.
pub(crate) fn page_meta<'a>(
    title: &'a str,
    description: Option<&'a str>,
    url: Option<&'a str>,
    og_type: &'a str,
    lang: &str,
) -> PageMeta<'a> {
    let og_locale = match lang {
        "en" => "en_US".to_string(),
        "es" => "es_ES".to_string(),
        "zh" => "zh_CN".to_string(),
        other => other.replace('-', "_"),
    };
    PageMeta {
        title,
        description,
        url,
        og_type,
        og_locale,
    }
}

/// The site's title and URL in `lang`.
pub(crate) fn site_ctx(site: &SiteContext, lang: &str) -> serde_json::Value {
    serde_json::json!({ "title": site.config.title(lang), "base_url": site.config.base_url })
}

/// Links for the language switcher: every configured language the page exists in.
pub(crate) fn lang_links(
    site: &SiteContext,
    available: &[&str],
    current: &str,
    href: impl Fn(&str) -> String,
) -> Vec<LangLink> {
    site.config
        .languages
        .iter()
        .filter(|l| available.contains(&l.as_str()))
        .map(|l| LangLink {
            lang: l.clone(),
            name: language_name(site, l),
            href: href(l),
            current: l == current,
        })
        .collect()
}

/// Absolute `hreflang` alternates; `path` gives a language's path under the base URL.
pub(crate) fn alternates(
    site: &SiteContext,
    available: &[&str],
    path: impl Fn(&str) -> String,
) -> Vec<Alternate> {
    site.config
        .languages
        .iter()
        .filter(|l| available.contains(&l.as_str()))
        .map(|l| Alternate {
            lang: l.clone(),
            url: format!("{}{}", site.config.base_url, path(l)),
        })
        .collect()
}

/// The `x-default` URL: the default language's version, else the first available one.
pub(crate) fn x_default(
    site: &SiteContext,
    available: &[&str],
    path: impl Fn(&str) -> String,
) -> Option<String> {
    let default = site.config.default_language.as_str();
    let lang = if available.contains(&default) {
        Some(default)
    } else {
        available.first().copied()
    };
    lang.map(|l| format!("{}{}", site.config.base_url, path(l)))
}

/// A language's own name ("Español", "中文"), from its bundle.
pub(crate) fn language_name(site: &SiteContext, lang: &str) -> String {
    site.locales
        .get(lang)
        .map(|l| l.t("language-name"))
        .unwrap_or_else(|| lang.to_string())
}

/// A `YYYY-MM-DD...` date in the locale's `date-format`.
pub(crate) fn display_date(site: &SiteContext, lang: &str, date: &str) -> String {
    let Some(loc) = site.locales.get(lang) else {
        return date.to_string();
    };
    let (y, m, d) = (&date[0..4], &date[5..7], &date[8..10]);
    let strip = |s: &str| s.trim_start_matches('0').to_string();
    let (m, d) = if lang.starts_with("zh") {
        (strip(m), strip(d))
    } else {
        (m.to_string(), d.to_string())
    };
    loc.t_args(
        "date-format",
        &[
            ("year", FluentValue::from(y)),
            ("month", FluentValue::from(m)),
            ("day", FluentValue::from(d)),
        ],
    )
}

/// The Markdown edition's front matter: the page's keys in a stable order, as YAML.
fn markdown_front_matter(page: &Page) -> Result<String, Vec<Diagnostic>> {
    let fm = &page.front;
    let mut map = yaml_serde::Mapping::new();
    let mut put = |k: &str, v: yaml_serde::Value| {
        map.insert(yaml_serde::Value::String(k.to_string()), v);
    };
    let s = |v: &str| yaml_serde::Value::String(v.to_string());
    put("title", s(&fm.title));
    put("lang", s(&fm.lang));
    // Jekyll publishes the page at the same path as the HTML edition.
    put("permalink", s(&format!("/{}/{}/", fm.lang, page.src.slug)));
    if let Some(v) = &fm.date {
        put("date", s(v));
    }
    if let Some(v) = &fm.layout {
        put("layout", s(v));
    }
    if let Some(v) = &fm.kind {
        put("type", s(v));
    }
    put("translated", yaml_serde::Value::Bool(fm.translated));
    if let Some(v) = &fm.description {
        put("description", s(v));
    }
    for (k, v) in &fm.extra {
        if let Ok(y) = yaml_serde::to_value(v) {
            put(k, y);
        }
    }
    if let Some((v, _)) = &fm.scenario {
        put("scenario", v.clone());
    }
    yaml_serde::to_string(&map).map_err(|e| {
        vec![Diagnostic::error(format!("cannot write front matter: {e}")).in_file(page.src.shown())]
    })
}

/// The body a translation page renders: `page`'s, with its notices (`source`: the page in the
/// source language, for the sections it lacks).
fn noticed_body(site: &SiteContext, page: &Page, notices: &Notices, source: &Page) -> String {
    let loc = site.locales.get(&page.src.lang);
    let name = language_name(site, &notices.source_lang);
    let say = |key: &str| {
        let arg = [("source", fluent_bundle::FluentValue::from(name.as_str()))];
        loc.map(|l| l.t_args(key, &arg)).unwrap_or_default()
    };
    let (stale, missing) = (say("translation-stale"), say("translation-missing"));
    let link = say("translation-read-original");
    let source_url = format!("../../{}/{}/index.html", notices.source_lang, page.src.slug);
    let text = NoticeText {
        stale: &stale,
        missing: &missing,
        link: &link,
        source_url: &source_url,
    };
    with_notices(page.body(), source.body(), &notices.status, &text)
}

/// Gives the rendered notices (blockquotes opening with a notice text) the class
/// `translation-notice` and their state, so a stylesheet and tests can tell them apart.
fn mark_notices(html: &str, site: &SiteContext, lang: &str, source_lang: &str) -> String {
    let Some(loc) = site.locales.get(lang) else {
        return html.to_string();
    };
    let name = language_name(site, source_lang);
    let mut html = html.to_string();
    for (key, state) in [
        ("translation-stale", "stale"),
        ("translation-missing", "missing"),
    ] {
        let arg = [("source", fluent_bundle::FluentValue::from(name.as_str()))];
        let mut text = String::new();
        crate::markdown::escape_html(&mut text, &loc.t_args(key, &arg));
        let plain = format!("<blockquote>\n<p>{text}");
        let marked = format!(
            "<blockquote class=\"translation-notice\" data-state=\"{state}\" role=\"note\">\n<p>{text}"
        );
        html = html.replace(&plain, &marked);
    }
    html
}
