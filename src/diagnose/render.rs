//! The table (terminal) and Markdown formats of `vramdoc diagnose`, localized.

use fluent_bundle::FluentValue;

use super::message::Format as MessageFormat;
use super::tensors::{Candidate, Phase, PhaseSource};
use super::Diagnosis;
use crate::i18n::Localizer;
use crate::report::render::{aligned, columns, header, option_table, verdict};

/// The message's numbers as (label, value) rows.
fn message_rows(d: &Diagnosis, loc: &Localizer) -> Vec<(String, String)> {
    let m = &d.message;
    let gpu = FluentValue::from(
        m.gpu_index
            .map_or_else(|| "?".to_owned(), |i| i.to_string()),
    );
    let mut rows = vec![
        (loc.t("diag-requested"), loc.bytes(m.requested.bytes)),
        (
            loc.t_args("diag-capacity", &[("gpu", gpu)]),
            loc.bytes(m.capacity.bytes),
        ),
        (loc.t("diag-free"), loc.bytes(m.free.bytes)),
    ];
    if let Some(p) = m.process {
        rows.push((loc.t("diag-process"), loc.bytes(p.bytes)));
    }
    rows.push((loc.t("diag-allocated"), loc.bytes(m.allocated.bytes)));
    rows.push((
        loc.t("diag-reserved-unallocated"),
        loc.bytes(m.reserved_unallocated.bytes),
    ));
    if m.format == MessageFormat::Pytorch1 {
        rows.push((loc.t("diag-reserved"), loc.bytes(m.reserved.bytes)));
    }
    for p in &m.processes {
        rows.push((
            loc.t_args(
                "diag-process-line",
                &[("pid", FluentValue::from(p.pid.to_string()))],
            ),
            loc.bytes(p.bytes),
        ));
    }
    match (d.other_processes_bytes, d.non_pytorch_bytes) {
        (Some(other), Some(non)) => {
            rows.push((loc.t("diag-other"), loc.bytes(other)));
            rows.push((loc.t("diag-non-pytorch"), loc.bytes(non)));
        }
        _ => rows.push((loc.t("diag-outside"), loc.bytes(d.outside_pytorch_bytes))),
    }
    rows
}

/// The heading over the message's numbers, naming PyTorch's format.
fn heading_message(d: &Diagnosis, loc: &Localizer) -> String {
    let version = match d.message.format {
        MessageFormat::Pytorch1 => "1",
        MessageFormat::Pytorch2 => "2",
    };
    loc.t_args(
        "diag-heading-message",
        &[("version", FluentValue::from(version))],
    )
}

/// A candidate tensor described in words.
fn tensor_text(c: &Candidate, loc: &Localizer) -> String {
    loc.t(&format!("diag-t-{}", c.kind))
}

/// What the failed allocation is and when it happened, as sentences.
fn tensor_lines(d: &Diagnosis, loc: &Localizer) -> Vec<String> {
    let Some(id) = &d.identified else {
        let keys = d.missing_keys.join(", ");
        return vec![loc.t_args("diag-missing", &[("keys", FluentValue::from(keys))])];
    };
    let size = FluentValue::from(loc.bytes(d.message.requested.bytes));
    let describe = |key: &str, c: &Candidate| {
        loc.t_args(
            key,
            &[
                ("size", size.clone()),
                ("tensor", FluentValue::from(tensor_text(c, loc))),
                ("shape", FluentValue::from(c.shape.clone())),
                ("dtype", FluentValue::from(c.dtype)),
                ("bytes", FluentValue::from(loc.bytes(c.bytes))),
            ],
        )
    };
    let mut lines = Vec::new();
    match (&id.tensor, &id.nearest) {
        (Some(c), _) => lines.push(describe("diag-tensor", c)),
        (None, Some(c)) => lines.push(describe("diag-tensor-none", c)),
        (None, None) => {}
    }
    match (id.phase, id.phase_source) {
        (Some(p), Some(src)) => {
            let phase = match p {
                Phase::Evaluation => "diag-phase-evaluation",
                Phase::Forward => "diag-phase-forward",
                Phase::Backward => "diag-phase-backward",
                Phase::TrainingStep => "diag-phase-training_step",
                Phase::OptimizerStep => "diag-phase-optimizer_step",
            };
            let source = match src {
                PhaseSource::Traceback => "diag-source-traceback",
                PhaseSource::Memory => "diag-source-memory",
                PhaseSource::Tensor => "diag-source-tensor",
            };
            lines.push(loc.t_args(
                "diag-phase",
                &[
                    ("phase", FluentValue::from(loc.t(phase))),
                    ("source", FluentValue::from(loc.t(source))),
                ],
            ));
        }
        _ => lines.push(loc.t("diag-phase-unknown")),
    }
    if id.before_first_step == Some(true) {
        lines.push(loc.t("diag-first-step"));
    }
    lines
}

/// The fragmentation finding as a sentence, with the advice when it applies.
fn fragmentation_line(d: &Diagnosis, loc: &Localizer) -> String {
    let f = &d.fragmentation;
    let key = if f.cause {
        "diag-frag-cause"
    } else if f.advise_expandable_segments {
        "diag-frag-large"
    } else {
        "diag-frag-none"
    };
    let mut line = loc.t_args(
        key,
        &[
            (
                "unalloc",
                FluentValue::from(loc.bytes(f.reserved_unallocated)),
            ),
            ("free", FluentValue::from(loc.bytes(d.message.free.bytes))),
            (
                "size",
                FluentValue::from(loc.bytes(d.message.requested.bytes)),
            ),
        ],
    );
    // PyTorch 1's allocator has no expandable segments: its own message names max_split_size_mb.
    if f.advise_expandable_segments && d.message.format == MessageFormat::Pytorch1 {
        line.push_str(if loc.lang().starts_with("zh") {
            ""
        } else {
            " "
        });
        line.push_str(&loc.t("diag-frag-v1"));
    }
    line
}

