//! Unit tests of [`super`] (`src/site/jobs.rs`).
use super::*;
use crate::content;
use crate::site::manifest::{hash, Summary};
use crate::site::store::SearchInputs;
use std::sync::Arc;

fn entry(inputs: &[u8], files: &[&str]) -> JobEntry {
    JobEntry {
        inputs: hash(inputs),
        files: files.iter().map(|f| (f.to_string(), hash(b""))).collect(),
    }
}

#[test]
fn a_job_renders_when_its_inputs_differ_or_a_checked_output_is_missing() {
    let out = tempfile::tempdir().unwrap();
    std::fs::write(out.path().join("there.html"), "").unwrap();
    let build = Diff {
        out: out.path(),
        verify_outputs: false,
    };
    let check = Diff {
        verify_outputs: true,
        ..build
    };
    let there = entry(b"a", &["there.html"]);
    let gone = entry(b"a", &["gone.html"]);
    assert!(build.needs_render(None, &hash(b"a"), ""));
    assert!(build.needs_render(Some(&there), &hash(b"b"), ""));
    assert!(!build.needs_render(Some(&there), &hash(b"a"), ""));
    assert!(!build.needs_render(Some(&gone), &hash(b"a"), ""));
    assert!(!check.needs_render(Some(&there), &hash(b"a"), ""));
    assert!(check.needs_render(Some(&gone), &hash(b"a"), ""));
}

#[test]
fn site_jobs_come_in_a_fixed_order_and_take_their_previous_entries() {
    let langs = ["en".to_string(), "zh".to_string()];
    let inputs = SiteInputs {
        site: hash(b"site"),
        indexes: vec![hash(b"en"), hash(b"zh")],
        sitemap: hash(b"map"),
        search: SearchInputs {
            digests: vec![vec![hash(b"en 00")], Vec::new()],
            present: vec![vec![true], Vec::new()],
        },
    };
    let plain = Hasher::new().digest(&hash(b"site")).finish();
    let mut previous = BTreeMap::from([
        (
            SiteJob::Root,
            JobEntry {
                inputs: plain,
                files: Vec::new(),
            },
        ),
        (SiteJob::Index("fr".into()), entry(b"fr", &[])),
    ]);
    let out = tempfile::tempdir().unwrap();
    let diff = Diff {
        out: out.path(),
        verify_outputs: false,
    };
    let jobs = site_jobs(&langs, inputs, &mut previous, &diff);
    let kinds: Vec<String> = jobs
        .iter()
        .map(|j| match &j.kind {
            JobKind::Site(s) => format!("{s}:{}", j.render),
            JobKind::Page(_) => unreachable!(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "index:en:true",
            "index:zh:true",
            "root:false",
            "sitemap:true",
            "style:true",
            "search:en:00:true"
        ]
    );
    assert_eq!(jobs[1].inputs, hash(b"zh"));
    // What is left is a job that no longer exists (a removed language).
    assert_eq!(
        previous.keys().collect::<Vec<_>>(),
        [&SiteJob::Index("fr".into())]
    );
}

#[test]
fn neighbours_follow_each_languages_index_or_what_was_recorded() {
    let dir: Arc<Path> = Arc::from(Path::new("/nowhere"));
    let source = |slug: &str, lang: &str, date: Option<&str>| Source {
        src: content::page_source(slug, lang, &dir),
        hash: hash(slug.as_bytes()),
        summary: Summary {
            title: format!("{slug} {lang}"),
            date: date.map(String::from),
            description: None,
            updated: None,
            scenario_hash: None,
            uses_catalog: false,
            sections: None,
        },
        stamp: None,
        page: Default::default(),
    };
    // Sorted by guide then language, as the scan gives them.
    let sources = vec![
        source("a", "en", None),
        source("a", "es", None),
        source("b", "en", Some("2026-01-01")),
        source("c", "en", Some("2026-05-01")),
        source("c", "es", Some("2026-05-01")),
    ];
    let link = |slug: &str, lang: &str| {
        Some(NavLink {
            slug: slug.into(),
            title: format!("{slug} {lang}"),
        })
    };
    let open = neighbours(&sources, &mut vec![None; 5], &Closed::none()).unwrap();
    // en: c (newest), b, a (undated); es: c, a.
    assert_eq!(
        (&open[3].previous, &open[3].next),
        (&None, &link("b", "en"))
    );
    assert_eq!(
        (&open[2].previous, &open[2].next),
        (&link("c", "en"), &link("a", "en"))
    );
    assert_eq!(
        (&open[0].previous, &open[0].next),
        (&link("b", "en"), &None)
    );
    assert_eq!(
        (&open[4].previous, &open[4].next),
        (&None, &link("a", "es"))
    );
    assert_eq!(
        (&open[1].previous, &open[1].next),
        (&link("c", "es"), &None)
    );
    // With a shard closed, the recorded ones are taken, and none recorded means opening all.
    let closed = Closed::with_shard(7);
    let mut recorded: Vec<_> = open.iter().cloned().map(Some).collect();
    assert_eq!(neighbours(&sources, &mut recorded, &closed), Some(open));
    let mut missing = vec![Some(Neighbours::default()); 4];
    missing.push(None);
    assert_eq!(neighbours(&sources, &mut missing, &closed), None);
}
