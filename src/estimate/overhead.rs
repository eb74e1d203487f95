//! What nvidia-smi shows beyond PyTorch's allocated memory, as named constants.
//!
//! nvidia-smi's figure for the process = PyTorch's reserved memory + the CUDA context.
//! The values below are the midpoints of the ranges in ESTIMATOR-NOTES.md; they are
//! estimates, so a scenario within a few hundred MiB of the card's capacity is "tight".

use super::num::N;

const MIB: u128 = 1 << 20;

/// CUDA context with lazy module loading (`CUDA_MODULE_LOADING=LAZY`, PyTorch's default since
/// CUDA 11.7): 0.3–0.6 GiB across cards and drivers; 450 MiB is the middle. (Eager loading costs
/// 1–2 GiB.)
pub const CUDA_CONTEXT_BYTES: u64 = 450 * MIB as u64;

/// torch.compile's allowance on top of the context: Inductor's Triton kernels are loaded as CUDA
/// modules (hundreds of kernels of tens of KiB each). An allowance, not a measurement.
pub const COMPILE_KERNELS_BYTES: u64 = 64 * MIB as u64;

/// Reserved-but-unallocated memory of PyTorch's caching allocator at the peak, as a fraction
/// of the peak: typically 5–30 % (less with `expandable_segments:True`); 17.5 % is the middle.
pub const ALLOCATOR_SLACK_NUM: u64 = 7;
/// Denominator of [`ALLOCATOR_SLACK_NUM`] (7/40 = 17.5 %).
pub const ALLOCATOR_SLACK_DEN: u64 = 40;

/// cuBLAS workspace with PyTorch's default `CUBLAS_WORKSPACE_CONFIG=:4096:2:16:8`:
/// 2 × 4 MiB + 8 × 16 KiB per stream.
pub const CUBLAS_WORKSPACE_BYTES: u64 = 2 * 4 * MIB as u64 + 8 * 16 * 1024;

/// The three overhead terms for a peak: (CUDA context, allocator slack, cuBLAS workspace).
pub(crate) fn overhead(peak: N, compile: bool) -> (N, N, N) {
    let context = N::from(CUDA_CONTEXT_BYTES)
        + if compile {
            N::from(COMPILE_KERNELS_BYTES)
        } else {
            N::ZERO
        };
    let slack = peak * u128::from(ALLOCATOR_SLACK_NUM) / u128::from(ALLOCATOR_SLACK_DEN);
    (context, slack, N::from(CUBLAS_WORKSPACE_BYTES))
}
