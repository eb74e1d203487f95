//! The breakdown chart: one horizontal bar of stacked memory components against a dashed
//! capacity line.

use plotters::chart::ChartBuilder;
use plotters::element::{DashedPathElement, Rectangle};
use plotters::style::Color;

use super::frame::{render, Area};
use super::legend::LegendMark;
use super::text::font;
use super::{
    axis_top, gib, BreakdownChart, ChartError, Layout, BACKGROUND, CAPACITY_COLOR, INK, PALETTE,
};

/// The bar spans this band of the plot's height (y runs 0..1).
const BAR: (f64, f64) = (0.22, 0.78);

/// See [`super::breakdown_svg`].
pub(crate) fn draw(chart: &BreakdownChart<'_>, layout: Layout) -> Result<String, ChartError> {
    if chart.segments.is_empty() {
        return Err(ChartError::NoSegments);
    }
    let mut legend: Vec<(LegendMark, String)> = chart
        .segments
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (
                LegendMark::Swatch(PALETTE[i % PALETTE.len()]),
                s.label.clone(),
            )
        })
        .collect();
    if let Some((label, _)) = &chart.capacity {
        legend.push((LegendMark::Dashed(CAPACITY_COLOR), label.clone()));
    }
    render(&chart.title, legend, layout, |area| {
        plot(chart, area, layout)
    })
}

fn plot(chart: &BreakdownChart<'_>, area: &Area<'_>, layout: Layout) -> Result<(), ChartError> {
    let sizes = layout.sizes();
    let total: f64 = chart.segments.iter().map(|s| gib(s.bytes)).sum();
    let capacity = chart.capacity.as_ref().map(|(_, bytes)| gib(*bytes));
    let top = axis_top(total.max(capacity.unwrap_or(0.0)));

    let mut ctx = ChartBuilder::on(area)
        .margin_left(12)
        .margin_right(sizes.tick_px * 2)
        .x_label_area_size(sizes.tick_px * 3 + sizes.desc_px)
        .build_cartesian_2d(0f64..top, 0f64..1f64)
        .map_err(ChartError::drawing)?;
    let format = |v: &f64| (chart.format_gib)(*v);
    ctx.configure_mesh()
        .disable_mesh()
        .disable_y_axis()
        .x_labels(sizes.max_ticks)
        .x_label_formatter(&format)
        .x_desc(chart.axis_label.as_str())
        .label_style(font(sizes.tick_px, INK.light, false))
        .axis_desc_style(font(sizes.desc_px, INK.light, false))
        .axis_style(INK.light)
        .draw()
        .map_err(ChartError::drawing)?;

    let mut start = 0.0;
    let mut bars = Vec::with_capacity(chart.segments.len());
    for (i, segment) in chart.segments.iter().enumerate() {
        let end = start + gib(segment.bytes);
        if segment.bytes > 0 {
            let color = PALETTE[i % PALETTE.len()];
            bars.push(Rectangle::new(
                [(start, BAR.0), (end, BAR.1)],
                color.light.filled(),
            ));
            bars.push(Rectangle::new(
                [(start, BAR.0), (end, BAR.1)],
                BACKGROUND.light.stroke_width(1),
            ));
        }
        start = end;
    }
    ctx.draw_series(bars).map_err(ChartError::drawing)?;

    if let Some(capacity) = capacity {
        ctx.draw_series(std::iter::once(DashedPathElement::new(
            vec![(capacity, 0.06), (capacity, 0.94)],
            8,
            5,
            CAPACITY_COLOR.light.stroke_width(3),
        )))
        .map_err(ChartError::drawing)?;
    }
    Ok(())
}
