//! What a mixture-of-experts block saves for backward in place of the Llama family's dense MLP.
//!
//! Source: transformers 5.24.0's `integrations/moe.py` (`grouped_mm_experts_forward`, the
//! experts' default implementation), the routers of `modeling_mixtral.py`,
//! `modeling_qwen2_moe.py` and `modeling_qwen3_moe.py`, read against the replay's storages
//! alive at each peak (`tools/hf_replay/replay_moe.py --explain`).
//!
//! Routing does not change the memory: the `T·k` (token, expert) pairs the router picks (`T`
//! tokens, `k = num_experts_per_tok`) are sorted by expert and gathered into one `(T·k, h)`
//! tensor that `torch._grouped_mm` multiplies by every expert's weights at once, with the
//! per-expert offsets as values. Each expert's share of the rows depends on the routing, the
//! shapes do not: a pair is a row whichever expert it goes to.
//!
//! Dtypes: `torch._grouped_mm` is not on autocast's list and transformers casts its input to
//! the weights' dtype, so the experts run in the weights' dtype (`w`: float32 under bf16
//! autocast too); the router and the shared expert are Linears, in the compute dtype `c`.

use crate::estimate::arch::{Architecture, Mlp};
use crate::estimate::num::N;
use crate::estimate::scenario::Scenario;

/// Bytes of an int64 index element and of a float32 element.
const INT64: u128 = 8;
const FP32: u128 = 4;

/// The sizes of one mixture-of-experts run, in elements unless named bytes.
pub(crate) struct ExpertRun {
    /// Tokens `T = s·b` and (token, expert) pairs `S = T·k`.
    pub(crate) tokens: N,
    pub(crate) pairs: N,
    /// Experts per layer `E`, experts per token `k`, hidden width `h`, one expert's width `I`.
    pub(crate) experts: N,
    pub(crate) top_k: N,
    pub(crate) h: N,
    pub(crate) i: N,
    /// The shared expert's width (Qwen2-MoE), 0 without one.
    pub(crate) shared: N,
    /// Bytes of the experts' compute (the weights' dtype) and of the Linears' (`c`).
    pub(crate) ce: u128,
    pub(crate) c: u128,
    /// Bytes of the routing weights the experts' outputs are scaled by: float32 in Mixtral (its
    /// router's softmax of `logits.float()` is not cast back), `c` in Qwen's routers.
    pub(crate) score: u128,
    /// The router divides its top-k weights by their sum in place (Mixtral always; Qwen3-MoE's
    /// released `norm_topk_prob: true`; Qwen1.5-MoE's `false`).
    pub(crate) normalized: bool,
}

impl ExpertRun {
    /// The sizes of `s` on `a`, if its MLP is a mixture of experts.
    pub(crate) fn of(a: &Architecture, s: &Scenario, w: u128, c: u128) -> Option<ExpertRun> {
        let Mlp::Moe(m) = &a.mlp else {
            return None;
        };
        let tokens = N::from(s.block_size) * N::from(s.batch_size);
        let shared = m.shared.map_or(0, |f| f.intermediate);
        // Mixtral has neither shared experts nor QK-norm; Qwen3-MoE has QK-norm.
        let mixtral = m.shared.is_none() && a.attention.qk_norm.is_none();
        let qwen3 = a.attention.qk_norm.is_some();
        Some(ExpertRun {
            tokens,
            pairs: tokens * N::from(m.experts_per_token),
            experts: N::from(m.experts),
            top_k: N::from(m.experts_per_token),
            h: N::from(a.hidden),
            i: N::from(m.expert.intermediate),
            shared: N::from(shared),
            ce: w,
            c,
            score: if mixtral { FP32 } else { c },
            normalized: mixtral || qwen3,
        })
    }

    /// The Linears reading the post-attention norm's output, each casting it under autocast:
    /// the router, and the shared expert's gate, up and scalar gate.
    pub(crate) fn readers(&self) -> u128 {
        if self.shared == N::ZERO {
            1
        } else {
            4
        }
    }

    /// Weights autocast copies to bf16 per layer (elements): the router's `E·h`, the shared
    /// expert's three Linears and its `h → 1` gate.
    pub(crate) fn copied(&self) -> N {
        self.experts * self.h + self.shared_params()
    }

    /// The shared expert's and its gate's parameters (elements).
    fn shared_params(&self) -> N {
        if self.shared == N::ZERO {
            N::ZERO
        } else {
            self.h * self.shared * 3 + self.h
        }
    }

