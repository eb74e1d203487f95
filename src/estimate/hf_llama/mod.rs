//! The Llama family (transformers' `LlamaForCausalLM`, and `MistralForCausalLM`,
//! `Qwen2ForCausalLM`, `Qwen3ForCausalLM`, `Phi3ForCausalLM`, whose modeling files transformers
//! generates from `modeling_llama.py`) trained as `Trainer` runs a step: `model(input_ids=X,
//! labels=X)`, the loss divided over the accumulation steps, `backward`, `clip_grad_norm_`, fused
//! AdamW (`adamw_torch_fused`), `zero_grad(set_to_none=True)`. Three dtype policies: float32
//! weights with no autocast (`dtype: float32`), float32 weights under bf16 autocast
//! (`dtype: bfloat16`), and weights loaded in 16 bits and trained as they are (`weights_dtype`,
//! the catalog models' own default, or `pure_bf16`; autocast of their own dtype on top changes
//! nothing the step keeps, as the replay shows). Attention through
//! SDPA or eager; `gradient_checkpointing_enable` (non-reentrant) or not. The configs' defaults
//! are kept: `use_cache` true (a `DynamicCache` is filled in training too), no dropout. The batch
//! layouts other than full rows (`batch_layout.rs`: padded rows with a mask, one padding-free row)
//! run with the cache off and a mask in every layer (`LlamaRun::masked_sdpa`); flash-attn
//! (`flash_attention_2.rs`) keeps what SDPA's FlashAttention keeps, with no mask in any layout it
//! runs. Held to `tests/data/hf_batch_layout_replay.json` (`tests/it/hf_batch_layout.rs`).
//!
//! Source: the fake-tensor replay of that step (`tools/hf_replay/replay_llama.py`, torch 2.15,
//! transformers 5.24; `--explain` lists the storages alive at each peak) read against
//! `modeling_llama.py`. Held to `tests/data/hf_llama_replay.json` (`tests/it/hf_llama.rs`: every
//! run's peak within 1 %, both steps; parameters, weights, gradients and optimizer bytes
//! exact). What each piece saves is in `saves.rs`; the moments of the step in `moments.rs`; PEFT's
//! LoRA (`lora_rank > 0`) in `lora.rs`.
//!
//! Not modelled, and refused by name (`check`): float16, dropout, `torch.compile`, other
//! optimizers, more than one GPU, nanoGPT's frozen-embeddings patch,
//! sliding-window attention reaching the window, gradient checkpointing of multi-query SDPA.

mod fused_ce;
pub(crate) mod lora;
mod lora_fused_ce;
pub(crate) mod moments;
pub(crate) mod saves;

use super::arch::{Activation, Architecture, FeedForward, Mlp, Norm, Positions};
use super::error::ScenarioError;
use super::lora_adapters::{self, Adapters};
use super::num::N;
use super::params::Params;
use super::scenario::{Dtype, Scenario};
use super::trainer::{optimizer_bytes, Refusals, StepTotals, TrainerStep};
use lora::LlamaLoraStep;
use moments::LlamaStep;
use saves::{LlamaRun, FP32};

/// Refuses what the replay does not cover, naming each key (all at once).
fn check(a: &Architecture, s: &Scenario) -> Result<(), ScenarioError> {
    let mut r = Refusals::trainer(s);
    let shape_ok = matches!(a.positions, Positions::Rotary { .. })
        && a.norm == Norm::RmsNorm
        && match &a.mlp {
            Mlp::Dense(f) => swiglu(f),
            Mlp::Moe(m) => {
                swiglu(&m.expert) && m.shared.is_none_or(|f| swiglu(&f)) && !m.router_bias
            }
        }
        && a.attention.softcap.is_none()
        && a.attention.qk_norm.is_none_or(|n| n == Norm::RmsNorm)
        && !a.embeddings.scaled_by_sqrt_hidden
        && a.embeddings.logit_softcap.is_none()
        && !a.embeddings.head_bias;
    r.not(
        !shape_ok,
        "model",
        "the description is not one a Llama-family or mixture-of-experts modeling file builds \
         (rotary positions, RMSNorm, SiLU-gated MLPs or experts, no softcapping)",
    );
    let (_, row) = s.batch_layout.rows(s.batch_size, s.block_size);
    if let Some(w) = &a.attention.sliding_window {
        r.not(
            row >= w.window,
            "block_size",
            "reaches the sliding window: transformers then builds a mask, which is not replayed",
        );
    }
    r.not(
        s.dtype == Dtype::Float16,
        "dtype",
        "float16 is not replayed for the Llama family: use bfloat16 or float32",
    );
    r.not(
        s.dropout > 0.0,
        "dropout",
        "the Llama family is replayed without dropout (attention_dropout 0, every released \
         config's): set it to 0",
    );
    r.not(
        s.grad_checkpoint
            && s.flash
            && !s.flash_attention_2()
            && a.attention.kv_heads == 1
            && a.attention.heads > 1,
        "grad_checkpoint",
        "with one key/value head (multi-query) a checkpointed block's repeat_kv is a view of \
         the keys, which is not modelled: use eager attention (flash: false) or no \
         checkpointing",
    );
    r.not(
        s.batch_layout.masked()
            && s.flash
            && !s.flash_attention_2()
            && a.attention.kv_heads == 1
            && a.attention.heads > 1,
        "batch_layout",
        "with one key/value head (multi-query) a masked SDPA's repeat_kv is a view of the keys, \
         which is not modelled: use batch_layout = full or eager attention",
    );
    let family = match a.mlp {
        Mlp::Dense(_) => "the Llama family",
        Mlp::Moe(_) => "a mixture of experts",
    };
    r.result(&format!("{} ({family})", a.name))
}

