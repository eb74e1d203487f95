//! The offline search index (`<lang>/search-index.js`) through the real binary: Chinese cut into
//! bigrams, Spanish accents and case folded, results in the page's language, section anchors
//! that exist, deterministic bytes, and incremental rebuilds that follow every page's text.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;

use crate::support::SiteTest;

/// Reads a language's index from the output folder `out` (relative to the site root): the
/// object the script assigns.
fn index_in(t: &SiteTest, out: &str, lang: &str) -> Value {
    let path = t.root().join(out).join(lang).join("search-index.js");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let json = text
        .split_once("window.vramdocSearch = ")
        .expect("the script assigns window.vramdocSearch")
        .1
        .trim_end()
        .trim_end_matches(';');
    serde_json::from_str(json).expect("the index is JSON")
}

fn index(t: &SiteTest, lang: &str) -> Value {
    index_in(t, "public", lang)
}

/// The sections holding `term`, with the term's weight there.
fn postings(index: &Value, term: &str) -> Vec<(usize, u64)> {
    let Some(flat) = index["terms"][term].as_array() else {
        return Vec::new();
    };
    let mut sec = 0;
    flat.chunks(2)
        .map(|pair| {
            sec += pair[0].as_u64().unwrap() as usize;
            (sec, pair[1].as_u64().unwrap())
        })
        .collect()
}

/// The guide (slug) a section belongs to.
fn slug_of(index: &Value, section: usize) -> String {
    let doc = index["sections"][section][0].as_u64().unwrap() as usize;
    let href = index["docs"][doc][1].as_str().unwrap();
    href.trim_end_matches("/index.html").to_string()
}

/// The guides holding every term, as the page's script finds them.
fn guides_with(index: &Value, terms: &[&str]) -> BTreeSet<String> {
    let mut found: Option<BTreeSet<String>> = None;
    for term in terms {
        let here: BTreeSet<String> = postings(index, term)
            .into_iter()
            .map(|(s, _)| slug_of(index, s))
            .collect();
        found = Some(match found {
            None => here,
            Some(f) => f.intersection(&here).cloned().collect(),
        });
    }
    found.unwrap_or_default()
}

fn set(slugs: &[&str]) -> BTreeSet<String> {
    slugs.iter().map(|s| s.to_string()).collect()
}

/// Two guides in three languages: `vram` speaks of GPU memory and gradient accumulation,
/// `tokens` of tokenizers only.
fn site() -> SiteTest {
    let t = SiteTest::new();
    t.guide(
        "vram",
        "en",
        "Where GPU memory goes",
        "Intro.\n\n## Gradient accumulation\n\nRaise gradient_accumulation_steps when memory runs out.\n",
    );
    t.guide(
        "vram",
        "es",
        "Adónde va la MEMORIA de la GPU",
        "Introducción.\n\n## Acumulación de gradientes\n\nSube la acumulación cuando falta Memoria.\n",
    );
    t.guide(
        "vram",
        "zh",
        "GPU 显存都去哪儿了",
        "简介。\n\n## 梯度累积\n\n显存不够时，增大梯度累积步数并减小批次。\n",
    );
    t.guide("tokens", "en", "Tokenizers", "A tokenizer splits text.\n");
    t.guide(
        "tokens",
        "es",
        "Tokenizadores",
        "Un tokenizador divide el texto.\n",
    );
    t.guide("tokens", "zh", "分词器", "分词器把文本切成词元。\n");
    t
}

#[test]
fn chinese_is_cut_into_bigrams_and_finds_its_guide() {
    let t = site();
    t.build_ok();
    let zh = index(&t, "zh");
    assert_eq!(guides_with(&zh, &["显存"]), set(&["vram"]));
    // 梯度累积 has no spaces: its bigrams are the terms, and they lead to the section.
    assert_eq!(guides_with(&zh, &["梯度", "度累", "累积"]), set(&["vram"]));
    assert!(zh["terms"]["梯度累积"].is_null());
    assert_eq!(guides_with(&zh, &["分词"]), set(&["tokens"]));
    let (best, _) = postings(&zh, "累积")
        .into_iter()
        .max_by_key(|&(s, w)| (w, std::cmp::Reverse(s)))
        .unwrap();
    let anchor = zh["sections"][best][2].as_str().unwrap();
    assert_eq!(anchor, "梯度累积");
    assert!(t
        .output("zh/vram/index.html")
        .contains(&format!("id=\"{anchor}\"")));
}

