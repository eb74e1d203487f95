//! Parameter counts from the architecture description's tensors (`arch::params`): for nanoGPT
//! exactly as its `model.py` makes them.
//!
//! `GPT.__init__` builds `wte` (V×h, tied to `lm_head`), `wpe` (s×h), per block `ln_1`,
//! `attn.c_attn` (h→3h), `attn.c_proj` (h→h), `ln_2`, `mlp.c_fc` (h→4h), `mlp.c_proj` (4h→h),
//! and `ln_f`; Linear layers and LayerNorms carry biases when `bias` is true (`lm_head` never does).
//! Closed form: `P = V·h + s·h + L·(12h² + 2h) + h` without bias; each block adds `13h` with bias
//! and `ln_f` adds `h`.
//!
//! With the fine-tuning patches (`finetune.rs`), LoRA adds `r·(in + out)` per target and block
//! (`A` and `B`, no bias) to the model, and `configure_optimizers` (which, like nanoGPT's, leaves
//! out parameters that do not require grad) groups only the trainable ones: the decay and
//! no-decay figures count what the optimizer holds.

use serde::Serialize;

use super::arch::{Architecture, ParamKind, ParamTensor};
use super::error::ScenarioError;
use super::finetune::Training;
use super::num::N;
use super::scenario::Scenario;

/// Parameter counts of the scenario's model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Params {
    /// Unique parameters (the tied `lm_head`/`wte` weight counted once), LoRA adapters included.
    pub total: u64,
    /// nanoGPT's `get_num_params()`: `total` minus the position embeddings `wpe`.
    pub non_embedding: u64,
    /// Token plus position embeddings (`wte` is also `lm_head`'s weight).
    pub embedding: u64,
    /// Parameters that get gradients and optimizer state: `total`, less frozen embeddings, or
    /// only the LoRA adapters.
    pub(crate) trainable: u64,
    /// LoRA adapter parameters (`A` and `B` of every target in every block); 0 without LoRA.
    pub(crate) lora: u64,
    /// Trainable parameters in `configure_optimizers`' weight-decay group (every tensor with ≥ 2
    /// dims).
    pub decay: u64,
    /// Trainable parameters in the no-decay group (LayerNorm weights, all biases).
    pub no_decay: u64,
    /// Tensors in the decay group: `wte`, `wpe` and four matrices per block.
    pub decay_tensors: u64,
    /// Tensors in the no-decay group.
    pub no_decay_tensors: u64,
    /// Parameters of every Linear layer, `lm_head` included, LoRA adapters not: what autocast
    /// casts to 16 bits.
    pub linear: u64,
}

/// One kind of parameter tensor: its element count, how many such tensors, and whether
/// `configure_optimizers` decays it (`p.dim() >= 2`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TensorGroup {
    /// Elements per tensor.
    pub(crate) numel: N,
    /// Tensors of this shape.
    pub(crate) count: N,
    /// In the weight-decay group.
    pub(crate) decay: bool,
    /// Belongs to a Linear layer of the base model (autocast casts it).
    pub(crate) linear: bool,
    /// Requires grad: has a gradient and optimizer state.
    pub(crate) trainable: bool,
}

/// Every parameter tensor of nanoGPT's model, grouped by shape (groups with no tensors have
/// count 0): the base model's twelve groups, then LoRA's `A` and `B` per target.
#[cfg(test)]
pub(crate) fn tensor_groups(s: &Scenario) -> Vec<TensorGroup> {
    let a = Architecture::nanogpt(s);
    groups_from(&a, &a.parameters(), s).expect("nanoGPT's LoRA targets")
}

/// The parameter tensors of `a` (`Architecture::parameters`, in its order, given as `tensors`),
/// grouped with what trains under `s`'s fine-tuning patches, then LoRA's `A` and `B` per target.
/// The `(in, out)` features of each adapted Linear of a block of `a` (none without LoRA); the
/// error names a target `a`'s family does not have.
fn lora_features(a: &Architecture, s: &Scenario) -> Result<Vec<(u64, u64)>, ScenarioError> {
    if s.lora_rank == 0 {
        return Ok(Vec::new());
    }
    let modules = s
        .lora_targets
        .resolve(a)
        .map_err(|m| ScenarioError::key("lora_targets", m))?;
    Ok(modules.iter().map(|m| m.features(a)).collect())
}

