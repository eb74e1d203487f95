//! The large tensors a generation run allocates, named, for `diagnose` to match a failed
//! allocation against (`oom::generation`): the counterpart of `arch::large` for Hugging Face
//! `generate` (`hf_generate.rs`) and nanoGPT's `sample.py` (`sample.rs`).
//!
//! A tensor's size may grow with the tokens in play (the KV cache during decoding, every tensor
//! of sample.py's forward, which sees a longer context at each new token), so each is a shape
//! with a token axis and the range of token counts it takes:
//! - **Hugging Face `generate`** (`B` sequences, `P` prompt tokens, `N` new tokens,
//!   `T = P + N − 1` tokens the cache ends holding, `e` bytes of the weights' dtype): with a
//!   `DynamicCache`, each decoding step's `torch.cat([self.keys, key_states], dim=-2)` (and the
//!   values') in `cache_utils.py` makes one layer's new keys `[B, kv_heads, t, head_dim]`, `t`
//!   from `P + 1` to `T`; the prefill's MLP intermediate `[B, P, intermediate]` and hidden
//!   states `[B, P, hidden]`; the last position's logits `[B, 1, V]` (`logits_to_keep = 1`) and
//!   `_sample`'s float32 copy of them `[B, V]`. Attention runs through SDPA (the replay's), so no
//!   score matrix is allocated, except in Gemma 2's eager attention.
//! - **What the cache kind, the window and the MLP add** (`window_generate.rs`,
//!   `hf_gemma/generate.rs`, `quantized_decode.rs`; `W` the sliding window, `I` the MLP width):
//!   Phi-3's fused `gate_up_proj` output `[B, P, 2I]`; a sliding layer's concatenation, at most
//!   `W` tokens (`[B, kv_heads, min(t, W), head_dim]`); the sliding mask of a prefill that reaches
//!   the window (SDPA: the boolean `[P, K]` mask, `K` the keys, with the batch for a Llama
//!   static cache, then on a Llama the additive bias `[B, 1, P, K]` in the weights' dtype, padded
//!   to a multiple of 16 keys, and `repeat_kv`'s copies `[B, heads, P, head_dim]`; Gemma 2's
//!   eager attention: the additive mask `[b, 1, P, K]` and the scores `[B, heads, P, K]`, in the
//!   weights' dtype and in float32); a `StaticCache`'s preallocated layer `[B, kv_heads, T,
//!   head_dim]` (`lazy_initialization`'s `torch.zeros`; a sliding layer `min(T, W)` slots);
//!   optimum-quanto's cache at each step: the dequantized keys or values `[B, kv_heads, Q,
//!   head_dim]` (`Q` tokens quantized, from `P` to `T − 1`), the returned concatenation `[B,
//!   kv_heads, t, head_dim]` and a flush's one-byte `quantize_affine` output of the same shape.
//! - **nanoGPT's `sample.py`** (batch 1, no KV cache; `t` the cropped context, from
//!   `min(P, block_size)` to `min(P + N − 1, block_size)`; `c` the compute bytes: 2 under
//!   autocast, 4 in float32): `c_fc`'s output `[1, t, 4h]`, the residual stream `[1, t, h]` in
//!   float32, without flash the attention scores `[1, heads, t, t]` in `c` bytes and their
//!   float32 softmax; the last position's logits `[1, 1, V]` and the float32 probabilities
//!   `[1, V]`.
//! - **nanochat's `Engine.generate`** (`nanochat/generate.rs`): its preallocated `KVCache`
//!   (keys or values of every layer at once), the prompt's logits of every position and their
//!   float32 copies, a decoding step's logits, and the load's float32 embedding and head.

use super::arch::{Architecture, Family, Mlp, Span};
use super::kv_cache::CacheKind;
use super::memory::Precision;
use super::sample::sampled_model;
use super::scenario::{Dtype, Scenario};
use super::{Generation, Sampling};

/// A tensor of a generation run, its size a function of the tokens in play.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GrowingTensor {
    /// Which tensor (`kv_cache_cat`, `prefill_mlp`, …).
    pub(crate) name: &'static str,
    /// The dimensions before the token axis.
    pub(crate) lead: Vec<u64>,
    /// How many token axes (0: none, 1, or 2 for attention scores).
    pub(crate) token_axes: u32,
    /// The dimensions after the token axes.
    pub(crate) tail: Vec<u64>,
    /// The smallest and largest token count the tensor is allocated with.
    pub(crate) tokens: (u64, u64),
    /// Its dtype's name and bytes per element.
    pub(crate) dtype: &'static str,
    pub(crate) element_bytes: u64,
}

impl GrowingTensor {
    /// Its bytes with `t` tokens (saturating: a size past `u64` matches nothing).
    pub(crate) fn bytes(&self, t: u64) -> u64 {
        let dims = self.lead.iter().chain(&self.tail).copied();
        let tokens = (0..self.token_axes).map(|_| t);
        dims.chain(tokens)
            .fold(self.element_bytes, u64::saturating_mul)
    }

