//! A linear f64 axis whose ticks sit exactly at given values (the swept sizes), so a log₂
//! axis shows 1, 2, 4, 8 … instead of plotters' round numbers of log₂.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

/// Linear mapping of `lo..hi` with caller-chosen tick positions.
pub(crate) struct TickedAxis {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl TickedAxis {
    /// An axis over `lo..hi` (`hi > lo`) with ticks at `ticks`.
    pub(crate) fn new(lo: f64, hi: f64, ticks: Vec<f64>) -> Self {
        TickedAxis { lo, hi, ticks }
    }
}

impl Ranged for TickedAxis {
    // Labels always come from the chart's own formatter; this only satisfies plotters' bound.
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let fraction = (value - self.lo) / (self.hi - self.lo);
        let length = f64::from(limit.1 - limit.0);
        limit.0 + (length * fraction).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Bold points carry labels and grid lines; there are no light ones.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}
