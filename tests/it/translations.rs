//! Section-level translation staleness through the real binary, over a copy of the bundled
//! site: `translations status|mark`, `check`, the readers' notices in both editions, and
//! incremental builds that re-render exactly the pages whose notices change.

use std::path::Path;

use crate::support::{Run, SiteTest};

const GUIDE: &str = "oom-124m-on-12gb";

/// A copy of the bundled site (configuration and guides with their records).
fn bundled() -> SiteTest {
    let t = SiteTest::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    t.file(
        "vramdoc.yaml",
        &std::fs::read_to_string(repo.join("vramdoc.yaml")).unwrap(),
    );
    for guide in std::fs::read_dir(repo.join("content")).unwrap().flatten() {
        for file in std::fs::read_dir(guide.path()).unwrap().flatten() {
            let rel = format!(
                "content/{}/{}",
                guide.file_name().to_string_lossy(),
                file.file_name().to_string_lossy()
            );
            t.file(&rel, &std::fs::read_to_string(file.path()).unwrap());
        }
    }
    t
}

fn read(t: &SiteTest, rel: &str) -> String {
    std::fs::read_to_string(t.root().join(rel)).unwrap()
}

/// Edits `content/GUIDE/<lang>.md`, replacing `from` (which must be there) with `to`, and waits
/// out the build's 2-second distrust of fresh timestamps so the next build sees it by its stamp.
fn edit(t: &SiteTest, lang: &str, from: &str, to: &str) {
    let rel = format!("content/{GUIDE}/{lang}.md");
    let text = read(t, &rel);
    assert!(text.contains(from), "{from} not in {rel}");
    t.file(&rel, &text.replacen(from, to, 1));
}

/// `translations status --format json`: (lang, section) of every section not current.
fn drift(t: &SiteTest) -> Vec<(String, String, String)> {
    let run = t.run(&["translations", "status", "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let rows: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    rows.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["state"] != "current")
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            (s("lang"), s("section"), s("state"))
        })
        .collect()
}

/// `(en, es, zh)` pages rebuilt, from a build's summary line.
fn rebuilt(run: &Run) -> [usize; 3] {
    ["en", "es", "zh"].map(|lang| {
        let at = run
            .stdout
            .find(&format!("{lang}: rebuilt "))
            .unwrap_or_else(|| panic!("{}", run.stdout));
        let rest = &run.stdout[at + lang.len() + 10..];
        rest[..rest.find(',').unwrap()].parse().unwrap()
    })
}

