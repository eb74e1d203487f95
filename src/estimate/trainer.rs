//! What the Hugging Face families (`hf_gpt2/`, `hf_llama/`) share: a `Trainer` step's result and
//! fused AdamW's state.
//!
//! `Trainer`'s default optimizer with torch ≥ 2.8 is `adamw_torch_fused`: per parameter tensor
//! two moments of the parameter's dtype and shape (`exp_avg`, `exp_avg_sq`), and a float32
//! `step` tensor kept on the device (fused AdamW's `_init_group`). Every replay
//! (`tools/hf_replay/`) records these bytes, and the tests hold this sum to them exactly.

use super::arch::Architecture;
use super::memory::{Components, TrainMoment};
use super::num::N;

/// One Trainer step of a Hugging Face model, as its family computes it.
pub(crate) struct TrainerStep {
    /// The peak of a step once the optimizer state exists (the second step on), by component.
    pub(crate) train: Components,
    /// When in the step it occurs.
    pub(crate) moment: TrainMoment,
    /// The first step's peak: no optimizer state until its `optimizer.step()` creates it.
    pub(crate) first: N,
}

/// Fused AdamW's state for the parameters of `a` held in `element` bytes: two moments per
/// element and a 4-byte `step` per parameter tensor.
pub(crate) fn fused_adamw_bytes(a: &Architecture, element: u128) -> N {
    a.parameters()
        .iter()
        .map(|t| N::from(t.count) * (N::from(t.numel()) * (2 * element) + N::from(4u64)))
        .sum()
}
