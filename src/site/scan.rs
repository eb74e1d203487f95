//! The scan stage of a plan: what the file system says of each guide folder and page (one `stat`
//! each, relative to the open content folder), read against the previous build's entries: a
//! folder is listed again only if its stamp changed, a page hashed only if its stamp changed and
//! parsed only if its bytes did. Stamps are judged against the `now` the plan is given.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::manifest::{
    hash, sort_in_site_order, DataEntry, Digest, FileStat, GuideEntry, Hasher, JobEntry, Listed,
    Neighbours, PageEntry, SourceEntry, Stamp, Summary,
};
use super::model::{JobId, RecordsEntry, Removed};
pub(super) use super::page_cell::{KeptText, PageCell, ReadOnce};
use super::translated::{guide_notices, read_records, Notices, PageFacts};
use crate::config::SiteConfig;
use crate::content::{self, GuideFolder, Page, PageSource};
use crate::diagnostics::Diagnostic;
use crate::site_paths::{SitePaths, CONFIG_FILE, CONTENT_DIR};
use crate::translations::records::RECORDS_FILE;
use crate::translations::sections::of_page;
use crate::translations::status::SourceSection;

/// One source page as the plan knows it.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub(crate) src: PageSource,
    pub(crate) hash: Digest,
    pub(crate) summary: Summary,
    /// The file's stamp, unless too recent to trust.
    pub(crate) stamp: Option<Stamp>,
    /// The page as read this build, if it was.
    pub(crate) page: PageCell,
}

impl Source {
    /// The parsed page: the one the scan read, else read now (once: other stages asking
    /// meanwhile wait for it).
    pub(crate) fn page(&self) -> Result<Arc<Page>, Vec<Diagnostic>> {
        self.page.get_or(|| content::load(&self.src))
    }

    /// What listings show of this page.
    pub(crate) fn listed(&self) -> Listed<'_> {
        self.summary.listed(&self.src.slug, &self.src.lang)
    }
}

/// The scan's result: every page of the guides not closed, sorted by guide then language, with what
/// the previous build recorded of them.
pub(super) struct Scanned {
    pub(super) sources: Vec<Source>,
    /// Per source: the previous build's output entry (taken by [`super::jobs::page_jobs`]).
    pub(super) previous_outputs: Vec<Option<JobEntry>>,
    /// Per source: its neighbours in the index as the previous build recorded them.
    pub(super) previous_neighbours: Vec<Option<Neighbours>>,
    /// Per guide: its languages in site order, joined with `,` (what its page jobs hash).
    pub(super) guide_langs: Vec<String>,
    /// Per source: the index of its guide in `guide_langs`.
    pub(super) guide_of_source: Vec<usize>,
    /// Languages each guide exists in, in site order.
    pub(super) guides: BTreeMap<String, Vec<String>>,
    /// Per guide: its folder's stamp.
    pub(super) folders: BTreeMap<String, Option<Stamp>>,
    /// Per guide: its previous data entry.
    pub(super) previous_data: BTreeMap<String, DataEntry>,
    /// Per guide with a translation records file: what it records.
    pub(super) records: BTreeMap<String, RecordsEntry>,
    /// Per source: its notices (a translation with sections not current).
    pub(super) notices: Vec<Option<Arc<Notices>>>,
    /// Guides whose manifest entry changed.
    pub(super) touched: BTreeSet<String>,
    /// Pages of the previous build that are gone.
    pub(super) removed: Vec<Removed>,
    pub(super) errors: Vec<Diagnostic>,
    /// Files a guide folder holds that are not read (`en.markdown`), and empty guide folders.
    pub(super) warnings: Vec<Diagnostic>,
}

