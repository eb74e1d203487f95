//! How a Hugging Face training batch is laid out (`batch_layout`), as TRL 0.29's `SFTTrainer`
//! and transformers 5.24's collators build it, and the attention inputs each layout makes
//! transformers pass (`masking_utils.create_causal_mask`).
//!
//! - `full`: `batch_size` rows of `block_size` tokens, no padding and no attention mask
//!   (pre-chunked text, `run_clm.py`'s `group_texts`, or TRL's `packing=True` with
//!   `packing_strategy="wrapped"`, whose all-ones mask transformers drops). SDPA runs with
//!   `is_causal` and no mask.
//! - `padded`: `batch_size` rows padded to the longest in the batch (`DataCollatorWithPadding`,
//!   TRL's default `packing=False`), with an attention mask that has padding: `block_size` is
//!   that longest row, the estimate is for a batch whose longest row is `block_size` tokens.
//!   transformers keeps the mask and builds a `(b, 1, s, s)` boolean mask (eager: additive in the
//!   weights' dtype), so SDPA cannot run FlashAttention: the memory-efficient kernel runs with the
//!   mask as an additive bias it saves per layer, and transformers repeats grouped keys and
//!   values to the query heads first (`repeat_kv`, as `use_gqa_in_sdpa` is false with a mask).
//! - `padding_free`: the batch flattened to one row of `batch_size·block_size` tokens with
//!   `position_ids` restarting at each sequence and no mask (TRL's `padding_free=True`, or
//!   `packing=True` with its default `bfd` strategy; transformers' `DataCollatorWithFlattening`).
//!   With the cache off, transformers finds the packed sequences from the `position_ids`
//!   (`find_packed_sequence_indices`) and builds a block-diagonal `(1, 1, b·s, b·s)` mask: SDPA
//!   and eager attention see one sequence of `b·s` tokens and a mask of `(b·s)²` (eager's scores
//!   grow with `(b·s)²`).
//!
//! Both layouts other than `full` run with the cache off (`use_cache=False`): TRL's
//! `compute_loss` passes it, and `Trainer` sets `model.config.use_cache` to
//! `TrainingArguments.use_cache`, false by default. The attention mask (`padded`) or the
//! `position_ids` (`padding_free`) is one more `8·b·s`-byte input beside the tokens.

use serde::Serialize;

use super::arch::{Architecture, Family};
use super::error::ScenarioError;
use super::scenario::Scenario;
use super::trl::HfTrainer;

/// The layout of a training batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum BatchLayout {
    /// Full rows, no padding, no mask.
    #[default]
    Full,
    /// Rows padded to the longest, with an attention mask.
    Padded,
    /// One row of every sequence, with `position_ids`.
    PaddingFree,
}

impl BatchLayout {
    /// The key's spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            BatchLayout::Full => "full",
            BatchLayout::Padded => "padded",
            BatchLayout::PaddingFree => "padding_free",
        }
    }

    /// `full`, `padded`, `padding_free` (also written `padding-free`), in any case.
    pub fn parse(s: &str) -> Option<BatchLayout> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "full" => Some(BatchLayout::Full),
            "padded" => Some(BatchLayout::Padded),
            "padding_free" => Some(BatchLayout::PaddingFree),
            _ => None,
        }
    }

    /// The rows the model sees and their length, for `batch_size` rows of `block_size` tokens:
    /// one row of every token when padding-free.
    pub(crate) fn rows(self, batch_size: u64, block_size: u64) -> (u64, u64) {
        match self {
            BatchLayout::PaddingFree => (1, batch_size.saturating_mul(block_size)),
            BatchLayout::Full | BatchLayout::Padded => (batch_size, block_size),
        }
    }

    /// Whether transformers hands attention a mask (and turns the cache off).
    pub(crate) fn masked(self) -> bool {
        self != BatchLayout::Full
    }
}

impl Scenario {
    /// A layout other than `full` is modelled for the full fine-tuning of the Llama family
    /// (`hf_llama`) and of the mixtures of experts on its step (`hf_moe`), the steps replayed
    /// with it (`tools/hf_replay/replay_batches.py`): refused by name for `family` otherwise.
    pub(crate) fn layout_not_replayed(&self, family: &str) -> Result<(), ScenarioError> {
        if self.batch_layout == BatchLayout::Full {
            return Ok(());
        }
        Err(ScenarioError::key(
            "batch_layout",
            format!(
                "batch_layout = {} is replayed for the full fine-tuning of the Llama family \
                 (Llama, Mistral, Qwen2, Qwen3, Phi-3) and the mixtures of experts (Mixtral, \
                 Qwen-MoE, Qwen3-MoE), and for its QLoRA under TRL's SFTTrainer (trainer: trl), \
                 only, not for {family}: estimate with \
                 batch_layout = full (rows of block_size tokens, no padding), which is less \
                 than a padded or padding-free batch keeps",
                self.batch_layout.as_str()
            ),
        ))
    }
}

/// Refuses a layout other than `full` for the runs of `a` not replayed with one (by name): the
/// families other than Llama's and the mixtures of experts, LoRA, QLoRA other than TRL's
/// SFTTrainer on the Llama family (`trl.rs`), Liger's fused cross-entropy.
pub(crate) fn check(a: &Architecture, s: &Scenario) -> Result<(), ScenarioError> {
    let what = if !matches!(a.family, Family::Llama | Family::Moe) {
        format!("{} ({})", a.name, a.family.as_str())
    } else if s.load_in_4bit && (s.trainer != HfTrainer::Trl || a.family != Family::Llama) {
        "QLoRA (load_in_4bit) other than TRL's SFTTrainer on the Llama family (trainer: trl)"
            .to_owned()
    } else if s.lora_rank > 0 && !s.load_in_4bit {
        "PEFT's LoRA (lora_rank)".to_owned()
    } else if s.fused_linear_cross_entropy {
        "Liger's fused_linear_cross_entropy".to_owned()
    } else {
        return Ok(());
    };
    s.layout_not_replayed(&what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_as_users_write_them() {
        for (text, l) in [
            ("full", BatchLayout::Full),
            ("Padded", BatchLayout::Padded),
            ("padding_free", BatchLayout::PaddingFree),
            ("padding-free", BatchLayout::PaddingFree),
        ] {
            assert_eq!(BatchLayout::parse(text), Some(l), "{text}");
        }
        assert_eq!(BatchLayout::parse("packed"), None);
        assert_eq!(BatchLayout::PaddingFree.rows(4, 2048), (1, 8192));
        assert_eq!(BatchLayout::Padded.rows(4, 2048), (4, 2048));
    }
}
