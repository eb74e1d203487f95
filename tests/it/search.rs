//! The offline search index (`<lang>/search/<part>.js`) through the real binary: Chinese cut into
//! bigrams, Spanish accents and case folded, results in the page's language, section anchors
//! that exist, deterministic bytes, and incremental rebuilds that follow every page's text.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::SystemTime;

use vramdoc::site::manifest::shard_of;

use serde_json::Value;

use crate::support::SiteTest;

/// One part of a language's index: the object its script pushes.
fn parse_part(text: &str) -> Value {
    let json = text
        .split_once("(window.vramdocSearch = window.vramdocSearch || []).push(")
        .expect("the script pushes its part onto window.vramdocSearch")
        .1
        .trim_end()
        .trim_end_matches(");");
    serde_json::from_str(json).expect("the part is JSON")
}

/// Reads every part of a language's index from the output folder `out` (relative to the site
/// root), in order; part 00 lists them, and no other part file exists.
fn index_in(t: &SiteTest, out: &str, lang: &str) -> Vec<Value> {
    let read = |n: u64| {
        let path = t
            .root()
            .join(out)
            .join(lang)
            .join(format!("search/{n:02x}.js"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        parse_part(&text)
    };
    let first = read(0);
    let listed: Vec<u64> = first["parts"]
        .as_array()
        .expect("part 00 lists the parts")
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    assert_eq!(listed[0], 0);
    let mut all = vec![first];
    all.extend(listed[1..].iter().map(|&n| read(n)));
    for (&n, part) in listed.iter().zip(&all) {
        assert_eq!(part["part"].as_u64(), Some(n));
        assert_eq!(part["lang"], lang);
        if n != 0 {
            assert!(
                !part["docs"].as_array().unwrap().is_empty(),
                "part {n} is empty"
            );
        }
    }
    let files = std::fs::read_dir(t.root().join(out).join(lang).join("search"))
        .unwrap()
        .count();
    assert_eq!(files, listed.len(), "only the listed parts are written");
    all
}

fn index(t: &SiteTest, lang: &str) -> Vec<Value> {
    index_in(t, "public", lang)
}

/// The part holding a guide (whose title is `title`) and the guide's number there.
fn doc_in<'a>(index: &'a [Value], slug: &str) -> (&'a Value, usize) {
    let href = format!("{slug}/index.html");
    for part in index {
        let docs = part["docs"].as_array().unwrap();
        if let Some(i) = docs.iter().position(|d| d[1] == href.as_str()) {
            return (part, i);
        }
    }
    panic!("{slug} is not in the index");
}

/// The sections of one part holding `term`, with the term's weight there.
fn postings(part: &Value, term: &str) -> Vec<(usize, u64)> {
    let Some(flat) = part["terms"][term].as_array() else {
        return Vec::new();
    };
    // `-(delta + 1)` for weight 1, else `delta, weight` (src/search/part.rs).
    let (mut sec, mut out, mut next) = (0, Vec::new(), flat.iter());
    while let Some(first) = next.next() {
        let first = first.as_i64().unwrap();
        let (delta, weight) = match first {
            d if d < 0 => (-d - 1, 1),
            d => (d, next.next().unwrap().as_u64().unwrap()),
        };
        sec += delta as usize;
        out.push((sec, weight));
    }
    out
}

/// True when no part has `term`.
fn absent(index: &[Value], term: &str) -> bool {
    index.iter().all(|p| p["terms"][term].is_null())
}

/// The guide (slug) a section of a part belongs to.
fn slug_of(part: &Value, section: usize) -> String {
    let doc = part["sections"][section][0].as_u64().unwrap() as usize;
    let href = part["docs"][doc][1].as_str().unwrap();
    href.trim_end_matches("/index.html").to_string()
}

/// The guides holding every term, as the page's script finds them.
fn guides_with(index: &[Value], terms: &[&str]) -> BTreeSet<String> {
    let mut found: Option<BTreeSet<String>> = None;
    for term in terms {
        let here: BTreeSet<String> = index
            .iter()
            .flat_map(|part| {
                postings(part, term)
                    .into_iter()
                    .map(move |(s, _)| slug_of(part, s))
            })
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
    assert!(absent(&zh, "梯度累积"));
    assert_eq!(guides_with(&zh, &["分词"]), set(&["tokens"]));
    let (part, _) = doc_in(&zh, "vram");
    let (best, _) = postings(part, "累积")
        .into_iter()
        .max_by_key(|&(s, w)| (w, std::cmp::Reverse(s)))
        .unwrap();
    let anchor = part["sections"][best][2].as_str().unwrap();
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
    assert!(absent(&es, "MEMORIA"));
    assert_eq!(guides_with(&es, &["acumulacion"]), set(&["vram"]));
    assert!(absent(&es, "acumulación"));
    let titles: Vec<&str> = es
        .iter()
        .flat_map(|part| part["docs"].as_array().unwrap())
        .map(|d| d[0].as_str().unwrap())
        .collect();
    assert_eq!(titles.len(), 2);
    assert!(titles.contains(&"Tokenizadores"), "{titles:?}");
    // No other language's words in the Spanish index.
    assert!(absent(&es, "显存"));
    assert!(absent(&es, "tokenizers"));
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
        "<form class=\"site-search\" role=\"search\" hidden data-index=\"../../es/search/\" data-base=\"../../es/\""
    ), "{guide}");
    assert!(guide.contains("<label for=\"site-search-q\">Buscar en las guías</label>"));
    let index = t.output("zh/index.html");
    assert!(index.contains("data-index=\"../zh/search/\" data-base=\"../zh/\""));
    // The 404 page links relative to its folder (a <base> is set where it is served deeper).
    let not_found = t.output("en/404.html");
    assert!(not_found.contains("data-index=\"../en/search/\""));
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
    let (part, _) = doc_in(&en, "ids");
    let anchor = |term: &str| {
        let (s, _) = postings(part, term)[0];
        part["sections"][s][2].as_str().unwrap().to_string()
    };
    assert_eq!(anchor("alpha"), "custom");
    assert_eq!(anchor("bravo"), "setup");
    assert_eq!(anchor("charlie"), "setup-1");
    // A computed heading links to the id the renderer gave it (the index is collected from the
    // render).
    let delta = anchor("delta");
    assert!(delta.starts_with("peak-"), "{delta}");
    for id in ["custom", "setup", "setup-1", delta.as_str()] {
        assert!(html.contains(&format!("id=\"{id}\"")), "{id} in {html}");
    }
    // The expression's output is indexed, its source is not.
    assert!(absent(&en, "percent"));
    assert!(!absent(&en, "peak"));
    assert!(!absent(&en, "gib"));
}

