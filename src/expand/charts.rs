//! The charts a guide can embed, computed from its scenario and labelled in its language.

use fluent_bundle::FluentValue;

use super::data::GuideData;
use super::ExpandContext;
use crate::cache::BoundedCache;
use crate::chart::{self, BreakdownChart, Segment, SweepChart, SweepPoint};
use crate::estimate::{self, Literal};
use crate::present::Line;

/// Charts already drawn in this build, by scenario, GPU, language and kind: pages that share a
/// scenario and a language share their charts (drawing a sweep costs a dozen estimates). At most
/// 16 MiB, so memory does not grow with a site whose every guide has a scenario of its own.
#[derive(Debug)]
pub struct ChartCache(BoundedCache<String, Drawn>);

impl Default for ChartCache {
    fn default() -> Self {
        ChartCache(BoundedCache::new(16 << 20))
    }
}

/// A drawn chart: (file name, SVG, alt text).
type Drawn = (String, String, String);

/// Chart `kind` ("breakdown" or "sweep" over `over`), from the cache or drawn now.
pub(super) fn chart(
    data: &GuideData,
    ctx: &ExpandContext<'_>,
    kind: &str,
    over: &str,
) -> Result<Drawn, String> {
    let key = format!(
        "{:?}|{:?}|{:?}|{}|{kind}|{over}",
        data.scenario,
        data.estimate.bytes,
        data.estimate.gpu,
        ctx.loc.lang()
    );
    if let Some(hit) = ctx.charts.0.get(&key) {
        return Ok(hit);
    }
    let drawn = draw(data, ctx, kind, over)?;
    let bytes = key.len() + drawn.0.len() + drawn.1.len() + drawn.2.len();
    ctx.charts.0.insert(key, drawn.clone(), bytes);
    Ok(drawn)
}

