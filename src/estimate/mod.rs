//! The memory estimator: a nanoGPT scenario in, parameter counts and GPU memory out.
//!
//! Pure: no I/O, no printing. Every tensor derives from a typed description of the model
//! ([`arch::Architecture`]). [`estimate`] gives one nanoGPT scenario's breakdown and verdict;
//! [`estimate_model`] a described model's with a scenario's run settings; [`what_if`] the options
//! a guide lists, [`what_if_model`] those of a described model. `serde_json::to_value(&estimate)`
//! is `vramdoc estimate --format json`'s contract; guides read its fields, typed, by dotted names.

pub mod arch;
mod attn_implementation;
mod batch_layout;
mod beam_generate;
mod bnb;
mod bnb_generate;
mod combine;
mod error;
mod eval;
mod finetune;
mod flash_attention_2;
pub mod fused_ce;
mod generate_assembly;
mod generation_tensors;
mod gpu;
mod hf_gemma;
mod hf_generate;
mod hf_gpt2;
mod hf_llama;
mod hf_moe;
pub mod kv_cache;
mod lora_adapters;
mod lora_targets;
mod memory;
mod micro_batch;
mod model_variants;
pub mod nanochat;
mod num;
mod optimizer_state;
mod overhead;
mod params;
mod qlora;
mod qlora_fused_ce;
mod quantized_decode;
mod run_moments;
mod sample;
mod scenario;
mod sharding;
mod solve;
mod train;
mod trainer;
mod trl;
mod weights;
mod whatif;
mod whatif_generate;
mod whatif_model;
mod window_generate;

use serde::Serialize;

pub use crate::scenario::{parse_byte_size, yaml_literal, Literal};
pub use arch::{Architecture, Family};
pub use attn_implementation::AttnImplementation;
pub use batch_layout::BatchLayout;
pub use error::ScenarioError;
pub use finetune::LoraTarget;
pub(crate) use generation_tensors::{generate_tensors, sample_tensors, GrowingTensor};
pub use gpu::{CapacityVariant, Gpu, GpuCatalog, VariantKind};
pub use hf_generate::{
    estimate_generate, GenerateBytes, GenerateEstimate, GenerateMoment, Generation,
};
pub(crate) use hf_moe::peft_notes;
pub(crate) use hf_moe::targets::peft_default_error;
pub use lora_targets::{LoraModule, LoraTargets};
pub use memory::TrainMoment;
pub use params::Params;
pub use sample::{estimate_sampling, SampleBytes, SampleEstimate, SampleMoment, Sampling};
pub use scenario::{
    Dtype, InitFrom, Optimizer, Phase, QuantType, Scenario, Sharding, GPT2_BLOCK, GPT2_VOCAB,
};
pub use solve::{generate_max_batch, generate_max_context, sampling_max_context, Limit, Solution};
pub use trl::{HfTrainer, TRL_VERSION};
pub use weights::WeightsDtype;
pub use whatif::{changes_between, what_if, Change, WhatIf, WhatIfKind};
pub use whatif_generate::{what_if_generate, what_if_sampling, GenerateWhatIf, GenerateWhatIfKind};
pub use whatif_model::what_if_model;

use num::N;
use run_moments::{bytes, Moments};

/// Version of the formulas and constants: the fingerprint of `src/estimate/` and `data/` that
/// `build.rs` derives (`src/fingerprint.rs`), so no build serves numbers of an older formula.
pub(crate) const ESTIMATOR_VERSION: &str = crate::assets::ESTIMATOR_FINGERPRINT;

