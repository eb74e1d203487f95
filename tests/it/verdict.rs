//! The four-state verdict (fits, tight, likely does not fit, does not fit) with the total's
//! range and other programs' memory, through the real binary: `vramdoc estimate` and guides.

use serde_json::Value;

use crate::support::SiteTest;

/// The RTX 4070 guide's model at micro-batch 64 (issue 12: "fits with 495 MiB spare").
const RTX4070_MB64: &[&str] = &[
    "estimate",
    "--set",
    "n_layer=6",
    "--set",
    "n_head=6",
    "--set",
    "n_embd=384",
    "--set",
    "block_size=512",
    "--set",
    "bias=False",
    "--set",
    "dtype='float16'",
    "--set",
    "batch_size=64",
    "--set",
    "gradient_accumulation_steps=1",
    "--gpu",
    "rtx-4070",
];

/// Runs `vramdoc ARGS --format json` and parses its output.
fn json(t: &SiteTest, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--format", "json"]);
    let r = t.run(&all);
    assert_eq!(r.code, 0, "{}", r.stderr);
    serde_json::from_str(&r.stdout).expect("JSON")
}

/// A JSON value that must be a u64.
fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a u64: {v}"))
}

#[test]
fn spare_within_the_range_is_tight_and_other_programs_make_it_not_fit() {
    let t = SiteTest::new();
    let v = json(&t, RTX4070_MB64);
    let (b, cap) = (&v["bytes"], u(&v["gpu"]["capacity_bytes"]));
    let (low, total, high) = (u(&b["total_low"]), u(&b["total"]), u(&b["total_high"]));
    assert!(low < total && total < high);
    assert!(total < cap && high > cap, "{low} {total} {high} {cap}");
    assert_eq!(v["verdict"], "tight");
    assert_eq!(v["fits"], false);
    assert_eq!(u(&b["other_processes"]), 0);
    // The user's nvidia-smi: 12282 MiB on the card, about 2118 MiB held by other programs.
    let mut args = RTX4070_MB64.to_vec();
    args.extend_from_slice(&["--other-processes", "2118 MiB"]);
    let v = json(&t, &args);
    assert_eq!(v["verdict"], "does_not_fit");
    assert_eq!(u(&v["bytes"]["other_processes"]), 2118 << 20);
    assert_eq!(
        v["headroom_bytes"].as_i64().unwrap(),
        cap as i64 - (2118i64 << 20) - total as i64
    );
    // The same through the scenario key, in a --set and in a YAML file.
    let mut args = RTX4070_MB64.to_vec();
    args.extend_from_slice(&["--set", "other_processes='2118 MiB'"]);
    assert_eq!(json(&t, &args)["verdict"], "does_not_fit");
    t.file(
        "s.yaml",
        "n_layer: 6\nn_head: 6\nn_embd: 384\nblock_size: 512\nbias: false\ndtype: float16\nbatch_size: 64\ngradient_accumulation_steps: 1\ngpu: rtx-4070\nother_processes: 2.07 GiB\n",
    );
    let v = json(&t, &["estimate", "s.yaml"]);
    assert_eq!(v["verdict"], "does_not_fit");
    assert_eq!(
        u(&v["bytes"]["other_processes"]),
        (2.07f64 * (1u64 << 30) as f64).round() as u64
    );
    // --other-processes after FILE (where clap collects nanoGPT-style overrides) still counts.
    let v = json(&t, &["estimate", "s.yaml", "--other-processes", "1 GiB"]);
    assert_eq!(u(&v["bytes"]["other_processes"]), 1 << 30);

    // The table shows the range, the other programs and the verdict, in each language.
    let r = t.run(&args);
    for needle in [
        "Total range",
        "9.92–13.15\u{a0}GiB",
        "Held by other programs",
        "2.07\u{a0}GiB",
        "Does not fit on the NVIDIA GeForce RTX 4070",
    ] {
        assert!(
            r.stdout.contains(needle),
            "missing {needle:?} in\n{}",
            r.stdout
        );
    }
    let r = t.run(RTX4070_MB64);
    assert!(
        r.stdout.contains("Tight on the NVIDIA GeForce RTX 4070"),
        "{}",
        r.stdout
    );
    let mut es = RTX4070_MB64.to_vec();
    es.extend_from_slice(&["--lang", "es"]);
    assert!(t
        .run(&es)
        .stdout
        .contains("Va justo en la NVIDIA GeForce RTX 4070"));
    let mut zh = RTX4070_MB64.to_vec();
    zh.extend_from_slice(&["--lang", "zh"]);
    assert!(t
        .run(&zh)
        .stdout
        .contains("NVIDIA GeForce RTX 4070（11.69\u{a0}GiB）紧张"));
}

