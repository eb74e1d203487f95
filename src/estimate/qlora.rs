//! QLoRA's resident bytes for a Hugging Face model: what `from_pretrained(...,
//! quantization_config=BitsAndBytesConfig(load_in_4bit=True, ...))`, PEFT's
//! `prepare_model_for_kbit_training` and `get_peft_model(LoraConfig(r, target_modules))` leave
//! on the GPU before the first step, and the adapters' gradients and optimizer state.
//!
//! - Every block's `nn.Linear` (GPT-2's `Conv1D`) weight in 4 bits (`bnb::four_bit_weight_bytes`);
//!   the head (`lm_head`, tied or not), embeddings, norms and biases are not quantized
//!   (`get_keys_to_not_convert`, `replace_with_bnb_linear`).
//! - `prepare_model_for_kbit_training` (peft 0.21.2, `utils/other.py` 158-258) freezes every
//!   parameter and casts each 16-bit one that is not a `Params4bit` to float32: the unquantized
//!   parameters are 4 bytes each whatever the model was loaded in. It then calls
//!   `enable_input_require_grads` and `gradient_checkpointing_enable` (non-reentrant in
//!   transformers 5.24): QLoRA always checkpoints its blocks.
//! - The adapters `A` (`r × in`) and `B` (`out × r`) of every target in every block, float32
//!   (PEFT does not cast them to a 4-bit base's dtype), each with a float32 gradient and the
//!   optimizer's state.
//!
//! The step ([`step`]): `Trainer` with `bf16=True` (autocast) on that model. With a real
//! vocabulary its peak is the loss's backward (or, with large adapters beside short rows, the
//! end of the loss's forward: [`ForwardEnd`]), made of:
//!
//! - the resident bytes above, except that `Linear4bit.forward` casts a quantized layer's bias
//!   to the compute dtype in place (`bias.data = bias.data.to(x.dtype)`) at the first forward,
//!   so with a bfloat16 compute dtype those biases are 2 bytes each from then on;
//! - the adapters' gradients of the earlier micro-steps (when accumulating) and the optimizer's
//!   state;
//! - the checkpoint boundaries: each block's float32 input and the last block's output,
//!   `(L + 1)·4·s·b·h` (the residual stream is float32 after the upcast), the rotary `cos` and
//!   `sin` (`2·4·s·d`, one position row for the batch), the boolean causal mask transformers
//!   builds for SDPA under checkpointing (`b·s·s`) and the final RMSNorm's two float32 `s·b`
//!   statistics;
//! - the frozen float32 head's bfloat16 copy, made by autocast for the head's matmul and saved
//!   for the hidden state's gradient (autocast's cache keeps only copies of weights that need
//!   gradients, so this one is not shared), `2·V·h`;
//! - the loss's `log_softmax` output, `nll_loss`'s gradient and `log_softmax`'s backward result,
//!   float32 `s·b·V` each (the float32 copy of the logits `ForCausalLMLoss` makes is not saved);
//! - the token batch (`8·s·b`) and the loss (two float32 scalars).
//!
//! Within 0.4 % of every such replayed run (to the byte for the Llama family). With a small
//! vocabulary a recomputed block's backward passes the loss, which is not modelled: the step is
//! refused when the loss's tensors are not larger than what such a block holds, with a margin
//! ([`block_bound`]). Held to `tests/data/hf_qlora_replay.json`
//! (`tests/it/hf_qlora.rs`).

use super::arch::{Architecture, ParamKind, Positions};
use super::bnb;
use super::error::ScenarioError;
use super::memory::{Components, TrainMoment};
use super::num::N;
use super::scenario::{Dtype, Optimizer, Scenario};
use super::trainer::{Refusals, TrainerStep};

/// QLoRA's bytes and counts before the first step, and what the adapters add in training.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct QloraBytes {
    /// Parameters as `model.parameters()` counts them: the 4-bit weights by their packed uint8
    /// elements (half their count), the rest and the adapters whole.
    pub(crate) params: u64,
    /// The adapters' parameters, the only trainable ones.
    pub(crate) trainable: u64,
    /// Adapter tensors (`A` and `B` per target per block).
    pub(crate) adapter_tensors: u64,
    /// Everything resident: packed weights with their quantization state, float32 unquantized
    /// parameters, float32 adapters, the rotary buffers.
    pub(crate) weights: N,
    /// The adapters' float32 gradients.
    pub(crate) grads: N,
    /// The optimizer's state in PyTorch's allocator.
    pub(crate) optimizer: N,
    /// A paged optimizer's moments, in CUDA unified memory outside the allocator.
    pub(crate) paged: N,
}

