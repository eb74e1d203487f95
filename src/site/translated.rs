//! Translation staleness in the build: each guide's records file (`translations.yaml`) read
//! against its previous entry like a page (hashed only when its stamp changed, parsed only when
//! its bytes did), and each translation page's notices: the sections that are not current, from
//! the page summaries' section hashes and the records. The notices are an input of the page's
//! job, so an edit re-renders exactly the translations whose notices change.

use std::path::Path;
use std::sync::Arc;

use super::manifest::{hash, Digest, FileStat, Hasher, Stamp};
use super::model::{GuideEntry, RecordsEntry, Summary};
use super::scan::Source;
use crate::diagnostics::Diagnostic;
use crate::translations::notices::{with_notices, NoticeText};
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
pub(super) type PageFacts<'a> = (&'a str, &'a Summary, &'a Digest);

/// Per page of one guide (`sources`, its pages): its notices when it is a translation with a
/// section that is not current; `None` otherwise (the source page, a complete translation, a
/// translation never marked, or a guide without a page in `default`).
pub(crate) fn guide_notices(
    sources: &[Source],
    records: Option<&RecordsEntry>,
    default: &str,
) -> Vec<Option<Arc<Notices>>> {
    let facts: Vec<PageFacts<'_>> = (sources.iter())
        .map(|s| (s.src.lang.as_str(), &s.summary, &s.hash))
        .collect();
    notices_of(&facts, records, default)
}

/// What [`guide_notices`] gives the pages of a guide as the manifest recorded it: the digests
/// only (what the listings hash), per page in `guide.pages` order.
pub(crate) fn entry_notice_digests(guide: &GuideEntry, default: &str) -> Vec<Option<Digest>> {
    let facts: Vec<PageFacts<'_>> = (guide.pages.iter())
        .map(|(lang, p)| (lang.as_str(), &p.source.summary, &p.source.hash))
        .collect();
    let notices = notices_of(&facts, guide.records.as_ref(), default);
    notices.into_iter().map(|n| n.map(|n| n.digest)).collect()
}

/// Per page: its notices, from the pages' section hashes and the guide's records.
fn notices_of(
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

/// The body a translation page renders: `page`'s, with its notices (the source page read for
/// the sections it lacks).
pub(super) fn noticed_body(
    site: &super::SiteContext,
    page: &crate::content::Page,
    notices: &Notices,
) -> Result<String, Vec<Diagnostic>> {
    let source = crate::content::page_source(&page.src.slug, &notices.source_lang, &page.src.dir);
    let source = crate::content::load(&source)?;
    let loc = site.locales.get(&page.src.lang);
    let name = super::pages::language_name(site, &notices.source_lang);
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
    Ok(with_notices(
        page.body(),
        source.body(),
        &notices.status,
        &text,
    ))
}

/// Gives the rendered notices (blockquotes opening with a notice text) the class
/// `translation-notice` and their state, so a stylesheet and tests can tell them apart.
pub(super) fn mark_notices(
    html: &str,
    site: &super::SiteContext,
    lang: &str,
    source_lang: &str,
) -> String {
    let Some(loc) = site.locales.get(lang) else {
        return html.to_string();
    };
    let name = super::pages::language_name(site, source_lang);
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
