//! transformers' mixture-of-experts decoders (Mixtral, Qwen2-MoE, Qwen3-MoE), estimated from
//! their architecture description and held to the fake-tensor replay of their Trainer step
//! (`tools/hf_replay/replay_moe.py` → `tests/data/hf_moe_replay.json`): every replayed peak
//! within 1 % (both steps), parameters, weights, gradients and optimizer state exact, every
//! expert counted.

use serde::Deserialize;

use vramdoc::estimate::arch::{
    Activation, Attention, Embeddings, FeedForward, MixtureOfExperts, Mlp, Norm, NormPlacement,
    Positions,
};
use vramdoc::estimate::{estimate_model, Architecture, Dtype, Family, GpuCatalog, Scenario};

#[derive(Deserialize)]
struct Replay {
    torch: String,
    transformers: String,
    runs: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    run: Run,
    params: u64,
    trainable_params: u64,
    param_bytes: u64,
    buffer_bytes: u64,
    grad_bytes: u64,
    optimizer_bytes: u64,
    train_peak_bytes: u64,
    first_step_peak_bytes: u64,
    experts_implementation: String,
}

#[derive(Deserialize)]
struct Run {
    name: String,
    model: Model,
    block_size: u64,
    batch_size: u64,
    accumulation: u64,
    weights: String,
    dtype: String,
    attn_implementation: String,
    grad_checkpoint: bool,
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

fn replay() -> Replay {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/hf_moe_replay.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
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

/// The description of a replayed config, as each `model_type`'s modeling file builds it:
/// Qwen2-MoE adds q/k/v biases and a gated shared expert, Qwen3-MoE QK-norm.
pub(crate) fn architecture(m: &Model) -> Architecture {
    let head_dim = if m.head_dim == 0 {
        m.hidden / m.heads
    } else {
        m.head_dim
    };
    let qwen2 = m.model_type == "qwen2_moe";
    Architecture {
        family: Family::Moe,
        name: m.model_type.clone().into(),
        vocab_size: m.vocab_size,
        hidden: m.hidden,
        layers: m.layers,
        positions: Positions::Rotary { theta: 10_000.0 },
        attention: Attention {
            heads: m.heads,
            kv_heads: m.kv_heads,
            head_dim,
            fused_qkv: false,
            qkv_bias: qwen2,
            out_bias: false,
            qk_norm: (m.model_type == "qwen3_moe").then_some(Norm::RmsNorm),
            softcap: None,
            sliding_window: None,
        },
        mlp: Mlp::Moe(MixtureOfExperts {
            experts: m.experts,
            experts_per_token: m.top_k,
            expert: swiglu(m.expert_intermediate),
            shared: qwen2.then(|| swiglu(m.shared_intermediate)),
            shared_gate: qwen2,
            router_bias: false,
        }),
        norm: Norm::RmsNorm,
        norm_placement: NormPlacement::Pre,
        embeddings: Embeddings {
            tied_head: false,
            head_bias: false,
            scaled_by_sqrt_hidden: false,
            logit_softcap: None,
        },
    }
}

/// The Trainer settings of a replayed run (weights loaded in bfloat16 are `pure_bf16`).
fn scenario(r: &Run) -> Scenario {
    let bf16_weights = r.weights == "bfloat16";
    Scenario {
        block_size: r.block_size,
        batch_size: r.batch_size,
        gradient_accumulation_steps: r.accumulation,
        dtype: if bf16_weights {
            Dtype::Bfloat16
        } else {
            Dtype::parse(&r.dtype).unwrap()
        },
        pure_bf16: bf16_weights,
        flash: r.attn_implementation == "sdpa",
        dropout: 0.0,
        grad_checkpoint: r.grad_checkpoint,
        compile: false,
        ..Scenario::default()
    }
}

fn relative(est: u64, replayed: u64) -> f64 {
    (est as f64 - replayed as f64) / replayed as f64
}

#[test]
fn mixtures_of_experts_are_within_one_percent_of_every_replayed_peak() {
    let data = replay();
    assert_eq!(data.transformers, "5.24.0", "the pinned transformers");
    assert_eq!(data.torch, "2.15.0", "the pinned torch");
    let catalog = GpuCatalog::builtin();
    let mut worst = 0.0f64;
    let mut types = std::collections::BTreeSet::new();
    for e in &data.runs {
        let name = &e.run.name;
        assert_eq!(e.experts_implementation, "grouped_mm", "{name}");
        let model = architecture(&e.run.model);
        let run = scenario(&e.run);
        assert_eq!(model.parameter_count(), e.params, "{name}: parameters");
        assert_eq!(e.params, e.trainable_params, "{name}: full training");
        let est = estimate_model(&model, &run, &catalog).unwrap();
        let w = if e.run.weights == "bfloat16" { 2 } else { 4 };
        assert_eq!(est.params.total, e.params, "{name}: parameters");
        assert_eq!(
            est.bytes.weights,
            e.param_bytes + e.buffer_bytes,
            "{name}: weights and rotary buffers"
        );
        assert_eq!(est.params.total * w, e.grad_bytes, "{name}: gradients");
        assert_eq!(est.bytes.optimizer, e.optimizer_bytes, "{name}: optimizer");
        let first = est.bytes.first_step_peak.unwrap();
        let (err, first_err) = (
            relative(est.bytes.train_peak, e.train_peak_bytes),
            relative(first, e.first_step_peak_bytes),
        );
        eprintln!(
            "{name}: {:?} {:+} ({:+.4} %), first {:+} ({:+.4} %)",
            est.train_peak_moment,
            est.bytes.train_peak as i64 - e.train_peak_bytes as i64,
            err * 100.0,
            first as i64 - e.first_step_peak_bytes as i64,
            first_err * 100.0
        );
        worst = worst.max(err.abs()).max(first_err.abs());
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