/// A guide whose tables hold computed figures (`breakdown_table()`), on `gpu`.
fn computed_guide(t: &SiteTest, gpu: &str) {
    t.file(
        "content/figures/en.md",
        &format!("---\ntitle: Figures\nlang: en\ndate: 2026-11-20\nscenario:\n  n_layer: 6\n  n_head: 6\n  n_embd: 384\n  block_size: 512\n  batch_size: 16\n  dtype: float16\n  gpu: {gpu}\n---\n\nIntro.\n\n## Where it goes\n\n{{{{ breakdown_table() }}}}\n"),
    );
}

/// The figures in the first table of `html` (cells like `1.23 GiB`, a no-break space before the
/// unit), with a plain space (as the index's text has it, and a reader types it).
fn table_figures(html: &str) -> Vec<String> {
    let table = &html[html.find("<table").expect("a table")..];
    let table = &table[..table.find("</table>").unwrap()];
    table
        .split('>')
        .filter_map(|cell| cell.split('<').next())
        .filter(|text| text.ends_with("\u{a0}GiB") || text.ends_with("\u{a0}MiB"))
        .map(|text| text.replace('\u{a0}', " "))
        .collect()
}

/// The text of the sections of guide `slug` in `index`.
fn section_text(index: &[Value], slug: &str) -> String {
    let (part, doc) = doc_in(index, slug);
    (part["sections"].as_array().unwrap().iter())
        .filter(|s| s[0] == doc)
        .map(|s| s[3].as_str().unwrap().to_string() + " ")
        .collect()
}

