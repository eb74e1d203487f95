//! Site-wide outputs: each language's index, the language chooser, the sitemap, the stylesheet.

use serde::Serialize;
use tera::Context;

use super::output::Staging;
use super::pages::{alternates, display_date, lang_links, language_name, site_ctx, Alternate};
use super::{Guides, SiteContext};
use crate::assets;
use crate::content::Page;
use crate::diagnostics::Diagnostic;
use crate::markdown;

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

/// Writes the language indexes, root chooser, sitemap and stylesheet; returns the file count.
pub(crate) fn write_indexes(
    site: &SiteContext,
    pages: &[Page],
    guides: &Guides<'_>,
    staging: &Staging,
) -> Result<usize, Vec<Diagnostic>> {
    let mut files = 0;
    let langs: Vec<&str> = site.config.languages.iter().map(String::as_str).collect();
    for lang in &langs {
        let mut entries: Vec<&Page> = pages.iter().filter(|p| p.src.lang == *lang).collect();
        // Newest first; undated last; ties by title then slug, so the order is stable.
        entries.sort_by(|a, b| {
            b.front
                .date
                .cmp(&a.front.date)
                .then_with(|| a.front.title.cmp(&b.front.title))
                .then(a.src.slug.cmp(&b.src.slug))
        });
        let guides_ctx: Vec<GuideEntry<'_>> = entries
            .iter()
            .map(|p| GuideEntry {
                title: &p.front.title,
                href: format!("{}/", p.src.slug),
                date: p.front.date.as_deref(),
                date_display: p.front.date.as_deref().map(|d| display_date(site, lang, d)),
                description: p.front.description.as_deref(),
            })
            .collect();
        let mut ctx = Context::new();
        ctx.insert("lang", lang);
        ctx.insert("root", "../");
        ctx.insert("lang_index", &true);
        ctx.insert("site", &site_ctx(site, lang));
        ctx.insert("guides", &guides_ctx);
        ctx.insert(
            "languages",
            &lang_links(site, &langs, lang, |l| format!("../{l}/")),
        );
        ctx.insert("alternates", &alternates(site, &langs, |l| format!("{l}/")));
        ctx.insert("x_default", &site.config.base_url);
        let html = site
            .renderer
            .render("index.html", &ctx)
            .map_err(|e| vec![e])?;
        staging
            .write(&format!("{lang}/index.html"), html.as_bytes())
            .map_err(|e| vec![e])?;
        files += 1;
    }

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
    let html = site
        .renderer
        .render("root.html", &ctx)
        .map_err(|e| vec![e])?;
    staging
        .write("index.html", html.as_bytes())
        .map_err(|e| vec![e])?;
    files += 1;

    let mut urls = Vec::new();
    for lang in &langs {
        urls.push(SitemapUrl {
            loc: format!("{}{lang}/", site.config.base_url),
            lastmod: None,
            alternates: alternates(site, &langs, |l| format!("{l}/")),
        });
    }
    for (slug, translations) in guides {
        let available: Vec<&str> = translations.iter().map(|p| p.src.lang.as_str()).collect();
        for p in translations {
            let mut alts = alternates(site, &available, |l| format!("{l}/{slug}/"));
            if let Some(x) = super::pages::x_default(site, &available, |l| format!("{l}/{slug}/")) {
                alts.push(Alternate {
                    lang: "x-default".into(),
                    url: x,
                });
            }
            urls.push(SitemapUrl {
                loc: format!("{}{}/{slug}/", site.config.base_url, p.src.lang),
                lastmod: p.front.date.as_ref().map(|d| d[..10].to_string()),
                alternates: alts,
            });
        }
    }
    let mut ctx = Context::new();
    ctx.insert("urls", &urls);
    let xml = site
        .renderer
        .render("sitemap.xml", &ctx)
        .map_err(|e| vec![e])?;
    staging
        .write("sitemap.xml", xml.as_bytes())
        .map_err(|e| vec![e])?;
    files += 1;

    let mut css = assets::STATIC
        .iter()
        .find(|(n, _)| *n == "style.css")
        .map(|(_, t)| t.to_string())
        .unwrap_or_default();
    css.push_str(&markdown::highlight_css());
    staging
        .write("style.css", css.as_bytes())
        .map_err(|e| vec![e])?;
    files += 1;
    Ok(files)
}
