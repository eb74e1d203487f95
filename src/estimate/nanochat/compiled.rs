//! nanochat's compiled step: `torch.compile(model, dynamic=False)`, as `scripts/base_train.py`
//! and `scripts/chat_sft.py` run it. What the compiled forward keeps for backward is inductor's
//! own partition (`torch._inductor.compile_fx.partition_fn`: its joint-graph passes, then
//! `min_cut_rematerialization_partition`); the buffers around it are those inductor's wrapper
//! allocates. Both were read from `tools/nanochat_replay/replay_nanochat_compiled.py` (inductor
//! run on fake tensors, its kernels no-ops) and are held to `tests/data/nanochat_compiled_replay.json`.
//!
//! One term is not settled without a GPU: inductor's C++ backend writes the softcapped float32
//! logits (B·T·V·4 bytes) to a buffer of their own in the loss's forward kernel, and CUDA's Triton
//! kernels may not (they can reduce the logits in one pass). The estimate keeps that buffer (the
//! high end, which the verdict uses) and gives the peak without it (`compiled_low_peak`). The one
//! measured compiled run in `tests/data/hf_validation.yaml` (Triton on an RTX 4070) is 9 % below
//! even that low end: CUDA's plan is leaner than the C++ one in a way this replay cannot show.

use super::activations::weight_casts;
use super::Run;

/// Bytes inductor's partition saves for backward (no parameters, buffers or tokens, which live
/// anyway), in order of `GPT.forward`, where `u = B·T·hidden·c`:
/// - embedding: `wte(idx)` and the norm's float32 `rstd` (one per token), the smear gate's input
///   `x[:, 1:, :24]` (a copy) and its pre-sigmoid output (B·(T−1) each), and `x0`;
/// - per layer: the attention norm's output and `rstd` (its input, the residual mix, is
///   recomputed from `x` and `x0`), the rotated q and k (QK-norm's input, with per-head `rstd`),
///   attention's inputs q, k, v and its output with the float32 log-sum-exp, `x + attn`, the
///   MLP norm's output and `rstd`, `c_fc`'s output and `relu(·)²` (4·hidden wide);
/// - every layer's output but the last (the next layer's input);
/// - a value-embedding layer: `value_embeds[i](idx)` and the gate's pre-sigmoid output;
/// - a sliding-window layer: what the memory-efficient kernel keeps beside its output (a
///   log-sum-exp rounded up to 32 rows and its random-number seed and offset), else
///   FlashAttention-2's log-sum-exp and its random-number state; the sliding-window mask (`T × T`
///   rounded up to 16 columns, in `c`) once, however many layers use it (the compiled graph
///   builds it once, where the eager step builds one per layer);
/// - after the layers: the final norm's input (`x − backout_lambda·x_backout`), output and
///   `rstd`; the head's output in `COMPUTE_DTYPE` (B·T × padded vocabulary: the softcap and the
///   loss are recomputed from it) and two float32 numbers per token (the log-softmax's maximum
///   and log-sum);
/// - the `COMPUTE_DTYPE` copies of the float32 weights, as in the eager step ([`weight_casts`]).
pub(super) fn saved(r: &Run) -> u128 {
    let (b, t, c) = (r.b, r.t, r.c);
    let bt = b * t;
    let u = bt * r.h * c;
    let uq = bt * r.heads * r.d * c;
    let ukv = bt * r.kv() * c;
    let rstd = bt * 4;
    let smear = b * t.saturating_sub(1) * c * (24 + 1);
    let embedding = u + rstd + smear + u;
    let per_layer = rstd
        + u
        + uq
        + ukv
        + bt * (r.heads + r.kv_heads) * 4
        + uq
        + ukv
        + ukv
        + uq
        + u
        + rstd
        + u
        + 2 * bt * 4 * r.h * c;
    let outputs = r.n.saturating_sub(1) * u;
    let ve = r.ve_layers() * (ukv + bt * r.kv_heads * c);
    let lse = |rows: u128| b * r.heads * rows * 4;
    let flash = r.n - r.masked_layers;
    let mask = if r.masked_layers > 0 {
        t * t.div_ceil(16) * 16 * c
    } else {
        0
    };
    let attention = flash * (lse(t) + FLASH_RNG_BYTES)
        + r.masked_layers * (lse(t.div_ceil(32) * 32) + EFFICIENT_RNG_BYTES)
        + mask;
    let tail = u + rstd + u + head_output(r) + 2 * bt * 4;
    embedding + r.n * per_layer + outputs + ve + attention + tail + weight_casts(r)
}

/// FlashAttention-2's random-number state, returned and saved even without dropout: a seed of
/// two and an offset of one `uint64`.
const FLASH_RNG_BYTES: u128 = 24;

/// The memory-efficient kernel's random-number seed and offset: two `int64` scalars.
const EFFICIENT_RNG_BYTES: u128 = 16;

/// The head's output, `lm_head(x)`: B·T × the padded vocabulary in `COMPUTE_DTYPE`.
fn head_output(r: &Run) -> u128 {
    r.b * r.t * r.vp * r.c
}

/// The loss's forward kernel under inductor's C++ backend: a float32 buffer of the softcapped
/// logits (B·T × vocabulary), written and freed within the step. The high end keeps it.
pub(super) fn cpp_loss_buffer(r: &Run) -> u128 {
    r.b * r.t * r.v * 4
}

/// The loss's backward kernel: the gradient of the head's output (B·T × padded vocabulary in
/// `COMPUTE_DTYPE`, one fused kernel from the saved output and the two per-token numbers) and
/// one float32 number per token.
pub(super) fn loss_backward(r: &Run) -> u128 {
    head_output(r) + r.b * r.t * 4
}

/// The bytes of [`saved`] that are the head's output (shown as logits).
pub(super) fn saved_logits(r: &Run) -> u128 {
    head_output(r)
}
