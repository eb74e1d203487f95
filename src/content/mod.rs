//! Finding and reading guides: `content/<guide>/<lang>.md`.
//!
//! The folder name is the guide's slug; the file stem is its language and must equal the front
//! matter's `lang`. Reading normalizes a UTF-8 byte-order mark and CRLF line endings away.

pub(crate) mod agree;
pub(crate) mod dates;
pub(crate) mod front_matter;
pub(crate) mod published;
pub mod variants;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::SiteConfig;
use crate::diagnostics::Diagnostic;
pub(crate) use front_matter::FrontMatter;
pub use variants::Variant;

/// Where one page's source lives: `content/<slug>/<lang>.md`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PageSource {
    /// The guide's slug (its folder name).
    pub(crate) slug: String,
    /// The language (the file stem).
    pub(crate) lang: String,
    /// The guide's folder on disk (shared by its pages).
    pub(crate) dir: Arc<Path>,
}

impl PageSource {
    /// The file on disk.
    pub(crate) fn path(&self) -> PathBuf {
        self.dir.join(format!("{}.md", self.lang))
    }

    /// The path shown in messages: `content/<slug>/<lang>.md`.
    pub(crate) fn shown(&self) -> PathBuf {
        PathBuf::from(format!("content/{}/{}.md", self.slug, self.lang))
    }
}

/// A parsed page: front matter plus the Markdown body.
#[derive(Debug, Clone)]
pub struct Page {
    /// Where it came from.
    pub(crate) src: PageSource,
    /// The whole normalized text (for error snippets).
    pub(crate) text: Arc<str>,
    /// The typed front matter.
    pub(crate) front: FrontMatter,
    /// Byte offset of the body in `text`.
    pub(crate) body_offset: usize,
    /// 1-based line of the body's first line.
    pub(crate) body_line: usize,
    /// The body's translation sections as (id, start, heading end), once split
    /// (`translations::sections::of_page`): the page's summary and a translation's notices
    /// share one parse of it.
    pub(crate) sections: std::sync::OnceLock<Vec<(String, usize, usize)>>,
}

impl Page {
    /// The Markdown body.
    pub(crate) fn body(&self) -> &str {
        &self.text[self.body_offset..]
    }
}

/// True for a valid slug: lower-case ASCII letters, digits and single inner hyphens.
pub(crate) fn is_valid_slug(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
        && !s.contains("--")
}

/// A guide folder under `content/`: its name and path (not yet checked to be a valid slug).
#[derive(Debug, Clone)]
pub(crate) struct GuideFolder {
    /// The folder name (the guide's slug when valid).
    pub(crate) name: String,
    /// The folder on disk.
    pub(crate) path: PathBuf,
}

/// The guide folders under `root/content`, sorted by name (hidden folders skipped). One
/// directory listing; the entry's file type comes with it, so no `stat` per guide.
pub(crate) fn guide_folders(root: &Path) -> Result<Vec<GuideFolder>, Diagnostic> {
    let content = crate::site_paths::SitePaths::new(root).content();
    let entries = std::fs::read_dir(&content).map_err(|e| {
        Diagnostic::error(format!("cannot read the content folder: {e}"))
            .in_file(crate::site_paths::CONTENT_DIR)
            .with_help("guides live in content/<guide>/<lang>.md")
    })?;
    let mut dirs: Vec<GuideFolder> = entries
        .flatten()
        .filter(|e| {
            e.file_type()
                .is_ok_and(|t| t.is_dir() || (t.is_symlink() && e.path().is_dir()))
        })
        .map(|e| GuideFolder {
            name: e.file_name().to_string_lossy().into_owned(),
            path: e.path(),
        })
        .filter(|f| !f.name.starts_with('.'))
        .collect();
    dirs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(dirs)
}

/// The source of page `lang` of guide `slug` in folder `dir`.
pub fn page_source(slug: &str, lang: &str, dir: &Arc<Path>) -> PageSource {
    PageSource {
        slug: slug.to_string(),
        lang: lang.to_string(),
        dir: dir.clone(),
    }
}