/// Float32 bytes.
const FP32: u128 = 4;

/// QLoRA's bytes for `a` trained as `s` says (`load_in_4bit`, `lora_rank`, `lora_targets`,
/// `bnb_4bit_use_double_quant`, `optimizer`); `rotary_buffers` are the model's float32 buffers.
pub(crate) fn qlora_bytes(
    a: &Architecture,
    s: &Scenario,
    rotary_buffers: N,
) -> Result<QloraBytes, ScenarioError> {
    let modules = s
        .lora_targets
        .resolve(a)
        .map_err(|e| ScenarioError::key("lora_targets", e))?;
    let dq = s.bnb_4bit_use_double_quant;
    let (mut params, mut weights) = (0u64, bnb::nested_map_bytes(dq));
    for t in a.parameters() {
        let numel = u128::from(t.numel());
        let count = u128::from(t.count);
        if bnb::quantized(t.kind, &t.name) {
            weights = weights + bnb::four_bit_weight_bytes(numel, dq) * count;
            params += (t.numel().div_ceil(2)).saturating_mul(t.count);
        } else {
            weights = weights + N(numel * count * FP32);
            params += t.numel().saturating_mul(t.count);
        }
    }
    let rank = u128::from(s.lora_rank);
    let layers = u128::from(a.layers);
    let mut shapes = Vec::with_capacity(modules.len() * 2);
    for m in &modules {
        let (input, output) = m.features(a);
        shapes.push(rank * u128::from(input));
        shapes.push(u128::from(output) * rank);
    }
    let trainable: u128 = shapes.iter().sum::<u128>() * layers;
    let tensors = shapes.len() as u128 * layers;
    let (optimizer, paged) = match s.optimizer {
        Optimizer::Adamw8bit | Optimizer::PagedAdamw8bit => {
            let paged = s.optimizer == Optimizer::PagedAdamw8bit;
            let (mut dev, mut host) = (N::ZERO, N::ZERO);
            for &numel in &shapes {
                let (d, h) = bnb::adamw_state(numel, false, paged);
                dev = dev + d * layers;
                host = host + h * layers;
            }
            // The two 256-entry maps, once a tensor has 8-bit state (4096 elements or more).
            let maps = if shapes.iter().any(|&n| n >= 4096) {
                N(2 * 256 * 4)
            } else {
                N::ZERO
            };
            (dev + maps, host)
        }
        // Fused AdamW: two float32 moments and a float32 `step` per tensor.
        Optimizer::Adamw | Optimizer::Sgd => (N(trainable * 2 * FP32 + tensors * 4), N::ZERO),
    };
    let trainable_u64 = u64::try_from(trainable).unwrap_or(u64::MAX);
    Ok(QloraBytes {
        params: params.saturating_add(trainable_u64),
        trainable: trainable_u64,
        adapter_tensors: u64::try_from(tensors).unwrap_or(u64::MAX),
        weights: weights + N(trainable * FP32) + rotary_buffers,
        grads: N(trainable * FP32),
        optimizer,
        paged,
    })
}

/// What a recomputed block's backward keeps beside the checkpoints under QLoRA, with a tenth
/// added: read from the replay's list at that moment (`tiny-llama-v1024`, `--explain`), the
/// MLP's backward holds six float32 `s·b·I` tensors (a quantized layer's output is cast back to
/// the float32 input's dtype, and the adapters' sums stay float32), nine bfloat16 and six
/// float32 `s·b·h` ones: `24·I + 42·h` bytes per token. A mixture of experts' recomputed block
/// is modelled (`hf_moe::qlora`): no bound.
pub(crate) fn block_bound(a: &Architecture, s: &Scenario) -> N {
    let sb = N::from(s.block_size) * N::from(s.batch_size);
    match &a.mlp {
        super::arch::Mlp::Dense(f) => {
            sb * (24 * u128::from(f.intermediate) + 42 * u128::from(a.hidden)) * 11 / 10
        }
        super::arch::Mlp::Moe(_) => N::ZERO,
    }
}

/// What every family's QLoRA replays keep to, refused otherwise: Trainer's settings
/// (`Refusals::trainer`), bf16 autocast and a bf16 or float32 compute dtype.
pub(crate) fn recipe_refusals(s: &Scenario) -> Refusals {
    let mut r = Refusals::trainer(s);
    r.not(
        s.dtype != Dtype::Bfloat16,
        "dtype",
        "QLoRA is replayed with Trainer's bf16=True (bfloat16 autocast): set dtype to bfloat16",
    );
    r.not(
        s.bnb_4bit_compute_dtype == Dtype::Float16,
        "bnb_4bit_compute_dtype",
        "a float16 compute dtype is not replayed: use bfloat16 (or float32)",
    );
    r
}

