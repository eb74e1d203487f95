//! One guide page in one language: the HTML page and its Markdown edition.

use fluent_bundle::FluentValue;
use serde::Serialize;
use tera::Context;

use super::model::{NavLink, Neighbours};
use super::page_body::{render_body, Body};
use super::translated::Notices;
use super::SiteContext;
use crate::content::Page;
use crate::diagnostics::Diagnostic;
use crate::expand::GuideData;
use crate::markdown;
use crate::search;
use crate::translations::notices::{with_notices_split, NoticeText};
use crate::translations::sections::of_page;

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

/// Renders `page` at `place`: its HTML page, Markdown edition and charts.
pub(crate) fn render_guide(
    site: &SiteContext,
    page: &Page,
    place: &PagePlace<'_>,
    data: Option<&GuideData>,
) -> Result<Rendered, Vec<Diagnostic>> {
    markdown::on_page(|| page.src.path(), || render_page(site, page, place, data))
}

/// [`render_guide`], its Markdown parses counted for `page`.
fn render_page(
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
    // Each page split once per read: the split its summary made, if this build made one.
    let original = markdown::on_page(|| source.src.path(), || of_page(source));
    let translated = of_page(page);
    with_notices_split(page.body(), &translated, &original, &notices.status, &text)
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
