//! transformers' Gemma 2 and Gemma 3 text models, estimated from their architecture description
//! and held to the fake-tensor replay of their Trainer step (`tools/hf_replay/replay_gemma.py`
//! → `tests/data/hf_gemma_replay.json`): every replayed peak within 1 % (both steps),
//! parameters, weights, gradients and optimizer state exact; the runs the estimator does not
//! model are refused by name, never estimated.

use serde::Deserialize;

use crate::support::SiteTest;
use crate::trainer_replay::{self, cli, Entry, Replay};
use vramdoc::estimate::arch::{
    Activation, Attention, Embeddings, FeedForward, Mlp, Norm, NormPlacement, Positions,
    SlidingWindow, Span,
};
use vramdoc::estimate::{
    estimate_model, Architecture, Dtype, Family, GpuCatalog, Optimizer, Scenario, TrainMoment,
};

#[derive(Deserialize)]
pub(crate) struct Model {
    pub(crate) model_type: String,
    pub(crate) layers: u64,
    pub(crate) hidden: u64,
    pub(crate) heads: u64,
    pub(crate) kv_heads: u64,
    pub(crate) head_dim: u64,
    pub(crate) intermediate: u64,
    pub(crate) vocab_size: u64,
    pub(crate) sliding_window: u64,
    pub(crate) layer_types: Vec<String>,
}

fn replay() -> Replay<Entry<Model>> {
    trainer_replay::read("hf_gemma_replay.json")
}

/// The description of a replayed config as transformers builds it: Gemma 2 alternates local and
/// global layers and softcaps attention (50) and logits (30); Gemma 3 repeats five local layers
/// and a global one (or the config's `layer_types`) and normalizes queries and keys.
pub(crate) fn architecture(m: &Model) -> Architecture {
    let gemma2 = m.model_type == "gemma2";
    let pattern = if !m.layer_types.is_empty() {
        m.layer_types
            .iter()
            .map(|t| match t.as_str() {
                "sliding_attention" => Span::Local,
                _ => Span::Global,
            })
            .collect()
    } else if gemma2 {
        vec![Span::Local, Span::Global]
    } else {
        vec![Span::Local; 5]
            .into_iter()
            .chain([Span::Global])
            .collect()
    };
    Architecture {
        family: if gemma2 {
            Family::Gemma2
        } else {
            Family::Gemma3
        },
        name: m.model_type.clone().into(),
        vocab_size: m.vocab_size,
        hidden: m.hidden,
        layers: m.layers,
        positions: Positions::rotary(10_000.0, 131_072),
        attention: Attention {
            heads: m.heads,
            kv_heads: m.kv_heads,
            head_dim: m.head_dim,
            fused_qkv: false,
            qkv_bias: false,
            out_bias: false,
            qk_norm: (!gemma2).then_some(Norm::RmsNorm),
            softcap: gemma2.then_some(50.0),
            sliding_window: Some(SlidingWindow {
                window: m.sliding_window,
                pattern,
            }),
        },
        mlp: Mlp::Dense(FeedForward {
            intermediate: m.intermediate,
            gated: true,
            fused_gate_up: false,
            activation: Activation::GeluTanh,
            bias: false,
        }),
        norm: Norm::RmsNorm,
        norm_placement: NormPlacement::Sandwich,
        embeddings: Embeddings {
            tied_head: true,
            head_bias: false,
            scaled_by_sqrt_hidden: true,
            logit_softcap: gemma2.then_some(30.0),
        },
    }
}

/// The replayed runs the estimator refuses, with the key it names: checkpointed blocks with a
/// 1024-token vocabulary, where a recomputed block's backward sets the peak.
const REFUSED: [(&str, &str); 2] = [
    (
        "tiny-gemma2-v1024-w128-s96-b4-acc1-bf16w-eager-ckpt",
        "grad_checkpoint",
    ),
    (
        "tiny-gemma3-v1024-w128-s512-b4-acc1-fp32-eager-ckpt",
        "grad_checkpoint",
    ),
];

#[test]
fn gemma_is_within_one_percent_of_every_replayed_peak() {
    let data = replay();
    let held = trainer_replay::hold(&data, architecture, &REFUSED);
    let (checked, moments) = (held.checked, held.moments);
    let beyond_window = data
        .runs
        .iter()
        .filter(|e| e.run.block_size >= e.run.model.sliding_window)
        .count();
    assert!(checked >= 28, "{checked}");
    assert!(
        beyond_window >= 4,
        "runs reaching the window: {beyond_window}"
    );
    for m in [
        TrainMoment::LossBackward,
        TrainMoment::LossForward,
        TrainMoment::BackwardEnd,
    ] {
        assert!(moments.contains(&format!("{m:?}")), "{m:?}: {moments:?}");
    }
}

