//! What the replays of Hugging Face Trainer steps share in their tests (`hf_llama.rs`,
//! `hf_gemma.rs`): a run's entry in `tests/data/hf_*_replay.json`, the Trainer settings it
//! stands for, and the checks every estimated run meets.

use serde::Deserialize;

use crate::hf_gpt2::within_one_percent;
use crate::support::SiteTest;
use vramdoc::estimate::{
    estimate_model, Architecture, AttnImplementation, BatchLayout, Dtype, Estimate, GpuCatalog,
    Scenario,
};

/// A replay's document: the pinned versions and the runs (`Entry<M>` with its family's model,
/// or an entry type that flattens one and adds the family's own fields).
#[derive(Deserialize)]
pub(crate) struct Replay<E> {
    pub(crate) torch: String,
    pub(crate) transformers: String,
    pub(crate) runs: Vec<E>,
}

/// One replayed run and what it measured.
#[derive(Deserialize)]
pub(crate) struct Entry<M> {
    pub(crate) run: Run<M>,
    pub(crate) params: u64,
    pub(crate) trainable_params: u64,
    pub(crate) param_bytes: u64,
    pub(crate) buffer_bytes: u64,
    pub(crate) grad_bytes: u64,
    pub(crate) optimizer_bytes: u64,
    pub(crate) train_peak_bytes: u64,
    pub(crate) first_step_peak_bytes: u64,
}

/// The Trainer settings of a run.
#[derive(Deserialize)]
pub(crate) struct Run<M> {
    pub(crate) name: String,
    pub(crate) model: M,
    pub(crate) block_size: u64,
    pub(crate) batch_size: u64,
    pub(crate) accumulation: u64,
    pub(crate) weights: String,
    pub(crate) dtype: String,
    pub(crate) attn_implementation: String,
    pub(crate) grad_checkpoint: bool,
    /// Liger's fused linear cross-entropy patched in (`replay_fused_ce.py`).
    #[serde(default)]
    pub(crate) fused_cross_entropy: bool,
    /// The batch layout (`replay_batches.py`); full rows where the run does not say.
    #[serde(default)]
    pub(crate) batch_layout: Option<String>,
}

/// Reads `tests/data/<file>` and checks the pinned versions.
pub(crate) fn read<E: serde::de::DeserializeOwned>(file: &str) -> Replay<E> {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    let data: Replay<E> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(data.transformers, "5.24.0", "the pinned transformers");
    assert_eq!(data.torch, "2.15.0", "the pinned torch");
    data
}

/// The Trainer settings of a replayed run: weights loaded in bfloat16 are `pure_bf16` (with
/// `dtype: bfloat16`, which autocast or not keeps the same memory).
pub(crate) fn scenario<M>(r: &Run<M>) -> Scenario {
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
        flash: r.attn_implementation != "eager",
        attn_implementation: AttnImplementation::parse(&r.attn_implementation)
            .filter(|a| *a == AttnImplementation::FlashAttention2),
        dropout: 0.0,
        grad_checkpoint: r.grad_checkpoint,
        fused_linear_cross_entropy: r.fused_cross_entropy,
        batch_layout: r
            .batch_layout
            .as_deref()
            .map_or(BatchLayout::Full, |l| BatchLayout::parse(l).unwrap()),
        compile: false,
        ..Scenario::default()
    }
}

/// Parameters, weights (with the buffers beside them), gradients and optimizer bytes exact, the
/// peaks of both steps within 1 %: the larger relative error of the two.
pub(crate) fn check_estimate<M>(e: &Entry<M>, est: &Estimate) -> f64 {
    let name = &e.run.name;
    let w = if e.run.weights == "bfloat16" { 2 } else { 4 };
    assert_eq!(est.params.total, e.params, "{name}: parameters");
    assert_eq!(
        est.bytes.weights,
        e.param_bytes + e.buffer_bytes,
        "{name}: weights and buffers"
    );
    assert_eq!(est.params.total * w, e.param_bytes, "{name}: weight bytes");
    assert_eq!(est.params.total * w, e.grad_bytes, "{name}: gradients");
    assert_eq!(est.bytes.optimizer, e.optimizer_bytes, "{name}: optimizer");
    let (err, first) = within_one_percent(name, est, e.train_peak_bytes, e.first_step_peak_bytes);
    err.max(first)
}

/// `vramdoc estimate ARGS --format json` through the real CLI, which must succeed.
pub(crate) fn cli(args: &[&str]) -> serde_json::Value {
    cli_in(&SiteTest::new(), args)
}

/// The same in the site `t` (its files given by path).
pub(crate) fn cli_in(t: &SiteTest, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["estimate"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let r = t.run(&all);
    assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

/// What holding a family's estimator to its replay found.
pub(crate) struct Held {
    /// The largest relative error of any estimated peak (either step).
    pub(crate) worst: f64,
    /// Runs estimated, and runs refused as `refused` says.
    pub(crate) checked: usize,
    pub(crate) refused: usize,
    /// The moments the estimated peaks fall at.
    pub(crate) moments: std::collections::BTreeSet<String>,
}

/// Holds `estimate_model` to every run of `data` (`check_estimate`), the model of each run
/// described by `architecture`; a run named in `refused` must be refused at the key given.
pub(crate) fn hold<M>(
    data: &Replay<Entry<M>>,
    architecture: impl Fn(&M) -> Architecture,
    refused: &[(&str, &str)],
) -> Held {
    let catalog = GpuCatalog::builtin();
    let mut held = Held {
        worst: 0.0,
        checked: 0,
        refused: 0,
        moments: Default::default(),
    };
    for e in &data.runs {
        let name = &e.run.name;
        let model = architecture(&e.run.model);
        let run = scenario(&e.run);
        assert_eq!(model.parameter_count(), e.params, "{name}: parameters");
        assert_eq!(e.params, e.trainable_params, "{name}: full training");
        if let Some((_, key)) = refused.iter().find(|(n, _)| n == name) {
            let err = estimate_model(&model, &run, &catalog).unwrap_err();
            assert_eq!(err.key.as_deref(), Some(*key), "{name}: {}", err.message);
            held.refused += 1;
            continue;
        }
        let est = estimate_model(&model, &run, &catalog).unwrap();
        held.worst = held.worst.max(check_estimate(e, &est));
        held.moments.insert(format!("{:?}", est.train_peak_moment));
        held.checked += 1;
    }
    eprintln!(
        "worst: {:.4} % over {} runs",
        held.worst * 100.0,
        held.checked
    );
    assert_eq!(
        held.refused,
        refused.len(),
        "every refused run is in the data"
    );
    held
}
