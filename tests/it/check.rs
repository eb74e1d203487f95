//! `vramdoc check`: each kind of problem is caught, and a clean, freshly built site passes.

use crate::support::SiteTest;

fn site() -> SiteTest {
    let t = SiteTest::new();
    for lang in ["en", "es", "zh"] {
        t.guide("basics", lang, &format!("Basics {lang}"), "Body.");
    }
    t.mark("es", "basics").mark("zh", "basics");
    t
}

fn check_json(t: &SiteTest) -> (i32, serde_json::Value) {
    let run = t.run(&["check", "--format", "json"]);
    let v: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    (run.code, v)
}

fn kinds(v: &serde_json::Value) -> Vec<String> {
    v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_fresh_build_passes() {
    let t = site();
    t.build_ok();
    let run = t.run(&["check"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains("check passed"));
    assert!(run.stdout.contains("basics") && run.stdout.contains("up to date"));
}

#[test]
fn unbuilt_and_stale_output_fail() {
    let t = site();
    let (code, v) = check_json(&t);
    assert_eq!(code, 1);
    assert!(kinds(&v).contains(&"stale".to_string()));
    t.build_ok();
    t.guide("basics", "es", "Basics es", "Cambiado.");
    let (code, v) = check_json(&t);
    assert_eq!(code, 1);
    let stale: Vec<_> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "stale")
        .collect();
    // The page and the search index of its language, which reads its text.
    assert_eq!(stale.len(), 2, "{v}");
    let messages: Vec<&str> = stale
        .iter()
        .map(|p| p["message"].as_str().unwrap())
        .collect();
    assert!(messages.iter().any(|m| m.contains("page:es/basics")), "{v}");
    assert!(messages.iter().any(|m| m.contains("search:es")), "{v}");
}

#[test]
fn missing_and_outdated_translations_are_a_table() {
    let t = site();
    t.guide("only-english", "en", "Only English", "Body.");
    t.file("content/basics/en.md", "---\ntitle: Basics en\nlang: en\ndate: 2026-11-20\nupdated: 2026-12-01\n---\n\nNew text.\n");
    t.build_ok();
    let (code, v) = check_json(&t);
    assert_eq!(code, 1);
    assert_eq!(
        v["translations"]["basics"],
        serde_json::json!(["up-to-date", "outdated", "outdated"])
    );
    assert_eq!(
        v["translations"]["only-english"],
        serde_json::json!(["up-to-date", "missing", "missing"])
    );
    let k = kinds(&v);
    assert_eq!(k.iter().filter(|k| *k == "missing-translation").count(), 2);
    // The English intro changed since es and zh were marked: one stale section in each.
    assert_eq!(
        k.iter().filter(|k| *k == "stale-translation").count(),
        2,
        "{v}"
    );
    let text = t.run(&["check"]).stdout;
    assert!(
        text.contains("outdated") && text.contains("missing"),
        "{text}"
    );
}

#[test]
fn a_missing_ui_string_fails() {
    let t = site();
    t.file("locales/en/extra.ftl", "only-english = Only in English\n");
    t.build_ok();
    let (code, v) = check_json(&t);
    assert_eq!(code, 1);
    let missing: Vec<_> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "missing-string")
        .collect();
    assert_eq!(missing.len(), 2, "{v}");
    assert!(missing[0]["message"]
        .as_str()
        .unwrap()
        .contains("only-english"));
}

#[test]
fn broken_internal_links_and_images_fail() {
    let t = site();
    t.guide("basics", "en", "Basics en", "See [the other guide](../nowhere/) and ![a chart](missing.svg), or [fine](../../es/basics/).");
    t.build_ok();
    let (code, v) = check_json(&t);
    assert_eq!(code, 1);
    let broken: Vec<String> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "broken-link")
        .map(|p| p["message"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(broken.iter().any(|m| m.contains("../nowhere/")));
    assert!(broken.iter().any(|m| m.contains("missing.svg")));
}

#[test]
fn build_errors_are_problems_and_nothing_is_written() {
    let t = site();
    t.build_ok();
    let before = t.snapshot_output();
    t.file(
        "content/basics/zh.md",
        "---\ntitle: x\nlang: zh\n---\n\n{{ bytes.peak }}\n",
    );
    let (code, v) = check_json(&t);
    assert_eq!(code, 1);
    let errors: Vec<_> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "error")
        .collect();
    assert!(!errors.is_empty(), "{v}");
    assert!(
        errors[0]["file"]
            .as_str()
            .unwrap()
            .starts_with("content/basics/zh.md:6"),
        "{v}"
    );
    assert_eq!(before, t.snapshot_output());
}
