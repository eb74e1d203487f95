//! A typed description of a decoder-only transformer: what the estimator derives every tensor
//! from (issue 21, item 1). Pure data, no I/O.
//!
//! One [`Architecture`] describes one model as one code base writes it. The shape (widths,
//! heads, layers, vocabulary) is not enough: nanoGPT's `model.py` and transformers'
//! `modeling_gpt2` build the same GPT-2 yet save different tensors for backward, so the
//! description names the [`Family`] (whose code runs) beside the parts every family is made of:
//! embeddings, attention, MLP (dense or mixture of experts), norms and the output head.
//!
//! Families and what in them is described (the `config.json` names in brackets):
//! - nanoGPT's GPT and transformers' GPT-2: learned positions, LayerNorm, fused q/k/v with bias,
//!   a 4h GELU MLP, a head tied to the token embedding.
//! - Llama (Llama 2/3.x, Mistral, Qwen2/2.5, Qwen3, Phi-3): grouped-query attention
//!   (`num_key_value_heads`), RoPE, RMSNorm, SwiGLU (`intermediate_size`), optional q/k/v bias
//!   (Qwen2), QK-norm (Qwen3), tied or untied head (`tie_word_embeddings`), fused q/k/v and
//!   gate/up (Phi-3).
//! - Gemma 2/3: sliding-window layers in a repeating pattern, attention and final logit
//!   softcapping, `head_dim` ≠ hidden/heads, the embedding normalizer (×√hidden), norms before
//!   and after each sublayer, RMSNorm with a `1 + weight` scale, a tanh-GELU gated MLP.
//! - Mixture of experts (Mixtral, Qwen2-MoE, Qwen3-MoE): a router, every expert resident,
//!   `num_experts_per_tok` experts run per token, optional shared experts with their own gate.
//! - nanochat's GPT: rotary, QK-norm without weights, ReLU² MLP, untied head, logit softcap,
//!   parameter-free RMSNorm, sliding-window layers by a pattern.
//!
//! Only [`Family::NanoGpt`], [`Family::HfGpt2`], [`Family::Llama`], [`Family::Moe`],
//! [`Family::Gemma2`], [`Family::Gemma3`] and [`Family::Nanochat`] (at [`NANOCHAT_COMMIT`]) are
//! computed today; the estimator refuses the others by name ([`Architecture::computed`]) instead of estimating them
//! with another family's tensors.

mod families;
mod large;
mod params;
mod positions;

use std::borrow::Cow;

use serde::Serialize;

use super::error::ScenarioError;

pub use large::{large_tensors, LargeTensor, TensorDtype, TensorPhase};
pub use params::{ParamKind, ParamTensor, Shape};
pub use positions::{PastLimit, PositionLimit, PositionSource, Positions, RopeScaling};

/// Whose modeling code builds and runs the model: the code decides which tensors a training
/// step saves, so two families of the same shape can need different memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// nanoGPT's `model.py` (`GPT`, `Block`, `CausalSelfAttention`, `MLP`).
    NanoGpt,
    /// transformers' `modeling_gpt2` (`GPT2LMHeadModel`), `model_type: gpt2`.
    HfGpt2,
    /// transformers' `modeling_llama` and the models written like it (`llama`, `mistral`,
    /// `qwen2`, `qwen3`, `phi3`).
    Llama,
    /// transformers' `modeling_gemma2` (`gemma2`).
    Gemma2,
    /// transformers' `modeling_gemma3` text model (`gemma3_text`).
    Gemma3,
    /// transformers' mixture-of-experts decoders (`mixtral`, `qwen2_moe`, `qwen3_moe`).
    Moe,
    /// nanochat's `nanochat/gpt.py`.
    Nanochat,
}

impl Family {
    /// The name used in messages and the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::NanoGpt => "nanogpt",
            Family::HfGpt2 => "hf_gpt2",
            Family::Llama => "llama",
            Family::Gemma2 => "gemma2",
            Family::Gemma3 => "gemma3",
            Family::Moe => "moe",
            Family::Nanochat => "nanochat",
        }
    }

    /// Whether the estimator computes a training step of this family.
    pub fn computed(self) -> bool {
        matches!(
            self,
            Family::NanoGpt
                | Family::HfGpt2
                | Family::Llama
                | Family::Moe
                | Family::Nanochat
                | Family::Gemma2
                | Family::Gemma3
        )
    }
}

