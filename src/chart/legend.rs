//! A legend laid out in rows under the plot, flowing left to right, sized by the generous
//! text estimate so that no label overlaps the next or runs off the picture.

use plotters::backend::SVGBackend;
use plotters::coord::Shift;
use plotters::drawing::DrawingArea;
use plotters::element::{Circle, DashedPathElement, PathElement, Rectangle, Text};
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{Color, RGBColor};

use super::text::{fit, font, text_width};
use super::{ChartError, INK};

/// Width of the key (swatch, line or marker) before each label.
const KEY_WIDTH: f64 = 24.0;
/// Space between key and label.
const KEY_GAP: f64 = 7.0;
/// Space after a label before the next entry.
const ENTRY_GAP: f64 = 22.0;
/// Legend text size in pixels.
const LEGEND_PX: u32 = 17;
/// Smallest size a too-long label may shrink to before it is cut.
const LEGEND_MIN_PX: u32 = 13;
/// Most rows the legend may take; more entries go into a grid of columns.
const MAX_ROWS: usize = 5;

/// What stands before a legend label.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Key {
    /// A filled square (a bar segment).
    Swatch(RGBColor),
    /// A dashed line (the capacity).
    Dashed(RGBColor),
    /// A solid line with a dot (a data series).
    LineWithDot(RGBColor),
    /// A ring (a marked point).
    Ring(RGBColor),
}

/// One placed legend entry.
struct Placed {
    key: Key,
    label: String,
    px: u32,
    x: f64,
    row: usize,
}

/// A legend laid out for a given width.
pub(crate) struct Legend {
    placed: Vec<Placed>,
    rows: usize,
}

impl Legend {
    /// Lays `entries` out in rows no wider than `width`, flowing left to right; when that
    /// takes more than [`MAX_ROWS`] rows, in a grid of equal columns (read top to bottom)
    /// with labels shrunk or cut to the column width.
    pub(crate) fn layout(entries: Vec<(Key, String)>, width: f64) -> Legend {
        let count = entries.len();
        let flowed = Self::flow(entries.clone(), width);
        if flowed.rows <= MAX_ROWS {
            return flowed;
        }
        let columns = count.div_ceil(MAX_ROWS);
        let rows = count.div_ceil(columns);
        let column_width = width / columns as f64;
        let label_width = column_width - KEY_WIDTH - KEY_GAP - KEY_GAP;
        let placed = entries
            .into_iter()
            .enumerate()
            .map(|(i, (key, label))| {
                let (label, px) = fit(&label, label_width, (LEGEND_PX, LEGEND_MIN_PX), false);
                Placed {
                    key,
                    label,
                    px,
                    x: (i / rows) as f64 * column_width,
                    row: i % rows,
                }
            })
            .collect();
        Legend { placed, rows }
    }

    fn flow(entries: Vec<(Key, String)>, width: f64) -> Legend {
        let mut placed = Vec::with_capacity(entries.len());
        let (mut x, mut row) = (0.0, 0);
        for (key, label) in entries {
            let label_width = width - KEY_WIDTH - KEY_GAP;
            let (label, px) = fit(&label, label_width, (LEGEND_PX, LEGEND_MIN_PX), false);
            let entry_width = KEY_WIDTH + KEY_GAP + text_width(&label, f64::from(px));
            if x > 0.0 && x + entry_width > width {
                x = 0.0;
                row += 1;
            }
            placed.push(Placed {
                key,
                label,
                px,
                x,
                row,
            });
            x += entry_width + ENTRY_GAP;
        }
        let rows = if placed.is_empty() { 0 } else { row + 1 };
        Legend { placed, rows }
    }

    /// Height the legend needs.
    pub(crate) fn height(&self) -> f64 {
        self.rows as f64 * row_height()
    }

    /// Draws the legend with its top-left corner at `origin`.
    pub(crate) fn draw(
        &self,
        area: &DrawingArea<SVGBackend<'_>, Shift>,
        origin: (f64, f64),
    ) -> Result<(), ChartError> {
        for entry in &self.placed {
            let x = (origin.0 + entry.x).round() as i32;
            let y = (origin.1 + (entry.row as f64 + 0.5) * row_height()).round() as i32;
            draw_key(area, entry.key, x, y)?;
            let style = font(entry.px, INK, false).pos(Pos::new(HPos::Left, VPos::Center));
            let text_x = x + (KEY_WIDTH + KEY_GAP) as i32;
            area.draw(&Text::new(entry.label.as_str(), (text_x, y), style))
                .map_err(ChartError::drawing)?;
        }
        Ok(())
    }
}

fn row_height() -> f64 {
    f64::from(LEGEND_PX) * 1.7
}

fn draw_key(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    key: Key,
    x: i32,
    y: i32,
) -> Result<(), ChartError> {
    let end = x + KEY_WIDTH as i32;
    let result = match key {
        Key::Swatch(color) => area.draw(&Rectangle::new(
            [(x + 4, y - 8), (end - 4, y + 8)],
            color.filled(),
        )),
        Key::Dashed(color) => area.draw(&DashedPathElement::new(
            vec![(x, y), (end, y)],
            6,
            3,
            color.stroke_width(2),
        )),
        Key::LineWithDot(color) => area
            .draw(&PathElement::new(
                vec![(x, y), (end, y)],
                color.stroke_width(3),
            ))
            .and_then(|()| area.draw(&Circle::new((x + 12, y), 4, color.filled()))),
        Key::Ring(color) => area.draw(&Circle::new((x + 12, y), 7, color.stroke_width(3))),
    };
    result.map_err(ChartError::drawing)
}
