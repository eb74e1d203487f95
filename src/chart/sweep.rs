//! The sweep chart: the total memory against micro-batch (or block) size, with the capacity
//! line and the largest size that fits marked. The y axis stops at [`Y_LIMIT`] × the capacity
//! so that the region around the line stays readable; the line leaves through the top edge
//! and the largest value is written there ("1536: 59.49 GiB") instead of drawn to scale.

use plotters::backend::SVGBackend;
use plotters::chart::{ChartBuilder, ChartContext};
use plotters::coord::cartesian::Cartesian2d;
use plotters::coord::types::RangedCoordf64;
use plotters::element::{Circle, DashedPathElement, PathElement, Polygon, Text};
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::Color;

use super::axis::TickedAxis;
use super::frame::{render, Area};
use super::legend::LegendMark;
use super::text::{font, text_width};
use super::{
    axis_top, gib, ChartError, Layout, Sizes, SweepChart, CAPACITY_COLOR, FIT_COLOR, INK,
    RANGE_COLOR, SERIES_COLOR,
};

/// The y axis shows at most this multiple of the capacity.
const Y_LIMIT: f64 = 1.6;

/// See [`super::sweep_svg`].
pub(crate) fn draw(chart: &SweepChart<'_>, layout: Layout) -> Result<String, ChartError> {
    validate(chart)?;
    let mut legend = vec![(
        LegendMark::LineWithDot(SERIES_COLOR),
        chart.series_label.clone(),
    )];
    if chart.points.iter().any(|p| p.range.is_some()) {
        legend.push((
            LegendMark::Band(RANGE_COLOR, SERIES_COLOR),
            chart.range_label.clone(),
        ));
    }
    if let Some((label, _)) = &chart.capacity {
        legend.push((LegendMark::Dashed(CAPACITY_COLOR), label.clone()));
    }
    if let Some((label, _)) = &chart.max_fit {
        legend.push((LegendMark::Ring(FIT_COLOR), label.clone()));
    }
    render(&chart.title, legend, layout, |area| {
        plot(chart, area, layout)
    })
}

fn validate(chart: &SweepChart<'_>) -> Result<(), ChartError> {
    if chart.points.is_empty() {
        return Err(ChartError::NoPoints);
    }
    super::check_ascending(chart.points.iter().map(|p| p.x))?;
    let zero_fit = chart.max_fit.as_ref().is_some_and(|(_, x)| *x == 0);
    if chart.log2_x && (chart.points[0].x == 0 || zero_fit) {
        return Err(ChartError::ZeroOnLogAxis);
    }
    Ok(())
}

/// Draws the sweep into `area`: axes, the shaded range, the capacity and largest-fit lines, the
/// line with its dots, and the value beyond the top of the axis.
fn plot(chart: &SweepChart<'_>, area: &Area<'_>, layout: Layout) -> Result<(), ChartError> {
    let scale = Scale::of(chart);
    let mut ctx = axes(chart, area, layout, &scale)?;
    draw_range(&mut ctx, chart, &scale)?;
    draw_markers(&mut ctx, &scale)?;
    let dot: i32 = if layout == Layout::Narrow { 3 } else { 4 };
    draw_line(&mut ctx, chart, &scale, dot)?;
    draw_beyond(chart, area, &ctx, &scale, layout, dot)
}

/// The sweep's coordinate system once its axes are drawn.
pub(super) type Plot<'a, 'b> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<TickedAxis, RangedCoordf64>>;

/// Where a sweep's values sit on the axes.
struct Scale {
    /// Each point's position on the x axis (its log₂ on a log₂ axis).
    xs: Vec<f64>,
    /// The largest-fit marker's position on the x axis.
    fit_x: Option<f64>,
    /// The left end of the x axis.
    x_min: f64,
    /// The right end of the x axis.
    x_max: f64,
    /// The top of the y axis, in GiB.
    y_top: f64,
    /// The capacity line, in GiB.
    capacity: Option<f64>,
}

impl Scale {
    /// The axes' ranges and the points' positions for `chart`.
    fn of(chart: &SweepChart<'_>) -> Scale {
        let xs: Vec<f64> = chart.points.iter().map(|p| axis_x(chart, p.x)).collect();
        let fit_x = chart.max_fit.as_ref().map(|(_, x)| axis_x(chart, *x));
        let (x_min, x_max) = x_range(&xs, fit_x);
        let capacity = chart.capacity.as_ref().map(|(_, bytes)| gib(*bytes));
        let y_top = axis_top(shown_peak(chart, capacity));
        Scale {
            xs,
            fit_x,
            x_min,
            x_max,
            y_top,
            capacity,
        }
    }
}

