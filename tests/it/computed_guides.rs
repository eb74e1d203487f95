//! Guides whose numbers, tables and charts are computed: the same figures in every language,
//! formatted per locale, code left alone, and every error located.

use crate::support::SiteTest;

/// docs/contracts.md's reference model (6 layers, 6 heads, 384 wide, block 512, no bias).
const SCENARIO: &str = "scenario:\n  n_layer: 6\n  n_head: 6\n  n_embd: 384\n  block_size: 512\n  batch_size: 16\n  bias: false\n  dtype: float16\n  gpu: rtx-4070\nvariants:\n  - id: half\n    label: LABEL\n    set: { batch_size: 8, gradient_accumulation_steps: 80 }\n";

const BODY: &str = "Non-embedding: {{ params.non_embedding | int }} ({{ params.non_embedding | count }}).\n\nDecay: {{ params.decay | int }} in {{ params.decay_tensors }} tensors; no decay {{ params.no_decay | int }} in {{ params.no_decay_tensors }}.\n\nLogits tensor: {{ bytes.logits_tensor | bytes }}. Peak: {{ bytes.peak | bytes }}. Half: {{ variants.half.bytes.peak | bytes }}, {{ variants.half.fits | verdict }}.\n\n{{ breakdown_table() }}\n\n{{ options_table() }}\n\n{{ chart(\"breakdown\") }}\n\n{{ chart(\"sweep\", over=\"batch_size\") }}\n\nInline code `{{ bytes.peak }}` stays.\n\n```python\nprint(\"{{ not.an.expression }}\")\n```\n";

fn guide(t: &SiteTest, slug: &str, lang: &str, scenario: &str, body: &str) {
    t.file(
        &format!("content/{slug}/{lang}.md"),
        &format!(
            "---\ntitle: T {lang}\nlang: {lang}\ndate: 2026-11-20\n{}---\n\n{body}",
            scenario.replace("LABEL", &format!("label {lang}"))
        ),
    );
}

fn site() -> SiteTest {
    let t = SiteTest::new();
    for lang in ["en", "es", "zh"] {
        guide(&t, "computed", lang, SCENARIO, BODY);
    }
    t
}

/// Digits of every exact byte count in `title="..."` attributes, in order.
fn exact_counts(html: &str) -> Vec<String> {
    html.split("title=\"")
        .skip(1)
        .map(|s| {
            s.split('"')
                .next()
                .unwrap()
                .chars()
                .filter(char::is_ascii_digit)
                .collect()
        })
        .collect()
}

#[test]
fn reference_counts_come_out_exactly_in_each_locale() {
    let t = site();
    t.build_ok();
    let en = t.output("en/computed/index.html");
    let es = t.output("es/computed/index.html");
    let zh = t.output("zh/computed/index.html");
    // docs/contracts.md's reference facts: 29,938,560 non-embedding; 30,130,176 decayed in 26 tensors;
    // 4,992 not decayed in 13 tensors.
    assert!(en.contains("Non-embedding: 29,938,560 (29.94M)"), "{en}");
    assert!(
        es.contains("Non-embedding: 29.938.560 (29,94\u{a0}M)"),
        "{es}"
    );
    // Chinese groups by myriads: the whole number ungrouped, the count in 万.
    assert!(zh.contains("Non-embedding: 29938560 (2994万)"), "{zh}");
    assert!(en.contains("Decay: 30,130,176 in 26 tensors; no decay 4,992 in 13"));
    assert!(
        es.contains("Decay: 30.130.176 in 26 tensors; no decay 4992 in 13"),
        "Spanish groups from five digits"
    );
}

#[test]
fn every_language_shows_the_same_computed_numbers() {
    let t = site();
    t.build_ok();
    let counts: Vec<Vec<String>> = ["en", "es", "zh"]
        .iter()
        .map(|l| exact_counts(&t.output(&format!("{l}/computed/index.html"))))
        .collect();
    assert!(
        counts[0].len() > 20,
        "expected many figures, got {:?}",
        counts[0]
    );
    assert_eq!(counts[0], counts[1]);
    assert_eq!(counts[0], counts[2]);
    // The logits tensor of 16 × 512 tokens × 50304 entries in fp16, computed here independently.
    let logits = 16u64 * 512 * 50304 * 2;
    assert!(counts[0].contains(&logits.to_string()));
    let es = t.output("es/computed/index.html");
    // 824,180,736 bytes is 786 MiB; figures of a GiB or more carry a decimal comma in Spanish.
    let mib = (logits as f64 / (1u64 << 20) as f64).round();
    assert!(
        es.contains(&format!("{mib}\u{a0}MiB")),
        "logits tensor in MiB"
    );
    let gib_figures: Vec<&str> = es
        .split("\u{a0}GiB")
        .filter_map(|s| s.rsplit('>').next())
        .collect();
    assert!(
        gib_figures
            .iter()
            .any(|f| f.contains(',') && !f.contains('.')),
        "Spanish decimal comma: {gib_figures:?}"
    );
    let en = t.output("en/computed/index.html");
    let en_gib: Vec<&str> = en
        .split("\u{a0}GiB")
        .filter_map(|s| s.rsplit('>').next())
        .collect();
    assert!(
        en_gib.iter().any(|f| f.contains('.')),
        "English decimal point: {en_gib:?}"
    );
    // The same tables in the HTML page and the Markdown edition.
    let md = t.output("es/computed/index.md");
    assert!(
        md.contains("| Componente | Memoria | Parte del pico |"),
        "{md}"
    );
    // Charts through the base URL, so they resolve under a Jekyll permalink too.
    assert!(
        md.contains("(https://example.org/docs/es/computed/breakdown.svg)"),
        "{md}"
    );
    assert!(md.contains("permalink: /es/computed/"), "{md}");
    assert!(es.contains("<table>"));
}