#[test]
fn what_the_gemma_replay_does_not_cover_is_refused_by_key_all_at_once() {
    let catalog = GpuCatalog::builtin();
    let model = architecture(&Model {
        model_type: "gemma2".to_owned(),
        layers: 26,
        hidden: 2304,
        heads: 8,
        kv_heads: 4,
        head_dim: 256,
        intermediate: 9216,
        vocab_size: 256_000,
        sliding_window: 4096,
        layer_types: Vec::new(),
    });
    let run = Scenario {
        dtype: Dtype::Float16,
        dropout: 0.1,
        flash: true,
        compile: false,
        optimizer: Optimizer::Adamw8bit,
        ..Scenario::default()
    };
    let err = estimate_model(&model, &run, &catalog).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("optimizer"), "{}", err.message);
    for key in [
        "`optimizer`",
        "`dtype`",
        "`dropout`",
        "`flash`",
        "softcapping",
        "5.24.0",
    ] {
        assert!(err.message.contains(key), "{key}: {}", err.message);
    }
}

#[test]
fn a_catalog_gemma_gives_its_replayed_peak_through_the_cli() {
    // The replay's gemma-3-270m runs are Gemma 3 270M's config.json with all 18 layers.
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
            vec!["--block_size=1024", "--dtype=bfloat16", "--pure_bf16=True"],
            "gemma-3-270m-s1024-b2-acc1-bf16w-sdpa",
        ),
        (
            vec![
                "--block_size=512",
                "--flash=False",
                "--gradient_accumulation_steps=2",
            ],
            "gemma-3-270m-s512-b2-acc2-fp32-eager",
        ),
    ] {
        let mut all = vec!["--model", "gemma-3-270m", "--batch_size=2"];
        all.extend_from_slice(&args);
        let v = cli(&all);
        assert_eq!(v["model"]["family"], "gemma3", "{name}");
        assert_eq!(v["params"]["total"], 268_098_176u64, "{name}: Gemma 3 270M");
        let est = v["bytes"]["train_peak"].as_u64().unwrap();
        let replayed = peak(name);
        assert!(
            est.abs_diff(replayed) * 100 <= replayed,
            "{name}: {est} against {replayed}"
        );
    }
    // Gemma 2 defaults to eager attention, as from_pretrained picks it; SDPA is refused.
    let v = cli(&[
        "--model",
        "gemma-2-2b",
        "--block_size=1024",
        "--batch_size=1",
    ]);
    assert_eq!(v["scenario"]["flash"], false);
    assert_eq!(v["params"]["total"], 2_614_341_888u64);
    let t = SiteTest::new();
    let r = t.run(&["estimate", "--model", "gemma-2-2b", "--flash=True"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stderr.contains("no SDPA"), "{}", r.stderr);
    // PEFT's LoRA and QLoRA are not replayed for Gemma: refused, never estimated as Llama's.
    for set in ["--lora_rank=8", "--load_in_4bit=True"] {
        let r = t.run(&["estimate", "--model", "gemma-3-1b", set]);
        assert_eq!(r.code, 1, "{set}: {}", r.stdout);
        assert!(r.stdout.is_empty(), "{set}");
    }
}

#[test]
fn gemma_what_ifs_are_each_the_estimate_of_the_changed_run() {
    let base = ["--model", "gemma-2-2b", "--gpu", "rtx-4090"];
    let v = cli(&base);
    let options = v["what_if"].as_array().unwrap();
    assert!(options.len() >= 5, "{options:?}");
    for o in options {
        let changes = o["changes"].as_array().unwrap();
        // SDPA is refused for Gemma 2, so never offered.
        assert!(changes.iter().all(|c| c["key"] != "flash"), "{o}");
        if changes.len() != 1 {
            continue;
        }
        let set = format!(
            "--{}={}",
            changes[0]["key"].as_str().unwrap(),
            changes[0]["value"].as_str().unwrap()
        );
        let mut args = base.to_vec();
        args.push(&set);
        assert_eq!(cli(&args)["bytes"]["total"], o["total"], "{set}");
    }
    // generate's what-ifs for Gemma 3 too.
    let v = cli(&[
        "--model",
        "gemma-3-1b",
        "--phase",
        "generate",
        "--prompt_tokens=8192",
        "--batch_size=8",
        "--gpu",
        "rtx-3060",
    ]);
    assert!(!v["what_if"].as_array().unwrap().is_empty(), "{v}");
}