/// `x`'s position on the x axis: its log₂ on a log₂ axis, else itself.
fn axis_x(chart: &SweepChart<'_>, x: u64) -> f64 {
    if chart.log2_x {
        (x as f64).log2()
    } else {
        x as f64
    }
}

/// The value at position `v` of the x axis (the inverse of [`axis_x`]).
fn value_x(chart: &SweepChart<'_>, v: f64) -> f64 {
    if chart.log2_x {
        v.exp2()
    } else {
        v
    }
}

/// The largest value the y axis must show, in GiB: the highest point or range end, capped at
/// [`Y_LIMIT`] × the capacity but never below the capacity.
fn shown_peak(chart: &SweepChart<'_>, capacity: Option<f64>) -> f64 {
    let high = |p: &super::SweepPoint| p.range.map_or(p.peak_bytes, |r| r.1.max(p.peak_bytes));
    let peak = chart
        .points
        .iter()
        .map(|p| gib(high(p)))
        .fold(0.0, f64::max);
    match capacity {
        Some(c) if c > 0.0 => peak.min(c * Y_LIMIT).max(c),
        _ => peak,
    }
}

/// The x ticks: the swept values themselves on a log₂ axis (every n-th, so at most `max`),
/// round numbers on a linear one.
fn x_ticks(chart: &SweepChart<'_>, scale: &Scale, max: usize) -> Vec<f64> {
    if chart.log2_x {
        let step = scale.xs.len().div_ceil(max);
        scale.xs.iter().copied().step_by(step).collect()
    } else {
        linear_ticks(scale.x_min, scale.x_max, max)
    }
}

/// The width left of the plot for the y tick labels and the axis description: room for the
/// widest label, capped so that an odd formatter (very long tick labels) cannot squeeze the
/// plot away.
fn y_label_area(format_gib: &dyn Fn(f64) -> String, y_top: f64, sizes: Sizes) -> u32 {
    let tick_px = f64::from(sizes.tick_px);
    let y_label_width = [y_top, y_top / 3.0]
        .iter()
        .map(|v| text_width(&format_gib(*v), tick_px))
        .fold(0.0, f64::max);
    let width = f64::from(sizes.width);
    let y_area = (y_label_width + f64::from(sizes.desc_px) * 1.4 + 20.0).min(width * 0.3);
    y_area.ceil() as u32
}

/// What a chart over a value axis shows on its axes.
pub(super) struct Axes<'c> {
    /// The x axis's ends.
    pub(super) x: (f64, f64),
    /// Where the x ticks sit.
    pub(super) ticks: Vec<f64>,
    /// The top of the y axis, in GiB (its bottom is 0).
    pub(super) y_top: f64,
    /// The axes' descriptions.
    pub(super) x_label: &'c str,
    /// The y axis's description.
    pub(super) y_label: &'c str,
    /// An x tick's label.
    pub(super) format_x: &'c dyn Fn(&f64) -> String,
    /// A y tick's label (GiB).
    pub(super) format_gib: &'c dyn Fn(f64) -> String,
}

/// Sets up the coordinate system in `area` and draws its axes, ticks and descriptions.
fn axes<'a, 'b>(
    chart: &SweepChart<'_>,
    area: &'a Area<'b>,
    layout: Layout,
    scale: &Scale,
) -> Result<Plot<'a, 'b>, ChartError> {
    let format_x = |v: &f64| (chart.format_x)(value_x(chart, *v).round().max(0.0) as u64);
    let spec = Axes {
        x: (scale.x_min, scale.x_max),
        ticks: x_ticks(chart, scale, layout.sizes().max_ticks),
        y_top: scale.y_top,
        x_label: &chart.x_label,
        y_label: &chart.y_label,
        format_x: &format_x,
        format_gib: chart.format_gib,
    };
    draw_axes(area, layout, &spec)
}

