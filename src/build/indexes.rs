//! Site-wide outputs: each language's index, the language chooser, the sitemap, the stylesheet.
//! Each is a pure function from the plan's summaries to files.

use serde::Serialize;
use tera::Context;

use super::pages::{
    alternates, display_date, lang_links, language_name, site_ctx, x_default, Alternate,
};
use super::plan::Plan;
use super::SiteContext;
use crate::assets;
use crate::diagnostics::Diagnostic;
use crate::markdown::{self, escape_html};

/// A rendered file: relative path and bytes.
pub(crate) type File = (String, Vec<u8>);

#[derive(Serialize)]
struct GuideEntry<'a> {
    title: &'a str,
    href: String,
    date: Option<&'a str>,
    date_display: Option<String>,
    description: Option<&'a str>,
}

/// `<lang>/index.html`: the guides of one language, newest first.
pub(crate) fn language_index(
    site: &SiteContext,
    plan: &Plan,
    lang: &str,
) -> Result<File, Diagnostic> {
    let langs: Vec<&str> = site.config.languages.iter().map(String::as_str).collect();
    let mut entries: Vec<_> = plan.sources.iter().filter(|s| s.src.lang == lang).collect();
    // Newest first; undated last; ties by title then slug, so the order is stable.
    entries.sort_by(|a, b| {
        b.summary
            .date
            .cmp(&a.summary.date)
            .then_with(|| a.summary.title.cmp(&b.summary.title))
            .then(a.src.slug.cmp(&b.src.slug))
    });
    let guides: Vec<GuideEntry<'_>> = entries
        .iter()
        .map(|s| GuideEntry {
            title: &s.summary.title,
            href: format!("{}/", s.src.slug),
            date: s.summary.date.as_deref(),
            date_display: s
                .summary
                .date
                .as_deref()
                .map(|d| display_date(site, lang, d)),
            description: s.summary.description.as_deref(),
        })
        .collect();
    let mut ctx = Context::new();
    ctx.insert("lang", lang);
    ctx.insert("root", "../");
    ctx.insert("lang_index", &true);
    ctx.insert("site", &site_ctx(site, lang));
    ctx.insert("guides", &guides);
    ctx.insert(
        "languages",
        &lang_links(site, &langs, lang, |l| format!("../{l}/")),
    );
    ctx.insert("alternates", &alternates(site, &langs, |l| format!("{l}/")));
    ctx.insert("x_default", &site.config.base_url);
    let html = site.renderer.render("index.html", &ctx)?;
    Ok((format!("{lang}/index.html"), html.into_bytes()))
}

/// `index.html`: the language chooser.
pub(crate) fn root(site: &SiteContext) -> Result<File, Diagnostic> {
    let langs: Vec<&str> = site.config.languages.iter().map(String::as_str).collect();
    let default = site.config.default_language.as_str();
    let chooser: Vec<serde_json::Value> = langs
        .iter()
        .map(|l| {
            serde_json::json!({
                "lang": l, "name": language_name(site, l), "href": format!("{l}/"),
                "site_title": site.config.title(l),
            })
        })
        .collect();
    let mut ctx = Context::new();
    ctx.insert("lang", default);
    ctx.insert("site", &site_ctx(site, default));
    ctx.insert("languages", &chooser);
    ctx.insert("alternates", &alternates(site, &langs, |l| format!("{l}/")));
    ctx.insert("x_default", &site.config.base_url);
    let html = site.renderer.render("root.html", &ctx)?;
    Ok(("index.html".into(), html.into_bytes()))
}

/// `sitemap.xml`: every language index and guide page, with `hreflang` alternates. Written
/// directly, not through a template: the sitemap protocol fixes its format, and on a large site a
/// template context holding every URL and alternate took more memory than the rest of the build.
pub(crate) fn sitemap(site: &SiteContext, plan: &Plan) -> Result<File, Diagnostic> {
    let langs: Vec<&str> = site.config.languages.iter().map(String::as_str).collect();
    let mut xml = String::with_capacity(512 * (plan.sources.len() + langs.len()) + 256);
    xml.push_str(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:xhtml=\"http://www.w3.org/1999/xhtml\">\n",
    );
    for lang in &langs {
        let loc = format!("{}{lang}/", site.config.base_url);
        push_url(
            &mut xml,
            &loc,
            None,
            &alternates(site, &langs, |l| format!("{l}/")),
        );
    }
    for s in &plan.sources {
        let slug = &s.src.slug;
        let available: Vec<&str> = plan.guides[slug].iter().map(String::as_str).collect();
        let mut alts = alternates(site, &available, |l| format!("{l}/{slug}/"));
        if let Some(x) = x_default(site, &available, |l| format!("{l}/{slug}/")) {
            alts.push(Alternate {
                lang: "x-default".into(),
                url: x,
            });
        }
        let loc = format!("{}{}/{slug}/", site.config.base_url, s.src.lang);
        let lastmod = s.summary.date.as_deref().map(|d| &d[..d.len().min(10)]);
        push_url(&mut xml, &loc, lastmod, &alts);
    }
    xml.push_str("</urlset>\n");
    Ok(("sitemap.xml".into(), xml.into_bytes()))
}

/// Appends one `<url>` element.
fn push_url(xml: &mut String, loc: &str, lastmod: Option<&str>, alternates: &[Alternate]) {
    xml.push_str("  <url>\n    <loc>");
    escape_html(xml, loc);
    xml.push_str("</loc>");
    if let Some(date) = lastmod {
        xml.push_str("\n    <lastmod>");
        escape_html(xml, date);
        xml.push_str("</lastmod>");
    }
    xml.push('\n');
    for alt in alternates {
        xml.push_str("    <xhtml:link rel=\"alternate\" hreflang=\"");
        escape_html(xml, &alt.lang);
        xml.push_str("\" href=\"");
        escape_html(xml, &alt.url);
        xml.push_str("\"/>\n");
    }
    xml.push_str("  </url>\n");
}

/// `style.css`: the stylesheet plus the highlighting classes.
pub(crate) fn style() -> File {
    let mut css = assets::STATIC
        .iter()
        .find(|(n, _)| *n == "style.css")
        .map(|(_, t)| t.to_string())
        .unwrap_or_default();
    css.push_str(&markdown::highlight_css());
    ("style.css".into(), css.into_bytes())
}
