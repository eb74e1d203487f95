//! Charts as SVG, drawn with plotters: the memory breakdown (a stacked bar against the GPU's
//! capacity), the sweep (peak memory against micro-batch or block size) and the stacked areas
//! (memory's parts against a generation's context length).
//!
//! The caller passes already-localized strings and a number formatter; this module knows
//! nothing of estimates or locales. Each chart comes in two [`Layout`]s: `Wide` (720 units,
//! for desktops) and `Narrow` (360 units, for phones), so that its text
//! stays at least 11 CSS px wherever the page shows it. The height follows the legend, whose
//! labels (and the title) wrap onto more lines instead of being cut, with a generous
//! text-width estimate so Chinese and Spanish labels fit. Each SVG has a `<title>` and draws
//! its own background in the reader's colour scheme (a `<style>` with `prefers-color-scheme:
//! dark` recolours it). Same input, byte-identical SVG. Pure: no I/O.
//!
//! Colours ([`Ink`]: light scheme, then dark): segments follow
//! [Okabe–Ito](https://jfly.uni-koeln.de/color/) hues in input order, darkened on white and
//! lightened on the dark background so that each keeps 3:1 against it; text keeps 4.5:1. The
//! capacity line is dashed `#C00020`; the sweep line is `#0072B2`; the largest-fit marker (a
//! vertical line and a ring around its point) is `#009E73`.

mod axis;
mod breakdown;
mod frame;
mod legend;
mod stacked;
mod sweep;
mod text;

use std::fmt;

use plotters::style::RGBColor;

/// Blank border around the drawing.
pub(crate) const MARGIN: f64 = 16.0;

/// A colour in the light and in the dark colour scheme.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ink {
    /// Drawn in the SVG (the light scheme).
    pub(crate) light: RGBColor,
    /// What the dark scheme's `<style>` turns it into.
    pub(crate) dark: RGBColor,
}

/// Shorthand for an [`Ink`] from two `0xRRGGBB` values.
const fn ink(light: u32, dark: u32) -> Ink {
    const fn rgb(c: u32) -> RGBColor {
        RGBColor((c >> 16) as u8, (c >> 8) as u8, c as u8)
    }
    Ink {
        light: rgb(light),
        dark: rgb(dark),
    }
}

/// The chart's background (the page's own in each scheme).
pub(crate) const BACKGROUND: Ink = ink(0xFFFFFF, 0x14171B);
/// Text and axis colour.
pub(crate) const INK: Ink = ink(0x222222, 0xE3E6EA);
/// Colour of the capacity line.
pub(crate) const CAPACITY_COLOR: Ink = ink(0xC00020, 0xFF6B7A);
/// Colour of the sweep's line.
pub(crate) const SERIES_COLOR: Ink = ink(0x0072B2, 0x56B4E9);
/// Colour of the largest-fit marker.
pub(crate) const FIT_COLOR: Ink = ink(0x009E73, 0x00C08B);
/// Fill of the shaded range around the sweep's line (its edges are drawn in
/// [`SERIES_COLOR`], which carries the contrast).
pub(crate) const RANGE_COLOR: Ink = ink(0xB3D4E8, 0x23445A);
/// Segment colours in stacking order (Okabe–Ito hues, distinguishable with colour-blindness);
/// a chart with more segments than colours starts over.
pub(crate) const PALETTE: [Ink; 7] = [
    ink(0x0072B2, 0x56B4E9), // blue
    ink(0xB86E00, 0xE69F00), // orange
    ink(0x007A5A, 0x00B386), // green
    ink(0xB0538A, 0xE08BC0), // pink
    ink(0x6A4FB0, 0xB8A4FF), // violet
    ink(0x6E6E6E, 0xA0A0A0), // grey
    ink(0x7A6C00, 0xF0E442), // yellow
];
/// Every colour the charts draw text with (4.5:1 against [`BACKGROUND`] in both schemes).
pub(crate) const TEXT_INKS: [Ink; 1] = [INK];
/// Every colour the charts draw marks with (3:1 against [`BACKGROUND`] in both schemes).
pub(crate) const MARK_INKS: [Ink; 11] = [
    INK,
    CAPACITY_COLOR,
    SERIES_COLOR,
    FIT_COLOR,
    PALETTE[0],
    PALETTE[1],
    PALETTE[2],
    PALETTE[3],
    PALETTE[4],
    PALETTE[5],
    PALETTE[6],
];

