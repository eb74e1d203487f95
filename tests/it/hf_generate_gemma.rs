//! Hugging Face `generate` on Gemma 2 and Gemma 3 (`estimate::estimate_generate`) against
//! transformers' own `generate` replayed on fake tensors
//! (`tools/hf_replay/replay_generate_gemma.py` → `tests/data/hf_generate_gemma_replay.json`):
//! weights and the KV cache (dynamic with its sliding layers, and static) equal to the replay's
//! to the byte, the prefill and decoding peaks within 1 %; and the same through the CLI, with
//! the solver.

use serde::Deserialize;

use crate::hf_gemma::{architecture, Model};
use crate::hf_generate::{greedy, off, Replay};
use crate::support::SiteTest;
use crate::trainer_replay::cli;
use vramdoc::estimate::{estimate_generate, Dtype, GpuCatalog, Scenario};

#[derive(Deserialize)]
struct Run {
    name: String,
    prompt_tokens: u64,
    max_new_tokens: u64,
    batch_size: u64,
    cache: String,
    dtype: String,
    family: String,
    attn_implementation: String,
    config: Vec<(String, serde_json::Value)>,
}

fn replay() -> Replay<Run> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/hf_generate_gemma_replay.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The model a run's config keywords build (transformers' defaults for the rest).
fn model(r: &Run) -> Model {
    let int = |k: &str| {
        r.config
            .iter()
            .find(|(key, _)| key == k)
            .and_then(|(_, v)| v.as_u64())
            .unwrap()
    };
    Model {
        model_type: r.family.clone(),
        layers: int("num_hidden_layers"),
        hidden: int("hidden_size"),
        heads: int("num_attention_heads"),
        kv_heads: int("num_key_value_heads"),
        head_dim: int("head_dim"),
        intermediate: int("intermediate_size"),
        vocab_size: int("vocab_size"),
        sliding_window: int("sliding_window"),
        layer_types: Vec::new(),
    }
}

#[test]
fn every_replayed_gemma_generate_run_matches_kv_exactly_and_its_peaks_within_one_percent() {
    let replay = replay();
    assert_eq!(replay.transformers, "5.24.0");
    assert!(replay.runs.len() >= 10);
    let catalog = GpuCatalog::builtin();
    let (mut worst, mut beyond_window, mut statics) = (0.0f64, 0, 0);
    for e in &replay.runs {
        let r = &e.run;
        let m = model(r);
        let a = architecture(&m);
        let s = Scenario {
            dtype: Dtype::parse(&r.dtype).unwrap(),
            flash: r.attn_implementation == "sdpa",
            compile: false,
            ..Scenario::default()
        };
        let g = greedy(r.prompt_tokens, r.max_new_tokens, r.batch_size, &r.cache);
        let name = &r.name;
        let est = estimate_generate(&a, &s, &g, &catalog).unwrap();
        assert_eq!(est.params.total, e.params, "{name}");
        assert_eq!(est.bytes.weights, e.weights_bytes, "{name}");
        assert_eq!(est.bytes.kv_cache_at_end, e.kv_cache_bytes, "{name}");
        let prefill = off(est.bytes.prefill_peak, e.prefill_peak_bytes);
        let decode = off(est.bytes.decode_peak, e.decode_peak_bytes);
        assert!(prefill.abs() < 0.01, "{name}: prefill {prefill:+.4}");
        assert!(decode.abs() < 0.01, "{name}: decode {decode:+.4}");
        worst = worst.max(prefill.abs()).max(decode.abs());
        beyond_window += usize::from(r.prompt_tokens + r.max_new_tokens > m.sliding_window);
        statics += usize::from(r.cache == "static");
    }
    eprintln!("worst: {:.3} %", worst * 100.0);
    assert!(
        beyond_window >= 4 && statics >= 3,
        "{beyond_window} {statics}"
    );
}

#[test]
fn a_catalog_gemma_generates_through_the_cli_and_its_solver_answers() {
    // The replay's gemma-3-270m run is Gemma 3 270M's config.json with all 18 layers.
    let data = replay();
    let e = data
        .runs
        .iter()
        .find(|e| e.run.name == "gemma-3-270m-p600-n40-b2-dynamic")
        .unwrap();
    let v = cli(&[
        "--model",
        "gemma-3-270m",
        "--phase",
        "generate",
        "--prompt_tokens=600",
        "--max_new_tokens=40",
        "--batch_size=2",
        // The replay's bfloat16 (the catalog records no torch_dtype for it).
        "--weights_dtype=bfloat16",
    ]);
    assert_eq!(v["bytes"]["kv_cache_at_end"], e.kv_cache_bytes);
    let prefill = v["bytes"]["prefill_peak"].as_u64().unwrap();
    assert!(off(prefill, e.prefill_peak_bytes).abs() < 0.01, "{prefill}");
    // Gemma 2 generates with eager attention by default; SDPA is refused at its key.
    let v = cli(&["--model", "gemma-2-2b", "--phase", "generate"]);
    assert!(v["bytes"]["kv_cache"].as_u64().unwrap() > 0);
    let t = SiteTest::new();
    let r = t.run(&[
        "estimate",
        "--model",
        "gemma-2-2b",
        "--phase",
        "generate",
        "--flash=True",
    ]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stderr.contains("no SDPA"), "{}", r.stderr);
    // The longest context that fits a 12 GB card, one more token does not.
    let v = cli(&[
        "--model",
        "gemma-3-1b",
        "--phase",
        "generate",
        "--gpu",
        "rtx-3060",
        "--solve",
        "max_context",
    ]);
    let longest = v["solve"]["max_context"].as_u64().unwrap();
    assert!(longest > 4096, "{v}");
}
