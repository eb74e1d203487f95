//! The records a build keeps of what it read and wrote: per guide its folder's stamp, its pages'
//! sources and outputs and its computed data; per site-wide job its output. The planner makes
//! them and the manifest stores them; neither is needed to read them.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::listing::Listed;
use super::stamp::{Digest, Stamp};

/// A site-wide job, as its manifest entry is keyed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) enum SiteJob {
    /// A language's index (with its Atom feed and 404 page).
    Index(String),
    /// The language chooser (with the root 404 page).
    Root,
    /// `sitemap.xml` and `llms.txt`.
    Sitemap,
    /// The static assets (`style.css`, favicon, scripts).
    Style,
    /// The part of a language's search index holding the guides of one manifest shard
    /// (`<lang>/search/<shard>.js`), so an edit re-indexes only the guides of its shard.
    Search(String, usize),
}

impl fmt::Display for SiteJob {
    /// `index:<lang>`, `root`, `sitemap`, `style`, `search:<lang>:<shard>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SiteJob::Index(lang) => write!(f, "index:{lang}"),
            SiteJob::Root => f.write_str("root"),
            SiteJob::Sitemap => f.write_str("sitemap"),
            SiteJob::Style => f.write_str("style"),
            SiteJob::Search(lang, shard) => write!(f, "search:{lang}:{shard:02x}"),
        }
    }
}

/// A job named on its own (not by its place in a plan): for messages, counts and removals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JobId {
    /// The page of guide `slug` in `lang`.
    Page { lang: String, slug: String },
    /// A site-wide job.
    Site(SiteJob),
}

impl JobId {
    /// The folder its recorded file names are relative to: `<lang>/<slug>/` for a page, the
    /// output root (empty) for the others.
    pub(crate) fn prefix(&self) -> String {
        match self {
            JobId::Page { lang, slug } => page_prefix(lang, slug),
            JobId::Site(_) => String::new(),
        }
    }
}

impl std::fmt::Display for JobId {
    /// `page:<lang>/<slug>`, or the site job's name (`index:<lang>`, `root`, ...).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobId::Page { lang, slug } => write!(f, "page:{lang}/{slug}"),
            JobId::Site(job) => job.fmt(f),
        }
    }
}

/// Outputs of the previous build whose job no longer exists (a deleted page or language).
#[derive(Debug, Clone)]
pub(crate) struct Removed {
    /// The job that wrote them.
    pub(crate) id: JobId,
    /// What it wrote (file names relative to `id.prefix()`).
    pub(crate) entry: JobEntry,
}

/// The output folder of a page, with a trailing `/`.
pub(crate) fn page_prefix(lang: &str, slug: &str) -> String {
    format!("{lang}/{slug}/")
}

/// A guide folder as the previous build saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GuideEntry {
    /// The folder's stamp when listed; unchanged, its list of pages is reused without listing it
    /// again (adding, removing or renaming a file changes a folder's stamp).
    pub(crate) folder: Option<Stamp>,
    /// Per language (sorted): the page's source and output. A vector, not a map: a guide has a
    /// few pages, and a 10,000-guide manifest decodes much faster without a tree node per guide.
    pub pages: Vec<(String, PageEntry)>,
    /// The guide's computed data, when it has a scenario.
    pub(crate) data: Option<DataEntry>,
    /// Its translation records file (`translations.yaml`), when it has one.
    pub(crate) records: Option<RecordsEntry>,
}

/// A guide's translation records file as a build read it: its stamp and hash (so it is read
/// again only when they change) and, per language, each section's recorded source hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RecordsEntry {
    pub(crate) stamp: Option<Stamp>,
    pub(crate) hash: Digest,
    pub(crate) recorded: Vec<(String, Vec<(String, Digest)>)>,
}

/// One page: what its source was and what its job wrote (file names relative to the page's
/// folder `<lang>/<slug>/`), kept together so a build finds both without a lookup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageEntry {
    /// The source file.
    pub source: SourceEntry,
    /// The page job's entry.
    pub(crate) output: Option<JobEntry>,
    /// The guides before and after it in its language's index when it was planned: kept, so an
    /// edit planned with shards closed (the listing unchanged, so the neighbours too) still has
    /// them.
    pub(crate) neighbours: Option<Neighbours>,
}

/// A page's neighbours in its language's index order (see [`Listed::index_order`]): what its
/// previous/next links show.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct Neighbours {
    /// The guide listed before it (newer, or the same date and an earlier slug).
    pub(crate) previous: Option<NavLink>,
    /// The guide listed after it.
    pub(crate) next: Option<NavLink>,
}

/// A link to another guide in the same language.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct NavLink {
    /// The guide's slug.
    pub(crate) slug: String,
    /// Its page's title in that language.
    pub(crate) title: String,
}

/// A source file's hash and the parts of its front matter other outputs depend on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceEntry {
    /// blake3 of the file's bytes.
    pub(crate) hash: Digest,
    /// The file's stamp when hashed: unchanged, the file is not read again.
    pub stamp: Option<Stamp>,
    /// The index entry built from it.
    pub(crate) summary: Summary,
}

/// The parts of a page that indexes and the sitemap show.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct Summary {
    /// Title.
    pub(crate) title: String,
    /// `date:`.
    pub(crate) date: Option<String>,
    /// `description:`.
    pub(crate) description: Option<String>,
    /// `updated:` (else `date:`), for translation status.
    pub(crate) updated: Option<String>,
    /// Hash of the page's `scenario:` and variant ids/overrides; `None` without a scenario.
    pub(crate) scenario_hash: Option<Digest>,
    /// True when the body reads other GPUs (`catalog.`), so the page depends on the catalog.
    pub(crate) uses_catalog: bool,
    /// Its sections' ids and normalized hashes, for translation staleness: computed only for
    /// the pages of guides with a translation records file (`None`: not computed).
    pub(crate) sections: Option<Vec<crate::translations::status::SourceSection>>,
}

impl Summary {
    /// What listings show of the page of guide `slug` in `lang` with this summary.
    pub(crate) fn listed<'a>(&'a self, slug: &'a str, lang: &'a str) -> Listed<'a> {
        Listed {
            slug,
            lang,
            title: &self.title,
            date: self.date.as_deref(),
            description: self.description.as_deref(),
        }
    }
}

/// A guide's scenario inputs and the hash of what they computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DataEntry {
    /// Hash of scenario, variants, GPU catalog and estimator version.
    pub(crate) inputs: Digest,
    /// Hash of the computed data (what pages actually show).
    pub(crate) data: Digest,
}

/// One output job: the hash of its inputs and the files it wrote, with their hashes (paths
/// relative to the job's folder: the site root, or a page's `<lang>/<slug>/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JobEntry {
    /// Hash of everything the job's outputs depend on.
    pub(crate) inputs: Digest,
    /// Output paths (relative, `/`-separated, sorted) and the hash of their bytes.
    pub(crate) files: Vec<(String, Digest)>,
}

impl JobEntry {
    /// The recorded hash of output `path`.
    pub(crate) fn file(&self, path: &str) -> Option<&Digest> {
        self.files.iter().find(|(p, _)| p == path).map(|(_, h)| h)
    }

    /// The output paths.
    pub(crate) fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|(p, _)| p.as_str())
    }
}

/// Sorts a guide's languages into the site's order (how its page jobs, language switcher and
/// sitemap entries list its translations).
pub(crate) fn sort_in_site_order<T: AsRef<str>>(langs: &mut [T], site: &[String]) {
    langs.sort_by_key(|l| site.iter().position(|x| x == l.as_ref()));
}
