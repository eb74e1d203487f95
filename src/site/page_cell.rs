//! The page a build read, kept for the stages that need it after the scan (guide data, render,
//! a translation's notices), so a page is read from disk once per build, within a budget of
//! text ([`KEPT_TEXT_BYTES`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::stamp::FileStat;
use crate::content::Page;
use crate::diagnostics::Diagnostic;

/// A source page as read from disk, at most once per build: the scan keeps the page it read (to
/// hash it), and a page the scan did not need is read by the first stage that does. Dropped with
/// the plan, so a build holds the text of the pages it reads, never a served site's between
/// builds.
#[derive(Debug, Clone, Default)]
pub(crate) struct PageCell(Arc<Mutex<Option<Arc<Page>>>>);

impl PageCell {
    pub(super) fn holding(page: Page) -> PageCell {
        PageCell(Arc::new(Mutex::new(Some(Arc::new(page)))))
    }

    /// True when the cell holds a page.
    pub(super) fn holds(&self) -> bool {
        self.0.lock().is_ok_and(|held| held.is_some())
    }

    /// True when the cell holds no page, or one whose text `kept` still has room for (taken).
    pub(super) fn fits(&self, kept: &KeptText) -> bool {
        let held = match self.0.lock() {
            Ok(held) => held.as_ref().map_or(0, |p| p.text.len()),
            Err(_) => 0,
        };
        held == 0 || kept.take(held)
    }

    /// Lets the page go (it rendered and nothing else of the build reads it), so a build holds
    /// the text of the pages still to render, not of all it read.
    pub(crate) fn release(&self) {
        match self.0.lock() {
            Ok(mut held) => *held = None,
            Err(poisoned) => *poisoned.into_inner() = None,
        }
    }
}

/// The most bytes of page text a build keeps from its scan for rendering (64 MiB: about 10,000
/// pages of the bench's corpus). Pages read beyond it are let go and read again when they render,
/// so a site of any size builds in bounded memory; below it, every page is read once.
pub(crate) const KEPT_TEXT_BYTES: usize = 64 << 20;

/// How much page text a scan still keeps (see [`KEPT_TEXT_BYTES`]), shared by its threads.
pub(super) struct KeptText(std::sync::atomic::AtomicUsize);

impl KeptText {
    pub(super) fn new() -> KeptText {
        KeptText(std::sync::atomic::AtomicUsize::new(KEPT_TEXT_BYTES))
    }

    /// Takes `bytes` from what is left, if that much is.
    fn take(&self, bytes: usize) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        (self.0)
            .fetch_update(Relaxed, Relaxed, |left| left.checked_sub(bytes))
            .is_ok()
    }
}

impl PageCell {
    /// The page held, or the one `load` reads now (held from then on; other stages asking
    /// meanwhile wait for it).
    pub(super) fn get_or(
        &self,
        load: impl FnOnce() -> Result<Page, Vec<Diagnostic>>,
    ) -> Result<Arc<Page>, Vec<Diagnostic>> {
        let mut held = match self.0.lock() {
            Ok(held) => held,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(p) = held.as_ref() {
            return Ok(p.clone());
        }
        let page = Arc::new(load()?);
        *held = Some(page.clone());
        Ok(page)
    }
}

/// What the scan made of each page it read this build (`S`: the source, with its page cell), by
/// path, so a second planning pass (every guide planned, when an index or the sitemap must
/// render) takes it as it was instead of reading, hashing and summarizing the page again: the
/// page's previous entry is the same in both passes, and so is the result.
pub(super) struct ReadOnce<S>(Mutex<HashMap<PathBuf, (Option<FileStat>, S)>>);

impl<S: Clone> ReadOnce<S> {
    pub(super) fn new() -> ReadOnce<S> {
        ReadOnce(Mutex::new(HashMap::new()))
    }

    /// What an earlier pass made of the page at `path` when its stat was `stat` too, else what
    /// `read` makes of it now (remembered when `read_now` says it read the page).
    pub(super) fn get_or<E>(
        &self,
        path: PathBuf,
        stat: Option<FileStat>,
        read: impl FnOnce() -> Result<S, E>,
        read_now: impl Fn(&S) -> bool,
    ) -> Result<S, E> {
        let earlier = self.0.lock().ok().and_then(|memo| {
            (memo.get(&path))
                .filter(|(s, _)| *s == stat)
                .map(|(_, done)| done.clone())
        });
        if let Some(done) = earlier {
            return Ok(done);
        }
        let done = read()?;
        if read_now(&done) {
            if let Ok(mut memo) = self.0.lock() {
                memo.insert(path, (stat, done.clone()));
            }
        }
        Ok(done)
    }
}
