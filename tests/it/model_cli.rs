//! The scenario key `model` through the real CLI: `vramdoc estimate --model gpt2` (or a
//! config.json path) is Hugging Face's GPT-2 as `estimate_model` computes it, held to the replay
//! of transformers' own training step; every other catalog family is refused by name with its
//! parameter count; nanoGPT-only keys beside a model are refused at their line.

use serde_json::Value;
use vramdoc::estimate::{
    arch::HF_TRANSFORMERS, estimate_model, Architecture, Dtype, GpuCatalog, Scenario,
};

use crate::support::SiteTest;

/// `vramdoc estimate ARGS --format json`, parsed.
fn json(t: &SiteTest, args: &[&str]) -> Value {
    t.estimate_json(args)
}

/// A replayed run's training peak (`tests/data/hf_gpt2_replay.json`), by name.
fn replayed_peak(name: &str) -> u64 {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/hf_gpt2_replay.json"
    );
    let data: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let runs = data["runs"].as_array().unwrap();
    let run = runs.iter().find(|r| r["run"]["name"] == name).unwrap();
    run["train_peak_bytes"].as_u64().unwrap()
}

#[test]
fn model_gpt2_on_the_command_line_is_hugging_faces_gpt2_held_to_its_replay() {
    let t = SiteTest::new();
    // The replay's runs of GPT-2 124M (1024 positions), each through the CLI with the
    // replay's settings; dropout 0.1 and SDPA are the defaults a model gets.
    for (args, replay) in [
        (
            &[
                "--batch_size=4",
                "--gradient_accumulation_steps=2",
                "--dtype=float32",
            ][..],
            "gpt2-124m-s1024-b4-fp32-sdpa",
        ),
        (
            &[
                "--batch_size=4",
                "--gradient_accumulation_steps=2",
                "--dtype=bfloat16",
                "--set",
                "flash=False",
            ],
            "gpt2-124m-s1024-b4-bf16-eager",
        ),
        (
            &[
                "--block_size=512",
                "--batch_size=8",
                "--gradient_accumulation_steps=2",
                "--dtype=bfloat16",
            ],
            "gpt2-124m-pos1024-s512-b8-bf16-sdpa",
        ),
    ] {
        let mut all = vec!["--model", "gpt2"];
        all.extend_from_slice(args);
        let v = json(&t, &all);
        let peak = v["bytes"]["train_peak"].as_u64().unwrap();
        let want = replayed_peak(replay);
        let off = (peak as f64 - want as f64).abs() / want as f64;
        assert!(off < 0.01, "{replay}: {peak} against the replay's {want}");
        assert_eq!(v["params"]["total"], 124_439_808u64);
        assert_eq!(v["model"]["id"], "gpt2");
        assert_eq!(v["model"]["family"], "hf_gpt2");
        assert_eq!(v["model"]["model_type"], "gpt2");
        assert_eq!(v["model"]["computed"], true);
        assert_eq!(v["model"]["transformers"], HF_TRANSFORMERS);
        assert_eq!(v["model"]["source"]["repo"], "openai-community/gpt2");
        assert!(v["what_if"].as_array().is_some_and(|w| !w.is_empty()));
    }
}

#[test]
fn the_lead_example_gives_the_library_estimate_and_a_verdict() {
    let t = SiteTest::new();
    let args = [
        "--model",
        "gpt2",
        "--gpu",
        "t4",
        "--batch_size=8",
        "--block_size=1024",
    ];
    let v = json(&t, &args);
    // Trainer's defaults for the keys not given: no mixed precision, no compile, the config's
    // dropout, one micro-batch per step.
    let s = Scenario {
        batch_size: 8,
        block_size: 1024,
        gradient_accumulation_steps: 1,
        dtype: Dtype::Float32,
        compile: false,
        dropout: 0.1,
        gpu: Some("t4".into()),
        ..Scenario::default()
    };
    let e = estimate_model(
        &Architecture::hf_gpt2(12, 12, 768, 50257, 1024),
        &s,
        &GpuCatalog::builtin(),
    )
    .unwrap();
    assert_eq!(v["bytes"]["peak"], e.bytes.peak);
    assert_eq!(v["bytes"]["total"], e.bytes.total);
    assert_eq!(v["scenario"]["dtype"], "float32");
    assert_eq!(v["scenario"]["model"], "gpt2");
    // 14.6 GiB allocated plus the CUDA context is over a T4's 14.75 GiB.
    assert_eq!(v["verdict"], "does_not_fit");
    let mut all = vec!["estimate"];
    all.extend_from_slice(&args);
    let table = t.run(&all);
    assert_eq!(table.code, 0, "{}", table.stderr);
    for want in [
        "gpt2 (Hugging Face GPT-2, transformers 5.24.0)",
        "Does not fit on the NVIDIA Tesla T4",
        "Smaller micro-batch, same effective batch",
        "Trainer step of Hugging Face transformers 5.24.0",
    ] {
        assert!(table.stdout.contains(want), "{want}:\n{}", table.stdout);
    }
    assert!(!table.stdout.contains("n_layer="), "{}", table.stdout);
    assert!(!table.stdout.contains("nanoGPT"), "{}", table.stdout);
    assert!(
        table.stderr.contains("Trainer's defaults"),
        "{}",
        table.stderr
    );
    // In the other languages too.
    let mut zh = all.clone();
    zh.extend_from_slice(&["--lang", "zh"]);
    let r = t.run(&zh);
    assert!(
        r.stdout.contains("减小微批次，有效批次不变"),
        "{}",
        r.stdout
    );
}

