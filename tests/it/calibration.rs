//! The estimator against the project's own ground truth: nanoGPT training steps replayed on
//! PyTorch fake tensors (`tools/nanogpt_replay/`, output in `tests/data/nanogpt_replay.json`).
//! Every replayed config must match exactly in parameters and within 2 % in the training and
//! evaluation peaks. The fine-tunes with frozen embeddings or LoRA adapters
//! (`tools/nanogpt_replay/model.py`) are configs like the others, their scenario carrying
//! `freeze_embeddings`, `lora_rank` and `lora_targets`.

use serde::Deserialize;
use vramdoc::estimate::{estimate, Dtype, GpuCatalog, InitFrom, LoraTargets, Scenario};

#[derive(Deserialize)]
struct Replay {
    configs: Vec<Config>,
    #[serde(default)]
    runs: Vec<Run>,
}

/// A replayed run beyond the training step: eval-only, resumed from a checkpoint, or one DDP
/// process (its `gradient_accumulation_steps` is the per-process value).
#[derive(Deserialize)]
struct Run {
    name: String,
    scenario: RunScenario,
    params: ReplayParams,
    eval_peak_bytes: u64,
    train_peak_bytes: Option<u64>,
    resume_load_peak_bytes: Option<u64>,
    ddp_bucket_bytes: Option<u64>,
}

#[derive(Deserialize)]
struct RunScenario {
    #[serde(flatten)]
    base: ReplayScenario,
    #[serde(default)]
    eval_only: bool,
    init_from: Option<String>,
    ddp_world_size: Option<u64>,
}

#[derive(Deserialize)]
struct Config {
    name: String,
    scenario: ReplayScenario,
    params: ReplayParams,
    train_peak_bytes: u64,
    eval_peak_bytes: u64,
}

/// A replayed training run's settings (also what `gpu_measured` reads for the measured runs).
#[derive(Deserialize)]
pub(crate) struct ReplayScenario {
    pub(crate) n_layer: u64,
    pub(crate) n_head: u64,
    pub(crate) n_embd: u64,
    pub(crate) vocab_size: u64,
    pub(crate) block_size: u64,
    pub(crate) bias: bool,
    pub(crate) dropout: f64,
    pub(crate) batch_size: u64,
    pub(crate) gradient_accumulation_steps: u64,
    pub(crate) dtype: String,
    pub(crate) flash: bool,
    pub(crate) compile: bool,
    pub(crate) eval_batch_size: u64,
    /// The fine-tuning patches (`tools/nanogpt_replay/model.py`), present where replayed.
    #[serde(default)]
    pub(crate) freeze_embeddings: bool,
    #[serde(default)]
    pub(crate) lora_rank: u64,
    pub(crate) lora_targets: Option<String>,
}

#[derive(Deserialize, PartialEq, Debug)]
struct ReplayParams {
    total: u64,
    non_embedding: u64,
    decay: u64,
    no_decay: u64,
    decay_tensors: u64,
    no_decay_tensors: u64,
}

