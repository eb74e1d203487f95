//! Liger Kernel's fused linear cross-entropy (`fused_linear_cross_entropy: true`), the head
//! and the loss computed together in chunks of tokens, so the `s·b·V` logits are never built.
//!
//! Source: liger-kernel 0.8.5, `liger_kernel/ops/fused_linear_cross_entropy.py`
//! (`fused_linear_cross_entropy_forward`, `LigerFusedLinearCrossEntropyFunction`) and
//! `liger_kernel/transformers/model/llama.py` (`lce_forward`, which a model's `forward` becomes
//! after `apply_liger_kernel_to_llama(fused_linear_cross_entropy=True)` or
//! `_apply_liger_kernel_to_instance`). Its Triton kernel does not run on a CPU, so the replay
//! (`tools/hf_replay/liger_fused_ce.py`, `replay_fused_ce.py`) runs a port of the function that
//! keeps every allocation and leaves out the kernel, which allocates nothing (it writes the loss
//! and the logits' gradient in place).
//!
//! What it keeps, per forward of `BT = s·b` tokens of width `H` over a vocabulary `V`:
//! - the chunk ([`Chunking`]): `next_power_of_2(⌈BT / ⌈V / H⌉⌉)` tokens, at most `BT`, so one
//!   chunk's logits hold about `BT·H` elements whatever the vocabulary;
//! - for the whole loop, `grad_input` (`BT·H` in the input's dtype), `grad_weight` (`V·H` in
//!   the head weight's dtype, when the head is trained), `loss_1d` (float32, `BT`) and the
//!   ignored-label mask (one byte per token); `grad_input` and `grad_weight` are what it saves
//!   for backward, which only scales them in place;
//! - per chunk, its logits in the matmul's dtype, and the matmul's own casts and products (the
//!   step models' `fused_forward` moments).
//!
//! With PEFT's LoRA or QLoRA the head is frozen (`weight.requires_grad` false), and
//! `fused_linear_cross_entropy_forward` allocates no `grad_weight` (`hf_llama/lora_fused_ce.rs`,
//! `qlora_fused_ce.rs`).
//!
//! Liger patches the families `MODEL_TYPE_TO_APPLY_LIGER_FN` lists: Llama, Mistral, Qwen2,
//! Qwen3, Phi-3, Mixtral and Qwen3-MoE among vramdoc's (computed here: full fine-tunes, and LoRA
//! and QLoRA of the Llama family), Gemma 2 and 3 (full fine-tunes, `hf_gemma/fused_ce.rs`: its
//! patches pass `final_logit_softcapping` to the kernel, which applies it in place; LoRA where
//! the fused function clearly passes any block's backward, `hf_gemma/lora_fused_ce.rs`; QLoRA
//! refused), not GPT-2, Qwen2-MoE, nanoGPT or nanochat (refused, [`check`]).
//! `apply_liger_kernel_to_*` also replaces RMSNorm, SwiGLU and the rotary embedding by default;
//! those are not modelled (they keep less than transformers' own), so the estimate is of the
//! loss patched alone (`rope=False, rms_norm=False, swiglu=False`).

use super::arch::{Architecture, Family};
use super::error::ScenarioError;
use super::num::N;
use super::scenario::Scenario;
use super::HfTrainer;

/// The liger-kernel version the fused cross-entropy follows.
pub const LIGER_KERNEL: &str = "0.8.5";

/// How `fused_linear_cross_entropy_forward` splits `BT` tokens (`chunk_mem_const` 1):
/// `inc_factor = ⌈V / H⌉`, `chunk_size = min(next_power_of_2(⌈BT / inc_factor⌉), BT)`,
/// `num_chunks = ⌈BT / chunk_size⌉`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunking {
    /// Tokens per chunk.
    pub chunk_size: u64,
    /// Chunks in one forward.
    pub chunks: u64,
}

impl Chunking {
    /// The chunks of `tokens` (`BT`) tokens of width `hidden` over `vocab` classes.
    pub fn of(tokens: u64, hidden: u64, vocab: u64) -> Chunking {
        let (bt, h, v) = (tokens.max(1), hidden.max(1), vocab.max(1));
        let inc_factor = v.div_ceil(h);
        let chunk_size = bt
            .div_ceil(inc_factor)
            .checked_next_power_of_two()
            .unwrap_or(u64::MAX)
            .min(bt);
        Chunking {
            chunk_size,
            chunks: bt.div_ceil(chunk_size),
        }
    }

    /// One chunk's logits, `chunk_size·V` elements.
    pub(crate) fn logits(self, vocab: u64) -> N {
        N::from(self.chunk_size) * N::from(vocab)
    }
}

/// The rows of the largest logits tensor a step of `s` builds on a model `hidden` wide: every
/// token's (`s·b`), or with the fused cross-entropy one chunk's.
pub fn logits_rows(s: &Scenario, hidden: u64) -> u64 {
    let tokens = s.block_size.saturating_mul(s.batch_size);
    if s.fused_linear_cross_entropy {
        Chunking::of(tokens, hidden, s.vocab_size).chunk_size
    } else {
        tokens
    }
}

