//! The stacked-area chart: memory against a value (a generation's context length), its parts
//! shaded one on top of the other (the weights, the KV cache, the peak step's own tensors, what
//! lies outside PyTorch's allocator), the card's capacity as a dashed line and the largest value
//! that fits as a vertical line. The x axis is linear; the y axis shows every point in full.

use plotters::element::{DashedPathElement, PathElement, Polygon};
use plotters::style::Color;

use super::legend::LegendMark;
use super::sweep::{draw_axes, linear_ticks, Axes};
use super::{
    axis_top, frame::render, gib, ChartError, Layout, StackedChart, CAPACITY_COLOR, FIT_COLOR,
    PALETTE,
};

/// See [`super::stacked_svg_in`].
pub(crate) fn draw(chart: &StackedChart<'_>, layout: Layout) -> Result<String, ChartError> {
    validate(chart)?;
    let mut legend: Vec<(LegendMark, String)> = (chart.layers.iter().enumerate())
        .map(|(i, label)| (LegendMark::Swatch(layer_ink(i)), label.clone()))
        .collect();
    if let Some((label, _)) = &chart.capacity {
        legend.push((LegendMark::Dashed(CAPACITY_COLOR), label.clone()));
    }
    if let Some((label, _)) = &chart.max_fit {
        legend.push((LegendMark::LineWithDot(FIT_COLOR), label.clone()));
    }
    render(&chart.title, legend, layout, |area| {
        let tops = tops(chart);
        let highest = tops
            .last()
            .map_or(0.0, |t| t.iter().copied().fold(0.0, f64::max));
        let capacity = chart.capacity.as_ref().map(|(_, b)| gib(*b));
        let y_top = axis_top(highest.max(capacity.unwrap_or(0.0)));
        let xs: Vec<f64> = chart.points.iter().map(|p| p.x as f64).collect();
        let (lo, hi) = (xs[0], xs[xs.len() - 1].max(xs[0] + 1.0));
        let format_x = |v: &f64| (chart.format_x)(v.round().max(0.0) as u64);
        let spec = Axes {
            x: (lo, hi),
            ticks: linear_ticks(lo, hi, layout.sizes().max_ticks),
            y_top,
            x_label: &chart.x_label,
            y_label: &chart.y_label,
            format_x: &format_x,
            format_gib: chart.format_gib,
        };
        let mut ctx = draw_axes(area, layout, &spec)?;
        // Each layer: its top edge left to right, then the layer below's top edge back.
        let zero = vec![0.0; xs.len()];
        for (i, top) in tops.iter().enumerate() {
            let below = if i == 0 { &zero } else { &tops[i - 1] };
            let band: Vec<(f64, f64)> = (xs.iter().zip(top))
                .map(|(x, y)| (*x, *y))
                .chain(xs.iter().zip(below).rev().map(|(x, y)| (*x, *y)))
                .collect();
            let ink = layer_ink(i);
            ctx.draw_series(std::iter::once(Polygon::new(band, ink.light.filled())))
                .map_err(ChartError::drawing)?;
        }
        if let Some(c) = capacity {
            ctx.draw_series(std::iter::once(DashedPathElement::new(
                vec![(lo, c), (hi, c)],
                8,
                5,
                CAPACITY_COLOR.light.stroke_width(3),
            )))
            .map_err(ChartError::drawing)?;
        }
        if let Some((_, x)) = chart.max_fit {
            let x = x as f64;
            ctx.draw_series(std::iter::once(PathElement::new(
                vec![(x, 0.0), (x, y_top)],
                FIT_COLOR.light.stroke_width(3),
            )))
            .map_err(ChartError::drawing)?;
        }
        Ok(())
    })
}

/// The colours of the layers, bottom first: the palette without its green, which would read as
/// the fit line's (blue, orange, violet, grey, pink, yellow).
const LAYER_INKS: [usize; 6] = [0, 1, 4, 5, 3, 6];

/// Layer `i`'s colour.
fn layer_ink(i: usize) -> super::Ink {
    PALETTE[LAYER_INKS[i % LAYER_INKS.len()]]
}

/// Each layer's top edge in GiB at every point: the running sum of the layers below it.
fn tops(chart: &StackedChart<'_>) -> Vec<Vec<f64>> {
    let mut sums = vec![0u64; chart.points.len()];
    (0..chart.layers.len())
        .map(|layer| {
            (chart.points.iter().zip(sums.iter_mut()))
                .map(|(p, sum)| {
                    *sum = sum.saturating_add(p.layers.get(layer).copied().unwrap_or(0));
                    gib(*sum)
                })
                .collect()
        })
        .collect()
}

fn validate(chart: &StackedChart<'_>) -> Result<(), ChartError> {
    if chart.points.is_empty() {
        return Err(ChartError::NoPoints);
    }
    if chart.layers.is_empty() {
        return Err(ChartError::NoSegments);
    }
    super::check_ascending(chart.points.iter().map(|p| p.x))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{StackedChart, StackedPoint};
    use super::*;
    use plotters::style::RGBColor;

    fn chart<'a>(
        fmt: &'a dyn Fn(f64) -> String,
        fx: &'a dyn Fn(u64) -> String,
    ) -> StackedChart<'a> {
        StackedChart {
            title: "Memory against context".into(),
            x_label: "tokens".into(),
            y_label: "GiB".into(),
            layers: vec!["weights".into(), "KV cache".into(), "step".into()],
            points: (1..=4)
                .map(|i| StackedPoint {
                    x: i * 1000,
                    layers: vec![4 << 30, i << 28, 1 << 27],
                })
                .collect(),
            capacity: Some(("card".into(), 5 << 30)),
            max_fit: Some(("longest that fits".into(), 3500)),
            format_gib: fmt,
            format_x: fx,
        }
    }

    #[test]
    fn stacks_each_layer_on_the_one_below_and_draws_the_same_twice() {
        let (fmt, fx) = (|x: f64| format!("{x:.1}"), |x: u64| x.to_string());
        let c = chart(&fmt, &fx);
        let t = tops(&c);
        assert_eq!(t[0], vec![4.0; 4]);
        assert_eq!(t[1], vec![4.25, 4.5, 4.75, 5.0]);
        for layout in [Layout::Wide, Layout::Narrow] {
            let svg = draw(&c, layout).expect("svg");
            assert_eq!(svg, draw(&c, layout).expect("svg"), "deterministic");
            assert!(
                svg.contains("<title>Memory against context</title>"),
                "{svg}"
            );
            assert!(svg.contains("KV cache") && svg.contains("longest that fits"));
            // Each layer's legend swatch has its band's colour.
            for i in 0..3 {
                let RGBColor(r, g, b) = layer_ink(i).light;
                let fill = format!("fill=\"#{r:02X}{g:02X}{b:02X}\"");
                assert!(svg.matches(&fill).count() >= 2, "layer {i}: {svg}");
            }
            // Three bands, the capacity line and the fit line.
            assert!(svg.matches("<polygon").count() >= 3, "{svg}");
        }
        let mut bad = chart(&fmt, &fx);
        bad.points.swap(0, 1);
        assert!(matches!(
            draw(&bad, Layout::Wide),
            Err(ChartError::UnsortedX { .. })
        ));
    }
}
