//! The sizes of one Llama-family run and what its forward saves for backward, piece by piece.
//!
//! Source: transformers 5.24.0's `models/llama/modeling_llama.py` (Mistral's, Qwen2's, Qwen3's and
//! Phi-3's modeling files are generated from it and save the same tensors), its
//! `integrations/sdpa_attention.py` and `loss/loss_utils.py`, read against the replay's list of
//! storages alive at each peak (`tools/hf_replay/replay_llama.py --explain`). "Saved" means kept
//! by autograd for backward; sizes in bytes, from elements times the element size.
//!
//! Dtypes: `w` is the weights' element size (4 for float32, 2 for weights loaded in bfloat16);
//! `c` the compute element size (2 under bf16 autocast or with bf16 weights, 4 in float32). The
//! residual stream has the embedding's dtype (`w`): autocast leaves `nn.Embedding` and the
//! residual adds alone.

use crate::estimate::arch::{Architecture, Mlp};
use crate::estimate::hf_moe::ExpertRun;
use crate::estimate::num::N;
use crate::estimate::scenario::Scenario;
use crate::estimate::trainer::ElementBytes;

/// Bytes of a float32 element.
pub(crate) const FP32: u128 = 4;

/// The sizes of one run, in elements unless named bytes.
pub(crate) struct LlamaRun {
    /// `s·b`, `s·b·h`, `s·b·I` (I the MLP's intermediate width), `s·b·V`.
    pub(crate) sb: N,
    pub(crate) sbh: N,
    pub(crate) sbi: N,
    pub(crate) sbv: N,
    /// `s·b·(heads·head_dim)`: the queries; `s·b·(kv_heads·head_dim)`: the keys, or the values.
    pub(crate) sbq: N,
    pub(crate) sbkv: N,
    /// `heads·s²·b`: one layer's attention scores.
    pub(crate) scores: N,
    /// Sequence length `s` and micro-batch `b`.
    pub(crate) s: N,
    /// The logsumexp's length: `s`, rounded up to 32 by the memory-efficient kernel (float32).
    pub(crate) lse_len: N,
    /// `s` rounded up to 32 (the memory-efficient kernel's logsumexp) and to 16 (its bias).
    pub(crate) s32: N,
    pub(crate) s16: N,
    pub(crate) b: N,
    /// Query heads and key/value heads.
    pub(crate) heads: N,
    pub(crate) kv_heads: N,
    /// `head_dim`.
    pub(crate) head_dim: N,
    /// `V·h`: the token embedding, and the untied head.
    pub(crate) vh: N,
    /// One block's Linear weights autocast copies (elements): q, k, v, o and the MLP's
    /// (`mlp_copied`).
    pub(crate) block_linear: N,
    /// The MLP's weights autocast copies to bf16 (elements): a dense MLP's three; a mixture of
    /// experts' router and shared expert (the experts' own weights are not cast, `hf_moe`).
    pub(crate) mlp_copied: N,
    /// The MLP's parameters (elements): their gradients.
    pub(crate) mlp_params: N,
    /// A mixture of experts in place of the dense MLP (`hf_moe`).
    pub(crate) experts: Option<ExpertRun>,
    /// Hidden width `h`, intermediate width `I`, query width.
    pub(crate) h: N,
    pub(crate) i: N,
    pub(crate) q: N,
    /// Layers.
    pub(crate) l: N,
    /// Weight bytes `w` and compute bytes `c`.
    pub(crate) w: u128,
    pub(crate) c: u128,
    /// bf16 autocast on float32 weights.
    pub(crate) autocast: bool,
    /// SDPA's fused kernels (else eager attention, or SDPA's math fallback, which saves the
    /// same).
    pub(crate) sdpa: bool,
    /// Fewer key/value heads than query heads (`repeat_kv` copies them in eager attention).
    pub(crate) grouped: bool,
    /// Every layer's attention gets a mask (`batch_layout` padded or padding-free,
    /// `batch_layout.rs`): SDPA runs the memory-efficient kernel with it.
    pub(crate) masked: bool,
    /// The `DynamicCache` is filled (`use_cache` on: full rows as the replay calls the model;
    /// the other layouts run with `use_cache=False`).
    pub(crate) cache: bool,
    /// flash-attn's kernels (`flash_attention_2`, `flash_attention_2.rs`): never a mask.
    pub(crate) fa2: bool,
    /// The layout adds an input beside the tokens: a padded batch's attention mask or a
    /// padding-free row's `position_ids` (int64, one per token).
    pub(crate) extra_input: bool,
    /// Qwen3's per-head RMSNorm of queries and keys.
    pub(crate) qk_norm: bool,
    /// Linears reading the attention's input norm (3: q, k, v; Phi-3's fused `qkv_proj`: 1)
    /// and the MLP's (2: gate, up; Phi-3's `gate_up_proj`: 1).
    pub(crate) attention_readers: u128,
    pub(crate) mlp_readers: u128,
    /// The head is the token embedding's weight.
    pub(crate) tied: bool,
}

