//! The shapes of one Hugging Face GPT-2 run and what its forward saves for backward, piece by
//! piece (the module doc of `hf_gpt2` lists the pieces and their source).

use crate::estimate::arch::{Architecture, Mlp};
use crate::estimate::num::N;
use crate::estimate::scenario::{Dtype, Scenario};

/// Bytes of a float32 element.
pub(super) const FP32: u128 = 4;

/// The sizes of one run, in elements unless named bytes.
pub(super) struct Gpt2Run {
    /// `s·b·h`.
    pub(super) sbh: N,
    /// `s·b`.
    pub(super) sb: N,
    /// `s·b·V`.
    pub(super) sbv: N,
    /// `s·b·I` (I the MLP's intermediate width, 4h).
    pub(super) sbi: N,
    /// `s·b·(q + k + v widths)`.
    pub(super) sb_qkv: N,
    /// `s·b·(k width)`: one of the KV cache's copies.
    pub(super) sb_kv: N,
    /// `a·s²·b`: one layer's attention scores.
    pub(super) scores: N,
    /// `b·s²`: the eager attention mask a checkpointed block receives (float32).
    pub(super) mask_2d: N,
    /// FlashAttention's (16-bit) or the memory-efficient kernel's (float32, `s` rounded up to
    /// 32) logsumexp, elements per layer.
    pub(super) lse: N,
    /// `V·h`: the tied head's weight.
    pub(super) vh: N,
    /// `h²`, `I·h`: the block's weight shapes.
    pub(super) hh: N,
    pub(super) ih: N,
    /// `h`, `I`: bias and norm widths.
    pub(super) h: N,
    pub(super) i: N,
    /// Compute bytes `c`.
    pub(super) c: u128,
    /// float16 autocast (its softmax's gradient is 16-bit).
    pub(super) fp16: bool,
    /// Dropout on.
    pub(super) dropout: bool,
    /// SDPA (else eager attention).
    pub(super) sdpa: bool,
    /// Layers.
    pub(super) l: N,
}

impl Gpt2Run {
    /// The sizes of `s` on `a`.
    pub(super) fn of(a: &Architecture, s: &Scenario) -> Gpt2Run {
        let (seq, b, h) = (
            N::from(s.block_size),
            N::from(s.batch_size),
            N::from(a.hidden),
        );
        let inter = match &a.mlp {
            Mlp::Dense(f) => N::from(f.intermediate),
            Mlp::Moe(m) => N::from(m.expert.intermediate),
        };
        let at = &a.attention;
        let c: u128 = if s.dtype == Dtype::Float32 { 4 } else { 2 };
        let lse_len = if c == FP32 {
            N::from(s.block_size.div_ceil(32).saturating_mul(32))
        } else {
            seq
        };
        Gpt2Run {
            sbh: seq * b * h,
            sb: seq * b,
            sbv: seq * b * N::from(a.vocab_size),
            sbi: seq * b * inter,
            sb_qkv: seq * b * N::from(at.qkv_width()),
            sb_kv: seq * b * N::from(at.kv_width()),
            scores: N::from(at.heads) * seq * seq * b,
            mask_2d: b * seq * seq,
            lse: N::from(at.heads) * lse_len * b,
            vh: N::from(a.vocab_size) * h,
            hh: h * h,
            ih: inter * h,
            h,
            i: inter,
            c,
            fp16: s.dtype == Dtype::Float16,
            dropout: s.dropout > 0.0,
            sdpa: s.flash,
            l: N::from(a.layers),
        }
    }

    /// Whether autocast runs (16-bit compute on float32 weights).
    pub(super) fn autocast(&self) -> bool {
        self.c != FP32
    }

    /// One LayerNorm: its fp32 input, its output as the next Linear's input (`c`), mean and
    /// rstd.
    pub(super) fn norm_site(&self) -> N {
        self.sbh * (FP32 + self.c) + self.sb * 8
    }

    /// One dropout site's 1-byte mask (none without dropout).
    pub(super) fn dropout_mask(&self) -> N {
        if self.dropout {
            self.sbh
        } else {
            N::ZERO
        }
    }