    /// One layer's MLP parameters (elements): every expert's `gate_up_proj` `(E, 2·I, h)` and
    /// `down_proj` `(E, h, I)`, the router and the shared expert.
    pub(crate) fn params(&self) -> N {
        self.experts * self.h * self.i * 3 + self.copied()
    }

    /// The router's saves: the float32 softmax over the experts (`4·T·E`), `topk`'s int64
    /// indices (`8·T·k`) and, where the top-k weights are normalized in place, the sum (`4·T`)
    /// and the weights before the division (`4·T·k`).
    pub(crate) fn router(&self) -> N {
        let norm = if self.normalized {
            self.tokens * FP32 + self.tokens * self.top_k * FP32
        } else {
            N::ZERO
        };
        self.tokens * self.experts * FP32 + self.tokens * self.top_k * INT64 + norm
    }

    /// The experts' saves in `grouped_mm_experts_forward`, per pair: the gathered input
    /// (`h`), the up projection's output (`2·I`: `silu` keeps the gate half, the product the
    /// up half, one storage), `silu`'s output and the product (`I` each), the down
    /// projection's output (`h`, kept by the product with the routing weights), all in the
    /// experts' dtype; the routing weights gathered by expert (`score` bytes); three int64
    /// indices (the sort's permutation, its division by `k` that gathers the input, and the
    /// inverse permutation that restores the order); and the per-expert offsets (`4·E`).
    fn grouped(&self) -> N {
        let rows = self.h * 2 + self.i * 4;
        self.pairs * (rows * self.ce) + self.pairs * (self.score + INT64 * 3) + self.experts * FP32
    }

    /// The shared expert (Qwen2-MoE): a SwiGLU MLP of its width (`4·c·T·I_s`, as the dense
    /// MLP), its sigmoid gate's output (`c·T`) and its output kept by the gate's product
    /// (`c·T·h`).
    fn shared_expert(&self) -> N {
        if self.shared == N::ZERO {
            return N::ZERO;
        }
        self.tokens * self.shared * (4 * self.c)
            + self.tokens * self.c
            + self.tokens * self.h * self.c
    }

    /// Everything one layer's mixture of experts saves.
    pub(crate) fn saved(&self) -> N {
        self.router() + self.grouped() + self.shared_expert()
    }
}

/// Bytes per prompt token alive at a mixture of experts' prefill moment in `generate`
/// (`torch.no_grad()`, weights and activations in `e` bytes), from the replay's storages at
/// that peak (`replay_generate_moe.py --explain`), the larger of two moments of
/// `grouped_mm_experts_forward`: at the product `silu(gate) · up`, per (token, expert) pair the
/// gathered input (`h`), the up projection's output (`2·I`), `silu`'s output and the product
/// (`I` each); or at the end, the gathered input and the down projection's output (`h` each,
/// `e` bytes) beside the output scaled by the routing weights and its copy back in token order
/// (`h` each, in the product's dtype: float32 for Mixtral's float32 routing weights), the larger
/// where `4·I < 3·h` (Qwen3-30B-A3B's 768-wide experts on a 2048-wide model); per token the
/// router's logits (`E`), `topk`'s float32 weights and int64 indices, the normalized weights'
/// copy, the sort's values and permutation (int64), the gathered float32 routing weights and
/// the expert ids counted by `histc` (`36·k` bytes in all); with a shared expert (Qwen2-MoE),
/// its output (`h`), computed first; or, if larger, the shared expert's own SwiGLU moment
/// (three of its width). Beside them, as in a dense Llama block: the embedding, the residual
/// sum, its RMSNorm and the block input (`4·h`) and RoPE's cos and sin (`2·head_dim`).
pub(crate) fn prefill_bytes_per_token(a: &Architecture, e: u128) -> N {
    let h = N::from(a.hidden);
    let dense = h * 4 + N::from(a.attention.head_dim) * 2;
    let Mlp::Moe(m) = &a.mlp else {
        return dense * e;
    };
    let (k, i) = (N::from(m.experts_per_token), N::from(m.expert.intermediate));
    // The routing product's dtype: float32 for Mixtral's float32 routing weights.
    let product = if m.shared.is_none() && a.attention.qk_norm.is_none() {
        e.max(4)
    } else {
        e
    };
    let up = (h + i * 4) * e;
    let end = h * (2 * e + 2 * product);
    let experts = k * up.max(end) + N::from(m.experts) * e + k * 36;
    let moe = match m.shared {
        Some(f) => (experts + h * e).max(N::from(f.intermediate) * (3 * e)),
        None => experts,
    };
    dense * e + moe
}
