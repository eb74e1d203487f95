//! The Markdown tables a guide can embed: memory breakdown, parameter counts, options.

use fluent_bundle::FluentValue;
use serde_json::Value;

use super::data::GuideData;
use super::{figure, verdict_state, ExpandContext};

fn u(v: &Value, path: &str) -> u64 {
    path.split('.')
        .try_fold(v, |v, s| v.get(s))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

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
        None => &data.root,
        Some(id) => data
            .variants
            .iter()
            .find(|v| v.id == id)
            .map(|v| &v.estimate)
            .ok_or_else(|| format!("no variant with id `{id}`"))?,
    };
    let loc = ctx.loc;
    let peak = u(est, "bytes.peak").max(1);
    let mut md = format!(
        "| {} | {} | {} |\n|:---|---:|---:|\n",
        loc.t("table-component"),
        loc.t("table-memory"),
        loc.t("table-share")
    );
    let row = |md: &mut String, key: &str, bytes: u64, share: bool| {
        let pct = if share {
            loc.percent(bytes as f64 / peak as f64)
        } else {
            String::new()
        };
        md.push_str(&format!(
            "| {} | {} | {} |\n",
            loc.t(key),
            figure(loc, bytes, loc.bytes(bytes)),
            pct
        ));
    };
    for (key, field) in [
        ("component-weights", "weights"),
        ("component-gradients", "gradients"),
        ("component-optimizer", "optimizer"),
        ("component-autocast", "autocast_weights"),
        ("component-activations", "activations"),
        ("component-logits", "logits"),
    ] {
        let b = u(est, &format!("bytes.{field}"));
        if b > 0 || field != "autocast_weights" {
            row(&mut md, key, b, true);
        }
    }
    let bold = |md: &mut String, key: &str, bytes: u64| {
        md.push_str(&format!(
            "| **{}** | **{}** | |\n",
            loc.t(key),
            figure(loc, bytes, loc.bytes(bytes))
        ));
    };
    bold(&mut md, "component-train-peak", u(est, "bytes.train_peak"));
    row(
        &mut md,
        "component-eval-peak",
        u(est, "bytes.eval_peak"),
        false,
    );
    row(
        &mut md,
        "component-overhead",
        u(est, "bytes.overhead"),
        false,
    );
    bold(&mut md, "component-total", u(est, "bytes.total"));
    md.push_str(&format!(
        "| {} | {} | |\n",
        loc.t("component-total-range"),
        loc.byte_range(u(est, "bytes.total_low"), u(est, "bytes.total_high"))
    ));
    let other = u(est, "bytes.other_processes");
    if other > 0 {
        row(&mut md, "component-other-processes", other, false);
    }
    if let Some(cap) = est
        .get("gpu")
        .and_then(|g| g.get("capacity_bytes"))
        .and_then(Value::as_u64)
    {
        // Catalog data is a site's own file: escaped like any text, as the charts do.
        let name = super::escape_text(est["gpu"]["name"].as_str().unwrap_or_default());
        let label = loc.t_args("component-capacity", &[("gpu", FluentValue::from(name))]);
        let state = est["verdict"].as_str().unwrap_or("does_not_fit");
        md.push_str(&format!(
            "| {} | {} | {} |\n",
            cell(&label),
            figure(loc, cap, loc.bytes(cap)),
            verdict_state(loc, state)
        ));
    }
    Ok(md)
}

/// Parameter counts as nanoGPT reports them.
pub(super) fn params(data: &GuideData, ctx: &ExpandContext<'_>) -> String {
    let loc = ctx.loc;
    let p = &data.root["params"];
    let mut md = format!(
        "| {} | {} | {} |\n|:---|---:|---:|\n",
        loc.t("table-param-group"),
        loc.t("table-param-count"),
        loc.t("table-param-tensors")
    );
    for (key, count, tensors) in [
        ("param-total", "total", None),
        ("param-non-embedding", "non_embedding", None),
        ("param-decay", "decay", Some("decay_tensors")),
        ("param-no-decay", "no_decay", Some("no_decay_tensors")),
    ] {
        let n = u(p, count);
        let t = tensors.map(|t| loc.int(u(p, t))).unwrap_or_default();
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

/// The front matter's variants, then the computed what-ifs, each with its total and verdict.
pub(super) fn options(data: &GuideData, ctx: &ExpandContext<'_>) -> String {
    let loc = ctx.loc;
    let base_total = u(&data.root, "bytes.total") as i64;
    let mut md = format!(
        "| {} | {} | {} | {} | {} | {} |\n|:---|:---|---:|---:|---:|:---|\n",
        loc.t("table-option"),
        loc.t("table-change"),
        loc.t("table-effective-batch"),
        loc.t("table-total"),
        loc.t("table-saving"),
        loc.t("table-verdict")
    );
    // The verdict, with the range of the total when it is tight (that is where the range matters).
    let fits_text = |v: &Value| match v["verdict"].as_str() {
        Some("tight") => loc.t_args(
            "verdict-tight-range",
            &[(
                "range",
                FluentValue::from(loc.byte_range(u(v, "total_low"), u(v, "total_high"))),
            )],
        ),
        Some(state) => verdict_state(loc, state),
        None => loc.t("verdict-unknown"),
    };
    let saving = |total: i64| {
        let s = base_total - total;
        let shown = if s >= 0 {
            loc.bytes(s as u64)
        } else {
            format!("−{}", loc.bytes(s.unsigned_abs()))
        };
        figure(loc, s.unsigned_abs(), shown)
    };
    let changes = |pairs: &mut dyn Iterator<Item = (String, String)>| {
        pairs
            .map(|(k, v)| format!("`{k} = {v}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for v in &data.variants {
        let label = ctx
            .variant_labels
            .iter()
            .find(|(id, _)| *id == v.id)
            .map(|(_, l)| l.as_str())
            .unwrap_or(&v.id);
        let total = u(&v.estimate, "bytes.total");
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            cell(label),
            changes(&mut v.set.iter().cloned()),
            loc.int(u(&v.estimate, "effective_batch")),
            figure(loc, total, loc.bytes(total)),
            saving(total as i64),
            fits_text(&serde_json::json!({
                "verdict": v.estimate["verdict"],
                "total_low": v.estimate["bytes"]["total_low"],
                "total_high": v.estimate["bytes"]["total_high"],
            }))
        ));
    }
    for w in &data.what_if {
        let kind = w["kind"].as_str().unwrap_or_default();
        let mut label = loc.t(&whatif_key(kind));
        if let Some(pct) = w.get("extra_compute_pct").and_then(Value::as_f64) {
            label.push_str(&format!(
                " ({})",
                loc.t_args(
                    "extra-compute",
                    &[("pct", FluentValue::from(loc.percent(pct / 100.0)))]
                )
            ));
        }
        let pairs = w["changes"].as_array().cloned().unwrap_or_default();
        let mut it = pairs.iter().map(|c| {
            (
                c["key"].as_str().unwrap_or_default().to_string(),
                c["value"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| c["value"].to_string()),
            )
        });
        let total = w["total"].as_u64().unwrap_or(0);
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            cell(&label),
            changes(&mut it),
            loc.int(w["effective_batch"].as_u64().unwrap_or(0)),
            figure(loc, total, loc.bytes(total)),
            saving(total as i64),
            fits_text(w)
        ));
    }
    md
}

/// The message key of a what-if option's label (`kind` as `vramdoc estimate --format json`
/// spells it, e.g. `micro_batch`).
pub(crate) fn whatif_key(kind: &str) -> String {
    format!("whatif-{}", kind.replace('_', "-"))
}
