//! The observe stage of a plan: what is known before any guide is read. Without a watcher's
//! word every guide folder and page is statted while the previous build's records are read on
//! another thread; with it (`serve` keeps its records in memory) only the reported guides are
//! looked at. Either way the store says which guides are known unchanged ([`Closed`]).
//!
//! A build that stats everything also lists each language's folder in the output: a language's
//! folder or index, or a page's folder, deleted by hand (`rm -rf public/en`) makes the build
//! verify every recorded output, as `check` does, and render what is missing. One directory
//! listing per language, not a `stat` per page (3,000 of those doubled a no-change build of
//! 1,000 guides).

use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use rayon::prelude::*;

use super::request::{PlanRequest, Previous, Scan};
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
    request: &PlanRequest<'a>,
    previous: impl FnOnce() -> Previous + Send,
    content_dir: &ContentDir,
    context: &Context,
) -> Result<Observed<'a>, Vec<Diagnostic>> {
    let root = request.root;
    let langs = &site.config.languages;
    let listings = output_listings(request.out, langs);
    let built = built_at(request.out);
    let touched = |p: &Path| built.is_some_and(|t| modified_after(p, t));
    let root_touched = touched(request.out) || langs.iter().any(|l| touched(&request.out.join(l)));
    let missing = AtomicBool::new(listings.iter().any(Option::is_none) || root_touched);
    let stat_all =
        || {
            content::guide_folders(root).map(|folders| {
                folders
                    .into_par_iter()
                    .map(|f| {
                        let meta = FolderMeta::of(&f, content_dir, &site.config);
                        let gone = listings.iter().zip(&meta.pages).zip(langs).any(
                            |((names, page), lang)| {
                                page.is_some()
                                    && names.as_ref().is_some_and(|n| {
                                        !n.contains(&f.name)
                                            || touched(&request.out.join(lang).join(&f.name))
                                    })
                            },
                        );
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

/// When the last build finished changing the output folder: the modification time of the
/// manifest's folder, whose `dirty` mark a build removes after moving its files in (and whose
/// shards a first build writes after its pages). `None` without a manifest.
fn built_at(out: &Path) -> Option<SystemTime> {
    std::fs::metadata(out.join(super::manifest::DIR))
        .and_then(|m| m.modified())
        .ok()
}

/// Whether the folder `p` changed after `t`: a file in it was deleted, added or renamed since
/// the last build (by hand, or by another program); one `stat`. File times come from the
/// kernel's coarse clock (a tick of up to 10 ms), so a change in the very tick of the last
/// build's final write is not seen here; `vramdoc check` still reports what is missing.
fn modified_after(p: &Path, t: SystemTime) -> bool {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .is_ok_and(|m| m > t)
}

/// What the output folder holds, per language (in site order): the names in `<out>/<lang>/`
/// (one directory listing each), or `None` when the language's folder or its `index.html` is
/// gone.
fn output_listings(out: &Path, langs: &[String]) -> Vec<Option<HashSet<String>>> {
    langs
        .iter()
        .map(|l| {
            let dir = out.join(l);
            let names: HashSet<String> = std::fs::read_dir(&dir)
                .ok()?
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.contains("index.html").then_some(names)
        })
        .collect()
}
