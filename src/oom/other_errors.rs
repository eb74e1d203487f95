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

use fluent_bundle::FluentValue;
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

impl OtherError {
    /// The locale key stem of its explanation (`diag-other-{stem}-title`, `-meaning`, `-check`).
    pub(crate) fn stem(self) -> &'static str {
        match self {
            OtherError::CudaErrorOutOfMemory => "cuda-error",
            OtherError::CublasAllocFailed => "cublas",
            OtherError::CudnnWorkspace => "cudnn",
            OtherError::NcclOutOfMemory => "nccl",
        }
    }
}

/// The error found, its 1-based line and the line itself (at most 160 characters).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Found {
    /// Which error.
    pub(crate) error: OtherError,
    /// Its line in the text.
    pub(crate) line: usize,
    /// The line, trimmed.
    pub(crate) quoted: String,
}

/// The last memory error of `text` that is not an allocator message, if any. Library errors
/// (NCCL, cuBLAS, cuDNN) win over a generic `CUDA error` on the same line.
pub(crate) fn find(text: &str) -> Option<Found> {
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
        found = Some(Found {
            error,
            line: i + 1,
            quoted: super::message::quote(line.trim()),
        });
    }
    found
}

/// The report on a memory error that is not the allocator's message: what it means and what to
/// check, in the format asked for.
pub(crate) fn render(
    found: &Found,
    format: crate::present::Format,
    lang: &str,
) -> Result<String, Box<crate::diagnostics::Diagnostic>> {
    use crate::present::Format;
    if format == Format::Json {
        let v = serde_json::json!({
            "kind": "other_error",
            "error": found.error,
            "line": found.line,
            "quoted": found.quoted,
        });
        let text = serde_json::to_string_pretty(&v)
            .map_err(|e| crate::diagnostics::Diagnostic::error(e.to_string()))?;
        return Ok(text + "\n");
    }
    let loc = crate::i18n::Localizer::for_flag(lang)?;
    let stem = found.error.stem();
    let quoted = visible(&found.quoted);
    let parts = [
        loc.t_args(
            "diag-other-line",
            &[
                ("line", FluentValue::from(found.line as u64)),
                ("quoted", FluentValue::from(quoted)),
            ],
        ),
        loc.t(&format!("diag-other-{stem}-meaning")),
        loc.t(&format!("diag-other-{stem}-check")),
        loc.t("diag-other-no-numbers"),
    ];
    let title = loc.t(&format!("diag-other-{stem}-title"));
    Ok(match format {
        Format::Markdown => format!(
            "## {}\n\n### {title}\n\n{}\n",
            loc.t("diag-title"),
            parts.join("\n\n")
        ),
        _ => {
            let mut out = format!("{}\n\n{title}\n", loc.t("diag-title"));
            for p in parts {
                out += &format!("  {p}\n");
            }
            out
        }
    })
}

/// `text` with control characters shown as their visible Unicode pictures (U+2400…), so a
/// quoted line cannot move the cursor or retitle the terminal.
fn visible(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + c as u32).unwrap_or('?'),
            '\u{7f}' => '\u{2421}',
            c => c,
        })
        .collect()
}
