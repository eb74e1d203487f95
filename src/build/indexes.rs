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
use crate::markdown;

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

#[derive(Serialize)]
struct SitemapUrl {
    loc: String,
    lastmod: Option<String>,
    alternates: Vec<Alternate>,
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

/// `sitemap.xml`: every language index and guide page, with `hreflang` alternates.
pub(crate) fn sitemap(site: &SiteContext, plan: &Plan) -> Result<File, Diagnostic> {
    let langs: Vec<&str> = site.config.languages.iter().map(String::as_str).collect();
    let mut urls = Vec::new();
    for lang in &langs {
        urls.push(SitemapUrl {
            loc: format!("{}{lang}/", site.config.base_url),
            lastmod: None,
            alternates: alternates(site, &langs, |l| format!("{l}/")),
        });
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
        urls.push(SitemapUrl {
            loc: format!("{}{}/{slug}/", site.config.base_url, s.src.lang),
            lastmod: s.summary.date.as_ref().map(|d| d[..10].to_string()),
            alternates: alts,
        });
    }
    let mut ctx = Context::new();
    ctx.insert("urls", &urls);
    let xml = site.renderer.render("sitemap.xml", &ctx)?;
    Ok(("sitemap.xml".into(), xml.into_bytes()))
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
