//! Watching the site's sources: `content/`, `templates/`, `locales/`, `data/`, `static/` and
//! `vramdoc.yaml` under the root, debounced, ignoring the output folder and editor scratch files.
//!
//! The root itself is watched without recursion (to see `vramdoc.yaml` and the source folders
//! appear or vanish) and each source folder recursively, so a large `target/` or `public/` beside
//! them costs nothing.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use notify_debouncer_full::notify::event::{AccessKind, AccessMode};
use notify_debouncer_full::notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{new_debouncer, DebounceEventResult, Debouncer, RecommendedCache};

use crate::diagnostics::Diagnostic;

/// The source folders under the root that trigger a rebuild.
pub(crate) use crate::site_paths::SOURCE_DIRS as WATCHED_DIRS;

/// The configuration file under the root.
pub(crate) use crate::config::CONFIG_FILE;

/// How long the file system must be quiet before a batch of changes is reported.
const DEBOUNCE: Duration = Duration::from_millis(100);

/// The watcher has stopped delivering events.
#[derive(Debug)]
pub(crate) struct Disconnected;

/// A running watcher over one site root.
pub(crate) struct Watch {
    debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
    events: Receiver<DebounceEventResult>,
    root: PathBuf,
    out: PathBuf,
    watched: BTreeSet<&'static str>,
}

impl Watch {
    /// Starts watching `root` (absolute); changes under `out` (absolute) are ignored.
    pub(crate) fn start(root: &Path, out: &Path) -> Result<Watch, Diagnostic> {
        let (tx, rx) = mpsc::channel();
        let cannot = |e: &dyn std::fmt::Display| {
            Diagnostic::error(format!("cannot watch {} for changes: {e}", root.display()))
                .with_help("check that the folder exists and is readable (on Linux, raise fs.inotify.max_user_watches if it is exhausted)")
        };
        let mut debouncer = new_debouncer(DEBOUNCE, None, tx).map_err(|e| cannot(&e))?;
        debouncer
            .watch(root, RecursiveMode::NonRecursive)
            .map_err(|e| cannot(&e))?;
        let mut watch = Watch {
            debouncer,
            events: rx,
            root: root.to_path_buf(),
            out: out.to_path_buf(),
            watched: BTreeSet::new(),
        };
        watch.refresh_dirs(&BTreeSet::new());
        Ok(watch)
    }

    /// Waits up to `timeout` for a batch of changes and returns the changed source paths
    /// (relative to the root, sorted, without duplicates; empty when nothing relevant changed) and
    /// whether the list may be incomplete (the watcher lost events or reported an error).
    pub(crate) fn changes(
        &mut self,
        timeout: Duration,
    ) -> Result<(Vec<PathBuf>, bool), Disconnected> {
        let first = match self.events.recv_timeout(timeout) {
            Ok(batch) => batch,
            Err(RecvTimeoutError::Timeout) => return Ok((Vec::new(), false)),
            Err(RecvTimeoutError::Disconnected) => return Err(Disconnected),
        };
        let mut incomplete = false;
        let mut changed = BTreeSet::new();
        let mut rearm = BTreeSet::new();
        let mut batch = Some(first);
        while let Some(result) = batch.take() {
            match result {
                Ok(events) => {
                    for event in events {
                        incomplete |= event.need_rescan();
                        if !relevant_kind(&event.kind) {
                            continue;
                        }
                        for path in &event.paths {
                            let Some(rel) = relevant_path(&self.root, &self.out, path) else {
                                continue;
                            };
                            let created_or_removed =
                                matches!(event.kind, EventKind::Create(_) | EventKind::Remove(_));
                            if let Some(dir) = WATCHED_DIRS.iter().find(|d| rel == Path::new(d)) {
                                if created_or_removed {
                                    rearm.insert(*dir);
                                }
                            }
                            changed.insert(rel);
                        }
                    }
                }
                Err(errors) => {
                    incomplete = true;
                    for e in errors {
                        crate::terminal::eprint_line(&format!("warning: file watcher: {e}"));
                    }
                }
            }
            batch = self.events.try_recv().ok();
        }
        self.refresh_dirs(&rearm);
        Ok((changed.into_iter().collect(), incomplete))
    }

