//! One pass per page: a build parses each page's Markdown once (the render's parse gives its
//! HTML, heading ids, search sections, what the raw-HTML policy drops and the code the
//! typed-figure lint skips), and a page with `{{ }}` twice (its source, for the expressions
//! outside code; the expanded text, which renders). The other parses a page can cost are
//! counted here too, each for the reason `src/site/page_body.rs` gives.

use std::collections::BTreeMap;

use crate::support::SiteTest;

/// The parses of each page under `content/` since counting started, by `slug/lang.md`.
fn parses(t: &SiteTest) -> BTreeMap<String, usize> {
    let content = t.root().join("content");
    vramdoc::markdown::parses_under(&content)
        .into_iter()
        .map(|(p, n)| {
            let rel = p.strip_prefix(&content).unwrap().to_string_lossy();
            (rel.replace('\\', "/"), n)
        })
        .collect()
}

/// The counts of `after` that differ from `before` (a page not in `before` counts from 0), as
/// parses made in between.
fn made_since(
    before: &BTreeMap<String, usize>,
    after: &BTreeMap<String, usize>,
) -> BTreeMap<String, usize> {
    (after.iter())
        .map(|(p, n)| (p.clone(), n - before.get(p).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

const SCENARIO: &str = "scenario:\n  n_layer: 6\n  n_head: 6\n  n_embd: 384\n  block_size: 512\n  batch_size: 16\n  dtype: float16\n  gpu: rtx-4070\n";

#[test]
fn a_build_parses_each_page_once() {
    vramdoc::markdown::count_parses();
    let t = SiteTest::new();
    // Plain pages, with code, a table, a footnote and an explicit id: the render's parse only.
    t.guide(
        "plain",
        "en",
        "Plain",
        "Intro with `code` and a note.[^n]\n\n## Where {#where}\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nx = {'a': 1}\n```\n\n[^n]: A footnote.\n",
    );
    t.guide(
        "plain",
        "es",
        "Simple",
        "Introducción.\n\n## Dónde\n\nTexto.\n",
    );
    // A computed page without expressions: the lint's code ranges come from the render's parse.
    t.file(
        "content/quiet/en.md",
        &format!("---\ntitle: Quiet\nlang: en\ndate: 2026-11-20\n{SCENARIO}---\n\nNo figures here, `6 GiB` in code.\n"),
    );
    // A page with expressions: its source, then the expanded text.
    t.file(
        "content/figures/en.md",
        &format!("---\ntitle: Figures\nlang: en\ndate: 2026-11-20\n{SCENARIO}---\n\nPeak {{{{ bytes.peak | bytes }}}}, not `{{{{ in.code }}}}`.\n\n## Where it goes\n\n{{{{ breakdown_table() }}}}\n"),
    );
    // Raw HTML the policy drops: the render sees it, the body is stripped and rendered again.
    t.guide("html", "en", "Html", "Text <b>bold</b>.\n");
    // A generated id that a later explicit one takes: rendered again with it reserved.
    t.guide("ids", "en", "Ids", "## Setup\n\n## Other {#setup}\n");
    t.build_later(true);
    let first = parses(&t);
    let expected: BTreeMap<String, usize> = [
        ("figures/en.md", 2),
        ("html/en.md", 3),
        ("ids/en.md", 2),
        ("plain/en.md", 1),
        ("plain/es.md", 1),
        ("quiet/en.md", 1),
    ]
    .into_iter()
    .map(|(p, n)| (p.to_string(), n))
    .collect();
    assert_eq!(first, expected);
    // What those parses gave is what the page shows.
    let ids = t.output("en/ids/index.html");
    assert!(
        ids.contains("id=\"setup-1\"") && ids.contains("id=\"setup\""),
        "{ids}"
    );
    assert!(!t.output("en/html/index.html").contains("<b>"));

    // A no-change build parses nothing; an edit parses the page edited, once.
    t.build_later(false);
    assert_eq!(parses(&t), first);
    t.guide(
        "plain",
        "en",
        "Plain",
        "Intro, edited.\n\n## Where\n\nText.\n",
    );
    t.build_later(false);
    let edited = made_since(&first, &parses(&t));
    assert_eq!(edited, BTreeMap::from([("plain/en.md".to_string(), 1)]));
}

#[test]
fn a_tracked_translation_parses_its_sections_for_their_hashes() {
    vramdoc::markdown::count_parses();
    vramdoc::content::count_page_reads();
    let t = SiteTest::new();
    t.guide(
        "tokens",
        "en",
        "Tokenizers",
        "A tokenizer splits text.\n\n## More\n\nWords.\n",
    );
    t.guide(
        "tokens",
        "es",
        "Tokenizadores",
        "Un tokenizador corta texto.\n\n## Más {#more}\n\nPalabras.\n",
    );
    t.mark("es", "tokens");
    t.build_later(true);
    let first = parses(&t);
    // Each page: its sections and their hashes (each section alone, one pass over the page),
    // then its render. Both are current, so no notices.
    let three = |p: &str| (p.to_string(), 3);
    assert_eq!(
        first,
        BTreeMap::from([three("tokens/en.md"), three("tokens/es.md")])
    );
    // The English page changes: its sections and hashes again, and its render. The Spanish one,
    // now stale, renders with its notices, which split it (not summarized this build) into
    // sections and take the English page's split from its summary.
    t.guide(
        "tokens",
        "en",
        "Tokenizers",
        "A tokenizer cuts text.\n\n## More\n\nWords.\n",
    );
    t.build_later(false);
    let edited = made_since(&first, &parses(&t));
    assert_eq!(
        edited,
        BTreeMap::from([
            ("tokens/en.md".to_string(), 3),
            ("tokens/es.md".to_string(), 2)
        ])
    );
    assert!(t
        .output("es/tokens/index.html")
        .contains("translation-notice"));
}
