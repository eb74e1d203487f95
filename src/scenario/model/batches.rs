//! What `block_size` means for a Hugging Face model's Trainer step, said with every estimate:
//! the step replayed is `model(input_ids=X, labels=X)` on a full `batch_size × block_size` batch
//! with no attention mask.
//!
//! That is a batch of pre-chunked text (transformers' `run_clm.py` `group_texts`), or TRL's
//! `SFTConfig(packing=True, packing_strategy="wrapped")`, whose rows are all `max_length` long
//! (its collator's all-ones mask is dropped by transformers' `_ignore_causal_mask_sdpa`). Two
//! layouts users run are not modelled, and the note says so:
//! - padded batches (TRL's default `packing=False`, `DataCollatorWithPadding`): the longest batch
//!   is the peak, `block_size` its padded length, and its padding mask makes transformers pass
//!   SDPA a `(b, 1, s, s)` mask (the memory-efficient kernel, its additive bias saved per layer,
//!   grouped keys and values repeated): more than the estimate with SDPA;
//! - padding-free packing (TRL 0.29's `packing=True` with its default `bfd` strategy, or
//!   `padding_free=True`; transformers' `DataCollatorWithFlattening`): one row of up to
//!   `b·s` tokens with `position_ids` and no mask; TRL's `compute_loss` sets `use_cache=False`, so
//!   transformers 5.24 finds the packed sequences and builds a block-diagonal `(1, 1, b·s, b·s)`
//!   mask for SDPA and eager attention (only flash_attention_2, not modelled, stays linear).

use super::Model;
use crate::estimate::Family;

/// The note on the batch layout of a training estimate of `model` (none for nanochat, whose
/// base_train.py packs its own rows, nor for nanoGPT).
pub(super) fn note(model: &Model) -> Option<String> {
    if matches!(
        model.architecture.family,
        Family::Nanochat | Family::NanoGpt
    ) {
        return None;
    }
    Some(format!(
        "model = {}: block_size is the length of every row, with no padding and no attention mask \
         (pre-chunked text, or TRL's packing=True with packing_strategy=\"wrapped\"); padded \
         batches (TRL's default; with SDPA a mask per layer) and padding-free packing \
         (packing=True's bfd, padding_free=True; a (b·s)² mask without flash_attention_2) can \
         keep more and are not modelled",
        model.architecture.name
    ))
}
