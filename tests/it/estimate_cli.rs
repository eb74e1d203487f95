//! `vramdoc estimate` through its library entry point: inputs, formats, languages, errors.

use std::io::Write;

use vramdoc::cli::args::{OutputArgs, ScenarioArgs};
use vramdoc::cli::estimate::{report, EstimateArgs};
use vramdoc::present::Format;

fn args(
    inputs: &[&str],
    sets: &[&str],
    gpu: Option<&str>,
    format: Format,
    lang: &str,
) -> EstimateArgs {
    EstimateArgs {
        inputs: inputs.iter().map(|s| s.to_string()).collect(),
        scenario: ScenarioArgs {
            set: sets.iter().map(|s| s.to_string()).collect(),
            gpu: gpu.map(str::to_owned),
            ..ScenarioArgs::default()
        },
        phase: None,
        solve: None,
        nproc_per_node: None,
        nnodes: None,
        output: OutputArgs {
            format,
            lang: lang.to_owned(),
        },
    }
}

const ISSUE_SETS: &[&str] = &[
    "n_layer=6",
    "n_head=6",
    "n_embd=384",
    "block_size=512",
    "batch_size=16",
    "bias=False",
    "dtype=float16",
];

fn file(suffix: &str, text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::Builder::new()
        .suffix(suffix)
        .tempfile()
        .expect("temp file");
    f.write_all(text.as_bytes()).expect("write");
    f
}

#[test]
fn the_issue_command_prints_breakdown_verdict_and_options() {
    let out = report(&args(
        &[],
        ISSUE_SETS,
        Some("rtx-4070"),
        Format::Table,
        "en",
    ))
    .expect("report");
    for needle in [
        "Weights (fp32)",
        "Logits and loss",
        "Total, as nvidia-smi shows it",
        "Fits on the NVIDIA GeForce RTX 4070",
        "Smaller micro-batch, same effective batch",
        "--batch_size=8 --gradient_accumulation_steps=80",
        "29.94M",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in\n{out}");
    }
}

#[test]
fn json_is_the_contract_plus_what_if() {
    let out = report(&args(&[], ISSUE_SETS, Some("rtx-4070"), Format::Json, "zh")).expect("report");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["params"]["non_embedding"], 29_938_560);
    assert_eq!(v["scenario"]["dtype"], "float16");
    assert_eq!(v["gpu"]["id"], "rtx-4070");
    assert_eq!(v["effective_batch"], 16 * 40);
    assert_eq!(v["tokens_per_step"], 16 * 40 * 512);
    let b = &v["bytes"];
    let total = b["total"].as_u64().unwrap();
    let cap = v["gpu"]["capacity_bytes"].as_u64().unwrap();
    let (low, high) = (
        b["total_low"].as_u64().unwrap(),
        b["total_high"].as_u64().unwrap(),
    );
    assert!(low <= total && total <= high, "{low} {total} {high}");
    let verdict = if high <= cap {
        "fits"
    } else if total <= cap {
        "tight"
    } else if low <= cap {
        "unlikely"
    } else {
        "does_not_fit"
    };
    assert_eq!(v["verdict"], verdict);
    assert_eq!(v["fits"], verdict == "fits");
    assert_eq!(
        v["headroom_bytes"].as_i64().unwrap(),
        cap as i64 - total as i64
    );
    let options = v["what_if"].as_array().expect("what_if list");
    assert!(options.iter().any(|o| o["kind"] == "micro_batch"));
    assert!(options
        .iter()
        .all(|o| o["saving_bytes"].is_i64() && o["changes"].is_array()));
}

#[test]
fn nanogpt_config_file_with_overrides_and_flags_after_it() {
    let cfg = file(
        ".py",
        "# config/train_shakespeare_char.py\nout_dir = 'out-shakespeare-char'\neval_iters = 200\n\
         gradient_accumulation_steps = 1\nbatch_size = 64\nblock_size = 256\nn_layer = 6\nn_head = 6\n\
         n_embd = 384\ndropout = 0.2\nlearning_rate = 1e-3 # with baby networks\nmax_iters = 5000\n",
    );
    let path = cfg.path().to_str().unwrap();
    let out = report(&args(
        &[
            path,
            "--batch_size=32",
            "--format",
            "json",
            "--vocab_size=65",
            "--gpu=t4",
        ],
        &[],
        None,
        Format::Table,
        "en",
    ))
    .expect("report");
    let v: serde_json::Value =
        serde_json::from_str(&out).expect("JSON, as --format came after FILE");
    assert_eq!(v["scenario"]["batch_size"], 32);
    assert_eq!(v["scenario"]["vocab_size"], 65);
    assert_eq!(v["scenario"]["dropout"], 0.2);
    assert_eq!(v["scenario"]["gpu"], "t4");
    // nanoGPT prints 10.65M for this model.
    assert_eq!(v["params"]["non_embedding"], 10_646_784);
}

#[test]
fn yaml_scenario_and_markdown_in_spanish_and_chinese() {
    let f = file(".yaml", "scenario:\n  n_layer: 6\n  n_head: 6\n  n_embd: 384\n  block_size: 512\n  gpu: rtx-3060-12gb\n");
    let path = f.path().to_str().unwrap();
    let es = report(&args(&[path], &[], None, Format::Markdown, "es")).expect("report");
    assert!(
        es.contains("| Pesos (fp32) |") && es.contains("Qué cambiar"),
        "{es}"
    );
    assert!(es.contains("RTX 3060 12GB (11,76\u{a0}GiB)"), "{es}");
    let zh = report(&args(&[path], &[], None, Format::Table, "zh")).expect("report");
    assert!(
        zh.contains("优化器状态") && zh.contains("激活值") && zh.contains("放得下"),
        "{zh}"
    );
}

#[test]
fn errors_say_where_and_what() {
    let cfg = file(".py", "n_layer = 6\nn_head = 5\nn_embd = 384\n");
    let path = cfg.path().to_str().unwrap();
    let err = report(&args(&[path], &[], None, Format::Table, "en"))
        .unwrap_err()
        .render();
    assert!(err.contains("n_embd") && err.contains("divisible"), "{err}");
    let bad_line = file(".py", "n_layer = 6\nn_head = 'six'\n");
    let err = report(&args(
        &[bad_line.path().to_str().unwrap()],
        &[],
        None,
        Format::Table,
        "en",
    ))
    .unwrap_err();
    assert!(err.location().ends_with(":2:1"), "{}", err.location());
    let err = report(&args(&[], &["n_layer=zero"], None, Format::Table, "en"))
        .unwrap_err()
        .render();
    assert!(
        err.contains("--set n_layer=zero") && err.contains("whole number"),
        "{err}"
    );
    let err = report(&args(&[], &[], Some("rtx-9090"), Format::Table, "en"))
        .unwrap_err()
        .render();
    assert!(
        err.contains("rtx-9090") && err.contains("rtx-4070"),
        "{err}"
    );
    let err = report(&args(&["--not_a_key=1"], &[], None, Format::Table, "en"))
        .unwrap_err()
        .render();
    assert!(err.contains("not_a_key"), "{err}");
    assert!(report(&args(&["/no/such/file.py"], &[], None, Format::Table, "en")).is_err());
}
