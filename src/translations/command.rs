//! What `vramdoc translations mark` (record what a translation's sections were made from) and
//! `vramdoc translations status` (each translated section's state) do; `cli::translations`
//! parses and prints them.

use std::path::Path;

use super::guides::{read_guide, read_guides, records_shown, translations, SectionRow};
use super::hash::section_hash;
use super::records::{self, Record, RECORDS_FILE};
use super::sections::sections;
use super::status::State;
use crate::config::SiteConfig;
use crate::content::GuideFolder;
use crate::diagnostics::Diagnostic;

/// Output format of `vramdoc translations status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusFormat {
    /// A line per guide and language, then the sections that are not current.
    Text,
    /// One JSON array: `{guide, lang, section, state}` per translated section.
    Json,
}

/// Records `lang`'s sections of `guide` (all, or `only`) as made from today's source; returns
/// what it did, in words.
pub(crate) fn mark(
    root: &Path,
    lang: &str,
    guide: &str,
    only: &[String],
) -> Result<String, Vec<Diagnostic>> {
    let config = SiteConfig::load(root)?;
    let default = config.default_language.as_str();
    if lang == default || !config.languages.contains(&lang.to_string()) {
        let others: Vec<&str> = (config.languages.iter())
            .map(String::as_str)
            .filter(|l| *l != default)
            .collect();
        return Err(vec![Diagnostic::error(format!(
            "`{lang}` is not a translation language of this site"
        ))
        .with_help(format!(
            "translations are marked in one of: {}",
            others.join(", ")
        ))]);
    }
    let path = crate::site_paths::SitePaths::new(root)
        .content()
        .join(guide);
    if !crate::content::is_valid_slug(guide) || !path.is_dir() {
        return Err(vec![Diagnostic::error(format!(
            "there is no guide `{guide}`"
        ))
        .with_help("name a guide by its folder under content/")]);
    }
    let folder = GuideFolder {
        name: guide.to_string(),
        path,
    };
    let mut errors = Vec::new();
    let mut texts = read_guide(folder, &config, &mut errors);
    errors.extend(texts.records_error.take());
    if !errors.is_empty() {
        return Err(errors);
    }
    let page = |l: &str| format!("content/{guide}/{l}.md");
    let (Some(source), Some(translation)) = (texts.bodies.get(default), texts.bodies.get(lang))
    else {
        let missing = if texts.bodies.contains_key(default) {
            lang
        } else {
            default
        };
        return Err(vec![Diagnostic::error(format!(
            "{} does not exist",
            page(missing)
        ))]);
    };
    let source_sections = sections(source);
    let translated: Vec<String> = sections(translation).into_iter().map(|s| s.id).collect();
    let wanted: Vec<String> = if only.is_empty() {
        (source_sections.iter())
            .filter(|s| translated.contains(&s.id))
            .map(|s| s.id.clone())
            .collect()
    } else {
        only.to_vec()
    };
    let mut new = Vec::new();
    for id in &wanted {
        let Some(s) = source_sections.iter().find(|s| s.id == *id) else {
            let ids: Vec<&str> = source_sections.iter().map(|s| s.id.as_str()).collect();
            errors.push(
                Diagnostic::error(format!("{} has no section `{id}`", page(default)))
                    .with_help(format!("its sections are: {}", ids.join(", "))),
            );
            continue;
        };
        if !translated.contains(id) {
            errors.push(
                Diagnostic::error(format!("{} has no section `{id}` to mark", page(lang)))
                    .with_help(format!(
                        "translate it first, with `{{#{id}}}` after its heading"
                    )),
            );
            continue;
        }
        let record = Record {
            hash: section_hash(s.text),
            source: records::stored_text(s.text),
        };
        new.push((id.clone(), record));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let entry = texts.records.entry(lang.to_string()).or_default();
    if only.is_empty() {
        // Marking the whole translation forgets sections the source no longer has.
        entry.retain(|id, _| source_sections.iter().any(|s| s.id == *id));
    }
    let count = new.len();
    entry.extend(new);
    let shown = records_shown(guide);
    write_atomically(
        &texts.dir.join(RECORDS_FILE),
        &records::write(&texts.records),
        &shown,
    )
    .map_err(|e| vec![e])?;
    Ok(format!(
        "marked {count} section(s) of {} as translated from {} as it is now ({})\n",
        page(lang),
        page(default),
        shown.display()
    ))
}

/// Writes `text` to a temporary file beside `path`, then renames it into place.
fn write_atomically(path: &Path, text: &str, shown: &Path) -> Result<(), Diagnostic> {
    let temp = path.with_extension("yaml.tmp");
    let cannot = |e: std::io::Error| Diagnostic::error(format!("cannot write: {e}")).in_file(shown);
    std::fs::write(&temp, text).map_err(cannot)?;
    std::fs::rename(&temp, path).map_err(cannot)
}

/// The state of every translated section of the site (only `lang`'s when given).
pub(crate) fn status(
    root: &Path,
    lang: Option<&str>,
    format: StatusFormat,
) -> Result<String, Vec<Diagnostic>> {
    let config = SiteConfig::load(root)?;
    if let Some(l) = lang.filter(|l| !config.languages.iter().any(|x| x == l)) {
        return Err(vec![Diagnostic::error(format!(
            "`{l}` is not a language of this site ({})",
            config.languages.join(", ")
        ))]);
    }
    let (guides, errors) = read_guides(root, &config);
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut rows: Vec<SectionRow> = Vec::new();
    let mut text = String::new();
    for guide in &guides {
        let (source, list) = translations(guide, &config.languages, &config.default_language, lang);
        for t in list {
            let these = t.rows(&source);
            let count = |s: State| these.iter().filter(|r| r.state == s).count();
            let never = if guide.records.contains_key(&t.lang) {
                ""
            } else {
                " (never marked)"
            };
            text.push_str(&format!(
                "{} {}: {} current, {} stale, {} missing{never}\n",
                t.guide,
                t.lang,
                count(State::Current),
                count(State::Stale),
                count(State::Missing)
            ));
            for r in these.iter().filter(|r| r.state != State::Current) {
                text.push_str(&format!("  {} {}\n", r.state.name(), r.section));
            }
            rows.extend(these);
        }
    }
    Ok(match format {
        StatusFormat::Text => text,
        StatusFormat::Json => serde_json::to_string_pretty(&rows).unwrap_or_default() + "\n",
    })
}
