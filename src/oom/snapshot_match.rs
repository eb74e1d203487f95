//! A memory readout ([`super::snapshot`]) matched with a scenario: the catalog card
//! `nvidia-smi` names, the process that is the run, and the readout with the scenario's estimate
//! ([`SnapshotDiagnosis`], also the JSON). [`crate::present::snapshot_report`] writes it out.

use serde::Serialize;

use super::snapshot::{SmiGpu, SmiProcess, Snapshot};
use crate::estimate::{Estimate, GpuCatalog};

/// A readout with the scenario's estimate (the JSON output).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SnapshotDiagnosis {
    /// What the readout says.
    pub(crate) snapshot: Snapshot,
    /// The scenario's estimate, when one was given.
    pub(crate) estimate: Option<Estimate>,
}

/// The catalog card whose name is the one `nvidia-smi` prints (`NVIDIA GeForce RTX 3060`
/// matches `NVIDIA GeForce RTX 3060 12GB`, not `… 3060 Ti`), when exactly one is.
pub(crate) fn card_named(snapshot: &Snapshot, catalog: &GpuCatalog) -> Option<String> {
    let Snapshot::NvidiaSmi { gpus, .. } = snapshot else {
        return None;
    };
    let name = gpus.first()?.name.as_deref()?.to_ascii_lowercase();
    let mut hits = catalog.iter().filter(|g| {
        let n = g.name.to_ascii_lowercase();
        // The catalog may add the memory size the card name lacks: " 12GB".
        let size_suffix = |r: &str| {
            r.strip_prefix(' ')
                .and_then(|r| r.strip_suffix("gb"))
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        };
        n == name || n.strip_prefix(&name).is_some_and(size_suffix)
    });
    match (hits.next(), hits.next()) {
        (Some(g), None) => Some(g.id.clone()),
        _ => None,
    }
}

/// The process `nvidia-smi` shows for the run: the largest compute process on the first GPU.
pub(crate) fn run_process<'a>(
    gpus: &[SmiGpu],
    processes: &'a [SmiProcess],
) -> Option<&'a SmiProcess> {
    let gpu = gpus.first().and_then(|g| g.index).unwrap_or(0);
    processes
        .iter()
        .filter(|p| p.gpu == gpu && p.kind.contains('C'))
        .max_by_key(|p| p.bytes)
}
