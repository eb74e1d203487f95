//! `vramdoc diagnose` on out-of-memory errors raised in generation, through the real binary:
//! the traceback's generation frames name the phase, a generate scenario (`--model gpt2 --phase
//! generate`, nanoGPT's `sample.py`) matches the failed allocation against its own tensors (the
//! KV cache's growth, the prefill's activations, sample.py's cropped-context forward), and a
//! training scenario never matches a generation error. Every expected size is computed here.

use serde_json::Value;

use crate::diagnose_formats::fixture;
use crate::nanogpt_configs::SAMPLE_PY;
use crate::support::SiteTest;

const MIB: u64 = 1 << 20;

/// Runs `vramdoc diagnose FILE ARGS --format json` on `text`, expecting success.
fn diagnose_json(t: &SiteTest, text: &str, extra: &[&str]) -> Value {
    t.file("oom.txt", text);
    let mut args = vec!["diagnose", "oom.txt", "--format", "json"];
    args.extend_from_slice(extra);
    let r = t.run(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}\n{}", r.stdout))
}

/// The findings' kinds.
fn kinds(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f["kind"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The token counts `t` in `range` whose size `bytes(t)`, rounded up to PyTorch's 2 MiB
/// blocks, is `printed` (a whole number of MiB, as the message prints it).
fn counts_rounding_to(
    printed: u64,
    range: std::ops::RangeInclusive<u64>,
    bytes: impl Fn(u64) -> u64,
) -> (u64, u64) {
    let hits: Vec<u64> = range
        .filter(|&t| bytes(t).div_ceil(2 * MIB) * 2 * MIB == printed)
        .collect();
    (hits[0], hits[hits.len() - 1])
}

/// GPT-2 (12 layers of 12 heads of 64) generating 512 tokens after 512 for 384 prompts in
/// float16 on a T4.
const GPT2_BATCH_T4: [&str; 13] = [
    "--model",
    "gpt2",
    "--phase",
    "generate",
    "--set",
    "batch_size=384",
    "--set",
    "prompt_tokens=512",
    "--set",
    "max_new_tokens=512",
    "--set",
    "dtype=float16",
    "--gpu=t4",
];

#[test]
fn a_gpt2_generate_failing_in_the_dynamic_cache_is_one_layers_keys_growing() {
    let t = SiteTest::new();
    let v = diagnose_json(&t, &fixture("hf_gpt2_generate_kv_t4"), &GPT2_BATCH_T4);
    let id = &v["identified"];
    assert_eq!(id["phase"], "generation");
    assert_eq!(id["phase_source"], "traceback");
    assert_eq!(id["tensor"]["kind"], "kv_cache_cat");
    // DynamicCache's torch.cat: batch × KV heads × tokens × head_dim × 2 bytes; a decoding
    // step's cat holds from prompt + 1 to prompt + new − 1 tokens.
    let per_token = 384 * 12 * 64 * 2;
    let (lo, hi) = counts_rounding_to(564 * MIB, 513..=1023, |n| n * per_token);
    assert_eq!((lo, hi), (1000, 1002));
    assert_eq!(id["tensor"]["shape"], format!("[384, 12, {lo}–{hi}, 64]"));
    assert_eq!(id["tensor"]["dtype"], "float16");
    assert_eq!(id["tensor"]["bytes"], hi * per_token);
    // The estimate does not fit the T4, so the run can be this one.
    assert_eq!(v["generation"]["fits"], false);
    assert!(!kinds(&v).contains(&"scenario_cannot_be_the_run".to_owned()));
    // The text says it in words.
    t.file("oom.txt", &fixture("hf_gpt2_generate_kv_t4"));
    let mut args = vec!["diagnose", "oom.txt"];
    args.extend_from_slice(&GPT2_BATCH_T4);
    let r = t.run(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("KV cache grows"), "{}", r.stdout);
    assert!(r.stdout.contains("Phase: generation"), "{}", r.stdout);
}

#[test]
fn a_prefill_mlp_failure_without_traceback_is_named_and_a_fitting_scenario_flagged() {
    let t = SiteTest::new();
    // 64 prompts of 1,000 tokens: the prefill's c_fc output is 64 × 1000 × 3072 × 2 bytes.
    let mlp = 64 * 1000 * 3072 * 2;
    assert_eq!(mlp, 375 * MIB);
    let text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 376.00 MiB. GPU 0 has a total capacity of 14.75 GiB of which 210.06 MiB is free. Process 311 has 14.54 GiB memory in use. Of the allocated memory 14.12 GiB is allocated by PyTorch, and 301.50 MiB is reserved by PyTorch but unallocated.";
    let v = diagnose_json(
        &t,
        text,
        &[
            "--model",
            "gpt2",
            "--phase",
            "generate",
            "--set",
            "batch_size=64",
            "--set",
            "prompt_tokens=1000",
            "--set",
            "max_new_tokens=20",
            "--set",
            "dtype=float16",
            "--gpu=t4",
        ],
    );
    let id = &v["identified"];
    assert_eq!(id["tensor"]["kind"], "prefill_mlp");
    assert_eq!(id["tensor"]["shape"], "[64, 1000, 3072]");
    assert_eq!(id["tensor"]["bytes"], mlp);
    assert_eq!(id["phase"], "generation");
    assert_eq!(id["phase_source"], "tensor");
    // This generate fits a T4 by gigabytes: it cannot be the run that held 14 GiB.
    assert_eq!(v["generation"]["fits"], true);
    assert!(kinds(&v).contains(&"scenario_cannot_be_the_run".to_owned()));
}

#[test]
fn nanogpt_sample_py_failing_in_its_cropped_forward_is_the_attention_softmax() {
    let t = SiteTest::new();
    t.file("sample.py", SAMPLE_PY);
    let v = diagnose_json(
        &t,
        &fixture("nanogpt_sample_scores"),
        &[
            "--config",
            "sample.py",
            "--set",
            "init_from=resume",
            "--set",
            "n_layer=12",
            "--set",
            "n_head=12",
            "--set",
            "n_embd=768",
            "--set",
            "block_size=4096",
            "--set",
            "vocab_size=50304",
            "--set",
            "bias=false",
            "--set",
            "flash=false",
            "--set",
            "dtype=float16",
            "--set",
            "max_new_tokens=4000",
            "--set",
            "num_samples=1",
        ],
    );
    let id = &v["identified"];
    assert_eq!(id["phase"], "generation");
    assert_eq!(id["phase_source"], "traceback");
    assert_eq!(id["tensor"]["kind"], "attention_scores_fp32");
    // The float32 softmax of one layer: 12 heads × t × t × 4 bytes, t from the 1-token prompt
    // to the 4,000-token context.
    let (lo, hi) = counts_rounding_to(594 * MIB, 1..=4000, |n| 12 * n * n * 4);
    assert_eq!(
        id["tensor"]["shape"],
        format!("[1, 12, {lo}–{hi}, {lo}–{hi}]")
    );
    assert_eq!(id["tensor"]["bytes"], 12 * hi * hi * 4);
    assert_eq!(v["generation"]["phase"], "generate");
}

#[test]
fn a_generation_error_is_never_matched_against_a_training_step() {
    let t = SiteTest::new();
    let v = diagnose_json(
        &t,
        &fixture("hf_gpt2_generate_kv_t4"),
        &[
            "--model",
            "gpt2",
            "--set",
            "batch_size=8",
            "--set",
            "dtype=float16",
            "--gpu=t4",
        ],
    );
    let id = &v["identified"];
    assert_eq!(id["phase"], "generation");
    assert!(id["tensor"].is_null() && id["nearest"].is_null(), "{id}");
    assert_eq!(id["generation_not_modelled"], true);
    assert!(!kinds(&v).contains(&"scenario_cannot_be_the_run".to_owned()));
    // The same with a nanoGPT training config: the sentence says what to pass instead.
    t.file("sample_oom.txt", &fixture("nanogpt_sample_scores"));
    t.file("train.yaml", "batch_size: 12\nblock_size: 1024\n");
    let r = t.run(&["diagnose", "sample_oom.txt", "--config", "train.yaml"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("--phase generate"), "{}", r.stdout);
    assert!(!r.stdout.contains("The 594 MiB are"), "{}", r.stdout);
    // With no scenario at all, the keys asked for are generation's.
    let v = diagnose_json(&t, &fixture("hf_gpt2_generate_kv_t4"), &[]);
    let keys: Vec<&str> = v["missing_keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| k.as_str())
        .collect();
    assert!(
        keys.contains(&"prompt_tokens") && keys.contains(&"max_new_tokens"),
        "{keys:?}"
    );
    assert!(!keys.contains(&"block_size"), "{keys:?}");
}

#[test]
fn a_llama_3_generate_on_an_l4_grows_its_grouped_query_cache() {
    let t = SiteTest::new();
    let text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 94.00 MiB. GPU 0 has a total capacity of 22.05 GiB of which 60.06 MiB is free. Process 77 has 21.98 GiB memory in use. Of the allocated memory 21.50 GiB is allocated by PyTorch, and 160.50 MiB is reserved by PyTorch but unallocated.";
    let v = diagnose_json(
        &t,
        text,
        &[
            "--model",
            "llama-3-8b",
            "--phase",
            "generate",
            "--set",
            "batch_size=16",
            "--set",
            "prompt_tokens=1024",
            "--set",
            "max_new_tokens=3072",
            "--set",
            "dtype=bfloat16",
            "--gpu",
            "l4",
        ],
    );
    let id = &v["identified"];
    assert_eq!(id["tensor"]["kind"], "kv_cache_cat");
    assert_eq!(id["phase_source"], "tensor");
    // Llama 3 8B: 8 KV heads of 4096 / 32 = 128 (config.json), bf16; 16 sequences.
    let per_token = 16 * 8 * 128 * 2;
    let (lo, hi) = counts_rounding_to(94 * MIB, 1025..=4095, |n| n * per_token);
    assert_eq!(id["tensor"]["shape"], format!("[16, 8, {lo}–{hi}, 128]"));
    assert_eq!(id["tensor"]["dtype"], "bfloat16");
    assert_eq!(v["generation"]["fits"], false);
}
