//! Writing the output folder atomically.
//!
//! A build writes into a staging folder beside `--out`. A first build (or `--force`) swaps the
//! staging folder in (two renames); a later build moves single files in. Every change to `--out`
//! is journaled, and a file it replaces or removes is kept in the staging folder until the build
//! ends, so a failure half-way puts back what was already changed ([`Staging::rollback`]). A
//! failed build removes its staging folder. A folder not written by vramdoc is never replaced.
//!
//! One build at a time writes an output folder: it holds an [`OutputLock`] (on `.<name>.lock`
//! beside it) from before it reads the previous manifest until it ends, and [`Staging::new`]
//! removes staging folders that killed builds left behind (only folders named like vramdoc's and
//! holding its [`MARKER`]).

use std::collections::HashMap;
use std::fs::File;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::OutputState;
use crate::diagnostics::Diagnostic;

/// The marker file every output and staging folder carries; its presence allows replacing (or
/// cleaning up) the folder.
pub(crate) const MARKER: &str = ".vramdoc-build";

/// What [`MARKER`] says.
const MARKER_TEXT: &[u8] =
    b"This folder is written by vramdoc; `vramdoc build` replaces it whole.\n";

/// Where, inside the staging folder, the files a build replaces or removes are kept until it ends.
const REPLACED: &str = ".vramdoc-replaced";

/// One change made to the output folder, as needed to undo it.
#[derive(Debug)]
enum OutputChange {
    /// A file moved in at `rel`; what was there before is at `backup`.
    MovedIn {
        rel: String,
        backup: Option<PathBuf>,
    },
    /// The file at `rel` was moved to `backup`.
    Removed { rel: String, backup: PathBuf },
    /// The output folder created this (empty before the move).
    MadeDir(PathBuf),
    /// The output folder removed this empty folder.
    RemovedDir(PathBuf),
}

/// A staging folder that becomes the output folder on [`Staging::commit`].
#[derive(Debug)]
pub(crate) struct Staging {
    out: PathBuf,
    dir: PathBuf,
    committed: bool,
    /// Changes made to `out` so far, oldest first.
    journal: Mutex<Vec<OutputChange>>,
    /// How many times each output path was set aside (see [`Staging::set_aside`]).
    aside: Mutex<HashMap<String, usize>>,
}

/// The lock on an output folder (see [`OutputLock::take`]); released when dropped, or when the
/// process ends however it ends.
#[derive(Debug)]
pub(crate) struct OutputLock {
    _file: File,
}

impl OutputLock {
    /// Takes the exclusive lock of the output folder `out` (on `.<name>.lock` beside it),
    /// waiting, and saying so to `notify`, while another build holds it.
    pub(crate) fn take(out: &Path, notify: fn(&str)) -> Result<OutputLock, Diagnostic> {
        let parent = parent_of(out);
        std::fs::create_dir_all(&parent)
            .map_err(|e| Diagnostic::error(format!("cannot create {}: {e}", parent.display())))?;
        let path = parent.join(format!(".{}.lock", out_name(out)));
        Ok(OutputLock {
            _file: lock_output(&path, out, notify)?,
        })
    }
}

impl Staging {
    /// Creates an empty staging folder beside `out`, after checking that `out` may be replaced
    /// and removing what killed builds left behind. The caller holds `out`'s [`OutputLock`] (or
    /// owns `out` alone); `out` must not be a symlink (see [`resolve_out`]).
    pub(crate) fn new(out: &Path, site_root: &Path) -> Result<Staging, Diagnostic> {
        let parent = parent_of(out);
        std::fs::create_dir_all(&parent)
            .map_err(|e| Diagnostic::error(format!("cannot create {}: {e}", parent.display())))?;
        let name = out_name(out);
        check_replaceable(out, site_root)?;
        remove_leftovers(&parent, &name);
        let dir = tempfile::Builder::new()
            .prefix(&format!(".{name}.staging-"))
            .tempdir_in(&parent)
            .map_err(|e| {
                Diagnostic::error(format!(
                    "cannot create a staging folder in {}: {e}",
                    parent.display()
                ))
            })?
            .keep();
        let staging = Staging {
            out: out.to_path_buf(),
            dir,
            committed: false,
            journal: Mutex::new(Vec::new()),
            aside: Mutex::new(HashMap::new()),
        };
        // Marked from the start, so a build killed before it ends leaves a folder the next one
        // recognises as its own and removes.
        staging.write(MARKER, MARKER_TEXT)?;
        Ok(staging)
    }

    /// The output folder this staging folder replaces or updates.
    pub(crate) fn out(&self) -> &Path {
        &self.out
    }

