//! The sizes of one Gemma run and what its forward saves for backward, piece by piece.
//!
//! Source: transformers 5.24.0's `models/gemma2/modeling_gemma2.py` and
//! `models/gemma3/modeling_gemma3.py`, `integrations/sdpa_attention.py`, `masking_utils.py` and
//! `loss/loss_utils.py`, read against the replay's list of storages alive at each peak
//! (`tools/hf_replay/replay_gemma.py --explain`). "Saved" means kept by autograd for backward;
//! sizes in bytes, from elements times the element size.
//!
//! Dtypes: `w` is the weights' element size (4, or 2 for weights loaded in bfloat16); `c` the
//! compute element size (2 under bf16 autocast or with bf16 weights, 4 in float32). The
//! residual stream has the embedding's dtype (`w`).

use crate::estimate::arch::{Architecture, Family, Mlp, Span};
use crate::estimate::num::N;
use crate::estimate::scenario::Scenario;
use crate::estimate::trainer::ElementBytes;

/// Bytes of a float32 element.
pub(super) const FP32: u128 = 4;

/// The sizes of one run, in elements unless named bytes.
pub(super) struct GemmaRun {
    /// `s·b`, `s·b·h`, `s·b·I`, `s·b·V`, the queries `s·b·heads·head_dim`, the keys (or
    /// values) `s·b·kv_heads·head_dim`, one layer's scores `heads·s²·b`.
    pub(super) sb: N,
    pub(super) sbh: N,
    pub(super) sbi: N,
    pub(super) sbv: N,
    pub(super) sbq: N,
    pub(super) sbkv: N,
    pub(super) scores: N,
    /// Sequence length `s`, micro-batch `b`, and `s` rounded up to 32 and to 16 (the
    /// memory-efficient kernel's logsumexp and bias).
    pub(super) s: N,
    pub(super) b: N,
    pub(super) s32: N,
    pub(super) s16: N,
    /// Hidden width, query heads, key/value heads, `head_dim`.
    pub(super) h: N,
    pub(super) heads: N,
    pub(super) kv_heads: N,
    pub(super) head_dim: N,
    /// `V·h`: the token embedding, which is the head too (Gemma ties them).
    pub(super) vh: N,
    /// One block's Linear weights (elements): q, k, v, o and the MLP's three.
    pub(super) block_linear: N,
    /// Layers, and how many of them are sliding-window (local) and global.
    pub(super) l: N,
    pub(super) local: u64,
    pub(super) global: u64,
    /// Rotary tables: Gemma 3 builds one per span its layers use (a local and a global base),
    /// Gemma 2 one.
    pub(super) rope_tables: u64,
    /// Weight bytes `w` and compute bytes `c`; bf16 autocast on float32 weights.
    pub(super) w: u128,
    pub(super) c: u128,
    pub(super) autocast: bool,
    /// `attn_implementation="sdpa"` (else eager).
    pub(super) sdpa: bool,
    /// The sequence reaches the sliding window: local layers get a mask.
    pub(super) reaches_window: bool,
    /// Blocks checkpointed (the cache is off, and every layer gets a mask).
    pub(super) checkpointed: bool,
    /// Gemma 2's attention softcapping; Gemma 2's final logit softcapping; Gemma 3's QK-norm.
    pub(super) attention_softcap: bool,
    pub(super) logit_softcap: bool,
    pub(super) qk_norm: bool,
}

impl GemmaRun {
    /// The sizes of `s` on `a` (a Gemma description, checked by `hf_gemma::check`).
    pub(super) fn of(a: &Architecture, s: &Scenario) -> GemmaRun {
        let (seq, b, h) = (
            N::from(s.block_size),
            N::from(s.batch_size),
            N::from(a.hidden),
        );
        let intermediate = match &a.mlp {
            Mlp::Dense(f) => f.intermediate,
            Mlp::Moe(m) => m.expert.intermediate,
        };
        let at = &a.attention;
        let (q, kv, i) = (
            N::from(at.q_width()),
            N::from(at.kv_width()),
            N::from(intermediate),
        );
        let ElementBytes { w, c, autocast } = ElementBytes::of(s);
        let (local, global) = span_counts(a);
        let round = |m: u64| N::from(s.block_size.div_ceil(m).saturating_mul(m));
        GemmaRun {
            sb: seq * b,
            sbh: seq * b * h,
            sbi: seq * b * i,
            sbv: seq * b * N::from(a.vocab_size),
            sbq: seq * b * q,
            sbkv: seq * b * kv,
            scores: N::from(at.heads) * seq * seq * b,
            s: seq,
            b,
            s32: round(32),
            s16: round(16),
            h,

            heads: N::from(at.heads),
            kv_heads: N::from(at.kv_heads),
            head_dim: N::from(at.head_dim),
            vh: N::from(a.vocab_size) * h,
            block_linear: h * q * 2 + h * kv * 2 + h * i * 3,
            l: N::from(a.layers),
            local,
            global,
            rope_tables: if a.family == Family::Gemma3 {
                u64::from(local > 0) + u64::from(global > 0)
            } else {
                1
            },
            w,
            c,
            autocast,
            sdpa: s.flash,
            reaches_window: at
                .sliding_window
                .as_ref()
                .is_some_and(|sw| s.block_size >= sw.window),
            checkpointed: s.grad_checkpoint,
            attention_softcap: at.softcap.is_some(),
            logit_softcap: a.embeddings.logit_softcap.is_some(),
            qk_norm: at.qk_norm.is_some(),
        }
    }