/// Refuses what the QLoRA replays do not cover, naming each key.
fn check(a: &Architecture, s: &Scenario, loss: N) -> Result<(), ScenarioError> {
    let mut r = recipe_refusals(s);
    r.not(
        !s.flash,
        "flash",
        "QLoRA is replayed with SDPA attention (attn_implementation sdpa): set flash to true",
    );
    r.not(
        loss < block_bound(a, s),
        "model",
        "the loss's tensors are not clearly larger than a recomputed block's backward (a small \
         vocabulary, or wide blocks for it), and which one is the peak is not modelled for \
         QLoRA",
    );
    r.result(&format!("{} with QLoRA", a.name))
}

/// QLoRA's Trainer step of `a` under `run` (`load_in_4bit` with LoRA adapters): its resident
/// bytes, the loss-backward peak the module docs describe, and the first step's peak (the same
/// moment without optimizer state, or its `optimizer.step()`).
pub(crate) fn step(
    a: &Architecture,
    run: &Scenario,
    rotary_buffers: N,
) -> Result<(TrainerStep, QloraBytes), ScenarioError> {
    if run.fused_linear_cross_entropy {
        return super::qlora_fused_ce::step(a, run, rotary_buffers);
    }
    let (s, b) = (N::from(run.block_size), N::from(run.batch_size));
    let sb = s * b;
    let (v, h) = (N::from(a.vocab_size), N::from(a.hidden));
    let logits = sb * v * (3 * FP32);
    let head_copy = v * h * 2;
    check(a, run, logits + head_copy)?;
    let q = qlora_bytes(a, run, rotary_buffers)?;
    let activations = checkpointed_activations(a, run) + N(2 * FP32);
    let loss = LossBackward {
        weights: weights_after_first_forward(a, run, &q),
        head_copy,
        activations,
        logits,
        forward_end: Some(ForwardEnd::of(run, a, &q)),
    };
    // A mixture of experts' recomputed block, with its float32 experts, may pass the loss.
    let step = super::hf_moe::qlora::step(a, run, &q, &loss).unwrap_or_else(|| loss.step(run, &q));
    Ok((step, q))
}

/// `q`'s resident bytes once the first forward has run: `Linear4bit.forward` casts a quantized
/// layer's bias to the compute dtype in place, so with a bfloat16 compute dtype those biases
/// are 2 bytes each from then on (the module docs' first item).
pub(crate) fn weights_after_first_forward(a: &Architecture, run: &Scenario, q: &QloraBytes) -> N {
    if run.bnb_4bit_compute_dtype == Dtype::Float32 {
        return q.weights;
    }
    let biases: u128 = a
        .parameters()
        .iter()
        .filter(|t| t.kind == ParamKind::LinearBias && !t.name.starts_with("lm_head"))
        .map(|t| u128::from(t.numel()) * u128::from(t.count))
        .sum();
    q.weights - N(biases * 2)
}

/// What QLoRA's checkpointed step keeps beside the loss (the module docs' third item): each
/// block's float32 input and the last block's output, the rotary `cos` and `sin`, SDPA's
/// boolean mask, the final RMSNorm's two float32 statistics and the token batch.
pub(crate) fn checkpointed_activations(a: &Architecture, run: &Scenario) -> N {
    let (s, b) = (N::from(run.block_size), N::from(run.batch_size));
    let sb = s * b;
    let rotary = match a.positions {
        Positions::Rotary { .. } => s * N::from(a.attention.head_dim) * (2 * FP32),
        Positions::Learned { .. } => N::ZERO,
    };
    let boundaries = sb * N::from(a.hidden) * (u128::from(a.layers) + 1) * FP32;
    boundaries + rotary + sb * s + sb * (2 * FP32) + sb * 8
}

