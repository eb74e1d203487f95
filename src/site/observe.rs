//! The observe stage of a plan: what is known before any guide is read. Without a watcher's
//! word every guide folder and page is statted while the previous build's records are read on
//! another thread; with it (`serve` keeps its records in memory) only the reported guides are
//! looked at. Either way the store says which guides are known unchanged ([`Closed`]).
//!
//! A build that stats everything also stats each page's `index.html` in the output folder and
//! each language's index: an output deleted by hand (`rm -rf public/en`) makes the build verify
//! every recorded output, as `check` does, and render what is missing. One `stat` per page, in
//! parallel with the sources' (a no-change build of 1,000 guides: see the README).

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use super::request::{Previous, Request, Scan};
use super::scan::{changed_guides, known_folders, ContentDir, FolderMeta};
use super::store::{Closed, Context};
use super::SiteContext;
use crate::content::{self, GuideFolder};
use crate::diagnostics::Diagnostic;

/// What a plan finds before reading any guide: the previous build, the guide folders (with their
/// stats, unless a watcher's word made them unnecessary), the guides the watcher reported, and
/// the guides known unchanged.
pub(super) struct Observed<'a> {
    pub(super) previous: Previous,
    pub(super) folders: Vec<(GuideFolder, Option<FolderMeta>)>,
    pub(super) changed_guides: Option<BTreeSet<&'a str>>,
    pub(super) closed: Closed,
    /// True when a page's or a language's `index.html` is missing from the output folder.
    pub(super) outputs_missing: bool,
}

/// Without a watcher's word, every folder and page is statted while the previous manifest is
/// read on another thread (the two together are most of a no-change build). With it (`serve`
/// remembers its manifest), only the guides it reported are looked at.
pub(super) fn observe<'a>(
    site: &SiteContext,
    request: &Request<'a>,
    previous: impl FnOnce() -> Previous + Send,
    content_dir: &ContentDir,
    context: &Context,
) -> Result<Observed<'a>, Vec<Diagnostic>> {
    let root = request.root;
    let langs = &site.config.languages;
    let out = OutputDir::open(request.out);
    let missing = AtomicBool::new(langs.iter().any(|l| !out.has(&format!("{l}/index.html"))));
    let stat_all = || {
        content::guide_folders(root).map(|folders| {
            folders
                .into_par_iter()
                .map(|f| {
                    let meta = FolderMeta::of(&f, content_dir, &site.config);
                    let gone = langs.iter().zip(&meta.pages).any(|(l, page)| {
                        page.is_some() && !out.has(&format!("{l}/{}/index.html", f.name))
                    });
                    if gone {
                        missing.store(true, Ordering::Relaxed);
                    }
                    (f, Some(meta))
                })
                .collect::<Vec<_>>()
        })
    };
    let mut closed = Closed::none();
    let (previous, folders, changed_guides) = match request.scan {
        Scan::Only(paths) => {
            let previous = previous();
            match (&previous, changed_guides(paths)) {
                (Previous::Remembered(m), Some(changed)) => {
                    // Guides the watcher did not report are unchanged: their entries stay as they are.
                    if let Some(on_disk) = m.stored() {
                        closed = Closed::by_watcher(&on_disk, &changed, context);
                    }
                    // Every known folder, closed guides' too: a second pass may need them.
                    let folders = known_folders(root, m.guides.keys(), &changed);
                    let folders = folders.into_iter().map(|f| (f, None)).collect();
                    (previous, Ok(folders), Some(changed))
                }
                _ => (previous, stat_all(), None),
            }
        }
        Scan::Everything => {
            let (previous, folders) = rayon::join(previous, stat_all);
            (previous, folders, None)
        }
    };
    // Only a full scan looks at every page's output.
    let outputs_missing = changed_guides.is_none() && missing.into_inner();
    Ok(Observed {
        previous,
        folders: folders.map_err(|e| vec![e])?,
        changed_guides,
        closed,
        outputs_missing,
    })
}

/// The output folder, open where the platform allows, to stat outputs relative to it.
struct OutputDir {
    path: std::path::PathBuf,
    #[cfg(unix)]
    fd: Option<rustix::fd::OwnedFd>,
}

impl OutputDir {
    fn open(out: &Path) -> OutputDir {
        OutputDir {
            path: out.to_path_buf(),
            #[cfg(unix)]
            fd: {
                use rustix::fs::{Mode, OFlags};
                let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
                rustix::fs::open(out, flags, Mode::empty()).ok()
            },
        }
    }

    /// True when `rel` exists in the output folder.
    fn has(&self, rel: &str) -> bool {
        #[cfg(unix)]
        if let Some(fd) = &self.fd {
            return rustix::fs::statat(fd, rel, rustix::fs::AtFlags::empty()).is_ok();
        }
        self.path.join(rel).exists()
    }
}