/// Draws `spec`'s axes in `area` and returns its coordinate system.
pub(super) fn draw_axes<'a, 'b>(
    area: &'a Area<'b>,
    layout: Layout,
    spec: &Axes<'_>,
) -> Result<Plot<'a, 'b>, ChartError> {
    let sizes = layout.sizes();
    let mut ctx = ChartBuilder::on(area)
        .margin_right(sizes.tick_px * 2)
        .margin_top(sizes.tick_px)
        .x_label_area_size(sizes.tick_px * 3 + sizes.desc_px)
        .y_label_area_size(y_label_area(spec.format_gib, spec.y_top, sizes))
        .build_cartesian_2d(
            TickedAxis::new(spec.x.0, spec.x.1, spec.ticks.clone()),
            0f64..spec.y_top,
        )
        .map_err(ChartError::drawing)?;
    let format_y = |v: &f64| (spec.format_gib)(*v);
    ctx.configure_mesh()
        .disable_mesh()
        .x_label_formatter(spec.format_x)
        .y_label_formatter(&format_y)
        .y_labels(sizes.max_ticks)
        .x_desc(spec.x_label)
        .y_desc(spec.y_label)
        .label_style(font(sizes.tick_px, INK.light, false))
        .axis_desc_style(font(sizes.desc_px, INK.light, false))
        .axis_style(INK.light)
        .draw()
        .map_err(ChartError::drawing)?;
    Ok(ctx)
}

/// The range as one polygon: the low ends left to right, then the high ends back, both cut at
/// the top of the axis; its edges are drawn in the series colour. Nothing when fewer than two
/// points have a range.
fn draw_range(
    ctx: &mut Plot<'_, '_>,
    chart: &SweepChart<'_>,
    scale: &Scale,
) -> Result<(), ChartError> {
    let ranged: Vec<(f64, (f64, f64))> = scale
        .xs
        .iter()
        .zip(&chart.points)
        .filter_map(|(x, p)| p.range.map(|r| (*x, (gib(r.0), gib(r.1)))))
        .collect();
    if ranged.len() < 2 {
        return Ok(());
    }
    let lows = clip_top(
        &ranged.iter().map(|(x, r)| (*x, r.0)).collect::<Vec<_>>(),
        scale.y_top,
    );
    let highs = clip_top(
        &ranged.iter().map(|(x, r)| (*x, r.1)).collect::<Vec<_>>(),
        scale.y_top,
    );
    let band: Vec<(f64, f64)> = lows
        .iter()
        .map(|p| p.0)
        .chain(highs.iter().rev().map(|p| p.0))
        .collect();
    ctx.draw_series(std::iter::once(Polygon::new(
        band,
        RANGE_COLOR.light.filled(),
    )))
    .map_err(ChartError::drawing)?;
    for edge in [&lows, &highs] {
        for run in below_runs(edge) {
            ctx.draw_series(std::iter::once(PathElement::new(
                run,
                SERIES_COLOR.light.stroke_width(1),
            )))
            .map_err(ChartError::drawing)?;
        }
    }
    Ok(())
}

/// The dashed capacity line across the plot and the vertical line at the largest fit.
fn draw_markers(ctx: &mut Plot<'_, '_>, scale: &Scale) -> Result<(), ChartError> {
    if let Some(capacity) = scale.capacity {
        ctx.draw_series(std::iter::once(DashedPathElement::new(
            vec![(scale.x_min, capacity), (scale.x_max, capacity)],
            8,
            5,
            CAPACITY_COLOR.light.stroke_width(3),
        )))
        .map_err(ChartError::drawing)?;
    }
    if let Some(fit_x) = scale.fit_x {
        ctx.draw_series(std::iter::once(PathElement::new(
            vec![(fit_x, 0.0), (fit_x, scale.y_top)],
            FIT_COLOR.light.stroke_width(2),
        )))
        .map_err(ChartError::drawing)?;
    }
    Ok(())
}

/// The line through the points (cut where it leaves the axis), a dot of radius `dot` on each
/// point within the axis, and a ring around the largest fit.
fn draw_line(
    ctx: &mut Plot<'_, '_>,
    chart: &SweepChart<'_>,
    scale: &Scale,
    dot: i32,
) -> Result<(), ChartError> {
    let y_top = scale.y_top;
    let coords: Vec<(f64, f64)> = scale
        .xs
        .iter()
        .zip(&chart.points)
        .map(|(x, p)| (*x, gib(p.peak_bytes)))
        .collect();
    for run in below_runs(&clip_top(&coords, y_top)) {
        ctx.draw_series(std::iter::once(PathElement::new(
            run,
            SERIES_COLOR.light.stroke_width(3),
        )))
        .map_err(ChartError::drawing)?;
    }
    ctx.draw_series(
        coords
            .iter()
            .filter(|c| c.1 <= y_top)
            .map(|c| Circle::new(*c, dot, SERIES_COLOR.light.filled())),
    )
    .map_err(ChartError::drawing)?;
    if let Some(fit_x) = scale.fit_x {
        let rings = coords.iter().filter(|(x, y)| *x == fit_x && *y <= y_top);
        ctx.draw_series(rings.map(|c| Circle::new(*c, 9, FIT_COLOR.light.stroke_width(3))))
            .map_err(ChartError::drawing)?;
    }
    Ok(())
}

