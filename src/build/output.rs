//! Writing the output folder atomically.
//!
//! A build writes into a staging folder beside `--out`; only when every page rendered does the
//! staging folder replace `--out` (two renames). A failed build removes its staging folder and
//! leaves the previous output exactly as it was. A folder not written by vramdoc is never replaced.

use std::path::{Path, PathBuf};

use crate::diagnostics::Diagnostic;

/// The marker file every output folder carries; its presence allows replacing the folder.
pub const MARKER: &str = ".vramdoc-build";

/// A staging folder that becomes the output folder on [`Staging::commit`].
#[derive(Debug)]
pub struct Staging {
    out: PathBuf,
    dir: PathBuf,
    committed: bool,
}

impl Staging {
    /// Creates an empty staging folder beside `out`, after checking that `out` may be replaced.
    pub fn new(out: &Path, site_root: &Path) -> Result<Staging, Diagnostic> {
        check_replaceable(out, site_root)?;
        let parent = match out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent)
            .map_err(|e| Diagnostic::error(format!("cannot create {}: {e}", parent.display())))?;
        let name = out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "public".into());
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
        Ok(Staging {
            out: out.to_path_buf(),
            dir,
            committed: false,
        })
    }

    /// The output folder this staging folder replaces or updates.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// The staging folder (files are written under it).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `bytes` to `rel` (a `/`-separated path made by the build, never from user input
    /// unchecked) inside the staging folder.
    pub fn write(&self, rel: &str, bytes: &[u8]) -> Result<(), Diagnostic> {
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
    pub fn write_in_existing_dir(&self, rel: &str, bytes: &[u8]) -> Result<(), Diagnostic> {
        let path = self.dir.join(rel);
        std::fs::write(&path, bytes)
            .map_err(|e| Diagnostic::error(format!("cannot write {}: {e}", path.display())))
    }

    /// Moves `rel` from the staging folder into the output folder (replacing what was there).
    pub fn move_into_output(&self, rel: &str) -> Result<(), Diagnostic> {
        let to = self.out.join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                Diagnostic::error(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        std::fs::rename(self.dir.join(rel), &to)
            .map_err(|e| Diagnostic::error(format!("cannot write {}: {e}", to.display())))
    }

    /// Removes `rel` from the output folder, and its parent folders once empty.
    pub fn remove_from_output(&self, rel: &str) {
        let path = self.out.join(rel);
        let _ = std::fs::remove_file(&path);
        let mut dir = path.parent();
        while let Some(d) = dir {
            if d == self.out || std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }

    /// Writes `bytes` to `rel` in the output folder atomically (temporary file, then rename).
    pub fn write_output(&self, rel: &str, bytes: &[u8]) -> Result<(), Diagnostic> {
        self.write(rel, bytes)?;
        self.move_into_output(rel)
    }

    /// Replaces the output folder with the staging folder.
    pub fn commit(mut self) -> Result<(), Diagnostic> {
        self.write(
            MARKER,
            b"This folder is written by vramdoc; `vramdoc build` replaces it whole.\n",
        )?;
        let old = self.dir.with_extension("old");
        let had_old = self.out.exists();
        if had_old {
            std::fs::rename(&self.out, &old).map_err(|e| {
                Diagnostic::error(format!(
                    "cannot move the previous output {} aside: {e}",
                    self.out.display()
                ))
            })?;
        }
        if let Err(e) = std::fs::rename(&self.dir, &self.out) {
            if had_old {
                let _ = std::fs::rename(&old, &self.out);
            }
            return Err(Diagnostic::error(format!(
                "cannot move the new output into {}: {e}",
                self.out.display()
            )));
        }
        self.committed = true;
        if had_old {
            let _ = std::fs::remove_dir_all(&old);
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.dir);
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
