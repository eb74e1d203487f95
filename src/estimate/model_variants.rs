//! The runs a described model's what-ifs try (`whatif_model.rs`): PEFT's LoRA, QLoRA's recipe,
//! and what checkpointing costs in compute.

use super::arch::{Architecture, Family};
use super::lora_targets::LoraTargets;
use super::scenario::{Dtype, QuantType, Scenario};
use super::Estimate;

/// The rank a full fine-tune's LoRA option takes (a common choice; PEFT's own default `r` is 8).
pub(super) const LORA_RANK: u64 = 16;

/// Whether PEFT's LoRA is computed for `a`'s family (Hugging Face's GPT-2, the Llama family,
/// the mixtures of experts).
pub(super) fn has_peft_lora(a: &Architecture) -> bool {
    matches!(
        a.family,
        Family::HfGpt2 | Family::Llama | Family::Gemma2 | Family::Gemma3 | Family::Moe
    )
}

/// `s` as PEFT's LoRA of `rank` on `targets`, PEFT's default for `a` when `None` (all-linear
/// where PEFT has none).
pub(super) fn with_lora(
    s: &Scenario,
    a: &Architecture,
    rank: u64,
    targets: Option<LoraTargets>,
) -> Scenario {
    let targets = targets
        .or_else(|| LoraTargets::peft_default(a))
        .unwrap_or(LoraTargets::ALL);
    Scenario {
        lora_rank: rank,
        lora_targets: targets,
        ..s.clone()
    }
}

/// Extra compute of checkpointing every block, in percent: one more forward of the blocks.
///
/// Training FLOPs per token ≈ `6·N + 12·L·q·s`, with `N` the parameters of every Linear layer
/// (the head included; `Params::linear`) and `q = heads·head_dim` the width of the queries
/// (Chowdhery et al. 2022, PaLM, appendix B); recomputing the blocks adds their forward,
/// `2·(N − V·h) + 4·L·q·s`. For nanoGPT's shape this is `whatif.rs`' formula. Rounded to 0.1 %.
pub(crate) fn checkpoint_extra_compute_pct(a: &Architecture, e: &Estimate) -> f64 {
    let linear = e.params.linear as f64;
    let head = a.vocab_size as f64 * a.hidden as f64;
    let (l, q, s) = (
        a.layers as f64,
        a.attention.q_width() as f64,
        e.scenario.block_size as f64,
    );
    let blocks = 2.0 * (linear - head) + 4.0 * l * q * s;
    let train = 6.0 * linear + 12.0 * l * q * s;
    (1000.0 * blocks / train).round() / 10.0
}

/// `run` trained with QLoRA's recipe: `BitsAndBytesConfig(load_in_4bit=True,
/// bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
/// bnb_4bit_compute_dtype=torch.bfloat16)`, Trainer's `bf16=True`, and LoRA adapters (the run's
/// rank and targets, or rank 16 on every linear layer, as the QLoRA paper trains).
pub(super) fn with_qlora(run: &Scenario) -> Scenario {
    let mut s = run.clone();
    s.load_in_4bit = true;
    s.bnb_4bit_quant_type = QuantType::Nf4;
    s.bnb_4bit_use_double_quant = true;
    s.bnb_4bit_compute_dtype = Dtype::Bfloat16;
    s.dtype = Dtype::Bfloat16;
    // prepare_model_for_kbit_training's default: QLoRA checkpoints every block.
    s.grad_checkpoint = true;
    if s.lora_rank == 0 {
        s.lora_rank = LORA_RANK;
        s.lora_targets = LoraTargets::ALL;
    }
    s
}