/// Which of a chart's two drawings to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// 720 units wide: pages wider than 540 px.
    Wide,
    /// 360 units wide, smaller text and fewer ticks: phones.
    Narrow,
}

/// Sizes of a [`Layout`], in SVG user units.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizes {
    /// Width of the picture.
    pub(crate) width: u32,
    /// Height of the plot area (axes and their labels included).
    pub(crate) plot_height: u32,
    /// Tick label size.
    pub(crate) tick_px: u32,
    /// Axis description size.
    pub(crate) desc_px: u32,
    /// Legend text size.
    pub(crate) legend_px: u32,
    /// Title size.
    pub(crate) title_px: u32,
    /// At most this many ticks on a value axis.
    pub(crate) max_ticks: usize,
}

impl Layout {
    /// The sizes of this layout. Wide text is 16 units: shown 540 px wide (the narrowest page
    /// that gets it, 508 px of content) that is 11.3 px. Narrow text is 13 units: shown at
    /// 330 px or more it stays above 11 px.
    pub(crate) fn sizes(self) -> Sizes {
        match self {
            Layout::Wide => Sizes {
                width: 720,
                plot_height: 260,
                tick_px: 16,
                desc_px: 17,
                legend_px: 17,
                title_px: 22,
                max_ticks: 10,
            },
            Layout::Narrow => Sizes {
                width: 360,
                plot_height: 230,
                tick_px: 13,
                desc_px: 13,
                legend_px: 14,
                title_px: 16,
                max_ticks: 6,
            },
        }
    }
}

/// Bytes in one GiB; axes are drawn in GiB.
const GIB: f64 = (1u64 << 30) as f64;

/// One part of the breakdown bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Legend text, already localized (e.g. "Activations: 4.50 GiB").
    pub label: String,
    /// Size of the part.
    pub bytes: u64,
}

/// The memory breakdown: segments stacked left to right in one bar, with the GPU's capacity.
pub struct BreakdownChart<'a> {
    /// Chart title (also the SVG's `<title>`).
    pub title: String,
    /// Axis label, e.g. "GiB".
    pub axis_label: String,
    /// Parts in stacking order; colours follow this order.
    pub segments: Vec<Segment>,
    /// Capacity line: legend text (e.g. "RTX 4070: 11.69 GiB") and bytes.
    pub capacity: Option<(String, u64)>,
    /// Formats a GiB value for tick labels in the locale's style.
    pub format_gib: &'a dyn Fn(f64) -> String,
}

/// One measured point of a sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepPoint {
    /// The swept value (micro-batch size, block size), > 0 when `log2_x`.
    pub x: u64,
    /// Peak memory at that value.
    pub peak_bytes: u64,
    /// The range of `peak_bytes` (low, high), shaded around the line when given.
    pub range: Option<(u64, u64)>,
}

/// The sweep: peak memory against the swept value, with capacity line and largest fit.
pub struct SweepChart<'a> {
    /// Chart title (also the SVG's `<title>`).
    pub title: String,
    /// X axis label, e.g. "micro-batch size".
    pub x_label: String,
    /// Y axis label, e.g. "peak memory (GiB)".
    pub y_label: String,
    /// Legend text of the line.
    pub series_label: String,
    /// Legend text of the shaded range (shown when any point has a range).
    pub range_label: String,
    /// Points with strictly ascending `x`.
    pub points: Vec<SweepPoint>,
    /// Capacity line: legend text and bytes.
    pub capacity: Option<(String, u64)>,
    /// Marker of the largest value that fits: legend text (e.g. "largest that fits: 8") and x.
    pub max_fit: Option<(String, u64)>,
    /// Formats a GiB value for tick labels in the locale's style.
    pub format_gib: &'a dyn Fn(f64) -> String,
    /// Formats an x value (tick labels, the value beyond the axis) as the page formats counts.
    pub format_x: &'a dyn Fn(u64) -> String,
    /// Formats bytes as the page's tables do, for the label of values beyond the y axis
    /// (the axis stops at 1.6 × capacity so that the region around it stays readable).
    pub format_bytes: &'a dyn Fn(u64) -> String,
    /// Space the x axis by powers of two instead of linearly.
    pub log2_x: bool,
}

