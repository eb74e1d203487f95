//! The out-of-memory formats PyTorch has printed, each read with the meaning its versions give
//! the numbers, and the version range each format (and its hint) reveals.
//!
//! From the allocator sources (`THCCachingAllocator.cpp`, then `c10/cuda/CUDACachingAllocator.cpp`
//! and `aten/src/ATen/mps/MPSAllocator.mm`) and the messages they print:
//! - **0.4 to 1.3**: `(GPU 0; 5.93 GiB total capacity; 4.64 GiB already allocated; 54.94 MiB
//!   free; 233.05 MiB cached)`. `cached` is the cache's memory *not* in tensors (cached −
//!   allocated), so PyTorch reserved `already allocated + cached` in all.
//! - **1.4 to 2.0**: `(…; 9.18 GiB reserved in total by PyTorch)`: the cache's whole size. From
//!   1.10 the same string goes on `If reserved memory is >> allocated memory try setting
//!   max_split_size_mb to avoid fragmentation.` (the setting arrived in 1.10); a message without
//!   it is 1.4 to 1.9. `free` is missing in some pastes: it is then unknown, not zero.
//! - **2.1**: `GPU 0 has a total capacty of …` (sic) `of which … is free.`, then, where NVML
//!   answers, `Process N has … memory in use.` lines and `Including non-PyTorch memory, this
//!   process has … memory in use.`, then `Of the allocated memory … is allocated by PyTorch, and
//!   … is reserved by PyTorch but unallocated.` and a `max_split_size_mb` hint.
//! - **2.2 and later**: the same sentences spelled `capacity`, the hint naming
//!   `expandable_segments:True` (available from 2.1), and, with CUDA graphs, `…, with … allocated
//!   in private pools (e.g., CUDA Graphs), and …`.
//! - **MPS (Apple GPUs, 2.0 and later)**: `MPS backend out of memory (MPS allocated: …, other
//!   allocations: …, max allowed: …). Tried to allocate … on private pool.` Unified memory: the
//!   limit is a share of the Mac's RAM (`PYTORCH_MPS_HIGH_WATERMARK_RATIO`), not a card.

use serde::Serialize;

use super::message::{err, OomMessage, ParseError, PrintedSize, ProcessLine, Text};

/// Which of PyTorch's message formats the text uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum MessageFormat {
    /// `(GPU 0; … total capacity; … already allocated; … free; … cached | reserved in total by
    /// PyTorch)`.
    Pytorch1,
    /// `GPU 0 has a total capacity of … of which … is free. …`.
    Pytorch2,
    /// `MPS backend out of memory (MPS allocated: …, other allocations: …, max allowed: …)`.
    Mps,
}

/// The allocator setting a message suggests in its last sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Hint {
    /// `try setting max_split_size_mb` (1.10 to 2.1).
    MaxSplitSizeMb,
    /// `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (2.2 and later).
    ExpandableSegments,
    /// `PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0` (MPS).
    MpsHighWatermark,
}

/// The PyTorch versions that print a message's format, and the allocator settings they have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct VersionRange {
    /// The first version that prints it.
    pub(crate) from: &'static str,
    /// The last, or none for "and later".
    pub(crate) to: Option<&'static str>,
    /// `PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:N` exists in all of them (1.10 on).
    pub(crate) max_split_size_mb: bool,
    /// `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` exists in all of them (2.1 on).
    pub(crate) expandable_segments: bool,
}

impl VersionRange {
    /// The range as text: `1.4–1.9`, `2.1`, `2.2+`.
    pub(crate) fn label(&self) -> String {
        match self.to {
            Some(to) if to == self.from => to.to_owned(),
            Some(to) => format!("{}–{to}", self.from),
            None => format!("{}+", self.from),
        }
    }
}

/// A range from its bounds and settings.
const fn range(
    from: &'static str,
    to: Option<&'static str>,
    max_split_size_mb: bool,
    expandable_segments: bool,
) -> VersionRange {
    VersionRange {
        from,
        to,
        max_split_size_mb,
        expandable_segments,
    }
}