/// Memory figures in bytes (the JSON contract's `bytes` object).
///
/// `weights + gradients + optimizer + autocast_weights + activations + logits == train_peak`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Bytes {
    /// Parameters (and flash-off causal-mask buffers) at the training peak.
    pub weights: u64,
    /// `.grad` tensors alive at the training peak.
    pub gradients: u64,
    /// Optimizer state.
    pub optimizer: u64,
    /// Autocast's 16-bit copies of the Linear weights, saved for backward.
    pub autocast_weights: u64,
    /// Activations saved for backward (and token batches) at the training peak.
    pub activations: u64,
    /// Every s·b·V term at the training peak: kept logits, log-softmax, loss-backward buffers.
    pub logits: u64,
    /// The training step's peak of allocated memory.
    pub train_peak: u64,
    /// `estimate_loss()`'s peak once optimizer state exists (every evaluation after iteration 0).
    pub eval_peak: u64,
    /// `estimate_loss()`'s peak at iteration 0, before the optimizer state exists.
    pub eval_first_peak: u64,
    /// The largest of `train_peak`, `eval_peak`, `eval_first_peak` and `resume_load_peak`:
    /// `torch.cuda.max_memory_allocated()`.
    pub peak: u64,
    /// `init_from = 'resume'`: the peak while `torch.load` holds the checkpoint on the GPU and the
    /// model is moved over (`2·weights + optimizer state + step scalars`); 0 otherwise.
    pub resume_load_peak: u64,
    /// `init_from = 'resume'`: the checkpoint's weights train.py's `state_dict` keeps alive for
    /// the whole run (counted in `weights`); 0 otherwise.
    pub(crate) resume_retained: u64,
    /// DDP's gradient buckets on each GPU (counted in `gradients`); 0 on one GPU and with FSDP.
    pub ddp_buckets: u64,
    /// `cuda_context + allocator_slack + cublas_workspace`.
    pub overhead: u64,
    /// `peak + overhead`: what nvidia-smi shows for the process (the overhead at its middle).
    pub total: u64,
    /// `total` with every overhead term at its documented low end (`overhead.rs`).
    pub total_low: u64,
    /// `total` with every overhead term at its documented high end (`overhead.rs`).
    pub total_high: u64,
    /// Memory other programs hold on the card (the scenario's `other_processes`).
    pub other_processes: u64,
    /// Hugging Face models: the first training step's peak, before the optimizer state exists
    /// (in the JSON only for them; nanoGPT's first moments are `eval_first_peak`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_step_peak: Option<u64>,
    /// One logits tensor at the training micro-batch: `b·s·V·c`.
    pub logits_tensor: u64,
    /// One logits tensor at the eval micro-batch.
    pub eval_logits_tensor: u64,
    /// CUDA context (plus torch.compile's kernels when compiling).
    pub cuda_context: u64,
    /// Reserved-but-unallocated memory of the caching allocator.
    pub allocator_slack: u64,
    /// cuBLAS workspace.
    pub cublas_workspace: u64,
}

/// Which phase sets the peak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PeakPhase {
    /// A training step (forward, backward, optimizer step).
    Train,
    /// `estimate_loss()`.
    Eval,
    /// Loading a checkpoint (`init_from = 'resume'`).
    Load,
}

impl PeakPhase {
    /// `train`, `eval` or `load`, as the estimate's JSON spells it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            PeakPhase::Train => "train",
            PeakPhase::Eval => "eval",
            PeakPhase::Load => "load",
        }
    }
}

/// Whether a scenario fits its GPU, given the range of the overhead and other programs' memory.
///
/// With `C` the capacity and `O` what other programs hold, and the total's low end, middle (the
/// point estimate) and high end (the three ends of `overhead.rs`): fits when `total_high + O ≤ C`,
/// tight when only `total + O ≤ C`, unlikely (likely does not fit) when only
/// `total_low + O ≤ C`, does not fit when `total_low + O > C` ([`Verdict::of`]). A run is
/// called "fits" only when it fits whatever the driver and the allocator do; the middle decides
/// between "tight" and "unlikely", so a total above the capacity is never called tight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Even the high end fits beside the other programs.
    Fits,
    /// The middle fits and the high end does not: it depends on the driver and the allocator.
    Tight,
    /// Only the low end fits: it fits only with a lean driver and an unfragmented cache.
    Unlikely,
    /// Even the low end does not fit.
    DoesNotFit,
}

impl Verdict {
    /// The verdict for a total of `low ≤ mid ≤ high` bytes beside `other` bytes on `capacity`
    /// bytes.
    pub fn of(low: u64, mid: u64, high: u64, other: u64, capacity: u64) -> Verdict {
        let fits = |t: u64| u128::from(t) + u128::from(other) <= u128::from(capacity);
        if fits(high) {
            Verdict::Fits
        } else if fits(mid) {
            Verdict::Tight
        } else if fits(low) {
            Verdict::Unlikely
        } else {
            Verdict::DoesNotFit
        }
    }
}

/// The GPU an estimate was checked against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuRef {
    /// Catalog id.
    pub(crate) id: String,
    /// Display name.
    pub(crate) name: String,
    /// Usable memory in bytes.
    pub capacity_bytes: u64,
    /// Whether the card has bf16 (T4 and V100 do not: bfloat16 there is a configuration error).
    pub(crate) bf16: bool,
}

