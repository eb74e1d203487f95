//! `vramdoc diagnose`'s report on a memory error that is not the allocator's message
//! ([`crate::oom::other_errors`]): what it means and what to check, as terminal text or Markdown.

use fluent_bundle::FluentValue;

use crate::i18n::Localizer;
use crate::oom::other_errors::{FoundError, OtherError};

/// The locale key stem of an error's explanation (`diag-other-{stem}-title`, `-meaning`,
/// `-check`).
fn stem(error: OtherError) -> &'static str {
    match error {
        OtherError::CudaErrorOutOfMemory => "cuda-error",
        OtherError::CublasAllocFailed => "cublas",
        OtherError::CudnnWorkspace => "cudnn",
        OtherError::NcclOutOfMemory => "nccl",
    }
}

/// The title and the paragraphs: the quoted line, what it means, what to check, and that such
/// a message prints no numbers.
fn parts(found: &FoundError, loc: &Localizer) -> (String, [String; 4]) {
    let stem = stem(found.error);
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
    (loc.t(&format!("diag-other-{stem}-title")), parts)
}

/// The report as terminal text.
pub(crate) fn table(found: &FoundError, loc: &Localizer) -> String {
    let (title, parts) = parts(found, loc);
    let mut out = format!("{}\n\n{title}\n", loc.t("diag-title"));
    for p in parts {
        out += &format!("  {p}\n");
    }
    out
}

/// The report as Markdown.
pub(crate) fn markdown(found: &FoundError, loc: &Localizer) -> String {
    let (title, parts) = parts(found, loc);
    format!(
        "## {}\n\n### {title}\n\n{}\n",
        loc.t("diag-title"),
        parts.join("\n\n")
    )
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
