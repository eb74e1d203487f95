//! Reading the site's own files (pages, templates, locales, data) defensively.
//!
//! Only regular files are read (a FIFO named like a page would block a build forever, a device
//! such as `/dev/zero` would be read until memory runs out), none above [`MAX_FILE_BYTES`], and a
//! symlink that leads outside the site root is refused unless `vramdoc.yaml` sets
//! `follow_external_symlinks: true` (a page linked to `/etc/passwd` would otherwise be quoted in
//! an error snippet or published).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::diagnostics::Diagnostic;

/// The largest file the build reads from a site: 10 MiB.
pub(crate) const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Reads the regular file at `path`; `shown` is the path used in messages.
pub(crate) fn read(path: &Path, shown: &Path) -> Result<Vec<u8>, Diagnostic> {
    let file = open_nonblocking(path)
        .map_err(|e| Diagnostic::error(format!("cannot read: {e}")).in_file(shown))?;
    let meta = file
        .metadata()
        .map_err(|e| Diagnostic::error(format!("cannot read: {e}")).in_file(shown))?;
    if !meta.is_file() {
        return Err(Diagnostic::error(format!(
            "not a regular file (it is {})",
            kind_of(&meta.file_type())
        ))
        .in_file(shown)
        .with_help("vramdoc reads only regular files; replace it with one"));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large(shown, meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // Bounded even if the file grows while it is read.
    (&file)
        .take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Diagnostic::error(format!("cannot read: {e}")).in_file(shown))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(too_large(shown, bytes.len() as u64));
    }
    Ok(bytes)
}

/// Reads the regular file at `path` as UTF-8 text (see [`read`]).
pub(crate) fn read_to_string(path: &Path, shown: &Path) -> Result<String, Diagnostic> {
    String::from_utf8(read(path, shown)?).map_err(|e| {
        let line = e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        Diagnostic::error("the file is not valid UTF-8")
            .in_file(shown)
            .at(line, 1)
            .with_help("save it as UTF-8")
    })
}

/// Refuses `path` (a symlink, or a path through a symlinked folder) when it leads outside the
/// site `root` and `follow_external` is off. Also refuses a symlink that leads nowhere.
pub(crate) fn check_inside(
    root: &Path,
    path: &Path,
    shown: &Path,
    follow_external: bool,
) -> Result<(), Diagnostic> {
    let target = std::fs::canonicalize(path).map_err(|e| {
        Diagnostic::error(format!("a symlink that leads nowhere: {e}"))
            .in_file(shown)
            .with_help("remove it or point it at a file in the site")
    })?;
    if follow_external {
        return Ok(());
    }
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    if target.starts_with(&root) {
        Ok(())
    } else {
        Err(Diagnostic::error(format!(
            "a symlink to {}, outside the site",
            target.display()
        ))
        .in_file(shown)
        .with_help(
            "copy the file into the site, or set `follow_external_symlinks: true` in vramdoc.yaml",
        ))
    }
}

/// Every file under `root/dir` (recursively, sorted), each checked: symlinks leading outside
/// the site (unless `follow_external`), anything but regular files and folders, and files above
/// [`MAX_FILE_BYTES`] are reported, all at once. A missing folder has no files.
pub(crate) fn walk(
    root: &Path,
    dir: &str,
    follow_external: bool,
) -> (Vec<PathBuf>, Vec<Diagnostic>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    walk_into(
        root,
        &root.join(dir),
        Path::new(dir),
        follow_external,
        &mut files,
        &mut errors,
        0,
    );
    files.sort();
    (files, errors)
}

/// How deep [`walk`] descends (a symlink loop would otherwise never end).
const MAX_DEPTH: usize = 32;

fn walk_into(
    root: &Path,
    dir: &Path,
    shown: &Path,
    follow_external: bool,
    files: &mut Vec<PathBuf>,
    errors: &mut Vec<Diagnostic>,
    depth: usize,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    if depth > MAX_DEPTH {
        errors.push(
            Diagnostic::error(format!("folders nested more than {MAX_DEPTH} deep"))
                .in_file(shown)
                .with_help("look for a symlink that leads to a folder containing it"),
        );
        return;
    }
    for e in entries.flatten() {
        let path = e.path();
        let shown = shown.join(e.file_name());
        let Ok(ty) = e.file_type() else { continue };
        if ty.is_symlink() {
            if let Err(d) = check_inside(root, &path, &shown, follow_external) {
                errors.push(d);
                continue;
            }
        }
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            walk_into(
                root,
                &path,
                &shown,
                follow_external,
                files,
                errors,
                depth + 1,
            );
        } else if !meta.is_file() {
            errors.push(
                Diagnostic::error(format!(
                    "not a regular file (it is {})",
                    kind_of(&meta.file_type())
                ))
                .in_file(&shown)
                .with_help("vramdoc reads only regular files; remove it or replace it with one"),
            );
        } else if meta.len() > MAX_FILE_BYTES {
            errors.push(too_large(&shown, meta.len()));
        } else {
            files.push(path);
        }
    }
}

fn too_large(shown: &Path, len: u64) -> Diagnostic {
    Diagnostic::error(format!(
        "the file is {:.1} MiB, more than the {} MiB vramdoc reads",
        len as f64 / 1024.0 / 1024.0,
        MAX_FILE_BYTES >> 20
    ))
    .in_file(shown)
    .with_help("split it into smaller files")
}

/// Opens `path` for reading without blocking on a FIFO that has no writer (the build then sees
/// it is not a regular file and refuses it).
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    options.open(path)
}

/// A file type in words.
fn kind_of(ty: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ty.is_fifo() {
            return "a FIFO";
        }
        if ty.is_char_device() || ty.is_block_device() {
            return "a device";
        }
        if ty.is_socket() {
            return "a socket";
        }
    }
    if ty.is_dir() {
        "a folder"
    } else {
        "not a plain file"
    }
}
