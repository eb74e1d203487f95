//! transformers' Llama family (Llama, Mistral, Qwen2, Qwen3, Phi-3), estimated from its
//! architecture description and held to the fake-tensor replay of its Trainer step
//! (`tools/hf_replay/replay_llama.py` → `tests/data/hf_llama_replay.json`): every replayed peak
//! within 1 % (both steps), parameters, weights, gradients and optimizer state exact; the runs
//! the estimator does not model are refused by name, never estimated.

use serde::Deserialize;

use crate::support::SiteTest;
use crate::trainer_replay::{self, cli, Entry, Replay};
use vramdoc::estimate::arch::{
    Activation, Attention, Embeddings, FeedForward, Mlp, Norm, NormPlacement, Positions,
    SlidingWindow, Span,
};
use vramdoc::estimate::{
    estimate_model, Architecture, Dtype, Family, GpuCatalog, Scenario, TrainMoment,
};

/// A replayed config's shape (`replay_llama.py`'s `Model`).
#[derive(Deserialize)]
pub(crate) struct Model {
    pub(crate) model_type: String,
    pub(crate) layers: u64,
    pub(crate) hidden: u64,
    pub(crate) heads: u64,
    pub(crate) kv_heads: u64,
    pub(crate) intermediate: u64,
    pub(crate) vocab_size: u64,
    pub(crate) tied: bool,
    pub(crate) head_dim: u64,
}

fn replay() -> Replay<Entry<Model>> {
    trainer_replay::read("hf_llama_replay.json")
}

/// The description of a replayed config, as each `model_type`'s modeling file builds it:
/// Qwen2 adds q/k/v biases, Qwen3 QK-norm, Phi-3 fuses q/k/v and gate/up.
pub(crate) fn architecture(m: &Model) -> Architecture {
    let head_dim = if m.head_dim == 0 {
        m.hidden / m.heads
    } else {
        m.head_dim
    };
    let phi3 = m.model_type == "phi3";
    Architecture {
        family: Family::Llama,
        name: m.model_type.clone().into(),
        vocab_size: m.vocab_size,
        hidden: m.hidden,
        layers: m.layers,
        positions: Positions::rotary(10_000.0, 131_072),
        attention: Attention {
            heads: m.heads,
            kv_heads: m.kv_heads,
            head_dim,
            fused_qkv: phi3,
            qkv_bias: m.model_type == "qwen2",
            out_bias: false,
            qk_norm: (m.model_type == "qwen3").then_some(Norm::RmsNorm),
            softcap: None,
            sliding_window: None,
        },
        mlp: Mlp::Dense(FeedForward {
            intermediate: m.intermediate,
            gated: true,
            fused_gate_up: phi3,
            activation: Activation::Silu,
            bias: false,
        }),
        norm: Norm::RmsNorm,
        norm_placement: NormPlacement::Pre,
        embeddings: Embeddings {
            tied_head: m.tied,
            head_bias: false,
            scaled_by_sqrt_hidden: false,
            logit_softcap: None,
        },
    }
}

/// The replayed runs the estimator refuses, with the key it names: checkpointed multi-query
/// SDPA.
const REFUSED: [(&str, &str); 1] = [(
    "tiny-llama-mqa-v512-s512-b8-acc1-fp32-sdpa-ckpt",
    "grad_checkpoint",
)];

#[test]
fn the_llama_family_is_within_one_percent_of_every_replayed_peak() {
    let held = trainer_replay::hold(&replay(), architecture, &REFUSED);
    let (checked, moments) = (held.checked, held.moments);
    assert!(checked >= 51, "{checked}");
    // The data reaches every moment the step model has.
    for m in [
        TrainMoment::LossBackward,
        TrainMoment::LossForward,
        TrainMoment::HeadBackward,
        TrainMoment::BackwardEnd,
        TrainMoment::AttentionBackward,
        TrainMoment::BlockRecompute,
    ] {
        assert!(moments.contains(&format!("{m:?}")), "{m:?}: {moments:?}");
    }
}