#[test]
fn code_is_left_alone() {
    let t = site();
    t.build_ok();
    let md = t.output("en/computed/index.md");
    assert!(md.contains("`{{ bytes.peak }}`"));
    assert!(md.contains("print(\"{{ not.an.expression }}\")"));
}

#[test]
fn charts_are_localized_svg_files_referenced_from_both_editions() {
    let t = site();
    t.build_ok();
    for (lang, label) in [
        ("en", "Where the memory goes"),
        ("es", "Adónde va la memoria"),
        ("zh", "显存都用在了哪里"),
    ] {
        let svg = t.output(&format!("{lang}/computed/breakdown.svg"));
        assert!(svg.contains("<svg"), "{lang}");
        assert!(svg.contains(label), "{lang} breakdown lacks {label}");
        let sweep = t.output(&format!("{lang}/computed/sweep-batch-size.svg"));
        assert!(sweep.contains("<svg"));
        let html = t.output(&format!("{lang}/computed/index.html"));
        assert!(
            html.contains("src=\"breakdown.svg\"") && html.contains("src=\"sweep-batch-size.svg\""),
            "{lang}"
        );
    }
    assert!(t.output("zh/computed/breakdown.svg").contains("激活值"));
    assert!(t
        .output("es/computed/sweep-batch-size.svg")
        .contains("microlote"));
}

#[test]
fn changing_the_scenario_changes_every_language() {
    let t = site();
    t.build_ok();
    let before: Vec<String> = ["en", "es", "zh"]
        .iter()
        .map(|l| t.output(&format!("{l}/computed/index.html")))
        .collect();
    let svg_before = t.output("zh/computed/breakdown.svg");
    for lang in ["en", "es", "zh"] {
        guide(
            &t,
            "computed",
            lang,
            &SCENARIO.replace("batch_size: 16", "batch_size: 4"),
            BODY,
        );
    }
    t.build_ok();
    for (i, lang) in ["en", "es", "zh"].iter().enumerate() {
        let after = t.output(&format!("{lang}/computed/index.html"));
        assert_ne!(before[i], after, "{lang} unchanged");
        let logits = 4u64 * 512 * 50304 * 2;
        assert!(exact_counts(&after).contains(&logits.to_string()), "{lang}");
    }
    assert_ne!(svg_before, t.output("zh/computed/breakdown.svg"));
}

#[test]
fn builds_are_byte_identical_including_svg() {
    let t = site();
    let first = t.clean_build_into("out-1");
    let svgs = first
        .iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "svg"));
    assert!(svgs.count() > 0, "no chart was written");
    assert_eq!(first, t.clean_build_into("out-2"));
}

#[test]
fn expression_errors_name_file_line_and_what_is_wrong() {
    let cases: &[(&str, &str)] = &[
        (
            "Text\n\n{{ bytes.nothing | bytes }}\n",
            "unknown name `bytes.nothing`",
        ),
        ("{{ bytes.peak | furlongs }}\n", "unknown filter `furlongs`"),
        ("{{ frobnicate() }}\n", "unknown function `frobnicate`"),
        (
            "A table inline {{ breakdown_table() }} here.\n",
            "alone on its own line",
        ),
        ("{{ chart(\"pie\") }}\n", "unknown chart `pie`"),
        (
            "{{ chart(\"sweep\", over=\"n_head\") }}\n",
            "cannot sweep over `n_head`",
        ),
        ("{{ bytes.peak | }}\n", "expected a filter name"),
        ("{{ scenario }}\n", "is a group of values"),
        (
            "{{ percent(bytes.nope, bytes.peak) }}\n",
            "unknown name `bytes.nope`",
        ),
        (
            "{{ bytes.peak.more | bytes }}\n",
            "unknown name `bytes.peak.more`",
        ),
        ("{{ variants.ghost.fits }}\n", "no variant with id `ghost`"),
        (
            "{{ catalog.rtx-9999.name }}\n",
            "no GPU `rtx-9999` in the catalog",
        ),
        ("{{ catalog.t4.bf16 }}\n", "unknown name `catalog.t4.bf16`"),
        // A name is not a verdict (it once read as "does not fit").
        (
            "{{ scenario.dtype | verdict }}\n",
            "`verdict` needs a true/false value such as `fits`, not `scenario.dtype`",
        ),
    ];
    for (body, message) in cases {
        let t = SiteTest::new();
        guide(&t, "bad", "en", SCENARIO, body);
        let run = t.build_err();
        assert!(
            run.stderr.contains(message),
            "expected {message} in\n{}",
            run.stderr
        );
        let line =
            7 + SCENARIO.lines().count() + body.lines().position(|l| l.contains("{{")).unwrap();
        assert!(
            run.stderr.contains(&format!("content/bad/en.md:{line}:")),
            "{message}: expected line {line} in\n{}",
            run.stderr
        );
    }
}

