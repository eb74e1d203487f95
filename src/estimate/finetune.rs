//! Fine-tuning patches: frozen embeddings and LoRA adapters (neither is in nanoGPT).
//!
//! - `freeze_embeddings`: `wte.weight` and `wpe.weight` get `requires_grad = False` before
//!   `configure_optimizers` (nanoGPT's filters out parameters that do not require grad). nanoGPT
//!   ties `lm_head.weight` to `wte.weight`: it is one tensor, so the output layer is frozen too.
//! - LoRA (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models"): every base
//!   parameter frozen, and each targeted Linear `W0` (out × in) of every block gets a trainable
//!   `A` (r × in) and `B` (out × r): `h = W0·x + (α/r)·B·A·x`, `r·(in + out)` parameters per
//!   target and block. As PEFT's `get_peft_model` does with its defaults (`bias = 'none'`:
//!   biases stay frozen; LayerNorms are no target, so they stay frozen too; `lora_dropout = 0`;
//!   adapters in fp32, or in the parameters' dtype with pure bf16). `lora_alpha` only scales the
//!   update: it costs no memory and is not a key.
//!
//! What the memory model does with them (`memory`, `train`, `eval`), checked against the exact
//! replay of nanoGPT's train step with these patches (`tools/nanogpt_replay`, `model.py`'s
//! `freeze_embeddings`, `apply_lora` and `LoRALinear`): a frozen parameter has no `.grad` and no
//! optimizer state; autograd saves a tensor only for the gradients it will compute (PyTorch's
//! generated autograd code saves `mm`'s `self` only if `mat2` requires grad and the other way
//! round), so a frozen Linear keeps no input for its weight gradient, while its weight's 16-bit
//! copy is still saved when its input needs a gradient; autocast caches the 16-bit copies of
//! leaf parameters that require grad only, so a frozen weight's copy is cast at each use and
//! freed unless saved. `block_half_bytes` in `memory.rs` lists what each block keeps.

use serde::Serialize;

use super::lora_targets::LoraTargets;
use super::num::N;
use super::scenario::Scenario;

/// One Linear layer of a block that a LoRA adapter can wrap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum LoraTarget {
    /// `attn.c_attn`, the fused q/k/v projection: h → 3h.
    #[serde(rename = "attn.c_attn")]
    CAttn,
    /// `attn.c_proj`, the attention's output projection: h → h.
    #[serde(rename = "attn.c_proj")]
    AttnProj,
    /// `mlp.c_fc`: h → 4h.
    #[serde(rename = "mlp.c_fc")]
    CFc,
    /// `mlp.c_proj`: 4h → h.
    #[serde(rename = "mlp.c_proj")]
    MlpProj,
}

impl LoraTarget {
    /// The four, in the order a block runs them.
    pub(crate) const ALL: [LoraTarget; 4] = [
        LoraTarget::CAttn,
        LoraTarget::AttnProj,
        LoraTarget::CFc,
        LoraTarget::MlpProj,
    ];

    /// `(in, out)` features as multiples of `n_embd`.
    pub(crate) fn widths(self) -> (u128, u128) {
        match self {
            LoraTarget::CAttn => (1, 3),
            LoraTarget::AttnProj => (1, 1),
            LoraTarget::CFc => (1, 4),
            LoraTarget::MlpProj => (4, 1),
        }
    }
}

/// Which parameters a scenario trains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Training {
    /// `wte` (= `lm_head.weight`) and `wpe` get gradients.
    pub(crate) embeddings: bool,
    /// The blocks' and `ln_f`'s own parameters get gradients (false under LoRA).
    pub(crate) base: bool,
    /// LoRA rank (0: no adapters).
    pub(crate) rank: u64,
    /// The adapted Linear layers.
    pub(crate) targets: LoraTargets,
}

impl Training {
    /// What `s` trains.
    pub(crate) fn of(s: &Scenario) -> Training {
        let lora = s.lora_rank > 0;
        Training {
            embeddings: !s.freeze_embeddings && !lora,
            base: !lora,
            rank: s.lora_rank,
            targets: s.lora_targets,
        }
    }

    /// Whether LoRA adapters are on.
    pub(crate) fn lora(&self) -> bool {
        self.rank > 0
    }

    /// LoRA parameters of one block: `r·(in + out)` per target (Hu et al. 2021, section 4.1).
    pub(crate) fn lora_per_block(&self, h: N) -> N {
        if !self.lora() {
            return N::ZERO;
        }
        self.targets
            .iter()
            .map(|t| {
                let (i, o) = t.widths();
                h * N::from(self.rank) * (i + o)
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lora_parameters_per_block() {
        // GPT-2 XL, rank 8 on c_attn: 8·(1600 + 4800) per block.
        let t = Training {
            embeddings: false,
            base: false,
            rank: 8,
            targets: LoraTargets::default(),
        };
        assert_eq!(t.lora_per_block(N::from(1600)), N::from(51_200));
        let all = Training {
            targets: LoraTargets::ALL,
            ..t
        };
        // 8·(h + 3h) + 8·2h + 8·5h + 8·5h = 8·16h.
        assert_eq!(all.lora_per_block(N::from(1600)), N::from(8 * 16 * 1600));
    }
}
