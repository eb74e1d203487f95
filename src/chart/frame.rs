//! What both charts share: the SVG document, background, title and legend around the plot.

use plotters::backend::SVGBackend;
use plotters::coord::Shift;
use plotters::drawing::{DrawingArea, IntoDrawingArea};
use plotters::element::Text;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::WHITE;

use super::legend::{Key, Legend};
use super::text::{finish_svg, fit, font};
use super::{ChartError, HEIGHT, INK, MARGIN, WIDTH};

/// Title size in pixels, and the smallest a long title may shrink to before it is cut.
const TITLE_PX: u32 = 22;
const TITLE_MIN_PX: u32 = 15;
/// Space between title, plot and legend.
const GAP: f64 = 10.0;

/// The drawing surface handed to a chart's plotting code.
pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Draws background, title and legend, then `plot` into the space left between them, and
/// returns the finished SVG with `title` as its `<title>`.
pub(crate) fn render(
    title: &str,
    legend: Vec<(Key, String)>,
    plot: impl FnOnce(&Area<'_>) -> Result<(), ChartError>,
) -> Result<String, ChartError> {
    let mut svg = String::with_capacity(16 * 1024);
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(ChartError::drawing)?;
        let inner_width = f64::from(WIDTH) - 2.0 * MARGIN;

        let (title_text, title_px) = fit(title, inner_width, (TITLE_PX, TITLE_MIN_PX), true);
        let style = font(title_px, INK, true).pos(Pos::new(HPos::Left, VPos::Top));
        root.draw(&Text::new(
            title_text,
            (MARGIN as i32, MARGIN as i32),
            style,
        ))
        .map_err(ChartError::drawing)?;

        let legend = Legend::layout(legend, inner_width);
        let legend_top = f64::from(HEIGHT) - MARGIN - legend.height();
        legend.draw(&root, (MARGIN, legend_top))?;

        let plot_top = MARGIN + f64::from(TITLE_PX) * 1.3 + GAP;
        let plot_bottom = legend_top - GAP;
        let area = root.clone().shrink(
            (MARGIN as i32, plot_top as i32),
            (inner_width as u32, (plot_bottom - plot_top).max(1.0) as u32),
        );
        plot(&area)?;
        root.present().map_err(ChartError::drawing)?;
    }
    Ok(finish_svg(&svg, title))
}
