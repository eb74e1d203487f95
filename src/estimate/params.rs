//! Parameter counts exactly as nanoGPT's `model.py` makes them.
//!
//! `GPT.__init__` builds `wte` (V×h, tied to `lm_head`), `wpe` (s×h), per block `ln_1`,
//! `attn.c_attn` (h→3h), `attn.c_proj` (h→h), `ln_2`, `mlp.c_fc` (h→4h), `mlp.c_proj` (4h→h),
//! and `ln_f`; Linear layers and LayerNorms carry biases when `bias` is true (`lm_head` never does).
//! Closed form: `P = V·h + s·h + L·(12h² + 2h) + h` without bias; each block adds `13h` with bias
//! and `ln_f` adds `h`.

use serde::Serialize;

use super::error::ScenarioError;
use super::num::N;
use super::scenario::Scenario;

/// Parameter counts of the scenario's model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Params {
    /// Unique parameters (the tied `lm_head`/`wte` weight counted once).
    pub total: u64,
    /// nanoGPT's `get_num_params()`: `total` minus the position embeddings `wpe`.
    pub non_embedding: u64,
    /// Token plus position embeddings (`wte` is also `lm_head`'s weight).
    pub embedding: u64,
    /// Parameters in `configure_optimizers`' weight-decay group (every tensor with ≥ 2 dims).
    pub decay: u64,
    /// Parameters in the no-decay group (LayerNorm weights, all biases).
    pub no_decay: u64,
    /// Tensors in the decay group: `wte`, `wpe` and four matrices per block.
    pub decay_tensors: u64,
    /// Tensors in the no-decay group.
    pub no_decay_tensors: u64,
    /// Parameters of every Linear layer, `lm_head` included: what autocast casts to 16 bits.
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
    /// Belongs to a Linear layer (autocast casts it).
    pub(crate) linear: bool,
}

/// Every parameter tensor of the model, grouped by shape (groups with no tensors have count 0).
pub(crate) fn tensor_groups(s: &Scenario) -> [TensorGroup; 12] {
    let (v, h, ctx, l) = (
        N::from(s.vocab_size),
        N::from(s.n_embd),
        N::from(s.block_size),
        N::from(s.n_layer),
    );
    let b = N::from(s.bias);
    let one = N::from(1u64);
    let group = |numel: N, count: N, decay: bool, linear: bool| TensorGroup {
        numel,
        count,
        decay,
        linear,
    };
    [
        group(v * h, one, true, true),       // wte = lm_head.weight (tied)
        group(ctx * h, one, true, false),    // wpe
        group(h * h * 3, l, true, true),     // attn.c_attn.weight
        group(h * h, l, true, true),         // attn.c_proj.weight
        group(h * h * 4, l, true, true),     // mlp.c_fc.weight
        group(h * h * 4, l, true, true),     // mlp.c_proj.weight
        group(h, l * 2 + one, false, false), // ln_1, ln_2 weights and ln_f.weight
        group(h, (l * 2 + one) * b, false, false), // their biases
        group(h * 3, l * b, false, true),    // attn.c_attn.bias
        group(h, l * b, false, true),        // attn.c_proj.bias
        group(h * 4, l * b, false, true),    // mlp.c_fc.bias
        group(h, l * b, false, true),        // mlp.c_proj.bias
    ]
}

/// Counts the parameters of a scenario; errors only when a count exceeds 2^63 − 1.
pub(crate) fn count(s: &Scenario) -> Result<Params, ScenarioError> {
    let groups = tensor_groups(s);
    let sum = |decay: bool, f: &dyn Fn(&TensorGroup) -> N| -> N {
        groups.iter().filter(|g| g.decay == decay).map(f).sum()
    };
    let total: N = groups.iter().map(|g| g.numel * g.count).sum();
    let linear: N = groups
        .iter()
        .filter(|g| g.linear)
        .map(|g| g.numel * g.count)
        .sum();
    let wpe = N::from(s.block_size) * N::from(s.n_embd);
    let wte = N::from(s.vocab_size) * N::from(s.n_embd);
    Ok(Params {
        total: total.to_u64("the parameter count")?,
        non_embedding: (total - wpe).to_u64("the parameter count")?,
        embedding: (wte + wpe).to_u64("the embedding parameter count")?,
        decay: sum(true, &|g| g.numel * g.count).to_u64("the parameter count")?,
        no_decay: sum(false, &|g| g.numel * g.count).to_u64("the parameter count")?,
        decay_tensors: sum(true, &|g| g.count).to_u64("the tensor count")?,
        no_decay_tensors: sum(false, &|g| g.count).to_u64("the tensor count")?,
        linear: linear.to_u64("the parameter count")?,
    })
}