/// Refuses `fused_linear_cross_entropy` for a family Liger does not patch, or a run whose
/// patched step vramdoc does not compute, naming the key; `None` is nanoGPT's own model.
pub(crate) fn check(a: Option<&Architecture>, s: &Scenario) -> Result<(), ScenarioError> {
    if !s.fused_linear_cross_entropy {
        return Ok(());
    }
    let trl = s.trainer == HfTrainer::Trl;
    let why = match a.map(|a| (a.family, a)) {
        Some((Family::Llama | Family::Moe, _)) if s.load_in_8bit => {
            "the fused cross-entropy is replayed with 4-bit QLoRA, not LLM.int8()"
        }
        Some((Family::Llama, _)) if s.load_in_4bit && trl => {
            "the fused cross-entropy with QLoRA is replayed under Trainer, not TRL's SFTTrainer"
        }
        Some((Family::Moe, _)) if s.load_in_4bit => {
            "the fused cross-entropy with QLoRA is replayed for the Llama family, not a mixture \
             of experts"
        }
        Some((Family::Moe, _)) if s.lora_rank > 0 => {
            "the fused cross-entropy is replayed for a mixture of experts' full fine-tune only, \
             not with LoRA"
        }
        Some((Family::Llama, _)) => return Ok(()),
        Some((Family::Moe, a)) if moe_patched(a) => return Ok(()),
        Some((Family::Moe, _)) => {
            "Liger Kernel patches Mixtral and Qwen3-MoE, not Qwen2-MoE (no \
             apply_liger_kernel_to_qwen2_moe in liger-kernel 0.8.5)"
        }
        Some((Family::Gemma2 | Family::Gemma3, _)) if s.load_in_4bit || s.load_in_8bit => {
            "the fused cross-entropy is replayed for Gemma's full and LoRA fine-tunes, not with \
             QLoRA"
        }
        Some((Family::Gemma2 | Family::Gemma3, _)) => return Ok(()),
        Some((Family::HfGpt2, _)) => "Liger Kernel has no patch for GPT-2",
        Some((Family::Nanochat, _)) => {
            "nanochat computes its own loss; Liger Kernel has no patch for it"
        }
        _ => {
            "nanoGPT's model.py is not one Liger Kernel patches (a Hugging Face model, given with \
              `model`, is)"
        }
    };
    Err(ScenarioError::key(
        "fused_linear_cross_entropy",
        format!("{why}; set fused_linear_cross_entropy to false"),
    ))
}

/// Whether Liger patches the mixture of experts `a`: Mixtral (no shared expert) and Qwen3-MoE
/// (no shared expert, QK-norm); Qwen2-MoE, with its shared expert, has no patch.
fn moe_patched(a: &Architecture) -> bool {
    matches!(&a.mlp, super::arch::Mlp::Moe(m) if m.shared.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Liger's own comment: `BT = 4096·4, V = 32000, H = 4096 ⟹ inc_factor = 8, chunk_size =
    /// 2048`; then 8 chunks.
    #[test]
    fn the_chunk_size_follows_liger_s_worked_example() {
        let c = Chunking::of(4096 * 4, 4096, 32000);
        assert_eq!(
            c,
            Chunking {
                chunk_size: 2048,
                chunks: 8
            }
        );
    }

    /// Independent arithmetic for the large vocabularies: Qwen2.5 0.5B (`H` 896, `V` 151,936:
    /// ⌈151936 / 896⌉ = 170, ⌈1024 / 170⌉ = 7 → 8 tokens, 128 chunks), Gemma 2 2B (`H` 2304,
    /// `V` 256,000: 112; ⌈8192 / 112⌉ = 74 → 128), Llama 3.1 8B (`H` 4096, `V` 128,256: 32;
    /// ⌈2048 / 32⌉ = 64 → 64, 32 chunks).
    #[test]
    fn chunks_of_large_vocabularies() {
        assert_eq!(
            Chunking::of(1024, 896, 151_936),
            Chunking {
                chunk_size: 8,
                chunks: 128
            }
        );
        assert_eq!(
            Chunking::of(8192, 2304, 256_000),
            Chunking {
                chunk_size: 128,
                chunks: 64
            }
        );
        assert_eq!(
            Chunking::of(2048, 4096, 128_256),
            Chunking {
                chunk_size: 64,
                chunks: 32
            }
        );
        // 8 × 151,936 bf16 logits: 2,430,976 bytes, the replay's chunk (qwen2.5-0.5b, s512 b2).
        assert_eq!(
            Chunking::of(1024, 896, 151_936).logits(151_936) * 2,
            N(2_430_976)
        );
    }

    /// A vocabulary no wider than the model is one chunk of every token; a chunk never exceeds
    /// the tokens, and the last chunk may be short (1000 tokens, V = 4H: ⌈1000/4⌉ = 250 → 256,
    /// 4 chunks).
    #[test]
    fn small_vocabularies_and_short_last_chunks() {
        assert_eq!(
            Chunking::of(1000, 512, 512),
            Chunking {
                chunk_size: 1000,
                chunks: 1
            }
        );
        assert_eq!(
            Chunking::of(1000, 512, 2048),
            Chunking {
                chunk_size: 256,
                chunks: 4
            }
        );
        assert_eq!(
            Chunking::of(1, 896, 151_936),
            Chunking {
                chunk_size: 1,
                chunks: 1
            }
        );
    }
}