impl Scanned {
    /// Puts the guides read together (`deleted`: the previous entries of guides gone since).
    pub(super) fn gather(
        (read, deleted): (Vec<GuideRead>, BTreeMap<String, GuideEntry>),
        config: &SiteConfig,
    ) -> Scanned {
        let langs = &config.languages;
        let count = read.iter().map(|r| r.sources.len()).sum();
        let mut s = Scanned {
            sources: Vec::with_capacity(count),
            previous_outputs: Vec::with_capacity(count),
            previous_neighbours: Vec::with_capacity(count),
            guide_langs: Vec::new(),
            guide_of_source: Vec::with_capacity(count),
            guides: BTreeMap::new(),
            folders: BTreeMap::new(),
            previous_data: BTreeMap::new(),
            records: BTreeMap::new(),
            notices: Vec::with_capacity(count),
            touched: BTreeSet::new(),
            removed: Vec::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
        };
        for (slug, guide) in deleted {
            s.removed.extend(removed_pages(&slug, guide.pages));
            s.touched.insert(slug);
        }
        for mut r in read {
            if r.changed {
                s.touched.insert(r.slug.clone());
            }
            let (errors, warnings) = r.errors.drain(..).partition::<Vec<_>, _>(|d| d.is_error());
            s.errors.extend(errors);
            s.warnings.extend(warnings);
            s.removed.append(&mut r.removed);
            if r.sources.is_empty() {
                continue;
            }
            if let Some(d) = r.previous_data {
                s.previous_data.insert(r.slug.clone(), d);
            }
            let notices = notices_of(&r.sources, r.records.as_ref(), &config.default_language);
            s.notices.extend(notices);
            if let Some(records) = r.records {
                s.records.insert(r.slug.clone(), records);
            }
            let mut guide_langs: Vec<String> =
                r.sources.iter().map(|s| s.src.lang.clone()).collect();
            sort_in_site_order(&mut guide_langs, langs);
            let guide = s.guide_langs.len();
            s.guide_of_source
                .extend(std::iter::repeat_n(guide, r.sources.len()));
            s.guide_langs.push(guide_langs.join(","));
            s.guides.insert(r.slug.clone(), guide_langs);
            s.folders.insert(r.slug, r.folder);
            s.sources.append(&mut r.sources);
            s.previous_outputs.append(&mut r.outputs);
            s.previous_neighbours.append(&mut r.neighbours);
        }
        s
    }

    /// The languages of source `i`'s guide, joined.
    pub(super) fn langs_of(&self, i: usize) -> &str {
        &self.guide_langs[self.guide_of_source[i]]
    }

    /// Each source with its guide's languages and the digest of its notices.
    pub(super) fn pages(&self) -> impl Iterator<Item = (&Source, &str, Option<&Digest>)> {
        (self.sources.iter().enumerate()).map(|(i, s)| {
            let notices = self.notices[i].as_ref().map(|n| &n.digest);
            (s, self.langs_of(i), notices)
        })
    }
}

/// Each page's notices (see [`guide_notices`]) for a guide's sources.
pub(crate) fn notices_of(
    sources: &[Source],
    records: Option<&RecordsEntry>,
    default: &str,
) -> Vec<Option<Arc<Notices>>> {
    let facts: Vec<PageFacts<'_>> = (sources.iter())
        .map(|s| (s.src.lang.as_str(), &s.summary, &s.hash))
        .collect();
    guide_notices(&facts, records, default)
}

/// The outputs of a guide's pages that are gone.
pub(super) fn removed_pages(
    slug: &str,
    pages: Vec<(String, PageEntry)>,
) -> impl Iterator<Item = Removed> + '_ {
    pages.into_iter().filter_map(move |(lang, page)| {
        page.output.map(|entry| Removed {
            id: JobId::Page {
                lang,
                slug: slug.to_string(),
            },
            entry,
        })
    })
}

/// What the file system says of a guide folder before the manifest is consulted: the folder's
/// stat, that of `<lang>.md` for each configured language (in the site's order) and that of its
/// translation records file.
pub(super) struct FolderMeta {
    pub(super) folder: Option<FileStat>,
    pub(super) pages: Vec<Option<FileStat>>,
    pub(super) records: Option<FileStat>,
}

impl FolderMeta {
    pub(super) fn of(
        folder: &GuideFolder,
        content: &ContentDir,
        config: &SiteConfig,
    ) -> FolderMeta {
        let pages = config
            .languages
            .iter()
            .map(|l| content.stat(folder, Some(&format!("{l}.md"))))
            .collect();
        FolderMeta {
            folder: content.stat(folder, None),
            pages,
            records: content.stat(folder, Some(RECORDS_FILE)),
        }
    }
}