/// Beyond the axis: the line leaves through the top edge; the largest value is written there,
/// under a triangle at its x, instead of being drawn to scale. Nothing when every point is
/// within the axis.
fn draw_beyond(
    chart: &SweepChart<'_>,
    area: &Area<'_>,
    ctx: &Plot<'_, '_>,
    scale: &Scale,
    layout: Layout,
    dot: i32,
) -> Result<(), ChartError> {
    let beyond = scale
        .xs
        .iter()
        .zip(&chart.points)
        .filter(|(_, p)| gib(p.peak_bytes) > scale.y_top)
        .max_by_key(|(_, p)| p.peak_bytes);
    let Some((x, p)) = beyond else {
        return Ok(());
    };
    let base = area.get_base_pixel();
    let (px, py) = ctx.backend_coord(&(*x, scale.y_top));
    let (px, py) = (px - base.0, py - base.1);
    let size = dot + 2;
    area.draw(&Polygon::new(
        vec![
            (px - size, py + 2 * size),
            (px + size, py + 2 * size),
            (px, py),
        ],
        SERIES_COLOR.light.filled(),
    ))
    .map_err(ChartError::drawing)?;
    let label = format!(
        "{}: {}",
        (chart.format_x)(p.x),
        (chart.format_bytes)(p.peak_bytes)
    );
    let tick_px = layout.sizes().tick_px;
    let style = font(tick_px, INK.light, false).pos(Pos::new(HPos::Right, VPos::Center));
    area.draw(&Text::new(label, (px - 2 * size, py + size), style))
        .map_err(ChartError::drawing)
}

/// `points` (a graph, ascending x) with the points where it crosses `top` inserted, each
/// flagged with whether it lies above `top` (then its y is `top`).
fn clip_top(points: &[(f64, f64)], top: f64) -> Vec<((f64, f64), bool)> {
    let mut out = Vec::with_capacity(points.len() + 4);
    for (i, &(x, y)) in points.iter().enumerate() {
        if let Some(&(px, py)) = i.checked_sub(1).map(|j| &points[j]) {
            if (py > top) != (y > top) {
                let t = (top - py) / (y - py);
                out.push(((px + t * (x - px), top), false));
            }
        }
        out.push(((x, y.min(top)), y > top));
    }
    out
}

/// The runs of a [`clip_top`] result that lie within the axis, as polylines.
fn below_runs(points: &[((f64, f64), bool)]) -> Vec<Vec<(f64, f64)>> {
    let mut runs = vec![Vec::new()];
    for &(p, above) in points {
        if above {
            if runs.last().is_some_and(|r| !r.is_empty()) {
                runs.push(Vec::new());
            }
        } else if let Some(run) = runs.last_mut() {
            run.push(p);
        }
    }
    runs.retain(|r| !r.is_empty());
    runs
}

/// Whole-number ticks over `lo..=hi` at a step of 1, 2 or 5 × 10ⁿ, at most `max` of them.
pub(super) fn linear_ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    let span = (hi - lo).max(1.0);
    let mut step = 1.0;
    'search: for exp in 0..19 {
        for m in [1.0, 2.0, 5.0] {
            step = m * 10f64.powi(exp);
            if span / step < max.max(2) as f64 {
                break 'search;
            }
        }
    }
    let first = (lo / step).ceil() * step;
    let mut ticks = Vec::new();
    let mut t = first;
    while t <= hi {
        ticks.push(t);
        t += step;
    }
    ticks
}

/// The x range: the data (and the marker) with half a step of room on each side.
fn x_range(xs: &[f64], fit_x: Option<f64>) -> (f64, f64) {
    let mut lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let mut hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if let Some(fit) = fit_x {
        lo = lo.min(fit);
        hi = hi.max(fit);
    }
    let pad = if hi > lo {
        (hi - lo) / (2.0 * xs.len().max(2) as f64)
    } else {
        1.0
    };
    (lo - pad, hi + pad)
}
