//! Site-wide outputs: each language's index (with its Atom feed and 404 page), the language
//! chooser (with the root 404 page), the sitemap (with `llms.txt`), and the static assets. Each is
//! a pure function from the plan's summaries to files.

use serde::Serialize;
use tera::Context;

use super::listing::Listed;
use super::pages::{
    alternates, display_date, lang_links, language_name, page_meta, site_ctx, x_default, Alternate,
};
use super::plan::Plan;
use super::store::{part_of, PARTS};
use super::SiteContext;
use crate::assets;
use crate::diagnostics::Diagnostic;
use crate::markdown::{self, escape_html};
use crate::search;

/// A rendered file: relative path and bytes.
pub(crate) type File = (String, Vec<u8>);

/// One guide as a language's index, Atom feed and not-found page list it (the templates' `guides`).
#[derive(Serialize)]
struct IndexGuide<'a> {
    title: &'a str,
    href: String,
    date: Option<&'a str>,
    date_display: Option<String>,
    description: Option<&'a str>,
}

/// The pages of one language in index order: newest first, undated last, ties by slug, so every
/// language lists the same guides in the same order.
fn index_sources<'p>(plan: &'p Plan, lang: &str) -> Vec<&'p super::scan::Source> {
    let mut entries: Vec<_> = plan.sources.iter().filter(|s| s.src.lang == lang).collect();
    entries.sort_by(|a, b| a.listed().index_order(&b.listed()));
    entries
}

/// What listings show of the guides of one language, in [`index_sources`] order. Only these
/// fields reach the index, feed and `llms.txt`: they are what the jobs' input digests are made
/// of.
fn index_order<'p>(plan: &'p Plan, lang: &str) -> Vec<Listed<'p>> {
    (index_sources(plan, lang).into_iter())
        .map(|s| s.listed())
        .collect()
}

/// `<lang>/index.html` (the guides of one language, in [`index_order`]), `<lang>/atom.xml` (the
/// same guides as an Atom feed) and `<lang>/404.html` (a not-found page listing them).
pub(crate) fn language_index(
    site: &SiteContext,
    plan: &Plan,
    lang: &str,
) -> Result<Vec<File>, Diagnostic> {
    let langs: Vec<&str> = site.config.languages.iter().map(String::as_str).collect();
    let entries = index_order(plan, lang);
    let status = super::status_page::status_page(site, plan, lang, &index_sources(plan, lang))?;
    let guides: Vec<IndexGuide<'_>> = entries
        .iter()
        .map(|s| IndexGuide {
            title: s.title,
            href: format!("{}/index.html", s.slug),
            date: s.date,
            date_display: s.date.map(|d| display_date(site, lang, d)),
            description: s.description,
        })
        .collect();
    let description = site.locales.get(lang).map(|l| l.t("index-description"));
    let mut ctx = Context::new();
    ctx.insert("lang", lang);
    ctx.insert("root", "../");
    ctx.insert("lang_index", &true);
    ctx.insert("site", &site_ctx(site, lang));
    ctx.insert("guides", &guides);
    ctx.insert("translation_status", &status.is_some());
    ctx.insert(
        "languages",
        &lang_links(site, &langs, lang, |l| format!("../{l}/index.html")),
    );
    ctx.insert("alternates", &alternates(site, &langs, |l| format!("{l}/")));
    ctx.insert("x_default", &site.config.base_url);
    let url = format!("{}{lang}/", site.config.base_url);
    ctx.insert(
        "meta",
        &page_meta(
            site.config.title(lang),
            description.as_deref(),
            Some(&url),
            "website",
            lang,
        ),
    );
    let html = site.renderer.render("index.html", &ctx)?;
    let feed = atom_feed(site, lang, &entries);

    ctx.insert("x_default", &None::<String>);
    let not_found = not_found_page(site, ctx, lang, lang)?;
    let mut files = vec![
        (format!("{lang}/index.html"), html.into_bytes()),
        (format!("{lang}/atom.xml"), feed.into_bytes()),
        (format!("{lang}/404.html"), not_found),
        (format!("{lang}/guides.js"), guide_list_script(&entries)),
    ];
    files.extend(status);
    Ok(files)
}

