//! Gemma 2 and Gemma 3's text models (transformers' `Gemma2ForCausalLM` and
//! `Gemma3ForCausalLM`) trained as `Trainer` runs a step, the Llama family's step (`hf_llama/`):
//! `model(input_ids=X, labels=X)`, the loss over the accumulation steps, `backward`,
//! `clip_grad_norm_`, fused AdamW, `zero_grad(set_to_none=True)`; float32 weights with or
//! without bf16 autocast, or weights loaded in bfloat16; eager attention or SDPA; non-reentrant
//! gradient checkpointing or not; the configs' defaults otherwise (`use_cache` true, no
//! dropout). What Gemma adds: the embedding scaled by √hidden (a product that saves only the
//! scalar), four `(1 + w)` RMSNorms per block whose `x̂` stays float32, a `gelu_pytorch_tanh`
//! gated MLP (saves as SwiGLU does), `query_pre_attn_scalar` (a scale, no memory), Gemma 2's
//! attention and final logit softcapping (each `tanh` saves its output), Gemma 3's QK-norm,
//! and sliding-window layers: below the window SDPA runs without a mask, from the window on a
//! local layer's mask makes it the memory-efficient kernel with an additive bias.
//!
//! Source: the fake-tensor replay of that step (`tools/hf_replay/replay_gemma.py`, torch 2.15,
//! transformers 5.24; `--explain` lists the storages alive at each peak) read against
//! `modeling_gemma2.py` and `modeling_gemma3.py`. Held to `tests/data/hf_gemma_replay.json`
//! (`tests/it/hf_gemma.rs`: every run's peak within 1 %, parameters, weights, gradients and
//! optimizer bytes exact, or refused by name).
//!
//! Fine-tuning: PEFT's LoRA (`lora.rs`), QLoRA (`qlora.rs`) and bitsandbytes' 8-bit AdamW
//! (`trainer::optimizer_bytes`), held to `tests/data/hf_gemma_lora_replay.json` and
//! `hf_gemma_qlora_replay.json` (`tests/it/hf_gemma_peft.rs`).
//!
//! Refused by name (`check`): what no Trainer replay covers, float16, dropout, SDPA for Gemma 2
//! (transformers has none for softcapping), and checkpointed runs whose recomputed block's
//! backward could set the peak (small vocabularies), which is not modelled to 1 %.

mod fused_ce;
pub(crate) mod generate;
mod lora;
mod lora_fused_ce;
mod moments;
mod qlora;
mod saves;

pub(crate) use qlora::qlora_step;

use super::arch::{Architecture, Family, Mlp};
use super::error::ScenarioError;
use super::lora_adapters::{self, Adapters};
use super::num::N;
use super::params::Params;
use super::scenario::{Dtype, Scenario};
use super::trainer::{optimizer_bytes, Refusals, StepTotals, TrainerStep};
use lora::GemmaLoraStep;
use moments::GemmaStep;
use saves::{GemmaRun, FP32};

/// Refuses what the replay does not cover, naming each key (all at once).
/// `recompute` says a checkpointed block's recomputation could set the peak.
fn check(a: &Architecture, s: &Scenario, recompute: bool) -> Result<(), ScenarioError> {
    let mut r = Refusals::trainer(s);
    r.not(
        recompute,
        "grad_checkpoint",
        "with this vocabulary a recomputed block's backward can set the peak, which is not \
         modelled for Gemma: set grad_checkpoint to false",
    );
    r.not(
        !a.embeddings.tied_head,
        "model",
        "every Gemma ties its head to the token embedding; an untied head is not replayed",
    );
    r.not(
        s.dtype == Dtype::Float16,
        "dtype",
        "float16 is not replayed for Gemma: use bfloat16 or float32",
    );
    r.not(
        s.dropout > 0.0,
        "dropout",
        "Gemma is replayed without dropout (attention_dropout 0, every released config's): \
         set it to 0",
    );
    r.not(
        s.flash && a.attention.softcap.is_some(),
        "flash",
        "transformers 5.24 has no SDPA for attention softcapping (Gemma 2): set \
         attn_implementation to eager (flash: false)",
    );
    r.result(&format!(
        "{} ({})",
        a.name,
        if a.family == Family::Gemma2 {
            "Gemma 2"
        } else {
            "Gemma 3"
        }
    ))
}