/// Every figure in `figures` finds guide `figures` by its terms; the first is in its text too
/// (where a quoted phrase matches; the text kept of a section is cut after 600 characters,
/// where the script accepts a phrase whose words the section holds).
fn figures_found(index: &[Value], figures: &[String]) {
    let text = section_text(index, "figures");
    assert!(
        text.contains(figures[0].as_str()),
        "{} in {text}",
        figures[0]
    );
    for figure in figures {
        let terms: Vec<String> = figure
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let terms: Vec<&str> = terms.iter().map(String::as_str).collect();
        assert!(guides_with(index, &terms).contains("figures"), "{figure}");
    }
}

#[test]
fn figures_computed_into_a_table_find_their_guide_and_follow_the_scenario() {
    let t = site();
    computed_guide(&t, "rtx-4070");
    t.build_ok();
    let figures = table_figures(&t.output("en/figures/index.html"));
    assert!(!figures.is_empty(), "the table shows figures");
    figures_found(&index(&t, "en"), &figures);
    // A larger model: other figures; the part is indexed again with them (its inputs hold the
    // page's scenario), and equals a clean build's.
    t.file(
        "content/figures/en.md",
        &std::fs::read_to_string(t.root().join("content/figures/en.md"))
            .unwrap()
            .replace("n_layer: 6", "n_layer: 12"),
    );
    t.build_ok();
    let changed = table_figures(&t.output("en/figures/index.html"));
    assert_ne!(changed, figures);
    figures_found(&index(&t, "en"), &changed);
    let clean = t.clean_build_into("clean");
    for (p, bytes) in clean.iter().filter(|(p, _)| p.starts_with("en/search")) {
        let built = std::fs::read(t.root().join("public").join(p)).unwrap();
        assert_eq!(&built, bytes, "{p:?}");
    }
}

#[test]
fn a_build_reads_each_page_once() {
    vramdoc::content::count_page_reads();
    let t = site();
    computed_guide(&t, "rtx-4070");
    // A stale translation: its notices quote the English page.
    t.guide(
        "tokens",
        "en",
        "Tokenizers",
        "A tokenizer splits text.\n\n## More\n\nWords.\n",
    );
    t.mark("es", "tokens");
    t.guide(
        "tokens",
        "en",
        "Tokenizers",
        "A tokenizer cuts text.\n\n## More\n\nWords.\n",
    );
    let content = t.root().join("content");
    let reads = || vramdoc::content::page_reads(&content);
    t.build_later(true);
    let first = reads();
    assert_eq!(first.len(), 7, "{first:?}");
    assert!(first.iter().all(|(_, n)| *n == 1), "{first:?}");
    // A no-change build reads none; an edit reads the page edited (its part's other pages come
    // from the part's previous file).
    t.build_later(false);
    assert_eq!(reads(), first);
    t.guide(
        "vram",
        "en",
        "Where GPU memory goes",
        "Intro.\n\n## Changed\n\nNew words.\n",
    );
    t.build_later(false);
    let edited = reads();
    let more: Vec<_> = (edited.iter().zip(&first))
        .filter(|(a, b)| a.1 != b.1)
        .map(|(a, _)| a.clone())
        .collect();
    assert_eq!(more.len(), 1, "{more:?}");
    assert!(
        more[0].0.ends_with("vram/en.md") && more[0].1 == 2,
        "{more:?}"
    );
}

#[test]
fn index_bytes_are_deterministic() {
    let t = site();
    let a = t.clean_build_into("out-a");
    let b = t.clean_build_into("out-b");
    let search = |files: &[(PathBuf, Vec<u8>)]| -> Vec<(PathBuf, Vec<u8>)> {
        files
            .iter()
            .filter(|(p, _)| p.to_string_lossy().contains("/search/"))
            .cloned()
            .collect()
    };
    // Two guides: at most two parts a language, plus part 00.
    assert!((3..=9).contains(&search(&a).len()), "{}", search(&a).len());
    assert_eq!(search(&a), search(&b));
    let forced = t.run(&["build", "--quiet", "--force", "--out", "out-a"]);
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert_eq!(search(&t.snapshot_of("out-a")), search(&a));
}

