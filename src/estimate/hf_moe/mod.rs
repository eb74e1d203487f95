//! transformers' mixture-of-experts decoders (`MixtralForCausalLM`, `Qwen2MoeForCausalLM`,
//! `Qwen3MoeForCausalLM`) trained as `Trainer` runs a step: the Llama family's step
//! (`hf_llama/`: attention, norms, the loss, the head, the dtype policies, checkpointing, the
//! refusals) with a mixture of experts in place of the dense MLP (`saves`) and the moments of
//! the experts' backward (`moments`).
//!
//! Every expert is resident: the parameters, gradients and AdamW's state count all `E` experts
//! of every layer, though each token runs through `k` of them. The experts run as
//! transformers 5.24 runs them by default (`experts_implementation` unset: `grouped_mm`); the
//! router's auxiliary loss is off, as in the configs' defaults and the released configs
//! (`output_router_logits: false`).
//!
//! Source: the fake-tensor replay of the step (`tools/hf_replay/replay_moe.py`, torch 2.15,
//! transformers 5.24), held to `tests/data/hf_moe_replay.json` by `tests/it/hf_moe.rs`: every
//! run's peak within 1 %, both steps; parameters, weights, gradients and optimizer bytes exact.

mod moments;
mod saves;

pub(crate) use moments::moments;
pub(crate) use saves::{prefill_bytes_per_token, ExpertRun};

use super::arch::{Architecture, Mlp};
use super::error::ScenarioError;
use super::params::Params;
use super::scenario::Scenario;
use super::trainer::TrainerStep;

/// The Trainer step of the mixture-of-experts model `a` under `run`: the Llama family's step,
/// whose saves and moments take the experts from `saves` and `moments`.
pub(crate) fn step(
    a: &Architecture,
    run: &Scenario,
    p: &Params,
) -> Result<TrainerStep, ScenarioError> {
    super::hf_llama::step(a, run, p)
}

/// Whether Hugging Face `generate` on the mixture of experts `a` is replayed
/// (`replay_generate_moe.py`: Mixtral, Qwen1.5-MoE, Qwen3-MoE): SwiGLU experts, a shared expert
/// or none, separate q/k/v and no sliding window (Qwen3-MoE's QK-norm is over before the
/// experts' moment, the prefill's peak).
pub(crate) fn generate_replayed(a: &Architecture) -> bool {
    let at = &a.attention;
    let swiglu = |f: &super::arch::FeedForward| f.gated && !f.fused_gate_up && !f.bias;
    matches!(&a.mlp, Mlp::Moe(m) if swiglu(&m.expert) && m.shared.is_none_or(|f| swiglu(&f)))
        && !at.fused_qkv
        && at.sliding_window.is_none()
}

/// Refuses PEFT's LoRA and QLoRA on a mixture of experts, naming the key: no replay covers
/// adapters beside the experts' 3-D parameters, so only full fine-tuning is estimated.
pub(crate) fn check_adapters(a: &Architecture, run: &Scenario) -> Result<(), ScenarioError> {
    let key = if run.lora_rank > 0 {
        "lora_rank"
    } else if run.load_in_4bit {
        "load_in_4bit"
    } else if run.load_in_8bit {
        "load_in_8bit"
    } else {
        return Ok(());
    };
    Err(ScenarioError::key(
        key,
        format!(
            "{} (a mixture of experts): LoRA and QLoRA are not replayed for transformers {}'s \
             experts (two 3-D parameters per layer), so only full fine-tuning is estimated: set \
             lora_rank to 0 and load_in_4bit and load_in_8bit to false",
            a.name,
            super::arch::HF_TRANSFORMERS
        ),
    ))
}