    /// Starts watching source folders that appeared, forgets those that vanished, and re-arms
    /// the folders in `rearm` (created or removed, perhaps both, since the last look).
    fn refresh_dirs(&mut self, rearm: &BTreeSet<&'static str>) {
        for dir in WATCHED_DIRS {
            let path = self.root.join(dir);
            if self.watched.contains(dir) && (rearm.contains(dir) || !path.is_dir()) {
                let _ = self.debouncer.unwatch(&path);
                self.watched.remove(dir);
            }
            if path.is_dir() && !self.watched.contains(dir) {
                match self.debouncer.watch(&path, RecursiveMode::Recursive) {
                    Ok(()) => {
                        self.watched.insert(dir);
                    }
                    Err(e) => crate::terminal::eprint_line(&format!(
                        "warning: cannot watch {}: {e}",
                        crate::terminal::visible_line(&path.display().to_string())
                    )),
                }
            }
        }
    }
}

/// True for events that can change a file's contents or existence (not reads, not opens).
fn relevant_kind(kind: &EventKind) -> bool {
    match kind {
        EventKind::Any | EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_) => true,
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) | EventKind::Other => false,
    }
}

/// `path` relative to `root` when a change there should trigger a rebuild.
fn relevant_path(root: &Path, out: &Path, path: &Path) -> Option<PathBuf> {
    if path.starts_with(out) {
        return None;
    }
    let rel = path.strip_prefix(root).ok()?;
    let first = match rel.components().next()? {
        Component::Normal(name) => name.to_str()?,
        _ => return None,
    };
    if rel == Path::new(CONFIG_FILE) {
        return Some(rel.to_path_buf());
    }
    if !WATCHED_DIRS.contains(&first) {
        return None;
    }
    let name = rel.file_name()?.to_string_lossy();
    let scratch = name.ends_with('~')
        || name.starts_with(".#")
        || name == "4913"
        || [".swp", ".swx", ".swo", ".tmp"]
            .iter()
            .any(|ext| name.ends_with(ext));
    (!scratch).then(|| rel.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify_debouncer_full::notify::event::{CreateKind, DataChange, ModifyKind};

    #[test]
    fn sources_count_and_everything_else_does_not() {
        let root = Path::new("/site");
        let out = Path::new("/site/content/public");
        let rel = |p: &str| relevant_path(root, out, &root.join(p));
        assert_eq!(rel("vramdoc.yaml"), Some(PathBuf::from("vramdoc.yaml")));
        assert_eq!(
            rel("content/a/en.md"),
            Some(PathBuf::from("content/a/en.md"))
        );
        assert_eq!(
            rel("templates/base.html"),
            Some(PathBuf::from("templates/base.html"))
        );
        assert_eq!(rel("static"), Some(PathBuf::from("static")));
        for ignored in [
            "public/index.html",
            "target/debug/x",
            ".public.staging-abc/index.html",
            "README.md",
            "content/public/en/index.html",
            "content/a/en.md~",
            "content/a/.en.md.swp",
            "content/a/4913",
            "content/a/.#en.md",
        ] {
            assert_eq!(rel(ignored), None, "{ignored}");
        }
        assert_eq!(
            relevant_path(root, out, Path::new("/elsewhere/content/a.md")),
            None
        );
    }

    #[test]
    fn reads_do_not_count_but_writes_do() {
        assert!(relevant_kind(&EventKind::Modify(ModifyKind::Data(
            DataChange::Content
        ))));
        assert!(relevant_kind(&EventKind::Create(CreateKind::File)));
        assert!(relevant_kind(&EventKind::Access(AccessKind::Close(
            AccessMode::Write
        ))));
        assert!(!relevant_kind(&EventKind::Access(AccessKind::Open(
            AccessMode::Any
        ))));
        assert!(!relevant_kind(&EventKind::Access(AccessKind::Close(
            AccessMode::Read
        ))));
        assert!(!relevant_kind(&EventKind::Other));
    }
}
