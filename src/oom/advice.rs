//! Fragmentation and the allocator setting to try, offered only where the printing PyTorch has it.
//!
//! `max_split_size_mb` exists from 1.10, `expandable_segments` from 2.1; PyTorch 1.9 and older
//! have neither, so their messages get no setting (and the versions that have one are named).
//! A setting the text shows already on is not proposed again, and "as the message suggests" is
//! said only where the message does.

use serde::Serialize;

use super::consistency::ConsistencyFinding;
use super::message::{Hint, MessageFormat, OomMessage};

/// The allocator setting against fragmentation that fits the message's PyTorch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AllocatorSetting {
    /// `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (2.1 and later).
    ExpandableSegments,
    /// `PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128` (1.10 to 2.0).
    MaxSplitSizeMb,
    /// `expandable_segments` is already on: the allocator has nothing more to give.
    AlreadyOn,
    /// This PyTorch has no setting against fragmentation (1.9 and older).
    NoneInThisVersion,
}

/// Fragmentation: what PyTorch's cache held without using it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Fragmentation {
    /// Reserved by PyTorch but unallocated.
    pub(crate) reserved_unallocated: u64,
    /// Free plus reserved-unallocated would have held the allocation: the cache's blocks were
    /// there, just not in one piece.
    pub(crate) cause: bool,
    /// Worth an allocator setting: the cause, or at least 512 MiB or a fifth of the reserved
    /// memory unused.
    pub(crate) advise_expandable_segments: bool,
    /// Whether the numbers allow a conclusion (consistent, free printed, a CUDA message).
    pub(crate) concluded: bool,
    /// The setting to try, when one is worth it.
    pub(crate) setting: Option<AllocatorSetting>,
    /// The message itself suggests that setting.
    pub(crate) suggested_by_message: bool,
}

/// The fragmentation finding for `m`, given the consistency findings.
pub(crate) fn fragmentation(m: &OomMessage, findings: &[ConsistencyFinding]) -> Fragmentation {
    let unalloc = m.reserved_unallocated.bytes;
    let impossible = findings.iter().any(ConsistencyFinding::impossible);
    let too_big = findings
        .iter()
        .any(|f| matches!(f, ConsistencyFinding::RequestAboveCapacity { .. }));
    let concluded = !impossible && !too_big && m.format != MessageFormat::Mps && m.free.is_some();
    let cause = concluded
        && m.free.is_some_and(|free| {
            free.bytes < m.requested.bytes
                && free.bytes.saturating_add(unalloc) >= m.requested.bytes
        });
    let worth = !impossible
        && !too_big
        && m.format != MessageFormat::Mps
        && (cause || unalloc >= 512 << 20 || unalloc.saturating_mul(5) >= m.reserved.bytes.max(1));
    let v = m.versions;
    let fitting = if v.expandable_segments && m.expandable_segments_on {
        AllocatorSetting::AlreadyOn
    } else if v.expandable_segments {
        AllocatorSetting::ExpandableSegments
    } else if v.max_split_size_mb {
        AllocatorSetting::MaxSplitSizeMb
    } else {
        AllocatorSetting::NoneInThisVersion
    };
    let setting = worth.then_some(fitting);
    let suggested_by_message = matches!(
        (setting, m.hint),
        (
            Some(AllocatorSetting::ExpandableSegments),
            Some(Hint::ExpandableSegments)
        ) | (
            Some(AllocatorSetting::MaxSplitSizeMb),
            Some(Hint::MaxSplitSizeMb)
        )
    );
    Fragmentation {
        reserved_unallocated: unalloc,
        cause,
        advise_expandable_segments: setting == Some(AllocatorSetting::ExpandableSegments),
        concluded,
        setting,
        suggested_by_message,
    }
}
