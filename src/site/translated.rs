//! Translation staleness in the build: each guide's records file (`translations.yaml`) read
//! against its previous entry like a page (hashed only when its stamp changed, parsed only when
//! its bytes did), and each translation page's notices: the sections that are not current, from
//! the page summaries' section hashes and the records. The notices are an input of the page's
//! job, so an edit re-renders exactly the translations whose notices change.

use std::path::Path;
use std::sync::Arc;

use super::model::{GuideEntry, RecordsEntry, Summary};
use super::stamp::{hash, Digest, FileStat, Hasher, Stamp};
use crate::diagnostics::Diagnostic;
use crate::translations::records::{self, RECORDS_FILE};
use crate::translations::status::{compare, PageStatus, State};

/// A translation page's notices: its state against the source, and the digest of what its
/// rendering reads of it (the non-current sections, and the source page when one is missing).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Notices {
    pub(crate) status: PageStatus,
    /// The source page's language.
    pub(crate) source_lang: String,
    /// False for a translation never marked: nothing says what it was made from, so its page
    /// shows no notices (`check` and the status page report it).
    pub(crate) tracked: bool,
    /// The digest of the states (and, with a section missing, of the source page).
    pub(crate) digest: Digest,
}

impl Notices {
    /// What the page's job hashes: the notices it renders (none when untracked).
    pub(crate) fn rendered_digest(&self) -> Option<&Digest> {
        self.tracked.then_some(&self.digest)
    }
}

/// Reads guide `slug`'s records file in `dir` unless its stamp says it is `previous`'s; returns
/// the entry (none without a file), whether it differs from `previous`, and any error.
pub(super) fn read_records(
    dir: &Path,
    slug: &str,
    stat: Option<FileStat>,
    previous: Option<RecordsEntry>,
    now: u64,
) -> (Option<RecordsEntry>, bool, Option<Diagnostic>) {
    let Some(stat) = stat else {
        return (None, previous.is_some(), None);
    };
    if let Some(p) = previous
        .as_ref()
        .filter(|p| p.stamp.is_some_and(|s| s.matches(&stat)))
    {
        return (Some(p.clone()), false, None);
    }
    let stamp = Stamp::of(&stat, now);
    let shown = crate::translations::guides::records_shown(slug);
    let bytes = match crate::site_files::read(&dir.join(RECORDS_FILE), &shown) {
        Ok(b) => b,
        Err(e) => return (None, true, Some(e)),
    };
    let h = hash(&bytes);
    if let Some(mut p) = previous.clone().filter(|p| p.hash == h) {
        let changed = p.stamp != stamp;
        p.stamp = stamp;
        return (Some(p), changed, None);
    }
    let parsed = String::from_utf8(bytes)
        .map_err(|_| Diagnostic::error("not UTF-8 text").in_file(&shown))
        .and_then(|text| records::parse(&text, &shown));
    match parsed {
        Ok(records) => {
            let recorded = records
                .into_iter()
                .map(|(lang, sections)| {
                    let hashes = sections.into_iter().map(|(id, r)| (id, r.hash)).collect();
                    (lang, hashes)
                })
                .collect();
            let entry = RecordsEntry {
                stamp,
                hash: h,
                recorded,
            };
            (Some(entry), true, None)
        }
        Err(e) => (None, true, Some(e)),
    }
}

/// One page as its notices need it: its language, summary and source hash.
pub(crate) type PageFacts<'a> = (&'a str, &'a Summary, &'a Digest);

/// What [`guide_notices`] gives the pages of a guide as the manifest recorded it: the digests
/// only (what the listings hash), per page in `guide.pages` order.
pub(crate) fn entry_notice_digests(guide: &GuideEntry, default: &str) -> Vec<Option<Digest>> {
    let facts: Vec<PageFacts<'_>> = (guide.pages.iter())
        .map(|(lang, p)| (lang.as_str(), &p.source.summary, &p.source.hash))
        .collect();
    let notices = guide_notices(&facts, guide.records.as_ref(), default);
    notices.into_iter().map(|n| n.map(|n| n.digest)).collect()
}

/// Per page of one guide: its notices when it is a translation never marked (untracked) or with
/// a section that is not current; `None` otherwise (the source page, a complete translation, or a
/// guide without a page in `default`). From the pages' section hashes and the guide's records.
pub(crate) fn guide_notices(
    pages: &[PageFacts<'_>],
    records: Option<&RecordsEntry>,
    default: &str,
) -> Vec<Option<Arc<Notices>>> {
    let Some(&(_, source_summary, source_hash)) = pages.iter().find(|p| p.0 == default) else {
        return vec![None; pages.len()];
    };
    let original = source_summary.sections.as_deref().unwrap_or_default();
    pages
        .iter()
        .map(|&(lang, summary, _)| {
            if lang == default {
                return None;
            }
            // A translation never marked is untracked: nothing is known of its sections.
            let Some((_, recorded)) =
                records.and_then(|r| r.recorded.iter().find(|(l, _)| l == lang))
            else {
                return Some(Arc::new(Notices {
                    status: PageStatus::default(),
                    source_lang: default.to_string(),
                    tracked: false,
                    digest: hash(b"untracked"),
                }));
            };
            let found = summary.sections.as_deref().unwrap_or_default();
            let ids: Vec<&str> = found.iter().map(|x| x.id.as_str()).collect();
            let status = compare(original, &ids, |id| {
                (recorded.iter().find(|(i, _)| i == id)).map(|(_, h)| *h)
            });
            if status.sections.iter().all(|x| x.state == State::Current) {
                return None;
            }
            let mut h = Hasher::new();
            for x in status.sections.iter().filter(|x| x.state != State::Current) {
                h.part(&x.id).part(x.state.name());
            }
            if status.sections.iter().any(|x| x.state == State::Missing) {
                h.digest(source_hash);
            }
            Some(Arc::new(Notices {
                status,
                source_lang: default.to_string(),
                tracked: true,
                digest: h.finish(),
            }))
        })
        .collect()
}
