//! The report on a memory readout ([`super::snapshot`]): its figures, what they mean, and, with a
//! scenario, the estimate beside the measured figure it corresponds to (the peak allocated for
//! `memory_summary()`, the process's whole use for `nvidia-smi`).

use fluent_bundle::FluentValue;
use serde::Serialize;

use super::snapshot::{SmiGpu, SmiProcess, Snapshot};
use crate::estimate::{Estimate, GpuCatalog};
use crate::i18n::Localizer;
use crate::present::table::{aligned, markdown_table, Align};
use crate::present::Format;

/// A readout with the scenario's estimate (the JSON output).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SnapshotDiagnosis {
    /// What the readout says.
    pub(crate) snapshot: Snapshot,
    /// The scenario's estimate, when one was given.
    pub(crate) estimate: Option<Estimate>,
}

/// The catalog card whose name is the one `nvidia-smi` prints (`NVIDIA GeForce RTX 3060`
/// matches `NVIDIA GeForce RTX 3060 12GB`, not `… 3060 Ti`), when exactly one is.
pub(crate) fn card_named(snapshot: &Snapshot, catalog: &GpuCatalog) -> Option<String> {
    let Snapshot::NvidiaSmi { gpus, .. } = snapshot else {
        return None;
    };
    let name = gpus.first()?.name.as_deref()?.to_ascii_lowercase();
    let mut hits = catalog.iter().filter(|g| {
        let n = g.name.to_ascii_lowercase();
        // The catalog may add the memory size the card name lacks: " 12GB".
        let size_suffix = |r: &str| {
            r.strip_prefix(' ')
                .and_then(|r| r.strip_suffix("gb"))
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        };
        n == name || n.strip_prefix(&name).is_some_and(size_suffix)
    });
    match (hits.next(), hits.next()) {
        (Some(g), None) => Some(g.id.clone()),
        _ => None,
    }
}

/// The process `nvidia-smi` shows for the run: the largest compute process on the first GPU.
fn run_process<'a>(gpus: &[SmiGpu], processes: &'a [SmiProcess]) -> Option<&'a SmiProcess> {
    let gpu = gpus.first().and_then(|g| g.index).unwrap_or(0);
    processes
        .iter()
        .filter(|p| p.gpu == gpu && p.kind.contains('C'))
        .max_by_key(|p| p.bytes)
}

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
        lines.push(crate::present::verdict::estimate_verdict(e, loc));
    }
    lines
}

/// The report in `format`.
pub(crate) fn render(
    d: &SnapshotDiagnosis,
    format: Format,
    loc: &Localizer,
) -> Result<String, Box<crate::diagnostics::Diagnostic>> {
    if format == Format::Json {
        let text = serde_json::to_string_pretty(d)
            .map_err(|e| crate::diagnostics::Diagnostic::error(e.to_string()))?;
        return Ok(text + "\n");
    }
    let (heading, rows, note) = rows(d, loc);
    let compare = comparison(d, loc);
    Ok(match format {
        Format::Markdown => {
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
        _ => {
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
    })
}
