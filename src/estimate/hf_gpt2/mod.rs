//! Hugging Face's GPT-2 (`GPT2LMHeadModel`, transformers 5.24's `modeling_gpt2`) trained as
//! `Trainer` runs a step: `model(input_ids=X, labels=X)` under autocast (float32: none), the loss
//! divided over the accumulation steps, `backward`, `clip_grad_norm_`, fused AdamW
//! (`adamw_torch_fused`), `zero_grad(set_to_none=True)`; float32 weights; the config's dropouts.
//!
//! Source: the fake-tensor replay of that step (`tools/hf_replay/replay_gpt2.py`, torch 2.15,
//! transformers 5.24; `--explain` lists the storages alive at the peak, grouped by the aten op
//! that made them), read against `modeling_gpt2.py`. Held to `tests/data/hf_gpt2_replay.json`
//! (`tests/it/hf_gpt2.rs`: every run's peak within 1 %, in fact 0.34 % at worst; parameters,
//! weights, gradients and optimizer bytes exact). Notation as in `memory.rs`: `L` layers, `a` heads, `h` hidden, `V` vocabulary, `s`
//! sequence, `b` micro-batch, `c` bytes of a compute element (2 under bf16/fp16 autocast, 4 in
//! float32), `r = 4` (the residual stream and LayerNorm inputs stay float32 under autocast),
//! `sbh = s·b·h`, `d` whether dropout is on.
//!
//! What HF's GPT-2 keeps that nanoGPT's model does not (with GPT-2's vocabulary the replay's
//! peak is cross-entropy's backward; the other moments are in `backward.rs`):
//! - **The loss in float32** (`ForCausalLMLoss` calls `logits.float()` and pads the labels rather
//!   than shifting the logits): at `log_softmax`'s backward the saved fp32 log-softmax, the fp32
//!   gradient from `nll_loss` and the fp32 result are alive, `12·sbV` bytes in every dtype;
//!   `Trainer` keeps only the loss, so the 16-bit logits are gone by then.
//! - **`gelu_new` written out in Python** (`NewGELUActivation`): autograd saves `pow`'s input,
//!   `0.5·x`, the `tanh` output, `1 + tanh` and the product (c_proj's input): five `4h`-wide
//!   tensors where `nn.GELU` saves one. `torch.pow` is on CUDA autocast's float32 list, so under
//!   autocast three of them are float32: `(12 + 2c)·4·sbh` per layer (`saves.rs`; the replay
//!   emulates that rule, and GPU measurements confirm it: `tests/it/hf_gpt2.rs`).
//! - **A KV cache in training**: `use_cache` defaults to true and each layer's keys and values are
//!   concatenated into a `DynamicCache` (a copy, `2c·sbh` per layer) that attention then saves.
//! - **Eager attention** copies the queries and the attention output into contiguous tensors
//!   (`2c·sbh`) and saves per score (`a·s²·b` elements) the fp32 softmax (4), its dropout output in
//!   the compute dtype (`c`, or the 16-bit cast when `d` is off; nothing more in float32) and the
//!   dropout's 1-byte mask. SDPA saves the fused q/k/v projection's output (`3c·sbh`, which the
//!   query view keeps alive), the kernel's output (`c·sbh`, c_proj's input too) and its fp32
//!   logsumexp (`4·a·s·b`; the memory-efficient kernel that float32 gets rounds `s` up to 32).
//! - Per LayerNorm (`2L + 1`): its fp32 input (`r`), its output as the next Linear's input (`c`:
//!   the autocast copy, or the output itself in float32), mean and rstd (`8·s·b`); per dropout
//!   site (`2L + 1`: embeddings, each attention and MLP output) a 1-byte mask when `d`.
//! - Autocast's 16-bit weight copies (`2·(V·h + 12·L·h²)`): the Conv1D weights and the tied
//!   head, saved for backward; the bias copies are not saved.

mod backward;
mod lora;
mod saves;

use super::arch::{Architecture, Positions};
use super::error::ScenarioError;
use super::lora_adapters::{self, Adapters};
use super::memory::{Components, TrainMoment};
use super::num::N;
use super::params::Params;
use super::scenario::Scenario;
use super::trainer::{optimizer_bytes, Refusals, StepTotals, TrainerStep};
use backward::Gpt2Step;
use lora::Gpt2LoraStep;
use saves::{Gpt2Run, FP32};