#[test]
fn unknown_paths_are_errors_when_parsed() {
    // A path is resolved to its field when its expression is parsed: an unknown one is named
    // with its line even in a guide with no scenario to read, every one of the page at once.
    let t = SiteTest::new();
    let body = "Intro.\n\n{{ bytes.nope | bytes }}\n\n{{ percent(params.total, bytes.none) }}\n";
    guide(&t, "noscen", "en", "", body);
    let run = t.build_err();
    for (name, line) in [("bytes.nope", 9), ("bytes.none", 11)] {
        let at = format!("content/noscen/en.md:{line}:");
        let message = format!("unknown name `{name}`");
        assert!(
            run.stderr.contains(&at) && run.stderr.contains(&message),
            "{name}:\n{}",
            run.stderr
        );
    }
    assert!(!run.stderr.contains("no `scenario:`"), "{}", run.stderr);
}

#[test]
fn scenario_problems_are_errors() {
    let t = SiteTest::new();
    guide(&t, "noscen", "en", "", "{{ bytes.peak | bytes }}\n");
    assert!(t.build_err().stderr.contains("no `scenario:`"));

    let t = SiteTest::new();
    guide(
        &t,
        "badscen",
        "en",
        &SCENARIO.replace("n_head: 6", "n_head: 5"),
        "x\n",
    );
    let run = t.build_err();
    assert!(
        run.stderr.contains("n_head") || run.stderr.contains("n_embd"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("content/badscen/en.md:"),
        "{}",
        run.stderr
    );

    let t = SiteTest::new();
    guide(
        &t,
        "gpu",
        "en",
        &SCENARIO.replace("rtx-4070", "rtx-9999"),
        "x\n",
    );
    assert!(t.build_err().stderr.contains("rtx-9999"));

    let t = SiteTest::new();
    guide(&t, "split", "en", SCENARIO, "x\n");
    guide(
        &t,
        "split",
        "es",
        &SCENARIO.replace("batch_size: 16", "batch_size: 12"),
        "x\n",
    );
    let run = t.build_err();
    assert!(
        run.stderr
            .contains("disagree on `scenario.batch_size`: `16` in content/split/en.md, `12` here")
            && run.stderr.contains("content/split/en.md")
            && run.stderr.contains("content/split/es.md"),
        "{}",
        run.stderr
    );
}

#[test]
fn typed_memory_figures_are_flagged() {
    let t = SiteTest::new();
    guide(&t, "typed", "en", SCENARIO, "The logits take 6.14 GiB here, and a 12 GB card is a product name.\n\nMeasured: `6582 MiB`.\n");
    let run = t.build_ok();
    let line = 7 + SCENARIO.lines().count();
    assert!(
        run.stderr
            .contains("memory figure `6.14 GiB` typed by hand"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains(&format!("content/typed/en.md:{line}:17")),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("`12 GB`"), "{}", run.stderr);
    assert!(!run.stderr.contains("`6582 MiB`"), "{}", run.stderr);
}

#[test]
fn bundled_site_builds_without_warnings_or_stray_emphasis() {
    let out = tempfile::tempdir().unwrap();
    let public = out.path().join("public");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_vramdoc"))
        .args(["build", "--root", env!("CARGO_MANIFEST_DIR"), "--out"])
        .arg(&public)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(
        !stderr.contains("warning"),
        "bundled site has warnings:\n{stderr}"
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains("en: rebuilt 8,") && stdout.contains("zh: rebuilt 8,"),
        "{stdout}"
    );
    let mut pages = 0;
    for lang in ["en", "es", "zh"] {
        for entry in std::fs::read_dir(public.join(lang)).unwrap().flatten() {
            let page = entry.path().join("index.html");
            if let Ok(html) = std::fs::read_to_string(&page) {
                pages += 1;
                assert!(
                    vramdoc::markdown::stray_emphasis_markers(&html).is_empty(),
                    "stray ** in {}",
                    page.display()
                );
                // A training guide shows its breakdown and batch sweep, a generate guide its
                // memory against context length.
                let charts: &[&str] = if html.contains("context.svg") {
                    &["context.svg", "context-narrow.svg"]
                } else {
                    &["breakdown.svg", "sweep-batch-size.svg"]
                };
                for chart in charts {
                    assert!(html.contains(chart), "{} lacks {chart}", page.display());
                }
                assert!(
                    html.contains("<table>"),
                    "{} has no computed table",
                    page.display()
                );
            }
        }
    }
    assert!(
        pages >= 24,
        "expected at least 8 guides × 3 languages, found {pages}"
    );
}