/// How far after a message its hint sentence may be, in bytes of flattened text.
const HINT_REACH: usize = 600;

/// Reads the message whose `out of memory` starts at `at` in `t`.
pub(crate) fn read(t: &Text<'_>, at: usize) -> Result<OomMessage, ParseError> {
    if t.lower[..at].ends_with("mps backend ") {
        return read_mps(t, at);
    }
    let tried = t.after(at, at + 80, "tried to allocate").ok_or_else(|| {
        err(
            "\"Tried to allocate SIZE\" after \"out of memory\"",
            t.from(at),
        )
    })?;
    let (requested, rest) = t.size_at(tried).ok_or_else(|| {
        err(
            "a size such as 6.14 GiB after \"Tried to allocate\"",
            t.from(tried - "tried to allocate".len()),
        )
    })?;
    if t.flat[rest..].trim_start().starts_with('(') {
        read_v1(t, requested, rest)
    } else {
        read_v2(t, requested, rest)
    }
}

/// An empty message of `format` with the numbers every format prints.
fn message(
    format: MessageFormat,
    versions: VersionRange,
    requested: PrintedSize,
    capacity: PrintedSize,
) -> OomMessage {
    let zero = PrintedSize {
        bytes: 0,
        tolerance: 0,
    };
    OomMessage {
        format,
        versions,
        hint: None,
        expandable_segments_on: false,
        requested,
        gpu_index: None,
        capacity,
        free: None,
        process: None,
        allocated: zero,
        reserved_unallocated: zero,
        reserved: zero,
        private_pools: None,
        processes: Vec::new(),
        messages_in_text: 1,
        windows: false,
        frames: Vec::new(),
        code: Vec::new(),
    }
}

/// `a + b`, tolerances added.
fn plus(a: PrintedSize, b: PrintedSize) -> PrintedSize {
    PrintedSize {
        bytes: a.bytes.saturating_add(b.bytes),
        tolerance: a.tolerance.saturating_add(b.tolerance),
    }
}

/// The hint sentence between `from` and the next message or [`HINT_REACH`].
fn hint(t: &Text<'_>, from: usize) -> Option<Hint> {
    let until = (from + HINT_REACH).min(t.lower.len());
    let until = t.find(from, until, "out of memory").unwrap_or(until);
    let max_split = t.find(from, until, "max_split_size_mb");
    let expandable = t.find(from, until, "expandable_segments");
    match (max_split, expandable) {
        (Some(a), Some(b)) if b < a => Some(Hint::ExpandableSegments),
        (Some(_), _) => Some(Hint::MaxSplitSizeMb),
        (None, Some(_)) => Some(Hint::ExpandableSegments),
        (None, None) => None,
    }
}