const GPT2_CONFIG: &str = r#"{
  "activation_function": "gelu_new",
  "architectures": ["GPT2LMHeadModel"],
  "attn_pdrop": 0.1,
  "bos_token_id": 50256,
  "embd_pdrop": 0.1,
  "eos_token_id": 50256,
  "initializer_range": 0.02,
  "layer_norm_epsilon": 1e-05,
  "model_type": "gpt2",
  "n_ctx": 1024,
  "n_embd": 768,
  "n_head": 12,
  "n_layer": 12,
  "n_positions": 1024,
  "resid_pdrop": 0.1,
  "summary_activation": null,
  "summary_first_dropout": 0.1,
  "summary_proj_to_labels": true,
  "summary_type": "cls_index",
  "summary_use_proj": true,
  "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}},
  "vocab_size": 50257
}"#;

#[test]
fn a_config_json_path_a_folder_and_a_yaml_key_give_the_catalogs_model() {
    let t = SiteTest::new();
    t.file("models/gpt2/config.json", GPT2_CONFIG);
    t.file(
        "runs/run.yaml",
        "model: ../models/gpt2/config.json\nbatch_size: 2\n",
    );
    let by_id = json(&t, &["--model", "gpt2", "--batch_size=2"]);
    for args in [
        &["--model", "models/gpt2/config.json", "--batch_size=2"][..],
        &["--model=models/gpt2", "--batch_size=2"],
        &["runs/run.yaml"],
    ] {
        let v = json(&t, args);
        assert_eq!(v["bytes"], by_id["bytes"], "{args:?}");
        assert_eq!(v["model"]["family"], "hf_gpt2");
        assert!(v["model"]["source"].is_null() && v["model"]["id"].is_null());
        assert!(v["model"]["path"]
            .as_str()
            .unwrap()
            .ends_with("config.json"));
    }
    // The repository id finds the catalog entry too.
    let repo = json(&t, &["--model", "openai-community/gpt2", "--batch_size=2"]);
    assert_eq!(repo["bytes"], by_id["bytes"]);
}

#[test]
fn every_catalog_family_has_its_own_step_none_is_refused_as_not_modelled() {
    // Every family the catalog lists is computed: no catalog id gets the "not modelled yet"
    // refusal (`Architecture::computed`), which stays for a family described later.
    let t = SiteTest::new();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/models");
    let mut ids = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        ids.extend(
            text.lines()
                .filter_map(|l| l.trim().strip_prefix("- id: "))
                .map(str::to_owned),
        );
    }
    assert!(ids.len() >= 40, "{ids:?}");
    for id in &ids {
        let r = t.run(&["estimate", "--model", id, "--gpu", "a100-80gb"]);
        assert!(!r.stderr.contains("not modelled yet"), "{id}: {}", r.stderr);
    }
}

