//! Which catalog cards a printed capacity can be.
//!
//! A card's capacity as PyTorch prints it moves with the driver, with ECC and with the operating
//! system: the same A100 80GB prints 79.14 to 79.35 GiB across drivers, an RTX 6000 Ada 47.48 GiB
//! with ECC off and 44.43 GiB with it on, an RTX 3060 11.76 GiB on Linux and 12.00 GiB under
//! Windows, and a T4 14.75 GiB on older drivers and 14.57 GiB on driver 535.183. A card matches
//! when one of its capacities (the Linux figure and its ECC, Windows and newer-driver variants)
//! is within [`tolerance`] of the printed one. A card whose figure is the printed one
//! within its rounding alone is *exact*; when exactly one card is exact it is the card (with the
//! matched figure as its capacity), and the others within the spread are named beside it; a card
//! only within the spread is named, never taken. A Windows
//! traceback (`C:\…` paths) is matched against Windows figures where the catalog has them.

use serde::Serialize;

use super::message::PrintedSize;
use crate::estimate::{GpuCatalog, VariantKind};

/// Driver-to-driver spread of one card's capacity: at least 100 MiB, or 0.25 % of the capacity
/// for large cards (0.2 GiB at 80 GiB, the A100 80GB's spread across drivers).
pub(crate) fn tolerance(printed: PrintedSize) -> u64 {
    let spread = (100u64 << 20).max(printed.bytes / 400);
    printed.tolerance.saturating_add(spread)
}

/// A catalog card the printed capacity can be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct CardMatch {
    /// Its catalog id.
    pub(crate) id: String,
    /// Its name.
    pub(crate) name: String,
    /// The setting whose capacity matched (none: the Linux figure with the default ECC state).
    pub(crate) variant: Option<VariantKind>,
    /// The matched capacity.
    pub(crate) capacity_bytes: u64,
    /// The figure is the printed one within the printed rounding alone.
    pub(crate) exact: bool,
    /// Whether the card has bf16.
    #[serde(skip)]
    pub(crate) bf16: bool,
}

/// The cards whose capacity (or a variant's) matches `printed`, closest first, one entry per
/// card. `windows`: prefer the cards' Windows figures.
pub(crate) fn matching(
    printed: PrintedSize,
    windows: bool,
    catalog: &GpuCatalog,
) -> Vec<CardMatch> {
    let tol = tolerance(printed);
    let mut out: Vec<(u64, CardMatch)> = Vec::new();
    for g in catalog.iter() {
        let has_windows = g.variants.iter().any(|v| v.when == VariantKind::Windows);
        let figures = std::iter::once((None, g.capacity_bytes))
            .chain(g.variants.iter().map(|v| (Some(v.when), v.capacity_bytes)));
        let best = figures
            .filter(|(when, _)| !windows || !has_windows || *when == Some(VariantKind::Windows))
            .map(|(when, c)| (c.abs_diff(printed.bytes), when, c))
            .filter(|(d, _, _)| *d <= tol)
            .min_by_key(|(d, _, _)| *d);
        if let Some((d, variant, capacity_bytes)) = best {
            out.push((
                d,
                CardMatch {
                    id: g.id.clone(),
                    name: g.name.clone(),
                    variant,
                    capacity_bytes,
                    exact: d <= printed.tolerance.max(1),
                    bf16: g.bf16,
                },
            ));
        }
    }
    out.sort_by_key(|(d, _)| *d);
    out.into_iter().map(|(_, m)| m).collect()
}

/// The one card the matches settle on: the only exact one.
pub(crate) fn settled(matches: &[CardMatch]) -> Option<&CardMatch> {
    let mut exact = matches.iter().filter(|c| c.exact);
    match (exact.next(), exact.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}
