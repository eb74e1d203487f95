//! `vramdoc diagnose MESSAGE --model ID` through the real binary: Hugging Face Trainer
//! out-of-memory messages matched against the model's own large tensors (the estimate is
//! `estimate_model`'s), the same consistency checks as for nanoGPT, and a family that is not
//! computed refused with the estimate's refusal.

use serde_json::Value;

use crate::diagnose_formats::fixture;
use crate::support::SiteTest;

/// GPT-2's vocabulary (`vocab_size` in openai-community/gpt2's config.json).
const GPT2_VOCAB: u64 = 50_257;
/// Qwen2.5-0.5B's vocabulary (`vocab_size` in Qwen/Qwen2.5-0.5B's config.json).
const QWEN25_VOCAB: u64 = 151_936;

/// Runs `vramdoc diagnose FIXTURE.txt ARGS --format json`, expecting success.
fn diagnose_json(t: &SiteTest, name: &str, extra: &[&str]) -> Value {
    let file = format!("{name}.txt");
    t.file(&file, &fixture(name));
    let mut args = vec!["diagnose", file.as_str(), "--format", "json"];
    args.extend_from_slice(extra);
    let r = t.run(&args);
    assert_eq!(r.code, 0, "{name}: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{name}: {e}\n{}", r.stdout))
}

/// The findings' kinds.
fn kinds(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f["kind"].as_str())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

const GPT2_T4: [&str; 8] = [
    "--model",
    "gpt2",
    "--set",
    "batch_size=8",
    "--set",
    "block_size=1024",
    "--set",
    "dtype=float16",
];

#[test]
fn a_gpt2_trainer_run_on_a_t4_failing_at_the_loss_is_its_float32_logits() {
    let t = SiteTest::new();
    let v = diagnose_json(&t, "hf_gpt2_t4_loss", &GPT2_T4);
    // transformers' ForCausalLMLoss calls logits.float(): batch × seq × vocab × 4 bytes.
    let fp32_logits = 8 * 1024 * GPT2_VOCAB * 4;
    assert_eq!(fp32_logits, 1_646_821_376);
    // The message prints 1.53 GiB.
    assert_eq!(
        (fp32_logits as f64 / (1u64 << 30) as f64 * 100.0).round(),
        153.0
    );
    let id = &v["identified"];
    assert_eq!(id["tensor"]["kind"], "logits_fp32", "{id}");
    assert_eq!(id["tensor"]["bytes"], fp32_logits);
    assert_eq!(
        id["tensor"]["shape"],
        format!("({}, {GPT2_VOCAB})", 8 * 1024)
    );
    assert_eq!(id["phase"], "forward");
    assert_eq!(id["phase_source"], "traceback");
    // The estimate is Hugging Face GPT-2's Trainer step on the T4, which does not fit.
    let e = &v["estimate"];
    assert_eq!(
        e["architecture"]["family"], "hf_gpt2",
        "{}",
        e["architecture"]
    );
    assert_eq!(e["gpu"]["id"], "t4");
    assert_ne!(e["fits"], true);
    assert!(!kinds(&v).iter().any(|k| k == "scenario_cannot_be_the_run"));
    // No evaluation is part of a Trainer step: no evaluation tensor can be matched.
    let r = t.run(&[&["diagnose", "hf_gpt2_t4_loss.txt"][..], &GPT2_T4[..]].concat());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("(8192, 50257) float32"), "{}", r.stdout);
}

#[test]
fn a_model_scenario_that_fits_where_the_run_failed_is_not_the_run() {
    let t = SiteTest::new();
    let mut args = GPT2_T4;
    args[3] = "batch_size=4";
    let v = diagnose_json(&t, "hf_gpt2_t4_loss", &args);
    let f = v["findings"]
        .as_array()
        .and_then(|a| a.iter().find(|f| f["kind"] == "scenario_cannot_be_the_run"))
        .unwrap_or_else(|| panic!("no finding: {}", v["findings"]));
    // What the run held: allocated + the request, 12.96 + 1.53 GiB.
    assert_eq!(
        f["run"],
        ((12.96f64 + 1.53) * (1u64 << 30) as f64).round() as u64
    );
    // At batch 4 no large tensor is 1.53 GiB; the nearest is the fp32 logits, half of it.
    let id = &v["identified"];
    assert!(id["tensor"].is_null(), "{id}");
    assert_eq!(id["nearest"]["kind"], "logits_fp32");
    assert_eq!(id["nearest"]["bytes"], 4 * 1024 * GPT2_VOCAB * 4);
}