/// The end of the loss's forward, the peak when the adapters are large beside the loss's
/// buffers (a high rank on every linear layer, short rows; replayed `…-r512`/`…-r256` runs):
/// what the loss's backward holds, except that the loss's `s·b·V` buffers are those of the
/// forward and autocast's weight cache is still alive. Read from the replay's list at that
/// moment (`replay_qlora.py --explain`):
///
/// - autocast's bfloat16 copy of every float32 adapter (its cache keeps the copies of weights
///   that need gradients until the autocast region ends, after the loss), 2 bytes per
///   trainable parameter;
/// - the head's bfloat16 logits, `ForCausalLMLoss`'s float32 copy and `log_softmax`'s output,
///   `(2 + 4 + 4)·s·b·V`;
/// - beside the checkpoints, three more float32 `s·b·h` tensors, `12·s·b·h`: the final norm's
///   output, and an embedding output with its gradient left from the step before (the list
///   names them `embedding` and `backward: add`).
pub(crate) struct ForwardEnd {
    pub(crate) adapter_copies: N,
    pub(crate) activations: N,
    pub(crate) logits: N,
}

impl ForwardEnd {
    /// The forward's end of `run` on `a`, with `q`'s adapters.
    pub(crate) fn of(run: &Scenario, a: &Architecture, q: &QloraBytes) -> ForwardEnd {
        let sb = N::from(run.block_size) * N::from(run.batch_size);
        ForwardEnd {
            adapter_copies: N::from(q.trainable) * 2,
            activations: sb * N::from(a.hidden) * (3 * FP32),
            logits: sb * N::from(a.vocab_size) * 10,
        }
    }
}

/// QLoRA's peak, the loss's backward, by component: the resident `weights`, the head's bf16
/// copy, the activations (the token batch among them) and the loss's `s·b·V` buffers; and,
/// where it is modelled, the end of the loss's forward ([`ForwardEnd`], what it adds to or
/// holds instead of those), the peak when it is larger.
pub(crate) struct LossBackward {
    pub(crate) weights: N,
    pub(crate) head_copy: N,
    pub(crate) activations: N,
    pub(crate) logits: N,
    pub(crate) forward_end: Option<ForwardEnd>,
}

impl LossBackward {
    /// The step of `run` with the adapters' gradients of earlier micro-steps (accumulating)
    /// and the optimizer state of `q`; the first step's peak is this moment without optimizer
    /// state, or its `optimizer.step()` (every weight, the adapters' gradients, the state and
    /// the token batch).
    pub(crate) fn step(&self, run: &Scenario, q: &QloraBytes) -> TrainerStep {
        let earlier = if run.gradient_accumulation_steps >= 2 {
            q.grads
        } else {
            N::ZERO
        };
        let backward = |optimizer: N| Components {
            weights: self.weights,
            gradients: earlier,
            optimizer,
            autocast_weights: self.head_copy,
            activations: self.activations,
            logits: self.logits,
        };
        let forward = |optimizer: N| {
            self.forward_end.as_ref().map(|f| Components {
                autocast_weights: self.head_copy + f.adapter_copies,
                activations: self.activations + f.activations,
                logits: f.logits,
                ..backward(optimizer)
            })
        };
        let tokens = N::from(run.block_size) * N::from(run.batch_size) * 8;
        let optimizer_step = self.weights + q.grads + q.optimizer + tokens;
        let (train, moment) = match forward(q.optimizer) {
            Some(f) if f.sum() > backward(q.optimizer).sum() => (f, TrainMoment::LossForward),
            _ => (backward(q.optimizer), TrainMoment::LossBackward),
        };
        let first_forward = forward(N::ZERO).map_or(N::ZERO, |f| f.sum());
        TrainerStep {
            train,
            moment,
            first: backward(N::ZERO)
                .sum()
                .max(first_forward)
                .max(optimizer_step),
        }
    }
}

/// `load_in_8bit`'s refusal, with what the weights would take: every block's Linear weight
/// under LLM.int8() (`bnb::int8_weight_bytes`), everything else in 16 bits (the model's load
/// dtype); its training step is not replayed.
pub(crate) fn int8_refusal(a: &Architecture) -> ScenarioError {
    let mut bytes = N::ZERO;
    for t in a.parameters() {
        let dims = t.shape.dims();
        let count = u128::from(t.count);
        bytes = bytes
            + if bnb::quantized(t.kind, &t.name) && dims.len() == 2 {
                bnb::int8_weight_bytes(u128::from(dims[0]), u128::from(dims[1])) * count
            } else {
                N(u128::from(t.numel()) * count * 2)
            };
    }
    let gib = bytes.0 as f64 / f64::from(1u32 << 30);
    ScenarioError::key(
        "load_in_8bit",
        format!(
            "{}'s weights take {gib:.2} GiB under LLM.int8() (an int8 per Linear weight and a \
             float32 scale per row, the rest in 16 bits), but its training step is not replayed: \
             use load_in_4bit for QLoRA",
            a.name
        ),
    )
}
