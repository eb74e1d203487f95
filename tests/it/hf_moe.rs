//! transformers' mixture-of-experts decoders (Mixtral, Qwen2-MoE, Qwen3-MoE), estimated from
//! their architecture description and held to the fake-tensor replay of their Trainer step
//! (`tools/hf_replay/replay_moe.py` → `tests/data/hf_moe_replay.json`): every replayed peak
//! within 1 % (both steps), parameters, weights, gradients and optimizer state exact, every
//! expert counted.

use serde::Deserialize;

use crate::support::SiteTest;
use crate::trainer_replay::{self, cli, cli_in, scenario, Entry, Replay};

use vramdoc::estimate::arch::{Activation, FeedForward, MixtureOfExperts, Mlp};
use vramdoc::estimate::{estimate_model, Architecture, Family, GpuCatalog};

/// A replayed run and the experts' implementation transformers chose.
#[derive(Deserialize)]
struct MoeEntry {
    #[serde(flatten)]
    e: Entry<Model>,
    experts_implementation: String,
}

/// A replayed config's shape (`replay_moe.py`'s `Model`).
#[derive(Deserialize)]
pub(crate) struct Model {
    pub(crate) model_type: String,
    pub(crate) layers: u64,
    pub(crate) hidden: u64,
    pub(crate) heads: u64,
    pub(crate) kv_heads: u64,
    pub(crate) experts: u64,
    pub(crate) top_k: u64,
    pub(crate) expert_intermediate: u64,
    pub(crate) vocab_size: u64,
    pub(crate) shared_intermediate: u64,
    pub(crate) head_dim: u64,
}

fn replay() -> Replay<MoeEntry> {
    trainer_replay::read("hf_moe_replay.json")
}

fn swiglu(intermediate: u64) -> FeedForward {
    FeedForward {
        intermediate,
        gated: true,
        fused_gate_up: false,
        activation: Activation::Silu,
        bias: false,
    }
}

/// The description of a replayed config: the dense decoder its attention is written from
/// (Qwen2's q/k/v biases for Qwen2-MoE, Qwen3's QK-norm for Qwen3-MoE, Mistral's for Mixtral)
/// with a mixture of experts for its MLP, and Qwen2-MoE's gated shared expert.
pub(crate) fn architecture(m: &Model) -> Architecture {
    let dense = match m.model_type.as_str() {
        "qwen2_moe" => "qwen2",
        "qwen3_moe" => "qwen3",
        _ => "mistral",
    };
    let mut a = crate::hf_llama::architecture(&crate::hf_llama::Model {
        model_type: dense.to_owned(),
        layers: m.layers,
        hidden: m.hidden,
        heads: m.heads,
        kv_heads: m.kv_heads,
        intermediate: m.expert_intermediate,
        vocab_size: m.vocab_size,
        tied: false,
        head_dim: m.head_dim,
    });
    let qwen2 = dense == "qwen2";
    a.family = Family::Moe;
    a.name = m.model_type.clone().into();
    a.mlp = Mlp::Moe(MixtureOfExperts {
        experts: m.experts,
        experts_per_token: m.top_k,
        expert: swiglu(m.expert_intermediate),
        shared: qwen2.then(|| swiglu(m.shared_intermediate)),
        shared_gate: qwen2,
        router_bias: false,
    });
    a
}

#[test]
fn mixtures_of_experts_are_within_one_percent_of_every_replayed_peak() {
    let data = replay();
    assert_eq!(data.transformers, "5.24.0", "the pinned transformers");
    assert_eq!(data.torch, "2.15.0", "the pinned torch");
    let catalog = GpuCatalog::builtin();
    let mut worst = 0.0f64;
    let mut types = std::collections::BTreeSet::new();
    for m in &data.runs {
        let e = &m.e;
        let name = &e.run.name;
        assert_eq!(m.experts_implementation, "grouped_mm", "{name}");
        let model = architecture(&e.run.model);
        let run = scenario(&e.run);
        assert_eq!(model.parameter_count(), e.params, "{name}: parameters");
        assert_eq!(e.params, e.trainable_params, "{name}: full training");
        let est = estimate_model(&model, &run, &catalog).unwrap();
        worst = worst.max(trainer_replay::check_estimate(e, &est));
        types.insert(e.run.model.model_type.clone());
    }
    eprintln!(
        "worst: {:.4} % over {} runs",
        worst * 100.0,
        data.runs.len()
    );
    assert!(worst <= 0.01, "worst {worst}");
    assert!(data.runs.len() >= 10, "{}", data.runs.len());
    assert_eq!(types.len(), 3, "{types:?}");
}