/// One point of a stacked-area chart: the value and each layer's bytes there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackedPoint {
    /// The value on the x axis (a context length).
    pub x: u64,
    /// Bytes of each layer, bottom first (as [`StackedChart::layers`]).
    pub layers: Vec<u64>,
}

/// Memory's parts stacked against a value, with the capacity line and the largest value that fits.
pub struct StackedChart<'a> {
    /// Chart title (also the SVG's `<title>`).
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Legend text of each layer, bottom first; colours follow this order.
    pub layers: Vec<String>,
    /// Points with strictly ascending `x`.
    pub points: Vec<StackedPoint>,
    /// Capacity line: legend text and bytes.
    pub capacity: Option<(String, u64)>,
    /// The largest value that fits: legend text and x (a vertical line).
    pub max_fit: Option<(String, u64)>,
    /// Formats a GiB value for tick labels in the locale's style.
    pub format_gib: &'a dyn Fn(f64) -> String,
    /// Formats an x value as the page formats counts.
    pub format_x: &'a dyn Fn(u64) -> String,
}

/// Why a chart could not be drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChartError {
    /// The breakdown has no segments.
    NoSegments,
    /// The sweep has no points.
    NoPoints,
    /// Sweep points must be sorted by strictly ascending `x`.
    UnsortedX {
        /// The x before the offending one.
        previous: u64,
        /// The x that is not larger than the one before it.
        next: u64,
    },
    /// A log₂ x axis cannot show `x = 0`.
    ZeroOnLogAxis,
    /// plotters failed while drawing (a bug here rather than bad input).
    Drawing(String),
}

impl ChartError {
    fn drawing(error: impl fmt::Display) -> Self {
        ChartError::Drawing(error.to_string())
    }
}

impl fmt::Display for ChartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChartError::NoSegments => {
                f.write_str("breakdown chart has no segments: pass at least one memory component")
            }
            ChartError::NoPoints => {
                f.write_str("sweep chart has no points: pass at least one (x, peak) pair")
            }
            ChartError::UnsortedX { previous, next } => write!(
                f,
                "sweep points must have strictly ascending x, but {next} follows {previous}: sort \
                 them and drop duplicates"
            ),
            ChartError::ZeroOnLogAxis => f.write_str(
                "sweep point with x = 0 cannot go on a log2 axis: drop it or use a linear axis",
            ),
            ChartError::Drawing(msg) => write!(f, "drawing the chart failed: {msg}"),
        }
    }
}

impl std::error::Error for ChartError {}

/// Draws the breakdown chart as a standalone SVG document in the wide layout.
pub fn breakdown_svg(chart: &BreakdownChart<'_>) -> Result<String, ChartError> {
    breakdown::draw(chart, Layout::Wide)
}

/// Draws the breakdown chart as a standalone SVG document in `layout`.
pub fn breakdown_svg_in(chart: &BreakdownChart<'_>, layout: Layout) -> Result<String, ChartError> {
    breakdown::draw(chart, layout)
}

/// Draws the sweep chart as a standalone SVG document in the wide layout.
pub fn sweep_svg(chart: &SweepChart<'_>) -> Result<String, ChartError> {
    sweep::draw(chart, Layout::Wide)
}

/// Draws the sweep chart as a standalone SVG document in `layout`.
pub fn sweep_svg_in(chart: &SweepChart<'_>, layout: Layout) -> Result<String, ChartError> {
    sweep::draw(chart, layout)
}

/// Draws the stacked-area chart as a standalone SVG document in `layout`.
pub fn stacked_svg_in(chart: &StackedChart<'_>, layout: Layout) -> Result<String, ChartError> {
    stacked::draw(chart, layout)
}

/// Errors unless `xs` rises strictly.
fn check_ascending(xs: impl Iterator<Item = u64>) -> Result<(), ChartError> {
    let mut previous: Option<u64> = None;
    for next in xs {
        if let Some(previous) = previous.filter(|p| next <= *p) {
            return Err(ChartError::UnsortedX { previous, next });
        }
        previous = Some(next);
    }
    Ok(())
}

/// Bytes as GiB for plotting.
fn gib(bytes: u64) -> f64 {
    bytes as f64 / GIB
}

/// Upper end of a value axis that must show `max` (GiB) with some headroom; 1 GiB when empty.
fn axis_top(max: f64) -> f64 {
    if max > 0.0 {
        max * 1.08
    } else {
        1.0
    }
}