/// The pages of one guide folder, sorted by language, or why it is not a guide.
pub(crate) fn list_guide(
    folder: &GuideFolder,
    config: &SiteConfig,
) -> (Vec<PageSource>, Vec<Diagnostic>) {
    let (name, dir) = (&folder.name, &folder.path);
    if !is_valid_slug(name) {
        return (Vec::new(), vec![invalid_slug(name)]);
    }
    let Ok(files) = std::fs::read_dir(dir) else {
        let e =
            Diagnostic::error("cannot read the guide folder").in_file(format!("content/{name}"));
        return (Vec::new(), vec![e]);
    };
    // `dir` is `<root>/content/<name>`.
    let root = dir
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("."));
    if let Err(e) = check_linked_folder(root, folder, config) {
        return (Vec::new(), vec![e]);
    }
    let shared: Arc<Path> = Arc::from(dir.as_path());
    let mut files: Vec<(PathBuf, bool)> = files
        .flatten()
        .map(|e| (e.path(), e.file_type().is_ok_and(|t| t.is_symlink())))
        .collect();
    files.sort();
    let (mut pages, mut errors) = (Vec::new(), Vec::new());
    for (file, symlink) in files {
        // The guide's translation records (`vramdoc translations mark`), read by the build on
        // their own (`site::translated`): part of a guide folder, not a page.
        if file
            .file_name()
            .is_some_and(|n| n == crate::translations::records::RECORDS_FILE)
        {
            continue;
        }
        if file.extension().is_none_or(|x| x != "md") {
            errors.extend(unread_page(name, &file, config));
            continue;
        }
        match guide_page(root, name, &shared, &file, symlink, config) {
            Ok(page) => pages.push(page),
            Err(e) => errors.push(e),
        }
    }
    if pages.is_empty() && errors.is_empty() {
        errors.push(
            Diagnostic::warning(format!("guide folder `{name}` has no page; it is skipped"))
                .in_file(format!("content/{name}"))
                .with_help(format!(
                    "add a page named after a language ({}), or remove the folder",
                    config
                        .languages
                        .iter()
                        .map(|l| format!("{l}.md"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
        );
    }
    (pages, errors)
}

/// Extensions other Markdown tools use: a file with one in a guide folder was meant as a page.
const MARKDOWN_LIKE: [&str; 6] = ["markdown", "mdown", "mkd", "mkdn", "mdx", "mdtext"];

/// A warning for a file in guide folder `name` that looks like a page but is not read: a
/// Markdown file with another extension (`en.markdown`), or a file named after a language with
/// any other extension (`es.txt`). Other files (images, notes) are left alone.
fn unread_page(name: &str, file: &Path, config: &SiteConfig) -> Option<Diagnostic> {
    let file_name = file.file_name()?.to_string_lossy();
    if file_name.starts_with('.') {
        return None;
    }
    let ext = file.extension().map(|x| x.to_string_lossy().to_lowercase());
    let stem = file.file_stem()?.to_string_lossy();
    let markdown_like = ext
        .as_deref()
        .is_some_and(|x| MARKDOWN_LIKE.contains(&x) || x == "md");
    let language = config.languages.iter().any(|l| *l == stem);
    (markdown_like || language).then(|| {
        Diagnostic::warning(format!(
            "`{file_name}` is not read: guide pages are named `<lang>.md`"
        ))
        .in_file(format!("content/{name}/{file_name}"))
        .with_help(format!(
            "rename it to `{stem}.md` if it is a page, or move it out of content/"
        ))
    })
}

/// Warnings for what `content/` holds besides guide folders: files (`content/notes.md`) and
/// hidden folders (`content/.drafts`), which no build reads. One directory listing.
pub(crate) fn ignored_entries(root: &Path) -> Vec<Diagnostic> {
    let content = crate::site_paths::SitePaths::new(root).content();
    let Ok(entries) = std::fs::read_dir(&content) else {
        return Vec::new();
    };
    let mut found: Vec<(String, bool)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            // The entry's type comes with the listing; only a symlink costs a `stat`.
            let dir = e
                .file_type()
                .is_ok_and(|t| t.is_dir() || (t.is_symlink() && e.path().is_dir()));
            (name.starts_with('.') == dir && !(dir && name == ".")).then_some((name, dir))
        })
        .collect();
    found.sort();
    found
        .into_iter()
        .map(|(name, dir)| {
            let (what, help) = if dir {
                (
                    format!("the hidden folder `content/{name}` is not read"),
                    "guides live in content/<guide>/<lang>.md; rename it without the dot to publish it".to_string(),
                )
            } else {
                (
                    format!("`content/{name}` is not read: only folders hold guides"),
                    "move it into a guide folder (content/<guide>/<lang>.md), or out of content/"
                        .to_string(),
                )
            };
            Diagnostic::warning(what)
                .in_file(format!("content/{name}"))
                .with_help(help)
        })
        .collect()
}

/// The error for a guide folder whose name is not a valid slug, with a suggested name.
fn invalid_slug(name: &str) -> Diagnostic {
    Diagnostic::error(format!(
        "guide folder `{name}` is not a valid slug (lower-case letters, digits and hyphens)"
    ))
    .in_file(format!("content/{name}"))
    .with_help(format!("rename it, e.g. to `{}`", suggest_slug(name)))
}

/// A guide folder that is a symlink, or inside a symlinked `content/`, must stay inside the
/// site unless `follow_external_symlinks` is set.
fn check_linked_folder(
    root: &Path,
    folder: &GuideFolder,
    config: &SiteConfig,
) -> Result<(), Diagnostic> {
    let (name, dir) = (&folder.name, &folder.path);
    let is_link = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_symlink());
    if is_link(dir) || dir.parent().is_some_and(is_link) {
        crate::site_files::check_inside(
            root,
            dir,
            Path::new(&format!("content/{name}")),
            config.follow_external_symlinks,
        )?;
    }
    Ok(())
}

