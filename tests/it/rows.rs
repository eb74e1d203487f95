//! The rows shared by `vramdoc estimate` and the guides' tables: the same labels for the same
//! scenario, the two label bugs of issue 10, and issue 14's options-table rules, all through the
//! real binary.

use crate::support::{table, SiteTest};

/// A guide whose scenario is `scenario` (YAML lines, unindented) with both tables.
fn guide_with(t: &SiteTest, scenario: &str, extra_front: &str) {
    let indented: String = scenario.lines().map(|l| format!("  {l}\n")).collect();
    t.file(
        "content/g/en.md",
        &format!(
            "---\ntitle: G\nlang: en\ndate: 2026-11-20\nscenario:\n{indented}{extra_front}---\n\n{{{{ breakdown_table() }}}}\n\n{{{{ options_table() }}}}\n"
        ),
    );
    t.file("s.yaml", scenario);
}

/// The breakdown's and the options' first cells in the CLI's Markdown and in the guide's page.
fn labels(t: &SiteTest) -> [(Vec<String>, Vec<String>); 2] {
    t.build_ok();
    let page = t.output("en/g/index.md");
    let cli = t.run(&["estimate", "s.yaml", "--format", "markdown"]);
    assert_eq!(cli.code, 0, "{}", cli.stderr);
    let first = |rows: Vec<Vec<String>>| rows.into_iter().map(|r| r[0].clone()).collect();
    [
        (
            first(table(&cli.stdout, "| Component |")),
            first(table(&page, "| Component |")),
        ),
        (
            first(table(&cli.stdout, "| Option |")),
            first(table(&page, "| Option |")),
        ),
    ]
}

const BASE: &str =
    "n_layer: 6\nn_head: 6\nn_embd: 384\nblock_size: 512\nbatch_size: 32\nbias: false\n";

#[test]
fn cli_and_guide_name_the_same_components_and_options_the_same_way() {
    for extra in [
        "dtype: float16\ngpu: rtx-4070\n",
        "dtype: float32\ngpu: rtx-3060-12gb\ncompile: false\n",
        "dtype: bfloat16\npure_bf16: true\noptimizer: sgd\ngpu: a100-40gb\nother_processes: 2 GiB\n",
    ] {
        let t = SiteTest::new();
        guide_with(&t, &format!("{BASE}{extra}"), "");
        let [(cli_mem, page_mem), (cli_opt, page_opt)] = labels(&t);
        assert!(page_mem.len() >= 8, "{page_mem:?}");
        // The capacity and the verdict rows are the guide's; the CLI says both in a sentence.
        for label in page_mem
            .iter()
            .filter(|l| !l.ends_with("capacity") && l.as_str() != "Verdict")
        {
            assert!(cli_mem.contains(label), "{label:?} not in the CLI's {cli_mem:?}");
        }
        assert!(!page_opt.is_empty());
        assert_eq!(cli_opt, page_opt, "{extra}");
    }
}

#[test]
fn pure_bf16_weights_are_bf16_in_the_guide_as_in_the_cli() {
    let t = SiteTest::new();
    guide_with(
        &t,
        &format!("{BASE}dtype: bfloat16\npure_bf16: true\ngpu: rtx-4090\n"),
        "",
    );
    let [(cli, page), _] = labels(&t);
    assert_eq!(page[0], "Weights (bf16)", "{page:?}");
    assert_eq!(cli[0], page[0]);
}

#[test]
fn a_bfloat16_run_on_a_card_without_bf16_is_offered_float16_not_16_bit_autocast() {
    let t = SiteTest::new();
    guide_with(&t, &format!("{BASE}dtype: bfloat16\ngpu: t4\n"), "");
    let [_, (cli, page)] = labels(&t);
    let md = t.output("en/g/index.md");
    assert!(!md.contains("instead of float32"), "{md}");
    let fp16 = "float16 autocast with a GradScaler (this card has no bf16) †";
    assert!(page.iter().any(|l| l == fp16), "{page:?}");
    assert!(cli.iter().any(|l| l == fp16), "{cli:?}");
}

#[test]
fn options_list_each_change_once_as_nanogpt_spells_it_with_markers() {
    let t = SiteTest::new();
    guide_with(
        &t,
        &format!("{BASE}dtype: float32\ngpu: rtx-4070\ngradient_accumulation_steps: 2\n"),
        "variants:\n  - id: half\n    label: Half\n    set: { batch_size: 16, gradient_accumulation_steps: 4 }\n  - id: nocompile\n    label: No compile\n    set: { compile: false }\n",
    );
    t.build_ok();
    let md = t.output("en/g/index.md");
    let rows = table(&md, "| Option |");
    let changes: Vec<&String> = rows.iter().map(|r| &r[1]).collect();
    for (i, c) in changes.iter().enumerate() {
        assert!(!changes[..i].contains(c), "{c} listed twice in\n{md}");
    }
    // The variant and the computed option making the same change share one row, labelled
    // once; the merge is said under the table.
    assert!(
        rows.iter()
            .any(|r| r[0] == "Half"
                && r[1] == "`batch_size = 16`<br>`gradient_accumulation_steps = 4`"),
        "{md}"
    );
    assert!(rows.iter().all(|r| !r[0].contains(" / ")), "{md}");
    assert!(
        md.contains("“Half” is also “Smaller micro-batch, same effective batch”"),
        "{md}"
    );
    assert!(md.contains("| No compile | `compile = False` |"), "{md}");
    assert!(md.contains("`dtype = 'bfloat16'`"), "{md}");
    // Savings are positive or not shown as savings.
    for r in &rows {
        assert!(!r[4].starts_with('−') && !r[4].contains(">0 B<"), "{r:?}");
    }
    let nocompile = rows.iter().find(|r| r[0] == "No compile").unwrap();
    assert!(
        nocompile[4].starts_with("none: ") && nocompile[4].ends_with(" more"),
        "{nocompile:?}"
    );
    // Code patches and training changes are marked, and the markers explained.
    let ckpt = rows
        .iter()
        .find(|r| r[1] == "`grad_checkpoint = True`")
        .unwrap();
    assert!(ckpt[0].ends_with(" ‡"), "{ckpt:?}");
    let block = rows.iter().find(|r| r[1] == "`block_size = 256`").unwrap();
    assert!(block[0].ends_with(" †"), "{block:?}");
    assert_eq!(block[2], "64 (16,384 tokens)", "{block:?}");
    assert!(md.contains("\n† changes training\n"), "{md}");
    assert!(
        md.contains("\n‡ not a setting nanoGPT's train.py reads"),
        "{md}"
    );
    // The CLI writes the same changes as command-line overrides, with the same markers.
    let cli = t.run(&["estimate", "s.yaml"]);
    assert!(cli.stdout.contains("--dtype=bfloat16"), "{}", cli.stdout);
    assert!(
        cli.stdout.contains("--grad_checkpoint=True"),
        "{}",
        cli.stdout
    );
    assert!(cli.stdout.contains("  ‡ not a setting"), "{}", cli.stdout);
}