/// `<lang>/guides.js`: the language's guides in index order, as a script that sets
/// `window.vramdocGuides` to `[{s: slug, t: title}, ...]`. Each guide page's "All guides" list
/// loads it when opened, so a page does not carry every other guide's title (1,000 guides in
/// three languages would be 3,000 pages of 1,000 links each); a script rather than a fetched
/// file, because browsers refuse `fetch()` from `file://` pages.
fn guide_list_script(entries: &[Listed<'_>]) -> Vec<u8> {
    #[derive(Serialize)]
    struct ScriptEntry<'a> {
        s: &'a str,
        t: &'a str,
    }
    let list: Vec<ScriptEntry<'_>> = (entries.iter())
        .map(|e| ScriptEntry {
            s: e.slug,
            t: e.title,
        })
        .collect();
    // Plain strings and structs always serialize.
    let json = serde_json::to_string(&list).unwrap_or_default();
    format!("window.vramdocGuides = {json};\n").into_bytes()
}

/// A not-found page in `lang` (`current`: the language the switcher marks, none for the root's).
/// Its links are relative to its own folder, so it works from disk and under any path the site
/// is served at; since a server shows it for a missing path at any depth, a line of script in its
/// `<head>` puts a `<base>` on its folder first: the part of the address before `/<lang>/` for a
/// language's page, else the base URL's path (`not_found_base`). `ctx` brings the page's site
/// title and, for a language's page, its guides (links relative to the language folder).
fn not_found_page(
    site: &SiteContext,
    mut ctx: Context,
    lang: &str,
    current: &str,
) -> Result<Vec<u8>, Diagnostic> {
    let langs: Vec<&str> = site.config.languages.iter().map(String::as_str).collect();
    let base = base_path(&site.config.base_url);
    let root = if current.is_empty() { "" } else { "../" };
    ctx.insert("lang", lang);
    ctx.insert("root", root);
    ctx.insert(
        "not_found_base",
        &serde_json::json!({ "path": base, "lang": current }),
    );
    ctx.insert(
        "languages",
        &lang_links(site, &langs, current, |l| format!("{root}{l}/index.html")),
    );
    ctx.insert("alternates", &Vec::<Alternate>::new());
    let title = site.locales.get(lang).map(|l| l.t("not-found-title"));
    let meta = page_meta(
        title.as_deref().unwrap_or("404"),
        None,
        None,
        "website",
        lang,
    );
    ctx.insert("meta", &meta);
    Ok(site.renderer.render("not_found.html", &ctx)?.into_bytes())
}

/// The path part of the base URL (`https://example.org/docs/` → `/docs/`), where the site's root
/// is served.
fn base_path(base_url: &str) -> String {
    let after_scheme = base_url
        .split_once("://")
        .map_or(base_url, |(_, rest)| rest);
    match after_scheme.find('/') {
        Some(at) => after_scheme[at..].to_string(),
        None => "/".to_string(),
    }
}

/// The pages of part `part` of `lang`'s search index, in [`index_sources`] order.
pub(crate) fn search_sources<'p>(
    plan: &'p Plan,
    lang: &str,
    part: usize,
) -> Vec<&'p super::scan::Source> {
    let mut sources = index_sources(plan, lang);
    sources.retain(|s| part_of(&s.src.slug) == part);
    sources
}

/// `<lang>/search/<part>.js`: the part of a language's search index holding the guides of one
/// store part ([`part_of`]), in [`index_sources`] order (see [`crate::search`]), each page's
/// sections given by `sections` (by slug; a page without is an error). A part without pages in
/// the language is not written, except part 0, which always is and lists the parts.
pub(crate) fn search_index<'s>(
    plan: &Plan,
    lang: &str,
    part: usize,
    sections: impl Fn(&str) -> Option<&'s [search::SearchSection]>,
) -> Result<Vec<File>, Diagnostic> {
    let sources = search_sources(plan, lang, part);
    let mut docs = Vec::with_capacity(sources.len());
    for s in sources {
        let sections = sections(&s.src.slug).ok_or_else(|| {
            Diagnostic::error(format!(
                "the search index lost the sections of `{}`",
                s.src.slug
            ))
            .in_file(s.src.shown())
        })?;
        docs.push(search::Doc {
            slug: &s.src.slug,
            title: &s.summary.title,
            description: s.summary.description.as_deref(),
            sections,
        });
    }
    let Some(k) = plan.search_parts_of(lang) else {
        return Ok(Vec::new());
    };
    if part != 0 && docs.is_empty() {
        return Ok(Vec::new());
    }
    let present: Vec<usize> = (0..PARTS).filter(|&i| k[i]).collect();
    let listed = (part == 0).then_some(present.as_slice());
    Ok(vec![search::index_part(lang, part, listed, &docs)])
}