    /// Writes `bytes` to `rel` (a `/`-separated path made by the build, never from user input
    /// unchecked) inside the staging folder.
    pub(crate) fn write(&self, rel: &str, bytes: &[u8]) -> Result<(), Diagnostic> {
        debug_assert!(!rel.split('/').any(|c| c == ".." || c.is_empty()));
        let path = self.dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                Diagnostic::error(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        self.write_in_existing_dir(rel, bytes)
    }

    /// Like [`Staging::write`], for a file whose folder was already created (saves a `mkdir`,
    /// the most expensive system call of a clean build).
    pub(crate) fn write_in_existing_dir(&self, rel: &str, bytes: &[u8]) -> Result<(), Diagnostic> {
        let path = self.dir.join(rel);
        std::fs::write(&path, bytes)
            .map_err(|e| Diagnostic::error(format!("cannot write {}: {e}", path.display())))
    }

    /// Moves `rel` from the staging folder into the output folder; what was there is kept aside
    /// until the build ends, so [`Staging::rollback`] can put it back.
    pub(crate) fn move_into_output(&self, rel: &str) -> Result<(), Diagnostic> {
        let to = self.out.join(rel);
        let cannot = |e: std::io::Error| {
            Diagnostic::error(format!("cannot replace {}: {e}", to.display()))
                .with_help("make the output folder writable, or remove it and build again")
        };
        if let Some(parent) = to.parent() {
            self.make_dirs(parent).map_err(cannot)?;
        }
        let backup = match std::fs::symlink_metadata(&to) {
            Ok(_) => Some(self.set_aside(&to, rel).map_err(cannot)?),
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => return Err(cannot(e)),
        };
        let moved = std::fs::rename(self.dir.join(rel), &to);
        if let Err(e) = moved {
            if let Some(b) = &backup {
                let _ = std::fs::rename(b, &to);
            }
            return Err(cannot(e));
        }
        self.journal(OutputChange::MovedIn {
            rel: rel.to_string(),
            backup,
        });
        Ok(())
    }

    /// Removes `rel` from the output folder (kept aside until the build ends), and its parent
    /// folders once empty. A file already gone is not an error.
    pub(crate) fn remove_from_output(&self, rel: &str) -> Result<(), Diagnostic> {
        let path = self.out.join(rel);
        if let Err(e) = std::fs::symlink_metadata(&path) {
            return match e.kind() {
                ErrorKind::NotFound => Ok(()),
                _ => Err(Diagnostic::error(format!(
                    "cannot remove {}: {e}",
                    path.display()
                ))),
            };
        }
        let cannot = |e: std::io::Error| {
            Diagnostic::error(format!("cannot remove {}: {e}", path.display()))
                .with_help("make the output folder writable, or remove it and build again")
        };
        let backup = self.set_aside(&path, rel).map_err(cannot)?;
        self.journal(OutputChange::Removed {
            rel: rel.to_string(),
            backup,
        });
        let mut dir = path.parent();
        while let Some(d) = dir {
            if d == self.out || std::fs::remove_dir(d).is_err() {
                break;
            }
            self.journal(OutputChange::RemovedDir(d.to_path_buf()));
            dir = d.parent();
        }
        Ok(())
    }

    /// Writes `bytes` to `rel` in the output folder atomically (staged file, then rename).
    pub(crate) fn write_output(&self, rel: &str, bytes: &[u8]) -> Result<(), Diagnostic> {
        self.write(rel, bytes)?;
        self.move_into_output(rel)
    }

    /// Undoes every change made to the output folder so far, newest first: files moved in are
    /// taken out, replaced and removed files put back, folders made or removed undone. An error
    /// says what could not be put back (the output folder is then partly updated).
    pub(crate) fn rollback(&self) -> Result<(), Diagnostic> {
        let changes =
            std::mem::take(&mut *self.journal.lock().unwrap_or_else(PoisonError::into_inner));
        let mut failed = Vec::new();
        for change in changes.into_iter().rev() {
            let undone = match &change {
                OutputChange::MovedIn { rel, backup } => {
                    let at = self.out.join(rel);
                    match backup {
                        Some(b) => std::fs::rename(b, &at),
                        None => std::fs::remove_file(&at),
                    }
                    .map_err(|e| format!("{}: {e}", at.display()))
                }
                OutputChange::Removed { rel, backup } => {
                    let at = self.out.join(rel);
                    std::fs::rename(backup, &at).map_err(|e| format!("{}: {e}", at.display()))
                }
                OutputChange::MadeDir(d) => {
                    std::fs::remove_dir(d).map_err(|e| format!("{}: {e}", d.display()))
                }
                OutputChange::RemovedDir(d) => {
                    std::fs::create_dir(d).map_err(|e| format!("{}: {e}", d.display()))
                }
            };
            if let Err(e) = undone {
                failed.push(e);
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(Diagnostic::error(format!(
                "could not restore the previous output in {} ({} file{} or folder{} left changed: {})",
                self.out.display(),
                failed.len(),
                if failed.len() == 1 { "" } else { "s" },
                if failed.len() == 1 { "" } else { "s" },
                failed.join("; ")
            ))
            .with_help("the output is marked incomplete; the next successful build rewrites it"))
        }
    }

    /// Replaces the output folder with the staging folder; an error says what state the output
    /// folder is in.
    pub(crate) fn commit(mut self) -> Result<(), (Diagnostic, OutputState)> {
        let mut old = self.dir.clone().into_os_string();
        old.push(".old");
        let old = PathBuf::from(old);
        let had_old = std::fs::symlink_metadata(&self.out).is_ok();
        if had_old {
            std::fs::rename(&self.out, &old).map_err(|e| {
                let d = Diagnostic::error(format!(
                    "cannot move the previous output {} aside: {e}",
                    self.out.display()
                ));
                (d, OutputState::Unchanged)
            })?;
        }
        if let Err(e) = std::fs::rename(&self.dir, &self.out) {
            let mut d = Diagnostic::error(format!(
                "cannot move the new output into {}: {e}",
                self.out.display()
            ));
            let mut state = OutputState::Unchanged;
            if had_old {
                if let Err(back) = std::fs::rename(&old, &self.out) {
                    d = Diagnostic::error(format!(
                        "cannot move the new output into {} ({e}), nor the previous one back \
                         ({back}): it is now in {}",
                        self.out.display(),
                        old.display()
                    ))
                    .with_help(format!(
                        "move {} back to {} yourself, or build again",
                        old.display(),
                        self.out.display()
                    ));
                    state = OutputState::Changed;
                }
            }
            return Err((d, state));
        }
        self.committed = true;
        if had_old {
            // Left behind on failure, it is removed by the next build (it holds the marker).
            let _ = std::fs::remove_dir_all(&old);
        }
        Ok(())
    }

    /// Creates `dir` and its missing parents inside the output folder, journaling each.
    fn make_dirs(&self, dir: &Path) -> std::io::Result<()> {
        if dir.is_dir() {
            return Ok(());
        }
        let mut missing = Vec::new();
        let mut d = Some(dir);
        while let Some(p) = d {
            if std::fs::symlink_metadata(p).is_ok() || p == self.out {
                break;
            }
            missing.push(p.to_path_buf());
            d = p.parent();
        }
        for p in missing.into_iter().rev() {
            std::fs::create_dir(&p)?;
            self.journal(OutputChange::MadeDir(p));
        }
        Ok(())
    }

    /// Moves the output file `path` (at `rel`) into the staging folder, to keep it until the
    /// build ends; returns where it went.
    fn set_aside(&self, path: &Path, rel: &str) -> std::io::Result<PathBuf> {
        let n = {
            let mut aside = self.aside.lock().unwrap_or_else(PoisonError::into_inner);
            let n = aside.get(rel).map_or(0, |n| n + 1);
            aside.insert(rel.to_string(), n);
            n
        };
        // A path replaced twice in one build keeps its first (the original) version too.
        let backup = match n {
            0 => self.dir.join(REPLACED).join(rel),
            n => self.dir.join(REPLACED).join(format!("{rel}.{n}")),
        };
        match std::fs::rename(path, &backup) {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                // The backup's folder is made only when first needed.
                if let Some(parent) = backup.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::rename(path, &backup)?;
            }
            other => other?,
        }
        Ok(backup)
    }

    fn journal(&self, change: OutputChange) {
        self.journal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(change);
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The output folder to write for `--out`: `out` itself, or the folder a symlink leads to (the
/// staging folder and the swap happen beside the target, so the link keeps working).
pub(crate) fn resolve_out(out: &Path) -> Result<PathBuf, Diagnostic> {
    match std::fs::symlink_metadata(out) {
        Ok(m) if m.file_type().is_symlink() => {
            let target = std::fs::canonicalize(out).map_err(|e| {
                let to = std::fs::read_link(out).unwrap_or_default();
                Diagnostic::error(format!(
                    "the output folder {} is a symlink to {}, which cannot be used: {e}",
                    out.display(),
                    to.display()
                ))
                .with_help("create the folder the link leads to, or pass a real folder as --out")
            })?;
            if !target.is_dir() {
                return Err(Diagnostic::error(format!(
                    "the output folder {} is a symlink to {}, which is not a folder",
                    out.display(),
                    target.display()
                ))
                .with_help("point the link at a folder, or pass a real folder as --out"));
            }
            Ok(target)
        }
        _ => Ok(out.to_path_buf()),
    }
}

/// `path` with `.` and `name/..` removed lexically (a leading `..` stays): `public/x/../../public`
/// is `public`, so nothing is created on the way (`public/x/`) and messages name the folder as
/// it is. As `std::path::absolute` does on Windows; a `..` after a symlinked folder is thereby
/// taken as the folder's parent, which is what the user wrote.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                let last = out.components().next_back();
                match last {
                    Some(Component::Normal(_)) => {
                        out.pop();
                    }
                    Some(Component::RootDir | Component::Prefix(_)) => {}
                    _ => out.push(".."),
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Checks, without writing anything, that a build may write `out` (after [`resolve_out`]).
pub(crate) fn check_output(out: &Path, site_root: &Path) -> Result<(), Diagnostic> {
    check_replaceable(&resolve_out(out)?, site_root)
}

fn parent_of(out: &Path) -> PathBuf {
    match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn out_name(out: &Path) -> String {
    out.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| super::DEFAULT_OUT.into())
}

/// Takes the exclusive lock on `path`, waiting (and saying so to `notify`) while another build
/// holds it.
/// The lock (`flock`) goes with the process, so a killed build never leaves it taken.
fn lock_output(path: &Path, out: &Path, notify: fn(&str)) -> Result<File, Diagnostic> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| {
            Diagnostic::error(format!("cannot open the lock file {}: {e}", path.display()))
        })?;
    let cannot =
        |e: std::io::Error| Diagnostic::error(format!("cannot lock {}: {e}", path.display()));
    #[cfg(unix)]
    {
        use rustix::fs::{flock, FlockOperation};
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(file),
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => notify(&format!(
                "another vramdoc build is writing {}; waiting for it to finish",
                crate::terminal::visible_line(&out.display().to_string())
            )),
            Err(e) => return Err(cannot(e.into())),
        }
        flock(&file, FlockOperation::LockExclusive).map_err(|e| cannot(e.into()))?;
    }
    #[cfg(not(unix))]
    let _ = (out, cannot, notify);
    Ok(file)
}

/// Removes the staging folders (`.<name>.staging-*`, and their `.old` swaps, or the `.<name>.old`
/// of earlier versions) that builds killed half-way left beside the output folder. Only folders
/// holding vramdoc's [`MARKER`], or empty, are removed; the caller holds the output folder's lock.
fn remove_leftovers(parent: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let staging = format!(".{name}.staging-");
    let old = format!(".{name}.old");
    for e in entries.flatten() {
        let file_name = e.file_name();
        let Some(n) = file_name.to_str() else {
            continue;
        };
        let ours = n.starts_with(&staging) || n == old;
        if !ours || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if e.path().join(MARKER).is_file() {
            let _ = std::fs::remove_dir_all(e.path());
        } else {
            // Killed between creating the folder and marking it: empty, so `remove_dir` does it.
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

/// Refuses to replace a folder that holds anything but a previous vramdoc output, or the site.
fn check_replaceable(out: &Path, site_root: &Path) -> Result<(), Diagnostic> {
    let abs_out = std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf());
    let abs_root = std::path::absolute(site_root).unwrap_or_else(|_| site_root.to_path_buf());
    if abs_root.starts_with(&abs_out) {
        return Err(Diagnostic::error(format!(
            "the output folder {} contains the site itself",
            out.display()
        ))
        .with_help("choose another --out, e.g. the default `public`"));
    }
    let abs_out = normalize(&abs_out);
    let abs_root = normalize(&abs_root);
    let source = crate::site_paths::SOURCE_DIRS
        .iter()
        .find(|d| abs_out.starts_with(abs_root.join(d)));
    if let Some(dir) = source {
        return Err(Diagnostic::error(format!(
            "the output folder {} is inside the site's {dir}/ folder",
            out.display()
        ))
        .with_help("choose a folder outside the site's sources, e.g. the default `public`"));
    }
    if !out.exists() {
        return Ok(());
    }
    if !out.is_dir() {
        return Err(Diagnostic::error(format!(
            "the output path {} is a file, not a folder",
            out.display()
        )));
    }
    let empty = std::fs::read_dir(out)
        .map(|mut d| d.next().is_none())
        .unwrap_or(false);
    if empty || out.join(MARKER).exists() {
        Ok(())
    } else {
        Err(Diagnostic::error(format!(
            "refusing to replace {}: it was not written by vramdoc",
            out.display()
        ))
        .with_help("pass an empty or new folder as --out, or remove this one yourself"))
    }
}
