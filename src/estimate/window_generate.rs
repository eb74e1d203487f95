//! Hugging Face `generate` on a Llama-family model whose every layer slides over a window of `W`
//! tokens (Mistral v0.1, Phi-3), with a `DynamicCache` (`DynamicSlidingWindowLayer`) or a
//! `StaticCache` (`StaticSlidingWindowLayer`): what the window adds to `hf_generate`'s moments. Source: `tools/hf_replay/replay_generate.py`'s
//! sliding-window runs (`--explain`), read against transformers 5.24's `cache_utils.py`,
//! `masking_utils.py` and `integrations/sdpa_attention.py`.
//!
//! - **Prefill of a prompt of `W` tokens or more.** `_ignore_causal_mask_sdpa` no longer skips
//!   the mask (`kv_length >= local_attention_size`): `sdpa_mask` builds one boolean `[P, P]` mask
//!   (expanded to the batch as a view), alive through the whole forward, beside the MLP moment
//!   too. With a mask SDPA runs the memory-efficient kernel: ATen turns the mask into an additive
//!   bias of the query's dtype (`logical_not`, then `where`, each materializing the batch:
//!   `B·P²` bytes and `B·P²·e`), padded to a multiple of 16 keys when `P` is not one (a
//!   `B·P·⌈P/16⌉·16·e` copy beside the unpadded bias, the `logical_not` by then freed), or later
//!   the (padded) bias beside the kernel's output (`B·P·heads·head_dim·e`), the larger of the two
//!   for prompts shorter than `heads·head_dim·e`; and transformers passes grouped heads only
//!   without a mask, so `repeat_kv` copies the keys and values to every query head
//!   (`2·B·heads·P·head_dim·e`).
//!   Beside them at the last layer's attention: the whole prompt's cache, the rotated queries
//!   (`B·P·heads·head_dim·e`), the embedding, the residual and its RMSNorm (`3·B·P·h·e`), RoPE's
//!   cos and sin (`2·B·P·head_dim·e`).
//! - **Decoding.** A sliding layer concatenates its kept keys (`min(T, W−1)` tokens, a view of
//!   the previous concatenation's storage) and the new one, then keeps a view of the last `W−1`:
//!   each step's storage is `min(t, W)` tokens, and the old keys and values stay alive until both
//!   concatenations are done. At the first step the old storage is the prefill's whole prompt:
//!   the first layer holds its new keys and values (`min(P+1, W)` tokens) while every layer still
//!   holds the prompt. Decoding steps past the window get a `[B, 1, 1, W]` mask, and with one
//!   query transformers packs the query per key/value head (`pack_gqa`): nothing repeated.
//! - **Static cache** (`W` slots once `P + N − 1 ≥ W`): the slots' size is the window, so the
//!   prefill is masked whenever the context reaches it, the mask built with the unfilled slots'
//!   padding (`[B, 1, P, W]`, or `[B, 1, P, P]` for a prompt of `W` tokens or more, whose own
//!   keys and values the layer returns beside the slots). Once the slots are full a decoding
//!   step rolls each layer's keys and values (`roll(-1)`: two `W`-token copies) before copying
//!   them back.

use super::arch::Architecture;
use super::num::N;

/// What the window adds to the prefill: the mask alive beside the MLP moment, and the masked
/// attention moment's own bytes (beside the cache, the ids and the weights), when `P ≥ W`.
pub(crate) struct MaskedPrefill {
    /// The boolean mask: `P²` bytes.
    pub(crate) mask: N,
    /// The last layer's masked attention, the mask included.
    pub(crate) attention: N,
}

/// The masked prefill of `sequences` prompts of `prompt` tokens on `a` (window `window`), `e`
/// bytes per element, with a dynamic cache; `None` when the prompt is shorter than the window
/// (no mask is built). The mask is expanded to the batch (a view): `P²` bytes.
pub(crate) fn masked_prefill(
    a: &Architecture,
    window: u64,
    sequences: N,
    prompt: u64,
    e: u128,
) -> Option<MaskedPrefill> {
    if prompt < window {
        return None;
    }
    let p = N::from(prompt);
    Some(attention(a, sequences, prompt, prompt, p * p, N::ZERO, e))
}