/// Each index part's modification time, by path under the output folder.
fn part_mtimes(t: &SiteTest) -> BTreeMap<String, SystemTime> {
    let mut out = BTreeMap::new();
    for lang in ["en", "es", "zh"] {
        let dir = t.root().join("public").join(lang).join("search");
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let name = format!("{lang}/search/{}", e.file_name().to_string_lossy());
            out.insert(name, e.metadata().unwrap().modified().unwrap());
        }
    }
    out
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
    t.build_later(false);
    let before = part_mtimes(&t);
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
    // Only the parts holding the edited guides are rewritten (not English, not other shards).
    let after = part_mtimes(&t);
    let changed: BTreeSet<String> = after
        .iter()
        .filter(|(p, m)| before.get(*p) != Some(*m))
        .map(|(p, _)| p.clone())
        .collect();
    let expected: BTreeSet<String> = ["tokens", "guide-7"]
        .iter()
        .map(|slug| format!("zh/search/{:02x}.js", shard_of(slug)))
        .collect();
    assert_eq!(changed, expected);

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
            .filter(|(p, _)| p.to_string_lossy().contains("/search/"))
            .cloned()
            .collect()
    };
    assert_eq!(search(&built), search(&clean));
}

/// Issue 23: a guide is found by its slug, by the out-of-memory message it explains and by the
/// words readers use for the same thing (one token per synonym group, which part 00 lists for
/// the script), and each section carries its text for snippets and quoted phrases.
#[test]
fn slugs_messages_and_synonyms_are_indexed_and_sections_carry_their_text() {
    let t = site();
    t.file(
        "content/cuda-oom/en.md",
        "---\ntitle: A crash at step one\nlang: en\ndate: 2026-11-20\nerror: \"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.14 GiB.\"\n---\n\nIntro.\n\n## Reading it\n\nThe allocator asked for more than was free.\n",
    );
    t.file(
        "content/cuda-oom/zh.md",
        "---\ntitle: 第一步就崩溃\nlang: zh\ndate: 2026-11-20\n---\n\n## 原因\n\n训练时爆显存，是因为 logits 太大。\n",
    );
    t.build_ok();
    let en = index(&t, "en");
    // The slug's words, and the message's: "allocate" appears nowhere else in the guide.
    assert_eq!(guides_with(&en, &["cuda", "oom"]), set(&["cuda-oom"]));
    assert_eq!(guides_with(&en, &["allocate"]), set(&["cuda-oom"]));
    // "OutOfMemoryError" and "out of memory" are members of one group: its token is indexed, and
    // the guide speaking of memory running out does not hold it.
    assert_eq!(guides_with(&en, &["~oom"]), set(&["cuda-oom"]));
    let zh = index(&t, "zh");
    // 爆显存 holds 显存 too: both groups' tokens; the other guide's 显存不够 is a member too.
    assert_eq!(guides_with(&zh, &["~oom"]), set(&["cuda-oom", "vram"]));
    assert_eq!(guides_with(&zh, &["爆显"]), set(&["cuda-oom"]));
    assert_eq!(guides_with(&zh, &["~vram"]), set(&["cuda-oom", "vram"]));
    // Part 00 gives the script the groups, their members cut as the index cuts text.
    let groups = zh[0]["syn"]
        .as_array()
        .expect("part 00 lists the synonym groups");
    let oom = groups.iter().find(|g| g["token"] == "~oom").unwrap();
    let members: Vec<&Value> = oom["members"].as_array().unwrap().iter().collect();
    assert!(members.contains(&&serde_json::json!(["out", "of", "memory"])));
    assert!(members.contains(&&serde_json::json!(["爆显", "显存"])));
    assert!(en[1..].iter().all(|p| p["syn"].is_null()));
    // Each section: its page, heading, anchor and text.
    let (part, doc) = doc_in(&en, "cuda-oom");
    let sections: Vec<&Value> = part["sections"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s[0] == doc)
        .collect();
    assert_eq!(sections[1][1], "Reading it");
    assert_eq!(
        sections[1][3],
        "The allocator asked for more than was free."
    );
}