#[test]
fn a_llama_estimate_says_which_model_and_moment_it_is() {
    let catalog = GpuCatalog::builtin();
    // Llama 3.2 1B's shape with 4 of its 16 layers: the replay's
    // llama-3.2-1b-4layers-s1024-b2-acc2-autocast-sdpa peaks at 13,359,768,064 bytes.
    let model = architecture(&Model {
        model_type: "llama".to_owned(),
        layers: 4,
        hidden: 2048,
        heads: 32,
        kv_heads: 8,
        intermediate: 8192,
        vocab_size: 128_256,
        tied: true,
        head_dim: 0,
    });
    let run = Scenario {
        block_size: 1024,
        batch_size: 2,
        gradient_accumulation_steps: 2,
        dtype: Dtype::Bfloat16,
        dropout: 0.0,
        compile: false,
        gpu: Some("rtx-4090".to_owned()),
        ..Scenario::default()
    };
    let v = serde_json::to_value(estimate_model(&model, &run, &catalog).unwrap()).unwrap();
    assert_eq!(v["architecture"]["family"], "llama");
    assert_eq!(v["train_peak_moment"], "loss_backward");
    assert_eq!(v["bytes"]["train_peak"], 13_359_768_056u64);
    assert_eq!(v["scenario"]["vocab_size"], 128_256);
    assert!(v["verdict"].is_string());
}

#[test]
fn what_the_llama_replay_does_not_cover_is_refused_by_key_all_at_once() {
    let catalog = GpuCatalog::builtin();
    let mut model = architecture(&Model {
        model_type: "mistral".to_owned(),
        layers: 32,
        hidden: 4096,
        heads: 32,
        kv_heads: 8,
        intermediate: 14336,
        vocab_size: 32000,
        tied: false,
        head_dim: 0,
    });
    let run = Scenario {
        dtype: Dtype::Float16,
        dropout: 0.1,
        compile: false,
        ..Scenario::default()
    };
    let err = estimate_model(&model, &run, &catalog).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("dtype"), "{}", err.message);
    for key in ["`dtype`", "`dropout`", "transformers 5.24.0"] {
        assert!(err.message.contains(key), "{key}: {}", err.message);
    }
    // Mistral 7B v0.1's 4096-token sliding window: reached at 4096 tokens, not below.
    model.attention.sliding_window = Some(SlidingWindow {
        window: 4096,
        pattern: vec![Span::Local],
    });
    let long = Scenario {
        block_size: 4096,
        batch_size: 1,
        dropout: 0.0,
        compile: false,
        ..Scenario::default()
    };
    let err = estimate_model(&model, &long, &catalog).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("block_size"), "{}", err.message);
    let short = Scenario {
        block_size: 2048,
        ..long
    };
    assert!(estimate_model(&model, &short, &catalog).is_ok());
}

#[test]
fn estimate_model_gives_the_replayed_peak_of_a_catalog_model_through_the_cli() {
    // The replay's qwen2.5-0.5b runs are Qwen2.5 0.5B's config.json with all 24 layers.
    let data = replay();
    let peak = |name: &str| {
        data.runs
            .iter()
            .find(|e| e.run.name == name)
            .unwrap()
            .train_peak_bytes
    };
    for (args, name) in [
        (
            vec![
                "--dtype=bfloat16",
                "--weights_dtype=float32",
                "--gradient_accumulation_steps=2",
            ],
            "qwen2.5-0.5b-s512-b2-acc2-autocast-sdpa",
        ),
        (
            vec![
                "--dtype=bfloat16",
                "--pure_bf16=True",
                "--flash=False",
                "--gradient_accumulation_steps=2",
            ],
            "qwen2.5-0.5b-s512-b2-acc2-bf16w-eager",
        ),
    ] {
        let mut all = vec![
            "--model",
            "qwen2.5-0.5b",
            "--batch_size=2",
            "--block_size=512",
        ];
        all.extend_from_slice(&args);
        let v = cli(&all);
        assert_eq!(v["model"]["family"], "llama", "{name}");
        assert_eq!(v["params"]["total"], 494_032_768u64, "{name}: Qwen2.5 0.5B");
        let est = v["bytes"]["train_peak"].as_u64().unwrap();
        let replayed = peak(name);
        assert!(
            est.abs_diff(replayed) * 100 <= replayed,
            "{name}: {est} against {replayed}"
        );
    }
    // What the replay does not cover is refused at its key, through the CLI too.
    let t = SiteTest::new();
    let r = t.run(&["estimate", "--model", "llama-3.1-8b", "--dtype=float16"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stderr.contains("float16 is not replayed"), "{}", r.stderr);
}