    /// `gelu_new`'s five saved `I`-wide tensors: `pow`'s input, the `tanh` output, `1 + tanh`,
    /// `0.5·x` and mlp.c_proj's input. `pow` is on CUDA autocast's float32 list, so under autocast
    /// its input is a float32 copy of c_fc's output and everything after it is float32 but
    /// `0.5·x` and the 16-bit copy mlp.c_proj reads: `(12 + 2c)·sbI` (`20·sbI` in float32).
    pub(super) fn gelu(&self) -> N {
        self.sbi * (3 * FP32 + 2 * self.c)
    }

    /// What `gelu_new`'s backward holds in flight (per `sbI` element): the float32 gradients of
    /// the product, of its two factors, and under autocast the 16-bit gradient of `0.5·x`
    /// (`12 + c`; float32: the three, 12).
    pub(super) fn gelu_backward_in_flight(&self) -> N {
        let cast = if self.autocast() { self.c } else { 0 };
        self.sbi * (3 * FP32 + cast)
    }

    /// Bytes per score eager attention saves: the fp32 softmax, and its dropout output and mask
    /// (without dropout: the 16-bit cast `att @ v` reads; in float32 the softmax itself).
    pub(super) fn per_score_saved(&self) -> u128 {
        FP32 + self.per_score_freed_early()
    }

    /// Of those, what the last layer's attention backward has released before the softmax's
    /// backward runs: everything but the softmax.
    pub(super) fn per_score_freed_early(&self) -> u128 {
        match (self.dropout, self.c) {
            (true, c) => c + 1,
            (false, FP32) => 0,
            (false, c) => c,
        }
    }

    /// Bytes per score alive in flight at the softmax's backward: the fp32 gradient of its
    /// output and the result (fp32; float16 autocast's half-to-float softmax returns a 16-bit
    /// gradient).
    pub(super) fn per_score_grad(&self) -> u128 {
        if self.fp16 {
            FP32 + 2
        } else {
            FP32 + FP32
        }
    }

    /// One layer's attention saves: SDPA's q/k/v projection output, the KV cache's key and value
    /// copies, the kernel's output and logsumexp; eager's key and value copies, the query and
    /// output copies and the scores.
    pub(super) fn attention(&self) -> N {
        let kv = self.sb_kv * (2 * self.c);
        if self.sdpa {
            self.sb_qkv * self.c + kv + self.sbh * self.c + self.lse * FP32
        } else {
            kv + self.sbh * (2 * self.c) + self.scores * self.per_score_saved()
        }
    }

    /// Everything the forward saves (not checkpointed): `2L + 1` norms and dropout sites, and
    /// per layer the attention and `gelu_new`.
    pub(super) fn saved(&self) -> N {
        let sites = self.l * 2 + N::from(1u64);
        sites * (self.norm_site() + self.dropout_mask()) + self.l * (self.gelu() + self.attention())
    }

    /// What a checkpointed forward saves (`gradient_checkpointing_enable`, non-reentrant;
    /// `use_cache` off): each block's fp32 input and the last block's output (`(L + 1)·4·sbh`),
    /// ln_f's output as the head's input with its statistics, the embedding dropout's mask, and
    /// the float32 `(b, 1, s, s)` attention mask every checkpointed block receives.
    pub(super) fn checkpointed(&self) -> N {
        (self.l + N::from(1u64)) * self.sbh * FP32
            + self.sbh * self.c
            + self.sb * 8
            + self.dropout_mask()
            + self.mask_2d * FP32
    }

    /// Autocast's 16-bit copies of one block's Conv1D weights (c_attn `3h²`, c_proj `h²`, c_fc
    /// and mlp.c_proj `I·h` each), saved for backward.
    pub(super) fn block_copies(&self) -> N {
        if self.autocast() {
            (self.hh * 4 + self.ih * 2) * 2
        } else {
            N::ZERO
        }
    }

    /// Autocast's copy of the tied head (`2·V·h`).
    pub(super) fn head_copy(&self) -> N {
        if self.autocast() {
            self.vh * 2
        } else {
            N::ZERO
        }
    }
}
