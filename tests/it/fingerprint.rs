//! The estimator's version and the manifest format are fingerprints of their source trees,
//! derived at build time (`build.rs`, `src/fingerprint.rs`), not constants bumped by hand.

use std::path::Path;
use vramdoc::fingerprint::{files_under, fingerprint, ESTIMATOR_TREES, MANIFEST_TREES};

use crate::support::SiteTest;

/// The fingerprint of `trees` as they are on disk, with `edit` applied to the file `target`.
fn fingerprint_with(trees: &[&str], target: &str, edit: impl Fn(&str) -> String) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files: Vec<(String, Vec<u8>)> = files_under(root, trees)
        .into_iter()
        .map(|(rel, path)| {
            let bytes = std::fs::read(&path).expect("read a source file");
            let bytes = if rel == target {
                edit(std::str::from_utf8(&bytes).expect("utf-8 source")).into_bytes()
            } else {
                bytes
            };
            (rel, bytes)
        })
        .collect();
    assert!(
        files.iter().any(|(rel, _)| rel == target),
        "{target} is not under {trees:?}"
    );
    fingerprint(files.iter().map(|(r, b)| (r.as_str(), b.as_slice())))
}

fn unchanged(s: &str) -> String {
    s.to_string()
}

#[test]
fn estimate_json_carries_the_fingerprint_of_the_estimator_sources() {
    let on_disk = fingerprint_with(ESTIMATOR_TREES, "src/estimate/mod.rs", unchanged);
    let run = SiteTest::new().run(&["estimate", "--set", "n_layer=2", "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(v["estimator_version"], on_disk.as_str());
}

#[test]
fn changing_a_formula_constant_changes_the_estimator_fingerprint() {
    let before = fingerprint_with(ESTIMATOR_TREES, "src/estimate/overhead.rs", unchanged);
    // The CUDA context's middle estimate, one of the formula constants.
    let after = fingerprint_with(ESTIMATOR_TREES, "src/estimate/overhead.rs", |s| {
        assert!(s.contains("450"), "the constant this test edits moved");
        s.replacen("450", "451", 1)
    });
    assert_ne!(before, after);
    // The GPU catalog is data the estimator reads: an edit there counts too.
    let catalog = fingerprint_with(ESTIMATOR_TREES, "data/gpus.yaml", |s| format!("{s}\n"));
    assert_ne!(before, catalog);
}

#[test]
fn the_manifest_format_is_the_fingerprint_of_the_build_code() {
    let on_disk = fingerprint_with(MANIFEST_TREES, "src/site/model.rs", unchanged);
    let site = SiteTest::new();
    site.guide("a", "en", "A", "Text.");
    site.build_ok();
    let dir = site.root().join("public/.vramdoc-manifest");
    let shard = std::fs::read(dir.join("site"))
        .unwrap_or_else(|e| panic!("no site shard in {}: {e}", dir.display()));
    assert!(shard.starts_with(format!("vramdoc-manifest{on_disk}").as_bytes()));
    let edited = fingerprint_with(MANIFEST_TREES, "src/site/model.rs", |s| {
        s.replacen("pub", "pub ", 1)
    });
    assert_ne!(on_disk, edited);
    // What a page shows is code too: an edit to the tables' rows renders every page again.
    let rows = fingerprint_with(MANIFEST_TREES, "src/present/rows.rs", |s| format!("{s}\n"));
    assert_ne!(on_disk, rows);
}
