//! Memory readouts people paste beside (or instead of) an error: `torch.cuda.memory_summary()`
//! and `nvidia-smi` (its table, and `--query-gpu=…,memory.total,memory.used --format=csv`), read
//! like a message: what the process holds, what the allocator caches, what the card holds in all,
//! and, with a scenario, how that compares with the estimate.
//!
//! - `memory_summary()` prints one row per metric (`Allocated memory`, `GPU reserved memory`,
//!   `Non-releasable memory`) with `Cur Usage` and `Peak Usage` columns, each a whole number of
//!   B, KiB, MiB or GiB (PyTorch's `_format_size` truncates), and a header with `CUDA OOMs: N`.
//! - `nvidia-smi`'s table prints per GPU `USED MiB / TOTAL MiB` and, under `Processes:`, each
//!   process's usage. Its total is the card's memory before the driver's reserve: PyTorch's
//!   capacity is a few hundred MiB less. What it shows for a process is everything that process
//!   holds: its CUDA context and PyTorch's whole cache, not only tensors.

use serde::Serialize;

use super::message::size;

/// Current and peak value of a `memory_summary()` row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Usage {
    /// `Cur Usage`.
    pub(crate) current: u64,
    /// `Peak Usage`.
    pub(crate) peak: u64,
}

/// One GPU of an `nvidia-smi` readout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct SmiGpu {
    /// Its index, when printed.
    pub(crate) index: Option<u64>,
    /// Its name, when printed.
    pub(crate) name: Option<String>,
    /// `memory.total`.
    pub(crate) total: u64,
    /// `memory.used`.
    pub(crate) used: u64,
}

/// One process of `nvidia-smi`'s `Processes:` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct SmiProcess {
    /// The GPU it runs on.
    pub(crate) gpu: u64,
    /// Its process id.
    pub(crate) pid: u64,
    /// `C` (compute), `G` (graphics) or both.
    pub(crate) kind: String,
    /// Its name.
    pub(crate) name: String,
    /// Its usage.
    pub(crate) bytes: u64,
}

/// A memory readout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Snapshot {
    /// `torch.cuda.memory_summary()`.
    MemorySummary {
        /// The device, from the title.
        device: Option<u64>,
        /// `Allocated memory`: tensors.
        allocated: Usage,
        /// `GPU reserved memory`: PyTorch's cache in all.
        reserved: Usage,
        /// `Non-releasable memory`: cached blocks split by live tensors.
        non_releasable: Option<Usage>,
        /// `CUDA OOMs: N` so far.
        ooms: Option<u64>,
    },
    /// `nvidia-smi`, table or CSV.
    NvidiaSmi {
        /// The GPUs.
        gpus: Vec<SmiGpu>,
        /// The processes, when the table lists them.
        processes: Vec<SmiProcess>,
    },
}

/// Reads a memory readout from `text`, if it holds one.
pub(crate) fn read(text: &str) -> Option<Snapshot> {
    if text.contains("memory summary") && text.contains("Allocated memory") {
        return memory_summary(text);
    }
    if text.contains("memory.total") {
        return smi_csv(text);
    }
    if text.contains("MiB /") && (text.contains("NVIDIA-SMI") || text.contains("Memory-Usage")) {
        return smi_table(text);
    }
    None
}

/// A size such as `8914 MiB`, `12 GiB`, `512 B`.
fn bytes(cell: &str) -> Option<u64> {
    size(cell.trim()).map(|(s, _)| s.bytes)
}

