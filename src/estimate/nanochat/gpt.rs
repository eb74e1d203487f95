//! nanochat's `GPTConfig` as an [`Architecture`], and `base_train.py`'s derivation of it from
//! `--depth` (at [`NANOCHAT_COMMIT`]).

use std::borrow::Cow;

use crate::estimate::arch::{
    Activation, Architecture, Attention, Embeddings, Family, FeedForward, Mlp, Norm, NormPlacement,
    Positions, SlidingWindow, Span, NANOCHAT_COMMIT,
};

/// `GPTConfig`'s fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GptConfig {
    /// `sequence_len` (`--max-seq-len`).
    pub sequence_len: u64,
    /// `vocab_size` (the tokenizer's: 32,768 for `tok_train.py`'s default).
    pub vocab_size: u64,
    /// `n_layer` (`--depth`).
    pub n_layer: u64,
    /// `n_head`.
    pub n_head: u64,
    /// `n_kv_head`.
    pub n_kv_head: u64,
    /// `n_embd`.
    pub n_embd: u64,
    /// `window_pattern`: `S` (a quarter of the context, rounded up to 128) and `L` (full),
    /// tiled over the layers, the last layer always `L`.
    pub window_pattern: String,
}

/// The vocabulary of `tok_train.py`'s default tokenizer (`--vocab-size`, 2^15).
pub const NANOCHAT_VOCAB: u64 = 32768;

impl GptConfig {
    /// `build_model_meta(depth)`: `model_dim = ⌈depth·aspect_ratio / head_dim⌉·head_dim`, as many
    /// heads of `head_dim` as fit, as many key/value heads.
    pub fn from_depth(
        depth: u64,
        aspect_ratio: u64,
        head_dim: u64,
        max_seq_len: u64,
        window_pattern: &str,
    ) -> GptConfig {
        let base = depth.saturating_mul(aspect_ratio);
        let dim = base.div_ceil(head_dim.max(1)).saturating_mul(head_dim);
        let heads = dim / head_dim.max(1);
        GptConfig {
            sequence_len: max_seq_len,
            vocab_size: NANOCHAT_VOCAB,
            n_layer: depth,
            n_head: heads,
            n_kv_head: heads,
            n_embd: dim,
            window_pattern: window_pattern.to_owned(),
        }
    }

    /// What `GPT.__init__` would assert on, if anything: a pattern with other letters than S
    /// and L, `n_embd` not a multiple of `n_head`, heads not grouping over `n_kv_head`.
    pub fn problem(&self) -> Option<String> {
        let pattern = self.window_pattern.to_uppercase();
        if pattern.is_empty() || !pattern.chars().all(|c| c == 'S' || c == 'L') {
            return Some(format!(
                "window pattern \"{}\": nanochat accepts only S and L (e.g. SSSL, L)",
                crate::terminal::visible_line(&self.window_pattern)
            ));
        }
        if self.n_head == 0 || self.n_embd % self.n_head != 0 {
            return Some(format!(
                "n_embd {} is not a multiple of n_head {} (gpt.py asserts it)",
                self.n_embd, self.n_head
            ));
        }
        if self.n_kv_head == 0 || self.n_kv_head > self.n_head || self.n_head % self.n_kv_head != 0
        {
            return Some(format!(
                "n_kv_head {} must divide n_head {} (gpt.py asserts it)",
                self.n_kv_head, self.n_head
            ));
        }
        None
    }

    /// The description (check [`GptConfig::problem`] first: here a letter other than S counts
    /// as L and a zero head count as one).
    pub fn architecture(&self, name: &str) -> Architecture {
        let pattern = self.window_pattern.to_uppercase();
        let spans = pattern
            .chars()
            .map(|c| if c == 'S' { Span::Local } else { Span::Global })
            .collect();
        let h = self.n_embd;
        let heads = self.n_head.max(1);
        Architecture {
            family: Family::Nanochat,
            name: Cow::Owned(name.to_owned()),
            vocab_size: self.vocab_size,
            hidden: h,
            layers: self.n_layer,
            positions: Positions::rotary(100_000.0, self.sequence_len.saturating_mul(10)),
            attention: Attention {
                heads,
                kv_heads: self.n_kv_head.max(1),
                head_dim: h / heads,
                fused_qkv: false,
                qkv_bias: false,
                out_bias: false,
                qk_norm: Some(Norm::RmsNormNoWeight),
                softcap: None,
                sliding_window: Some(SlidingWindow {
                    window: self.sequence_len.div_ceil(4).div_ceil(128) * 128,
                    pattern: spans,
                }),
            },
            mlp: Mlp::Dense(FeedForward {
                intermediate: h.saturating_mul(4),
                gated: false,
                fused_gate_up: false,
                activation: Activation::ReluSquared,
                bias: false,
            }),
            norm: Norm::RmsNormNoWeight,
            norm_placement: NormPlacement::Pre,
            embeddings: Embeddings {
                tied_head: false,
                head_bias: false,
                scaled_by_sqrt_hidden: false,
                logit_softcap: Some(15.0),
            },
        }
    }
}

/// The short commit vramdoc's nanochat figures follow, for messages.
pub fn short_commit() -> &'static str {
    &NANOCHAT_COMMIT[..7]
}
