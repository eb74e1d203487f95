//! nanochat through the real CLI: its `scripts/base_train.py` and `scripts/chat_sft.py` given as
//! the FILE with their own flags (recognized by what the file is: the stand-ins in
//! `tests/data/nanochat/`), torchrun's `--nproc-per-node`, and the catalog's `--model
//! nanochat-dN`; held to the replay of nanochat's own step, with its what-ifs and refusals.

use serde_json::Value;

use crate::support::SiteTest;
use vramdoc::estimate::arch::NANOCHAT_COMMIT;

const BASE_TRAIN: &str = include_str!("../data/nanochat/base_train.py");
const CHAT_SFT: &str = include_str!("../data/nanochat/chat_sft.py");
const OLD_BASE_TRAIN: &str = include_str!("../data/nanochat/old_base_train.py");

fn site() -> SiteTest {
    let t = SiteTest::new();
    t.file("scripts/base_train.py", BASE_TRAIN);
    t.file("scripts/chat_sft.py", CHAT_SFT);
    t.file("old/base_train.py", OLD_BASE_TRAIN);
    t
}

fn json(t: &SiteTest, args: &[&str]) -> Value {
    t.estimate_json(args)
}

/// A replayed run's second-step peak, by name: the compiled step's (inductor's replay,
/// `tests/data/nanochat_compiled_replay.json`), which is what the scripts run.
fn replayed_peak(name: &str) -> u64 {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/nanochat_compiled_replay.json"
    );
    let data: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    data["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run"]["name"] == name && r["backend"] == "inductor")
        .unwrap()["train_peak_bytes"]
        .as_u64()
        .unwrap()
}

fn within_one_percent(v: &Value, name: &str) {
    let got = v["bytes"]["train_peak"].as_u64().unwrap() as f64;
    let want = replayed_peak(name) as f64;
    assert!((got - want).abs() / want <= 0.01, "{name}: {got} vs {want}");
}

#[test]
fn base_train_flags_give_the_replayed_run() {
    let t = site();
    // The replay's d8-b2-s2048-SSSL: one micro-step (4096 tokens per step).
    let v = json(
        &t,
        &[
            "scripts/base_train.py",
            "--depth=8",
            "--device-batch-size=2",
            "--max-seq-len=2048",
            "--window-pattern=SSSL",
            "--total-batch-size=4096",
        ],
    );
    within_one_percent(&v, "d8-b2-s2048-SSSL");
    assert_eq!(v["model"]["family"], "nanochat");
    assert_eq!(v["model"]["nanochat"], NANOCHAT_COMMIT);
    assert_eq!(v["architecture"]["hidden"], 512);
    // `--name value` as argparse also takes it, and torchrun's 8 ranks: rank 0 of the replay's
    // d12-b4-s1024-SSSL-ddp8 (32,768 tokens over 8 ranks of 4 × 1024: one micro-step each).
    let v = json(
        &t,
        &[
            "scripts/base_train.py",
            "--depth",
            "12",
            "--device-batch-size=4",
            "--max-seq-len",
            "1024",
            "--total-batch-size=32768",
            "--nproc-per-node",
            "8",
        ],
    );
    within_one_percent(&v, "d12-b4-s1024-SSSL-ddp8");
    assert_eq!(v["accumulation_per_gpu"], 1);
    // As torchrun's command line writes it: the script's flags after `--`.
    let pasted = json(
        &t,
        &[
            "scripts/base_train.py",
            "--",
            "--depth=12",
            "--device-batch-size=4",
            "--max-seq-len=1024",
            "--total-batch-size=32768",
            "--nproc-per-node",
            "8",
        ],
    );
    assert_eq!(pasted["bytes"], v["bytes"]);
}

