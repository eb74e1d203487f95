//! The charts a guide can embed, computed from its scenario and labelled in its language.

use fluent_bundle::FluentValue;

use super::data::{GuideData, TrainData};
use super::ExpandContext;
use crate::cache::BoundedCache;
use crate::chart::{self, BreakdownChart, Layout, Segment, SweepChart, SweepPoint};
use crate::estimate::{self, Estimate, GpuRef, Literal};
use crate::i18n::Localizer;
use crate::present::Line;

/// Charts already drawn in this build, by scenario, GPU, language and kind: pages that share a
/// scenario and a language share their charts. Beside them, each sweep's computed points and
/// largest fit by scenario alone, which every language of a guide shares (a sweep costs a few
/// dozen estimates). At most 16 MiB each, so memory does not grow with a site whose every guide
/// has a scenario of its own.
#[derive(Debug)]
pub struct ChartCache {
    drawn: BoundedCache<String, Drawn>,
    sweeps: BoundedCache<String, Sweep>,
}

impl Default for ChartCache {
    fn default() -> Self {
        ChartCache {
            drawn: BoundedCache::new(16 << 20),
            sweeps: BoundedCache::new(16 << 20),
        }
    }
}

/// A sweep's points and the largest value that fits, before labelling.
type Sweep = (Vec<SweepPoint>, Option<u64>);

/// A drawn chart: its file name, its wide and narrow SVGs and its alt text.
#[derive(Debug, Clone)]
pub(super) struct Drawn {
    /// File name of the wide drawing (`breakdown.svg`); the narrow one is [`narrow_name`].
    pub(super) file: String,
    /// The wide drawing.
    pub(super) wide: String,
    /// The narrow drawing (phones).
    pub(super) narrow: String,
    /// Alt text.
    pub(super) alt: String,
    /// The caption under the chart: what the line or bar is and the verdict's rule.
    pub(super) caption: String,
}

/// The file name of a chart's narrow drawing: `breakdown.svg` → `breakdown-narrow.svg`.
pub fn narrow_name(file: &str) -> String {
    match file.strip_suffix(".svg") {
        Some(stem) => format!("{stem}-narrow.svg"),
        None => format!("{file}-narrow"),
    }
}

/// Viewports up to this width get a chart's narrow drawing.
const NARROW_MEDIA: &str = "(max-width: 540px)";

/// What opens the `<picture>` an image of chart `file` (one of `files`, the page's charts) is
/// wrapped in, its `<source>` giving viewports up to 540 px the narrow drawing; `None` for an
/// image that is not a chart. The renderer closes it after the image.
pub fn chart_picture(files: &[String], file: &str) -> Option<String> {
    files.iter().any(|f| f == file).then(|| {
        format!(
            "<picture><source media=\"{NARROW_MEDIA}\" srcset=\"{}\">",
            narrow_name(file)
        )
    })
}

/// Chart `kind` ("breakdown", "sweep" over `over`, or "context" of the guide's or `variant`'s
/// `generate` run), from the cache or drawn now.
pub(super) fn chart(
    data: &GuideData,
    ctx: &ExpandContext<'_>,
    kind: &str,
    over: &str,
    variant: Option<&str>,
) -> Result<Drawn, String> {
    if kind == "context" {
        let g = data.generate("chart(\"context\")")?;
        let run = match variant {
            Some(id) => g.variant(id)?,
            None => &g.run,
        };
        return super::context_chart::chart(run, variant, ctx);
    }
    if variant.is_some() {
        return Err("`variant` is an argument of chart(\"context\") only".into());
    }
    let data = data.train(&format!("chart(\"{kind}\")"))?;
    let key = format!(
        "{:?}|{:?}|{:?}|{}|{kind}|{over}",
        data.scenario,
        data.estimate.bytes,
        data.estimate.gpu,
        ctx.loc.lang()
    );
    if let Some(hit) = ctx.charts.drawn.get(&key) {
        return Ok(hit);
    }
    let drawn = draw(data, ctx, kind, over)?;
    let bytes = key.len()
        + drawn.file.len()
        + drawn.wide.len()
        + drawn.narrow.len()
        + drawn.alt.len()
        + drawn.caption.len();
    ctx.charts.drawn.insert(key, drawn.clone(), bytes);
    Ok(drawn)
}

