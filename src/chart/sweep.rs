//! The sweep chart: peak memory against micro-batch (or block) size, with the capacity line
//! and the largest size that fits marked.

use plotters::chart::ChartBuilder;
use plotters::element::{Circle, DashedPathElement, PathElement, Polygon};
use plotters::series::LineSeries;
use plotters::style::{Color, RGBColor, WHITE};

use super::axis::TickedAxis;
use super::frame::{render, Area};
use super::legend::Key;
use super::text::{font, text_width};
use super::{axis_top, gib, ChartError, SweepChart, CAPACITY_COLOR, DESC_PX, INK, TICK_PX, WIDTH};

/// Colour of the measured line.
const SERIES_COLOR: RGBColor = RGBColor(0x00, 0x72, 0xB2);
/// Colour of the largest-fit marker.
const FIT_COLOR: RGBColor = RGBColor(0x00, 0x9E, 0x73);
/// Colour of the shaded range around the line (the series colour, light).
const RANGE_COLOR: RGBColor = RGBColor(0xB3, 0xD4, 0xE8);
/// Grid line colour.
const GRID: RGBColor = RGBColor(0xDD, 0xDD, 0xDD);
/// At most this many x ticks; with more points every n-th gets one.
const MAX_X_TICKS: usize = 12;

/// See [`super::sweep_svg`].
pub(crate) fn draw(chart: &SweepChart<'_>) -> Result<String, ChartError> {
    validate(chart)?;
    let mut legend = vec![(Key::LineWithDot(SERIES_COLOR), chart.series_label.clone())];
    if chart.points.iter().any(|p| p.range.is_some()) {
        legend.push((Key::Swatch(RANGE_COLOR), chart.range_label.clone()));
    }
    if let Some((label, _)) = &chart.capacity {
        legend.push((Key::Dashed(CAPACITY_COLOR), label.clone()));
    }
    if let Some((label, _)) = &chart.max_fit {
        legend.push((Key::Ring(FIT_COLOR), label.clone()));
    }
    render(&chart.title, legend, |area| plot(chart, area))
}

fn validate(chart: &SweepChart<'_>) -> Result<(), ChartError> {
    if chart.points.is_empty() {
        return Err(ChartError::NoPoints);
    }
    for pair in chart.points.windows(2) {
        if pair[1].x <= pair[0].x {
            return Err(ChartError::UnsortedX {
                previous: pair[0].x,
                next: pair[1].x,
            });
        }
    }
    let zero_fit = chart.max_fit.as_ref().is_some_and(|(_, x)| *x == 0);
    if chart.log2_x && (chart.points[0].x == 0 || zero_fit) {
        return Err(ChartError::ZeroOnLogAxis);
    }
    Ok(())
}

fn plot(chart: &SweepChart<'_>, area: &Area<'_>) -> Result<(), ChartError> {
    let to_x = |x: u64| {
        if chart.log2_x {
            (x as f64).log2()
        } else {
            x as f64
        }
    };
    let from_x = |v: f64| if chart.log2_x { v.exp2() } else { v };
    let xs: Vec<f64> = chart.points.iter().map(|p| to_x(p.x)).collect();
    let fit_x = chart.max_fit.as_ref().map(|(_, x)| to_x(*x));
    let (x_min, x_max) = x_range(&xs, fit_x);

    let peak = chart
        .points
        .iter()
        .map(|p| gib(p.range.map_or(p.peak_bytes, |r| r.1.max(p.peak_bytes))))
        .fold(0.0, f64::max);
    let capacity = chart.capacity.as_ref().map(|(_, bytes)| gib(*bytes));
    let y_top = axis_top(peak.max(capacity.unwrap_or(0.0)));

    let step = xs.len().div_ceil(MAX_X_TICKS);
    let ticks: Vec<f64> = xs.iter().copied().step_by(step).collect();
    let y_label_width = [y_top, y_top / 3.0]
        .iter()
        .map(|v| text_width(&(chart.format_gib)(*v), f64::from(TICK_PX)))
        .fold(0.0, f64::max);
    // Capped so that an odd formatter (very long tick labels) cannot squeeze the plot away.
    let y_area = (y_label_width + f64::from(DESC_PX) * 1.4 + 20.0).min(f64::from(WIDTH) * 0.3);
    let y_area = y_area.ceil() as u32;

    let mut ctx = ChartBuilder::on(area)
        .margin_right(28)
        .margin_top(6)
        .x_label_area_size(52)
        .y_label_area_size(y_area)
        .build_cartesian_2d(TickedAxis::new(x_min, x_max, ticks), 0f64..y_top)
        .map_err(ChartError::drawing)?;
    let format_x = |v: &f64| format!("{}", from_x(*v).round());
    let format_y = |v: &f64| (chart.format_gib)(*v);
    ctx.configure_mesh()
        .x_label_formatter(&format_x)
        .y_label_formatter(&format_y)
        .y_labels(6)
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .label_style(font(TICK_PX, INK, false))
        .axis_desc_style(font(DESC_PX, INK, false))
        .axis_style(INK)
        .bold_line_style(GRID)
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(ChartError::drawing)?;

    // The range as one polygon: the low ends left to right, then the high ends back.
    let band: Vec<(f64, f64)> = xs
        .iter()
        .zip(&chart.points)
        .filter_map(|(x, p)| p.range.map(|r| (*x, gib(r.0))))
        .chain(
            xs.iter()
                .zip(&chart.points)
                .rev()
                .filter_map(|(x, p)| p.range.map(|r| (*x, gib(r.1)))),
        )
        .collect();
    if band.len() >= 4 {
        ctx.draw_series(std::iter::once(Polygon::new(band, RANGE_COLOR.filled())))
            .map_err(ChartError::drawing)?;
    }
    if let Some(capacity) = capacity {
        ctx.draw_series(std::iter::once(DashedPathElement::new(
            vec![(x_min, capacity), (x_max, capacity)],
            8,
            5,
            CAPACITY_COLOR.stroke_width(3),
        )))
        .map_err(ChartError::drawing)?;
    }
    if let Some(fit_x) = fit_x {
        ctx.draw_series(std::iter::once(PathElement::new(
            vec![(fit_x, 0.0), (fit_x, y_top)],
            FIT_COLOR.mix(0.8).stroke_width(2),
        )))
        .map_err(ChartError::drawing)?;
    }

    let coords: Vec<(f64, f64)> = xs
        .iter()
        .zip(&chart.points)
        .map(|(x, p)| (*x, gib(p.peak_bytes)))
        .collect();
    ctx.draw_series(LineSeries::new(
        coords.iter().copied(),
        SERIES_COLOR.stroke_width(3),
    ))
    .map_err(ChartError::drawing)?;
    ctx.draw_series(
        coords
            .iter()
            .map(|c| Circle::new(*c, 4, SERIES_COLOR.filled())),
    )
    .map_err(ChartError::drawing)?;
    if let Some(fit_x) = fit_x {
        let rings = coords.iter().filter(|(x, _)| *x == fit_x);
        ctx.draw_series(rings.map(|c| Circle::new(*c, 9, FIT_COLOR.stroke_width(3))))
            .map_err(ChartError::drawing)?;
    }
    Ok(())
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