impl LlamaRun {
    /// The sizes of `s` on `a` (a Llama-family description, checked by `hf_llama::check`): the
    /// rows and their length as the batch layout gives them to the model (one row of `b·s`
    /// tokens when padding-free).
    pub(crate) fn of(a: &Architecture, s: &Scenario) -> LlamaRun {
        let (rows, len) = s.batch_layout.rows(s.batch_size, s.block_size);
        let fa2 = s.flash_attention_2();
        let masked = s.batch_layout.masked() && !fa2;
        let (seq, b, h) = (N::from(len), N::from(rows), N::from(a.hidden));
        let f = match &a.mlp {
            Mlp::Dense(f) => *f,
            Mlp::Moe(m) => m.expert,
        };
        let at = &a.attention;
        let (q, kv, i) = (
            N::from(at.q_width()),
            N::from(at.kv_width()),
            N::from(f.intermediate),
        );
        let ElementBytes { w, c, autocast } = ElementBytes::of(s);
        let experts = ExpertRun::of(a, s, w, c);
        let (mlp_copied, mlp_params, mlp_readers) = match &experts {
            Some(e) => (e.copied(), e.params(), e.readers()),
            None => (h * i * 3, h * i * 3, if f.fused_gate_up { 1 } else { 2 }),
        };
        LlamaRun {
            sb: seq * b,
            sbh: seq * b * h,
            sbi: seq * b * i,
            sbv: seq * b * N::from(a.vocab_size),
            sbq: seq * b * q,
            sbkv: seq * b * kv,
            scores: N::from(at.heads) * seq * seq * b,
            s: seq,
            lse_len: if c == FP32 {
                N::from(len.div_ceil(32).saturating_mul(32))
            } else {
                seq
            },
            s32: N::from(len.div_ceil(32).saturating_mul(32)),
            s16: N::from(len.div_ceil(16).saturating_mul(16)),
            b,
            heads: N::from(at.heads),
            kv_heads: N::from(at.kv_heads),
            head_dim: N::from(at.head_dim),
            vh: N::from(a.vocab_size) * h,
            block_linear: h * q * 2 + h * kv * 2 + mlp_copied,
            mlp_copied,
            mlp_params,
            experts,
            h,
            i,
            q,
            l: N::from(a.layers),
            w,
            c,
            autocast,
            // float32 SDPA with grouped heads and no mask runs the math composite, which saves
            // what eager attention saves, byte for byte (`repeat_interleave`d keys and values,
            // the scaled queries and keys laid out for `bmm`, the float32 softmax, the output's
            // contiguous copy): it is modelled as eager. With a mask the memory-efficient kernel
            // runs instead, on repeated keys and values.
            sdpa: s.flash
                && (masked || !(c == FP32 && at.kv_heads != at.heads && !s.grad_checkpoint)),
            grouped: at.kv_heads != at.heads,
            masked,
            cache: !s.batch_layout.masked(),
            fa2,
            extra_input: s.batch_layout.masked(),
            qk_norm: at.qk_norm.is_some(),
            attention_readers: if at.fused_qkv { 1 } else { 3 },
            mlp_readers,
            tied: a.embeddings.tied_head,
        }
    }

    /// One RMSNorm (`LlamaRMSNorm.forward`: `x.to(float32)`, `pow(2).mean(-1)`, `rsqrt`,
    /// `x · rsqrt`, `.to(input_dtype)`, `weight · x̂`): `pow` saves its float32 input (the
    /// residual stream itself in float32, its float32 upcast with bf16 weights), the product
    /// `weight · x̂` saves `x̂` in the input's dtype (`w`), and the product `x · rsqrt` the
    /// `rsqrt` column (`4·s·b`).
    pub(crate) fn norm_site(&self) -> N {
        self.sbh * (FP32 + self.w) + self.sb * FP32
    }

    /// A norm's output as the Linears after it save it: under autocast each Linear casts it to
    /// bf16 itself (autocast caches casts of weights only), so `readers` copies; otherwise the
    /// output, once (`c` bytes).
    pub(crate) fn norm_output(&self, readers: u128) -> N {
        if self.autocast {
            self.sbh * (2 * readers)
        } else {
            self.sbh * self.c
        }
    }

    /// What the keys and values attention saves are stored as: `repeat_kv`'s copies to the query
    /// heads' width in eager attention or masked SDPA with grouped heads, else the keys'
    /// (values') width.
    pub(crate) fn kv_saved(&self) -> N {
        if (!self.sdpa || self.masked) && self.grouped {
            self.sbq * self.c
        } else {
            self.sbkv * self.c
        }
    }