/// Draws chart `kind` ("breakdown" or "sweep" over `over`) in both layouts.
fn draw(
    data: &TrainData,
    ctx: &ExpandContext<'_>,
    kind: &str,
    over: &str,
) -> Result<Drawn, String> {
    let loc = ctx.loc;
    let fmt = |x: f64| loc.decimal(x, if x.fract() == 0.0 { 0 } else { 1 });
    let capacity = capacity_line(&data.estimate, loc);
    match kind {
        "breakdown" => draw_breakdown(data, loc, capacity, &fmt),
        "sweep" => draw_sweep(data, ctx, over, capacity, &fmt),
        other => Err(format!(
            "unknown chart `{other}` (use \"breakdown\", \"sweep\" or \"context\")"
        )),
    }
}

/// The capacity line of the estimate `est`, labelled, when it has a GPU. The line is what this
/// run can use: the capacity less what other programs hold.
fn capacity_line(est: &Estimate, loc: &Localizer) -> Option<(String, u64)> {
    capacity(est.gpu.as_ref(), est.bytes.other_processes, loc)
}

/// The capacity line of card `gpu` beside `other` bytes of other programs, labelled.
pub(super) fn capacity(gpu: Option<&GpuRef>, other: u64, loc: &Localizer) -> Option<(String, u64)> {
    gpu.map(|g| {
        let bytes = g.capacity_bytes;
        let name = FluentValue::from(g.name.as_str());
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
    })
}

/// The breakdown chart of the guide's estimate: the table's rows as one bar against `capacity`.
fn draw_breakdown(
    data: &TrainData,
    loc: &Localizer,
    capacity: Option<(String, u64)>,
    fmt: &dyn Fn(f64) -> String,
) -> Result<Drawn, String> {
    let b = &data.estimate.bytes;
    let segments = breakdown_segments(data, loc);
    let chart = BreakdownChart {
        title: loc.t("chart-breakdown-title"),
        axis_label: "GiB".into(),
        segments,
        capacity,
        format_gib: fmt,
    };
    let svg = |layout| chart::breakdown_svg_in(&chart, layout).map_err(|e| format!("chart: {e}"));
    let alt = loc.t_args(
        "chart-breakdown-alt",
        &[
            ("total", FluentValue::from(loc.bytes(b.total))),
            ("peak", FluentValue::from(loc.bytes(b.peak))),
        ],
    );
    let caption = match (&data.estimate.gpu, data.estimate.verdict) {
        (Some(gpu), Some(v)) => loc.t_args(
            "chart-caption-breakdown",
            &[
                ("total", FluentValue::from(loc.bytes(b.total))),
                (
                    "free",
                    FluentValue::from(
                        loc.bytes(gpu.capacity_bytes.saturating_sub(b.other_processes)),
                    ),
                ),
                (
                    "verdict",
                    FluentValue::from(crate::present::verdict_name(v, loc)),
                ),
            ],
        ),
        _ => String::new(),
    };
    Ok(Drawn {
        file: "breakdown.svg".into(),
        wide: svg(Layout::Wide)?,
        narrow: svg(Layout::Narrow)?,
        alt,
        caption,
    })
}

/// The breakdown's segments: the table's rows, in its order and with its values (the
/// estimate's bytes): the autocast copies on their own row when there are any, the overhead as
/// the table's `bytes.overhead`.
fn breakdown_segments(data: &TrainData, loc: &Localizer) -> Vec<Segment> {
    let b = &data.estimate.bytes;
    [
        (Line::Weights, b.weights),
        (Line::Gradients, b.gradients),
        (Line::Optimizer, b.optimizer),
        (Line::Autocast, b.autocast_weights),
        (Line::Activations, b.activations),
        (Line::Logits, b.logits),
        (Line::Overhead, b.overhead),
    ]
    .into_iter()
    .filter(|(k, bytes)| *bytes > 0 || *k != Line::Autocast)
    .map(|(k, bytes)| Segment {
        label: loc.t_args(
            "chart-segment",
            &[
                (
                    "name",
                    FluentValue::from(crate::present::nanochat_labels::line_label(
                        k,
                        &data.estimate,
                        &data.scenario,
                        loc,
                    )),
                ),
                ("size", FluentValue::from(loc.bytes(bytes))),
            ],
        ),
        bytes,
    })
    .collect()
}

