//! The message's numbers checked against each other before anything is concluded from them.
//!
//! Each check allows the printed rounding of every number it adds. A finding is either
//! *impossible* (no allocator prints it: the text was edited, cut or pasted from two messages),
//! after which `diagnose` draws no conclusion from the free, process and reserved figures, or a
//! fact that changes the explanation (a request larger than the card, several messages, a
//! scenario that fits where the run failed).

use serde::Serialize;

use super::message::{MessageFormat, OomMessage, PrintedSize};

/// Something the numbers say about themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum ConsistencyFinding {
    /// The capacity, the request and every other figure are zero.
    AllZero,
    /// More free than the card's capacity.
    FreeAboveCapacity { free: u64, capacity: u64 },
    /// More in tensors than reserved by the cache that holds them (1.4 to 2.0's total).
    AllocatedAboveReserved { allocated: u64, reserved: u64 },
    /// PyTorch's cache larger than the whole card.
    ReservedAboveCapacity { reserved: u64, capacity: u64 },
    /// PyTorch's cache larger than everything the process holds.
    ReservedAboveProcess { reserved: u64, process: u64 },
    /// Free plus what the processes hold is more than the card.
    InUseAboveCapacity { in_use: u64, capacity: u64 },
    /// One listed process holds more than the card.
    ProcessAboveCapacity { pid: u64, bytes: u64, capacity: u64 },
    /// The one allocation is larger than the whole card: no setting and no other program is
    /// the cause.
    RequestAboveCapacity { requested: u64, capacity: u64 },
    /// The text holds several out-of-memory messages; the last is read.
    SeveralMessages { count: usize },
    /// The scenario's estimate fits the card on which the run failed: the scenario is not the
    /// run.
    ScenarioCannotBeTheRun {
        /// The estimate of the process's peak, with other programs.
        estimate: u64,
        /// What the run held when it failed (allocated by PyTorch plus the request).
        run: u64,
        /// The card.
        capacity: u64,
    },
}

impl ConsistencyFinding {
    /// No allocator prints these numbers together.
    pub(crate) fn impossible(&self) -> bool {
        matches!(
            self,
            ConsistencyFinding::AllZero
                | ConsistencyFinding::FreeAboveCapacity { .. }
                | ConsistencyFinding::AllocatedAboveReserved { .. }
                | ConsistencyFinding::ReservedAboveCapacity { .. }
                | ConsistencyFinding::ReservedAboveProcess { .. }
                | ConsistencyFinding::InUseAboveCapacity { .. }
                | ConsistencyFinding::ProcessAboveCapacity { .. }
        )
    }
}

/// `a > b` beyond their printed rounding.
fn above(a: PrintedSize, b: PrintedSize) -> bool {
    a.bytes
        > b.bytes
            .saturating_add(a.tolerance)
            .saturating_add(b.tolerance)
}

/// The checks of the message alone, in the order they are reported.
pub(crate) fn check(m: &OomMessage) -> Vec<ConsistencyFinding> {
    let mut out = Vec::new();
    let zero = |s: PrintedSize| s.bytes == 0;
    if zero(m.capacity) && zero(m.requested) && zero(m.allocated) && m.free.is_none_or(zero) {
        out.push(ConsistencyFinding::AllZero);
        return out;
    }
    let cap = m.capacity;
    if let Some(free) = m.free {
        if above(free, cap) {
            out.push(ConsistencyFinding::FreeAboveCapacity {
                free: free.bytes,
                capacity: cap.bytes,
            });
        }
    }
    if m.format == MessageFormat::Pytorch1 && above(m.allocated, m.reserved) {
        out.push(ConsistencyFinding::AllocatedAboveReserved {
            allocated: m.allocated.bytes,
            reserved: m.reserved.bytes,
        });
    }
    if above(m.reserved, cap) && m.format != MessageFormat::Mps {
        out.push(ConsistencyFinding::ReservedAboveCapacity {
            reserved: m.reserved.bytes,
            capacity: cap.bytes,
        });
    }
    if let (Some(p), MessageFormat::Pytorch2) = (m.process, m.format) {
        if above(m.reserved, p) {
            out.push(ConsistencyFinding::ReservedAboveProcess {
                reserved: m.reserved.bytes,
                process: p.bytes,
            });
        }
    }
    for p in &m.processes {
        if p.bytes > cap.bytes.saturating_add(cap.tolerance) {
            out.push(ConsistencyFinding::ProcessAboveCapacity {
                pid: p.pid,
                bytes: p.bytes,
                capacity: cap.bytes,
            });
        }
    }
    if let (Some(free), Some(own)) = (m.free, m.process) {
        // Every listed line is rounded to two decimals; allow each its rounding.
        let listed: u64 = m
            .processes
            .iter()
            .map(|p| p.bytes)
            .fold(0, u64::saturating_add);
        let slack = own.tolerance.saturating_mul(m.processes.len() as u64 + 2);
        let own_listed = m
            .processes
            .iter()
            .any(|p| p.bytes.abs_diff(own.bytes) <= own.tolerance * 2);
        // The process's own line is among the listed ones on some drivers: count it once.
        let others = if own_listed {
            listed.saturating_sub(own.bytes)
        } else {
            listed
        };
        let in_use = free.bytes.saturating_add(own.bytes).saturating_add(others);
        if in_use
            > cap
                .bytes
                .saturating_add(cap.tolerance)
                .saturating_add(free.tolerance)
                .saturating_add(slack)
            && !out
                .iter()
                .any(|f| matches!(f, ConsistencyFinding::ProcessAboveCapacity { .. }))
        {
            out.push(ConsistencyFinding::InUseAboveCapacity {
                in_use,
                capacity: cap.bytes,
            });
        }
    }
    if above(m.requested, cap) && !zero(cap) {
        out.push(ConsistencyFinding::RequestAboveCapacity {
            requested: m.requested.bytes,
            capacity: cap.bytes,
        });
    }
    if m.messages_in_text > 1 {
        out.push(ConsistencyFinding::SeveralMessages {
            count: m.messages_in_text,
        });
    }
    out
}