    /// One layer's attention saves. The rotary product `q·cos + rotate_half(q)·sin`
    /// (`apply_rotary_pos_emb`) saves only `cos` and `sin` (shared, [`LlamaRun::rope`]); under
    /// autocast its result is float32 (bf16 `q` times float32 `cos`), which attention casts
    /// back to bf16. The `DynamicCache` (`use_cache` defaults to true) concatenates keys and
    /// values into copies; those reach attention.
    /// - SDPA (FlashAttention for 16 bits, the memory-efficient kernel for float32, grouped
    ///   heads passed as they are): the 16-bit (or float32) queries, keys and values it reads,
    ///   its output (o_proj's input too) and its float32 logsumexp (`4·heads·s·b`; `s` rounded
    ///   up to 32 by the memory-efficient kernel), and FlashAttention's two 8- and 16-byte RNG
    ///   state tensors.
    /// - Eager (`eager_attention_forward`): `matmul`'s copies of the queries and of the
    ///   (repeated) keys laid out for `bmm`, the (repeated) values, per score the float32 softmax
    ///   and, in 16 bits, its cast `.to(query.dtype)` that the second matmul reads, and the
    ///   output's `transpose(1, 2).contiguous()` copy o_proj reads.
    /// - SDPA with a mask (a padded or padding-free batch): [`LlamaRun::masked_sdpa`].
    pub(crate) fn attention(&self) -> N {
        if self.sdpa && self.masked {
            self.masked_sdpa()
        } else if self.sdpa {
            // PyTorch's kernel keeps two RNG tensors, flash-attn one `(2,)` int64 `rng_state`.
            let rng = if self.c == FP32 {
                N::ZERO
            } else if self.fa2 {
                N::from(16u64)
            } else {
                N::from(24u64)
            };
            self.sbq * (2 * self.c)
                + self.sbkv * (2 * self.c)
                + self.heads * self.lse_len * self.b * FP32
                + rng
        } else {
            self.sbq * (2 * self.c) + self.kv_saved() * 2 + self.scores * self.per_score_saved()
        }
    }

    /// Bytes per score eager attention saves: the float32 softmax and, in 16 bits, its cast.
    pub(crate) fn per_score_saved(&self) -> u128 {
        FP32 + self.score_cast()
    }

    /// The 16-bit cast of the softmax (none in float32).
    pub(crate) fn score_cast(&self) -> u128 {
        if self.c == FP32 {
            0
        } else {
            self.c
        }
    }

    /// A layer's eager softmax backward, with `value` the bytes of the values it saved: what
    /// the layer has released by then (its MLP, post-attention norm with the MLP's inputs,
    /// o_proj's input, the values and the softmax's 16-bit cast) and what is in flight (the
    /// float32 gradient of the softmax's output and its backward's float32 result, 8 bytes per
    /// score; the residual stream's gradient, `w·s·b·h`; the values' gradient).
    pub(crate) fn at_softmax_backward(&self, value: N) -> (N, N) {
        let freed = self.mlp()
            + self.norm_site()
            + self.norm_output(self.mlp_readers)
            + self.sbq * self.c
            + value
            + self.scores * self.score_cast();
        let in_flight = self.scores * (2 * FP32) + self.sbh * self.w + value;
        (freed, in_flight)
    }

    /// Qwen3's `q_norm` and `k_norm` (an RMSNorm per head): each saves its float32 input, `x̂`
    /// in the projection's dtype and an `rsqrt` per head and token.
    pub(crate) fn qk_norm(&self) -> N {
        if !self.qk_norm {
            return N::ZERO;
        }
        (self.sbq + self.sbkv) * (FP32 + self.c) + self.sb * (self.heads + self.kv_heads) * FP32
    }

    /// `LlamaMLP.forward`, `down(silu(gate(x)) · up(x))`: `silu` saves the gate's output, the
    /// product saves `silu`'s output and up's, down_proj saves the product: `4·c·s·b·I` (Phi-3's
    /// fused `gate_up_proj` output holds the gate and up halves, the same bytes).
    pub(crate) fn mlp(&self) -> N {
        match &self.experts {
            Some(e) => e.saved(),
            None => self.sbi * (4 * self.c),
        }
    }

    /// Everything one layer saves.
    pub(crate) fn layer(&self) -> N {
        self.norm_site() * 2
            + self.norm_output(self.attention_readers)
            + self.norm_output(self.mlp_readers)
            + self.attention()
            + self.qk_norm()
            + self.mlp()
    }

    /// The final norm and its output as the head's input.
    pub(crate) fn final_norm(&self) -> N {
        self.norm_site() + self.norm_output(1)
    }