/// The content folder, open where the platform allows, to stat guide folders and pages relative
/// to it.
pub(super) struct ContentDir {
    #[cfg(unix)]
    pub(super) fd: Option<rustix::fd::OwnedFd>,
}

impl ContentDir {
    pub(super) fn open(root: &Path) -> ContentDir {
        #[cfg(unix)]
        {
            use rustix::fs::{Mode, OFlags};
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let fd = rustix::fs::open(SitePaths::new(root).content(), flags, Mode::empty()).ok();
            ContentDir { fd }
        }
        #[cfg(not(unix))]
        {
            let _ = root;
            ContentDir {}
        }
    }

    /// Stats guide folder `folder`, or its file `file`.
    pub(super) fn stat(&self, folder: &GuideFolder, file: Option<&str>) -> Option<FileStat> {
        #[cfg(unix)]
        if let Some(fd) = &self.fd {
            let rel = match file {
                Some(f) => format!("{}/{f}", folder.name),
                None => folder.name.clone(),
            };
            return FileStat::at(fd, &rel);
        }
        match file {
            Some(f) => FileStat::of_path(&folder.path.join(f)),
            None => FileStat::of_path(&folder.path),
        }
    }
}

/// One guide folder read against its previous manifest entry.
pub(super) struct GuideRead {
    pub(super) slug: String,
    pub(super) folder: Option<Stamp>,
    pub(super) sources: Vec<Source>,
    /// Per source: the previous build's output entry.
    pub(super) outputs: Vec<Option<JobEntry>>,
    /// Per source: the neighbours the previous build recorded.
    pub(super) neighbours: Vec<Option<Neighbours>>,
    /// Pages of the previous build that are gone.
    pub(super) removed: Vec<Removed>,
    pub(super) errors: Vec<Diagnostic>,
    /// The previous build's data entry of the guide.
    pub(super) previous_data: Option<DataEntry>,
    /// Its translation records file, when it has one.
    pub(super) records: Option<RecordsEntry>,
    /// True when the folder's listing or a page's entry differs from the previous build's.
    pub(super) changed: bool,
}

impl GuideRead {
    /// A guide the file watcher saw no change in: its previous entry, without a system call.
    pub(super) fn unchanged(folder: &GuideFolder, previous: GuideEntry) -> GuideRead {
        let dir: Arc<Path> = Arc::from(folder.path.as_path());
        let count = previous.pages.len();
        let (mut sources, mut outputs, mut neighbours) = (
            Vec::with_capacity(count),
            Vec::with_capacity(count),
            Vec::with_capacity(count),
        );
        for (lang, page) in previous.pages {
            sources.push(Source {
                src: content::page_source(&folder.name, &lang, &dir),
                hash: page.source.hash,
                summary: page.source.summary,
                stamp: page.source.stamp,
                page: PageCell::default(),
            });
            outputs.push(page.output);
            neighbours.push(page.neighbours);
        }
        GuideRead {
            slug: folder.name.clone(),
            folder: previous.folder,
            sources,
            outputs,
            neighbours,
            removed: Vec::new(),
            errors: Vec::new(),
            previous_data: previous.data,
            records: previous.records,
            changed: false,
        }
    }
}

/// The guides (folder names) that `paths` touch, or `None` when a change there needs a full scan
/// (the content folder itself, or the site configuration, which can change the languages).
pub(super) fn changed_guides(paths: &BTreeSet<PathBuf>) -> Option<BTreeSet<&str>> {
    let mut guides = BTreeSet::new();
    for p in paths {
        let mut parts = p.components().map(|c| c.as_os_str().to_str());
        match (parts.next(), parts.next()) {
            (Some(Some(CONTENT_DIR)), Some(Some(slug))) => {
                guides.insert(slug);
            }
            (Some(Some(CONTENT_DIR)), None) => return None,
            (Some(Some(CONFIG_FILE)), None) => return None,
            (Some(Some(CONTENT_DIR)), Some(None)) => return None,
            _ => {}
        }
    }
    Some(guides)
}