/// The number after `label` on the same line.
fn count_after(text: &str, label: &str) -> Option<u64> {
    let at = text.find(label)? + label.len();
    let digits: String = text[at..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// `torch.cuda.memory_summary()`.
fn memory_summary(text: &str) -> Option<Snapshot> {
    let row = |label: &str| -> Option<Usage> {
        let line = text.lines().find(|l| {
            l.trim_start_matches(['|', ' '])
                .to_ascii_lowercase()
                .starts_with(label)
        })?;
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let current = bytes(cells.get(2)?)?;
        let peak = bytes(cells.get(3)?)?;
        Some(Usage { current, peak })
    };
    let allocated = row("allocated memory")?;
    let reserved = row("gpu reserved memory").or_else(|| row("gpu cached memory"))?;
    Some(Snapshot::MemorySummary {
        device: count_after(text, "device ID"),
        allocated,
        reserved,
        non_releasable: row("non-releasable memory"),
        ooms: count_after(text, "CUDA OOMs:"),
    })
}

/// `USED MiB / TOTAL MiB` in a table cell.
fn used_of_total(cell: &str) -> Option<(u64, u64)> {
    let (used, total) = cell.split_once('/')?;
    let with_space = |s: &str| s.trim().replace("MiB", " MiB").replace("GiB", " GiB");
    Some((bytes(&with_space(used))?, bytes(&with_space(total))?))
}

/// `nvidia-smi`'s table: the GPU lines and the `Processes:` table.
fn smi_table(text: &str) -> Option<Snapshot> {
    let mut gpus = Vec::new();
    let mut processes = Vec::new();
    let mut header: Option<(Option<u64>, Option<String>)> = None;
    let mut in_processes = false;
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').collect();
        if line.contains("Processes:") {
            in_processes = true;
            continue;
        }
        if in_processes {
            if let Some(p) = cells.get(1).and_then(|c| smi_process(c)) {
                processes.push(p);
            }
            continue;
        }
        let first: Vec<&str> = cells
            .get(1)
            .map_or(Vec::new(), |c| c.split_whitespace().collect());
        if let Some(mem) = cells
            .iter()
            .find_map(|c| used_of_total(c).filter(|_| c.contains("MiB /")))
        {
            let (index, name) = header.take().unwrap_or((None, None));
            gpus.push(SmiGpu {
                index,
                name,
                used: mem.0,
                total: mem.1,
            });
        } else if let [index, rest @ ..] = first.as_slice() {
            if let Ok(i) = index.parse::<u64>() {
                let name = match rest {
                    [name @ .., "On" | "Off"] => name,
                    name => name,
                };
                header = Some((Some(i), Some(name.join(" ")).filter(|n| !n.is_empty())));
            }
        }
    }
    (!gpus.is_empty()).then_some(Snapshot::NvidiaSmi { gpus, processes })
}

/// A row of the `Processes:` table: `GPU [GI CI] PID TYPE NAME USAGE`.
fn smi_process(cell: &str) -> Option<SmiProcess> {
    let t: Vec<&str> = cell.split_whitespace().collect();
    let gpu = t.first()?.parse().ok()?;
    let usage = t.last()?;
    let bytes = bytes(&usage.replace("MiB", " MiB"))?;
    let kind_at = t
        .iter()
        .position(|w| matches!(*w, "C" | "G" | "C+G" | "M" | "M+C"))?;
    let pid = t.get(kind_at.checked_sub(1)?)?.parse().ok()?;
    Some(SmiProcess {
        gpu,
        pid,
        kind: t[kind_at].to_owned(),
        name: t.get(kind_at + 1..t.len() - 1)?.join(" "),
        bytes,
    })
}

/// `--query-gpu=…,memory.total,memory.used --format=csv[,noheader][,nounits]`; without units
/// the values are MiB.
fn smi_csv(text: &str) -> Option<Snapshot> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let header: Vec<String> = lines
        .find(|l| l.contains("memory.total"))?
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .collect();
    let col = |name: &str| header.iter().position(|h| h.starts_with(name));
    let (total_at, used_at) = (col("memory.total")?, col("memory.used")?);
    let value = |cell: &str| -> Option<u64> {
        let cell = cell.trim();
        bytes(cell).or_else(|| cell.parse::<u64>().ok().map(|n| n << 20))
    };
    let gpus: Vec<SmiGpu> = lines
        .filter_map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            Some(SmiGpu {
                index: col("index").and_then(|i| cells.get(i)?.trim().parse().ok()),
                name: col("name").and_then(|i| Some(cells.get(i)?.trim().to_owned())),
                total: value(cells.get(total_at)?)?,
                used: value(cells.get(used_at)?)?,
            })
        })
        .collect();
    (!gpus.is_empty()).then_some(Snapshot::NvidiaSmi {
        gpus,
        processes: Vec::new(),
    })
}
