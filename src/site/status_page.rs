//! Translation status for readers: `<lang>/translation-status.html`, each guide of a
//! translation language with its sections current, stale or missing (written with the
//! language's index, whose inputs hold every page's notices), and what `llms.txt` says of each
//! language version.

use serde::Serialize;
use tera::Context;

use super::pages::{lang_links, page_meta, site_ctx};
use super::plan::Plan;
use super::scan::Source;
use super::SiteContext;
use crate::diagnostics::Diagnostic;
use crate::translations::status::State;

#[derive(Serialize)]
struct GuideStatus<'a> {
    slug: &'a str,
    title: &'a str,
    href: String,
    /// "not tracked" when the translation was never marked (its sections are then unknown).
    untracked: Option<String>,
    sections: Vec<SectionStatus<'a>>,
}

#[derive(Serialize)]
struct SectionStatus<'a> {
    id: &'a str,
    state: &'static str,
    /// The state in the page's language.
    label: String,
    /// The section in the translation, or in the original when it is missing.
    href: String,
}

/// Per section of the original (the default language's page of `page`'s guide): its state in
/// `page`, from the plan's notices (no notice: current), and whether the page is tracked.
pub(super) fn section_states<'p>(
    plan: &'p Plan,
    index: usize,
    default: &str,
) -> (Vec<(&'p str, State)>, bool) {
    let page = &plan.sources[index];
    if let Some(n) = &plan.notices[index] {
        let states = (n.status.sections.iter()).map(|s| (s.id.as_str(), s.state));
        return (states.collect(), n.tracked);
    }
    let original =
        (plan.sources.iter()).find(|s| s.src.slug == page.src.slug && s.src.lang == default);
    let states = original
        .map(|o| {
            let ids = o.summary.sections.iter().flatten().map(|s| s.id.as_str());
            ids.map(|id| (id, State::Current)).collect()
        })
        .unwrap_or_default();
    (states, true)
}

/// The pages of `lang`, by index in `plan.sources`, in index order.
fn pages_of<'p>(plan: &'p Plan, lang: &str, order: &[&'p Source]) -> Vec<usize> {
    order
        .iter()
        .filter_map(|o| {
            plan.sources
                .iter()
                .position(|s| s.src == o.src && s.src.lang == lang)
        })
        .collect()
}

/// `<lang>/translation-status.html` for a translation language (`order`: its pages in index
/// order); nothing for the default language.
pub(super) fn status_page(
    site: &SiteContext,
    plan: &Plan,
    lang: &str,
    order: &[&Source],
) -> Result<Option<(String, Vec<u8>)>, Diagnostic> {
    let default = site.config.default_language.as_str();
    if lang == default {
        return Ok(None);
    }
    let mut complete = true;
    let loc = site.locales.get(lang);
    let label = |state: &str| {
        let key = format!("translation-state-{state}");
        loc.map(|l| l.t(&key)).unwrap_or_else(|| state.to_string())
    };
    let guides: Vec<GuideStatus<'_>> = pages_of(plan, lang, order)
        .into_iter()
        .map(|i| {
            let s = &plan.sources[i];
            let slug = s.src.slug.as_str();
            let (states, tracked) = section_states(plan, i, default);
            complete &= tracked;
            let sections = states
                .into_iter()
                .map(|(id, state)| {
                    complete &= state == State::Current;
                    let (page_lang, fragment) = match state {
                        State::Missing => (default, id),
                        _ => (lang, id),
                    };
                    let fragment = if id == crate::translations::sections::INTRO {
                        ""
                    } else {
                        fragment
                    };
                    let hash = if fragment.is_empty() { "" } else { "#" };
                    SectionStatus {
                        id,
                        state: state.name(),
                        label: label(state.name()),
                        href: format!("../{page_lang}/{slug}/index.html{hash}{fragment}"),
                    }
                })
                .collect();
            GuideStatus {
                untracked: (!tracked).then(|| label("untracked")),
                slug,
                title: &s.summary.title,
                href: format!("{slug}/index.html"),
                sections,
            }
        })
        .collect();
    let langs: Vec<&str> = site.config.languages.iter().map(String::as_str).collect();
    let mut ctx = Context::new();
    ctx.insert("lang", lang);
    ctx.insert("root", "../");
    ctx.insert("lang_index", &true);
    ctx.insert("site", &site_ctx(site, lang));
    ctx.insert("guides", &guides);
    ctx.insert("complete", &complete);
    ctx.insert(
        "languages",
        &lang_links(site, &langs, lang, |l| format!("../{l}/index.html")),
    );
    ctx.insert("alternates", &Vec::<super::pages::Alternate>::new());
    ctx.insert("x_default", &None::<String>);
    let title = site
        .locales
        .get(lang)
        .map(|l| l.t("translation-status-title"));
    let url = format!("{}{lang}/translation-status.html", site.config.base_url);
    let meta = page_meta(
        title.as_deref().unwrap_or("Translation status"),
        None,
        Some(&url),
        "website",
        lang,
    );
    ctx.insert("meta", &meta);
    let html = site.renderer.render("translations.html", &ctx)?;
    Ok(Some((
        format!("{lang}/translation-status.html"),
        html.into_bytes(),
    )))
}

/// What `llms.txt` says of language `lang`: for a translation, whether every section of every
/// guide is translated from the current original, and per guide the sections that are not.
pub(super) fn llms_note(
    plan: &Plan,
    lang: &str,
    default: &str,
    base_url: &str,
) -> (String, Vec<(String, String)>) {
    if lang == default {
        return (String::new(), Vec::new());
    }
    let mut per_guide = Vec::new();
    for (i, s) in plan
        .sources
        .iter()
        .enumerate()
        .filter(|(_, s)| s.src.lang == lang)
    {
        let (states, tracked) = section_states(plan, i, default);
        let count = |x: State| states.iter().filter(|(_, st)| *st == x).count();
        let (stale, missing) = (count(State::Stale), count(State::Missing));
        if !tracked {
            let note = format!(
                " (translation not tracked: no record of what it was translated from; the original: {base_url}{default}/{}/index.md)",
                s.src.slug
            );
            per_guide.push((s.src.slug.clone(), note));
        } else if stale + missing > 0 {
            let note = format!(
                " (incomplete translation: {stale} stale and {missing} missing of {} sections; the original: {base_url}{default}/{}/index.md)",
                states.len(),
                s.src.slug
            );
            per_guide.push((s.src.slug.clone(), note));
        }
    }
    let status = format!("{base_url}{lang}/translation-status.html");
    let head = if per_guide.is_empty() {
        format!("This language version is complete: every section of every guide is translated from the current original. Status: {status}\n\n")
    } else {
        format!("This language version is incomplete: {} guide(s) have sections that changed in the original since they were translated, or are not translated yet. Status: {status}\n\n", per_guide.len())
    };
    (head, per_guide)
}
