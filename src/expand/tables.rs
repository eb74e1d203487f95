//! The Markdown tables a guide can embed: memory breakdown, parameter counts, options. Their rows
//! and labels come from `present`, as `vramdoc estimate`'s do.

use fluent_bundle::FluentValue;

use super::data::GuideData;
use super::{figure, verdict_state, ExpandContext};
use crate::present::{self, Line, NamedVariant};

/// Escapes the characters that would break a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The memory components of the scenario (or of a variant), against the GPU.
pub(super) fn breakdown(
    data: &GuideData,
    ctx: &ExpandContext<'_>,
    variant: Option<&str>,
) -> Result<String, String> {
    let est = match variant {
        None => &data.estimate,
        Some(id) => data.variant(id)?,
    };
    let loc = ctx.loc;
    let peak = est.bytes.peak.max(1);
    let mut md = format!(
        "| {} | {} | {} |\n|:---|---:|---:|\n",
        loc.t("est-col-component"),
        loc.t("est-col-memory"),
        loc.t("est-col-share")
    );
    for row in present::memory_rows(est, loc) {
        let shown = figure(loc, row.bytes, loc.bytes(row.bytes));
        let label = cell(&row.label);
        match row.line {
            // Autocast copies exist only with 16-bit autocast; the peak repeats a line above.
            Line::Autocast if row.bytes == 0 => {}
            Line::Peak => {}
            line if line.is_component() => md.push_str(&format!(
                "| {label} | {shown} | {} |\n",
                loc.percent(row.bytes as f64 / peak as f64)
            )),
            Line::TrainPeak | Line::Total => {
                md.push_str(&format!("| **{label}** | **{shown}** | |\n"))
            }
            Line::TotalRange => md.push_str(&format!(
                "| {label} | {} | |\n",
                loc.byte_range(row.bytes, row.high)
            )),
            _ => md.push_str(&format!("| {label} | {shown} | |\n")),
        }
    }
    if let (Some(gpu), Some(state)) = (&est.gpu, est.verdict) {
        let cap = gpu.capacity_bytes;
        let label = loc.t_args(
            "component-capacity",
            // Catalog data is a site's own file: escaped like any text, as the charts do.
            &[("gpu", FluentValue::from(super::escape_text(&gpu.name)))],
        );
        md.push_str(&format!(
            "| {} | {} | |\n",
            cell(&label),
            figure(loc, cap, loc.bytes(cap)),
        ));
        // The verdict on its own row, labelled as such (never in the share column).
        md.push_str(&format!(
            "| **{}** | **{}** | |\n",
            cell(&loc.t("verdict-label")),
            verdict_state(loc, state.as_str())
        ));
        md.push('\n');
        md.push_str(&verdict_note(est, loc));
    }
    Ok(md)
}

/// The paragraph under a table or chart with verdicts: the rule of the four verdicts and the
/// free memory they were judged against (the capacity less what other programs hold).
pub(super) fn verdict_note(
    est: &crate::estimate::Estimate,
    loc: &crate::i18n::Localizer,
) -> String {
    let Some(gpu) = &est.gpu else {
        return String::new();
    };
    let other = est.bytes.other_processes;
    let gpu_name = FluentValue::from(super::escape_text(&gpu.name));
    let size = FluentValue::from(loc.bytes(gpu.capacity_bytes));
    let free = if other > 0 {
        loc.t_args(
            "verdict-free-others",
            &[
                ("gpu", gpu_name),
                ("size", size),
                ("other", FluentValue::from(loc.bytes(other))),
                (
                    "free",
                    FluentValue::from(loc.bytes(gpu.capacity_bytes.saturating_sub(other))),
                ),
            ],
        )
    } else {
        loc.t_args("verdict-free-all", &[("gpu", gpu_name), ("size", size)])
    };
    let sep = if loc.lang().starts_with("zh") {
        ""
    } else {
        " "
    };
    format!("{}{sep}{free}\n", loc.t("verdict-rule"))
}

/// Parameter counts as nanoGPT reports them.
pub(super) fn params(data: &GuideData, ctx: &ExpandContext<'_>) -> String {
    let loc = ctx.loc;
    let p = &data.estimate.params;
    let mut md = format!(
        "| {} | {} | {} |\n|:---|---:|---:|\n",
        loc.t("table-param-group"),
        loc.t("table-param-count"),
        loc.t("table-param-tensors")
    );
    let mut rows = vec![
        ("param-total", p.total, None),
        ("param-non-embedding", p.non_embedding, None),
    ];
    // Frozen embeddings or LoRA: what trains, and the adapters' share of the total.
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
    for (key, n, tensors) in rows {
        let t = tensors.map(|t| loc.int(t)).unwrap_or_default();
        md.push_str(&format!(
            "| {} | {} ({}) | {} |\n",
            loc.t(key),
            loc.int(n),
            loc.count(n),
            t
        ));
    }
    md
}

/// The front matter's variants, then the computed what-ifs, one row per distinct change, each
/// with its effective batch, total, saving and verdict; footnotes explain the markers. For a
/// `variant`: that variant's own what-ifs, against it (the other variants are changes of the
/// guide's scenario, not of it).
pub(super) fn options(
    data: &GuideData,
    ctx: &ExpandContext<'_>,
    variant: Option<&str>,
) -> Result<String, String> {
    let loc = ctx.loc;
    let (base, what_if, variants) = match variant {
        Some(id) => {
            let v = data.variant_data(id)?;
            (&v.estimate, &v.what_if, Vec::new())
        }
        None => (&data.estimate, &data.what_if, same_card_variants(data, ctx)),
    };
    let rows = present::option_rows(base, &variants, what_if, loc);
    let mut md = format!(
        "| {} | {} | {} | {} | {} | {} |\n|:---|:---|---:|---:|---:|:---|\n",
        loc.t("est-col-option"),
        loc.t("est-col-change"),
        loc.t("est-col-effective-batch"),
        loc.t("est-col-total"),
        loc.t("est-col-saving"),
        loc.t("est-col-verdict")
    );
    for r in &rows {
        let changes: Vec<String> = r
            .changes
            .iter()
            .map(|c| format!("`{}`", present::config_line(c)))
            .collect();
        // One setting per line (a `<br>` between them, which GitHub and Jekyll render too).
        let saving = if r.saving > 0 {
            figure(loc, r.saving.unsigned_abs(), r.saving_text(loc))
        } else {
            r.saving_text(loc)
        };
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            cell(&r.marked_label()),
            changes.join("<br>"),
            r.batch_text(base, loc),
            figure(loc, r.total, loc.bytes(r.total)),
            saving,
            r.verdict_text(loc)
        ));
    }
    let mut notes = present::merged_notes(&rows, loc);
    notes.extend(present::footnotes(&rows, loc));
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
    Ok(md)
}

/// The guide's variants that run on its own card, labelled in the page's language: the options
/// table lists them before the what-ifs. A variant on another card is no option for this one (its
/// verdict is against its own card): `options_table(variant="id")` shows its options.
pub(super) fn same_card_variants<'d>(
    data: &'d GuideData,
    ctx: &'d ExpandContext<'_>,
) -> Vec<NamedVariant<'d>> {
    data.variants
        .iter()
        .filter(|v| v.estimate.scenario.gpu == data.estimate.scenario.gpu)
        .map(|v| NamedVariant {
            label: ctx
                .variant_labels
                .iter()
                .find(|(id, _)| *id == v.id)
                .map_or(v.id.as_str(), |(_, l)| l.as_str()),
            estimate: &v.estimate,
        })
        .collect()
}
