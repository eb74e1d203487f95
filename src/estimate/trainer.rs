//! What the Hugging Face families (`hf_gpt2/`, `hf_llama/`) share: a `Trainer` step's result,
//! fused AdamW's state, and the refusal of what no replay covers.
//!
//! `Trainer`'s default optimizer with torch ≥ 2.8 is `adamw_torch_fused`: per parameter tensor
//! two moments of the parameter's dtype and shape (`exp_avg`, `exp_avg_sq`), and a float32
//! `step` tensor kept on the device (fused AdamW's `_init_group`). Every replay
//! (`tools/hf_replay/`) records these bytes, and the tests hold this sum to them exactly.

use super::arch::Architecture;
use super::bnb;
use super::error::ScenarioError;
use super::memory::{Components, TrainMoment};
use super::num::N;
use super::scenario::{Dtype, InitFrom, Optimizer, Scenario, Sharding};

/// One Trainer step of a Hugging Face model, as its family computes it.
pub(crate) struct TrainerStep {
    /// The peak of a step once the optimizer state exists (the second step on), by component.
    pub(crate) train: Components,
    /// When in the step it occurs.
    pub(crate) moment: TrainMoment,
    /// The first step's peak: no optimizer state until its `optimizer.step()` creates it.
    pub(crate) first: N,
}

/// What every moment of a family's step shares, besides the run's sizes.
pub(crate) struct StepTotals {
    /// The weights (and any buffers beside them).
    pub(crate) weights: N,
    /// Every gradient.
    pub(crate) full_grads: N,
    /// AdamW's state (0 in the first step).
    pub(crate) optimizer: N,
    /// `.grad` survives between micro-steps.
    pub(crate) accumulating: bool,
    /// Blocks checkpointed.
    pub(crate) checkpointed: bool,
    /// The token batch (`input_ids`, the labels the same tensor; GPT-2's `position_ids`).
    pub(crate) tokens: N,
    /// Parameters of one block.
    pub(crate) block_params: N,
}

impl StepTotals {
    /// The gradients of earlier micro-steps at a moment before this micro-step's own: every one
    /// when accumulating, none otherwise.
    pub(crate) fn earlier_grads(&self) -> N {
        if self.accumulating {
            self.full_grads
        } else {
            N::ZERO
        }
    }

    /// A moment's components from its gradients, weight copies, activations (the token batch
    /// added) and `s·b·V` buffers.
    pub(crate) fn at(
        &self,
        gradients: N,
        autocast_weights: N,
        activations: N,
        logits: N,
    ) -> Components {
        Components {
            weights: self.weights,
            gradients,
            optimizer: self.optimizer,
            autocast_weights,
            activations: activations + self.tokens,
            logits,
        }
    }
}

impl StepTotals {
    /// The step from a family's candidate moments over these totals: the largest once the
    /// optimizer state exists, and the first step's peak, the largest without optimizer state
    /// or its `optimizer.step()`, which creates the state beside every weight, every gradient
    /// and the token batch.
    pub(crate) fn step(
        mut self,
        peak: impl Fn(&StepTotals) -> (Components, TrainMoment),
    ) -> TrainerStep {
        let (train, moment) = peak(&self);
        let optimizer_step = self.weights + self.full_grads + self.optimizer + self.tokens;
        self.optimizer = N::ZERO;
        let (before, _) = peak(&self);
        TrainerStep {
            train,
            moment,
            first: before.sum().max(optimizer_step),
        }
    }
}

/// The element sizes a Trainer step runs with, from `dtype` (autocast) and the weights' dtype
/// ([`Scenario::weights`]: `weights_dtype`, or `pure_bf16`).
#[derive(Clone, Copy)]
pub(crate) struct ElementBytes {
    /// Bytes of a weight: 4, or 2 for weights loaded in bfloat16 or float16.
    pub(crate) w: u128,
    /// Bytes of a computed activation: 2 under 16-bit autocast or with 16-bit weights, else 4.
    pub(crate) c: u128,
    /// 16-bit autocast on float32 weights (autocast casts only float32 weights: 16-bit weights
    /// under autocast of their own dtype run as without it; of the other 16-bit dtype, refused
    /// by [`Refusals::trainer`]).
    pub(crate) autocast: bool,
}

impl ElementBytes {
    /// The precision of `s`.
    pub(crate) fn of(s: &Scenario) -> ElementBytes {
        let half = s.half_weights();
        let autocast = !half && s.dtype != Dtype::Float32;
        ElementBytes {
            w: if half { 2 } else { 4 },
            c: if half || autocast { 2 } else { 4 },
            autocast,
        }
    }
}

/// The optimizer state Trainer's `optim` keeps in PyTorch's allocator for the parameters of
/// `a`, all trained, held in `element` bytes: fused AdamW's ([`fused_adamw_bytes`]) or
/// bitsandbytes' 8-bit AdamW's, plain or paged ([`bnb::trainer_adamw8bit`]; a paged state's
/// moments live outside the allocator).
pub(crate) fn optimizer_bytes(a: &Architecture, element: u128, s: &Scenario) -> N {
    match s.optimizer {
        Optimizer::Adamw8bit | Optimizer::PagedAdamw8bit => {
            bnb::trainer_adamw8bit(a, s.optimizer, &|_, _| true).0
        }
        Optimizer::Adamw | Optimizer::Sgd => fused_adamw_bytes(a, element),
    }
}