#[test]
fn model_inputs_that_are_wrong_are_refused_where_they_are_written() {
    let t = SiteTest::new();
    // An unknown id, with the closest ones.
    let r = t.run(&["estimate", "--model", "lama-3.1-8b"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("unknown model \"lama-3.1-8b\": did you mean llama-3.1-8b"),
        "{}",
        r.stderr
    );
    // A config.json whose model_type is not modelled: at its line, listing the modelled ones.
    t.file(
        "bert/config.json",
        "{\n  \"architectures\": [\"BertModel\"],\n  \"model_type\": \"bert\"\n}\n",
    );
    let r = t.run(&["estimate", "--model", "bert/config.json"]);
    assert!(r.stderr.contains("bert/config.json:3:17"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("gpt2, llama, mistral, qwen2, qwen3, phi3"),
        "{}",
        r.stderr
    );
    // nanoGPT's keys beside a model, each at its own line, naming both.
    t.file(
        "s.yaml",
        "model: gpt2\nn_layer: 6\nbatch_size: 4\ninit_from: gpt2-xl\n",
    );
    let r = t.run(&["estimate", "s.yaml", "--set", "bias=True"]);
    assert_eq!(r.code, 1);
    for want in [
        "s.yaml:2:1",
        "s.yaml:4:1",
        "--set bias=True",
        "`n_layer` is a key of nanoGPT's train.py, and model = gpt2",
    ] {
        assert!(r.stderr.contains(want), "{want}:\n{}", r.stderr);
    }
    // A nanoGPT Python config beside --model: its shape keys are refused at their lines.
    t.file(
        "config/train_x.py",
        "n_layer = 6\nn_head = 6\nbatch_size = 4\n",
    );
    let r = t.run(&["estimate", "config/train_x.py", "--model", "gpt2"]);
    assert!(
        r.stderr.contains("train_x.py:1:1") && r.stderr.contains("train_x.py:2:1"),
        "{}",
        r.stderr
    );
    // Generating with a Hugging Face model is Hugging Face generate (`tests/it/solve_cli.rs`).
    let r = t.run(&["estimate", "--model", "gpt2", "--phase", "generate"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Hugging Face generate"), "{}", r.stdout);
    // diagnose matches a model's own tensors (tests/it/diagnose_model.rs): with a message, the
    // estimate in its JSON is Hugging Face GPT-2's, not nanoGPT's.
    t.file("oom.txt", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.54 GiB. GPU 0 has a total capacity of 11.72 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 8.61 GiB memory in use. Of the allocated memory 6.20 GiB is allocated by PyTorch, and 1.95 GiB is reserved by PyTorch but unallocated.\n");
    let r = t.run(&["diagnose", "oom.txt", "--model", "gpt2", "--format", "json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(v["estimate"]["architecture"]["family"], "hf_gpt2");
    // A guide's scenario names a model by catalog id only (a site builds the same anywhere): a
    // config.json path is refused at its key, never estimated as nanoGPT.
    t.file(
        "content/hf/en.md",
        "---\ntitle: \"HF\"\nlang: en\ndate: 2026-11-20\nscenario:\n  model: ./gpt2/config.json\n---\n\nBody\n",
    );
    let r = t.build_err();
    assert!(r.stderr.contains("unknown model"), "{}", r.stderr);
    assert!(r.stderr.contains("en.md:6"), "{}", r.stderr);
}

#[test]
fn estimate_help_names_the_model_flag_and_the_transformers_version() {
    let r = SiteTest::new().run(&["estimate", "--help"]);
    assert!(
        r.stdout.contains("--model <ID|CONFIG.JSON>"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains(&format!("transformers {HF_TRANSFORMERS}")),
        "{}",
        r.stdout
    );
    // The pinned version is the replay tool's.
    let req = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tools/hf_replay/requirements.txt"
    ))
    .unwrap();
    assert!(req.contains(&format!("transformers=={HF_TRANSFORMERS}")));
}

/// The Llama family's step model (`estimate/hf_llama/`) is reached from the CLI by its catalog
/// id: Llama 3.1 8B loaded in float32 (`weights_dtype`; its config's own is bfloat16) under bf16
/// autocast keeps float32 weights, 4 bytes for each of
/// the model card's 8,030,261,248 parameters (every one a multiple of the allocator's 512-byte
/// block), plus the rotary embedding's `inv_freq` buffers, 4·head_dim = 512 bytes for a
/// head_dim of 128 (`estimate/hf_llama/moments.rs`).
#[test]
fn a_llama_family_model_is_estimated_from_the_cli() {
    let t = SiteTest::new();
    let r = t.run(&[
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100",
        "--batch_size=1",
        "--block_size=2048",
        "--dtype=bfloat16",
        "--weights_dtype=float32",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["model"]["family"], "llama");
    assert_eq!(v["params"]["total"], 8_030_261_248u64);
    // float32 weights: 4 bytes a parameter, and inv_freq's 512 bytes.
    assert_eq!(v["bytes"]["weights"], 4 * 8_030_261_248u64 + 512);
}
