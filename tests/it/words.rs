//! Issue 23's words: one vocabulary per language (`locales/glossary/<lang>.yaml`, enforced by
//! `vramdoc check`), prose that quotes the figure an option's row shows, Chinese and Spanish
//! numbers, and the bundled guides held to all of it.

use std::path::Path;

use crate::support::SiteTest;

fn check_json(t: &SiteTest) -> (i32, serde_json::Value) {
    let run = t.run(&["check", "--format", "json"]);
    let v: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    (run.code, v)
}

/// The problems of `kind`, as `file: message`.
fn problems(v: &serde_json::Value, kind: &str) -> Vec<String> {
    v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == kind)
        .map(|p| format!("{}: {}", p["file"].as_str().unwrap_or(""), p["message"]))
        .collect()
}

const SCENARIO: &str = "scenario:\n  n_layer: 6\n  n_head: 6\n  n_embd: 384\n  block_size: 512\n  batch_size: 16\n  gpu: rtx-4070\nvariants:\n  - id: small\n    label: Small\n    set: { batch_size: 8, gradient_accumulation_steps: 2 }\n";

#[test]
fn check_reports_rejected_words_in_guides_and_bundles_with_their_place() {
    let t = SiteTest::new();
    t.file(
        "locales/glossary/zh.yaml",
        "terms:\n  - means: micro-batch\n    preferred: 微批次\n    rejected: [微批量]\n",
    );
    t.file(
        "locales/glossary/es.yaml",
        "terms:\n  - means: micro-batch\n    preferred: microlote\n    rejected: [micro-lote]\n",
    );
    t.file("locales/zh/extra.ftl", "extra-one = 把微批量减半\n");
    t.guide("g", "en", "G", "Body.");
    t.guide(
        "g",
        "es",
        "G",
        "Un micro-lote de 8 y `micro-lote` en código.",
    );
    t.guide("g", "zh", "G", "微批次 8。\n\n再把微批量减半。");
    t.build_ok();
    let (code, v) = check_json(&t);
    assert_eq!(code, 1);
    let found = problems(&v, "glossary");
    // The guide's line counts from the file's first line (front matter included).
    let zh_line = std::fs::read_to_string(t.root().join("content/g/zh.md"))
        .unwrap()
        .lines()
        .position(|l| l.contains("再把微批量"))
        .unwrap()
        + 1;
    let es_line = std::fs::read_to_string(t.root().join("content/g/es.md"))
        .unwrap()
        .lines()
        .position(|l| l.contains("Un micro-lote"))
        .unwrap()
        + 1;
    let want = [
        format!("content/g/es.md:{es_line}:4"),
        format!("content/g/zh.md:{zh_line}:3"),
        // "extra-one = " is 12 characters: 把 is the 13th, 微批量 starts at the 14th.
        "locales/zh/extra.ftl:1:14".to_owned(),
    ];
    assert_eq!(found.len(), 3, "{found:#?}");
    for (f, w) in found.iter().zip(&want) {
        assert!(f.starts_with(w.as_str()), "{f} (wanted {w})");
    }
    assert!(
        found[1].contains("`微批量`") && found[1].contains("`微批次`"),
        "{found:?}"
    );
    // A glossary that does not parse is an error naming its file.
    t.file("locales/glossary/zh.yaml", "terms: [{preferred: x}]\n");
    let (_, v) = check_json(&t);
    let bad = problems(&v, "glossary");
    assert!(
        bad.iter()
            .any(|p| p.starts_with("locales/glossary/zh.yaml")),
        "{bad:?}"
    );
}

#[test]
fn check_reports_a_verdict_quoted_beside_another_figure_than_the_rows_total() {
    let t = SiteTest::new();
    t.file(
        "content/v/en.md",
        &format!("---\ntitle: \"V\"\nlang: en\ndate: 2026-11-20\n{SCENARIO}---\n\n{{{{ options_table() }}}}\n\n1. Halve it: the peak drops to {{{{ variants.small.bytes.peak | bytes }}}}. Verdict: {{{{ variants.small.fits | verdict }}}}.\n"),
    );
    t.build_ok();
    let (code, v) = check_json(&t);
    assert_eq!(code, 1);
    let found = problems(&v, "prose-figure");
    assert_eq!(found.len(), 1, "{found:?}");
    let line = std::fs::read_to_string(t.root().join("content/v/en.md"))
        .unwrap()
        .lines()
        .position(|l| l.starts_with("1. Halve"))
        .unwrap()
        + 1;
    assert!(
        found[0].starts_with(&format!("content/v/en.md:{line}:")),
        "{found:?}"
    );
    assert!(found[0].contains("`small`") && found[0].contains("bytes.peak"));
    // Quoting the total beside the peak is what the rule asks.
    t.file(
        "content/v/en.md",
        &format!("---\ntitle: \"V\"\nlang: en\ndate: 2026-11-20\n{SCENARIO}---\n\n{{{{ options_table() }}}}\n\n1. Halve it: {{{{ variants.small.bytes.total | bytes }}}} in total, {{{{ variants.small.bytes.peak | bytes }}}} at the peak. Verdict: {{{{ variants.small.fits | verdict }}}}.\n"),
    );
    t.build_ok();
    let (_, v) = check_json(&t);
    assert!(problems(&v, "prose-figure").is_empty(), "{v}");
}

