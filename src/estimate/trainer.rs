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
use super::scenario::{InitFrom, Optimizer, Scenario, Sharding};

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
        r.not(
            s.init_from != InitFrom::Scratch || s.eval_only,
            "init_from",
            "nanoGPT's train.py settings have no meaning for a Trainer step",
        );
        r
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
        let Some((first, _)) = self.0.first() else {
            return Ok(());
        };
        let text: Vec<String> = self.0.iter().map(|(k, w)| format!("`{k}`: {w}")).collect();
        Err(ScenarioError {
            key: Some((*first).to_owned()),
            message: format!(
                "{what} is modelled as transformers {}'s Trainer step only; {}",
                super::arch::HF_TRANSFORMERS,
                text.join("; ")
            ),
        })
    }
}
