//! The memory estimator: a nanoGPT scenario in, parameter counts and GPU memory out.
//!
//! Pure: no I/O, no printing. [`estimate`] gives one scenario's breakdown and verdict;
//! [`what_if`] the options a guide lists. `serde_json::to_value(&estimate)` is the JSON contract
//! of `vramdoc estimate --format json` and what guides read by dotted path.

mod error;
mod eval;
mod gpu;
mod keys;
mod memory;
mod num;
mod overhead;
mod params;
mod scenario;
mod train;
mod whatif;

use serde::Serialize;

pub use error::ScenarioError;
pub use gpu::{Gpu, GpuCatalog};
pub use keys::{Literal, KEYS};
pub use memory::TrainMoment;
pub use overhead::{
    ALLOCATOR_SLACK_DEN, ALLOCATOR_SLACK_NUM, COMPILE_KERNELS_BYTES, CUBLAS_WORKSPACE_BYTES,
    CUDA_CONTEXT_BYTES,
};
pub use params::Params;
pub use scenario::{Dtype, Optimizer, Scenario};
pub use whatif::{what_if, Change, WhatIf, WhatIfKind};

use num::N;

/// Version of the formulas and constants; bump on any change (site builds cache on it).
pub const ESTIMATOR_VERSION: &str = "2";

/// Memory figures in bytes (the JSON contract's `bytes` object).
///
/// `weights + gradients + optimizer + autocast_weights + activations + logits == train_peak`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Bytes {
    /// Parameters (and flash-off causal-mask buffers) at the training peak.
    pub weights: u64,
    /// `.grad` tensors alive at the training peak.
    pub gradients: u64,
    /// Optimizer state.
    pub optimizer: u64,
    /// Autocast's 16-bit copies of the Linear weights, saved for backward.
    pub autocast_weights: u64,
    /// Activations saved for backward (and token batches) at the training peak.
    pub activations: u64,
    /// Every s·b·V term at the training peak: kept logits, log-softmax, loss-backward buffers.
    pub logits: u64,
    /// The training step's peak of allocated memory.
    pub train_peak: u64,
    /// `estimate_loss()`'s peak once optimizer state exists (every evaluation after iteration 0).
    pub eval_peak: u64,
    /// `estimate_loss()`'s peak at iteration 0, before the optimizer state exists.
    pub eval_first_peak: u64,
    /// `max(train_peak, eval_peak)`: `torch.cuda.max_memory_allocated()`.
    pub peak: u64,
    /// `cuda_context + allocator_slack + cublas_workspace`.
    pub overhead: u64,
    /// `peak + overhead`: what nvidia-smi shows for the process.
    pub total: u64,
    /// One logits tensor at the training micro-batch: `b·s·V·c`.
    pub logits_tensor: u64,
    /// One logits tensor at the eval micro-batch.
    pub eval_logits_tensor: u64,
    /// CUDA context (plus torch.compile's kernels when compiling).
    pub cuda_context: u64,
    /// Reserved-but-unallocated memory of the caching allocator.
    pub allocator_slack: u64,
    /// cuBLAS workspace.
    pub cublas_workspace: u64,
}

/// Which phase sets the peak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// A training step (forward, backward, optimizer step).
    Train,
    /// `estimate_loss()`.
    Eval,
}

/// The GPU an estimate was checked against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuRef {
    /// Catalog id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Usable memory in bytes.
    pub capacity_bytes: u64,
    /// Whether the card has bf16 (T4 and V100 do not: bfloat16 there is a configuration error).
    pub bf16: bool,
}

/// One scenario's estimate (the JSON contract of `vramdoc estimate --format json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    /// Every key with its resolved value.
    pub scenario: Scenario,
    /// Parameter counts.
    pub params: Params,
    /// Memory figures.
    pub bytes: Bytes,
    /// Whether training or evaluation sets `peak`.
    pub peak_phase: Phase,
    /// The moment of the training step at which `train_peak` occurs.
    pub train_peak_moment: TrainMoment,
    /// Sequences per optimizer step: `batch_size · gradient_accumulation_steps`.
    pub effective_batch: u64,
    /// `effective_batch · block_size`.
    pub tokens_per_step: u64,
    /// The scenario's GPU, if it names one.
    pub gpu: Option<GpuRef>,
    /// `total <= capacity_bytes`, if a GPU is named.
    pub fits: Option<bool>,
    /// `capacity_bytes − total`, if a GPU is named.
    pub headroom_bytes: Option<i64>,
    /// [`ESTIMATOR_VERSION`].
    pub estimator_version: &'static str,
}

/// Estimates one scenario; errors name the scenario key at fault.
pub fn estimate(s: &Scenario, catalog: &GpuCatalog) -> Result<Estimate, ScenarioError> {
    s.validate(catalog)?;
    let params = params::count(s)?;
    let m = memory::memory(s, &params);
    let train_peak = m.train.sum();
    let (peak, peak_phase) = if m.eval > train_peak {
        (m.eval, Phase::Eval)
    } else {
        (train_peak, Phase::Train)
    };
    let (context, slack, cublas) = overhead::overhead(peak, s.compile);
    let overhead = context + slack + cublas;
    let total = peak + overhead;
    let u = |n: N, what: &str| n.to_u64(what);
    let bytes = Bytes {
        weights: u(m.train.weights, "the weights")?,
        gradients: u(m.train.gradients, "the gradients")?,
        optimizer: u(m.train.optimizer, "the optimizer state")?,
        autocast_weights: u(m.train.autocast_weights, "the autocast weight copies")?,
        activations: u(m.train.activations, "the activations")?,
        logits: u(m.train.logits, "the logits")?,
        train_peak: u(train_peak, "the training peak")?,
        eval_peak: u(m.eval, "the evaluation peak")?,
        eval_first_peak: u(m.eval_first, "the evaluation peak")?,
        peak: u(peak, "the peak")?,
        overhead: u(overhead, "the overhead")?,
        total: u(total, "the total")?,
        logits_tensor: u(m.logits_tensor, "the logits tensor")?,
        eval_logits_tensor: u(m.eval_logits_tensor, "the eval logits tensor")?,
        cuda_context: u(context, "the CUDA context")?,
        allocator_slack: u(slack, "the allocator slack")?,
        cublas_workspace: u(cublas, "the cuBLAS workspace")?,
    };
    let effective_batch = u(
        N::from(s.batch_size) * N::from(s.gradient_accumulation_steps),
        "the effective batch",
    )?;
    let tokens_per_step = u(
        N::from(effective_batch) * N::from(s.block_size),
        "the tokens per step",
    )?;
    let gpu = s.gpu.as_deref().and_then(|id| catalog.get(id));
    Ok(Estimate {
        scenario: s.clone(),
        params,
        bytes,
        peak_phase,
        train_peak_moment: m.train_moment,
        effective_batch,
        tokens_per_step,
        gpu: gpu.map(|g| GpuRef {
            id: g.id.clone(),
            name: g.name.clone(),
            capacity_bytes: g.capacity_bytes,
            bf16: g.bf16,
        }),
        fits: gpu.map(|g| bytes.total <= g.capacity_bytes),
        // Both sides are ≤ 2^63 − 1 (catalog check and N::to_u64), so this cannot overflow.
        headroom_bytes: gpu.map(|g| g.capacity_bytes as i64 - bytes.total as i64),
        estimator_version: ESTIMATOR_VERSION,
    })
}
