//! The parameter tensors of an [`Architecture`], named as the family's code names them.
//!
//! Sources (the modules each family's `__init__` builds): nanoGPT's `model.py`; transformers
//! 5.24's `modeling_gpt2` (`wte`, `wpe`, per block `ln_1`, `attn.c_attn` (a `Conv1D` of
//! hidden → 3·hidden), `attn.c_proj`, `ln_2`, `mlp.c_fc`, `mlp.c_proj`, then `ln_f`; `lm_head`
//! tied to `wte`), `modeling_llama` (`embed_tokens`, per layer `q_proj`, `k_proj`, `v_proj`,
//! `o_proj`, `gate_proj`, `up_proj`, `down_proj`, `input_layernorm`,
//! `post_attention_layernorm`; `norm`; `lm_head` unless tied), `modeling_gemma2/3` (four norms
//! per layer), `modeling_mixtral` and `modeling_qwen2_moe` (`gate` router, `experts` as two 3-D tensors,
//! `shared_expert`, `shared_expert_gate`), and nanochat's `gpt.py` (`wte`, per block `c_q`,
//! `c_k`, `c_v`, `c_proj`, `c_fc`, `c_proj`; an untied `lm_head`; no norm weights).
//! Counts are per model; a block's tensor has `count = layers`.

use std::borrow::Cow;

use serde::Serialize;

use super::{Architecture, FeedForward, Mlp, NormPlacement, Positions};

/// What a parameter tensor is, which decides how the training code treats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    /// The token embedding (also the head's weight when tied).
    TokenEmbedding,
    /// The learned position table.
    PositionEmbedding,
    /// A Linear (or GPT-2 `Conv1D`) weight, the untied head's included.
    LinearWeight,
    /// A Linear bias.
    LinearBias,
    /// A norm's weight or bias.
    Norm,
}

impl ParamKind {
    /// Whether autocast casts it to 16 bits for a matmul (Linear weights and biases; the tied
    /// token embedding as the head's weight).
    pub fn linear(self, tied_head: bool) -> bool {
        match self {
            ParamKind::LinearWeight | ParamKind::LinearBias => true,
            ParamKind::TokenEmbedding => tied_head,
            ParamKind::PositionEmbedding | ParamKind::Norm => false,
        }
    }
}

/// One parameter tensor (or `count` tensors of the same name and shape, one per block).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParamTensor {
    /// The module path, with `{i}` for the block (and `{e}` for the expert).
    pub name: Cow<'static, str>,
    /// Its shape, as `tensor.shape` prints it.
    pub shape: Shape,
    /// Tensors of this name and shape in the model.
    pub count: u64,
    /// What it is.
    pub kind: ParamKind,
}

impl ParamTensor {
    /// Elements of one such tensor (saturating).
    pub fn numel(&self) -> u64 {
        self.shape.numel()
    }

    /// Weight-decay group of nanoGPT's `configure_optimizers` (`p.dim() >= 2`).
    pub fn decay(&self) -> bool {
        self.shape.dims().len() >= 2
    }
}

/// A parameter's shape: up to three dimensions, kept inline (an estimate lists the parameters
/// several times; no allocation per tensor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    dims: [u64; 3],
    rank: usize,
}

impl Shape {
    /// The shape of `dims` (at most three; more are not a parameter of these families). The
    /// dimensions past the rank are 1, so the product of all three is the element count.
    fn of(dims: &[u64]) -> Shape {
        let (dims, rank) = match *dims {
            [] => ([1, 1, 1], 0),
            [a] => ([a, 1, 1], 1),
            [a, b] => ([a, b, 1], 2),
            [a, b, c, ..] => ([a, b, c], 3),
        };
        Shape { dims, rank }
    }

    /// Elements of a tensor of this shape (saturating).
    fn numel(&self) -> u64 {
        let [a, b, c] = self.dims;
        a.saturating_mul(b).saturating_mul(c)
    }

    /// The dimensions, outermost first.
    pub fn dims(&self) -> &[u64] {
        &self.dims[..self.rank]
    }
}

impl Serialize for Shape {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.dims().serialize(serializer)
    }
}

/// The product of `factors`, saturating (a shape beyond 2^64 is refused later as a count above
/// 2^63 − 1).
fn m(factors: &[u64]) -> u64 {
    factors.iter().fold(1u64, |a, &f| a.saturating_mul(f))
}