/// The guide folders without listing `content/`: the previous build's, plus the changed ones that
/// exist now (a new guide), less the changed ones that are gone. Sorted by name.
pub(super) fn known_folders<'a>(
    root: &Path,
    previous: impl Iterator<Item = &'a String>,
    changed: &BTreeSet<&'a str>,
) -> Vec<GuideFolder> {
    let content = SitePaths::new(root).content();
    let names: BTreeSet<&str> = previous
        .map(String::as_str)
        .filter(|n| !changed.contains(n))
        .chain(
            changed
                .iter()
                .copied()
                .filter(|n| !n.starts_with('.') && content.join(n).is_dir()),
        )
        .collect();
    names
        .into_iter()
        .map(|name| GuideFolder {
            name: name.to_string(),
            path: content.join(name),
        })
        .collect()
}

/// Reads one guide folder: its listing is reused when the folder's stamp is unchanged, and each
/// page is hashed only when its own stamp changed (and parsed only when its bytes did).
pub(super) fn read_guide(
    folder: &GuideFolder,
    meta: &FolderMeta,
    previous: Option<GuideEntry>,
    (config, now): (&SiteConfig, u64),
    (kept, read_once): (&KeptText, &ReadOnce<(Source, bool)>),
) -> GuideRead {
    let slug = folder.name.clone();
    let FolderMeta {
        folder: meta,
        pages,
        records: records_meta,
    } = meta;
    let meta = *meta;
    let stamp = meta.and_then(|m| Stamp::of(&m, now));
    let (mut previous_pages, previous_folder, previous_data, previous_records) = match previous {
        Some(g) => (g.pages, g.folder, g.data, g.records),
        None => Default::default(),
    };
    let listing_unchanged = previous_folder
        .zip(meta)
        .is_some_and(|(s, m)| s.matches(&m))
        && previous_pages
            .iter()
            .all(|(l, _)| config.languages.contains(l));
    let (found, mut errors) = if listing_unchanged {
        let dir: Arc<Path> = Arc::from(folder.path.as_path());
        let found = previous_pages
            .iter()
            .map(|(lang, _)| content::page_source(&slug, lang, &dir))
            .collect();
        (found, Vec::new())
    } else {
        content::list_guide(folder, config)
    };
    let mut changed = stamp != previous_folder || found.len() != previous_pages.len();
    let mut sources = Vec::with_capacity(found.len());
    let mut outputs = Vec::with_capacity(found.len());
    let mut neighbours = Vec::with_capacity(found.len());
    for src in found {
        let prev = previous_pages
            .iter()
            .position(|(l, _)| *l == src.lang)
            .map(|i| previous_pages.swap_remove(i).1);
        let (prev_source, prev_output, prev_neighbours) = match prev {
            Some(p) => (Some(p.source), p.output, p.neighbours),
            None => (None, None, None),
        };
        let meta = config
            .languages
            .iter()
            .position(|l| *l == src.lang)
            .and_then(|i| pages[i]);
        let track = records_meta.is_some();
        let read = read_once.get_or(
            src.path(),
            meta,
            || read_source(src, meta, prev_source, now, track),
            |(s, _)| s.page.holds(),
        );
        match read {
            Ok((s, c)) => {
                if !s.page.fits(kept) {
                    s.page.release();
                }
                changed |= c;
                sources.push(s);
                outputs.push(prev_output);
                neighbours.push(prev_neighbours);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    errors.extend(check_translations_agree(&sources));
    let (records, records_changed, records_error) =
        read_records(&folder.path, &slug, *records_meta, previous_records, now);
    changed |= records_changed;
    errors.extend(records_error);
    GuideRead {
        removed: removed_pages(&slug, previous_pages).collect(),
        slug,
        folder: stamp,
        sources,
        outputs,
        neighbours,
        errors,
        previous_data,
        records,
        changed,
    }
}

/// Hashes a source unless its stamp is unchanged, and parses it only when its bytes changed.
/// Returns the source and whether its manifest entry changed.
pub(super) fn read_source(
    src: PageSource,
    stat: Option<FileStat>,
    previous: Option<SourceEntry>,
    now: u64,
    track: bool,
) -> Result<(Source, bool), Vec<Diagnostic>> {
    // A summary without section hashes is not enough once the guide's translations are tracked.
    let usable = |e: &SourceEntry| !track || e.summary.sections.is_some();
    let cannot = |e: std::io::Error| {
        vec![Diagnostic::error(format!("cannot read: {e}")).in_file(src.shown())]
    };
    let stat = match stat {
        Some(s) => Some(s),
        // Not statted yet, or the stat failed: ask again, for the error's sake.
        None => FileStat::from_metadata(&std::fs::metadata(src.path()).map_err(cannot)?),
    };
    let (previous, unchanged) = match previous {
        Some(e) if e.stamp.zip(stat).is_some_and(|(s, f)| s.matches(&f)) && usable(&e) => {
            (None, Some(e))
        }
        other => (other, None),
    };
    if let Some(e) = unchanged {
        let source = Source {
            hash: e.hash,
            summary: e.summary,
            stamp: e.stamp,
            src,
            page: PageCell::default(),
        };
        return Ok((source, false));
    }
    let stamp = stat.and_then(|f| Stamp::of(&f, now));
    let bytes = content::read_page(&src)?;
    let h = hash(&bytes);
    // Parsed now even when the bytes are known: the page may render, and is read only once.
    let page = content::parse(src.clone(), &bytes)?;
    drop(bytes);
    if let Some(e) = previous.filter(|e| e.hash == h && usable(e)) {
        let changed = e.stamp != stamp;
        let source = Source {
            src,
            hash: h,
            summary: e.summary,
            stamp,
            page: PageCell::holding(page),
        };
        return Ok((source, changed));
    }
    let summary = summarize(&page, track);
    let source = Source {
        src,
        hash: h,
        summary,
        stamp,
        page: PageCell::holding(page),
    };
    Ok((source, true))
}

/// The parts of a parsed page that other outputs depend on.
/// `track`: the guide has a translation records file, so its sections are hashed too.
pub(crate) fn summarize(page: &Page, track: bool) -> Summary {
    crate::markdown::on_page(|| page.src.path(), || summary_of(page, track))
}

/// [`summarize`], its Markdown parses counted for `page` (its sections and their hashes, when
/// tracked: see [`crate::translations::hash::section_hashes`] for why those are parses of their
/// own).
fn summary_of(page: &Page, track: bool) -> Summary {
    let fm = &page.front;
    let scenario_hash = content::agree::shared_text(page).map(|text| {
        let mut h = Hasher::new();
        h.part(text);
        h.finish()
    });
    let updated = fm
        .extra
        .iter()
        .find(|(k, _)| k == "updated")
        .and_then(|(_, v)| v.as_str().map(str::to_string));
    Summary {
        title: fm.title.clone(),
        date: fm.date.clone(),
        description: fm.description.clone(),
        updated: updated.or_else(|| fm.date.clone()),
        scenario_hash,
        uses_catalog: page.body().contains("catalog."),
        sections: track.then(|| SourceSection::of(&of_page(page))),
    }
}

/// The translations of one guide (its pages) must share scenario and variant overrides.
pub(super) fn check_translations_agree(guide: &[Source]) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    let Some(f) = guide.first() else {
        return errors;
    };
    for s in &guide[1..] {
        match () {
            () if f.summary.scenario_hash != s.summary.scenario_hash => {
                let pages = f.page().and_then(|a| Ok((a, s.page()?)));
                let found = pages
                    .as_ref()
                    .ok()
                    .and_then(|(a, b)| content::agree::first_difference(a, b));
                let (message, line) = match found {
                    Some(d) => (
                        format!(
                            "the translations disagree on `{}`: `{}` in {}, `{}` here",
                            d.key,
                            d.first,
                            f.src.shown().display(),
                            d.second
                        ),
                        d.line,
                    ),
                    None => (
                        format!(
                            "the translations disagree on the scenario or variants: {} and {} must have the same `scenario:` and variant `id`/`set:` values",
                            f.src.shown().display(),
                            s.src.shown().display()
                        ),
                        1,
                    ),
                };
                let mut d = Diagnostic::error(message)
                    .in_file(s.src.shown())
                    .at(line, 1)
                    .with_help("a guide's translations share one scenario; only titles, prose and variant labels differ");
                if let Ok((_, b)) = &pages {
                    d = d.with_source(b.text.clone());
                }
                errors.push(d);
            }
            () => {}
        }
    }
    errors
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