/// The Trainer step of `a` under `run` (the scenario with the model's shape): refused settings
/// first, then the peak and its moment, and the first step's peak (`StepTotals::step`).
pub(crate) fn step(
    a: &Architecture,
    run: &Scenario,
    p: &Params,
) -> Result<TrainerStep, ScenarioError> {
    if run.lora_rank > 0 {
        check(a, run, false)?;
        return lora_step(a, run, p);
    }
    let r = GemmaRun::of(a, run);
    let w = r.w;
    // Fused AdamW, or bitsandbytes' 8-bit AdamW (the tied embedding's state in 32 bits).
    let optimizer = optimizer_bytes(a, w, run);
    let weights = N::from(p.total) * w + buffers(&r);
    let full_grads = N::from(p.total) * w;
    let tokens = r.sb * 8;
    let block_params = (N::from(p.total) - r.vh - r.h) / u128::from(a.layers.max(1));
    let totals = StepTotals {
        weights,
        full_grads,
        optimizer,
        accumulating: run.gradient_accumulation_steps >= 2,
        checkpointed: run.grad_checkpoint,
        tokens,
        block_params,
    };
    let fused = run.fused_linear_cross_entropy;
    let now = GemmaStep {
        r: &r,
        t: &totals,
        fused,
    };
    let recompute = run.grad_checkpoint && now.recompute_bound() >= now.peak().0.sum();
    check(a, run, recompute)?;
    Ok(totals.step(|t| GemmaStep { r: &r, t, fused }.peak()))
}

/// The buffers: each rotary table's `inv_freq` and `original_inv_freq` (float32,
/// `head_dim / 2` each) and the embedding's `embed_scale` scalar in the weights' dtype.
fn buffers(r: &GemmaRun) -> N {
    N::from(r.rope_tables) * r.head_dim * FP32 + N::from(1u64) * r.w
}

/// The Trainer step of PEFT's LoRA on `a` (`lora.rs`): the base, the tied embedding and head
/// among it, frozen in its weights' dtype, float32 adapters with their gradients and fused
/// AdamW's state.
fn lora_step(a: &Architecture, run: &Scenario, p: &Params) -> Result<TrainerStep, ScenarioError> {
    let r = GemmaRun::of(a, run);
    let base = N::from(p.total) - N::from(p.lora);
    let weights = base * r.w + N::from(p.lora) * FP32 + buffers(&r);
    let (t, modules) = lora_adapters::totals(a, run, p, weights, r.sb * 8)?;
    // Autocast runs around the adapters whenever `dtype` asks for it, bf16 weights or not.
    let autocast = run.dtype != Dtype::Float32;
    let adapters = Adapters::new(r.sb, run.lora_rank, autocast, run.lora_dropout > 0.0);
    let intermediate = match &a.mlp {
        Mlp::Dense(f) => f.intermediate,
        Mlp::Moe(m) => m.expert.intermediate,
    };
    let mut step = GemmaLoraStep {
        r,
        t,
        adapters,
        modules,
        q: N::from(a.attention.q_width()),
        kv: N::from(a.attention.kv_width()),
        i: N::from(intermediate),
        fused: run.fused_linear_cross_entropy,
    };
    lora_adapters::trainer_step(&mut step, || {
        if run.fused_linear_cross_entropy {
            return ScenarioError::key(
                "fused_linear_cross_entropy",
                format!(
                    "{}: with the fused cross-entropy the loss no longer clearly sets a LoRA step's peak here: a block's backward may, which vramdoc does not model for Gemma; set fused_linear_cross_entropy to false",
                    a.name
                ),
            );
        }
        ScenarioError::key(
            "lora_rank",
            format!(
                "{}: with this vocabulary ({} tokens) a block's backward, not the loss, could set a LoRA step's peak, which vramdoc does not model for Gemma within 1 %; estimate with a longer sequence or larger batch, where the loss dominates",
                a.name, a.vocab_size
            ),
        )
    })
}
