//! The one constructor of a pulldown-cmark parser over a guide's text ([`parser`]), and the
//! count of parses per page behind `tests/it/search.rs::a_build_parses_each_page_once`: a build
//! names the page it is working on ([`on_page`]) and every parser made meanwhile on that thread
//! counts for it.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use pulldown_cmark::Parser;

static COUNTING: AtomicBool = AtomicBool::new(false);
static COUNTS: Mutex<BTreeMap<PathBuf, usize>> = Mutex::new(BTreeMap::new());

thread_local! {
    /// The page this thread is working on, while [`on_page`] runs.
    static PAGE: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
}

/// A parser over `text` with the options every guide is parsed with ([`super::options`]);
/// counted for the page being worked on when counting is on.
pub(crate) fn parser(text: &str) -> Parser<'_> {
    count_one();
    Parser::new_ext(text, super::options())
}

/// Counts one parse for the page being worked on (a pass over a page's text made in several
/// parsers, such as section hashes, calls this once and parses with [`uncounted`]).
pub(crate) fn count_one() {
    if !COUNTING.load(Ordering::Relaxed) {
        return;
    }
    let page = PAGE.with(|p| p.borrow().clone());
    if let (Some(page), Ok(mut counts)) = (page, COUNTS.lock()) {
        *counts.entry(page).or_default() += 1;
    }
}

/// A parser [`count_one`] was already called for.
pub(crate) fn uncounted(text: &str) -> Parser<'_> {
    Parser::new_ext(text, super::options())
}

/// Runs `work` with the parses it makes on this thread counted for the page at `path()` (the
/// path `content::read_page` reads, asked for only when counting); nested calls count for the
/// innermost page.
pub(crate) fn on_page<T>(path: impl FnOnce() -> PathBuf, work: impl FnOnce() -> T) -> T {
    if !COUNTING.load(Ordering::Relaxed) {
        return work();
    }
    let outer = PAGE.with(|p| p.replace(Some(path())));
    let result = work();
    PAGE.with(|p| *p.borrow_mut() = outer);
    result
}

/// Starts counting parses (off by default: the counts would grow with every build served).
#[doc(hidden)]
pub fn count_parses() {
    COUNTING.store(true, Ordering::Relaxed);
}

/// How many times each page under `dir` was parsed since [`count_parses`] was called.
#[doc(hidden)]
pub fn parses_under(dir: &Path) -> Vec<(PathBuf, usize)> {
    let Ok(counts) = COUNTS.lock() else {
        return Vec::new();
    };
    (counts.range(dir.to_path_buf()..))
        .take_while(|(p, _)| p.starts_with(dir))
        .map(|(p, n)| (p.clone(), *n))
        .collect()
}