#[test]
fn spanish_accents_and_case_are_folded_and_results_stay_in_the_language() {
    let t = site();
    t.build_ok();
    let es = index(&t, "es");
    // "MEMORIA" (title) and "Memoria" (text) are one term; "acumulación" is found as typed
    // without its accent, and the accented form is not a separate term.
    assert_eq!(guides_with(&es, &["memoria"]), set(&["vram"]));
    assert!(es["terms"]["MEMORIA"].is_null());
    assert_eq!(guides_with(&es, &["acumulacion"]), set(&["vram"]));
    assert!(es["terms"]["acumulación"].is_null());
    assert_eq!(es["lang"], "es");
    let titles: Vec<&str> = es["docs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d[0].as_str().unwrap())
        .collect();
    assert_eq!(titles.len(), 2);
    assert!(titles.contains(&"Tokenizadores"), "{titles:?}");
    // No other language's words in the Spanish index.
    assert!(es["terms"]["显存"].is_null());
    assert!(es["terms"]["tokenizers"].is_null());
    // Words joined by `_` are separate terms, as the script cuts a query.
    let en = index(&t, "en");
    assert_eq!(
        guides_with(&en, &["gradient", "accumulation", "steps"]),
        set(&["vram"])
    );
}

#[test]
fn search_box_is_on_language_pages_only_and_hidden_without_javascript() {
    let t = site();
    t.build_ok();
    let guide = t.output("es/vram/index.html");
    assert!(guide.contains(
        "<form class=\"site-search\" role=\"search\" hidden data-index=\"../../es/search-index.js\" data-base=\"../../es/\""
    ), "{guide}");
    assert!(guide.contains("<label for=\"site-search-q\">Buscar en las guías</label>"));
    let index = t.output("zh/index.html");
    assert!(index.contains("data-index=\"../zh/search-index.js\" data-base=\"../zh/\""));
    // The 404 page is served at any depth: it names the index from the base URL's path.
    let not_found = t.output("en/404.html");
    assert!(not_found.contains("data-index=\"/docs/en/search-index.js\""));
    assert!(!t.output("index.html").contains("site-search"));
}

#[test]
fn headings_with_expressions_and_explicit_ids_link_where_the_page_does() {
    let t = SiteTest::new();
    t.file(
        "content/ids/en.md",
        "---\ntitle: Ids\nlang: en\ndate: 2026-11-20\nscenario:\n  n_layer: 6\n  n_head: 6\n  n_embd: 384\n  block_size: 512\n  batch_size: 16\n  dtype: float16\n  gpu: rtx-4070\n---\n\n## Setup {#custom}\n\nalpha\n\n## Setup\n\nbravo\n\n## Setup\n\ncharlie\n\n## Peak {{ bytes.peak | bytes }}\n\ndelta {{ percent(bytes.peak, gpu.capacity_bytes) }}\n",
    );
    t.build_ok();
    let en = index(&t, "en");
    let html = t.output("en/ids/index.html");
    let anchor = |term: &str| {
        let (s, _) = postings(&en, term)[0];
        en["sections"][s][2].as_str().unwrap().to_string()
    };
    assert_eq!(anchor("alpha"), "custom");
    assert_eq!(anchor("bravo"), "setup");
    assert_eq!(anchor("charlie"), "setup-1");
    // A computed heading's id is not known before rendering: the result links to the page.
    assert_eq!(anchor("delta"), "");
    for id in ["custom", "setup", "setup-1"] {
        assert!(html.contains(&format!("id=\"{id}\"")), "{id} in {html}");
    }
    // The expression's output is not indexed, and its source is not either.
    assert!(en["terms"]["percent"].is_null());
    assert!(!en["terms"]["peak"].is_null());
}

#[test]
fn index_bytes_are_deterministic() {
    let t = site();
    let a = t.clean_build_into("out-a");
    let b = t.clean_build_into("out-b");
    let search = |files: &[(PathBuf, Vec<u8>)]| -> Vec<(PathBuf, Vec<u8>)> {
        files
            .iter()
            .filter(|(p, _)| p.ends_with("search-index.js"))
            .cloned()
            .collect()
    };
    assert_eq!(search(&a).len(), 3);
    assert_eq!(search(&a), search(&b));
    let forced = t.run(&["build", "--quiet", "--force", "--out", "out-a"]);
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert_eq!(search(&t.snapshot_of("out-a")), search(&a));
}

/// Many guides, so that most manifest shards stay closed on a rebuild.
fn many_guides(t: &SiteTest) {
    for i in 0..24 {
        t.guide(
            &format!("guide-{i}"),
            "zh",
            &format!("指南 {i}"),
            "普通的文字。",
        );
        t.guide(
            &format!("guide-{i}"),
            "en",
            &format!("Guide {i}"),
            "Plain words.",
        );
    }
}

#[test]
fn rebuild_follows_a_changed_text_an_added_and_a_deleted_guide() {
    let t = site();
    many_guides(&t);
    t.build_ok();
    // Stamps younger than 2 s are not recorded: after this rebuild they are, so the next build
    // leaves the shards of unchanged guides closed (not decoded).
    std::thread::sleep(std::time::Duration::from_millis(2200));
    t.build_ok();
    let en_before = std::fs::metadata(t.root().join("public/en/search-index.js"))
        .unwrap()
        .modified()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    // Only the text changes (not the title, so the language index stays as it was).
    t.guide("tokens", "zh", "分词器", "分词器也影响显存。\n");
    t.guide("guide-7", "zh", "指南 7", "这里讲批次。");
    let run = t.build_ok();
    assert!(run.stdout.contains("zh: rebuilt 2"), "{}", run.stdout);
    let zh = index(&t, "zh");
    assert_eq!(guides_with(&zh, &["显存"]), set(&["tokens", "vram"]));
    assert_eq!(guides_with(&zh, &["批次"]), set(&["guide-7", "vram"]));
    // The guides of manifest shards left closed (unchanged) are still in the index.
    assert_eq!(guides_with(&zh, &["普通"]).len(), 23);
    // English pages did not change: their index is not rewritten.
    let en_after = std::fs::metadata(t.root().join("public/en/search-index.js"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(en_before, en_after);

    // A new guide and a deleted one.
    t.guide("guide-new", "zh", "新指南", "新的显存说明。");
    std::fs::remove_dir_all(t.root().join("content/vram")).unwrap();
    t.build_ok();
    let zh = index(&t, "zh");
    assert_eq!(guides_with(&zh, &["显存"]), set(&["guide-new", "tokens"]));
    assert!(guides_with(&zh, &["梯度"]).is_empty());

    // Whatever the path there, the incremental output is the clean build's.
    let clean = t.clean_build_into("clean");
    let built = t.snapshot_output();
    let search = |files: &[(PathBuf, Vec<u8>)]| -> Vec<(PathBuf, Vec<u8>)> {
        files
            .iter()
            .filter(|(p, _)| p.ends_with("search-index.js"))
            .cloned()
            .collect()
    };
    assert_eq!(search(&built), search(&clean));
}