    /// Its shape with `tokens` (a count, or a range of counts) on each token axis, as PyTorch
    /// prints a shape (`[8, 12, 1030, 64]`).
    pub(crate) fn shape_text(&self, tokens: &str) -> String {
        let dim = |d: &u64| d.to_string();
        let dims: Vec<String> = self
            .lead
            .iter()
            .map(dim)
            .chain((0..self.token_axes).map(|_| tokens.to_owned()))
            .chain(self.tail.iter().map(dim))
            .collect();
        format!("[{}]", dims.join(", "))
    }
}

/// A tensor with no token axis, or with a token axis of one fixed count.
pub(crate) fn fixed(name: &'static str, dims: &[u64], dtype: Dtype) -> GrowingTensor {
    GrowingTensor {
        name,
        lead: dims.to_vec(),
        token_axes: 0,
        tail: Vec::new(),
        tokens: (0, 0),
        dtype: dtype.as_str(),
        element_bytes: if dtype == Dtype::Float32 { 4 } else { 2 },
    }
}

/// A tensor whose token axes sit between `lead` and `tail`, allocated with `tokens` tokens.
pub(crate) fn growing(
    name: &'static str,
    (lead, token_axes, tail): (&[u64], u32, &[u64]),
    tokens: (u64, u64),
    dtype: Dtype,
) -> GrowingTensor {
    GrowingTensor {
        lead: lead.to_vec(),
        token_axes,
        tail: tail.to_vec(),
        tokens,
        ..fixed(name, &[], dtype)
    }
}

/// Hugging Face `generate`'s large tensors for model `a`, weights in dtype `d`, asked `g`
/// (nanochat's `Engine.generate`'s for a nanochat model: `nanochat/generate.rs`).
pub(crate) fn generate_tensors(a: &Architecture, d: Dtype, g: &Generation) -> Vec<GrowingTensor> {
    if a.family == super::arch::Family::Nanochat {
        return super::nanochat::generate::tensors(a, d, g);
    }
    // `batch · max(num_beams, num_return_sequences)` rows.
    let seqs = g
        .batch_size
        .saturating_mul(g.num_return_sequences.max(g.num_beams).max(1));
    let (p, n) = (g.prompt_tokens, g.max_new_tokens);
    let last = p.saturating_add(n).saturating_sub(1);
    let at = &a.attention;
    let kv = (&[seqs, at.kv_heads][..], 1, &[at.head_dim][..]);
    let window = Window::of(a);
    let mut out = Vec::new();
    if g.cache == CacheKind::Dynamic && n >= 2 {
        if window.global {
            out.push(growing("kv_cache_cat", kv, (p + 1, last), d));
        }
        if let Some(w) = window.local.filter(|&w| w < last || !window.global) {
            let range = ((p + 1).min(w), last.min(w));
            out.push(growing("kv_cache_sliding_cat", kv, range, d));
        }
    }
    if let Mlp::Dense(f) = &a.mlp {
        out.push(growing(
            "prefill_mlp",
            (&[seqs], 1, &[f.intermediate]),
            (p, p),
            d,
        ));
        if f.fused_gate_up {
            let wide = f.intermediate.saturating_mul(2);
            out.push(growing("prefill_gate_up", (&[seqs], 1, &[wide]), (p, p), d));
        }
    }
    out.push(growing(
        "prefill_hidden",
        (&[seqs], 1, &[a.hidden]),
        (p, p),
        d,
    ));
    out.push(growing(
        "last_logits",
        (&[seqs], 1, &[a.vocab_size]),
        (1, 1),
        d,
    ));
    out.push(fixed(
        "last_logits_fp32",
        &[seqs, a.vocab_size],
        Dtype::Float32,
    ));
    let call = Call {
        d,
        prompt: p,
        last,
        seqs,
        batch: g.batch_size,
        cache: g.cache,
        decodes: n >= 2,
    };
    out.extend(cache_tensors(a, &call, &window));
    out.extend(mask_tensors(a, &call, &window));
    out
}

/// What the cache's and the mask's tensors are sized by: the weights' dtype, the prompt, the
/// tokens the cache ends holding (`T`), the sequences and prompts, the cache kind, and whether
/// any decoding step runs.
struct Call {
    d: Dtype,
    prompt: u64,
    last: u64,
    seqs: u64,
    batch: u64,
    cache: CacheKind,
    decodes: bool,
}

/// The spans of a model's layers: whether any is global, and the window of its local ones.
struct Window {
    global: bool,
    local: Option<u64>,
}

impl Window {
    fn of(a: &Architecture) -> Window {
        match &a.attention.sliding_window {
            Some(sw) if sw.pattern.contains(&Span::Local) => Window {
                global: sw.pattern.contains(&Span::Global),
                local: Some(sw.window),
            },
            _ => Window {
                global: true,
                local: None,
            },
        }
    }
}