/// Builds the bundled site (the repository's own `content/`) into a fresh folder.
fn bundled() -> (tempfile::TempDir, std::path::PathBuf) {
    let out = tempfile::tempdir().unwrap();
    let public = out.path().join("public");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_vramdoc"))
        .args([
            "build",
            "--quiet",
            "--root",
            env!("CARGO_MANIFEST_DIR"),
            "--out",
        ])
        .arg(&public)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    (out, public)
}

/// Each bundled guide's Markdown edition in `lang`.
fn guides(public: &Path, lang: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(public.join(lang))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("index.md").is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path().join("index.md")).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// The prose of a Markdown edition: fenced code and inline code left out, tags' attributes too.
fn prose(md: &str) -> String {
    let mut out = String::new();
    let mut fence = false;
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            continue;
        }
        if !fence {
            let no_code: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
            let no_tags: String = no_code
                .split('<')
                .map(|p| p.split_once('>').map_or(p, |(_, t)| t))
                .collect::<Vec<_>>()
                .join(" ");
            out.push_str(&no_tags);
            out.push('\n');
        }
    }
    out
}

#[test]
fn the_bundled_guides_keep_one_vocabulary_and_native_numbers() {
    let (_tmp, public) = bundled();
    // vramdoc check on the repository: no glossary or prose-figure problem.
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_vramdoc"))
        .args([
            "check",
            "--format",
            "json",
            "--root",
            env!("CARGO_MANIFEST_DIR"),
            "--out",
        ])
        .arg(&public)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    for kind in ["glossary", "prose-figure", "error", "warning"] {
        assert!(problems(&v, kind).is_empty(), "{kind}: {v}");
    }
    for (slug, md) in guides(&public, "zh") {
        let text = prose(&md);
        // Counts in 万/亿, whole numbers never grouped by thousands.
        let grouped = text.as_bytes().windows(5).any(|w| {
            w[0].is_ascii_digit() && w[1] == b',' && w[2..].iter().all(u8::is_ascii_digit)
        });
        assert!(!grouped, "zh/{slug} groups digits by thousands:\n{text}");
        for measure in ["个", "条", "层", "参数"] {
            for unit in ["万", "亿", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"] {
                let spaced = format!("{unit} {measure}");
                assert!(!text.contains(&spaced), "zh/{slug}: `{spaced}`");
            }
        }
        assert!(
            !text.contains("很紧张") && !text.contains("微批量"),
            "zh/{slug}"
        );
    }
    for (slug, md) in guides(&public, "es") {
        let text = prose(&md);
        for rejected in [
            "mil M",
            "micro-lote",
            "el backward",
            "atención flash",
            "cuadernos en la nube",
        ] {
            assert!(!text.contains(rejected), "es/{slug}: `{rejected}`");
        }
    }
    // Every guide states the verdicts' rule in its language under its tables, and block sizes
    // in its charts are multiples of 64.
    for (lang, rule) in [
        ("en", "\"likely does not fit\" when only the low end fits"),
        ("es", "«probablemente no cabe» si solo cabe el extremo bajo"),
        ("zh", "只有低端放得下，为“很可能放不下”"),
    ] {
        for (slug, md) in guides(&public, lang) {
            assert!(md.contains(rule), "{lang}/{slug}");
        }
    }
    let mut block_charts = 0;
    for (slug, md) in guides(&public, "en") {
        let Some(alt) = md
            .lines()
            .find(|l| l.contains("sweep-block-size.svg"))
            .and_then(|l| l.split("the largest value that fits is ").nth(1))
        else {
            continue;
        };
        block_charts += 1;
        let value: u64 = alt
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap();
        assert_eq!(value % 64, 0, "{slug}: largest block size {value}");
        assert!(
            md.contains("Block sizes are offered in multiples of 64."),
            "{slug}"
        );
    }
    assert!(block_charts >= 3, "{block_charts} block-size sweeps");
}

#[test]
fn sibling_guides_on_one_card_say_which_free_memory_they_assume() {
    let (_tmp, public) = bundled();
    let logits = std::fs::read_to_string(public.join("en/logits-buffer-oom/index.md")).unwrap();
    let whole = std::fs::read_to_string(public.join("en/oom-124m-on-12gb/index.md")).unwrap();
    // The message: 11.69 GiB capacity, 2.68 GiB free, 7.04 GiB this process: 1.97 GiB others,
    // and the tables are judged against the RTX 3060's catalog capacity (11.76 GiB, what real
    // cards print) less them: 11.76 − 1.97 = 9.79 GiB.
    let others = 11.69f64 - 2.68 - 7.04;
    assert_eq!(format!("{others:.2}"), "1.97");
    assert!(
        logits.contains("less the 1.97\u{a0}GiB other programs hold"),
        "{logits}"
    );
    assert!(
        logits.contains("against the 9.79\u{a0}GiB free"),
        "{logits}"
    );
    assert!(whole.contains(
        "This assumes the whole 11.76\u{a0}GiB of the NVIDIA GeForce RTX 3060 12GB is free"
    ));
    // Each links the other where it explains the difference.
    assert!(logits.contains("(../oom-124m-on-12gb/)") && whole.contains("(../logits-buffer-oom/)"));
}
