//! Incremental builds: only what changed is rendered and written, and the result is the same as
//! a clean build's, whatever the thread count.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::SystemTime;

use crate::support::{Run, SiteTest};

/// Asserts that a build's output says `text` (its per-language counts).
fn says(run: &Run, text: &str) {
    assert!(run.stdout.contains(text), "{}", run.stdout);
}

const SCENARIO: &str = "scenario:\n  n_layer: 6\n  n_head: 6\n  n_embd: 384\n  block_size: 512\n  batch_size: 16\n  dtype: float16\n  gpu: GPU\n";

fn computed(t: &SiteTest, slug: &str, lang: &str, gpu: &str, title: &str) {
    t.file(
        &format!("content/{slug}/{lang}.md"),
        &format!(
            "---\ntitle: {title}\nlang: {lang}\ndate: 2026-11-20\n{}---\n\nPeak {{{{ bytes.peak | bytes }}}}.\n\n{{{{ breakdown_table() }}}}\n\n{{{{ chart(\"breakdown\") }}}}\n",
            SCENARIO.replace("GPU", gpu)
        ),
    );
}

/// Waits out the 2 s in which a fresh file's stamp is not trusted, so every later build records
/// the same stamps however slowly a loaded machine runs it (tests that compare manifests).
fn settle() {
    std::thread::sleep(std::time::Duration::from_millis(2100));
}

/// Two computed guides on different GPUs and one plain guide, in three languages.
fn site() -> SiteTest {
    let t = SiteTest::new();
    for lang in ["en", "es", "zh"] {
        computed(
            &t,
            "on-4070",
            lang,
            "rtx-4070",
            &format!("On a 4070 {lang}"),
        );
        computed(
            &t,
            "on-a100",
            lang,
            "a100-80gb",
            &format!("On an A100 {lang}"),
        );
        t.guide("plain", lang, &format!("Plain {lang}"), "No numbers here.");
    }
    t
}

fn mtimes(t: &SiteTest) -> BTreeMap<PathBuf, SystemTime> {
    t.snapshot_output()
        .into_iter()
        .map(|(p, _)| {
            let m = std::fs::metadata(t.root().join("public").join(&p))
                .unwrap()
                .modified()
                .unwrap();
            (p, m)
        })
        .collect()
}

fn changed(
    before: &BTreeMap<PathBuf, SystemTime>,
    after: &BTreeMap<PathBuf, SystemTime>,
) -> Vec<String> {
    after
        .iter()
        .filter(|(p, m)| before.get(*p) != Some(m))
        .map(|(p, _)| p.to_string_lossy().replace('\\', "/"))
        .filter(|p| !p.starts_with(".vramdoc-manifest/"))
        .collect()
}

#[test]
fn no_change_rebuild_rewrites_nothing() {
    let t = site();
    t.build_ok();
    let before = mtimes(&t);
    let bytes = t.snapshot_output();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let run = t.build_ok();
    says(&run, "en: rebuilt 0, unchanged 3, removed 0");
    assert_eq!(changed(&before, &mtimes(&t)), Vec::<String>::new());
    assert_eq!(bytes, t.snapshot_output());
}

#[test]
fn editing_one_guide_rebuilds_exactly_its_page() {
    let t = site();
    t.build_ok();
    let before = mtimes(&t);
    std::thread::sleep(std::time::Duration::from_millis(20));
    t.guide("plain", "es", "Plain es", "Ahora con otra frase.");
    let run = t.build_ok();
    says(&run, "es: rebuilt 1, unchanged 2, removed 0");
    says(&run, "en: rebuilt 0, unchanged 3");
    assert_eq!(
        changed(&before, &mtimes(&t)),
        vec![
            "es/plain/index.html".to_string(),
            "es/plain/index.md".to_string(),
            // The part of the Spanish search index holding the guide.
            format!(
                "es/search/{:02x}.js",
                vramdoc::site::manifest::shard_of("plain")
            ),
        ]
    );
}

#[test]
fn deleting_a_guide_removes_its_outputs() {
    let t = site();
    t.build_ok();
    std::fs::remove_dir_all(t.root().join("content/plain")).unwrap();
    let run = t.build_ok();
    // The guide before it loses its "next" link.
    says(&run, "zh: rebuilt 1, unchanged 1, removed 1");
    assert!(!t.output("zh/on-a100/index.html").contains("../plain/"));
    for lang in ["en", "es", "zh"] {
        assert!(
            !t.root().join(format!("public/{lang}/plain")).exists(),
            "{lang}"
        );
        assert!(!t.output(&format!("{lang}/index.html")).contains("plain/"));
    }
    assert!(!t.output("sitemap.xml").contains("/plain/"));
}