impl GpuRef {
    /// The reference to a catalog card.
    pub(crate) fn of(g: &Gpu) -> GpuRef {
        GpuRef {
            id: g.id.clone(),
            name: g.name.clone(),
            capacity_bytes: g.capacity_bytes,
            bf16: g.bf16,
        }
    }
}

/// One scenario's estimate (the JSON contract of `vramdoc estimate --format json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    /// Every key with its resolved value.
    pub(crate) scenario: Scenario,
    /// Parameter counts.
    pub params: Params,
    /// Memory figures.
    pub bytes: Bytes,
    /// Whether training or evaluation sets `peak`.
    pub peak_phase: PeakPhase,
    /// The moment of the training step at which `train_peak` occurs.
    pub train_peak_moment: TrainMoment,
    /// Sequences per optimizer step, for the whole job: `batch_size · gradient_accumulation_steps`
    /// (train.py divides the accumulation among the DDP processes, each with its own batches).
    pub effective_batch: u64,
    /// `effective_batch · block_size`.
    pub tokens_per_step: u64,
    /// Micro-steps each process runs per optimizer step: `gradient_accumulation_steps /
    /// ddp_world_size`.
    pub(crate) accumulation_per_gpu: u64,
    /// The scenario's GPU, if it names one.
    pub gpu: Option<GpuRef>,
    /// The four-state verdict against the GPU, if one is named.
    pub verdict: Option<Verdict>,
    /// `verdict == fits`, if a GPU is named.
    pub fits: Option<bool>,
    /// `capacity_bytes − other_processes − total`, if a GPU is named.
    pub headroom_bytes: Option<i64>,
    /// [`ESTIMATOR_VERSION`].
    pub(crate) estimator_version: &'static str,
    /// The model the estimate is for (in the JSON only when it is not nanoGPT's, whose shape the
    /// scenario's keys already give).
    #[serde(skip_serializing_if = "Architecture::is_nanogpt")]
    pub(crate) architecture: Architecture,
    /// The figures are those of the eager step of a run its script compiles (nanochat's
    /// `base_train.py` and `chat_sft.py` call `torch.compile`; `compile` false asks for the
    /// eager step): an upper bound, so "does not fit" is not certain. In the JSON only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub eager_upper_bound: bool,
    /// nanochat's compiled step: the training peak without the float32 logits buffer that
    /// inductor's C++ backend writes in the loss's forward (CUDA's kernels may not), the low
    /// end of the compiled range; `bytes.peak` and the verdict keep the buffer. In the JSON
    /// only for a compiled nanochat step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compiled_peak_low: Option<u64>,
}

impl Estimate {
    /// The model the estimate is for.
    pub fn architecture(&self) -> &Architecture {
        &self.architecture
    }
}

/// Refuses `phase = generate` where a training step is estimated: sampling needs what to
/// generate (prompt, tokens, samples) and is [`estimate_sampling`]'s; Hugging Face's `generate`
/// is not modelled yet.
fn training_only(s: &Scenario) -> Result<(), ScenarioError> {
    if s.phase == Phase::Generate {
        return Err(ScenarioError::key(
            "phase",
            "phase = generate describes sampling with sample.py, but this estimate (and a guide's tables) is of training with train.py; sampling is estimated on the command line: vramdoc estimate sample.py, or --phase generate",
        ));
    }
    Ok(())
}