/// Collects the tensors.
struct List {
    out: Vec<ParamTensor>,
}

impl List {
    fn add(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        shape: &[u64],
        count: u64,
        kind: ParamKind,
    ) {
        self.out.push(ParamTensor {
            name: name.into(),
            shape: Shape::of(shape),
            count,
            kind,
        });
    }
}

/// The parameter tensors of `a`, model-level ones first, then a block's in forward order, then
/// the final norm and an untied head.
pub(super) fn parameters(a: &Architecture) -> Vec<ParamTensor> {
    use super::Family::*;
    let mut l = List {
        out: Vec::with_capacity(24),
    };
    match a.family {
        NanoGpt | HfGpt2 => gpt2(a, &mut l),
        Llama | Gemma2 | Gemma3 | Moe => separate_projections(a, &mut l),
        Nanochat => nanochat(a, &mut l),
    }
    l.out
}

/// GPT-2 as nanoGPT and transformers write it: `wte`, `wpe`, per block `ln_1`, `c_attn`,
/// `c_proj`, `ln_2`, `c_fc`, `mlp.c_proj`, then `ln_f`. transformers' `Conv1D` stores its weight
/// as (in, out), nanoGPT's `nn.Linear` as (out, in): the same elements. Grouped this way (the
/// order `params.rs` of the estimator has always used) nanoGPT's figures are unchanged.
fn gpt2(a: &Architecture, l: &mut List) {
    use ParamKind::*;
    let (v, h, n) = (a.vocab_size, a.hidden, a.layers);
    let inter = match &a.mlp {
        Mlp::Dense(f) => f.intermediate,
        Mlp::Moe(moe) => moe.expert.intermediate,
    };
    let qkv = a.attention.qkv_width();
    let ctx = match a.positions {
        Positions::Learned { max_positions } => max_positions,
        Positions::Rotary { .. } => 0,
    };
    l.add("wte.weight", &[v, h], 1, TokenEmbedding);
    l.add("wpe.weight", &[ctx, h], 1, PositionEmbedding);
    l.add("h.{i}.attn.c_attn.weight", &[qkv, h], n, LinearWeight);
    l.add("h.{i}.attn.c_proj.weight", &[h, h], n, LinearWeight);
    l.add("h.{i}.mlp.c_fc.weight", &[inter, h], n, LinearWeight);
    l.add("h.{i}.mlp.c_proj.weight", &[h, inter], n, LinearWeight);
    let norms = m(&[2, n]).saturating_add(1);
    l.add("h.{i}.ln_{1,2}.weight, ln_f.weight", &[h], norms, Norm);
    let bias = matches!(a.norm, super::Norm::LayerNorm { bias: true });
    l.add(
        "h.{i}.ln_{1,2}.bias, ln_f.bias",
        &[h],
        m(&[norms, u64::from(bias)]),
        Norm,
    );
    let qb = u64::from(a.attention.qkv_bias);
    let ob = u64::from(a.attention.out_bias);
    let fb = match &a.mlp {
        Mlp::Dense(f) => u64::from(f.bias),
        Mlp::Moe(moe) => u64::from(moe.expert.bias),
    };
    l.add("h.{i}.attn.c_attn.bias", &[qkv], m(&[n, qb]), LinearBias);
    l.add("h.{i}.attn.c_proj.bias", &[h], m(&[n, ob]), LinearBias);
    l.add("h.{i}.mlp.c_fc.bias", &[inter], m(&[n, fb]), LinearBias);
    l.add("h.{i}.mlp.c_proj.bias", &[h], m(&[n, fb]), LinearBias);
}