/// A normalization layer's kind and parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Norm {
    /// LayerNorm with a weight, and a bias when `bias` is true.
    LayerNorm {
        /// Has a bias vector.
        bias: bool,
    },
    /// RMSNorm with a weight (Llama: `weight · x̂`; Gemma: `(1 + weight) · x̂`, same size).
    RmsNorm,
    /// RMSNorm without parameters (nanochat's `F.rms_norm` with no weight).
    RmsNormNoWeight,
}

impl Norm {
    /// Parameter vectors of `hidden` elements one such norm holds.
    pub fn vectors(self) -> u64 {
        match self {
            Norm::LayerNorm { bias } => 1 + u64::from(bias),
            Norm::RmsNorm => 1,
            Norm::RmsNormNoWeight => 0,
        }
    }
}

/// Where the norms sit in a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NormPlacement {
    /// One norm before each sublayer (GPT-2, Llama, nanochat).
    Pre,
    /// A norm before and after each sublayer (Gemma 2/3: four per block).
    Sandwich,
}

/// The MLP's activation, as the code writes it (which decides what autograd saves).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Activation {
    /// `nn.GELU()` (erf): one kernel, saves its input (nanoGPT).
    Gelu,
    /// transformers' `NewGELUActivation` (`gelu_new`): the tanh approximation written out in
    /// Python, several autograd nodes each saving a 4h-wide tensor (GPT-2).
    GeluNewPython,
    /// `gelu_pytorch_tanh`: the tanh approximation in one kernel (Gemma).
    GeluTanh,
    /// SiLU (the gate of SwiGLU: Llama, Mistral, Qwen, Mixtral).
    Silu,
    /// ReLU squared (nanochat).
    ReluSquared,
}

/// One feed-forward network: `up` (and `gate` when gated) hidden → intermediate, the activation,
/// `down` intermediate → hidden.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FeedForward {
    /// The intermediate width (GPT-2: 4·hidden; Llama: `intermediate_size`).
    pub intermediate: u64,
    /// A gated MLP (`down(act(gate(x)) · up(x))`: SwiGLU, GeGLU) instead of `down(act(up(x)))`.
    pub gated: bool,
    /// Gate and up fused in one Linear (Phi-3's `gate_up_proj`).
    pub fused_gate_up: bool,
    /// The activation.
    pub activation: Activation,
    /// The Linear layers carry biases.
    pub bias: bool,
}

/// A mixture of experts replacing the dense MLP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MixtureOfExperts {
    /// Experts per layer, all resident on the GPU (`num_local_experts`, `num_experts`).
    pub experts: u64,
    /// Experts each token runs through (`num_experts_per_tok`).
    pub experts_per_token: u64,
    /// One expert's feed-forward network (`moe_intermediate_size`).
    pub expert: FeedForward,
    /// Shared experts every token runs through, as one feed-forward network of their combined
    /// width (`shared_expert_intermediate_size`), if any.
    pub shared: Option<FeedForward>,
    /// The shared experts' output is scaled by a sigmoid gate (`hidden → 1`, Qwen2-MoE).
    pub shared_gate: bool,
    /// The router (`hidden → experts`) carries a bias.
    pub router_bias: bool,
}

/// The feed-forward part of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Mlp {
    /// One feed-forward network.
    Dense(FeedForward),
    /// A mixture of experts.
    Moe(MixtureOfExperts),
}

/// Which attention span a layer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Span {
    /// Every earlier token.
    Global,
    /// The last `window` tokens.
    Local,
}

/// Sliding-window layers: layer `i` uses `pattern[i mod pattern.len()]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SlidingWindow {
    /// Tokens a local layer attends to (`sliding_window`).
    pub window: u64,
    /// The repeating pattern (Gemma 2: local, global; Gemma 3: five local, one global;
    /// nanochat's `--window-pattern`, e.g. `SSSL`).
    pub pattern: Vec<Span>,
}