fn groups_from(
    a: &Architecture,
    tensors: &[ParamTensor],
    s: &Scenario,
) -> Result<Vec<TensorGroup>, ScenarioError> {
    let train = Training::of(s);
    let (emb, base) = (train.embeddings, train.base);
    let tied = a.embeddings.tied_head;
    let mut groups = Vec::with_capacity(tensors.len() + 8);
    for t in tensors {
        groups.push(TensorGroup {
            numel: N::from(t.numel()),
            count: N::from(t.count),
            decay: t.decay(),
            linear: t.kind.linear(tied),
            trainable: match t.kind {
                ParamKind::TokenEmbedding | ParamKind::PositionEmbedding => emb,
                ParamKind::LinearWeight | ParamKind::LinearBias | ParamKind::Norm => base,
            },
        });
    }
    for (i, o) in lora_features(a, s)? {
        let (r, l) = (N::from(train.rank), N::from(a.layers));
        // lora_A: r × in, lora_B: out × r, in every block.
        for numel in [r * N::from(i), N::from(o) * r] {
            groups.push(TensorGroup {
                numel,
                count: l,
                decay: true,
                linear: false,
                trainable: true,
            });
        }
    }
    Ok(groups)
}

/// A model's parameters as one estimate uses them, derived once from its description: the
/// counts it reports and the tensor groups its optimizer state is summed and partitioned over.
#[derive(Debug, Clone)]
pub(crate) struct CountedParams {
    /// The counts.
    pub(crate) params: Params,
    /// Every parameter tensor with what trains, then LoRA's adapters ([`groups_from`]).
    pub(crate) groups: Vec<TensorGroup>,
}

/// Counts the parameters of `a` under `s`'s fine-tuning patches, keeping their groups; errors
/// only when a count exceeds 2^63 − 1.
pub(crate) fn count_of(a: &Architecture, s: &Scenario) -> Result<CountedParams, ScenarioError> {
    let tensors = a.parameters();
    let groups = groups_from(a, &tensors, s)?;
    // One pass over the groups: every element in `total`, the trainable ones also in their
    // optimizer group (decay or not), the Linear ones in `linear`.
    let (mut total, mut trainable, mut linear) = (N::ZERO, N::ZERO, N::ZERO);
    let (mut decay, mut no_decay) = (N::ZERO, N::ZERO);
    let (mut decay_tensors, mut no_decay_tensors) = (N::ZERO, N::ZERO);
    for g in &groups {
        let elements = g.numel * g.count;
        total = total + elements;
        if g.linear {
            linear = linear + elements;
        }
        if !g.trainable {
            continue;
        }
        trainable = trainable + elements;
        if g.decay {
            decay = decay + elements;
            decay_tensors = decay_tensors + g.count;
        } else {
            no_decay = no_decay + elements;
            no_decay_tensors = no_decay_tensors + g.count;
        }
    }
    let lora = super::lora_adapters::parameters(s.lora_rank, a.layers, &lora_features(a, s)?);
    let (mut wte, mut wpe) = (N::ZERO, N::ZERO);
    for t in &tensors {
        let elements = N::from(t.numel()) * N::from(t.count);
        match t.kind {
            ParamKind::TokenEmbedding => wte = wte + elements,
            ParamKind::PositionEmbedding => wpe = wpe + elements,
            ParamKind::LinearWeight | ParamKind::LinearBias | ParamKind::Norm => {}
        }
    }
    let params = Params {
        total: total.to_u64("the parameter count")?,
        non_embedding: (total - wpe).to_u64("the parameter count")?,
        embedding: (wte + wpe).to_u64("the embedding parameter count")?,
        trainable: trainable.to_u64("the parameter count")?,
        lora: lora.to_u64("the parameter count")?,
        decay: decay.to_u64("the parameter count")?,
        no_decay: no_decay.to_u64("the parameter count")?,
        decay_tensors: decay_tensors.to_u64("the tensor count")?,
        no_decay_tensors: no_decay_tensors.to_u64("the tensor count")?,
        linear: linear.to_u64("the parameter count")?,
    };
    Ok(CountedParams { params, groups })
}