/// nanochat's GPT at the pinned commit ([`super::NANOCHAT_COMMIT`], `nanochat/gpt.py`): the
/// vocabulary padded to a multiple of 64 (`pad_vocab_size_to`); `wte`; a value embedding of
/// `kv_width` per vocabulary row in every layer `i` with `i mod 2 = (layers − 1) mod 2`
/// (`has_ve`: ⌈layers/2⌉ of them) and that layer's `ve_gate` (12 channels → `kv_heads`); per
/// block `c_q`, `c_k`, `c_v`, `c_proj`, `mlp.c_fc` (4·hidden), `mlp.c_proj`; the untied
/// `lm_head`; and the scalars `resid_lambdas`, `x0_lambdas` (one per layer), `smear_gate`
/// (24 → 1), `smear_lambda`, `backout_lambda`. No norm weights, no biases.
fn nanochat(a: &Architecture, l: &mut List) {
    use ParamKind::*;
    let (v, h, n) = (
        super::nanochat_padded_vocab(a.vocab_size),
        a.hidden,
        a.layers,
    );
    let at = &a.attention;
    let (q, kv) = (at.q_width(), at.kv_width());
    let ve = n.div_ceil(2);
    l.add("transformer.wte.weight", &[v, h], 1, TokenEmbedding);
    l.add("value_embeds.{i}.weight", &[v, kv], ve, TokenEmbedding);
    l.add(
        "transformer.h.{i}.attn.c_q.weight",
        &[q, h],
        n,
        LinearWeight,
    );
    l.add(
        "transformer.h.{i}.attn.{c_k,c_v}.weight",
        &[kv, h],
        m(&[2, n]),
        LinearWeight,
    );
    l.add(
        "transformer.h.{i}.attn.c_proj.weight",
        &[h, q],
        n,
        LinearWeight,
    );
    l.add(
        "transformer.h.{i}.attn.ve_gate.weight",
        &[at.kv_heads, 12],
        ve,
        LinearWeight,
    );
    let inter = match &a.mlp {
        Mlp::Dense(f) => f.intermediate,
        Mlp::Moe(moe) => moe.expert.intermediate,
    };
    l.add(
        "transformer.h.{i}.mlp.c_fc.weight",
        &[inter, h],
        n,
        LinearWeight,
    );
    l.add(
        "transformer.h.{i}.mlp.c_proj.weight",
        &[h, inter],
        n,
        LinearWeight,
    );
    l.add("lm_head.weight", &[v, h], 1, LinearWeight);
    l.add("{resid,x0}_lambdas", &[n], 2, Norm);
    l.add("smear_gate.weight", &[1, 24], 1, LinearWeight);
    l.add("{smear,backout}_lambda", &[1], 2, Norm);
}

/// The families with separate (or Phi-3's fused) q/k/v projections and no position table.
fn separate_projections(a: &Architecture, l: &mut List) {
    use ParamKind::*;
    let (v, h, n) = (a.vocab_size, a.hidden, a.layers);
    let at = &a.attention;
    let (q, kv, qkv) = (at.q_width(), at.kv_width(), at.qkv_width());
    l.add("embed_tokens.weight", &[v, h], 1, TokenEmbedding);
    if at.fused_qkv {
        l.add(
            "layers.{i}.self_attn.qkv_proj.weight",
            &[qkv, h],
            n,
            LinearWeight,
        );
        l.add(
            "layers.{i}.self_attn.qkv_proj.bias",
            &[qkv],
            m(&[n, u64::from(at.qkv_bias)]),
            LinearBias,
        );
    } else {
        l.add(
            "layers.{i}.self_attn.q_proj.weight",
            &[q, h],
            n,
            LinearWeight,
        );
        l.add(
            "layers.{i}.self_attn.{k,v}_proj.weight",
            &[kv, h],
            m(&[2, n]),
            LinearWeight,
        );
        l.add(
            "layers.{i}.self_attn.q_proj.bias",
            &[q],
            m(&[n, u64::from(at.qkv_bias)]),
            LinearBias,
        );
        l.add(
            "layers.{i}.self_attn.{k,v}_proj.bias",
            &[kv],
            m(&[2, n, u64::from(at.qkv_bias)]),
            LinearBias,
        );
    }
    l.add(
        "layers.{i}.self_attn.o_proj.weight",
        &[h, q],
        n,
        LinearWeight,
    );
    l.add(
        "layers.{i}.self_attn.o_proj.bias",
        &[h],
        m(&[n, u64::from(at.out_bias)]),
        LinearBias,
    );
    if let Some(norm) = at.qk_norm {
        l.add(
            "layers.{i}.self_attn.{q,k}_norm.weight",
            &[at.head_dim],
            m(&[2, n, norm.vectors()]),
            Norm,
        );
    }
    match &a.mlp {
        Mlp::Dense(f) => feed_forward(l, f, h, n, "layers.{i}.mlp"),
        Mlp::Moe(moe) => {
            let e = moe.experts;
            l.add("layers.{i}.mlp.gate.weight", &[e, h], n, LinearWeight);
            l.add(
                "layers.{i}.mlp.gate.bias",
                &[e],
                m(&[n, u64::from(moe.router_bias)]),
                LinearBias,
            );
            experts(l, &moe.expert, e, h, n);
            if let Some(s) = &moe.shared {
                feed_forward(l, s, h, n, "layers.{i}.mlp.shared_expert");
            }
            if moe.shared_gate {
                l.add(
                    "layers.{i}.mlp.shared_expert_gate.weight",
                    &[1, h],
                    n,
                    LinearWeight,
                );
            }
        }
    }
    let per_layer = match a.norm_placement {
        NormPlacement::Pre => 2,
        NormPlacement::Sandwich => 4,
    };
    let vectors = a.norm.vectors();
    l.add(
        "layers.{i}.*_layernorm.weight",
        &[h],
        m(&[n, per_layer, vectors.min(1)]),
        Norm,
    );
    if a.norm == (super::Norm::LayerNorm { bias: true }) {
        l.add(
            "layers.{i}.*_layernorm.bias",
            &[h],
            m(&[n, per_layer]),
            Norm,
        );
    }
    l.add("norm.weight", &[h], vectors.min(1), Norm);
    if a.norm == (super::Norm::LayerNorm { bias: true }) {
        l.add("norm.bias", &[h], 1, Norm);
    }
    if !a.embeddings.tied_head {
        l.add("lm_head.weight", &[v, h], 1, LinearWeight);
    }
    if a.embeddings.head_bias {
        l.add("lm_head.bias", &[v], 1, LinearBias);
    }
}