/// The sweep chart over `over` (batch_size or block_size): the total memory at each value
/// against `capacity`, with the largest value that fits marked.
fn draw_sweep(
    data: &TrainData,
    ctx: &ExpandContext<'_>,
    over: &str,
    capacity: Option<(String, u64)>,
    fmt: &dyn Fn(f64) -> String,
) -> Result<Drawn, String> {
    let loc = ctx.loc;
    let key = match over {
        "batch_size" | "block_size" => over,
        other => {
            return Err(format!(
                "cannot sweep over `{other}` (use batch_size or block_size)"
            ))
        }
    };
    let (points, max_fit) = sweep(data, ctx, key);
    let max_fit_label = max_fit.map(|x| {
        (
            loc.t_args("chart-max-fit", &[("value", FluentValue::from(loc.int(x)))]),
            x,
        )
    });
    let title = loc.t(&sweep_title_key(over));
    let format_bytes = |b: u64| loc.bytes(b);
    let format_x = |x: u64| loc.int(x);
    let chart = SweepChart {
        title: title.clone(),
        x_label: loc.t(&sweep_axis_key(over)),
        y_label: loc.t("chart-y-memory"),
        series_label: loc.t("chart-series-total"),
        range_label: loc.t("chart-series-range"),
        points,
        capacity,
        max_fit: max_fit_label,
        format_gib: fmt,
        format_x: &format_x,
        format_bytes: &format_bytes,
        log2_x: false,
    };
    let svg = |layout| chart::sweep_svg_in(&chart, layout).map_err(|e| format!("chart: {e}"));
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
    let caption = match (&chart.capacity, max_fit) {
        (None, _) => loc.t("chart-caption-sweep-no-gpu"),
        (Some(_), Some(x)) => loc.t_args(
            "chart-caption-sweep",
            &[("value", FluentValue::from(loc.int(x)))],
        ),
        (Some(_), None) => loc.t("chart-caption-sweep-none"),
    };
    let caption = if key == "block_size" {
        format!("{caption} {}", loc.t("chart-caption-block-64"))
    } else {
        caption
    };
    Ok(Drawn {
        file: format!("sweep-{}.svg", over.replace('_', "-")),
        wide: svg(Layout::Wide)?,
        narrow: svg(Layout::Narrow)?,
        alt,
        caption,
    })
}

/// The points of the sweep over `key` and the largest value that fits, from the cache or
/// computed now.
fn sweep(data: &TrainData, ctx: &ExpandContext<'_>, key: &str) -> Sweep {
    let cache_key = format!(
        "{:?}|{:?}|{:?}|{key}",
        data.scenario, data.estimate.bytes, data.estimate.gpu
    );
    if let Some(hit) = ctx.charts.sweeps.get(&cache_key) {
        return hit;
    }
    let catalog = ctx.catalog;
    let at = |x: u64| -> Option<estimate::Estimate> {
        let mut s = data.scenario.clone();
        s.set(key, Literal::Int(i64::try_from(x).ok()?)).ok()?;
        if key == "batch_size" {
            s.eval_batch_size = None;
        }
        super::data::estimate_with(data.model.as_ref(), &s, catalog).ok()
    };
    let current = if key == "batch_size" {
        data.scenario.batch_size
    } else {
        data.scenario.block_size
    }
    .max(1);
    // The marker follows the verdict's rule: the largest value whose high end fits. Block sizes
    // are offered in multiples of 64, the values people set (and that keep the kernels' tiles
    // full); a micro-batch is any whole number.
    let unit = sweep_unit(key);
    let max_fit = largest_fit((current / unit).max(1), |k| {
        at(k * unit).is_some_and(|e| e.verdict == Some(estimate::Verdict::Fits))
    })
    .map(|k| k * unit);
    let points: Vec<SweepPoint> = sweep_xs(key, current, max_fit)
        .into_iter()
        .filter_map(|x| {
            at(x).map(|e| SweepPoint {
                x,
                peak_bytes: e.bytes.total,
                range: Some((e.bytes.total_low, e.bytes.total_high)),
            })
        })
        .collect();
    let bytes = cache_key.len() + points.len() * std::mem::size_of::<SweepPoint>() + 16;
    let computed = (points, max_fit);
    ctx.charts.sweeps.insert(cache_key, computed.clone(), bytes);
    computed
}

