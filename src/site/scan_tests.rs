//! Unit tests of [`super`] (`src/site/scan.rs`).
use super::*;

/// A guide folder holding `en.md` with `text`.
fn page(text: &str) -> (tempfile::TempDir, PageSource) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("en.md"), text).unwrap();
    let folder: Arc<Path> = Arc::from(dir.path());
    (dir, content::page_source("g", "en", &folder))
}

fn stat(src: &PageSource) -> Option<FileStat> {
    FileStat::of_path(&src.path())
}

/// `now` that far (ns) after the file was last changed.
fn after(src: &PageSource, ns: u64) -> u64 {
    let [_, modified, changed, _] = *stat(src).unwrap().fields();
    modified.max(changed) + ns
}

const PAGE: &str = "---\ntitle: Hello\nlang: en\ndate: 2026-01-02\n---\nBody.\n";

#[test]
fn a_source_is_stamped_only_when_older_than_the_window_before_now() {
    let (_dir, src) = page(PAGE);
    let (fresh, changed) =
        read_source(src.clone(), stat(&src), None, after(&src, 0), false).unwrap();
    assert!(changed);
    assert_eq!(fresh.stamp, None);
    assert_eq!(fresh.summary.title, "Hello");
    let later = after(&src, 3_000_000_000);
    let (old, _) = read_source(src.clone(), stat(&src), None, later, false).unwrap();
    assert!(old.stamp.is_some_and(|s| s.matches(&stat(&src).unwrap())));
    assert_eq!(old.hash, hash(PAGE.as_bytes()));
}

#[test]
fn a_matching_stamp_is_trusted_without_reading_and_equal_bytes_are_not_parsed() {
    let (_dir, src) = page(PAGE);
    let later = after(&src, 3_000_000_000);
    let (read, _) = read_source(src.clone(), stat(&src), None, later, false).unwrap();
    // The recorded entry says other bytes and title: a matching stamp means it is believed.
    let recorded = SourceEntry {
        hash: hash(b"other"),
        stamp: read.stamp,
        summary: Summary {
            title: "Recorded".into(),
            ..read.summary.clone()
        },
    };
    let (trusted, changed) = read_source(
        src.clone(),
        stat(&src),
        Some(recorded.clone()),
        later,
        false,
    )
    .unwrap();
    assert!(!changed);
    assert_eq!(
        (trusted.hash, trusted.summary.title.as_str()),
        (hash(b"other"), "Recorded")
    );
    // Another stamp: the file is hashed; the same bytes keep the recorded summary unparsed.
    let same_bytes = SourceEntry {
        hash: hash(PAGE.as_bytes()),
        stamp: None,
        ..recorded
    };
    let (reread, changed) =
        read_source(src.clone(), stat(&src), Some(same_bytes), later, false).unwrap();
    assert!(changed, "the stamp recorded changes");
    assert_eq!(reread.summary.title, "Recorded");
    // Other bytes are parsed, and bad front matter is an error naming the file.
    std::fs::write(src.path(), "---\ntitle: [broken\n---\n").unwrap();
    let errors = read_source(src.clone(), stat(&src), None, later, false).unwrap_err();
    assert!(errors[0].to_string().contains("en.md"), "{errors:?}");
}

#[test]
fn watcher_paths_name_guides_or_ask_for_a_full_scan() {
    let paths = |p: &[&str]| p.iter().map(PathBuf::from).collect::<BTreeSet<_>>();
    let some = paths(&["content/a/en.md", "content/b", "templates/base.html"]);
    let guides: Vec<&str> = changed_guides(&some).unwrap().into_iter().collect();
    assert_eq!(guides, ["a", "b"]);
    assert!(changed_guides(&paths(&["content"])).is_none());
    assert!(changed_guides(&paths(&[crate::config::CONFIG_FILE])).is_none());
}