#[test]
fn catalog_change_rebuilds_exactly_the_pages_whose_numbers_change() {
    let t = site();
    t.build_ok();
    let before = mtimes(&t);
    std::thread::sleep(std::time::Duration::from_millis(20));
    // The site's own catalog changes the A100's capacity: only that guide's numbers move.
    t.file("data/gpus.yaml", "gpus:\n  - id: a100-80gb\n    name: NVIDIA A100 80GB (site)\n    capacity_bytes: 81000000000\n    memory_gb_marketing: 80\n");
    let run = t.build_ok();
    for lang in ["en", "es", "zh"] {
        says(&run, &format!("{lang}: rebuilt 1, unchanged 2"));
    }
    let changed = changed(&before, &mtimes(&t));
    // The guide's pages, and the search parts holding it (their figures changed too).
    let part = format!(
        "/search/{:02x}.js",
        vramdoc::site::manifest::shard_of("on-a100")
    );
    assert!(
        changed
            .iter()
            .all(|p| p.contains("/on-a100/") || p.ends_with(&part)),
        "{changed:?}"
    );
    assert!(changed.contains(&"zh/on-a100/index.html".to_string()));
    assert!(changed.contains(&format!("zh{part}")), "{changed:?}");
    assert!(t
        .output("es/on-a100/index.html")
        .contains("NVIDIA A100 80GB (site)"));
}

#[test]
fn scenario_change_rebuilds_that_guide_in_every_language() {
    let t = site();
    t.build_ok();
    for lang in ["en", "es", "zh"] {
        computed(
            &t,
            "on-4070",
            lang,
            "rtx-3090",
            &format!("On a 4070 {lang}"),
        );
    }
    let run = t.build_ok();
    for lang in ["en", "es", "zh"] {
        says(&run, &format!("{lang}: rebuilt 1, unchanged 2"));
        assert!(t
            .output(&format!("{lang}/on-4070/index.html"))
            .contains("3090"));
    }
}