/// An RFC 3339 timestamp for a front-matter date (`YYYY-MM-DD`, optionally with a time): the
/// date at midnight UTC, so the feed does not depend on the build's clock.
fn feed_time(date: &str) -> String {
    format!("{}T00:00:00Z", &date[..date.len().min(10)])
}

/// `<lang>/atom.xml` (RFC 4287): the language's guides in index order. `updated` is the newest
/// guide's date, so the feed is the same bytes for the same guides.
fn atom_feed(site: &SiteContext, lang: &str, entries: &[Listed<'_>]) -> String {
    let base = &site.config.base_url;
    let newest = entries.iter().filter_map(|s| s.date).max();
    let mut xml = String::with_capacity(400 * (entries.len() + 1));
    xml.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\" xml:lang=\"");
    escape_html(&mut xml, lang);
    xml.push_str("\">\n  <title>");
    escape_html(&mut xml, site.config.title(lang));
    xml.push_str("</title>\n  <id>");
    escape_html(&mut xml, &format!("{base}{lang}/"));
    xml.push_str("</id>\n  <link rel=\"alternate\" href=\"");
    escape_html(&mut xml, &format!("{base}{lang}/"));
    xml.push_str("\"/>\n  <link rel=\"self\" href=\"");
    escape_html(&mut xml, &format!("{base}{lang}/atom.xml"));
    xml.push_str("\"/>\n  <updated>");
    xml.push_str(&feed_time(newest.unwrap_or("1970-01-01")));
    xml.push_str("</updated>\n  <generator>vramdoc</generator>\n");
    for s in entries {
        let url = format!("{base}{lang}/{}/", s.slug);
        xml.push_str("  <entry>\n    <title>");
        escape_html(&mut xml, s.title);
        xml.push_str("</title>\n    <id>");
        escape_html(&mut xml, &url);
        xml.push_str("</id>\n    <link rel=\"alternate\" href=\"");
        escape_html(&mut xml, &url);
        xml.push_str("\"/>\n    <updated>");
        xml.push_str(&feed_time(s.date.or(newest).unwrap_or("1970-01-01")));
        xml.push_str("</updated>\n    <author><name>");
        escape_html(&mut xml, site.config.title(lang));
        xml.push_str("</name></author>\n");
        if let Some(d) = s.description {
            xml.push_str("    <summary>");
            escape_html(&mut xml, d);
            xml.push_str("</summary>\n");
        }
        xml.push_str("  </entry>\n");
    }
    xml.push_str("</feed>\n");
    xml
}

/// `index.html` (the language chooser) and `404.html` (a not-found page offering the languages).
pub(crate) fn root(site: &SiteContext) -> Result<Vec<File>, Diagnostic> {
    let langs: Vec<&str> = site.config.languages.iter().map(String::as_str).collect();
    let default = site.config.default_language.as_str();
    let chooser: Vec<serde_json::Value> = langs
        .iter()
        .map(|l| {
            serde_json::json!({
                "lang": l, "name": language_name(site, l), "href": format!("{l}/index.html"),
                "site_title": site.config.title(l),
                "about": site.locales.get(l).map(|loc| loc.t("index-description")),
            })
        })
        .collect();
    let mut ctx = Context::new();
    ctx.insert("lang", default);
    ctx.insert("site", &site_ctx(site, default));
    ctx.insert("languages", &chooser);
    ctx.insert("alternates", &alternates(site, &langs, |l| format!("{l}/")));
    ctx.insert("x_default", &site.config.base_url);
    let description = site.locales.get(default).map(|l| l.t("index-description"));
    ctx.insert(
        "meta",
        &page_meta(
            site.config.title(default),
            description.as_deref(),
            Some(&site.config.base_url),
            "website",
            default,
        ),
    );
    let html = site.renderer.render("root.html", &ctx)?;

    let mut ctx = Context::new();
    ctx.insert("site", &site_ctx(site, default));
    let not_found = not_found_page(site, ctx, default, "")?;
    Ok(vec![
        ("index.html".into(), html.into_bytes()),
        ("404.html".into(), not_found),
    ])
}