/// `(GPU 0; 11.76 GiB total capacity; 8.91 GiB already allocated; 1.36 GiB free; 9.18 GiB
/// reserved in total by PyTorch)` or, up to 1.3, `…; 233.05 MiB cached)`.
fn read_v1(t: &Text<'_>, requested: PrintedSize, open: usize) -> Result<OomMessage, ParseError> {
    let start = t.find(open, t.flat.len(), "(").map_or(open, |i| i + 1);
    let close = t.find(start, start + 400, ")").ok_or_else(|| {
        err(
            "the closing \")\" of \"(GPU N; SIZE total capacity; …)\"",
            t.from(open),
        )
    })?;
    let inner = &t.flat[start..close];
    let (mut capacity, mut allocated, mut free, mut reserved, mut cached, mut gpu) =
        (None, None, None, None, None, None);
    for part in inner.split(';') {
        let part = part.trim();
        if let Some(n) = part.strip_prefix("GPU ") {
            gpu = n.trim().parse().ok();
            continue;
        }
        let (s, what) = super::message::size(part).ok_or_else(|| {
            err(
                "\"SIZE total capacity\", \"SIZE already allocated\", \"SIZE free\", \"SIZE cached\" or \"SIZE reserved in total by PyTorch\"",
                part,
            )
        })?;
        let what = what.trim().to_ascii_lowercase();
        if what.starts_with("total capacity") || what.starts_with("total capacty") {
            capacity = Some(s);
        } else if what.starts_with("already allocated") {
            allocated = Some(s);
        } else if what.starts_with("free") {
            free = Some(s);
        } else if what.starts_with("reserved") {
            reserved = Some(s);
        } else if what.starts_with("cached") {
            cached = Some(s);
        }
    }
    let need = |v: Option<PrintedSize>, what: &str| {
        v.ok_or_else(|| {
            err(
                &format!("\"SIZE {what}\" inside the parentheses"),
                t.from(open),
            )
        })
    };
    let capacity = need(capacity, "total capacity")?;
    let allocated = need(allocated, "already allocated")?;
    let hint = hint(t, close);
    let (versions, reserved, unallocated) = match (reserved, cached) {
        (Some(r), _) => {
            let versions = if hint == Some(Hint::MaxSplitSizeMb) {
                range("1.10", Some("2.0"), true, false)
            } else {
                range("1.4", Some("1.9"), false, false)
            };
            let unallocated = PrintedSize {
                bytes: r.bytes.saturating_sub(allocated.bytes),
                tolerance: r.tolerance + allocated.tolerance,
            };
            (versions, r, unallocated)
        }
        (None, Some(c)) => (range("0.4", Some("1.3"), false, false), plus(allocated, c), c),
        (None, None) => {
            return Err(err(
                "\"SIZE reserved in total by PyTorch\" (1.4 to 2.0) or \"SIZE cached\" (up to 1.3) inside the parentheses",
                t.from(open),
            ))
        }
    };
    let mut m = message(MessageFormat::Pytorch1, versions, requested, capacity);
    m.hint = hint;
    m.gpu_index = gpu;
    m.free = free;
    m.allocated = allocated;
    m.reserved = reserved;
    m.reserved_unallocated = unallocated;
    Ok(m)
}

/// `GPU 0 has a total capacity of … of which … is free. …` (2.1 spells it `capacty`).
fn read_v2(t: &Text<'_>, requested: PrintedSize, from: usize) -> Result<OomMessage, ParseError> {
    let expected_gpu = "\"GPU N has a total capacity of SIZE of which SIZE is free\" (PyTorch 2) or \"(GPU N; SIZE total capacity; …)\" (PyTorch 1)";
    let near = (from + 200).min(t.flat.len());
    let gpu_at = t
        .after(from, near, "gpu ")
        .ok_or_else(|| err(expected_gpu, t.from(from)))?;
    let gpu_index = t.flat[gpu_at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok());
    let (cap_at, typo) = match t.after(gpu_at, near, "total capacity of") {
        Some(i) => (i, false),
        None => (
            t.after(gpu_at, near, "total capacty of")
                .ok_or_else(|| err(expected_gpu, t.from(from)))?,
            true,
        ),
    };
    let (capacity, r) = t
        .size_at(cap_at)
        .ok_or_else(|| err("a size after \"total capacity of\"", t.from(cap_at)))?;
    let free_at = t
        .after(r, r + 40, "of which")
        .ok_or_else(|| err("\"of which SIZE is free\"", t.from(r)))?;
    let (free, r) = t
        .size_at(free_at)
        .ok_or_else(|| err("a size after \"of which\"", t.from(free_at)))?;
    let expected_alloc = "\"Of the allocated memory SIZE is allocated by PyTorch, and SIZE is reserved by PyTorch but unallocated\"";
    let alloc_at = t
        .after(r, t.flat.len(), "of the allocated memory")
        .ok_or_else(|| err(expected_alloc, t.from(r)))?;
    // Between the free memory and "Of the allocated memory": the processes NVML lists.
    let region_end = alloc_at - "of the allocated memory".len();
    let (processes, process) = processes(t, r, region_end)?;
    let (allocated, r3) = t
        .size_at(alloc_at)
        .ok_or_else(|| err("a size after \"Of the allocated memory\"", t.from(alloc_at)))?;
    let unalloc_end = t
        .find(r3, r3 + 300, "is reserved by pytorch but unallocated")
        .ok_or_else(|| err(expected_alloc, t.from(r3)))?;
    let private_pools = t
        .after(r3, unalloc_end, ", with ")
        .and_then(|i| t.size_at(i))
        .map(|(s, _)| s);
    let and_at = t
        .find(r3, unalloc_end, " and ")
        .map(|i| i + " and ".len())
        .ok_or_else(|| err(expected_alloc, t.from(r3)))?;
    let (unallocated, _) = t
        .size_at(and_at)
        .ok_or_else(|| err("a size after \"and\"", t.from(and_at)))?;
    let versions = if typo {
        range("2.1", Some("2.1"), true, true)
    } else {
        range("2.2", None, true, true)
    };
    let mut m = message(MessageFormat::Pytorch2, versions, requested, capacity);
    m.hint = hint(t, unalloc_end);
    m.gpu_index = gpu_index;
    m.free = Some(free);
    m.process = process;
    m.processes = processes;
    m.allocated = allocated;
    m.private_pools = private_pools;
    m.reserved_unallocated = unallocated;
    m.reserved = plus(allocated, unallocated);
    Ok(m)
}

