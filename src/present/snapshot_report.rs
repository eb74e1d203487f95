//! `vramdoc diagnose`'s report on a memory readout ([`crate::oom::snapshot`]): its figures, what
//! they mean, and, with a scenario, the estimate beside the measured figure it corresponds to
//! (the peak allocated for `memory_summary()`, the process's whole use for `nvidia-smi`), as
//! terminal text or Markdown. The JSON is [`SnapshotDiagnosis`] itself.

use fluent_bundle::FluentValue;

use super::table::{aligned, markdown_table, Align};
use crate::i18n::Localizer;
use crate::oom::snapshot::Snapshot;
use crate::oom::snapshot_match::{run_process, SnapshotDiagnosis};

/// The readout's figures as (label, value) rows, and the heading.
fn rows(d: &SnapshotDiagnosis, loc: &Localizer) -> (String, Vec<(String, String)>, String) {
    let b = |n: u64| loc.bytes(n);
    match &d.snapshot {
        Snapshot::MemorySummary {
            device,
            allocated,
            reserved,
            non_releasable,
            ooms,
        } => {
            let device = device.map_or_else(|| "?".to_owned(), |i| i.to_string());
            let mut rows = vec![
                (loc.t("diag-snap-allocated-now"), b(allocated.current)),
                (loc.t("diag-snap-allocated-peak"), b(allocated.peak)),
                (loc.t("diag-snap-reserved-now"), b(reserved.current)),
                (loc.t("diag-snap-reserved-peak"), b(reserved.peak)),
                (
                    loc.t("diag-snap-cache-now"),
                    b(reserved.current.saturating_sub(allocated.current)),
                ),
            ];
            if let Some(n) = non_releasable {
                rows.push((loc.t("diag-snap-non-releasable"), b(n.current)));
            }
            if let Some(n) = ooms {
                rows.push((loc.t("diag-snap-ooms"), n.to_string()));
            }
            let heading = loc.t_args(
                "diag-snap-summary-heading",
                &[("device", FluentValue::from(device))],
            );
            (heading, rows, loc.t("diag-snap-summary-note"))
        }
        Snapshot::NvidiaSmi { gpus, processes } => {
            let mut rows = Vec::new();
            for g in gpus {
                let args = [
                    (
                        "index",
                        FluentValue::from(
                            g.index.map_or_else(|| "?".to_owned(), |i| i.to_string()),
                        ),
                    ),
                    (
                        "name",
                        FluentValue::from(g.name.clone().unwrap_or_default()),
                    ),
                ];
                rows.push((
                    loc.t_args("diag-snap-gpu", &args),
                    format!("{} / {}", b(g.used), b(g.total)),
                ));
                rows.push((
                    loc.t_args("diag-snap-gpu-free", &args),
                    b(g.total.saturating_sub(g.used)),
                ));
            }
            for p in processes {
                rows.push((
                    loc.t_args(
                        "diag-snap-process",
                        &[
                            ("pid", FluentValue::from(p.pid.to_string())),
                            ("name", FluentValue::from(p.name.clone())),
                        ],
                    ),
                    b(p.bytes),
                ));
            }
            (
                loc.t("diag-snap-smi-heading"),
                rows,
                loc.t("diag-snap-smi-note"),
            )
        }
    }
}

/// The estimate beside the measured figure, and the verdict.
fn comparison(d: &SnapshotDiagnosis, loc: &Localizer) -> Vec<String> {
    let Some(e) = &d.estimate else {
        return Vec::new();
    };
    let mut lines = vec![match &d.snapshot {
        Snapshot::MemorySummary { allocated, .. } => loc.t_args(
            "diag-snap-compare-summary",
            &[
                ("estimate", FluentValue::from(loc.bytes(e.bytes.peak))),
                ("measured", FluentValue::from(loc.bytes(allocated.peak))),
            ],
        ),
        Snapshot::NvidiaSmi { gpus, processes } => {
            let (measured, who) = match run_process(gpus, processes) {
                Some(p) => (
                    p.bytes,
                    loc.t_args(
                        "diag-snap-who-process",
                        &[("pid", FluentValue::from(p.pid.to_string()))],
                    ),
                ),
                None => (
                    gpus.first().map_or(0, |g| g.used),
                    loc.t("diag-snap-who-gpu"),
                ),
            };
            loc.t_args(
                "diag-snap-compare-smi",
                &[
                    (
                        "range",
                        FluentValue::from(loc.byte_range(e.bytes.total_low, e.bytes.total_high)),
                    ),
                    ("measured", FluentValue::from(loc.bytes(measured))),
                    ("who", FluentValue::from(who)),
                ],
            )
        }
    }];
    if e.gpu.is_some() {
        lines.push(super::verdict::estimate_verdict(e, loc));
    }
    lines
}

/// The report as terminal text.
pub(crate) fn table(d: &SnapshotDiagnosis, loc: &Localizer) -> String {
    let (heading, rows, note) = rows(d, loc);
    let compare = comparison(d, loc);
    let mut out = format!("{}\n\n{heading}\n", loc.t("diag-snap-title"));
    out += &aligned(&rows, true);
    out += &format!("  {note}\n");
    if !compare.is_empty() {
        out += &format!("\n{}\n", loc.t("diag-heading-estimate"));
        for line in compare {
            out += &format!("  {line}\n");
        }
    }
    out
}

/// The report as Markdown.
pub(crate) fn markdown(d: &SnapshotDiagnosis, loc: &Localizer) -> String {
    let (heading, rows, note) = rows(d, loc);
    let compare = comparison(d, loc);
    let header = [loc.t("diag-col-figure"), loc.t("diag-col-size")];
    let rows: Vec<Vec<String>> = rows.into_iter().map(|(l, v)| vec![l, v]).collect();
    let mut out = format!("## {}\n\n### {heading}\n\n", loc.t("diag-snap-title"));
    out += &markdown_table(&header, &[Align::Left, Align::Right], &rows);
    out += &format!("\n{note}\n");
    if !compare.is_empty() {
        out += &format!(
            "\n### {}\n\n{}\n",
            loc.t("diag-heading-estimate"),
            compare.join("\n\n")
        );
    }
    out
}