/// The masked prefill with a static cache whose slots reach the window (`prompt + new − 1 ≥ W`):
/// its keys span the `W` slots (or, for a prompt of `W` tokens or more, the prompt itself, whose
/// keys and values the layer returns beside the slots), and its mask, built with the padding of
/// the unfilled slots, has the batch.
pub(crate) fn static_masked_prefill(
    a: &Architecture,
    window: u64,
    sequences: N,
    prompt: u64,
    new_tokens: u64,
    e: u128,
) -> Option<MaskedPrefill> {
    if u128::from(prompt) + u128::from(new_tokens) < u128::from(window) + 1 {
        return None;
    }
    let p = N::from(prompt);
    let (keys, returned) = if prompt >= window {
        let kv = sequences * p * N::from(a.attention.kv_width()) * e;
        (prompt, kv * 2)
    } else {
        (window, N::ZERO)
    };
    let mask = sequences * p * N::from(keys);
    Some(attention(a, sequences, prompt, keys, mask, returned, e))
}

/// The last layer's masked attention over `keys` keys for `prompt` queries: `mask` the boolean
/// mask's bytes, `returned` the keys and values the layer returns beside the cache.
fn attention(
    a: &Architecture,
    sequences: N,
    prompt: u64,
    keys: u64,
    mask: N,
    returned: N,
    e: u128,
) -> MaskedPrefill {
    let (p, k) = (N::from(prompt), N::from(keys));
    let at = &a.attention;
    // What is made from the mask has the batch.
    let batch_mask = sequences * p * k;
    let bias = batch_mask * e;
    let padded = sequences * p * N::from(keys.div_ceil(16) * 16) * e;
    let per_token = |width: u64| sequences * p * N::from(width) * e;
    let (conversion, kernel) = if keys % 16 == 0 {
        // The `logical_not` and the bias; then the bias and the kernel's output.
        (batch_mask + bias, bias + per_token(at.q_width()))
    } else {
        // The bias and its padded copy; then the padded bias and the kernel's output.
        (bias + padded, padded + per_token(at.q_width()))
    };
    let repeated = if at.kv_heads < at.heads {
        sequences * k * N::from(at.q_width()) * e * 2
    } else {
        N::ZERO
    };
    let activations =
        per_token(at.q_width()) + per_token(a.hidden) * 3 + per_token(at.head_dim) * 2;
    MaskedPrefill {
        mask,
        attention: mask + conversion.max(kernel) + repeated + returned + activations,
    }
}

/// A static cache's decoding step once its `W` slots are full: each layer rolls its keys and
/// values (`roll(-1)`, two `W`-token copies) before copying them back; `kv_token` bytes per token
/// of one layer's keys. Zero while the slots are not full at the last step.
pub(crate) fn static_roll(window: u64, kv_token: N, prompt: u64, new_tokens: u64) -> N {
    // Tokens in the slots before the last step: prompt + new − 2.
    if u128::from(prompt) + u128::from(new_tokens) < u128::from(window) + 2 {
        return N::ZERO;
    }
    kv_token * N::from(window) * 2
}

/// The decoding steps' cache moment beside `rest` (the ids and a step's own activations):
/// `kv_token` bytes per token of one layer's keys, `T` the tokens at the end, the cache after the
/// prefill and at the end.
pub(crate) fn decode_cache(
    window: u64,
    kv_token: N,
    prompt: u64,
    new_tokens: u64,
    after_prefill: u64,
    at_end: u64,
) -> N {
    let (p, w) = (N::from(prompt), N::from(window));
    let t = p + N::from(new_tokens) - N::from(1u64);
    // The last step's old storage: the previous step's concatenation, or the prompt's.
    let old = if new_tokens == 2 {
        p
    } else {
        (t - N::from(1u64)).min(w)
    };
    let last = N::from(at_end) + kv_token * old * 2;
    let first = N::from(after_prefill) + kv_token * (p + N::from(1u64)).min(w) * 2;
    last.max(first)
}
