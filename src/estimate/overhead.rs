//! What nvidia-smi shows beyond PyTorch's allocated memory: named constants, each a documented
//! low, middle and high.
//!
//! nvidia-smi's figure for the process = PyTorch's reserved memory + the CUDA context
//! (docs/memory-model.md, "Beyond the allocator"). The training peak itself follows an exact
//! replay; these components are estimates, so every one has a range and the estimate's
//! `total_low ≤ total ≤ total_high` spans them (the low ends summed, the high ends summed).

use super::error::ScenarioError;
use super::num::N;

const MIB: u64 = 1 << 20;

/// CUDA context with lazy module loading (`CUDA_MODULE_LOADING=LAZY`, the default since
/// CUDA 11.7 / PyTorch 1.13): 0.3–0.6 GiB across cards and drivers; 450 MiB is the middle
/// (docs/memory-model.md).
pub(crate) const CUDA_CONTEXT_BYTES: u64 = 450 * MIB;
/// Low end of the CUDA context: lazy loading on a lean driver, 300 MiB (docs/memory-model.md).
pub(crate) const CUDA_CONTEXT_LOW_BYTES: u64 = 300 * MIB;
/// High end of the CUDA context: without lazy loading (CUDA < 11.7 or
/// `CUDA_MODULE_LOADING=EAGER`) every kernel of every library is loaded, 1–2 GiB
/// (docs/memory-model.md); 1 GiB, eager loading's lower figure, since the recent stacks this tool
/// models load lazily by default and the 2 GiB comes from old stacks with every library loaded.
pub(crate) const CUDA_CONTEXT_HIGH_BYTES: u64 = 1024 * MIB;

/// torch.compile's allowance on top of the context: Inductor's Triton kernels are loaded as CUDA
/// modules (hundreds of kernels of tens of KiB each). An allowance, not a measurement.
pub(crate) const COMPILE_KERNELS_BYTES: u64 = 64 * MIB;
/// Low end of torch.compile's allowance: a few hundred small kernels, 32 MiB.
pub(crate) const COMPILE_KERNELS_LOW_BYTES: u64 = 32 * MIB;
/// High end of torch.compile's allowance: autotuned variants and the Triton runtime's own
/// buffers, 256 MiB (docs/memory-model.md: compile lowers memory for these models; it does not
/// "add 1–2 GB").
pub(crate) const COMPILE_KERNELS_HIGH_BYTES: u64 = 256 * MIB;

/// Reserved-but-unallocated memory of PyTorch's caching allocator at the peak, as a fraction
/// of the peak: typically 5–30 % (less with `expandable_segments:True`); 17.5 % is the middle
/// (docs/memory-model.md).
pub(crate) const ALLOCATOR_SLACK_NUM: u64 = 7;
/// Denominator of [`ALLOCATOR_SLACK_NUM`] (7/40 = 17.5 %).
pub(crate) const ALLOCATOR_SLACK_DEN: u64 = 40;
/// Low end of the allocator slack in percent of the peak: 5 %, a cache with
/// `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (docs/memory-model.md).
pub(crate) const ALLOCATOR_SLACK_LOW_PCT: u64 = 5;
/// High end of the allocator slack in percent of the peak: 30 %, a fragmented cache of
/// fixed-size segments (docs/memory-model.md).
pub(crate) const ALLOCATOR_SLACK_HIGH_PCT: u64 = 30;

/// cuBLAS workspace with PyTorch's default `CUBLAS_WORKSPACE_CONFIG=:4096:2:16:8`:
/// 2 × 4 MiB + 8 × 16 KiB per stream.
pub(crate) const CUBLAS_WORKSPACE_BYTES: u64 = 2 * 4 * MIB + 8 * 16 * 1024;
/// High end of the cuBLAS workspace: PyTorch's default on Hopper, `:4096:8`, 8 × 4 MiB.
pub(crate) const CUBLAS_WORKSPACE_HIGH_BYTES: u64 = 8 * 4 * MIB;

/// One of the overhead terms' three values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The documented low end.
    Low,
    /// The middle (the point estimate `total`).
    Mid,
    /// The documented high end.
    High,
}

/// The three overhead terms for a peak at one end of their ranges:
/// (CUDA context with compile's kernels, allocator slack, cuBLAS workspace).
pub(crate) fn overhead(peak: N, compile: bool, end: End) -> (N, N, N) {
    let (context, kernels, slack, cublas) = match end {
        End::Low => (
            CUDA_CONTEXT_LOW_BYTES,
            COMPILE_KERNELS_LOW_BYTES,
            peak * u128::from(ALLOCATOR_SLACK_LOW_PCT) / 100,
            CUBLAS_WORKSPACE_BYTES,
        ),
        End::Mid => (
            CUDA_CONTEXT_BYTES,
            COMPILE_KERNELS_BYTES,
            peak * u128::from(ALLOCATOR_SLACK_NUM) / u128::from(ALLOCATOR_SLACK_DEN),
            CUBLAS_WORKSPACE_BYTES,
        ),
        End::High => (
            CUDA_CONTEXT_HIGH_BYTES,
            COMPILE_KERNELS_HIGH_BYTES,
            peak * u128::from(ALLOCATOR_SLACK_HIGH_PCT) / 100,
            CUBLAS_WORKSPACE_HIGH_BYTES,
        ),
    };
    let context = N::from(context) + if compile { N::from(kernels) } else { N::ZERO };
    (context, slack, N::from(cublas))
}

/// A peak with what nvidia-smi shows around it, in bytes: the three overhead terms at their
/// middle, their sum, the point total (`peak + overhead`) and the range of totals with every
/// term at its low and its high end. Training, sampling and `generate` estimates all take their
/// totals from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NvidiaSmiTotals {
    /// The CUDA context (with compile's kernels) at the middle.
    pub cuda_context: u64,
    /// Reserved but unallocated memory at the middle.
    pub allocator_slack: u64,
    /// The cuBLAS workspace at the middle.
    pub cublas_workspace: u64,
    /// The three terms' sum.
    pub overhead: u64,
    /// `peak + overhead`.
    pub total: u64,
    /// The total with every term at its low end.
    pub total_low: u64,
    /// The total with every term at its high end.
    pub total_high: u64,
}

/// [`NvidiaSmiTotals`] for `peak`, with compile's kernels in the context when `compile`.
pub(crate) fn totals(peak: N, compile: bool) -> Result<NvidiaSmiTotals, ScenarioError> {
    let (context, slack, cublas) = overhead(peak, compile, End::Mid);
    let at = |end| {
        let (c, sl, cu) = overhead(peak, compile, end);
        (peak + c + sl + cu).to_u64("the total")
    };
    Ok(NvidiaSmiTotals {
        cuda_context: context.to_u64("the CUDA context")?,
        allocator_slack: slack.to_u64("the allocator slack")?,
        cublas_workspace: cublas.to_u64("the cuBLAS workspace")?,
        overhead: (context + slack + cublas).to_u64("the overhead")?,
        total: (peak + context + slack + cublas).to_u64("the total")?,
        total_low: at(End::Low)?,
        total_high: at(End::High)?,
    })
}
