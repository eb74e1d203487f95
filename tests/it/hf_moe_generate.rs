//! Hugging Face `generate` on mixtures of experts (Mixtral, Qwen1.5-MoE, Qwen3-MoE) against transformers'
//! own `generate` replayed on fake tensors (`tools/hf_replay/replay_generate_moe.py` →
//! `tests/data/hf_moe_generate_replay.json`): the KV cache equal to the replay's to the byte, the
//! prefill and decoding peaks within 1 %, the weights every expert's; and through the real CLI
//! for the catalog's Mixtral 8x7B, with the solvers.

use crate::hf_generate::{Replay, Run};
use crate::hf_moe::{architecture, Model};
use crate::support::SiteTest;
use vramdoc::estimate::{estimate_generate, GpuCatalog};

fn replay() -> Replay<Run> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/hf_moe_generate_replay.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The replayed config as the training test's `Model` (Mixtral's experts are
/// `intermediate_size` wide, Qwen's `moe_intermediate_size`).
fn model(family: &str, config: &[(String, serde_json::Value)]) -> Model {
    let get = |k: &str| {
        config
            .iter()
            .find(|(key, _)| key == k)
            .and_then(|(_, v)| v.as_u64())
    };
    let int = |k: &str| get(k).unwrap();
    let mixtral = family == "mixtral";
    Model {
        model_type: family.to_owned(),
        layers: int("num_hidden_layers"),
        hidden: int("hidden_size"),
        heads: int("num_attention_heads"),
        kv_heads: int("num_key_value_heads"),
        experts: int(if mixtral {
            "num_local_experts"
        } else {
            "num_experts"
        }),
        top_k: int("num_experts_per_tok"),
        expert_intermediate: int(if mixtral {
            "intermediate_size"
        } else {
            "moe_intermediate_size"
        }),
        vocab_size: int("vocab_size"),
        shared_intermediate: get("shared_expert_intermediate_size").unwrap_or(0),
        head_dim: get("head_dim").unwrap_or(0),
    }
}

/// The description of a replayed MoE config.
pub(crate) fn architecture_of(r: &Run) -> vramdoc::estimate::arch::Architecture {
    architecture_of_config(&r.family, &r.config)
}

/// The description of the MoE config `config` of `model_type` `family`.
pub(crate) fn architecture_of_config(
    family: &str,
    config: &[(String, serde_json::Value)],
) -> vramdoc::estimate::arch::Architecture {
    architecture(&model(family, config))
}

fn off(est: u64, replayed: u64) -> f64 {
    (est as f64 - replayed as f64) / replayed as f64
}

#[test]
fn every_replayed_moe_generate_run_matches_kv_exactly_and_its_peaks_within_one_percent() {
    let data = replay();
    assert_eq!(data.transformers, "5.24.0");
    let catalog = GpuCatalog::builtin();
    let mut worst = 0.0f64;
    for e in &data.runs {
        let r = &e.run;
        let (a, s, g) = crate::hf_generate::inputs(r);
        let est = estimate_generate(&a, &s, &g, &catalog).unwrap();
        let name = &r.name;
        assert_eq!(
            est.params.total, e.params,
            "{name}: every expert's parameters"
        );
        assert_eq!(est.bytes.weights, e.weights_bytes, "{name}: weights");
        assert_eq!(
            est.bytes.kv_cache_at_end, e.kv_cache_bytes,
            "{name}: KV cache"
        );
        let (p, d) = (
            off(est.bytes.prefill_peak, e.prefill_peak_bytes),
            off(est.bytes.decode_peak, e.decode_peak_bytes),
        );
        eprintln!(
            "{name}: prefill {:+.4} %, decode {:+.4} %",
            p * 100.0,
            d * 100.0
        );
        worst = worst.max(p.abs()).max(d.abs());
    }
    eprintln!("worst {:.4} % over {} runs", worst * 100.0, data.runs.len());
    assert!(worst <= 0.01, "{worst}");
}

/// `vramdoc estimate --model mixtral-8x7b --phase generate ARGS --format json`.
fn mixtral(t: &SiteTest, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["estimate", "--model", "mixtral-8x7b", "--phase", "generate"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let r = t.run(&all);
    assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

#[test]
fn mixtral_generate_through_the_cli_holds_every_expert_and_solves_the_largest_batch() {
    let t = SiteTest::new();
    let v = mixtral(
        &t,
        &[
            "--prompt_tokens=1024",
            "--max_new_tokens=256",
            "--gpu",
            "h100-80gb",
        ],
    );
    assert_eq!(v["phase"], "generate");
    assert_eq!(v["params"]["total"], 46_702_792_704u64);
    assert_eq!(v["params"]["active"], 12_879_925_248u64);
    // Every expert resident in bf16: 93.4 GB of weights (plus the rotary buffers), more than an
    // 80 GB card holds, though the 12.9B active parameters would be 25.8 GB.
    assert_eq!(v["bytes"]["weights"], 46_702_792_704u64 * 2 + 128 * 4);
    assert_eq!(v["verdict"], "does_not_fit");
    // The cache: 2 (keys, values) × 32 layers × 8 KV heads × 128 × (1024 + 256 − 1) tokens × 2.
    assert_eq!(v["bytes"]["kv_cache"], 2 * 32 * 8 * 128 * 1279 * 2u64);
    // On an H200 the solver's batch fits and one more prompt does not.
    let solved = mixtral(
        &t,
        &[
            "--prompt_tokens=1024",
            "--max_new_tokens=256",
            "--gpu",
            "h200",
            "--solve",
            "max_batch",
        ],
    );
    assert_eq!(solved["solve"]["limited_by"], "memory");
    let n = solved["solve"]["max_batch"].as_u64().unwrap();
    assert!(n >= 2, "{n}");
    for (batch, fits) in [(n, true), (n + 1, false)] {
        let b = format!("--batch_size={batch}");
        let args = [
            "--prompt_tokens=1024",
            "--max_new_tokens=256",
            "--gpu",
            "h200",
            &b,
        ];
        let v = mixtral(&t, &args);
        assert_eq!(v["fits"], fits, "{batch}: {}", v["verdict"]);
    }
}

/// The solvers on a tiny Mixtral (4 layers, 8 experts, 2 per token) agree with a bisection over
/// `generate` replays (`tools/hf_replay/bisect_generate_moe.py`).
#[test]
fn the_solvers_agree_with_a_bisection_over_moe_generate_replays() {
    crate::solve::solvers_agree_with_bisection("tests/data/hf_moe_generate_bisect.json", 2);
}