/// Draws chart `kind` ("breakdown" or "sweep" over `over`); returns (file name, SVG, alt text).
fn draw(
    data: &GuideData,
    ctx: &ExpandContext<'_>,
    kind: &str,
    over: &str,
) -> Result<Drawn, String> {
    let loc = ctx.loc;
    let fmt = |x: f64| loc.decimal(x, if x.fract() == 0.0 { 0 } else { 1 });
    let est = &serde_json::to_value(&data.estimate).map_err(|e| e.to_string())?;
    // The line is what this run can use: the capacity less what other programs hold.
    let capacity = est.get("gpu").filter(|g| !g.is_null()).map(|g| {
        let bytes = g["capacity_bytes"].as_u64().unwrap_or(0);
        let other = est["bytes"]["other_processes"].as_u64().unwrap_or(0);
        let name = FluentValue::from(g["name"].as_str().unwrap_or_default());
        let label = if other > 0 {
            loc.t_args(
                "chart-capacity-others",
                &[
                    ("gpu", name),
                    ("size", FluentValue::from(loc.bytes(bytes))),
                    (
                        "free",
                        FluentValue::from(loc.bytes(bytes.saturating_sub(other))),
                    ),
                ],
            )
        } else {
            loc.t_args(
                "chart-capacity",
                &[("gpu", name), ("size", FluentValue::from(loc.bytes(bytes)))],
            )
        };
        (label, bytes.saturating_sub(other))
    });
    match kind {
        "breakdown" => {
            let b = &est["bytes"];
            let get = |k: &str| b[k].as_u64().unwrap_or(0);
            let segments = [
                (Line::Weights, get("weights")),
                (Line::Gradients, get("gradients")),
                (Line::Optimizer, get("optimizer")),
                (
                    Line::Activations,
                    get("activations") + get("autocast_weights"),
                ),
                (Line::Logits, get("logits")),
                (
                    Line::Overhead,
                    get("total").saturating_sub(get("train_peak")),
                ),
            ]
            .into_iter()
            .map(|(k, bytes)| Segment {
                label: loc.t_args(
                    "chart-segment",
                    &[
                        (
                            "name",
                            FluentValue::from(k.label(
                                &data.scenario,
                                data.estimate.peak_phase,
                                loc,
                            )),
                        ),
                        ("size", FluentValue::from(loc.bytes(bytes))),
                    ],
                ),
                bytes,
            })
            .collect();
            let title = loc.t("chart-breakdown-title");
            let svg = chart::breakdown_svg(&BreakdownChart {
                title: title.clone(),
                axis_label: "GiB".into(),
                segments,
                capacity: capacity.clone(),
                format_gib: &fmt,
            })
            .map_err(|e| format!("chart: {e}"))?;
            let alt = loc.t_args(
                "chart-breakdown-alt",
                &[
                    ("total", FluentValue::from(loc.bytes(get("total")))),
                    ("peak", FluentValue::from(loc.bytes(get("peak")))),
                ],
            );
            Ok(("breakdown.svg".into(), svg, alt))
        }
        "sweep" => {
            let (xs, key): (Vec<u64>, &str) = match over {
                "batch_size" => (
                    powers(
                        1,
                        data.scenario
                            .batch_size
                            .max(1)
                            .next_power_of_two()
                            .saturating_mul(4)
                            .max(64),
                    ),
                    "batch_size",
                ),
                "block_size" => (
                    powers(
                        64,
                        data.scenario
                            .block_size
                            .max(1)
                            .next_power_of_two()
                            .saturating_mul(2)
                            .max(2048),
                    ),
                    "block_size",
                ),
                other => {
                    return Err(format!(
                        "cannot sweep over `{other}` (use batch_size or block_size)"
                    ))
                }
            };
            let catalog = ctx.catalog;
            let mut points = Vec::new();
            // The largest value whose verdict is "fits" (high end and other programs within capacity).
            let mut max_fit = None;
            for x in xs {
                let mut s = data.scenario.clone();
                s.set(key, Literal::Int(x as i64)).map_err(|e| e.message)?;
                if key == "batch_size" {
                    s.eval_batch_size = None;
                }
                if let Ok(e) = estimate::estimate(&s, catalog) {
                    if e.verdict == Some(estimate::Verdict::Fits) {
                        max_fit = max_fit.max(Some(x));
                    }
                    points.push(SweepPoint {
                        x,
                        peak_bytes: e.bytes.total,
                        range: Some((e.bytes.total_low, e.bytes.total_high)),
                    });
                }
            }
            let max_fit_label = max_fit.map(|x| {
                (
                    loc.t_args("chart-max-fit", &[("value", FluentValue::from(loc.int(x)))]),
                    x,
                )
            });
            let title = loc.t(&sweep_title_key(over));
            let svg = chart::sweep_svg(&SweepChart {
                title: title.clone(),
                x_label: loc.t(&sweep_axis_key(over)),
                y_label: loc.t("chart-y-memory"),
                series_label: loc.t("chart-series-total"),
                range_label: loc.t("chart-series-range"),
                points,
                capacity,
                max_fit: max_fit_label,
                format_gib: &fmt,
                log2_x: true,
            })
            .map_err(|e| format!("chart: {e}"))?;
            let alt = match max_fit {
                Some(x) => loc.t_args(
                    "chart-sweep-alt",
                    &[
                        ("title", FluentValue::from(title)),
                        ("value", FluentValue::from(loc.int(x))),
                    ],
                ),
                None => title,
            };
            Ok((format!("sweep-{}.svg", over.replace('_', "-")), svg, alt))
        }
        other => Err(format!(
            "unknown chart `{other}` (use \"breakdown\" or \"sweep\")"
        )),
    }
}

fn powers(from: u64, to: u64) -> Vec<u64> {
    std::iter::successors(Some(from), |x| x.checked_mul(2))
        .take_while(|x| *x <= to)
        .collect()
}

/// The scenario keys a sweep chart can run over.
pub(crate) const SWEEP_OVER: [&str; 2] = ["batch_size", "block_size"];

/// The message key of a sweep chart's title.
pub(crate) fn sweep_title_key(over: &str) -> String {
    format!("chart-sweep-title-{}", over.replace('_', "-"))
}

/// The message key of a sweep chart's x axis label.
pub(crate) fn sweep_axis_key(over: &str) -> String {
    format!("chart-x-{}", over.replace('_', "-"))
}