#[test]
fn a_fresh_copy_of_the_bundled_site_checks_clean() {
    let t = bundled();
    assert!(drift(&t).is_empty(), "{:?}", drift(&t));
    t.build_ok();
    let run = t.run(&["check", "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let sections = v["sections"].as_array().unwrap();
    // Every source section of every guide, in es and zh: 53 sections in 8 guides.
    assert_eq!(sections.len(), 2 * 53, "{v}");
    assert!(sections
        .iter()
        .all(|s| s["state"] == "current" && s["guide"].is_string() && s["section"].is_string()));
    assert_eq!(
        v["translations"][GUIDE],
        serde_json::json!(["up-to-date", "up-to-date", "up-to-date"])
    );
    assert!(!t.output("es/index.html").is_empty());
    assert!(!Path::new(
        &t.root()
            .join("public")
            .join(GUIDE)
            .join("translations.yaml")
    )
    .exists());
    // Readers' status pages and llms.txt: complete.
    for lang in ["es", "zh"] {
        let page = t.output(&format!("{lang}/translation-status.html"));
        assert!(
            page.contains("class=\"translation-complete\"")
                && !page.contains("data-state=\"stale\"")
        );
        assert!(t
            .output(&format!("{lang}/index.html"))
            .contains("href=\"translation-status.html\""));
    }
    let llms = t.output("llms.txt");
    assert_eq!(
        llms.matches("This language version is complete").count(),
        2,
        "{llms}"
    );
}

#[test]
fn an_english_edit_shows_as_notices_until_marked_and_rebuilds_only_what_changes() {
    let t = bundled();
    t.build_ok();
    // A meaningful edit: one section stale in es and zh; the three pages render again.
    edit(
        &t,
        "en",
        "Last resort: a shorter",
        "Last resort, and only then: a shorter",
    );
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let expected = |lang: &str| {
        (
            lang.to_string(),
            "what-to-change-in-order".to_string(),
            "stale".to_string(),
        )
    };
    assert_eq!(drift(&t), [expected("es"), expected("zh")]);
    assert_eq!(rebuilt(&t.build_ok()), [1, 1, 1]);
    let es = t.output(&format!("es/{GUIDE}/index.html"));
    assert_eq!(
        es.matches("class=\"translation-notice\" data-state=\"stale\"")
            .count(),
        1,
        "{es}"
    );
    assert!(es.contains("Esta sección cambió en el original (English) después de traducirse."));
    assert!(es.contains(&format!(
        "href=\"../../en/{GUIDE}/index.html#what-to-change-in-order\""
    )));
    let status = t.output("es/translation-status.html");
    assert!(
        status.contains("<li data-section=\"what-to-change-in-order\" data-state=\"stale\">"),
        "{status}"
    );
    assert_eq!(status.matches("data-state=\"stale\"").count(), 1);
    let llms = t.output("llms.txt");
    assert!(llms.contains("(incomplete translation: 1 stale and 0 missing of 6 sections; the original: https://vramdoc.example.org/en/oom-124m-on-12gb/index.md)"), "{llms}");
    let zh_md = t.output(&format!("zh/{GUIDE}/index.md"));
    assert!(zh_md.contains(&format!("> 本节译出后，原文（English）已有改动。 [阅读原文](https://vramdoc.example.org/en/{GUIDE}/index.html#what-to-change-in-order)")), "{zh_md}");
    // check fails with the word diff...
    let run = t.run(&["check"]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("stale-translation: content/oom-124m-on-12gb/es.md: section `what-to-change-in-order` changed"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("5. Last [-resort:-] {+resort, and only then:+} a shorter `block_size`"),
        "{}",
        run.stdout
    );
    // ...unless the site treats staleness as a warning.
    let config = read(&t, "vramdoc.yaml");
    t.file(
        "vramdoc.yaml",
        &format!("{config}translations: {{ stale: warning }}\n"),
    );
    t.build_ok();
    let run = t.run(&["check"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains("stale-translation"), "{}", run.stdout);
    t.file("vramdoc.yaml", &config);
    t.build_ok();
    // A cosmetic edit in English: the English page renders again, no translation does.
    edit(
        &t,
        "en",
        "Last resort, and only then: a shorter",
        "Last resort, and  only then:\na shorter",
    );
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert_eq!(rebuilt(&t.build_ok()), [1, 0, 0]);
    // Marking es: only the Spanish page renders again, without its notice.
    let run = t.run(&[
        "translations",
        "mark",
        "es",
        GUIDE,
        "what-to-change-in-order",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert_eq!(drift(&t), [expected("zh")]);
    assert_eq!(rebuilt(&t.build_ok()), [0, 1, 0]);
    assert!(!t
        .output(&format!("es/{GUIDE}/index.html"))
        .contains("translation-notice"));
    // The records are in the repository, readable in review.
    let records = read(&t, &format!("content/{GUIDE}/translations.yaml"));
    assert!(
        records.contains("Last resort, and  only then:\n      a shorter"),
        "{records}"
    );
}

#[test]
fn a_changed_scenario_rerenders_every_language_and_marks_nothing() {
    let t = bundled();
    t.build_ok();
    for lang in ["en", "es", "zh"] {
        edit(&t, lang, "  batch_size: 16\n", "  batch_size: 12\n");
    }
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert!(drift(&t).is_empty(), "{:?}", drift(&t));
    assert_eq!(rebuilt(&t.build_ok()), [1, 1, 1]);
    assert!(!t
        .output(&format!("es/{GUIDE}/index.html"))
        .contains("translation-notice"));
    // `updated:` is a date readers see, not what makes a translation stale.
    edit(
        &t,
        "en",
        "date: 2026-11-20\n",
        "date: 2026-11-20\nupdated: 2027-01-01\n",
    );
    assert!(drift(&t).is_empty());
}

#[test]
fn a_missing_section_shows_the_source_and_misaligned_sections_fail() {
    let t = bundled();
    let zh = read(&t, &format!("content/{GUIDE}/zh.md"));
    let cut = zh.find("## 如何验证").unwrap();
    t.file(&format!("content/{GUIDE}/zh.md"), &zh[..cut]);
    t.build_ok();
    assert_eq!(
        drift(&t),
        [(
            "zh".to_string(),
            "how-to-verify".to_string(),
            "missing".to_string()
        )]
    );
    let html = t.output(&format!("zh/{GUIDE}/index.html"));
    let notice = html
        .find("data-state=\"missing\"")
        .expect("a missing-section notice");
    assert!(
        html[notice..].contains("Print PyTorch's own counters"),
        "the English section follows"
    );
    let md = t.output(&format!("zh/{GUIDE}/index.md"));
    assert!(
        md.contains("> 本节尚未翻译，以下为原文（English）。") && md.contains("## How to verify")
    );
    let run = t.run(&["check", "--format", "json"]);
    assert!(
        run.stdout.contains("\"kind\": \"missing-section\""),
        "{}",
        run.stdout
    );
    // A section the source does not have, and sections out of order: errors even as warnings.
    t.file(
        "vramdoc.yaml",
        &format!(
            "{}translations: {{ stale: warning }}\n",
            read(&t, "vramdoc.yaml")
        ),
    );
    edit(&t, "es", "{#how-to-verify}", "{#how-to-check}");
    let run = t.run(&["check"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .contains("section `how-to-check` is not in content/oom-124m-on-12gb/en.md"),
        "{}",
        run.stdout
    );
}

#[test]
fn bad_records_and_bad_marks_are_clear_errors() {
    let t = bundled();
    let rel = format!("content/{GUIDE}/translations.yaml");
    let records = read(&t, &rel);
    let first_hash = records.find("hash: ").unwrap() + 6;
    let mut broken = records.clone();
    broken.replace_range(first_hash..first_hash + 4, "zzzz");
    t.file(&rel, &broken);
    let run = t.run(&["build"]);
    assert_eq!(run.code, 1);
    let line = records[..first_hash].matches('\n').count() + 1;
    assert!(
        run.stderr.contains(&format!("{rel}:{line}:1")) && run.stderr.contains("32-digit"),
        "{}",
        run.stderr
    );
    t.file(&rel, &records);
    for (args, says) in [
        (vec!["en", GUIDE], "not a translation language"),
        (vec!["fr", GUIDE], "not a translation language"),
        (vec!["es", "no-such-guide"], "there is no guide"),
        (
            vec!["es", GUIDE, "no-such-section"],
            "has no section `no-such-section`",
        ),
    ] {
        let mut full = vec!["translations", "mark"];
        full.extend(args);
        let run = t.run(&full);
        assert_eq!(run.code, 1, "{full:?}");
        assert!(run.stderr.contains(says), "{full:?}: {}", run.stderr);
    }
    assert_eq!(read(&t, &rel), records, "a refused mark writes nothing");
}

#[test]
fn a_translation_never_marked_shows_no_notices_and_check_says_so() {
    let t = SiteTest::new();
    t.guide(
        "g",
        "en",
        "G",
        "## Setup\n\nInstall it.\n\n## Use\n\nRun it.\n",
    );
    t.guide("g", "es", "G es", "## Preparación {#setup}\n\nInstálalo.\n");
    t.guide(
        "g",
        "zh",
        "G zh",
        "## 准备 {#setup}\n\n安装。\n\n## 使用 {#use}\n\n运行。\n",
    );
    t.mark("zh", "g");
    t.build_ok();
    // es was never marked: no notices, not even for the section it lacks.
    assert!(!t.output("es/g/index.html").contains("translation-notice"));
    let status = t.output("es/translation-status.html");
    assert!(
        status.contains("data-state=\"untracked\"") && status.contains("sin registro"),
        "{status}"
    );
    assert!(!status.contains("translation-complete"));
    assert!(t.output("llms.txt").contains("(translation not tracked: no record of what it was translated from; the original: https://example.org/docs/en/g/index.md)"));
    let run = t.run(&["check"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .contains("stale-translation: content/g/es.md: was never marked"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("missing-section: content/g/es.md: has no section `use`"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("content/g/zh.md"), "{}", run.stdout);
    let text = t.run(&["translations", "status", "--lang", "es"]).stdout;
    assert_eq!(
        text,
        "g es: 0 current, 1 stale, 1 missing (never marked)\n  stale setup\n  missing use\n"
    );
    // zh is tracked and complete.
    let zh = t.output("zh/translation-status.html");
    assert!(zh.contains("translation-complete"), "{zh}");
}
