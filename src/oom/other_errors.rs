//! Memory errors that are not the caching allocator's out-of-memory message, and what each means.
//!
//! These print no numbers, so `diagnose` explains them instead of reading them:
//! - `CUDA error: out of memory` (and the old `cuda runtime error (2) : out of memory`): a CUDA
//!   call failed outside PyTorch's cache, most often the context's creation at the first CUDA
//!   use (`model.to(device)`, `torch.cuda.set_device`) on a card that is already full;
//! - `CUBLAS_STATUS_ALLOC_FAILED`: cuBLAS could not allocate its handle or workspace;
//! - a cuDNN workspace or allocation failure (`CUDNN_STATUS_ALLOC_FAILED`,
//!   `CUDNN_STATUS_NOT_ENOUGH_WORKSPACE`);
//! - NCCL's `Cuda failure 'out of memory'` / `ncclUnhandledCudaError`: the communicator's
//!   buffers, allocated outside PyTorch's cache.
//!
//! What each means, in words, is [`crate::present::other_errors_report`]'s.

use serde::Serialize;

/// A memory error without the allocator's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OtherError {
    /// `CUDA error: out of memory`.
    CudaErrorOutOfMemory,
    /// `CUBLAS_STATUS_ALLOC_FAILED`.
    CublasAllocFailed,
    /// cuDNN could not get its workspace.
    CudnnWorkspace,
    /// NCCL could not allocate its buffers.
    NcclOutOfMemory,
}

/// The error found, its 1-based line and the line itself (at most 160 characters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct FoundError {
    /// Which error.
    pub(crate) error: OtherError,
    /// Its line in the text.
    pub(crate) line: usize,
    /// The line, trimmed.
    pub(crate) quoted: String,
}

/// The last memory error of `text` that is not an allocator message, if any. Library errors
/// (NCCL, cuBLAS, cuDNN) win over a generic `CUDA error` on the same line.
pub(crate) fn find(text: &str) -> Option<FoundError> {
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let l = line.to_ascii_lowercase();
        let error = if l.contains("nccl")
            && (l.contains("out of memory")
                || l.contains("unhandled cuda error")
                || l.contains("ncclunhandledcudaerror"))
        {
            OtherError::NcclOutOfMemory
        } else if l.contains("cublas_status_alloc_failed") {
            OtherError::CublasAllocFailed
        } else if l.contains("cudnn_status_alloc_failed")
            || l.contains("cudnn_status_not_enough_workspace")
            || (l.contains("cudnn") && l.contains("workspace") && l.contains("alloc"))
        {
            OtherError::CudnnWorkspace
        } else if l.contains("cuda error: out of memory")
            || l.contains("cuda runtime error (2)")
            || l.contains("cudaerrormemoryallocation")
        {
            OtherError::CudaErrorOutOfMemory
        } else {
            continue;
        };
        found = Some(FoundError {
            error,
            line: i + 1,
            quoted: super::message::quote(line.trim()),
        });
    }
    found
}