/// Estimates one scenario; errors name the scenario key at fault.
pub fn estimate(s: &Scenario, catalog: &GpuCatalog) -> Result<Estimate, ScenarioError> {
    training_only(s)?;
    if let Some(model) = &s.model {
        return Err(ScenarioError::key(
            "model",
            format!("model = {model} names a model other than nanoGPT's, which this estimate (and a guide's tables) does not read yet; on the command line, vramdoc estimate --model {model} estimates it"),
        ));
    }
    if s.trainer != HfTrainer::Transformers {
        return Err(ScenarioError::key(
            "trainer",
            "nanoGPT's model trains in its own train.py loop: trainer names what runs a Hugging Face model's step (given with model); remove it",
        ));
    }
    if s.optimizer == Optimizer::PagedAdamw8bit {
        return Err(ScenarioError::key(
            "optimizer",
            "paged_adamw8bit is modelled for Hugging Face models (Trainer's optim=\"paged_adamw_8bit\", with --model); for nanoGPT use adamw8bit (bitsandbytes' AdamW8bit)",
        ));
    }
    s.validate(catalog)?;
    s.check_precision()?;
    s.check_nanogpt_lora()?;
    fused_ce::check(None, s)?;
    // The run train.py does (a GPT-2 checkpoint's shape), as one DDP process sees it.
    let run = s.as_run();
    let process = run.per_process();
    // The model is described and its parameters counted once; every component reads them.
    let architecture = Architecture::nanogpt(&run);
    let counted = params::count_of(&architecture, &run)?;
    let m = memory::memory(&process, &counted);
    let setup = memory::setup(&process, &counted);
    let moments = Moments::with_setup(&run, &m, &setup).sharded(&process, &counted, &m, &setup);
    let (peak, peak_phase) = moments.peak(&setup, run.eval_only);
    let s = &run;
    let bytes = bytes(s, &m, &setup, &moments, peak)?;
    finish(
        s,
        architecture,
        counted.params,
        bytes,
        &moments,
        peak_phase,
        &process,
        catalog,
    )
}

/// The estimate of a training step of the model `a` with the run settings of `s` (batch,
/// sequence length `block_size`, accumulation, `dtype`, attention kernel `flash` (SDPA) or not
/// (eager), `dropout`, `grad_checkpoint`, GPU). nanoGPT's family is [`estimate`] (the model must be
/// the scenario's own); Hugging Face's GPT-2 is `hf_gpt2/` (the scenario's shape keys are replaced
/// by the model's; `dropout` stands for the config's `resid_pdrop`, `embd_pdrop` and `attn_pdrop`
/// alike, GPT-2's 0.1; a Trainer step has no evaluation, so `eval_peak` is 0 and the first step's
/// peak is `bytes.first_step_peak`); the Llama family (Llama, Mistral, Qwen2, Qwen3, Phi-3) is
/// `hf_llama/` the same way (`weights_dtype` for weights loaded in 16 bits and trained as
/// they are), mixtures of experts `hf_moe/` on the Llama step, and Gemma 2 and 3 (`hf_gemma/`);
/// every other family is an error naming it.
pub fn estimate_model(
    a: &Architecture,
    s: &Scenario,
    catalog: &GpuCatalog,
) -> Result<Estimate, ScenarioError> {
    training_only(s)?;
    a.validate()?;
    a.computed()?;
    match a.family {
        Family::HfGpt2
        | Family::Llama
        | Family::Moe
        | Family::Nanochat
        | Family::Gemma2
        | Family::Gemma3 => {
            estimate_trainer_step(a, s, catalog).map_err(|e| s.at_given_attention(e))
        }
        _ => {
            let e = estimate(s, catalog)?;
            if &e.architecture != a {
                return Err(ScenarioError::general(format!(
                    "the model given ({}) is not the one the scenario's n_layer, n_head, n_embd, \
                     vocab_size, block_size and bias describe",
                    a.name
                )));
            }
            Ok(e)
        }
    }
}