/// The verdict sentence and, when the card came from the message, where it came from.
fn estimate_lines(d: &Diagnosis, loc: &Localizer) -> Vec<String> {
    let Some(e) = &d.estimate else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    if e.gpu.as_ref().is_some_and(|g| g.id == super::MESSAGE_GPU) {
        let capacity = FluentValue::from(loc.bytes(d.message.capacity.bytes));
        lines.push(if d.gpu_candidates.is_empty() {
            loc.t_args("diag-gpu-from-message", &[("capacity", capacity)])
        } else {
            loc.t_args(
                "diag-gpu-candidates",
                &[
                    ("capacity", capacity),
                    (
                        "cards",
                        FluentValue::from(d.gpu_candidates.join(if loc.lang().starts_with("zh") {
                            "、"
                        } else {
                            ", "
                        })),
                    ),
                ],
            )
        });
    }
    lines.push(loc.t_args(
        "diag-estimate",
        &[
            ("peak", FluentValue::from(loc.bytes(e.bytes.peak))),
            (
                "range",
                FluentValue::from(loc.byte_range(e.bytes.total_low, e.bytes.total_high)),
            ),
        ],
    ));
    lines.push(verdict(e, loc));
    lines
}

/// The header of the Markdown table of the message's numbers.
fn table_head(loc: &Localizer) -> String {
    format!(
        "| {} | {} |\n|:---|---:|\n",
        loc.t("diag-col-figure"),
        loc.t("diag-col-size")
    )
}

/// A readable terminal report.
pub(super) fn table(d: &Diagnosis, loc: &Localizer) -> String {
    let mut out = format!("{}\n\n{}\n", loc.t("diag-title"), heading_message(d, loc));
    out += &aligned(&message_rows(d, loc), true);
    out += &format!("\n{}\n", loc.t("diag-heading-tensor"));
    for line in tensor_lines(d, loc) {
        out += &format!("  {line}\n");
    }
    out += &format!(
        "\n{}\n  {}\n",
        loc.t("diag-heading-fragmentation"),
        fragmentation_line(d, loc)
    );
    let est = estimate_lines(d, loc);
    if !est.is_empty() {
        out += &format!("\n{}\n", loc.t("diag-heading-estimate"));
        for line in est {
            out += &format!("  {line}\n");
        }
    }
    if !d.what_if.is_empty() {
        out += &format!("\n{}\n", loc.t("est-heading-options"));
        let (cells, notes) = option_table(&d.what_if, loc, false);
        let mut rows = vec![header(loc)];
        rows.extend(cells);
        out += &columns(&rows);
        for note in notes {
            out += &format!("  {note}\n");
        }
    }
    out
}

/// Markdown: the same content with headings, a table of the numbers and of the options.
pub(super) fn markdown(d: &Diagnosis, loc: &Localizer) -> String {
    let mut out = format!(
        "## {}\n\n### {}\n\n{}",
        loc.t("diag-title"),
        heading_message(d, loc),
        table_head(loc)
    );
    for (label, value) in message_rows(d, loc) {
        out += &format!("| {} | {value} |\n", label.replace('|', "\\|"));
    }
    out += &format!("\n### {}\n\n", loc.t("diag-heading-tensor"));
    for line in tensor_lines(d, loc) {
        out += &format!("{line}\n\n");
    }
    out += &format!(
        "### {}\n\n{}\n",
        loc.t("diag-heading-fragmentation"),
        fragmentation_line(d, loc)
    );
    let est = estimate_lines(d, loc);
    if !est.is_empty() {
        out += &format!(
            "\n### {}\n\n{}\n",
            loc.t("diag-heading-estimate"),
            est.join("\n\n")
        );
    }
    if !d.what_if.is_empty() {
        let h = header(loc);
        out += &format!(
            "\n### {}\n\n| {} |\n|---|---|---:|---:|:-:|\n",
            loc.t("est-heading-options"),
            h.join(" | ")
        );
        let (cells, notes) = option_table(&d.what_if, loc, true);
        for row in cells {
            out += &format!("| {} |\n", row.join(" | "));
        }
        out += &format!("\n{}\n", notes.join("\n\n"));
    }
    out
}

/// The block `{{ diagnosis() }}` puts in a guide: the message's numbers, the tensor and phase,
/// fragmentation and the verdict, without headings (the guide has its own) or options (the
/// guide's `options_table()` lists them).
pub(crate) fn guide_block(d: &Diagnosis, loc: &Localizer) -> String {
    let mut out = format!("**{}**\n\n{}", heading_message(d, loc), table_head(loc));
    for (label, value) in message_rows(d, loc) {
        out += &format!("| {} | {value} |\n", label.replace('|', "\\|"));
    }
    out += &format!("\n**{}**\n\n", loc.t("diag-heading-tensor"));
    out += &tensor_lines(d, loc).join("\n\n");
    out += &format!(
        "\n\n**{}**\n\n{}\n",
        loc.t("diag-heading-fragmentation"),
        fragmentation_line(d, loc)
    );
    let est = estimate_lines(d, loc);
    if !est.is_empty() {
        out += &format!(
            "\n**{}**\n\n{}\n",
            loc.t("diag-heading-estimate"),
            est.join("\n\n")
        );
    }
    out
}