/// A layer's experts as transformers 5.24 stores them (`MixtralExperts`, `Qwen2MoeExperts`,
/// `Qwen3MoeExperts`): one 3-D tensor for every expert's gate and up projections
/// (`gate_up_proj`, `(E, 2·I, h)`; `up_proj` `(E, I, h)` when not gated) and one for the down
/// projections (`down_proj`, `(E, h, I)`), with `(E, out)` biases where the experts have them.
fn experts(l: &mut List, f: &FeedForward, e: u64, h: u64, layers: u64) {
    use ParamKind::*;
    let i = f.intermediate;
    let b = u64::from(f.bias);
    let (up, width) = if f.gated {
        ("gate_up_proj", m(&[2, i]))
    } else {
        ("up_proj", i)
    };
    let prefix = "layers.{i}.mlp.experts";
    l.add(
        format!("{prefix}.{up}"),
        &[e, width, h],
        layers,
        LinearWeight,
    );
    l.add(
        format!("{prefix}.{up}_bias"),
        &[e, width],
        m(&[layers, b]),
        LinearBias,
    );
    l.add(
        format!("{prefix}.down_proj"),
        &[e, h, i],
        layers,
        LinearWeight,
    );
    l.add(
        format!("{prefix}.down_proj_bias"),
        &[e, h],
        m(&[layers, b]),
        LinearBias,
    );
}

/// One feed-forward network's Linear layers, `count` of them.
fn feed_forward(l: &mut List, f: &FeedForward, h: u64, count: u64, prefix: &str) {
    use ParamKind::*;
    let i = f.intermediate;
    let b = u64::from(f.bias);
    if f.gated && f.fused_gate_up {
        l.add(
            format!("{prefix}.gate_up_proj.weight"),
            &[m(&[2, i]), h],
            count,
            LinearWeight,
        );
        l.add(
            format!("{prefix}.gate_up_proj.bias"),
            &[m(&[2, i])],
            m(&[count, b]),
            LinearBias,
        );
    } else {
        let up = if f.gated { 2 } else { 1 };
        l.add(
            format!("{prefix}.{{gate,up}}_proj.weight"),
            &[i, h],
            m(&[count, up]),
            LinearWeight,
        );
        l.add(
            format!("{prefix}.{{gate,up}}_proj.bias"),
            &[i],
            m(&[count, up, b]),
            LinearBias,
        );
    }
    l.add(
        format!("{prefix}.down_proj.weight"),
        &[h, i],
        count,
        LinearWeight,
    );
    l.add(
        format!("{prefix}.down_proj.bias"),
        &[h],
        m(&[count, b]),
        LinearBias,
    );
}