#[test]
fn base_train_defaults_are_the_pinned_commits() {
    let t = site();
    let r = t.run(&["estimate", "scripts/base_train.py", "--gpu", "h100-80gb"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // depth 20 → width 1280 and 10 heads; --total-batch-size -1 → 2^20 tokens at depth 20
    // (2^19 · (scaling params / d12's)^0.383 = 2^19 · 3.14^0.383 ≈ 2^19.63, rounded to 2^20),
    // 16 micro-steps of 32 × 2048.
    for want in [
        "92d63d4",
        "depth 20, width 1280, 10 heads, window pattern SSSL",
        "16 micro-batch(es) of 32 × 2048",
        "1048576 tokens",
        "Muon + AdamW",
    ] {
        assert!(
            r.stdout.contains(want) || r.stderr.contains(want),
            "{want}:\n{}\n{}",
            r.stderr,
            r.stdout
        );
    }
}

#[test]
fn chat_sft_needs_its_base_models_tag() {
    let t = site();
    let v = json(
        &t,
        &[
            "scripts/chat_sft.py",
            "--model-tag=d8",
            "--device-batch-size=2",
            "--max-seq-len=2048",
            "--total-batch-size=4096",
        ],
    );
    within_one_percent(&v, "d8-b2-s2048-SSSL");
    let r = t.run(&["estimate", "scripts/chat_sft.py"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("--model-tag"), "{}", r.stderr);
}

#[test]
fn what_nanochat_does_not_run_is_refused_all_at_once() {
    let t = site();
    let r = t.run(&[
        "estimate",
        "scripts/base_train.py",
        "--device_batch_size=8",
        "--fp8",
        "--resume-from-step=100",
        "--n_layer=2",
    ]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    for want in [
        "--device_batch_size (nanochat spells it --device-batch-size)",
        "--fp8: FP8 training",
        "--resume-from-step",
        "--n_layer: not a flag of this script",
    ] {
        assert!(r.stderr.contains(want), "{want}:\n{}", r.stderr);
    }
    // Flags the code would assert on, and sizes beyond any GPU: errors, never a panic.
    for (flag, want) in [
        ("--max-seq-len=1", "at least 2 tokens"),
        ("--head-dim=3", "multiple of 8"),
        ("--window-pattern=SXL", "only S and L"),
        ("--depth=99999999", "exceeds 2^63"),
        ("--depth=-3", "must be at least 1"),
    ] {
        let r = t.run(&[
            "estimate",
            "scripts/base_train.py",
            flag,
            "--gpu",
            "rtx-4090",
        ]);
        assert_eq!(r.code, 1, "{flag}: {}", r.stdout);
        assert!(r.stderr.contains(want), "{flag}: {}", r.stderr);
    }
    // An older nanochat script is not read with today's defaults.
    let r = t.run(&["estimate", "old/base_train.py"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("older nanochat script"), "{}", r.stderr);
    // A vocabulary that does not shard over the ranks: nanochat asserts it.
    let r = t.run(&[
        "estimate",
        "scripts/base_train.py",
        "--depth=4",
        "--device-batch-size=1",
        "--max-seq-len=512",
        "--total-batch-size=1536",
        "--nproc-per-node",
        "3",
    ]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stderr.contains("divisible by the 3 ranks"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_depth_that_does_not_fit_gets_what_ifs_with_verdicts() {
    let t = site();
    let v = json(
        &t,
        &[
            "scripts/base_train.py",
            "--depth=12",
            "--device-batch-size=32",
            "--gpu",
            "rtx-4090",
        ],
    );
    assert_eq!(v["verdict"], "does_not_fit");
    let options = v["what_if"].as_array().unwrap();
    assert!(!options.is_empty());
    // The smaller micro-batches keep the effective batch, and the first that fits is there.
    let fits: Vec<&Value> = options
        .iter()
        .filter(|o| o["kind"] == "micro_batch" && o["verdict"] == "fits")
        .collect();
    assert!(!fits.is_empty(), "{options:#?}");
    for o in options {
        assert!(o["total"].as_u64().unwrap() < v["bytes"]["total"].as_u64().unwrap());
    }
    // Depth 26 does not fit a 24 GB card even at one sequence (its optimizer step sets the
    // peak): the deepest model that fits is offered, as base_train.py builds it.
    let v = json(
        &t,
        &[
            "scripts/base_train.py",
            "--depth=26",
            "--device-batch-size=2",
            "--gpu",
            "rtx-4090",
        ],
    );
    assert_eq!(v["train_peak_moment"], "optimizer_step");
    let depth = v["what_if"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "n_layer")
        .unwrap();
    assert_eq!(depth["verdict"], "fits");
    let changes = &depth["changes"];
    assert_eq!(changes[0]["key"], "n_layer");
    let fitting: u64 = changes[0]["value"].as_str().unwrap().parse().unwrap();
    assert!((1..26).contains(&fitting));
    // One layer deeper does not fit.
    let deeper = json(
        &t,
        &[
            "scripts/base_train.py",
            &format!("--depth={}", fitting + 1),
            "--device-batch-size=2",
            "--gpu",
            "rtx-4090",
        ],
    );
    assert_ne!(deeper["verdict"], "fits");
    // The table spells the options as nanochat's own flags.
    let r = t.run(&[
        "estimate",
        "scripts/base_train.py",
        "--depth=26",
        "--device-batch-size=2",
        "--gpu",
        "rtx-4090",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for want in [
        "--device-batch-size=1",
        "--max-seq-len=1024",
        &format!("--depth={fitting}"),
    ] {
        assert!(r.stdout.contains(want), "{want}:\n{}", r.stdout);
    }
    for unwanted in ["--batch_size", "--gradient_accumulation_steps", "--n_embd"] {
        assert!(!r.stdout.contains(unwanted), "{unwanted}:\n{}", r.stdout);
    }
}

#[test]
fn catalog_ids_are_nanochats_depths() {
    let t = site();
    let v = json(
        &t,
        &[
            "--model",
            "nanochat-d20",
            "--batch_size=2",
            "--gpu",
            "a100-80gb",
        ],
    );
    assert_eq!(v["params"]["total"], 896_533_746u64);
    assert_eq!(v["model"]["family"], "nanochat");
    assert_eq!(v["model"]["nanochat"], NANOCHAT_COMMIT);
    // The same model and run as base_train.py --depth=20 gives.
    let script = json(
        &t,
        &[
            "scripts/base_train.py",
            "--depth=20",
            "--device-batch-size=2",
            "--total-batch-size=4096",
            "--gpu",
            "a100-80gb",
        ],
    );
    assert_eq!(v["bytes"], script["bytes"]);
}

/// With `compile=false` vramdoc estimates the eager step: a verdict other than "fits" says the
/// figures are an upper bound, in every language, and the JSON marks them; a nanoGPT estimate
/// carries neither.
#[test]
fn a_verdict_on_the_eager_step_says_the_compiled_run_can_need_less() {
    let t = site();
    // d20 at the default --device-batch-size=32 on an 80 GB card: the eager step does not fit.
    // The scripts always compile; the catalog's model takes `compile=false`.
    let eager = ["--set", "compile=false"];
    let args = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut a = vec!["--model", "nanochat-d20", "--gpu", "h100-80gb"];
        a.extend_from_slice(extra);
        a
    };
    let v = json(&t, &args(&eager));
    assert_eq!(v["verdict"], "does_not_fit");
    assert_eq!(v["eager_upper_bound"], true);
    assert!(v.get("compiled_peak_low").is_none());
    let said = [
        ("en", "torch.compile, which keeps fewer tensors"),
        ("es", "torch.compile, que guarda menos tensores"),
        ("zh", "编译后保存的张量更少"),
    ];
    for (lang, words) in said {
        let mut a = vec!["estimate"];
        a.extend(args(&eager));
        a.extend(["--lang", lang]);
        let r = t.run(&a);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains(words), "{lang}: {}", r.stdout);
    }
    // A run that fits even as the eager step gets no such sentence.
    let r = t.run(&[
        "estimate",
        "--model",
        "nanochat-d12",
        "--set",
        "batch_size=1",
        "--gpu",
        "h100-80gb",
        "--set",
        "compile=false",
    ]);
    assert!(r.stdout.contains("Fits on"), "{}", r.stdout);
    assert!(!r.stdout.contains("compiled run can need less"));
    // nanoGPT's estimate is of the step train.py runs (compile modelled): no bound.
    let nanogpt = json(&t, &["--n_layer=2", "--gpu", "h100-80gb"]);
    assert!(nanogpt.get("eager_upper_bound").is_none());
    assert!(nanogpt.get("compiled_peak_low").is_none());
}

/// By default the step is compiled, as the scripts compile it: the JSON gives the low end of the
/// compiled range beside the peak (the high end, which the verdict uses), and the verdict says
/// so in every language, with both figures.
#[test]
fn the_default_is_the_compiled_step_with_its_range_said() {
    let t = site();
    let args = ["scripts/base_train.py", "--depth=20", "--gpu", "h100-80gb"];
    let v = json(&t, &args);
    assert!(v.get("eager_upper_bound").is_none());
    let low = v["compiled_peak_low"].as_u64().unwrap();
    let peak = v["bytes"]["train_peak"].as_u64().unwrap();
    // The high end is the loss's forward with the C++ backend's float32 logits (32 × 2048 ×
    // 32,768 × 4 bytes); the low end the loss's backward, with the bfloat16 gradient of the
    // head's output and one float32 number per token instead.
    let tokens: u64 = 32 * 2048;
    assert_eq!(
        peak - low,
        tokens * 32768 * 4 - (tokens * 32768 * 2 + tokens * 4)
    );
    let eager = json(
        &t,
        &[
            "--model",
            "nanochat-d20",
            "--gpu",
            "h100-80gb",
            "--set",
            "compile=false",
        ],
    );
    assert!(peak < eager["bytes"]["train_peak"].as_u64().unwrap());
    let said = [
        (
            "en",
            "nanochat's compiled step",
            "The verdict uses the higher figure.",
        ),
        (
            "es",
            "paso compilado de nanochat",
            "El veredicto usa la cifra más alta.",
        ),
        ("zh", "nanochat 编译后的训练步", "结论按较高的数字给出。"),
    ];
    for (lang, first, last) in said {
        let mut a = vec!["estimate"];
        a.extend(args);
        a.extend(["--lang", lang]);
        let r = t.run(&a);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(
            r.stdout.contains(first) && r.stdout.contains(last),
            "{lang}: {}",
            r.stdout
        );
    }
}