/// A SiLU-gated feed-forward network (gate and up separate or fused).
fn swiglu(f: &FeedForward) -> bool {
    f.gated && f.activation == Activation::Silu
}

/// The Trainer step of `a` under `run` (the scenario with the model's shape): refused settings
/// first, then the peak and its moment, and the first step's peak: its moments without
/// optimizer state, or its `optimizer.step()`, which creates the state beside every weight,
/// every gradient and the token batch.
pub(crate) fn step(
    a: &Architecture,
    run: &Scenario,
    p: &Params,
) -> Result<TrainerStep, ScenarioError> {
    check(a, run)?;
    if run.lora_rank > 0 {
        return lora_step(a, run, p);
    }
    let r = LlamaRun::of(a, run);
    let w = r.w;
    let optimizer = optimizer_bytes(a, w, run);
    let weights = N::from(p.total) * w + N::from(a.attention.head_dim) * FP32;
    let full_grads = N::from(p.total) * w;
    // The token batch; a padded batch's attention mask or a padding-free row's `position_ids`
    // (int64, as many) beside it.
    let tokens = r.sb * if r.extra_input { 16 } else { 8 };
    let heads = if r.tied { 1u128 } else { 2 };
    let block_params = (N::from(p.total) - r.vh * heads - r.h) / u128::from(a.layers.max(1));
    let mut step = LlamaStep {
        r,
        t: StepTotals {
            weights,
            full_grads,
            optimizer,
            accumulating: run.gradient_accumulation_steps >= 2,
            checkpointed: run.grad_checkpoint,
            tokens,
            block_params,
        },
        fused: run.fused_linear_cross_entropy,
    };
    let (train, moment) = step.peak();
    step.t.optimizer = N::ZERO;
    let (before, _) = step.peak();
    let optimizer_step = weights + full_grads + optimizer + tokens;
    Ok(TrainerStep {
        train,
        moment,
        first: before.sum().max(optimizer_step),
    })
}

/// The Trainer step of PEFT's LoRA on `a` (`lora.rs`): the base frozen in its weights' dtype,
/// float32 adapters with their gradients and fused AdamW's state.
fn lora_step(a: &Architecture, run: &Scenario, p: &Params) -> Result<TrainerStep, ScenarioError> {
    let r = LlamaRun::of(a, run);
    let base = N::from(p.total) - N::from(p.lora);
    let weights = base * r.w + N::from(p.lora) * FP32 + N::from(a.attention.head_dim) * FP32;
    let (t, modules) = lora_adapters::totals(a, run, p, weights, r.sb * 8)?;
    // Autocast runs around the adapters whenever `dtype` asks for it, bf16 weights or not.
    let autocast = run.dtype != Dtype::Float32;
    let adapters = Adapters::new(r.sb, run.lora_rank, autocast, run.lora_dropout > 0.0);
    let mut step = LlamaLoraStep {
        kv: N::from(a.attention.kv_width()),
        layers: a.layers,
        r,
        t,
        adapters,
        modules,
        fused: run.fused_linear_cross_entropy,
    };
    lora_adapters::trainer_step(&mut step, || {
        if let Some(refusal) = crate::estimate::hf_moe::lora::refusal(a) {
            return refusal;
        }
        ScenarioError::key(
            "grad_checkpoint",
            format!(
                "{}: with checkpointed blocks and this vocabulary ({} tokens) a block recomputed in the backward, not the loss, can set a LoRA step's peak, which vramdoc does not model within 1 %; estimate without grad_checkpoint, or with a longer sequence or larger batch where the loss dominates",
                a.name, a.vocab_size
            ),
        )
    })
}
