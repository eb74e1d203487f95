//! The Markdown tables a guide embeds (`breakdown_table()`, `params_table()`, `options_table()`):
//! the same rows and labels as `vramdoc estimate`'s ([`super::rows`]), written by the one
//! Markdown table writer ([`markdown_table`]), with byte figures that carry their exact count.

use super::html::{escape_text, figure};
use super::rows::{self, Line, NamedVariant};
use super::table::{bold, markdown_table, Align};
use super::verdict::{verdict_label, verdict_name, verdict_note};
use crate::estimate::{Estimate, Params, WhatIf};
use crate::i18n::Localizer;

/// The memory components of `est`, each with its share of the peak, then the peaks and totals;
/// with a GPU, its capacity, the verdict on its own row and the note of what it was judged
/// against ([`verdict_note`]).
pub(crate) fn breakdown(est: &Estimate, loc: &Localizer) -> String {
    let peak = est.bytes.peak.max(1);
    let mut cells: Vec<Vec<String>> = Vec::new();
    for row in rows::memory_rows(est, loc) {
        let shown = figure(loc, row.bytes, loc.bytes(row.bytes));
        match row.line {
            // Autocast copies exist only with 16-bit autocast; the peak repeats a line above.
            Line::Autocast if row.bytes == 0 => {}
            Line::Peak => {}
            line if line.is_component() => cells.push(vec![
                row.label,
                shown,
                loc.percent(row.bytes as f64 / peak as f64),
            ]),
            Line::TrainPeak | Line::Total => {
                cells.push(vec![bold(&row.label), bold(&shown), String::new()])
            }
            Line::TotalRange => cells.push(vec![
                row.label,
                loc.byte_range(row.bytes, row.high),
                String::new(),
            ]),
            _ => cells.push(vec![row.label, shown, String::new()]),
        }
    }
    let mut note = String::new();
    if let (Some(gpu), Some(state)) = (&est.gpu, est.verdict) {
        let cap = gpu.capacity_bytes;
        let label = loc.t_args(
            "component-capacity",
            // Catalog data is a site's own file: escaped like any text, as the charts do.
            &[("gpu", escape_text(&gpu.name).into())],
        );
        cells.push(vec![label, figure(loc, cap, loc.bytes(cap)), String::new()]);
        // The verdict on its own row, labelled as such (never in the share column).
        cells.push(vec![
            bold(&verdict_label(loc)),
            bold(&verdict_name(state, loc)),
            String::new(),
        ]);
        note = format!("\n{}", verdict_note(est, loc));
    }
    let header = [
        loc.t("est-col-component"),
        loc.t("est-col-memory"),
        loc.t("est-col-share"),
    ];
    markdown_table(&header, &[Align::Left, Align::Right, Align::Right], &cells) + &note
}

/// Parameter counts as nanoGPT reports them: total, without position embeddings, what trains
/// (frozen embeddings or LoRA), the adapters, and the optimizer's two groups with their tensors.
pub(crate) fn params(p: &Params, loc: &Localizer) -> String {
    let mut rows = vec![
        ("param-total", p.total, None),
        ("param-non-embedding", p.non_embedding, None),
    ];
    if p.trainable != p.total {
        rows.push(("param-trainable", p.trainable, None));
    }
    if p.lora > 0 {
        rows.push(("param-lora", p.lora, None));
    }
    rows.extend([
        ("param-decay", p.decay, Some(p.decay_tensors)),
        ("param-no-decay", p.no_decay, Some(p.no_decay_tensors)),
    ]);
    let cells: Vec<Vec<String>> = rows
        .into_iter()
        .map(|(key, n, tensors)| {
            vec![
                loc.t(key),
                format!("{} ({})", loc.int(n), loc.count(n)),
                tensors.map(|t| loc.int(t)).unwrap_or_default(),
            ]
        })
        .collect();
    let header = [
        loc.t("table-param-group"),
        loc.t("table-param-count"),
        loc.t("table-param-tensors"),
    ];
    markdown_table(&header, &[Align::Left, Align::Right, Align::Right], &cells)
}

/// The options table of `base`: the `variants`, then the what-ifs `what_if`, one row per
/// distinct change (each with its settings as config lines, effective batch, total, saving and
/// verdict); the footnotes explaining the markers and the verdict note below it.
pub(crate) fn options(
    base: &Estimate,
    variants: &[NamedVariant<'_>],
    what_if: &[WhatIf],
    loc: &Localizer,
) -> String {
    let rows = rows::option_rows(base, variants, what_if, loc);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let changes: Vec<String> = r
                .changes
                .iter()
                .map(|c| match base.scenario.model {
                    Some(_) => format!("`{}`", rows::model_setting(c)),
                    None => format!("`{}`", rows::config_line(c)),
                })
                .collect();
            let saving = if r.saving > 0 {
                figure(loc, r.saving.unsigned_abs(), r.saving_text(loc))
            } else {
                r.saving_text(loc)
            };
            vec![
                r.marked_label(),
                // One setting per line (a `<br>` between them, which GitHub and Jekyll render too).
                changes.join("<br>"),
                r.batch_text(base, loc),
                figure(loc, r.total, loc.bytes(r.total)),
                saving,
                r.verdict_text(loc),
            ]
        })
        .collect();
    let header: Vec<String> = [
        "est-col-option",
        "est-col-change",
        "est-col-effective-batch",
        "est-col-total",
        "est-col-saving",
        "est-col-verdict",
    ]
    .iter()
    .map(|k| loc.t(k))
    .collect();
    let align = [
        Align::Left,
        Align::Left,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Left,
    ];
    let mut md = markdown_table(&header, &align, &cells);
    let mut notes = rows::merged_notes(&rows, loc);
    notes.extend(rows::footnotes(&rows, loc));
    if !notes.is_empty() {
        md.push('\n');
        md.push_str(&notes.join("\n\n"));
        md.push('\n');
    }
    let note = verdict_note(base, loc);
    if !note.is_empty() {
        md.push('\n');
        md.push_str(&note);
    }
    md
}