/// Self-attention.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attention {
    /// Query heads.
    pub heads: u64,
    /// Key/value heads: `heads` for multi-head, fewer for grouped-query, 1 for multi-query.
    pub kv_heads: u64,
    /// Width of one head (`head_dim`; hidden/heads unless the config says otherwise).
    pub head_dim: u64,
    /// q, k and v in one Linear (GPT-2's `c_attn`, Phi-3's `qkv_proj`).
    pub fused_qkv: bool,
    /// The q/k/v projections carry biases (GPT-2, Qwen2).
    pub qkv_bias: bool,
    /// The output projection carries a bias (GPT-2).
    pub out_bias: bool,
    /// A norm on each head's queries and keys (Qwen3: RMSNorm of `head_dim`; nanochat: without
    /// weights), if any.
    pub qk_norm: Option<Norm>,
    /// Gemma 2's `attn_logit_softcapping`: scores become `cap · tanh(scores / cap)`.
    pub softcap: Option<f64>,
    /// Sliding-window layers, if any.
    pub sliding_window: Option<SlidingWindow>,
}

impl Attention {
    /// Multi-head attention of `heads` heads over `hidden` (GPT-2's, nanoGPT's).
    pub fn multi_head(hidden: u64, heads: u64, bias: bool) -> Attention {
        Attention {
            heads,
            kv_heads: heads,
            head_dim: hidden.checked_div(heads).unwrap_or(0),
            fused_qkv: true,
            qkv_bias: bias,
            out_bias: bias,
            qk_norm: None,
            softcap: None,
            sliding_window: None,
        }
    }

    /// Width of the queries (`heads · head_dim`).
    pub fn q_width(&self) -> u64 {
        self.heads.saturating_mul(self.head_dim)
    }

    /// Width of the keys, and of the values (`kv_heads · head_dim`).
    pub fn kv_width(&self) -> u64 {
        self.kv_heads.saturating_mul(self.head_dim)
    }

    /// Width of queries, keys and values together (the fused projection's output).
    pub fn qkv_width(&self) -> u64 {
        self.q_width()
            .saturating_add(self.kv_width().saturating_mul(2))
    }
}

/// The token embedding and the output head.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Embeddings {
    /// The output head is the token embedding's weight (`tie_word_embeddings`).
    pub tied_head: bool,
    /// The head carries a bias (none of the families here).
    pub head_bias: bool,
    /// Gemma's normalizer: the embedding output is multiplied by √hidden, in the compute dtype.
    pub scaled_by_sqrt_hidden: bool,
    /// `final_logit_softcapping` (Gemma 2, nanochat): logits become `cap · tanh(logits / cap)`.
    pub logit_softcap: Option<f64>,
}

/// A decoder-only transformer, as one code base writes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Architecture {
    /// Whose code.
    pub family: Family,
    /// The model's name where it has one (`gpt2`, a catalog id), for messages.
    pub name: Cow<'static, str>,
    /// Vocabulary size (rows of the token embedding and of the head).
    pub vocab_size: u64,
    /// The residual stream's width (`n_embd`, `hidden_size`).
    pub hidden: u64,
    /// Transformer blocks.
    pub layers: u64,
    /// Position information.
    pub positions: Positions,
    /// Self-attention (the same in every block; [`SlidingWindow`] says which span each uses).
    pub attention: Attention,
    /// The feed-forward part of every block.
    pub mlp: Mlp,
    /// The norms' kind (blocks and the final norm).
    pub norm: Norm,
    /// Where the block's norms sit.
    pub norm_placement: NormPlacement,
    /// Token embedding and head.
    pub embeddings: Embeddings,
}

impl Architecture {
    /// The error for a family whose training step is not computed yet: it names the family and
    /// the ones that are, never falling back to another family's tensors.
    pub fn computed(&self) -> Result<(), ScenarioError> {
        if self.family.computed() {
            return Ok(());
        }
        Err(ScenarioError::general(format!(
            "the {} family ({}) is described but its training step is not modelled yet; \
             vramdoc computes nanoGPT's GPT, nanochat's GPT, and Hugging Face's GPT-2, Llama family \
             (Llama, Mistral, Qwen2, Qwen3, Phi-3), mixtures of experts and Gemma 2/3 (transformers {}) only",
            self.family.as_str(),
            self.name,
            HF_TRANSFORMERS,
        )))
    }

    /// The longest sequence the model's positions allow, where it comes from and what its code
    /// does past it (`positions.rs`).
    pub fn position_limit(&self) -> PositionLimit {
        positions::limit(self.positions, self.family == Family::Nanochat)
    }