#[test]
fn catalog_mixtures_of_experts_count_every_expert_and_say_what_is_active() {
    // Published totals (every expert resident) and active counts (what one token runs
    // through): Mixtral 8x7B "46.7B total, 12.9B active"; Qwen1.5-MoE-A2.7B "14.3B in total,
    // 2.7B activated"; Qwen3-30B-A3B "30.5B in total and 3.3B activated". Active: the total
    // less layers × idle experts × 3·h·I (gate, up, down of one expert).
    for (id, total, idle, published) in [
        (
            "mixtral-8x7b",
            46_702_792_704u64,
            32 * 6 * 3 * 4096 * 14336u64,
            12.9e9,
        ),
        (
            "qwen1.5-moe-a2.7b",
            14_315_784_192,
            24 * 56 * 3 * 2048 * 1408,
            2.7e9,
        ),
        (
            "qwen3-30b-a3b",
            30_532_122_624,
            48 * 120 * 3 * 2048 * 768,
            3.3e9,
        ),
    ] {
        let v = cli(&["--model", id, "--gpu", "h200"]);
        assert_eq!(v["model"]["family"], "moe", "{id}");
        assert_eq!(v["params"]["total"], total, "{id}");
        let active = v["params"]["active"].as_u64().unwrap();
        assert_eq!(active, total - idle, "{id}");
        assert!((active as f64 - published).abs() < 0.06e9, "{id}: {active}");
        // Memory counts every expert: the weights alone are 2 bytes per parameter in bf16.
        let v = cli(&["--model", id, "--dtype=bfloat16", "--pure_bf16=True"]);
        assert!(v["bytes"]["weights"].as_u64().unwrap() >= total * 2, "{id}");
    }
    // A dense model has no `active` count.
    let v = cli(&["--model", "qwen2.5-0.5b"]);
    assert!(v["params"].get("active").is_none());
}

#[test]
fn a_catalog_moe_through_the_cli_gives_its_full_replayed_peak() {
    // The replay's runs named after a catalog id have all the released layers.
    let data = replay();
    let peak = |name: &str| {
        data.runs
            .iter()
            .find(|m| m.e.run.name == name)
            .unwrap()
            .e
            .train_peak_bytes
    };
    for (id, args, name) in [
        (
            "qwen1.5-moe-a2.7b",
            [
                "--batch_size=2",
                "--block_size=1024",
                "--grad_checkpoint=False",
            ],
            "qwen1.5-moe-a2.7b-s1024-b2-acc1-bf16w-sdpa",
        ),
        (
            "mixtral-8x7b",
            [
                "--batch_size=1",
                "--block_size=1024",
                "--grad_checkpoint=True",
            ],
            "mixtral-8x7b-s1024-b1-acc1-bf16w-sdpa-ckpt",
        ),
        (
            "qwen3-30b-a3b",
            [
                "--batch_size=1",
                "--block_size=2048",
                "--grad_checkpoint=True",
            ],
            "qwen3-30b-a3b-s2048-b1-acc1-bf16w-sdpa-ckpt",
        ),
    ] {
        let mut all = vec![
            "--model",
            id,
            "--dtype=bfloat16",
            "--pure_bf16=True",
            "--gradient_accumulation_steps=1",
        ];
        all.extend_from_slice(&args);
        let v = cli(&all);
        let est = v["bytes"]["train_peak"].as_u64().unwrap();
        let replayed = peak(name);
        assert!(
            est.abs_diff(replayed) * 100 <= replayed,
            "{name}: {est} against {replayed}"
        );
    }
}

#[test]
fn a_moe_config_with_the_auxiliary_loss_or_router_jitter_is_refused_where_written() {
    let t = SiteTest::new();
    // Mixtral 8x7B's config.json with the router's auxiliary loss and jitter turned on (the
    // options transformers' MoE fine-tuning threads set).
    t.file(
        "mixtral/config.json",
        r#"{
  "model_type": "mixtral",
  "hidden_act": "silu",
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "num_hidden_layers": 32,
  "num_attention_heads": 32,
  "num_key_value_heads": 8,
  "num_local_experts": 8,
  "num_experts_per_tok": 2,
  "vocab_size": 32000,
  "output_router_logits": true,
  "router_jitter_noise": 0.01,
  "sliding_window": null
}
"#,
    );
    let r = t.run(&["estimate", "--model", "mixtral/config.json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    for want in [
        "`output_router_logits` = true is not modelled",
        "auxiliary load-balancing loss",
        "`router_jitter_noise` above 0",
        "config.json:12",
        "config.json:13",
    ] {
        assert!(r.stderr.contains(want), "{want}:\n{}", r.stderr);
    }
    // Without them, the same file is estimated as the catalog's Mixtral.
    let plain = r#"{"model_type": "mixtral", "hidden_act": "silu", "hidden_size": 4096,
"intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
"num_key_value_heads": 8, "num_local_experts": 8, "num_experts_per_tok": 2,
"vocab_size": 32000, "output_router_logits": false, "router_jitter_noise": 0.0,
"sliding_window": null, "torch_dtype": "bfloat16"}
"#;
    t.file("mixtral/config.json", plain);
    let v = cli_in(&t, &["--model", "mixtral/config.json", "--gpu", "h200"]);
    let catalog = cli(&["--model", "mixtral-8x7b", "--gpu", "h200"]);
    assert_eq!(v["bytes"], catalog["bytes"]);
}