    /// The rotary `cos` and `sin` (`LlamaRotaryEmbedding.forward`: float32, then cast to the
    /// embedding's dtype), `s·head_dim` each, shared by every layer.
    pub(crate) fn rope(&self) -> N {
        self.s * self.head_dim * (2 * self.w)
    }

    /// Everything the forward saves, not checkpointed.
    pub(crate) fn saved(&self) -> N {
        self.l * self.layer() + self.final_norm() + self.rope()
    }

    /// What a checkpointed forward saves (`gradient_checkpointing_enable`, non-reentrant; the
    /// cache is off): each block's input (`L·w·s·b·h`), the final norm's saves (its float32
    /// input is the last block's output in float32; with bf16 weights its float32 upcast, and
    /// the bf16 output itself is not kept), and [`LlamaRun::checkpoint_inputs`].
    pub(crate) fn checkpointed(&self) -> N {
        self.l * self.sbh * self.w + self.final_norm() + self.checkpoint_inputs()
    }

    /// What every checkpointed block receives besides its input, kept for the recomputation:
    /// `cos` and `sin`, the `position_ids` (`8·s`) and the causal mask, SDPA's boolean
    /// `(b, 1, s, s)` (transformers builds it when the cache is off, so the layers pass it to
    /// SDPA) or eager's additive one in the embedding's dtype.
    pub(crate) fn checkpoint_inputs(&self) -> N {
        // flash-attn gets no mask (`flash_attention_mask` returns none without padding).
        let mask = if self.fa2 {
            N::ZERO
        } else {
            self.b * self.s * self.s * if self.sdpa { 1 } else { self.w }
        };
        self.rope() + mask + self.s * 8
    }

    /// One block as its checkpointed recomputation saves it (the cache is off, so SDPA receives
    /// the boolean mask): as [`LlamaRun::layer`], but for the block's input, which is the
    /// checkpoint's (kept in float32 by the input norm's `pow` when the weights are float32),
    /// and for SDPA, which now gets a mask: transformers repeats grouped keys and values to the
    /// query heads (`repeat_kv`, copies) and the memory-efficient kernel runs with the mask made
    /// additive in the query dtype (`b·s·s'` elements, `s'` the last dimension padded to a
    /// multiple of 16) as its saved bias, a logsumexp of `s` rounded up to 32, and two 8-byte
    /// RNG tensors.
    pub(crate) fn recomputed_layer(&self) -> N {
        let input = if self.w == FP32 {
            self.sbh * FP32
        } else {
            N::ZERO
        };
        let attention = if self.sdpa && !self.fa2 {
            self.masked_sdpa()
        } else {
            self.attention()
        };
        self.layer() - self.attention() + attention - input
    }

    /// What SDPA saves when transformers passes it a mask (a checkpointed block's recomputation,
    /// a padded or padding-free batch): the queries and their output, the keys and values
    /// repeated to the query heads when grouped ([`LlamaRun::recomputed_kv`]), the
    /// memory-efficient kernel's float32 logsumexp (`s` rounded up to 32), its bias (the mask
    /// made additive in the query dtype, `b·s·s'` elements with `s'` padded to 16) and two
    /// 8-byte RNG tensors.
    pub(crate) fn masked_sdpa(&self) -> N {
        self.sbq * (2 * self.c)
            + self.recomputed_kv() * 2
            + self.heads * self.s32 * self.b * FP32
            + self.b * self.s * self.s16 * self.c
            + N::from(16u64)
    }

    /// The keys (or values) a recomputed block's attention saves: repeated to the query heads
    /// when grouped (SDPA with a mask, eager always), else as they are.
    pub(crate) fn recomputed_kv(&self) -> N {
        if self.grouped {
            self.sbq * self.c
        } else {
            self.sbkv * self.c
        }
    }

    /// The cache's copies attention does not save, alive until the forward returns: the float32
    /// keys under autocast (attention saves their bf16 casts), and in eager attention with
    /// grouped heads both the keys and the values (it saves `repeat_kv`'s copies instead).
    pub(crate) fn cache_only(&self) -> N {
        if !self.cache {
            return N::ZERO;
        }
        let keys = if self.autocast { FP32 } else { self.c };
        if !self.sdpa && self.grouped {
            self.l * self.sbkv * (keys + self.c)
        } else if self.autocast {
            self.l * self.sbkv * FP32
        } else {
            N::ZERO
        }
    }

    /// Autocast's bf16 copies of every Linear weight and of the head, saved for backward (the
    /// bias copies are not saved); with checkpointed blocks only the head's.
    pub(crate) fn weight_copies(&self, checkpointed: bool) -> N {
        match (self.autocast, checkpointed) {
            (false, _) => N::ZERO,
            (true, true) => self.vh * 2,
            (true, false) => (self.l * self.block_linear + self.vh) * 2,
        }
    }
}