/// `sitemap.xml` (every language index and guide page, with `hreflang` alternates) and
/// `llms.txt`. Written directly, not through a template: the sitemap protocol fixes its format,
/// and on a large site a template context holding every URL and alternate took more memory than
/// the rest of the build.
pub(crate) fn sitemap(site: &SiteContext, plan: &Plan) -> Result<Vec<File>, Diagnostic> {
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
    for s in plan.sources.iter().map(|s| s.listed()) {
        let slug = s.slug;
        let available: Vec<&str> = plan.guides[slug].iter().map(String::as_str).collect();
        let mut alts = alternates(site, &available, |l| format!("{l}/{slug}/"));
        if let Some(x) = x_default(site, &available, |l| format!("{l}/{slug}/")) {
            alts.push(Alternate {
                lang: "x-default".into(),
                url: x,
            });
        }
        let loc = format!("{}{}/{slug}/", site.config.base_url, s.lang);
        let lastmod = s.date.map(|d| &d[..d.len().min(10)]);
        push_url(&mut xml, &loc, lastmod, &alts);
    }
    xml.push_str("</urlset>\n");
    Ok(vec![
        ("sitemap.xml".into(), xml.into_bytes()),
        ("llms.txt".into(), llms_txt(site, plan).into_bytes()),
    ])
}

/// `llms.txt` (the llmstxt.org convention): the site's title and description, then per language
/// every guide's Markdown edition with its description, in index order.
fn llms_txt(site: &SiteContext, plan: &Plan) -> String {
    let default = site.config.default_language.as_str();
    let mut text = format!("# {}\n\n", markdown_line(site.config.title(default)));
    if let Some(loc) = site.locales.get(default) {
        text.push_str(&format!("> {}\n", loc.t("index-description")));
    }
    for lang in &site.config.languages {
        text.push_str(&format!("\n## {} ({lang})\n\n", language_name(site, lang)));
        let (note, incomplete) =
            super::status_page::llms_note(plan, lang, default, &site.config.base_url);
        text.push_str(&note);
        for s in index_order(plan, lang) {
            let url = format!("{}{lang}/{}/index.md", site.config.base_url, s.slug);
            text.push_str(&format!("- [{}]({url})", markdown_line(s.title)));
            if let Some(d) = s.description {
                text.push_str(&format!(": {}", markdown_line(d)));
            }
            if let Some((_, note)) = incomplete.iter().find(|(slug, _)| slug == s.slug) {
                text.push_str(note);
            }
            text.push('\n');
        }
    }
    text
}

/// `text` as one line of Markdown that reads as the text itself: line breaks (and the spaces
/// around them) become one space, so a title cannot start a heading or list item of its own, and
/// the characters with a meaning inside a line or link text (`\\`, `` ` ``, `*`, `_`, `[`, `]`,
/// `<`, `>`, `&`, `!`) are backslash-escaped (CommonMark: any ASCII punctuation may be), so
/// brackets are kept instead of ending the link text. An `_` inside a word (`estimate_loss`)
/// cannot start emphasis and stays as it is.
fn markdown_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for (i, line) in text
        .split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .enumerate()
    {
        if i > 0 {
            out.push(' ');
        }
        let chars: Vec<char> = line.chars().collect();
        let word = |k: Option<usize>| {
            k.and_then(|k| chars.get(k))
                .is_some_and(|c| c.is_alphanumeric())
        };
        for (j, &c) in chars.iter().enumerate() {
            let in_word = c == '_' && word(j.checked_sub(1)) && word(Some(j + 1));
            if matches!(
                c,
                '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '&' | '!'
            ) && !in_word
            {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out
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

/// The static assets: every embedded `static/` file (`style.css` with the highlighting classes
/// appended, the favicon, the copy-button script).
pub(crate) fn style() -> Vec<File> {
    assets::STATIC
        .iter()
        .map(|(name, text)| {
            let mut text = text.to_string();
            if *name == "style.css" {
                text.push_str(&markdown::highlight_css());
            }
            (name.to_string(), text.into_bytes())
        })
        .collect()
}