#[test]
fn a_qwen_moe_full_fine_tune_failing_in_the_backward_is_one_layers_expert_gradient() {
    let t = SiteTest::new();
    let name = "hf_qwen_moe_h100_experts";
    t.file("oom.txt", &crate::diagnose_formats::fixture(name));
    let args = [
        "diagnose",
        "oom.txt",
        "--model",
        "qwen1.5-moe-a2.7b",
        "--set",
        "batch_size=2",
        "--set",
        "block_size=1024",
        "--set",
        "dtype=bfloat16",
        "--set",
        "pure_bf16=True",
        "--gpu",
        "h100-80gb",
        "--format",
        "json",
    ];
    let r = t.run(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    // 60 experts × (2 × 1408) × 2048 bf16 elements: 660.00 MiB, the request.
    let grad = 60 * 2 * 1408 * 2048 * 2u64;
    assert_eq!(grad, 660 << 20);
    let id = &v["identified"];
    assert_eq!(id["tensor"]["kind"], "expert_grad", "{id}");
    assert_eq!(id["tensor"]["bytes"], grad);
    assert_eq!(id["tensor"]["shape"], "(60, 2816, 2048)");
    assert_eq!(id["phase"], "backward");
    assert_eq!(v["estimate"]["architecture"]["family"], "moe");
    assert_ne!(v["estimate"]["fits"], true);
    // In words, in every language.
    for (lang, words) in [
        ("en", "every expert at once"),
        ("es", "todos los expertos a la vez"),
        ("zh", "所有专家"),
    ] {
        let mut text = args[..args.len() - 2].to_vec();
        text.extend_from_slice(&["--lang", lang]);
        let r = t.run(&text);
        assert_eq!(r.code, 0, "{lang}: {}", r.stderr);
        assert!(r.stdout.contains(words), "{lang}:\n{}", r.stdout);
    }
}

#[test]
fn the_reports_say_every_expert_is_resident_and_what_runs_per_token() {
    let t = SiteTest::new();
    for (lang, words) in [
        ("en", "every expert resident (12.88B run per token)"),
        ("es", "todos los expertos en memoria"),
        ("zh", "所有专家都常驻显存"),
    ] {
        for phase in ["train", "generate"] {
            let r = t.run(&[
                "estimate",
                "--model",
                "mixtral-8x7b",
                "--phase",
                phase,
                "--lang",
                lang,
            ]);
            assert_eq!(r.code, 0, "{lang} {phase}: {}", r.stderr);
            assert!(r.stdout.contains(words), "{lang} {phase}:\n{}", r.stdout);
        }
    }
}

#[test]
fn lora_and_qlora_on_a_mixture_of_experts_are_refused_at_their_key() {
    let t = SiteTest::new();
    for (flag, key) in [
        ("--lora_rank=16", "lora_rank"),
        ("--load_in_4bit=True", "load_in_4bit"),
    ] {
        let r = t.run(&["estimate", "--model", "mixtral-8x7b", flag]);
        assert_eq!(r.code, 1, "{flag}: {}", r.stdout);
        assert!(r.stderr.contains("mixture"), "{flag}: {}", r.stderr);
        assert!(r.stderr.contains(key), "{flag}: {}", r.stderr);
    }
    // The estimator refuses them too, for a description given directly.
    let model = architecture(&Model {
        model_type: "mixtral".into(),
        layers: 2,
        hidden: 512,
        heads: 8,
        kv_heads: 2,
        experts: 8,
        top_k: 2,
        expert_intermediate: 1024,
        vocab_size: 512,
        shared_intermediate: 0,
        head_dim: 0,
    });
    let catalog = GpuCatalog::builtin();
    for (run, key) in [
        (
            vramdoc::estimate::Scenario {
                lora_rank: 16,
                compile: false,
                dropout: 0.0,
                ..Default::default()
            },
            "lora_rank",
        ),
        (
            vramdoc::estimate::Scenario {
                load_in_4bit: true,
                lora_rank: 16,
                compile: false,
                dropout: 0.0,
                ..Default::default()
            },
            "lora_rank",
        ),
    ] {
        let err = estimate_model(&model, &run, &catalog).unwrap_err();
        assert_eq!(err.key.as_deref(), Some(key), "{}", err.message);
        assert!(
            err.message.contains("only full fine-tuning"),
            "{}",
            err.message
        );
    }
}