    /// The position bound, when a context of `tokens` (prompt plus new) passes it and the code
    /// runs on (transformers' warning); `None` within it, or where the code fails past it.
    pub fn runs_past_positions(&self, tokens: u64) -> Option<PositionLimit> {
        let limit = self.position_limit();
        (limit.past == PastLimit::Warns && limit.exceeded_by(tokens)).then_some(limit)
    }

    /// Whether this is nanoGPT's model (whose shape a scenario's own keys give).
    pub fn is_nanogpt(&self) -> bool {
        self.family == Family::NanoGpt
    }

    /// Checks the shape: every width nonzero, heads dividing as the family's code requires.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let a = &self.attention;
        let zero = [
            ("vocab_size", self.vocab_size),
            ("hidden", self.hidden),
            ("layers", self.layers),
            ("heads", a.heads),
            ("kv_heads", a.kv_heads),
            ("head_dim", a.head_dim),
        ]
        .into_iter()
        .find(|(_, v)| *v == 0);
        if let Some((what, _)) = zero {
            return Err(ScenarioError::general(format!(
                "{}: {what} must be at least 1",
                self.name
            )));
        }
        if a.heads % a.kv_heads != 0 {
            return Err(ScenarioError::general(format!(
                "{}: {} query heads cannot be grouped over {} key/value heads (the query heads \
                 must be a multiple)",
                self.name, a.heads, a.kv_heads
            )));
        }
        if let Mlp::Moe(m) = &self.mlp {
            if m.experts_per_token == 0 || m.experts_per_token > m.experts {
                return Err(ScenarioError::general(format!(
                    "{}: {} experts per token of {} experts",
                    self.name, m.experts_per_token, m.experts
                )));
            }
        }
        Ok(())
    }

    /// The parameter tensors, one entry per distinct tensor of a block (with its count over the
    /// blocks) and per model-level tensor (`params.rs`).
    pub fn parameters(&self) -> Vec<ParamTensor> {
        params::parameters(self)
    }

    /// Unique parameters (a tied head counted once).
    pub fn parameter_count(&self) -> u64 {
        self.parameters()
            .iter()
            .map(|t| t.numel().saturating_mul(t.count))
            .fold(0u64, u64::saturating_add)
    }

    /// Parameters one token runs through: a mixture of experts' idle experts
    /// (`experts − experts_per_token` per layer, each `gate`, `up` and `down`) left out. Memory
    /// needs [`Architecture::parameter_count`]: every expert is resident; this is the "active"
    /// count MoE model cards quote (Mixtral 8x7B: 12.9B of 46.7B).
    pub fn active_parameter_count(&self) -> u64 {
        let Mlp::Moe(m) = &self.mlp else {
            return self.parameter_count();
        };
        let f = &m.expert;
        let up = if f.gated { 2 } else { 1 };
        let one = self
            .hidden
            .saturating_mul(f.intermediate)
            .saturating_mul(up + 1)
            .saturating_add(
                u64::from(f.bias).saturating_mul(f.intermediate.saturating_mul(up) + self.hidden),
            );
        let idle = m.experts.saturating_sub(m.experts_per_token);
        self.parameter_count()
            .saturating_sub(one.saturating_mul(idle).saturating_mul(self.layers))
    }
}

/// The nanochat commit (github.com/karpathy/nanochat) whose `gpt.py`, `optim.py` and
/// `scripts/base_train.py` the nanochat family follows (the commit
/// `tools/nanochat_replay/replay_nanochat.py` replays; nanochat changes quickly).
pub const NANOCHAT_COMMIT: &str = "92d63d4e8bb4df75c3b71618f31ddde2378b2bcd";

/// nanochat's vocabulary as its `GPT` pads it: up to a multiple of 64 (`pad_vocab_size_to`).
pub fn nanochat_padded_vocab(vocab: u64) -> u64 {
    vocab.div_ceil(64).saturating_mul(64)
}

/// The transformers version whose modeling code the Hugging Face families follow (the version
/// `tools/hf_replay/requirements.txt` pins and the replays record).
pub const HF_TRANSFORMERS: &str = "5.24.0";

#[cfg(test)]
mod tests;
