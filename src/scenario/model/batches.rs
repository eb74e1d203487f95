//! What `block_size` and `batch_size` mean for a Hugging Face model's Trainer step in each batch
//! layout (`batch_layout`, `estimate::batch_layout`), said with every estimate:
//!
//! - `full` (the default): `model(input_ids=X, labels=X)` on a full `batch_size × block_size`
//!   batch with no attention mask: pre-chunked text (transformers' `run_clm.py` `group_texts`),
//!   or TRL's `SFTConfig(packing=True, packing_strategy="wrapped")`, whose rows are all
//!   `max_length` long (its collator's all-ones mask is dropped by transformers'
//!   `_ignore_causal_mask_sdpa`).
//! - `padded` (TRL's default `packing=False`, `DataCollatorWithPadding`): rows padded to the
//!   longest in the batch; the estimate is for a batch whose longest row is `block_size` tokens
//!   (the largest batch is the peak). The padding mask makes transformers pass SDPA a
//!   `(b, 1, s, s)` mask: the memory-efficient kernel runs with its additive bias saved per
//!   layer, grouped keys and values repeated.
//! - `padding_free` (TRL 0.29's `padding_free=True`, or `packing=True` with its default `bfd`
//!   strategy; transformers' `DataCollatorWithFlattening`): one row of `b·s` tokens with
//!   `position_ids`, the most `batch_size` sequences of up to `block_size` tokens make; with the
//!   cache off transformers finds the packed sequences and builds a block-diagonal
//!   `(1, 1, b·s, b·s)` mask for SDPA and eager attention; with `flash_attention_2` flash-attn's
//!   variable-length kernel runs over the sequences with no mask, linear in the tokens.
//!
//! Modelled for the Llama family's and the mixtures of experts' full fine-tuning and for QLoRA
//! under TRL's SFTTrainer (`estimate::batch_layout`); refused by name elsewhere.

use super::Model;
use crate::estimate::{AttnImplementation, BatchLayout, Family, Scenario};

/// The note on the batch layout of a training estimate of `model` under `s` (none for nanochat,
/// whose base_train.py packs its own rows, nor for nanoGPT).
pub(super) fn note(model: &Model, s: &Scenario) -> Option<String> {
    if matches!(
        model.architecture.family,
        Family::Nanochat | Family::NanoGpt
    ) {
        return None;
    }
    let name = &model.architecture.name;
    Some(match s.batch_layout {
        BatchLayout::Full => format!(
            "model = {name}: batch_layout = full: block_size is the length of every row, with no \
             padding and no attention mask (pre-chunked text, or TRL's packing=True with \
             packing_strategy=\"wrapped\"); --batch_layout=padded for TRL's default padded rows, \
             --batch_layout=padding_free for padding_free=True or packing=True's bfd"
        ),
        BatchLayout::Padded => format!(
            "model = {name}: batch_layout = padded: the estimate is for a batch whose longest row \
             is block_size = {} tokens (the collator pads every row to the longest), with its \
             attention mask (SDPA: the memory-efficient kernel, its bias saved per layer) and \
             use_cache=False",
            s.block_size
        ),
        BatchLayout::PaddingFree => format!(
            "model = {name}: batch_layout = padding_free: one row of batch_size·block_size = {} \
             tokens (the sequences flattened, position_ids restarting at each), with \
             use_cache=False; {}",
            s.batch_size.saturating_mul(s.block_size),
            if s.attention() == AttnImplementation::FlashAttention2 {
                "flash-attn's variable-length kernel runs over the sequences, no mask".to_owned()
            } else {
                let n = s.batch_size.saturating_mul(s.block_size);
                format!(
                    "transformers builds a block-diagonal ({n}, {n}) mask for SDPA and eager \
                     attention (flash_attention_2 would need none)"
                )
            }
        ),
    })
}
