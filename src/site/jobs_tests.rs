//! Unit tests of [`super`] (`src/site/jobs.rs`).
use super::*;
use crate::site::manifest::{
    hash, GuideEntry, Manifest, PageEntry, ShardContext, SourceEntry, Summary,
};
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
fn closed_shards_are_opened_only_for_a_listing_or_a_closed_search_part_that_changed() {
    let langs = ["en".to_string()];
    let inputs = || SiteInputs {
        site: hash(b"site"),
        indexes: vec![hash(b"en")],
        sitemap: hash(b"map"),
        search: SearchInputs {
            digests: vec![vec![hash(b"part 0"), hash(b"part 1")]],
            present: vec![vec![true, true]],
        },
    };
    let entry = |d: Digest| JobEntry {
        inputs: d,
        files: Vec::new(),
    };
    let recorded = BTreeMap::from([
        (SiteJob::Index("en".into()), entry(hash(b"en"))),
        (SiteJob::Sitemap, entry(hash(b"map"))),
        (SiteJob::Search("en".into(), 0), entry(hash(b"part 0"))),
        (SiteJob::Search("en".into(), 1), entry(hash(b"part 1"))),
    ]);
    let mut closed = [false; SHARDS];
    let mut changed = inputs();
    changed.indexes[0] = hash(b"renamed");
    assert!(!needs_closed_shards(&langs, &changed, &closed, &recorded));
    closed[1] = true;
    assert!(!needs_closed_shards(&langs, &inputs(), &closed, &recorded));
    assert!(needs_closed_shards(&langs, &changed, &closed, &recorded));
    // Shard 0 is open: its search part renders from its own pages.
    let mut part0 = inputs();
    part0.search.digests[0][0] = hash(b"edited");
    assert!(!needs_closed_shards(&langs, &part0, &closed, &recorded));
    let mut part1 = inputs();
    part1.search.digests[0][1] = hash(b"edited");
    assert!(needs_closed_shards(&langs, &part1, &closed, &recorded));
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
        },
        stamp: None,
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
    let open = neighbours(&sources, &mut vec![None; 5], &[false; SHARDS]).unwrap();
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
    let mut closed = [false; SHARDS];
    closed[7] = true;
    let mut recorded: Vec<_> = open.iter().cloned().map(Some).collect();
    assert_eq!(neighbours(&sources, &mut recorded, &closed), Some(open));
    let mut missing = vec![Some(Neighbours::default()); 4];
    missing.push(None);
    assert_eq!(neighbours(&sources, &mut missing, &closed), None);
}

#[test]
fn closed_shards_list_their_pages_through_their_headers_exactly_as_open_ones() {
    let langs = vec!["en".to_string(), "es".to_string()];
    let summary = |slug: &str, lang: &str| Summary {
        title: format!("{slug} {lang}"),
        date: Some("2026-01-02".into()),
        description: (lang == "en").then(|| "about".into()),
        updated: None,
        scenario_hash: None,
        uses_catalog: false,
    };
    let slugs = ["alpha", "beta", "gamma", "delta"];
    let mut guides = BTreeMap::new();
    let mut sources = Vec::new();
    let dir: Arc<Path> = Arc::from(Path::new("/nowhere"));
    for slug in slugs {
        // `delta` has no Spanish page.
        let page_langs: &[&str] = if slug == "delta" {
            &["en"]
        } else {
            &["en", "es"]
        };
        let mut pages = Vec::new();
        for lang in page_langs {
            let source = SourceEntry {
                hash: hash(slug.as_bytes()),
                stamp: None,
                summary: summary(slug, lang),
            };
            pages.push((
                lang.to_string(),
                PageEntry {
                    source,
                    output: None,
                    neighbours: None,
                },
            ));
            sources.push(Source {
                src: content::page_source(slug, lang, &dir),
                hash: hash(slug.as_bytes()),
                summary: summary(slug, lang),
                stamp: None,
            });
        }
        let guide = GuideEntry {
            folder: None,
            pages,
            data: None,
        };
        guides.insert(slug.to_string(), guide);
    }
    sources.sort_by(|a, b| (&a.src.slug, &a.src.lang).cmp(&(&b.src.slug, &b.src.lang)));
    let context = ShardContext {
        digest: hash(b"context"),
        languages: langs.clone(),
    };
    let mut manifest = Manifest::new(guides, BTreeMap::new()).with_context(context);
    manifest.changed_shards();
    let headers = manifest.stored().unwrap().headers().to_vec();
    let langs_of = |slug: &str| if slug == "delta" { "en" } else { "en,es" };
    let pages = || sources.iter().map(|s| (s, langs_of(&s.src.slug)));
    let site = hash(b"site");
    let open = listing_inputs(pages(), &[false; SHARDS], None, &langs, &site);
    let closed = listing_inputs(pages(), &[true; SHARDS], Some(&headers), &langs, &site);
    assert_eq!(open, closed);
    // Half open, half from headers: the same again.
    let mut half = [false; SHARDS];
    half[shard_of("alpha")] = true;
    let mixed = listing_inputs(pages(), &half, Some(&headers), &langs, &site);
    assert_eq!(open, mixed);
    // And a title change shows.
    let mut renamed = sources.clone();
    renamed[0].summary.title = "Renamed".into();
    let pages = renamed.iter().map(|s| (s, langs_of(&s.src.slug)));
    let changed = listing_inputs(pages, &[false; SHARDS], None, &langs, &site);
    assert_ne!(open.indexes[0], changed.indexes[0]);
    assert_ne!(open.sitemap, changed.sitemap);
    // The search parts hash the pages' bytes (unchanged here), not their summaries.
    assert_eq!(open.search, changed.search);
    // So does a description that goes, even to an empty one.
    let mut blank = sources.clone();
    blank[0].summary.description = Some(String::new());
    let pages = blank.iter().map(|s| (s, langs_of(&s.src.slug)));
    let blanked = listing_inputs(pages, &[false; SHARDS], None, &langs, &site);
    assert_ne!(open.indexes[0], blanked.indexes[0]);
    blank[0].summary.description = None;
    let pages = blank.iter().map(|s| (s, langs_of(&s.src.slug)));
    assert_ne!(
        blanked,
        listing_inputs(pages, &[false; SHARDS], None, &langs, &site)
    );
}
