//! Charts as SVG, drawn with plotters: the memory breakdown (a stacked bar against the GPU's
//! capacity) and the sweep (peak memory against micro-batch or block size).
//!
//! The caller passes already-localized strings and a number formatter; this module knows
//! nothing of estimates or locales. Output is a fixed 720×420 picture with a white
//! background (readable on dark pages too), a `<title>`, and a legend under the plot laid out
//! with a generous text-width estimate so Chinese and Spanish labels fit. Same input,
//! byte-identical SVG. Pure: no I/O.
//!
//! Colours: segments follow [Okabe–Ito](https://jfly.uni-koeln.de/color/) in input order
//! (`#0072B2`, `#E69F00`, `#009E73`, `#CC79A7`, `#56B4E9`, `#999999`, `#F0E442`); the capacity
//! line is dashed `#C00020`; the sweep line is `#0072B2`; the largest-fit marker (a vertical
//! line and a ring around its point) is `#009E73`.

mod axis;
mod breakdown;
mod frame;
mod legend;
mod sweep;
mod text;

use std::fmt;

use plotters::style::RGBColor;

/// Width of every chart in SVG user units (the page scales it with `width: 100%`).
pub(crate) const WIDTH: u32 = 720;
/// Height of every chart in SVG user units.
pub(crate) const HEIGHT: u32 = 420;
/// Blank border around the drawing.
pub(crate) const MARGIN: f64 = 16.0;
/// Tick label size in pixels (the page scales the chart down on phones, so sizes are large).
pub(crate) const TICK_PX: u32 = 16;
/// Axis description size in pixels.
pub(crate) const DESC_PX: u32 = 17;
/// Text and axis colour.
pub(crate) const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
/// Colour of the capacity line.
pub(crate) const CAPACITY_COLOR: RGBColor = RGBColor(0xC0, 0x00, 0x20);
/// Segment colours in stacking order (Okabe–Ito, distinguishable with colour-blindness);
/// a chart with more segments than colours starts over.
pub(crate) const PALETTE: [RGBColor; 7] = [
    RGBColor(0x00, 0x72, 0xB2), // blue: weights
    RGBColor(0xE6, 0x9F, 0x00), // orange: gradients
    RGBColor(0x00, 0x9E, 0x73), // green: optimizer
    RGBColor(0xCC, 0x79, 0xA7), // pink: activations
    RGBColor(0x56, 0xB4, 0xE9), // sky blue: logits
    RGBColor(0x99, 0x99, 0x99), // grey: overhead
    RGBColor(0xF0, 0xE4, 0x42), // yellow
];
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
    /// Capacity line: legend text (e.g. "RTX 4070: 11.72 GiB") and bytes.
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
    /// Points with strictly ascending `x` (powers of two typically).
    pub points: Vec<SweepPoint>,
    /// Capacity line: legend text and bytes.
    pub capacity: Option<(String, u64)>,
    /// Marker of the largest value that fits: legend text (e.g. "largest that fits: 8") and x.
    pub max_fit: Option<(String, u64)>,
    /// Formats a GiB value for tick labels in the locale's style.
    pub format_gib: &'a dyn Fn(f64) -> String,
    /// Space the x axis by powers of two instead of linearly.
    pub log2_x: bool,
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

/// Draws the breakdown chart as a standalone SVG document.
pub fn breakdown_svg(chart: &BreakdownChart<'_>) -> Result<String, ChartError> {
    breakdown::draw(chart)
}

/// Draws the sweep chart as a standalone SVG document.
pub fn sweep_svg(chart: &SweepChart<'_>) -> Result<String, ChartError> {
    sweep::draw(chart)
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