/// Refuses the settings the replay does not cover, naming each key (all at once).
fn check(a: &Architecture, s: &Scenario) -> Result<(), ScenarioError> {
    let mut r = Refusals::trainer(s);
    r.not(
        s.grad_checkpoint && s.flash,
        "grad_checkpoint",
        "gradient checkpointing is replayed with eager attention only (set flash: false): \
         under checkpointing transformers passes SDPA an explicit mask",
    );
    r.not(
        s.half_weights(),
        "weights_dtype",
        "the replay loads float32 weights (weights_dtype: float32)",
    );
    if let Positions::Learned { max_positions } = a.positions {
        r.not(
            s.block_size > max_positions,
            "block_size",
            "longer than the model's n_positions",
        );
    }
    r.result("Hugging Face's GPT-2")
}

/// The Trainer step of `a` under `run` (the scenario with the model's shape): refused settings
/// first, then the peak, its moment and the first step's peak, with fused AdamW's float32 state.
pub(crate) fn step(
    a: &Architecture,
    run: &Scenario,
    p: &Params,
) -> Result<TrainerStep, ScenarioError> {
    check(a, run)?;
    if run.lora_rank > 0 {
        return lora_step(a, run, p);
    }
    let optimizer = optimizer_bytes(a, FP32, run);
    let (train, moment) = train_peak(a, run, p, optimizer);
    Ok(TrainerStep {
        train,
        moment,
        first: first_step_peak(a, run, p, optimizer),
    })
}

/// The training step's peak (optimizer state of `optimizer` bytes) and its moment
/// (`backward.rs`).
fn train_peak(
    a: &Architecture,
    s: &Scenario,
    p: &Params,
    optimizer: N,
) -> (Components, TrainMoment) {
    let r = Gpt2Run::of(a, s);
    let tokens = r.sb * 8 + N::from(s.block_size) * 8;
    // A block's parameters: all but the embeddings and ln_f's weight and bias.
    let block_params = (N::from(p.total) - N::from(p.embedding) - N::from(a.hidden) * 2)
        / u128::from(a.layers.max(1));
    Gpt2Step {
        r,
        t: StepTotals {
            weights: N::from(p.total) * FP32,
            full_grads: N::from(p.trainable) * FP32,
            optimizer,
            accumulating: s.gradient_accumulation_steps >= 2,
            checkpointed: s.grad_checkpoint,
            tokens,
            block_params,
        },
    }
    .peak()
}

/// The first step's peak: its training moments without optimizer state, or its
/// `optimizer.step()`, which creates the state (`optimizer` bytes) beside every weight, every
/// gradient and the token batch (the replay's first-step peak for large models at small batches).
fn first_step_peak(a: &Architecture, s: &Scenario, p: &Params, optimizer: N) -> N {
    let (before, _) = train_peak(a, s, p, N::ZERO);
    let tokens = N::from(s.block_size) * N::from(s.batch_size) * 8;
    let step = N::from(p.total) * FP32 + N::from(p.trainable) * FP32 + optimizer + tokens;
    before.sum().max(step)
}

/// The Trainer step of PEFT's LoRA on GPT-2 (`lora.rs`): float32 weights, frozen; float32
/// adapters with their gradients and fused AdamW's state.
fn lora_step(a: &Architecture, run: &Scenario, p: &Params) -> Result<TrainerStep, ScenarioError> {
    let r = Gpt2Run::of(a, run);
    let tokens = r.sb * 8 + N::from(run.block_size) * 8;
    let (t, modules) = lora_adapters::totals(a, run, p, N::from(p.total) * FP32, tokens)?;
    let adapters = Adapters::new(r.sb, run.lora_rank, r.autocast(), run.lora_dropout > 0.0);
    let mut step = Gpt2LoraStep {
        r,
        t,
        adapters,
        modules,
    };
    lora_adapters::trainer_step(&mut step, || {
        ScenarioError::key(
            "lora_rank",
            format!(
                "{}: with this vocabulary ({} tokens) and sequence a block's backward, not the loss, could set a LoRA step's peak, which vramdoc models for GPT-2 at the loss only; estimate a longer sequence, a larger batch or the full vocabulary",
                a.name, a.vocab_size
            ),
        )
    })
}