    /// Whether the queries have more heads than the keys and values.
    fn grouped(&self) -> bool {
        self.heads != self.kv_heads
    }

    /// One `(1 + w)` RMSNorm over `x` of `elements` (`Gemma2RMSNorm.forward`: `x.float()`,
    /// `pow(2).mean(-1)`, `rsqrt`, `x · rsqrt`, `· (1 + weight.float())`, `.type_as(x)`): the
    /// float32 input (`x` itself in float32, else its upcast), `x̂` in float32 (unlike Llama's,
    /// the product with the weight is taken before the cast back), one `rsqrt` per `rows` and
    /// the float32 `1 + weight` vector of `width`.
    fn norm_of(elements: N, rows: N, width: N) -> N {
        elements * (2 * FP32) + rows * FP32 + width * FP32
    }

    /// One of the hidden-width norms (four per block, and the final one).
    pub(super) fn norm_site(&self) -> N {
        Self::norm_of(self.sbh, self.sb, self.h)
    }

    /// A norm's output as the Linears after it save it: under autocast each Linear casts it to
    /// bf16 itself (`readers` copies), otherwise the output once.
    pub(super) fn norm_output(&self, readers: u128) -> N {
        if self.autocast {
            self.sbh * (2 * readers)
        } else {
            self.sbh * self.c
        }
    }

    /// Gemma 3's `q_norm` and `k_norm`, `(1 + w)` RMSNorms of `head_dim` per head.
    fn qk_norm(&self) -> N {
        if !self.qk_norm {
            return N::ZERO;
        }
        Self::norm_of(self.sbq, self.sb * self.heads, self.head_dim)
            + Self::norm_of(self.sbkv, self.sb * self.kv_heads, self.head_dim)
    }

    /// A layer of `span` gets an attention mask: every layer when checkpointed, a local layer
    /// once the sequence reaches its window (`_ignore_causal_mask_sdpa` skips it before).
    pub(super) fn masked(&self, span: Span) -> bool {
        self.checkpointed || (span == Span::Local && self.reaches_window)
    }

    /// The attention of a layer of `span` runs as eager attention saves: eager itself, and
    /// float32 SDPA with grouped heads and no mask (PyTorch's math composite, which saves the
    /// same bytes).
    pub(super) fn eager_like(&self, span: Span) -> bool {
        !self.sdpa || (self.c == FP32 && self.grouped() && !self.masked(span))
    }

    /// Whether attention saves `repeat_kv`'s copies of the keys and values (to the query
    /// heads' width) rather than the cache's own tensors: eager attention and masked SDPA with
    /// grouped heads, except that masked SDPA with one key/value head gets a view.
    fn kv_copied(&self, span: Span) -> bool {
        if self.eager_like(span) {
            self.grouped()
        } else {
            self.masked(span) && self.grouped() && self.kv_heads > N::from(1u64)
        }
    }

    /// The keys and the values as attention saves them: [`GemmaRun::kv_copied`]'s copies, or
    /// the cache's tensors; but masked SDPA under autocast with one key/value head casts the
    /// float32 keys (the rotary product is float32) through `repeat_kv`'s view, which makes
    /// the bf16 copy full-width.
    pub(super) fn kv_saved(&self, span: Span) -> (N, N) {
        if self.kv_copied(span) {
            return (self.sbq * self.c, self.sbq * self.c);
        }
        let view_cast =
            self.autocast && self.grouped() && self.masked(span) && !self.eager_like(span);
        let keys = if view_cast { self.sbq } else { self.sbkv };
        (keys * self.c, self.sbkv * self.c)
    }

    /// One layer's attention saves, by kind (the rotary products save only `cos` and `sin`):
    /// - eager (`eager_attention_forward`): the queries and the output's contiguous copy, the
    ///   keys and values ([`GemmaRun::kv_saved`]), per score the float32 softmax, in 16 bits its
    ///   cast, and with Gemma 2's softcapping the `tanh` output in the compute dtype;
    /// - SDPA without a mask (FlashAttention in 16 bits, the memory-efficient kernel in
    ///   float32): queries, keys, values, output, a float32 logsumexp (`s` rounded up to 32 in
    ///   float32) and FlashAttention's 24 bytes of RNG state;
    /// - SDPA with a mask: the memory-efficient kernel with the boolean mask made additive
    ///   (`b·s·s'` in the compute dtype, `s'` padded to 16, one per layer), its logsumexp of
    ///   `s` rounded up to 32 and 16 bytes of RNG state.
    pub(super) fn attention(&self, span: Span) -> N {
        let (keys, values) = self.kv_saved(span);
        let kv = keys + values;
        if self.eager_like(span) {
            let cast = if self.c == FP32 { 0 } else { self.c };
            let tanh = if self.attention_softcap { self.c } else { 0 };
            return self.sbq * (2 * self.c) + kv + self.scores * (FP32 + cast + tanh);
        }
        if self.masked(span) {
            return self.sbq * (2 * self.c)
                + kv
                + self.heads * self.s32 * self.b * FP32
                + self.b * self.s * self.s16 * self.c
                + N::from(16u64);
        }
        let (lse, rng) = if self.c == FP32 {
            (self.s32, 0u64)
        } else {
            (self.s, 24)
        };
        self.sbq * (2 * self.c) + kv + self.heads * lse * self.b * FP32 + N::from(rng)
    }