/// The page of Markdown file `file` in guide `name`: its stem must be a configured language,
/// and a symlinked file must stay inside the site.
fn guide_page(
    root: &Path,
    name: &str,
    dir: &Arc<Path>,
    file: &Path,
    symlink: bool,
    config: &SiteConfig,
) -> Result<PageSource, Diagnostic> {
    let lang = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let shown = PathBuf::from(format!("content/{name}/{lang}.md"));
    if !config.languages.contains(&lang) {
        return Err(Diagnostic::error(format!(
            "`{lang}.md` is not a configured language (the site has {})",
            config.languages.join(", ")
        ))
        .in_file(&shown)
        .with_help("name guide files after a language in vramdoc.yaml, e.g. en.md"));
    }
    if symlink {
        let follow = config.follow_external_symlinks;
        crate::site_files::check_inside(root, file, &shown, follow)?;
    }
    Ok(page_source(name, &lang, dir))
}

/// Reads and parses one page, checking that its `lang` matches its file name.
pub(crate) fn load(src: &PageSource) -> Result<Page, Vec<Diagnostic>> {
    parse(src.clone(), &read_page(src)?)
}

/// Reads a page's bytes: the one function through which anything reads a guide page, so
/// [`page_reads`] can count how often a build reads each.
pub(crate) fn read_page(src: &PageSource) -> Result<Vec<u8>, Vec<Diagnostic>> {
    let path = src.path();
    if reads::COUNTING.load(std::sync::atomic::Ordering::Relaxed) {
        reads::count(&path);
    }
    crate::site_files::read(&path, &src.shown()).map_err(|e| vec![e])
}

/// How many times each page under `dir` was read since [`count_page_reads`] was called (a
/// test's check that a build reads each page once).
#[doc(hidden)]
pub fn page_reads(dir: &Path) -> Vec<(PathBuf, usize)> {
    reads::under(dir)
}

/// Starts counting page reads (off by default: the counts would grow with every build served).
#[doc(hidden)]
pub fn count_page_reads() {
    reads::COUNTING.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// The page-read counts behind [`page_reads`].
mod reads {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::AtomicBool;
    use std::sync::Mutex;

    pub(super) static COUNTING: AtomicBool = AtomicBool::new(false);
    static COUNTS: Mutex<BTreeMap<PathBuf, usize>> = Mutex::new(BTreeMap::new());

    pub(super) fn count(path: &Path) {
        if let Ok(mut counts) = COUNTS.lock() {
            *counts.entry(path.to_path_buf()).or_default() += 1;
        }
    }

    pub(super) fn under(dir: &Path) -> Vec<(PathBuf, usize)> {
        let Ok(counts) = COUNTS.lock() else {
            return Vec::new();
        };
        (counts.range(dir.to_path_buf()..))
            .take_while(|(p, _)| p.starts_with(dir))
            .map(|(p, n)| (p.clone(), *n))
            .collect()
    }
}

/// The largest page accepted, in bytes. Markdown parsing keeps about 100 bytes per line or
/// inline item, so a page of 2 million short lines would need hundreds of MiB; a long guide is
/// 50 KiB.
pub(crate) const MAX_PAGE_BYTES: usize = 1024 * 1024;

/// Parses a page's raw bytes.
pub fn parse(src: PageSource, bytes: &[u8]) -> Result<Page, Vec<Diagnostic>> {
    if bytes.len() > MAX_PAGE_BYTES {
        return Err(vec![Diagnostic::error(format!(
            "the page is {:.1} MiB; the limit is {} MiB",
            bytes.len() as f64 / (1024.0 * 1024.0),
            MAX_PAGE_BYTES / (1024 * 1024)
        ))
        .in_file(src.shown())
        .at(1, 1)
        .with_help("split it into several guides")]);
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        vec![Diagnostic::error("the file is not valid UTF-8")
            .in_file(src.shown())
            .at(line, 1)
            .with_help("save it as UTF-8")]
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text: Arc<str> = if text.contains('\r') {
        Arc::from(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Arc::from(text)
    };
    let split = front_matter::split(&text, &src.shown(), &text).map_err(|d| vec![d])?;
    let body_offset = text.len() - split.body.len();
    let body_line = split.body_line;
    let front = front_matter::parse(&split, &src.shown(), &text)?;
    if front.lang != src.lang {
        let line = front_matter::key_line(&split, "lang");
        return Err(vec![Diagnostic::error(format!(
            "`lang: {}` does not match the file name `{}.md`",
            front.lang, src.lang
        ))
        .in_file(src.shown())
        .at(line, 1)
        .with_source(text.clone())
        .with_help(format!(
            "set `lang: {}` or rename the file to `{}.md`",
            src.lang, front.lang
        ))]);
    }
    Ok(Page {
        src,
        text,
        front,
        body_offset,
        body_line,
        sections: std::sync::OnceLock::new(),
    })
}

fn suggest_slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}