/// Sweeps search no further than this for the largest value that fits.
const SEARCH_LIMIT: u64 = 1 << 24;
/// A sweep shows about this many points.
const SWEEP_POINTS: u64 = 24;

/// The largest x ≥ 1 for which `fits` holds, over every integer: doubling from `start` to a
/// value that does not fit, then bisection between the last value seen to fit and it (the
/// verdict worsens as x grows), so the answer is always one `fits` confirmed. `None` when 1
/// does not fit; [`SEARCH_LIMIT`] when everything up to it fits.
fn largest_fit(start: u64, fits: impl Fn(u64) -> bool) -> Option<u64> {
    if !fits(1) {
        return None;
    }
    let (mut lo, mut hi) = (1, start.max(2));
    while fits(hi) {
        lo = hi;
        if hi >= SEARCH_LIMIT {
            return Some(hi);
        }
        hi = (hi * 2).min(SEARCH_LIMIT);
    }
    // Invariant: fits(lo), !fits(hi).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// The x values a sweep over `key` draws: evenly spaced from the start of the axis to the
/// current value or 1.5 × the first that does not fit, whichever is larger, plus both of
/// those and the largest that fits, so the line passes exactly through the marked points.
fn sweep_xs(key: &str, current: u64, max_fit: Option<u64>) -> Vec<u64> {
    let unit = sweep_unit(key);
    let first_over = max_fit.map_or(unit, |f| f + unit);
    let end = current
        .max(first_over + first_over / 2)
        .max(if key == "batch_size" { 8 } else { 256 });
    let step = end.div_ceil(SWEEP_POINTS).max(1).next_multiple_of(unit);
    let mut xs: Vec<u64> = (1..).map(|i| i * step).take_while(|x| *x <= end).collect();
    if key == "batch_size" {
        xs.push(1);
    }
    xs.extend([current, first_over]);
    xs.extend(max_fit);
    xs.sort_unstable();
    xs.dedup();
    xs
}

/// The step of the values a sweep over `key` offers: 64 for `block_size`, 1 for `batch_size`.
fn sweep_unit(key: &str) -> u64 {
    if key == "block_size" {
        64
    } else {
        1
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_fit_tries_every_integer() {
        for start in [1, 2, 16, 1000] {
            assert_eq!(largest_fit(start, |x| x <= 11), Some(11), "from {start}");
            assert_eq!(largest_fit(start, |x| x <= 1), Some(1), "from {start}");
        }
        assert_eq!(largest_fit(16, |_| false), None);
        assert_eq!(largest_fit(16, |_| true), Some(SEARCH_LIMIT));
    }

    #[test]
    fn sweep_values_include_the_marked_ones() {
        let xs = sweep_xs("batch_size", 16, Some(11));
        assert_eq!(xs.first(), Some(&1));
        assert!(
            xs.contains(&16) && xs.contains(&11) && xs.contains(&12),
            "{xs:?}"
        );
        assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
        assert_eq!(xs.last(), Some(&18), "1.5 × the first that does not fit");
        // Block sizes: multiples of 64 only (the marked one, the first over it, the axis).
        let xs = sweep_xs("block_size", 1024, Some(192));
        assert!(xs.contains(&1024) && xs.contains(&192) && xs.contains(&256));
        assert!(xs.iter().all(|x| x % 64 == 0), "{xs:?}");
        assert_eq!(xs.last(), Some(&1024));
    }
}