/// The `Process N has SIZE memory in use` lines and `this process has SIZE memory in use`
/// between `from` and `until`, in one pass.
fn processes(
    t: &Text<'_>,
    from: usize,
    until: usize,
) -> Result<(Vec<ProcessLine>, Option<PrintedSize>), ParseError> {
    let mut lines = Vec::new();
    let mut own = None;
    let mut scan = from;
    while let Some(p) = t.after(scan, until, "process ") {
        scan = p;
        if t.lower[..p].ends_with("this process ") {
            if let Some(has) = t.after(p, p + 8, "has") {
                let (s, r) = t
                    .size_at(has)
                    .ok_or_else(|| err("a size after \"this process has\"", t.from(has)))?;
                own = Some(s);
                scan = r;
            }
            continue;
        }
        let digits = t.flat[p..].len()
            - t.flat[p..]
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .len();
        let Ok(pid) = t.flat[p..p + digits].parse() else {
            continue;
        };
        let Some(has) = t.after(p + digits, p + digits + 8, "has") else {
            continue;
        };
        let (s, r) = t.size_at(has).ok_or_else(|| {
            err(
                "\"Process N has SIZE memory in use\"",
                t.from(p - "process ".len()),
            )
        })?;
        lines.push(ProcessLine {
            pid,
            bytes: s.bytes,
        });
        scan = r;
    }
    Ok((lines, own))
}

/// `MPS backend out of memory (MPS allocated: 1.23 GB, other allocations: 4.56 GB, max allowed:
/// 18.13 GB). Tried to allocate 256.00 MB on private pool.`
fn read_mps(t: &Text<'_>, at: usize) -> Result<OomMessage, ParseError> {
    let near = (at + 400).min(t.flat.len());
    let field = |name: &str| -> Result<(PrintedSize, usize), ParseError> {
        let i = t.after(at, near, name).ok_or_else(|| {
            err(
                "\"MPS backend out of memory (MPS allocated: SIZE, other allocations: SIZE, max allowed: SIZE). Tried to allocate SIZE\"",
                t.from(at),
            )
        })?;
        t.size_at(i)
            .ok_or_else(|| err(&format!("a size after \"{}\"", name.trim()), t.from(i)))
    };
    let (allocated, _) = field("mps allocated:")?;
    let (other, _) = field("other allocations:")?;
    let (max, _) = field("max allowed:")?;
    let (requested, end) = field("tried to allocate")?;
    let mut m = message(
        MessageFormat::Mps,
        range("2.0", None, false, false),
        requested,
        max,
    );
    m.allocated = allocated;
    m.reserved = allocated;
    m.process = Some(plus(allocated, other));
    m.hint = t
        .find(end, end + HINT_REACH, "high_watermark_ratio")
        .map(|_| Hint::MpsHighWatermark);
    Ok(m)
}
