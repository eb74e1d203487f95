//! transformers' `flash_attention_2` (the flash-attn package, through
//! `integrations/flash_attention.py` and `modeling_flash_attention_utils.py`), where it is
//! modelled: the full fine-tuning of the Llama family and the mixtures of experts, with full
//! rows (`flash_attn_func`) or padding-free rows (`flash_attn_varlen_func` over the sequences the
//! `position_ids` mark: no mask, linear in the tokens). Held to the replay with a fake of
//! flash-attn 2's allocations (`tools/hf_replay/fake_flash_attn.py`, `replay_batches.py` →
//! `tests/data/hf_batch_layout_replay.json`).
//!
//! What flash-attn keeps per layer is what PyTorch's own FlashAttention-2 kernel keeps under
//! SDPA (`hf_llama/saves.rs`): the queries, the keys and values as they are (grouped heads not
//! repeated), the output and a float32 logsumexp per query and head, with one `(2,)` int64 RNG
//! state. Everything else is refused here by name.

use super::arch::{Architecture, Family};
use super::error::ScenarioError;
use super::scenario::{Phase, Scenario};
use super::trainer::ElementBytes;
use super::BatchLayout;

/// Refuses `flash_attention_2` where it is not replayed (all at once is not needed: the first
/// reason is the one to act on).
pub(crate) fn check(a: &Architecture, s: &Scenario) -> Result<(), ScenarioError> {
    if !s.flash_attention_2() {
        return Ok(());
    }
    let why = if s.phase == Phase::Generate {
        "generate is not replayed with flash-attn".to_owned()
    } else if !matches!(a.family, Family::Llama | Family::Moe) {
        format!(
            "{} ({}): flash-attn is replayed for the Llama family and the mixtures of experts only",
            a.name,
            a.family.as_str()
        )
    } else if s.lora_rank > 0 || s.load_in_4bit || s.fused_linear_cross_entropy {
        "flash-attn is replayed for full fine-tuning only (no LoRA, QLoRA or Liger)".to_owned()
    } else if s.batch_layout == BatchLayout::Padded {
        "padded rows with flash-attn are unpadded (transformers' _upad_input gathers the tokens the \
         mask keeps, a count only the data gives), which is not replayed: use batch_layout = \
         padding_free (TRL's padding_free=True, what flash-attn is meant for) or full"
            .to_owned()
    } else if ElementBytes::of(s).c == 4 {
        "flash-attn computes in 16 bits only (its mha_fwd checks \"FlashAttention only support fp16 \
         and bf16 data type\"; transformers 5.24 only warns): load the weights in bfloat16 or \
         train under bf16 autocast (dtype = bfloat16)"
            .to_owned()
    } else {
        return Ok(());
    };
    Err(ScenarioError::key(
        "attn_implementation",
        format!("attn_implementation = flash_attention_2: {why}"),
    ))
}
