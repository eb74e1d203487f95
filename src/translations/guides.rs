//! Reading a site's guides for translation status and `mark`: each guide's page bodies and its
//! records file, and what every translation's sections are against the default language's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::diff::word_diff;
use super::records::{self, Records, RECORDS_FILE};
use super::sections::{ids, sections};
use super::status::{compare, PageStatus, SourceSection, State};
use crate::config::SiteConfig;
use crate::content;
use crate::diagnostics::Diagnostic;

/// One guide's texts: its page bodies by language and its records.
#[derive(Debug, Clone)]
pub(crate) struct GuideTexts {
    pub(crate) slug: String,
    pub(crate) dir: PathBuf,
    /// Language → page body (front matter left out).
    pub(crate) bodies: BTreeMap<String, String>,
    pub(crate) records: Records,
    /// Why the records file could not be read, if it could not (its records are then empty).
    pub(crate) records_error: Option<Diagnostic>,
}

/// `content/<slug>/translations.yaml`.
pub(crate) fn records_shown(slug: &str) -> PathBuf {
    PathBuf::from(format!("content/{slug}/{RECORDS_FILE}"))
}

/// Reads every guide of the site at `root`, with every problem found (records files' included).
pub(crate) fn read_guides(root: &Path, config: &SiteConfig) -> (Vec<GuideTexts>, Vec<Diagnostic>) {
    let folders = match content::guide_folders(root) {
        Ok(f) => f,
        Err(e) => return (Vec::new(), vec![e]),
    };
    let mut guides = Vec::new();
    let mut errors = Vec::new();
    for folder in folders {
        let guide = read_guide(folder, config, &mut errors);
        errors.extend(guide.records_error.clone());
        guides.push(guide);
    }
    (guides, errors)
}

/// Reads one guide folder's page bodies and records; problems go to `errors`.
pub(crate) fn read_guide(
    folder: content::GuideFolder,
    config: &SiteConfig,
    errors: &mut Vec<Diagnostic>,
) -> GuideTexts {
    let (pages, mut e) = content::list_guide(&folder, config);
    errors.append(&mut e);
    let mut bodies = BTreeMap::new();
    for src in pages {
        match content::load(&src) {
            Ok(page) => {
                bodies.insert(src.lang.clone(), page.body().to_string());
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    let path = folder.path.join(RECORDS_FILE);
    let shown = records_shown(&folder.name);
    let read = match std::fs::symlink_metadata(&path) {
        Err(_) => Ok(Records::new()),
        Ok(_) => crate::site_files::read_to_string(&path, &shown)
            .and_then(|t| records::parse(&t, &shown)),
    };
    let (records, records_error) = match read {
        Ok(r) => (r, None),
        Err(e) => (Records::new(), Some(e)),
    };
    GuideTexts {
        slug: folder.name,
        dir: folder.path,
        bodies,
        records,
        records_error,
    }
}

/// One translation of one guide against its source.
#[derive(Debug, Clone)]
pub(crate) struct Translation {
    pub(crate) guide: String,
    pub(crate) lang: String,
    /// `None` when the guide has no page in this language.
    pub(crate) status: Option<PageStatus>,
    /// Per stale section: the word diff of its source since it was recorded (empty when it was
    /// never recorded).
    pub(crate) diffs: BTreeMap<String, Vec<String>>,
}

/// One row of `--format json`: a source section in one translation.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct SectionRow {
    pub(crate) guide: String,
    pub(crate) lang: String,
    pub(crate) section: String,
    pub(crate) state: State,
}

impl Translation {
    /// One row per source section.
    pub(crate) fn rows(&self, source: &[SourceSection]) -> Vec<SectionRow> {
        let row = |section: &str, state| SectionRow {
            guide: self.guide.clone(),
            lang: self.lang.clone(),
            section: section.to_string(),
            state,
        };
        match &self.status {
            Some(p) => p.sections.iter().map(|s| row(&s.id, s.state)).collect(),
            None => source.iter().map(|s| row(&s.id, State::Missing)).collect(),
        }
    }
}

/// Each translation (languages other than `default`, in `languages` order, only `only` when
/// given) of `guide` against the default language's page; nothing when it has none.
pub(crate) fn translations(
    guide: &GuideTexts,
    languages: &[String],
    default: &str,
    only: Option<&str>,
) -> (Vec<SourceSection>, Vec<Translation>) {
    let Some(source_body) = guide.bodies.get(default) else {
        return (Vec::new(), Vec::new());
    };
    let source_sections = sections(source_body);
    let source = SourceSection::of(&source_sections);
    let mut out = Vec::new();
    for lang in languages {
        if lang == default || only.is_some_and(|o| o != lang) {
            continue;
        }
        let records = guide.records.get(lang);
        let status = guide.bodies.get(lang).map(|body| {
            let found = sections(body);
            compare(&source, &ids(&found), |id| {
                records.and_then(|r| r.get(id)).map(|r| r.hash)
            })
        });
        let mut diffs = BTreeMap::new();
        for s in status.iter().flat_map(|p| &p.sections) {
            if s.state != State::Stale {
                continue;
            }
            let now = source_sections.iter().find(|x| x.id == s.id);
            let then = records.and_then(|r| r.get(&s.id));
            let diff = match (then, now) {
                (Some(then), Some(now)) => word_diff(&then.source, &records::stored_text(now.text)),
                _ => Vec::new(),
            };
            diffs.insert(s.id.clone(), diff);
        }
        out.push(Translation {
            guide: guide.slug.clone(),
            lang: lang.clone(),
            status,
            diffs,
        });
    }
    (source, out)
}
