//! Content vramdoc must refuse or accept (issue 11, classes 7–12): every refusal is an error or
//! warning at the right file and line, and equal values in other spellings are accepted.

use crate::support::{Run, SiteTest};

/// Asserts that a failed build reports `message` at `location` (`file:line`) with advice, and
/// wrote no output.
fn refused(t: &SiteTest, location: &str, message: &str) -> Run {
    let run = t.build_err();
    assert!(
        run.stderr.contains(&format!("--> {location}:")),
        "expected `{message}` at {location} in\n{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(message),
        "expected `{message}` in\n{}",
        run.stderr
    );
    assert!(run.stderr.contains("help:"), "no advice:\n{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(!t.root().join("public").exists(), "public/ written");
    run
}

/// A site with one page `content/g/en.md` made of `front` (YAML lines) and `body`.
fn page(front: &str, body: &str) -> SiteTest {
    let t = SiteTest::new();
    t.file(
        "content/g/en.md",
        &format!("---\ntitle: T\nlang: en\n{front}---\n\n{body}\n"),
    );
    t
}

// Class 12: YAML errors located where they are.

#[test]
fn duplicate_front_matter_key_is_reported_at_the_duplicate() {
    let t = page("date: 2026-11-20\ndescription: d\ntitle: Again\n", "x");
    refused(
        &t,
        "content/g/en.md:6",
        "duplicate entry with key \"title\"",
    );
    let t = page(
        "scenario:\n  n_layer: 2\n  n_head: 2\n  n_layer: 3\n  n_embd: 64\n",
        "x",
    );
    refused(
        &t,
        "content/g/en.md:7",
        "duplicate entry with key \"n_layer\"",
    );
}

#[test]
fn alias_bomb_is_reported_where_the_aliases_multiply() {
    let mut front = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
    for i in 1..7 {
        let p = format!("*a{}", i - 1);
        front.push_str(&format!("a{i}: &a{i} [{}]\n", vec![p; 9].join(", ")));
    }
    let t = page(&front, "x");
    // a4 (line 8, 9^5 values) is the first entry past the parser's alias-expansion limit.
    let run = refused(&t, "content/g/en.md:8", "repetition limit exceeded");
    assert!(
        !run.stderr.contains("--> content/g/en.md:2:"),
        "{}",
        run.stderr
    );
}

#[test]
fn merge_keys_are_applied_and_a_bad_one_is_located() {
    let t = page(
        "date: 2026-11-20\nbase: &b {author: Ada}\nmeta:\n  x: 1\n  <<: 3\n",
        "x",
    );
    refused(&t, "content/g/en.md:8", "for merging");
    let t = SiteTest::new();
    t.file(
        "content/g/en.md",
        "---\ntitle: T\nlang: en\ndate: 2026-11-20\nsizes: &s {n_layer: 2, n_head: 2, n_embd: 64}\nscenario:\n  <<: *s\n  block_size: 64\n  batch_size: 2\n---\n\n{{ scenario.n_embd }} wide.\n",
    );
    t.build_ok();
    assert!(t.output("en/g/index.html").contains("64 wide."));
}

// Class 10: dates are calendar dates.

#[test]
fn impossible_dates_and_bogus_updated_are_refused_at_their_line() {
    for (front, line, found) in [
        ("date: 2026-02-30\n", 4, "`date` must be a calendar date"),
        ("date: 2026-13-01\n", 4, "there is no month 13"),
        ("date: 2025-02-29\n", 4, "2025-02 has 28 days"),
        ("date: 2026-11-20T25:00\n", 4, "the time `25:00`"),
        ("date: 2026-11-20 10:61\n", 4, "the time"),
        ("date: 2026-11-20X\n", 4, "must be followed by nothing"),
        (
            "date: 2026-11-20\nupdated: bogus\n",
            5,
            "`updated` must be a calendar date",
        ),
        (
            "date: 2026-11-20\nupdated: 2026-04-31\n",
            5,
            "2026-04 has 30 days",
        ),
    ] {
        let t = page(front, "x");
        refused(&t, &format!("content/g/en.md:{line}"), found);
    }
}

#[test]
fn real_dates_with_times_are_accepted_and_published() {
    let t = page(
        "date: 2024-02-29T09:30:00+01:00\nupdated: 2024-03-01 10:30:15.5Z\n",
        "x",
    );
    t.build_ok();
    assert!(t.output("sitemap.xml").contains("2024-02-29"));
}