/// Fused AdamW's state for the parameters of `a` held in `element` bytes: two moments per
/// element and a 4-byte `step` per parameter tensor.
pub(crate) fn fused_adamw_bytes(a: &Architecture, element: u128) -> N {
    a.parameters()
        .iter()
        .map(|t| N::from(t.count) * (N::from(t.numel()) * (2 * element) + N::from(4u64)))
        .sum()
}

/// The settings a family's replay does not cover, collected to be refused all at once, each
/// with its scenario key.
pub(crate) struct Refusals(Vec<(&'static str, &'static str)>);

impl Refusals {
    /// Starts with what no Trainer replay covers: `torch.compile`, SGD, more than one GPU,
    /// nanoGPT's frozen-embeddings patch (PEFT's LoRA is the families' own, `lora.rs`; 8-bit
    /// AdamW is replayed for full fine-tunes and QLoRA only) and nanoGPT's `train.py` start-up
    /// settings.
    pub(crate) fn trainer(s: &Scenario) -> Refusals {
        let mut r = Refusals(Vec::new());
        r.not(
            s.compile,
            "compile",
            "torch.compile is not replayed: set it to false",
        );
        r.not(
            s.optimizer == Optimizer::Sgd,
            "optimizer",
            "Trainer's AdamW (adamw, fused) and bitsandbytes' adamw8bit and paged_adamw8bit are \
             the optimizers replayed",
        );
        r.not(
            s.lora_rank > 0 && !s.load_in_4bit && s.optimizer != Optimizer::Adamw,
            "optimizer",
            "LoRA on 16- or 32-bit weights is replayed with fused AdamW; bitsandbytes' 8-bit \
             AdamW is replayed for full fine-tunes and QLoRA (load_in_4bit)",
        );
        r.not(
            s.load_in_4bit && s.lora_rank == 0,
            "load_in_4bit",
            "4-bit weights cannot be trained themselves: QLoRA trains LoRA adapters on them \
             (set lora_rank)",
        );
        r.not(
            s.ddp_world_size != 1 || s.sharding != Sharding::None,
            "ddp_world_size",
            "one GPU only",
        );
        r.not(
            s.freeze_embeddings,
            "freeze_embeddings",
            "freezing the embeddings is nanoGPT's patch; a Hugging Face model fine-tunes with PEFT's LoRA (lora_rank)",
        );
        precision(&mut r, s);
        r.not(
            s.init_from != InitFrom::Scratch || s.eval_only,
            "init_from",
            "nanoGPT's train.py settings have no meaning for a Trainer step",
        );
        r
    }

    /// Nothing refused yet (a family whose step is not a Trainer's).
    pub(crate) fn none() -> Refusals {
        Refusals(Vec::new())
    }

    /// Refuses `key` for `why` when `yes`.
    pub(crate) fn not(&mut self, yes: bool, key: &'static str, why: &'static str) {
        if yes {
            self.0.push((key, why));
        }
    }

    /// Nothing refused, or one error naming every key (the first as the error's key), for the
    /// model `what`.
    pub(crate) fn result(self, what: &str) -> Result<(), ScenarioError> {
        self.result_for(&format!(
            "{what} is modelled as transformers {}'s Trainer step only",
            super::arch::HF_TRANSFORMERS
        ))
    }

    /// Nothing refused, or one error: `lead`, then every key with its reason (the first as the
    /// error's key).
    pub(crate) fn result_for(self, lead: &str) -> Result<(), ScenarioError> {
        let Some((first, _)) = self.0.first() else {
            return Ok(());
        };
        let text: Vec<String> = self.0.iter().map(|(k, w)| format!("`{k}`: {w}")).collect();
        Err(ScenarioError {
            key: Some((*first).to_owned()),
            message: format!("{lead}; {}", text.join("; ")),
        })
    }
}

/// The weights' dtype against autocast's, as Trainer runs them (QLoRA aside: PEFT's
/// `prepare_model_for_kbit_training` upcasts every parameter not in 4 bits to float32):
/// `fp16=True` on float16 weights trained whole stops at the first step, torch's `GradScaler`
/// raising "Attempting to unscale FP16 gradients." (`torch/amp/grad_scaler.py`,
/// `_unscale_grads_`; LoRA's float32 adapters are unscaled without it); 16-bit weights under
/// the other 16-bit autocast mix float16 and bfloat16, which no replay covers.
fn precision(r: &mut Refusals, s: &Scenario) {
    let weights = s.weights();
    if s.load_in_4bit || weights == Dtype::Float32 || s.dtype == Dtype::Float32 {
        return;
    }
    r.not(
        weights == Dtype::Float16 && s.dtype == Dtype::Float16 && s.lora_rank == 0,
        "weights_dtype",
        "float16 weights trained whole under fp16=True (dtype float16) fail at the first step: \
         torch's GradScaler raises \"Attempting to unscale FP16 gradients.\"; load them in \
         float32 (weights_dtype: float32) for fp16 mixed precision, or train them as they are \
         (dtype: float32)",
    );
    r.not(
        weights != s.dtype,
        "weights_dtype",
        "16-bit weights under the other 16-bit autocast (float16 weights with bf16=True, \
         bfloat16 weights with fp16=True) are not replayed: set dtype to the weights' own dtype \
         or float32, or weights_dtype to float32",
    );
}