    /// The gated MLP, `down(gelu_tanh(gate(x)) · up(x))`: the gate's and up's outputs, the
    /// GELU's output and the product, `4·c·s·b·I` (as Llama's SwiGLU).
    pub(super) fn mlp(&self) -> N {
        self.sbi * (4 * self.c)
    }

    /// Everything one layer of `span` saves: four norms, the outputs of the input and
    /// pre-feedforward norms as q/k/v and gate/up read them, attention, QK-norm, the MLP.
    pub(super) fn layer(&self, span: Span) -> N {
        self.norm_site() * 4
            + self.norm_output(3)
            + self.norm_output(2)
            + self.attention(span)
            + self.qk_norm()
            + self.mlp()
    }

    /// Every layer, by span.
    fn layers(&self, of: impl Fn(Span) -> N) -> N {
        of(Span::Local) * N::from(self.local) + of(Span::Global) * N::from(self.global)
    }

    /// The final norm and its output as the head's input; with the final logit softcapping
    /// (`logits / cap`, `tanh`, `· cap`) the `tanh` output, `c·s·b·V`.
    pub(super) fn final_norm(&self) -> N {
        let tanh = if self.logit_softcap {
            self.sbv * self.c
        } else {
            N::ZERO
        };
        self.norm_site() + self.norm_output(1) + tanh
    }

    /// The rotary tables' `cos` and `sin` of `s·head_dim` in the embedding's dtype.
    pub(super) fn rope(&self) -> N {
        self.s * self.head_dim * (2 * self.w) * N::from(self.rope_tables)
    }

    /// The masks built per forward: one per span the layers use (`causal_mask_mapping`).
    fn masks(&self) -> u64 {
        u64::from(self.local > 0) + u64::from(self.global > 0)
    }

    /// Everything the forward saves, not checkpointed.
    pub(super) fn saved(&self) -> N {
        self.layers(|span| self.layer(span)) + self.final_norm() + self.rope()
    }

    /// What every checkpointed block receives besides its input, kept for the recomputation:
    /// the rotary tables, `position_ids` (`8·s`) and the masks, one per span present: SDPA's
    /// boolean `(b, 1, s, s)`, eager's additive one in the embedding's dtype.
    pub(super) fn checkpoint_inputs(&self) -> N {
        let mask = self.b * self.s * self.s * if self.sdpa { 1 } else { self.w };
        self.rope() + mask * N::from(self.masks()) + self.s * 8
    }

    /// What a checkpointed forward saves: each block's input, the final norm's saves and
    /// [`GemmaRun::checkpoint_inputs`].
    pub(super) fn checkpointed_saves(&self) -> N {
        self.l * self.sbh * self.w + self.final_norm() + self.checkpoint_inputs()
    }

    /// The cache's tensors attention does not save, alive until the forward returns (the
    /// `DynamicCache`, its sliding layers included: their window is a view of the whole
    /// concatenation): the keys (float32 under autocast, which attention always casts) where
    /// attention saves a copy or a cast of them, the values where it saves copies.
    pub(super) fn cache_only(&self) -> N {
        if self.checkpointed {
            return N::ZERO;
        }
        let keys = if self.autocast { FP32 } else { self.c };
        self.layers(|span| {
            let copied = self.kv_copied(span);
            let k = if copied || self.autocast { keys } else { 0 };
            let v = if copied { self.c } else { 0 };
            self.sbkv * (k + v)
        })
    }

    /// Autocast's bf16 copies of every Linear weight and of the head, saved for backward; with
    /// checkpointed blocks only the head's.
    pub(super) fn weight_copies(&self, checkpointed: bool) -> N {
        match (self.autocast, checkpointed) {
            (false, _) => N::ZERO,
            (true, true) => self.vh * 2,
            (true, false) => (self.l * self.block_linear + self.vh) * 2,
        }
    }
}

/// How many of the layers of `a` are local (sliding-window) and global.
pub(super) fn span_counts(a: &Architecture) -> (u64, u64) {
    let Some(sw) = &a.attention.sliding_window else {
        return (0, a.layers);
    };
    let local = (0..a.layers)
        .filter(|i| {
            let at = usize::try_from(*i).unwrap_or(0) % sw.pattern.len().max(1);
            sw.pattern.get(at) == Some(&Span::Local)
        })
        .count();
    let local = u64::try_from(local).unwrap_or(0);
    (local, a.layers - local)
}
