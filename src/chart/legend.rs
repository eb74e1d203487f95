//! A legend laid out in rows under the plot, flowing left to right, sized by the generous
//! text estimate; a label longer than a row wraps onto more lines, never cut.

use plotters::backend::SVGBackend;
use plotters::coord::Shift;
use plotters::drawing::DrawingArea;
use plotters::element::{Circle, DashedPathElement, PathElement, Rectangle, Text};
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::Color;

use super::text::{font, text_width, wrap};
use super::{ChartError, Ink, Sizes, INK};

/// Width of the key (swatch, line or marker) before each label.
const KEY_WIDTH: f64 = 24.0;
/// Space between key and label.
const KEY_GAP: f64 = 7.0;
/// Space after an entry before the next one in its row.
const COLUMN_GAP: f64 = 22.0;
/// Line height as a multiple of the text size.
const LINE: f64 = 1.3;
/// Space between entries, as a multiple of the text size.
const ENTRY_GAP: f64 = 0.45;

/// What stands before a legend label.
#[derive(Debug, Clone, Copy)]
pub(crate) enum LegendMark {
    /// A filled square (a bar segment).
    Swatch(Ink),
    /// A filled square with a border (a shaded range).
    Band(Ink, Ink),
    /// A dashed line (the capacity).
    Dashed(Ink),
    /// A solid line with a dot (a data series).
    LineWithDot(Ink),
    /// A ring (a marked point).
    Ring(Ink),
}

/// One placed legend entry.
struct Placed {
    key: LegendMark,
    lines: Vec<String>,
    x: f64,
    y: f64,
}

/// A legend laid out for a given width.
pub(crate) struct Legend {
    placed: Vec<Placed>,
    height: f64,
    px: u32,
}

impl Legend {
    /// Lays `entries` out in rows across `width`, flowing left to right: an entry that does
    /// not fit beside the previous ones starts a new row, and a label wider than a whole row
    /// wraps onto more lines (that row is then as tall as it).
    pub(crate) fn layout(entries: Vec<(LegendMark, String)>, width: f64, sizes: &Sizes) -> Legend {
        let px = sizes.legend_px;
        let size = f64::from(px);
        let line = size * LINE;
        let label_width = width - KEY_WIDTH - KEY_GAP;
        let mut placed: Vec<Placed> = Vec::with_capacity(entries.len());
        let (mut x, mut y, mut tallest) = (0.0, 0.0, 0usize);
        for (key, label) in entries {
            let lines = wrap(&label, label_width, size);
            let entry_width = KEY_WIDTH
                + KEY_GAP
                + lines
                    .iter()
                    .map(|l| text_width(l, size))
                    .fold(0.0, f64::max);
            if x > 0.0 && (x + entry_width > width || lines.len() > 1) {
                y += tallest as f64 * line + size * ENTRY_GAP;
                x = 0.0;
                tallest = 0;
            }
            tallest = tallest.max(lines.len());
            placed.push(Placed { key, lines, x, y });
            x += entry_width + COLUMN_GAP;
        }
        let height = if placed.is_empty() {
            0.0
        } else {
            y + tallest as f64 * line + size * ENTRY_GAP
        };
        Legend { placed, height, px }
    }

    /// Height the legend needs.
    pub(crate) fn height(&self) -> f64 {
        self.height
    }

    /// Draws the legend with its top-left corner at `origin`.
    pub(crate) fn draw(
        &self,
        area: &DrawingArea<SVGBackend<'_>, Shift>,
        origin: (f64, f64),
    ) -> Result<(), ChartError> {
        let line = f64::from(self.px) * LINE;
        for entry in &self.placed {
            let x = (origin.0 + entry.x).round() as i32;
            let first = origin.1 + entry.y + line / 2.0;
            draw_key(area, entry.key, x, first.round() as i32)?;
            let text_x = x + (KEY_WIDTH + KEY_GAP) as i32;
            for (i, text) in entry.lines.iter().enumerate() {
                let y = (first + i as f64 * line).round() as i32;
                let style = font(self.px, INK.light, false).pos(Pos::new(HPos::Left, VPos::Center));
                area.draw(&Text::new(text.as_str(), (text_x, y), style))
                    .map_err(ChartError::drawing)?;
            }
        }
        Ok(())
    }
}

fn draw_key(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    key: LegendMark,
    x: i32,
    y: i32,
) -> Result<(), ChartError> {
    let end = x + KEY_WIDTH as i32;
    let result = match key {
        LegendMark::Swatch(color) => area.draw(&Rectangle::new(
            [(x + 4, y - 8), (end - 4, y + 8)],
            color.light.filled(),
        )),
        LegendMark::Band(fill, edge) => area
            .draw(&Rectangle::new(
                [(x + 4, y - 8), (end - 4, y + 8)],
                fill.light.filled(),
            ))
            .and_then(|()| {
                area.draw(&Rectangle::new(
                    [(x + 4, y - 8), (end - 4, y + 8)],
                    edge.light.stroke_width(1),
                ))
            }),
        LegendMark::Dashed(color) => area.draw(&DashedPathElement::new(
            vec![(x, y), (end, y)],
            6,
            3,
            color.light.stroke_width(2),
        )),
        LegendMark::LineWithDot(color) => area
            .draw(&PathElement::new(
                vec![(x, y), (end, y)],
                color.light.stroke_width(3),
            ))
            .and_then(|()| area.draw(&Circle::new((x + 12, y), 4, color.light.filled()))),
        LegendMark::Ring(color) => {
            area.draw(&Circle::new((x + 12, y), 7, color.light.stroke_width(3)))
        }
    };
    result.map_err(ChartError::drawing)
}
