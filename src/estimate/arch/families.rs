//! The descriptions of the computed families, built from the settings their code reads.

use std::borrow::Cow;

use super::{
    Activation, Architecture, Attention, Embeddings, Family, FeedForward, Mlp, Norm, NormPlacement,
    Positions,
};
use crate::estimate::scenario::Scenario;

/// The settings GPT-2's shape follows from.
struct Gpt2Shape {
    layers: u64,
    heads: u64,
    hidden: u64,
    vocab_size: u64,
    positions: u64,
    bias: bool,
}

/// GPT-2's block as both nanoGPT and transformers write it: multi-head attention with a fused
/// q/k/v, a 4h MLP, LayerNorms, learned positions and a tied head.
fn gpt2_shape(
    family: Family,
    name: &'static str,
    g: Gpt2Shape,
    activation: Activation,
) -> Architecture {
    let Gpt2Shape {
        layers,
        heads,
        hidden,
        vocab_size,
        positions,
        bias,
    } = g;
    Architecture {
        family,
        name: Cow::Borrowed(name),
        vocab_size,
        hidden,
        layers,
        positions: Positions::Learned {
            max_positions: positions,
        },
        attention: Attention::multi_head(hidden, heads, bias),
        mlp: Mlp::Dense(FeedForward {
            intermediate: hidden.saturating_mul(4),
            gated: false,
            fused_gate_up: false,
            activation,
            bias,
        }),
        norm: Norm::LayerNorm { bias },
        norm_placement: NormPlacement::Pre,
        embeddings: Embeddings {
            tied_head: true,
            head_bias: false,
            scaled_by_sqrt_hidden: false,
            logit_softcap: None,
        },
    }
}

impl Architecture {
    /// nanoGPT's `GPT` for a run's settings (`Scenario::as_run` already applied): `n_layer`,
    /// `n_head`, `n_embd`, `vocab_size`, `bias`, and `wpe` of `block_size` rows; `nn.GELU`.
    pub fn nanogpt(s: &Scenario) -> Architecture {
        let shape = Gpt2Shape {
            layers: s.n_layer,
            heads: s.n_head,
            hidden: s.n_embd,
            vocab_size: s.vocab_size,
            positions: s.block_size,
            bias: s.bias,
        };
        gpt2_shape(Family::NanoGpt, "nanoGPT", shape, Activation::Gelu)
    }

    /// transformers' `GPT2LMHeadModel` from a `GPT2Config`'s `n_layer`, `n_head`, `n_embd`,
    /// `vocab_size` and `n_positions` (biases everywhere, `activation_function = "gelu_new"`,
    /// transformers' default and every released GPT-2's).
    pub fn hf_gpt2(
        layers: u64,
        heads: u64,
        hidden: u64,
        vocab_size: u64,
        n_positions: u64,
    ) -> Architecture {
        let shape = Gpt2Shape {
            layers,
            heads,
            hidden,
            vocab_size,
            positions: n_positions,
            bias: true,
        };
        gpt2_shape(
            Family::HfGpt2,
            "GPT2LMHeadModel",
            shape,
            Activation::GeluNewPython,
        )
    }
}
