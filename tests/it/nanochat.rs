//! nanochat's training step (github.com/karpathy/nanochat at the pinned commit), estimated from
//! its architecture description and held to the fake-tensor replay of its own code
//! (`tools/nanochat_replay/replay_nanochat.py` → `tests/data/nanochat_replay.json`): every
//! replayed peak within 1 % (both steps); parameters, weights, gradients and the optimizer state
//! (Muon's and AdamW's, sharded over the ranks) exact.

use serde::Deserialize;

use crate::hf_gpt2::within_one_percent;
use vramdoc::estimate::arch::NANOCHAT_COMMIT;
use vramdoc::estimate::nanochat::{
    static_bytes as nanochat_static_bytes, GptConfig as NanochatConfig,
};
use vramdoc::estimate::{estimate_model, Architecture, Dtype, GpuCatalog, Scenario};

#[derive(Deserialize)]
struct Replay {
    nanochat_commit: String,
    torch: String,
    runs: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    run: Run,
    model_dim: u64,
    n_head: u64,
    params: u64,
    param_bytes: u64,
    buffer_bytes: u64,
    grad_bytes: u64,
    optimizer_bytes: u64,
    train_peak_bytes: u64,
    first_step_peak_bytes: u64,
}

/// One replayed run's flags, as both nanochat replays (eager and compiled) record them.
#[derive(Deserialize)]
pub(crate) struct Run {
    pub(crate) name: String,
    pub(crate) depth: u64,
    pub(crate) device_batch_size: u64,
    pub(crate) max_seq_len: u64,
    pub(crate) window_pattern: String,
    pub(crate) grad_accum_steps: u64,
    pub(crate) nproc_per_node: u64,
    pub(crate) dtype: String,
    pub(crate) aspect_ratio: u64,
    pub(crate) head_dim: u64,
}

fn replay() -> Replay {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/nanochat_replay.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `base_train.py`'s `build_model_meta` for the run's flags (the width and heads are checked
/// against the replay's, the parameters against [`parameters`]).
pub(crate) fn architecture(r: &Run) -> Architecture {
    NanochatConfig::from_depth(
        r.depth,
        r.aspect_ratio,
        r.head_dim,
        r.max_seq_len,
        &r.window_pattern,
    )
    .architecture(&r.name)
}

/// The run's scenario, eager as the replay in `nanochat_replay.json` runs it.
fn scenario(r: &Run) -> Scenario {
    Scenario {
        compile: false,
        ..run_scenario(r)
    }
}

/// The run's scenario as `base_train.py`'s flags give it (compiled, as the script compiles).
pub(crate) fn run_scenario(r: &Run) -> Scenario {
    Scenario {
        block_size: r.max_seq_len,
        batch_size: r.device_batch_size,
        gradient_accumulation_steps: r.grad_accum_steps * r.nproc_per_node,
        ddp_world_size: r.nproc_per_node,
        dtype: Dtype::parse(&r.dtype).unwrap(),
        dropout: 0.0,
        compile: true,
        ..Scenario::default()
    }
}

/// The parameter count of nanochat's GPT from its modules, computed independently of the
/// estimator: `wte`, ⌈n/2⌉ value embeddings and value gates, 12·h² per block, the head, and
/// 2n + 26 scalars.
fn parameters(n: u64, h: u64, heads: u64) -> u64 {
    let v = 32768;
    v * h + n.div_ceil(2) * (v * h + heads * 12) + n * 12 * h * h + v * h + 2 * n + 26
}

#[test]
fn nanochat_is_within_one_percent_of_every_replayed_peak() {
    let data = replay();
    assert_eq!(data.nanochat_commit, NANOCHAT_COMMIT, "the pinned nanochat");
    assert_eq!(data.torch, "2.15.0", "the pinned torch");
    assert!(data.runs.len() >= 8);
    let catalog = GpuCatalog::builtin();
    let mut worst = 0.0f64;
    for e in &data.runs {
        let name = &e.run.name;
        let model = architecture(&e.run);
        assert_eq!(
            (model.hidden, model.attention.heads),
            (e.model_dim, e.n_head)
        );
        let run = scenario(&e.run);
        assert_eq!(model.parameter_count(), e.params, "{name}: parameters");
        assert_eq!(
            parameters(e.run.depth, e.model_dim, e.n_head),
            e.params,
            "{name}: parameters by hand"
        );
        let est = estimate_model(&model, &run, &catalog).unwrap();
        assert_eq!(est.params.total, e.params, "{name}: parameters");
        let (weights, grads, optimizer) = nanochat_static_bytes(&model, &run);
        assert_eq!(weights, u128::from(e.param_bytes), "{name}: weights");
        assert_eq!(grads, u128::from(e.grad_bytes), "{name}: gradients");
        assert_eq!(
            optimizer,
            u128::from(e.optimizer_bytes),
            "{name}: optimizer"
        );
        assert_eq!(est.bytes.optimizer, e.optimizer_bytes, "{name}: optimizer");
        assert_eq!(
            est.bytes.weights,
            e.param_bytes + e.buffer_bytes,
            "{name}: weights and rotary buffers"
        );
        let (err, first) =
            within_one_percent(name, &est, e.train_peak_bytes, e.first_step_peak_bytes);
        worst = worst.max(err).max(first);
    }
    eprintln!("worst: {:.4} %", worst * 100.0);
}

#[test]
fn nanochat_refuses_what_it_does_not_run() {
    let e = &replay().runs[0];
    let model = architecture(&e.run);
    let catalog = GpuCatalog::builtin();
    for (key, run) in [
        (
            "dtype",
            Scenario {
                dtype: Dtype::Float16,
                ..scenario(&e.run)
            },
        ),
        (
            "grad_checkpoint",
            Scenario {
                grad_checkpoint: true,
                ..scenario(&e.run)
            },
        ),
        (
            "flash",
            Scenario {
                flash: false,
                ..scenario(&e.run)
            },
        ),
        (
            "gradient_as_bucket_view",
            Scenario {
                gradient_as_bucket_view: true,
                ..scenario(&e.run)
            },
        ),
        (
            "ddp_world_size",
            Scenario {
                ddp_world_size: 3,
                gradient_accumulation_steps: 3,
                ..scenario(&e.run)
            },
        ),
    ] {
        let err = estimate_model(&model, &run, &catalog).unwrap_err();
        assert!(
            err.message.contains(key) || err.key.as_deref() == Some(key),
            "{key}: {}",
            err.message
        );
    }
}
