//! Fingerprints of source trees, computed by `build.rs` at compile time (it includes this file
//! with `#[path]`) and by tests, so the estimator's version and the manifest format are derived
//! from the code that defines them instead of constants bumped by hand.
//!
//! A fingerprint is BLAKE3 over each file's path (relative to the crate root, `/`-separated) and
//! bytes, the files sorted by path, truncated to 16 hex digits. Any edit of a listed file, a
//! comment included, gives a new fingerprint; that costs one recomputation of the estimates (a
//! page re-renders only if its computed numbers changed) or one full build (manifest format),
//! never a stale output.

use std::path::{Path, PathBuf};

/// The trees (folders or single files) whose code and data decide an estimate: formulas and
/// constants, the scenario keys' table (defaults, readers, the values a what-if's changes show)
/// and the bundled catalogs they read, with the code that reads the GPU catalog.
pub const ESTIMATOR_TREES: &[&str] = &[
    "src/estimate",
    "src/scenario/catalog.rs",
    "src/scenario/keys.rs",
    "src/scenario/literal.rs",
    "data",
];

/// The trees that decide what the build records, what its hashes mean and what any output holds:
/// all the code (a change to the tables in `present/`, the expression language in `expand/` or
/// the charts changes pages without changing their inputs), so a new binary's first build on an
/// existing output renders everything once.
pub const MANIFEST_TREES: &[&str] = &["src"];

/// Every file under `trees` (relative to `root`; a tree may be a single file), sorted by
/// relative path.
pub fn files_under(root: &Path, trees: &[&str]) -> Vec<(String, PathBuf)> {
    let mut files = Vec::new();
    for tree in trees {
        let path = root.join(tree);
        if path.is_file() {
            files.push(((*tree).to_owned(), path));
        } else {
            collect(root, &path, &mut files);
        }
    }
    files.sort();
    files
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files);
        } else if let Ok(rel) = path.strip_prefix(root) {
            let rel = rel.to_string_lossy().replace('\\', "/");
            files.push((rel, path));
        }
    }
}

/// The fingerprint of `(relative path, contents)` pairs, in the order given.
pub fn fingerprint<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> String {
    let mut hasher = blake3::Hasher::new();
    for (rel, bytes) in files {
        // Lengths first, so no concatenation of two files reads as another pair.
        hasher.update(&(rel.len() as u64).to_le_bytes());
        hasher.update(rel.as_bytes());
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    hasher.finalize().to_hex()[..16].to_string()
}