#[test]
fn incremental_result_equals_a_clean_build() {
    let t = site();
    t.build_ok();
    t.guide("plain", "zh", "新标题", "改过的正文。");
    std::fs::remove_dir_all(t.root().join("content/on-a100")).unwrap();
    computed(&t, "added", "en", "t4", "Added");
    settle();
    t.build_ok();
    let incremental = t.snapshot_output();
    let run = t.run(&["build", "--force"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(incremental, t.snapshot_output());
    std::fs::remove_dir_all(t.root().join("public")).unwrap();
    t.build_ok();
    assert_eq!(incremental, t.snapshot_output());
}

#[test]
fn thread_count_does_not_change_the_output() {
    let t = site();
    settle();
    let one = std::process::Command::new(env!("CARGO_BIN_EXE_vramdoc"))
        .args(["build", "--out", "one"])
        .env("RAYON_NUM_THREADS", "1")
        .current_dir(t.root())
        .status()
        .unwrap();
    assert!(one.success());
    let many = std::process::Command::new(env!("CARGO_BIN_EXE_vramdoc"))
        .args(["build", "--out", "many"])
        .env("RAYON_NUM_THREADS", "8")
        .current_dir(t.root())
        .status()
        .unwrap();
    assert!(many.success());
    let read = |dir: &str| {
        let mut files = Vec::new();
        for e in walk(&t.root().join(dir)) {
            files.push((
                e.strip_prefix(t.root().join(dir)).unwrap().to_path_buf(),
                std::fs::read(&e).unwrap(),
            ));
        }
        files.sort();
        files
    };
    assert_eq!(read("one"), read("many"));
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn failed_incremental_build_changes_nothing() {
    let t = site();
    t.build_ok();
    let before = t.snapshot_output();
    t.file("content/plain/en.md", "---\ntitle: [broken\n---\n");
    t.build_err();
    assert_eq!(before, t.snapshot_output());
}

#[test]
fn recent_stamps_are_recorded_only_once_old_enough() {
    use vramdoc::site::manifest::Manifest;
    let t = site();
    t.build_ok();
    let out = t.root().join("public");
    let stamped = |m: &Manifest| {
        m.guides
            .values()
            .flat_map(|g| &g.pages)
            .filter(|(_, p)| p.source.stamp.is_some())
            .count()
    };
    // Files written a moment ago: too recent to record.
    assert_eq!(stamped(&Manifest::read(&out).unwrap()), 0);
    t.build_later(false);
    assert_eq!(stamped(&Manifest::read(&out).unwrap()), 9);
}

#[test]
fn trusted_stamps_still_see_same_size_edits_and_new_files() {
    let t = site();
    t.build_ok();
    // Stamps younger than the file system's timestamp granularity are not trusted; once the
    // sources are older, a build records them and the next one skips reading unchanged files.
    t.build_later(false);
    let page = t.root().join("content/plain/es.md");
    let modified = std::fs::metadata(&page).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(&page).unwrap();
    let edited = text.replace("No numbers here.", "No numbers HERE.");
    assert_eq!(edited.len(), text.len());
    std::fs::write(&page, &edited).unwrap();
    // Same size, modification time put back: only the status-change time tells.
    std::fs::File::options()
        .write(true)
        .open(&page)
        .unwrap()
        .set_modified(modified)
        .unwrap();
    let run = t.build_ok();
    says(&run, "es: rebuilt 1, unchanged 2");
    assert!(t.output("es/plain/index.html").contains("No numbers HERE."));
    // A new file in a guide folder whose stamp was trusted is still seen.
    t.guide("plain", "fr", "Plain fr", "Pas de chiffres.");
    let run = t.build_err();
    assert!(
        run.stderr.contains("content/plain/fr.md") && run.stderr.contains("not a configured"),
        "{}",
        run.stderr
    );
}

#[test]
fn unchanged_manifest_shards_are_trusted_unread() {
    use vramdoc::site::manifest::{shard_of, DIR};
    let t = site();
    let shard = |slug: &str| {
        t.root()
            .join(format!("public/{DIR}/{:02x}", shard_of(slug)))
    };
    let slugs = ["on-4070", "on-a100", "plain"];
    assert!(
        slugs
            .iter()
            .all(|a| slugs.iter().filter(|b| shard_of(a) == shard_of(b)).count() == 1),
        "the test needs each guide in a shard of its own"
    );
    t.build_ok();
    // Once the sources are older than the timestamp granularity, a build records their stamps in
    // the shard headers and the next build trusts a shard whose stamps all match, unread.
    t.build_later(false);
    let whole = std::fs::read(shard("on-a100")).unwrap();
    std::fs::write(shard("on-a100"), &whole[..whole.len() - 8]).unwrap();
    let run = t.build_ok();
    assert!(
        run.stdout.contains("en: rebuilt 0, unchanged 3, removed 0"),
        "a truncated shard of unchanged guides was read: {}",
        run.stdout
    );
    std::fs::write(shard("on-a100"), &whole).unwrap();

    // A new title changes the language index, which lists every guide, closed shards' too, and
    // the page of the guide before it (its "next" link).
    t.guide("plain", "en", "Plain renamed", "No numbers here.");
    let run = t.build_ok();
    says(&run, "en: rebuilt 2, unchanged 1, removed 0");
    assert!(t.output("en/on-a100/index.html").contains("Plain renamed"));
    let index = t.output("en/index.html");
    for title in ["Plain renamed", "On a 4070 en", "On an A100 en"] {
        assert!(index.contains(title), "{title} missing from {index}");
    }
    // A body edit leaves the indexes alone.
    t.guide("plain", "zh", "Plain zh", "只改了正文。");
    let run = t.build_ok();
    says(&run, "zh: rebuilt 1, unchanged 2, removed 0");
    // A new guide and a deleted one: the indexes and the sitemap follow.
    t.guide("extra", "en", "Extra en", "One more.");
    let run = t.build_ok();
    // The new guide and the one it now precedes.
    says(&run, "en: rebuilt 2, unchanged 2, removed 0");
    let index = t.output("en/index.html");
    for title in ["Extra en", "Plain renamed", "On a 4070 en", "On an A100 en"] {
        assert!(index.contains(title), "{title} missing from {index}");
    }
    std::fs::remove_dir_all(t.root().join("content/on-4070")).unwrap();
    let run = t.build_ok();
    says(&run, "es: rebuilt 1, unchanged 1, removed 1");
    assert!(!t.output("sitemap.xml").contains("/on-4070/"));
    assert!(t.output("sitemap.xml").contains("/extra/"));

    // A catalog change rebuilds one guide, and rewrites every shard against the new catalog so
    // that the next build can trust them again.
    let plain_shard = std::fs::read(shard("plain")).unwrap();
    t.file("data/gpus.yaml", "gpus:\n  - id: a100-80gb\n    name: NVIDIA A100 80GB (site)\n    capacity_bytes: 81000000000\n    memory_gb_marketing: 80\n");
    let run = t.build_ok();
    says(&run, "es: rebuilt 1, unchanged 1, removed 0");
    assert_ne!(plain_shard, std::fs::read(shard("plain")).unwrap());

    // All of it left what a clean build makes (both at the same clock, so that they record the
    // same stamps).
    t.build_later(false);
    let incremental = t.snapshot_output();
    t.build_later(true);
    assert!(incremental == t.snapshot_output());
}

#[test]
fn remembered_builds_check_only_what_the_watcher_reported() {
    use vramdoc::site::{build_with, BuildOptions, KeptBuild};
    let t = site();
    let opts = BuildOptions::new(t.root(), None).quiet(true);
    let mut memory = KeptBuild::new();
    settle();
    let counts = |r: &vramdoc::site::BuildReport, lang: &str| {
        let c = r.per_lang[lang];
        (c.rebuilt, c.unchanged, c.removed)
    };
    let first = build_with(&opts, &mut memory).unwrap();
    assert_eq!(counts(&first, "en"), (3, 0, 0));
    // A new guide, an edited page and a deleted guide, each reported by the watcher.
    t.guide("fresh", "en", "Fresh en", "New.");
    t.guide("plain", "zh", "Plain zh", "现在有新的一句。");
    std::fs::remove_dir_all(t.root().join("content/on-a100")).unwrap();
    memory.changed(&[
        PathBuf::from("content/fresh/en.md"),
        PathBuf::from("content/plain/zh.md"),
        PathBuf::from("content/on-a100"),
    ]);
    settle();
    let next = build_with(&opts, &mut memory).unwrap();
    // With their neighbours: the guides beside the new and the deleted one change links.
    assert_eq!(counts(&next, "en"), (3, 0, 1));
    assert_eq!(counts(&next, "es"), (2, 0, 1));
    assert_eq!(counts(&next, "zh"), (2, 0, 1));
    assert!(t.output("zh/plain/index.html").contains("现在有新的一句。"));
    // Nothing reported: nothing to do.
    let idle = build_with(&opts, &mut memory).unwrap();
    assert_eq!(counts(&idle, "en"), (0, 3, 0));
    // A body edit: the shards of the guides not reported stay as they are in memory.
    t.guide("plain", "en", "Plain en", "A new sentence.");
    memory.changed(&[PathBuf::from("content/plain/en.md")]);
    settle();
    let edit = build_with(&opts, &mut memory).unwrap();
    assert_eq!(counts(&edit, "en"), (1, 2, 0));
    assert_eq!(counts(&edit, "zh"), (0, 2, 0));
    // A new title re-renders the indexes, which list the guides of every shard.
    computed(&t, "on-4070", "es", "rtx-4070", "En una 4070, otra vez");
    memory.changed(&[PathBuf::from("content/on-4070/es.md")]);
    settle();
    let retitled = build_with(&opts, &mut memory).unwrap();
    // The retitled page and the one whose "previous" link shows the title.
    assert_eq!(counts(&retitled, "es"), (2, 0, 0));
    assert!(t
        .output("es/plain/index.html")
        .contains("En una 4070, otra vez"));
    let index = t.output("es/index.html");
    assert!(
        index.contains("En una 4070, otra vez") && index.contains("Plain es"),
        "{index}"
    );
    // The remembered builds left what a clean build makes.
    let remembered = t.snapshot_output();
    let run = t.run(&["build", "--force", "--quiet"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(remembered, t.snapshot_output());
}

#[test]
fn root_spelling_and_serve_share_one_cache() {
    // Site inputs under every folder the build hashes: a template, a locale file, a static file.
    let t = site();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for rel in [
        "templates/guide.html",
        "locales/es/guide.ftl",
        "static/style.css",
    ] {
        t.file(rel, &std::fs::read_to_string(repo.join(rel)).unwrap());
    }
    t.file(
        "data/gpus.yaml",
        "gpus:\n  - id: my-card\n    name: My card\n    capacity_bytes: 12000000000\n",
    );
    t.build_ok();
    let before = mtimes(&t);
    let abs = t.root().to_str().unwrap().to_string();
    let out = t.root().join("public");
    let run = t.run(&["build", "--root", &abs, "--out", out.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for lang in ["en", "es", "zh"] {
        says(&run, &format!("{lang}: rebuilt 0, unchanged 3, removed 0"));
    }
    // `serve` builds through the library with the root made absolute.
    use vramdoc::site::{build_with, BuildOptions, KeptBuild};
    let opts = BuildOptions::new(t.root().to_path_buf(), Some(out)).quiet(true);
    let report = build_with(&opts, &mut KeptBuild::new()).expect("build");
    assert!(
        report.per_lang.values().all(|c| c.rebuilt == 0),
        "{}",
        report.summary(t.root())
    );
    assert_eq!(before, mtimes(&t));
}

#[test]
fn an_empty_description_where_there_was_none_rerenders_the_feed() {
    let t = site();
    t.build_ok();
    assert!(!t.output("en/atom.xml").contains("<summary>"));
    // The feed shows an empty `<summary>` for an empty description: the index job's inputs must
    // tell "empty" from "absent".
    t.file(
        "content/plain/en.md",
        "---\ntitle: \"Plain en\"\nlang: en\ndate: 2026-11-20\ndescription: \"\"\n---\n\nNo numbers here.\n",
    );
    settle();
    t.build_ok();
    assert!(t.output("en/atom.xml").contains("<summary></summary>"));
    let incremental = t.snapshot_output();
    let run = t.run(&["build", "--force", "--quiet"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(incremental == t.snapshot_output());
}
