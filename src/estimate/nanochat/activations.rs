//! What nanochat's forward keeps for backward, and the loss's and head's backward buffers, read
//! from `nanochat/gpt.py` at the pinned commit and the replay's `--explain` listing (storages
//! alive at each peak). `c` is `COMPUTE_DTYPE`'s bytes, `u = B·T·hidden·c`.

use super::Run;

/// Bytes every layer and the model around them save for backward (no gradients), in order of
/// `GPT.forward`:
/// - embedding: `wte(idx)` (saved by `norm`) and `norm`'s float32 `rstd` (one per token; CUDA's
///   fused `_fused_rms_norm` saves its input and `rstd`, no float32 copy); the normalized `x`
///   (the smear's `x[:, :-1]`), the smear gate's input `x[:, 1:, :24]` (a copy), its sigmoid
///   and `smear_lambda · sigmoid` (B·(T−1) each), and `x0` (the `cat`);
/// - per layer: the residual mix `resid_lambdas[i]·x + x0_lambdas[i]·x0` (the norm's input),
///   the normalized input of q/k/v (with `rstd`), the rotated q and k (`cat`, QK-norm's input,
///   with per-head `rstd`), q·1.2 and k·1.2 and v (attention's inputs), `−sin` for q and for k
///   (T·D/2 each), the attention output and its float32 log-sum-exp (B·heads·T; the
///   memory-efficient kernel rounds T up to 32), `x + attn`, the MLP norm's output and `rstd`,
///   `relu(x)` and `relu(x)²` (4·hidden wide), and `x + mlp` (saved by the next layer's mix);
/// - a value-embedding layer: `value_embeds[i](idx)`, the gate's sigmoid and `3·sigmoid`
///   (B·T·kv_heads each);
/// - a sliding-window layer under SDPA: the additive mask (`T × T` rounded up to 16 columns, in
///   `c`), which the memory-efficient kernel keeps;
/// - after the layers: `x − backout_lambda·x_backout`, the final norm's output and `rstd`. The
///   last layer's output is saved only when it is the backout layer (`n // 2 = n − 1`).
pub(super) fn saved(r: &Run) -> u128 {
    let (b, t, c) = (r.b, r.t, r.c);
    let bt = b * t;
    let u = bt * r.h * c;
    let uq = bt * r.heads * r.d * c;
    let ukv = bt * r.kv() * c;
    let rstd = bt * 4;
    let smear = b * t.saturating_sub(1) * c * (24 + 2);
    let embedding = u + rstd + u + smear + u;
    let lse = |rows: u128| b * r.heads * rows * 4;
    let per_layer = u
        + u
        + rstd
        + uq
        + ukv
        + bt * (r.heads + r.kv_heads) * 4
        + uq
        + ukv
        + ukv
        + t * r.d * c
        + uq
        + u
        + u
        + rstd
        + 2 * bt * 4 * r.h * c;
    let outputs = r.n.saturating_sub(1) + u128::from(r.n / 2 == r.n.saturating_sub(1));
    let ve = r.ve_layers() * (ukv + 2 * bt * r.kv_heads * c);
    let flash = r.n - r.masked_layers;
    let attention =
        flash * lse(t) + r.masked_layers * (lse(t.div_ceil(32) * 32) + t * t.div_ceil(16) * 16 * c);
    let tail = u + rstd + u;
    embedding + r.n * per_layer + outputs * u + ve + attention + tail
}

/// The `COMPUTE_DTYPE` copies of the float32 weights that each `Linear` makes in its forward
/// (`self.weight.to(dtype=x.dtype)`) and saves for backward: every block matrix, the value
/// gates, the smear gate and the head. None in float32 (`.to` returns the weight itself).
pub(super) fn weight_casts(r: &Run) -> u128 {
    if r.c == 4 {
        return 0;
    }
    (r.matrix_elements() + r.vp * r.h + 24) * r.c
}

/// The loss's backward at its largest: the softcapped logits (`tanh`'s output) and the
/// log-softmax, both saved, beside `nll_loss`'s and `log_softmax`'s gradients, all float32 of
/// B·T·V (`logits.float()` before the softcap).
pub(super) fn loss_backward(r: &Run) -> u128 {
    4 * r.b * r.t * r.v * 4
}

/// The head's backward: its input's gradient (u) and its weight's gradient in `COMPUTE_DTYPE`
/// (the matmul's) beside the float32 one the weight cast's backward makes (the head's
/// `.grad`), with the final norm's output and the head's weight copy released. Returns the
/// activation and the gradient bytes.
pub(super) fn head_backward(r: &Run) -> (u128, u128) {
    let u = r.b * r.t * r.h * r.c;
    let head = r.vp * r.h;
    let low = if r.c == 4 { 0 } else { head * r.c };
    (u + low, head * 4)
}

/// The bytes `head_backward` releases: the final norm's output (from the activations) and the
/// head's weight copy (from the casts).
pub(super) fn head_released(r: &Run) -> u128 {
    r.b * r.t * r.h * r.c
}
