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

pub(crate) mod lora;
mod moments;
mod notes;
pub(crate) mod qlora;
mod saves;
pub(crate) mod targets;

pub(crate) use moments::moments;
pub(crate) use notes::peft_notes;
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

/// Refuses what PEFT itself refuses on a mixture of experts: `lora_dropout > 0` where a
/// `lora.ParamWrapper` adapts the router's or the experts' parameters ("does not work with
/// lora_dropout != 0", `targets`).
pub(crate) fn check_adapters(a: &Architecture, run: &Scenario) -> Result<(), ScenarioError> {
    if run.lora_rank == 0 || run.lora_dropout == 0.0 {
        return Ok(());
    }
    let modules = run
        .lora_targets
        .resolve(a)
        .map_err(|e| ScenarioError::key("lora_targets", e))?;
    if targets::wraps_parameters(&modules) {
        return Err(ScenarioError::key(
            "lora_dropout",
            format!(
                "{}: PEFT adapts the router and the experts (3-D parameters in transformers {}) \
                 with lora.ParamWrapper, which raises \"does not work with lora_dropout != 0\": \
                 set lora_dropout to 0, or target only the attention's projections",
                a.name,
                super::arch::HF_TRANSFORMERS
            ),
        ));
    }
    Ok(())
}