#[test]
fn eight_bit_adamw_thirty_mib_under_capacity_is_tight() {
    let t = SiteTest::new();
    let v = json(
        &t,
        &[
            "estimate",
            "--set",
            "batch_size=16",
            "--set",
            "dtype='float16'",
            "--gpu",
            "rtx-4070",
        ],
    );
    let cap = u(&v["gpu"]["capacity_bytes"]);
    let o = v["what_if"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "optimizer")
        .expect("8-bit AdamW option");
    assert!(
        u(&o["total"]) < cap && cap - u(&o["total"]) < 100 << 20,
        "{o}"
    );
    assert_eq!(o["verdict"], "tight");
    assert_eq!(o["fits"], false);
    let r = t.run(&[
        "estimate",
        "--set",
        "batch_size=16",
        "--set",
        "dtype='float16'",
        "--gpu",
        "rtx-4070",
    ]);
    let row = r
        .stdout
        .lines()
        .find(|l| l.contains("8-bit AdamW"))
        .expect("row");
    assert!(row.contains("tight (") && row.contains("GiB)"), "{row}");
}

#[test]
fn bad_other_processes_value_is_a_clear_error() {
    let t = SiteTest::new();
    let r = t.run(&["estimate", "--gpu", "rtx-4070", "--other-processes", "lots"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("--other-processes lots") && r.stderr.contains("2.1 GiB"),
        "{}",
        r.stderr
    );
    t.file("s.yaml", "gpu: t4\nother_processes: 2.1 parsecs\n");
    let r = t.run(&["estimate", "s.yaml"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("other_processes") && r.stderr.contains("s.yaml"),
        "{}",
        r.stderr
    );
}

#[test]
fn guides_show_the_states_the_range_and_other_programs() {
    let t = SiteTest::new();
    t.file(
        "content/tight/en.md",
        "---\ntitle: \"Tight\"\nlang: en\ndate: 2026-11-20\nscenario:\n  n_layer: 6\n  n_head: 6\n  n_embd: 384\n  block_size: 512\n  bias: false\n  dtype: float16\n  batch_size: 64\n  gradient_accumulation_steps: 1\n  gpu: rtx-4070\nvariants:\n  - id: desktop\n    label: \"With a desktop\"\n    set: { other_processes: 2118 MiB }\n  - id: small\n    label: \"Micro-batch 8\"\n    set: { batch_size: 8, gradient_accumulation_steps: 8 }\n---\n\nVerdict: {{ fits | verdict }}; with a desktop: {{ variants.desktop.fits | verdict }}; small: {{ variants.small.verdict | verdict }}; bare: {{ verdict }}.\n\n{{ breakdown_table() }}\n\n{{ breakdown_table(variant=\"desktop\") }}\n\n{{ options_table() }}\n\n{{ chart(\"sweep\", over=\"batch_size\") }}\n",
    );
    let r = t.build_ok();
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    let md = t.output("en/tight/index.md");
    assert!(
        md.contains("Verdict: tight; with a desktop: does not fit; small: fits; bare: tight."),
        "{md}"
    );
    assert!(
        md.contains(
            "| Total range (context and fragmentation, low–high) | 9.92–13.15\u{a0}GiB | |"
        ),
        "{md}"
    );
    assert!(
        md.contains("| Held by other programs on the card |"),
        "{md}"
    );
    assert!(
        md.contains("| With a desktop |") && md.contains("| does not fit |"),
        "{md}"
    );
    // The desktop variant's chart draws the capacity less the other programs.
    let svg = t.output("en/tight/sweep-batch-size.svg");
    // (the legend wraps the label after the colon)
    assert!(
        svg.contains("NVIDIA GeForce RTX 4070:") && svg.contains("11.69\u{a0}GiB"),
        "capacity label"
    );
    assert!(
        svg.to_ascii_uppercase().contains("#B3D4E8"),
        "no shaded range"
    );
    assert!(svg.contains("range (context and fragmentation)"));
}

#[test]
fn charts_draw_the_capacity_left_beside_other_programs() {
    let t = SiteTest::new();
    t.file(
        "content/desk/en.md",
        "---\ntitle: \"Desk\"\nlang: en\ndate: 2026-11-20\nscenario:\n  n_layer: 6\n  n_head: 6\n  n_embd: 384\n  block_size: 512\n  batch_size: 16\n  gpu: rtx-4070\n  other_processes: 2118 MiB\n---\n\n{{ chart(\"sweep\", over=\"batch_size\") }}\n\n{{ chart(\"breakdown\") }}\n",
    );
    t.build_ok();
    // Legends wrap long labels onto more lines, never cut them.
    // 12557156352 B less 2118 MiB = 10336.4 MiB = 9.63 GiB.
    assert_eq!((12_557_156_352u64 - (2118 << 20)) * 100 / (1 << 30), 962);
    for chart in ["sweep-batch-size.svg", "breakdown.svg"] {
        let svg = t.output(&format!("en/desk/{chart}"));
        assert!(svg.contains("9.63\u{a0}GiB of"), "{chart}: {svg}");
    }
    let sweep = t.output("en/desk/sweep-batch-size.svg");
    // The legend wraps the label, so look at its words.
    let words: Vec<&str> = sweep
        .split("<text")
        .filter_map(|t| t.split('>').nth(1)?.split("</text").next())
        .flat_map(str::split_whitespace)
        .collect();
    assert!(words.join(" ").contains("beside other programs"), "{sweep}");
}

/// GPT-2 small at micro-batch 16 on the RTX 3060 12GB (issue 23: 12.47 GiB on an 11.69 GiB card
/// was called "tight" on a page whose title says that run fails).
const GPT2_MB16_3060: &[&str] = &[
    "estimate",
    "--set",
    "batch_size=16",
    "--set",
    "gradient_accumulation_steps=4",
    "--set",
    "block_size=1024",
    "--set",
    "dtype='bfloat16'",
    "--set",
    "compile=True",
    "--gpu",
    "rtx-3060-12gb",
];

#[test]
fn a_total_over_the_capacity_whose_low_end_fits_is_likely_not_to_fit() {
    let t = SiteTest::new();
    let v = json(&t, GPT2_MB16_3060);
    let (b, cap) = (&v["bytes"], u(&v["gpu"]["capacity_bytes"]));
    let (low, total, high) = (u(&b["total_low"]), u(&b["total"]), u(&b["total_high"]));
    // Independently: the low end fits, the middle does not.
    assert!(
        low <= cap && total > cap && high > cap,
        "{low} {total} {high} {cap}"
    );
    assert_eq!(v["verdict"], "unlikely");
    assert_eq!(v["fits"], false);
    // The CLI says it in words, states the rule, and the option rows use the same words.
    for (lang, sentence, rule) in [
        (
            "en",
            "Likely does not fit on the NVIDIA GeForce RTX 3060 12GB",
            "\"likely does not fit\" when only the low end fits",
        ),
        (
            "es",
            "Probablemente no cabe en la NVIDIA GeForce RTX 3060 12GB",
            "«probablemente no cabe» si solo cabe el extremo bajo",
        ),
        (
            "zh",
            "NVIDIA GeForce RTX 3060 12GB（11.76\u{a0}GiB）很可能放不下",
            "只有低端放得下，为“很可能放不下”",
        ),
    ] {
        let mut args = GPT2_MB16_3060.to_vec();
        args.extend_from_slice(&["--lang", lang]);
        let r = t.run(&args);
        assert!(r.stdout.contains(sentence), "{lang}: {}", r.stdout);
        assert!(r.stdout.contains(rule), "{lang}: {}", r.stdout);
    }
    // Other programs holding the gap between the low end and the capacity make it not fit.
    let mut args = GPT2_MB16_3060.to_vec();
    let gap = format!("{} B", cap - low + 1);
    args.extend_from_slice(&["--other-processes", &gap]);
    assert_eq!(json(&t, &args)["verdict"], "does_not_fit");
}

#[test]
fn guide_tables_give_the_verdict_its_own_row_and_column_and_state_the_rule() {
    let t = SiteTest::new();
    for lang in ["en", "es", "zh"] {
        t.file(
            &format!("content/rule/{lang}.md"),
            &format!("---\ntitle: \"Rule\"\nlang: {lang}\ndate: 2026-11-20\nscenario:\n  n_layer: 6\n  n_head: 6\n  n_embd: 384\n  block_size: 512\n  bias: false\n  dtype: float16\n  batch_size: 64\n  gradient_accumulation_steps: 1\n  gpu: rtx-4070\n---\n\n{{{{ breakdown_table() }}}}\n\n{{{{ options_table() }}}}\n\n{{{{ chart(\"sweep\", over=\"batch_size\") }}}}\n"),
        );
    }
    let r = t.build_ok();
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    for (lang, option, label, rule, state) in [
        (
            "en",
            "Option",
            "Verdict",
            "\"tight\" when the middle estimate fits and the high end does not",
            "tight",
        ),
        (
            "es",
            "Opción",
            "Veredicto",
            "«va justo» si cabe la estimación central pero no el extremo alto",
            "va justo",
        ),
        (
            "zh",
            "方案",
            "结论",
            "中间估计放得下而高端放不下，为“紧张”",
            "紧张",
        ),
    ] {
        let md = t.output(&format!("{lang}/rule/index.md"));
        // The breakdown's verdict row, labelled, with an empty share cell.
        assert!(
            md.contains(&format!("| **{label}** | **{state}** | |")),
            "{lang}: {md}"
        );
        // The options table's last column is the verdict, labelled as such.
        let header = md
            .lines()
            .find(|l| l.starts_with(&format!("| {option} |")))
            .unwrap_or_default();
        assert!(
            header.trim_end().ends_with(&format!("| {label} |")),
            "{lang}: {header}"
        );
        // The rule under the tables (twice) and the chart's caption stating the marker's rule.
        assert!(md.matches(rule).count() >= 2, "{lang}: {md}");
    }
    let md = t.output("en/rule/index.md");
    assert!(
        md.contains("The marker is the largest value whose high end fits"),
        "{md}"
    );
}
