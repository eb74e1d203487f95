//! What both charts share: the SVG document, background, title and legend around the plot.

use plotters::backend::SVGBackend;
use plotters::coord::Shift;
use plotters::drawing::{DrawingArea, IntoDrawingArea};
use plotters::element::Text;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::legend::{Legend, LegendMark};
use super::text::{finish_svg, font, wrap, BOLD_FACTOR};
use super::{ChartError, Layout, BACKGROUND, INK, MARGIN};

/// Space between title, plot and legend.
const GAP: f64 = 10.0;
/// Title line height as a multiple of its size.
const TITLE_LINE: f64 = 1.25;

/// The drawing surface handed to a chart's plotting code.
pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Draws background, title (wrapped) and legend, then `plot` into the space left between
/// them, and returns the finished SVG with `title` as its `<title>`. The picture is
/// `layout`'s width and as tall as its title and legend need.
pub(crate) fn render(
    title: &str,
    legend: Vec<(LegendMark, String)>,
    layout: Layout,
    plot: impl FnOnce(&Area<'_>) -> Result<(), ChartError>,
) -> Result<String, ChartError> {
    let sizes = layout.sizes();
    let inner_width = f64::from(sizes.width) - 2.0 * MARGIN;
    let title_px = f64::from(sizes.title_px);
    let title_lines = wrap(title, inner_width / BOLD_FACTOR, title_px);
    let legend = Legend::layout(legend, inner_width, &sizes);
    let plot_top = MARGIN + title_lines.len() as f64 * title_px * TITLE_LINE + GAP;
    let plot_bottom = plot_top + f64::from(sizes.plot_height);
    let legend_top = plot_bottom + GAP;
    let height = (legend_top + legend.height() + MARGIN).ceil() as u32;

    let mut svg = String::with_capacity(16 * 1024);
    {
        let root = SVGBackend::with_string(&mut svg, (sizes.width, height)).into_drawing_area();
        root.fill(&BACKGROUND.light).map_err(ChartError::drawing)?;
        for (i, line) in title_lines.iter().enumerate() {
            let style = font(sizes.title_px, INK.light, true).pos(Pos::new(HPos::Left, VPos::Top));
            let y = MARGIN + i as f64 * title_px * TITLE_LINE;
            root.draw(&Text::new(line.as_str(), (MARGIN as i32, y as i32), style))
                .map_err(ChartError::drawing)?;
        }
        legend.draw(&root, (MARGIN, legend_top))?;
        let area = root.clone().shrink(
            (MARGIN as i32, plot_top as i32),
            (inner_width as u32, sizes.plot_height),
        );
        plot(&area)?;
        root.present().map_err(ChartError::drawing)?;
    }
    Ok(finish_svg(&svg, title))
}