/// A Hugging Face model's Trainer step (no evaluation or setup), the model's shape in the keys.
fn estimate_trainer_step(
    a: &Architecture,
    s: &Scenario,
    catalog: &GpuCatalog,
) -> Result<Estimate, ScenarioError> {
    let mut run = s.clone();
    run.settle_attention()?;
    flash_attention_2::check(a, &run)?;
    batch_layout::check(a, &run)?;
    run.n_layer = a.layers;
    run.n_head = a.attention.heads;
    run.n_embd = a.hidden;
    run.vocab_size = a.vocab_size;
    run.bias = a.attention.qkv_bias;
    run.validate(catalog)?;
    trl::check_scope(a, &run)?;
    fused_ce::check(Some(a), &run)?;
    if a.family == Family::Moe {
        hf_moe::check_adapters(a, &run)?;
    }
    if run.load_in_8bit {
        return Err(qlora::int8_refusal(a));
    }
    let mut params = params::count_of(a, &run)?.params;
    let step = if a.family == Family::Nanochat {
        nanochat::step(a, &run)?
    } else if matches!(a.family, Family::Gemma2 | Family::Gemma3) && !run.load_in_4bit {
        hf_gemma::step(a, &run, &params)?
    } else if run.load_in_4bit {
        let (step, q) = match a.family {
            Family::Gemma2 | Family::Gemma3 => hf_gemma::qlora_step(a, &run)?,
            Family::HfGpt2 => qlora::step(a, &run, N::ZERO)?,
            // TRL's SFTTrainer prepares the Llama family only (`trl::check_scope`).
            _ if run.trainer == HfTrainer::Trl => {
                trl::qlora_step(a, &run, N::from(a.attention.head_dim) * 4)?
            }
            // A mixture of experts' refusal says what QLoRA leaves in float32 there.
            _ => qlora::step(a, &run, N::from(a.attention.head_dim) * 4).map_err(|mut e| {
                for note in hf_moe::peft_notes(a, &run) {
                    e.message = format!("{}; {note}", e.message);
                }
                e
            })?,
        };
        // The model's own parameters (4-bit weights counted whole) and the adapters.
        params.total = params.total.saturating_sub(params.lora) + q.trainable;
        params.trainable = q.trainable;
        params.lora = q.trainable;
        // Trainer's decay group: every adapter weight (no bias, no norm among them).
        params.decay = q.trainable;
        params.decay_tensors = q.adapter_tensors;
        params.no_decay = 0;
        params.no_decay_tensors = 0;
        step
    } else {
        match a.family {
            Family::HfGpt2 => hf_gpt2::step(a, &run, &params)?,
            Family::Moe => hf_moe::step(a, &run, &params)?,
            _ => hf_llama::step(a, &run, &params)?,
        }
    };
    let (train, train_moment) = (step.train, step.moment);
    let logits = N::from(fused_ce::logits_rows(&run, a.hidden)) * N::from(a.vocab_size);
    let c = trainer::ElementBytes::of(&run).c;
    let m = memory::Memory {
        train,
        train_moment,
        eval: N::ZERO,
        eval_first: N::ZERO,
        logits_tensor: logits * c,
        eval_logits_tensor: N::ZERO,
    };
    let moments = Moments {
        train,
        train_moment,
        eval: N::ZERO,
        eval_first: N::ZERO,
    };
    let setup = memory::Setup::default();
    let peak = train.sum();
    let mut bytes = bytes(&run, &m, &setup, &moments, peak)?;
    bytes.first_step_peak = Some(step.first.to_u64("the first step's peak")?);
    let process = nanochat::process(a, &run);
    finish(
        &run,
        a.clone(),
        params,
        bytes,
        &moments,
        PeakPhase::Train,
        &process,
        catalog,
    )
}

/// The estimate from its figures: batch arithmetic and the verdict against the GPU.
#[allow(clippy::too_many_arguments)]
fn finish(
    s: &Scenario,
    architecture: Architecture,
    params: Params,
    bytes: Bytes,
    moments: &Moments,
    peak_phase: PeakPhase,
    process: &Scenario,
    catalog: &GpuCatalog,
) -> Result<Estimate, ScenarioError> {
    let effective_batch = (N::from(s.batch_size) * N::from(s.gradient_accumulation_steps))
        .to_u64("the effective batch")?;
    let tokens_per_step =
        (N::from(effective_batch) * N::from(s.block_size)).to_u64("the tokens per step")?;
    let compiled_peak_low = nanochat::compiled_low_peak(&architecture, s)
        .map(|b| N(b).to_u64("the compiled peak"))
        .transpose()?;
    let gpu = s.gpu.as_deref().and_then(|id| catalog.get(id));
    let verdict = gpu.map(|g| {
        Verdict::of(
            bytes.total_low,
            bytes.total,
            bytes.total_high,
            s.other_processes,
            g.capacity_bytes,
        )
    });
    Ok(Estimate {
        scenario: s.clone(),
        params,
        bytes,
        peak_phase,
        train_peak_moment: moments.train_moment,
        effective_batch,
        tokens_per_step,
        accumulation_per_gpu: process.gradient_accumulation_steps,
        gpu: gpu.map(GpuRef::of),
        verdict,
        fits: verdict.map(|v| v == Verdict::Fits),
        headroom_bytes: gpu.map(|g| headroom(g.capacity_bytes, s.other_processes, bytes.total)),
        estimator_version: ESTIMATOR_VERSION,
        eager_upper_bound: architecture.family == Family::Nanochat && !s.compile,
        compiled_peak_low,
        architecture,
    })
}

/// `capacity − other − total`, clamped to an i64.
fn headroom(capacity: u64, other: u64, total: u64) -> i64 {
    let h = i128::from(capacity) - i128::from(other) - i128::from(total);
    h.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}