fn replay() -> Replay {
    let path = std::env::var("VRAMDOC_REPLAY").unwrap_or_else(|_| {
        format!(
            "{}/tests/data/nanogpt_replay.json",
            env!("CARGO_MANIFEST_DIR")
        )
    });
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{path}: {e} (produced by tools/nanogpt_replay, branch `replay`)")
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The scenario a replayed (or measured) run stands for.
pub(crate) fn scenario(r: &ReplayScenario) -> Scenario {
    Scenario {
        n_layer: r.n_layer,
        n_head: r.n_head,
        n_embd: r.n_embd,
        vocab_size: r.vocab_size,
        block_size: r.block_size,
        bias: r.bias,
        dropout: r.dropout,
        batch_size: r.batch_size,
        gradient_accumulation_steps: r.gradient_accumulation_steps,
        dtype: Dtype::parse(&r.dtype).expect("dtype"),
        compile: r.compile,
        flash: r.flash,
        eval_batch_size: Some(r.eval_batch_size),
        freeze_embeddings: r.freeze_embeddings,
        lora_rank: r.lora_rank,
        lora_targets: r
            .lora_targets
            .as_deref()
            .map(|t| LoraTargets::parse(t).expect("LoRA targets"))
            .unwrap_or_default(),
        ..Scenario::default()
    }
}

fn pct(ours: u64, truth: u64) -> f64 {
    100.0 * (ours as f64 - truth as f64) / truth as f64
}

#[test]
fn every_replayed_config_within_two_percent() {
    let catalog = GpuCatalog::builtin();
    let data = replay();
    assert!(!data.configs.is_empty());
    // The fine-tuning patches are replayed too (frozen embeddings; LoRA on several targets).
    let frozen = data
        .configs
        .iter()
        .filter(|c| c.scenario.freeze_embeddings)
        .count();
    let lora = data
        .configs
        .iter()
        .filter(|c| c.scenario.lora_rank > 0)
        .count();
    assert!(frozen >= 2 && lora >= 5, "frozen {frozen}, LoRA {lora}");
    let mut failures = Vec::new();
    for c in &data.configs {
        let e = estimate(&scenario(&c.scenario), &catalog).expect("replayed scenario is valid");
        let p = &e.params;
        let want = &c.params;
        assert_eq!(
            (
                p.total,
                p.non_embedding,
                p.decay,
                p.no_decay,
                p.decay_tensors,
                p.no_decay_tensors
            ),
            (
                want.total,
                want.non_embedding,
                want.decay,
                want.no_decay,
                want.decay_tensors,
                want.no_decay_tensors
            ),
            "{}: parameter counts",
            c.name
        );
        let train = pct(e.bytes.train_peak, c.train_peak_bytes);
        // The replay evaluates at iteration 0, before AdamW's state exists.
        let eval = pct(e.bytes.eval_first_peak, c.eval_peak_bytes);
        println!(
            "{:48} train {:>14} vs {:>14} {train:+6.2}%   eval {:>14} vs {:>14} {eval:+6.2}%",
            c.name,
            e.bytes.train_peak,
            c.train_peak_bytes,
            e.bytes.eval_first_peak,
            c.eval_peak_bytes
        );
        if train.abs() > 2.0 || eval.abs() > 2.0 {
            failures.push(format!(
                "{}: train {train:+.2} %, eval {eval:+.2} %",
                c.name
            ));
        }
    }
    assert!(failures.is_empty(), "outside 2 %:\n{}", failures.join("\n"));
}

/// Eval-only runs, resumed runs (the checkpoint load, what stays after it) and DDP processes
/// (their gradient buckets): the same 2 %, and parameters exact.
#[test]
fn every_replayed_run_within_two_percent() {
    let catalog = GpuCatalog::builtin();
    let data = replay();
    assert!(data.runs.len() >= 10, "{} runs", data.runs.len());
    let mut failures = Vec::new();
    let mut kinds = [0usize; 3];
    for r in &data.runs {
        let mut s = scenario(&r.scenario.base);
        s.eval_only = r.scenario.eval_only;
        if let Some(init) = &r.scenario.init_from {
            s.init_from = InitFrom::parse(init).expect("replayed init_from");
        }
        if let Some(world) = r.scenario.ddp_world_size {
            s.ddp_world_size = world;
            // The replay records one process's accumulation; the config's is the job's.
            s.gradient_accumulation_steps *= world;
        }
        let e = estimate(&s, &catalog).expect("replayed scenario is valid");
        let p = &e.params;
        let got = ReplayParams {
            total: p.total,
            non_embedding: p.non_embedding,
            decay: p.decay,
            no_decay: p.no_decay,
            decay_tensors: p.decay_tensors,
            no_decay_tensors: p.no_decay_tensors,
        };
        assert_eq!(got, r.params, "{}: parameter counts", r.name);
        let mut figures = vec![("eval", e.bytes.eval_first_peak, r.eval_peak_bytes)];
        if let Some(train) = r.train_peak_bytes {
            figures.push(("train", e.bytes.train_peak, train));
        }
        if let Some(load) = r.resume_load_peak_bytes {
            figures.push(("load", e.bytes.resume_load_peak, load));
            kinds[1] += 1;
        }
        if let Some(buckets) = r.ddp_bucket_bytes {
            figures.push(("buckets", e.bytes.ddp_buckets, buckets));
            kinds[2] += 1;
        }
        if r.scenario.eval_only {
            kinds[0] += 1;
            assert_eq!(
                e.bytes.peak, e.bytes.eval_first_peak,
                "{}: eval-only peak",
                r.name
            );
            assert_eq!(
                e.bytes.optimizer + e.bytes.activations,
                0,
                "{}: no training state",
                r.name
            );
        }
        for (what, ours, truth) in figures {
            let diff = pct(ours, truth);
            println!(
                "{:52} {what:8} {ours:>14} vs {truth:>14} {diff:+6.2}%",
                r.name
            );
            if diff.abs() > 2.0 {
                failures.push(format!("{}: {what} {diff:+.2} %", r.name));
            }
        }
    }
    assert!(
        kinds.iter().all(|&k| k >= 2),
        "eval-only, resume, DDP runs: {kinds:?}"
    );
    assert!(failures.is_empty(), "outside 2 %:\n{}", failures.join("\n"));
}
