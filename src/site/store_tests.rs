//! Unit tests of [`super`] (`src/site/store.rs`).
use super::*;
use crate::site::manifest::{
    hash, GuideEntry, Manifest, PageEntry, ShardContext, SourceEntry, Summary,
};
use std::path::Path;
use std::sync::Arc;

use crate::content;
use crate::site::scan::notices_of;
use crate::site::translated::Notices;
use crate::translations::status::SourceSection;

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
    let mut closed = Closed::none();
    let mut changed = inputs();
    changed.indexes[0] = hash(b"renamed");
    assert!(!needs_closed_guides(&langs, &changed, &closed, &recorded));
    closed = Closed::with_shard(1);
    assert!(!needs_closed_guides(&langs, &inputs(), &closed, &recorded));
    assert!(needs_closed_guides(&langs, &changed, &closed, &recorded));
    // Shard 0 is open: its search part renders from its own pages.
    let mut part0 = inputs();
    part0.search.digests[0][0] = hash(b"edited");
    assert!(!needs_closed_guides(&langs, &part0, &closed, &recorded));
    let mut part1 = inputs();
    part1.search.digests[0][1] = hash(b"edited");
    assert!(needs_closed_guides(&langs, &part1, &closed, &recorded));
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
        // A section in English; the Spanish translation of `beta` lacks it (missing), the others
        // were never marked (stale): their notices are part of the listings.
        sections: Some(if lang == "es" && slug == "beta" {
            Vec::new()
        } else {
            vec![SourceSection {
                id: "a".into(),
                hash: hash(slug.as_bytes()),
            }]
        }),
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
                page: Default::default(),
            });
        }
        let guide = GuideEntry {
            folder: None,
            pages,
            data: None,
            records: None,
        };
        guides.insert(slug.to_string(), guide);
    }
    sources.sort_by(|a, b| (&a.src.slug, &a.src.lang).cmp(&(&b.src.slug, &b.src.lang)));
    let context = ShardContext {
        digest: hash(b"context"),
        languages: langs.clone(),
        default_language: "en".into(),
    };
    let notices: Vec<Option<Arc<Notices>>> = sources
        .chunk_by(|a, b| a.src.slug == b.src.slug)
        .flat_map(|guide| notices_of(guide, None, "en"))
        .collect();
    assert_eq!(notices.iter().filter(|n| n.is_some()).count(), 3);
    let mut manifest = Manifest::new(guides, BTreeMap::new()).with_context(context);
    manifest.changed_shards();
    let headers = manifest.stored().unwrap().headers().to_vec();
    let langs_of = |slug: &str| if slug == "delta" { "en" } else { "en,es" };
    let pages = || {
        (sources.iter().zip(&notices))
            .map(|(s, n)| (s, langs_of(&s.src.slug), n.as_ref().map(|n| &n.digest)))
    };
    let site = hash(b"site");
    let open = listing_inputs(
        pages(),
        &Closed::none(),
        Headers(None),
        &langs,
        (&site, &site),
    );
    let closed = listing_inputs(
        pages(),
        &Closed::all(),
        Headers(Some(&headers)),
        &langs,
        (&site, &site),
    );
    assert_eq!(open, closed);
    // Half open, half from headers: the same again.
    let mut half = [false; SHARDS];
    half[shard_of("alpha")] = true;
    let mixed = listing_inputs(
        pages(),
        &Closed::of(half),
        Headers(Some(&headers)),
        &langs,
        (&site, &site),
    );
    assert_eq!(open, mixed);
    // A translation's notices show in its language's index and the sitemap.
    let pages = sources.iter().map(|s| (s, langs_of(&s.src.slug), None));
    let unnoticed = listing_inputs(
        pages,
        &Closed::none(),
        Headers(None),
        &langs,
        (&site, &site),
    );
    assert_eq!(open.indexes[0], unnoticed.indexes[0]);
    assert_ne!(open.indexes[1], unnoticed.indexes[1]);
    assert_ne!(open.sitemap, unnoticed.sitemap);
    let with = |s: &Source| {
        let i = sources.iter().position(|x| x.src == s.src).unwrap();
        notices[i].as_ref().map(|n| &n.digest)
    };
    // And a title change shows.
    let mut renamed = sources.clone();
    renamed[0].summary.title = "Renamed".into();
    let pages = renamed.iter().map(|s| (s, langs_of(&s.src.slug), with(s)));
    let changed = listing_inputs(
        pages,
        &Closed::none(),
        Headers(None),
        &langs,
        (&site, &site),
    );
    assert_ne!(open.indexes[0], changed.indexes[0]);
    assert_ne!(open.sitemap, changed.sitemap);
    // The search parts hash the pages' bytes (unchanged here), not their summaries.
    assert_eq!(open.search, changed.search);
    // So does a description that goes, even to an empty one.
    let mut blank = sources.clone();
    blank[0].summary.description = Some(String::new());
    let pages = blank.iter().map(|s| (s, langs_of(&s.src.slug), with(s)));
    let blanked = listing_inputs(
        pages,
        &Closed::none(),
        Headers(None),
        &langs,
        (&site, &site),
    );
    assert_ne!(open.indexes[0], blanked.indexes[0]);
    blank[0].summary.description = None;
    let pages = blank.iter().map(|s| (s, langs_of(&s.src.slug), with(s)));
    assert_ne!(
        blanked,
        listing_inputs(
            pages,
            &Closed::none(),
            Headers(None),
            &langs,
            (&site, &site)
        )
    );
}