#[test]
fn a_qwen25_bf16_trainer_run_failing_at_the_head_is_its_bf16_logits() {
    let t = SiteTest::new();
    let args = [
        "--model",
        "qwen2.5-0.5b",
        "--set",
        "batch_size=4",
        "--set",
        "block_size=2048",
        "--set",
        "dtype=bfloat16",
    ];
    let v = diagnose_json(&t, "hf_qwen_3090_logits", &args);
    // lm_head's output under bf16 autocast: batch × seq × vocab × 2 bytes = 2.32 GiB.
    let logits = 4 * 2048 * QWEN25_VOCAB * 2;
    assert_eq!((logits as f64 / (1u64 << 30) as f64 * 100.0).round(), 232.0);
    let id = &v["identified"];
    assert_eq!(id["tensor"]["kind"], "logits", "{id}");
    assert_eq!(id["tensor"]["dtype"], "bfloat16");
    assert_eq!(id["tensor"]["bytes"], logits);
    assert_eq!(id["phase"], "forward");
    assert_eq!(v["estimate"]["architecture"]["family"], "llama");
    assert_eq!(v["estimate"]["gpu"]["id"], "rtx-3090");
    assert_ne!(v["estimate"]["fits"], true);
    // The Llama family's Trainer step keeps the fp32 copy too (ForCausalLMLoss), twice the size.
    let r = t.run(
        &[
            &["diagnose", "hf_qwen_3090_logits.txt", "--lang", "es"][..],
            &args[..],
        ]
        .concat(),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("(8192, 151936)"), "{}", r.stdout);
}

#[test]
fn a_setting_the_models_replay_does_not_cover_is_refused_at_its_key() {
    let t = SiteTest::new();
    t.file("oom.txt", &fixture("hf_gpt2_t4_loss"));
    // A setting the replay does not cover is refused at its key, never matched.
    let r = t.run(&[
        "diagnose",
        "oom.txt",
        "--model",
        "qwen2.5-0.5b",
        "--set",
        "dtype=float16",
    ]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stderr.contains("float16"), "{}", r.stderr);
}

#[test]
fn a_trainer_evaluation_is_named_and_not_matched_against_the_training_step() {
    let t = SiteTest::new();
    let args = [
        "--model",
        "gpt2",
        "--set",
        "batch_size=4",
        "--set",
        "dtype=float16",
    ];
    let v = diagnose_json(&t, "hf_gpt2_trainer_eval", &args);
    let id = &v["identified"];
    assert_eq!(id["phase"], "evaluation", "{id}");
    assert_eq!(id["evaluation_not_modelled"], true);
    assert!(id["tensor"].is_null() && id["nearest"].is_null(), "{id}");
    // The training step fits the T4, but an evaluation is not the step: no such finding.
    assert_eq!(v["estimate"]["fits"], true);
    assert!(!kinds(&v).iter().any(|k| k == "scenario_cannot_be_the_run"));
    let r = t.run(&[&["diagnose", "hf_gpt2_trainer_eval.txt"][..], &args[..]].concat());
    assert!(
        r.stdout.contains("Trainer's evaluation_loop()") && r.stdout.contains("not its evaluation"),
        "{}",
        r.stdout
    );
    // The same traceback against a nanoGPT scenario is nanoGPT's evaluation phase as before.
    let v = diagnose_json(&t, "hf_gpt2_trainer_eval", &["--set", "batch_size=4"]);
    assert_eq!(v["identified"]["evaluation_not_modelled"], false);
}

#[test]
fn a_models_tensors_are_worded_as_transformers_makes_them() {
    let t = SiteTest::new();
    t.file("oom.txt", &fixture("hf_gpt2_t4_loss"));
    for (lang, words) in [
        ("en", "transformers' loss calls logits.float()"),
        ("es", "la pérdida de transformers llama a logits.float()"),
        ("zh", "transformers 的损失函数会调用 logits.float()"),
    ] {
        let r = t.run(&[&["diagnose", "oom.txt", "--lang", lang][..], &GPT2_T4[..]].concat());
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains(words), "{lang}: {}", r.stdout);
        assert!(!r.stdout.contains("nll_loss"), "{lang}: {}", r.stdout);
    }
    // Markdown says the same.
    let r = t.run(
        &[
            &["diagnose", "oom.txt", "--format", "markdown"][..],
            &GPT2_T4[..],
        ]
        .concat(),
    );
    assert!(r.stdout.contains("logits.float()"), "{}", r.stdout);
    // A model scenario that cannot be the run names a model's settings, not nanoGPT's keys.
    let mut args = GPT2_T4;
    args[3] = "batch_size=4";
    let r = t.run(&[&["diagnose", "oom.txt"][..], &args[..]].concat());
    assert!(
        r.stdout.contains("the scenario cannot be the run")
            && r.stdout.contains("gradient checkpointing")
            && !r.stdout.contains("n_layer"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_readout_with_a_model_sits_beside_the_models_estimate() {
    let t = SiteTest::new();
    let v = diagnose_json(
        &t,
        "smi_table",
        &["--model", "gpt2", "--set", "batch_size=8"],
    );
    assert_eq!(v["estimate"]["architecture"]["family"], "hf_gpt2");
    let r = t.run(&[
        "estimate",
        "--model",
        "gpt2",
        "--set",
        "batch_size=8",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let e: Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(v["estimate"]["bytes"]["peak"], e["bytes"]["peak"]);
}