/// A `StaticCache`'s preallocated layers and optimum-quanto's dequantized, returned and
/// quantized states (module doc).
fn cache_tensors(a: &Architecture, c: &Call, w: &Window) -> Vec<GrowingTensor> {
    let (d, p, last) = (c.d, c.prompt, c.last);
    let at = &a.attention;
    let kv = (&[c.seqs, at.kv_heads][..], 1, &[at.head_dim][..]);
    let mut out = Vec::new();
    match c.cache {
        CacheKind::Static => {
            if w.global {
                out.push(growing("static_cache_layer", kv, (last, last), d));
            }
            if let Some(win) = w.local {
                let slots = last.min(win);
                out.push(growing("static_sliding_cache_layer", kv, (slots, slots), d));
            }
        }
        CacheKind::Quantized { .. } if c.decodes => {
            out.push(growing(
                "quantized_cache_dequantized",
                kv,
                (p, last.saturating_sub(1).max(p)),
                d,
            ));
            out.push(growing("quantized_cache_returned", kv, (p + 1, last), d));
            out.push(GrowingTensor {
                dtype: "uint8",
                element_bytes: 1,
                ..growing("quantized_cache_flush", kv, (p, last), d)
            });
        }
        _ => {}
    }
    out
}

/// The sliding mask of a prefill that reaches the window, and what attention makes of it
/// (module doc).
fn mask_tensors(a: &Architecture, c: &Call, w: &Window) -> Vec<GrowingTensor> {
    let at = &a.attention;
    let (d, p, last, seqs) = (c.d, c.prompt, c.last, c.seqs);
    let is_static = c.cache == CacheKind::Static;
    let mut out = Vec::new();
    if a.family == Family::Gemma2 {
        // Eager attention: an additive mask per span and the scores, at every prompt.
        let keys = if is_static { last } else { p };
        let mask = (&[c.batch, 1, p][..], 0, &[keys][..]);
        out.push(growing("attention_mask_additive", mask, (0, 0), d));
        let scores = (&[seqs, at.heads, p][..], 0, &[keys][..]);
        out.push(growing("prefill_attention_scores", scores, (0, 0), d));
        out.push(growing(
            "prefill_attention_scores_fp32",
            scores,
            (0, 0),
            Dtype::Float32,
        ));
        return out;
    }
    let Some(win) = w.local else {
        return out;
    };
    let masked = if is_static { last >= win } else { p >= win };
    if !masked {
        return out;
    }
    // The keys: the prompt's own from the window on, else a static cache's `W` slots.
    let keys = if p >= win { p } else { win };
    let boolean = |lead: &[u64]| GrowingTensor {
        dtype: "bool",
        element_bytes: 1,
        ..growing("sliding_mask", (lead, 0, &[keys]), (0, 0), d)
    };
    if a.family == Family::Gemma3 {
        out.push(boolean(&[p]));
        return out;
    }
    let batch = if is_static { seqs } else { 1 };
    out.push(boolean(&[batch, 1, p]));
    let bias = (&[seqs, 1, p][..], 0, &[keys][..]);
    out.push(growing("sliding_mask_bias", bias, (0, 0), d));
    if keys % 16 != 0 {
        let padded = keys.div_ceil(16).saturating_mul(16);
        let shape = (&[seqs, 1, p][..], 0, &[padded][..]);
        out.push(growing("sliding_mask_bias_padded", shape, (0, 0), d));
    }
    if at.kv_heads < at.heads {
        let repeated = (&[seqs, at.heads, keys][..], 0, &[at.head_dim][..]);
        out.push(growing("prefill_repeat_kv", repeated, (0, 0), d));
    }
    out
}

/// nanoGPT `sample.py`'s large tensors for scenario `s`, asked `run`.
pub(crate) fn sample_tensors(s: &Scenario, run: &Sampling) -> Vec<GrowingTensor> {
    let m = sampled_model(s);
    let x = Precision::of(&m);
    let c = if x.c == 4 { Dtype::Float32 } else { m.dtype };
    let block = m.block_size;
    let first = run.prompt_tokens.min(block);
    let longest = run
        .prompt_tokens
        .saturating_add(run.max_new_tokens)
        .saturating_sub(1)
        .min(block);
    let range = (first, longest);
    let (h, v) = (m.n_embd, m.vocab_size);
    let mut out = vec![growing("mlp_hidden", (&[1], 1, &[4 * h]), range, c)];
    if !m.flash {
        let scores = (&[1, m.n_head][..], 2, &[][..]);
        if c != Dtype::Float32 {
            out.push(growing("attention_scores", scores, range, c));
        }
        out.push(growing(
            "attention_scores_fp32",
            scores,
            range,
            Dtype::Float32,
        ));
    }
    out.push(growing("residual", (&[1], 1, &[h]), range, Dtype::Float32));
    out.push(growing("last_logits", (&[1], 1, &[v]), (1, 1), c));
    out.push(fixed("last_probs_fp32", &[1, v], Dtype::Float32));
    out
}
