//! Hugging Face `generate` on Gemma 2 and Gemma 3 text models: what lies beside the weights at
//! the prefill's and the decoding's peaks, with the sliding-window cache transformers 5.24 builds
//! for them (`kv_cache.rs` gives its bytes), and what is refused.
//!
//! Source: the fake-tensor replay of transformers' own `generate`
//! (`tools/hf_replay/replay_generate_gemma.py`, on `replay_generate.py`'s machinery; data in
//! `tests/data/hf_generate_gemma_replay.json`, `--explain` lists the storages alive at each
//! peak), read against `modeling_gemma2.py`, `modeling_gemma3.py` and `cache_utils.py`. Gemma 2
//! runs eager attention (transformers has no SDPA for its softcapping), Gemma 3 SDPA.
//! Notation as in `hf_generate.rs`: `B` sequences, `P` prompt tokens, `N` new tokens,
//! `T = P + N − 1`, `e` bytes of the weights' dtype; `W` the sliding window.
//!
//! - **Prefill**, the largest of: the last block's MLP (as Llama's: three intermediate-wide
//!   tensors and four hidden-wide ones per token, the rotary tables, one `cos`/`sin` pair per
//!   span), beside the masks (eager: one additive `B·P·K` mask per span in `e` bytes, `B` the
//!   expanded rows (`num_return_sequences` or beams repeat the attention mask), `K` the
//!   keys: `P`, or the static cache's `T`; SDPA: only the sliding layers' boolean `P·K` mask, from
//!   the window on, or a static cache's) and in eager attention the layer's probabilities
//!   (`B·heads·P·K·e`, kept by the decoder layer's `_` until it returns); eager attention's
//!   softmax (per score the masked scores in `e` bytes, their float32 copy and the float32
//!   softmax, with the queries, `repeat_kv`'s keys and values and three hidden-wide tensors); or
//!   the first token's logits.
//! - **Decoding**: the last step's logits (as Llama's), or a layer's cache update at the first or
//!   the last step: the layers before it hold their new storage, the ones after their old (right
//!   after the prefill a sliding layer still holds the whole prompt, a view of its prefill
//!   concatenation; from the first step on, `min(P + j, W)` tokens), the layer's old values
//!   during `torch.cat` or, in eager attention with grouped heads, `repeat_kv`'s copies of its
//!   keys and values; with a static cache in eager attention, the copies of the whole cache.
//! - **Beam search** (`beam_generate.rs` says what it holds; with a static cache the copy of a
//!   global layer's slots beside the whole cache): the same moments
//!   with its ids and scores, a sliding layer's previous tensor the `min(P + j − 1, W − 1)`
//!   tokens `reorder_cache` copied out of its view, and the first reorder, right after the
//!   prefill: every layer's prompt storage beside one layer's copy.

use crate::estimate::arch::{Architecture, Family, Mlp, Span};
use crate::estimate::beam_generate::Search;
use crate::estimate::hf_generate::{Fixed, GenerateMoments, Generation};
use crate::estimate::kv_cache::{CacheBytes, CacheKind};
use crate::estimate::num::N;
use crate::estimate::scenario::Scenario;

/// Bytes of an int64 id, of a float32 element.
const ID: u128 = 8;
const FP32: u128 = 4;

/// The buffers beside the weights: each rotary table's `inv_freq` and `original_inv_freq`
/// (float32, `head_dim / 2` each; Gemma 3 one table per span its layers use) and the
/// embedding's `embed_scale` scalar in the weights' dtype (`e` bytes).
pub(crate) fn buffers(a: &Architecture, e: u64) -> N {
    N::from(rope_tables(a)) * N::from(a.attention.head_dim) * FP32 + N::from(e)
}

/// Rotary tables: one per span for Gemma 3, one for Gemma 2.
fn rope_tables(a: &Architecture) -> u64 {
    if a.family == Family::Gemma3 {
        spans(a)
            .iter()
            .fold([false; 2], |mut seen, s| {
                seen[usize::from(*s == Span::Global)] = true;
                seen
            })
            .iter()
            .map(|&b| u64::from(b))
            .sum()
    } else {
        1
    }
}

/// Each layer's span, in order.
fn spans(a: &Architecture) -> Vec<Span> {
    (0..a.layers)
        .map(|i| match &a.attention.sliding_window {
            Some(sw) if !sw.pattern.is_empty() => {
                let at = usize::try_from(i).unwrap_or(0) % sw.pattern.len();
                sw.pattern.get(at).copied().unwrap_or(Span::Global)
            }
            _ => Span::Global,
        })
        .collect()
}

/// What `generate` on Gemma does not cover, each with its key.
pub(crate) fn refusals(a: &Architecture, s: &Scenario) -> Vec<(&'static str, String)> {
    let mut wrong = Vec::new();
    let gemma2 = a.family == Family::Gemma2;
    if gemma2 && s.flash {
        wrong.push((
            "flash",
            "transformers 5.24 has no SDPA for Gemma 2's softcapping: generate runs eager \
             attention (flash: false)"
                .into(),
        ));
    }
    if !gemma2 && !s.flash {
        wrong.push((
            "flash",
            "Gemma 3's generate is replayed with SDPA, not eager".into(),
        ));
    }
    wrong
}

/// What lies beside the weights at the prefill's and the decoding's peaks (module doc), and what
/// stays beside the prefill's forward and a decoding step's (for `bnb_generate`'s Linears).
pub(crate) fn moments(
    a: &Architecture,
    g: &Generation,
    e: u64,
    cache: &CacheBytes,
) -> (GenerateMoments, Fixed) {
    let e = u128::from(e);
    let at = &a.attention;
    let eager = a.family == Family::Gemma2;
    let grouped = at.kv_heads != at.heads;
    let is_static = g.cache == CacheKind::Static;
    let (b, seqs) = (N::from(g.batch_size), g.sequences());
    let (p, h, v, q, kvw) = (
        N::from(g.prompt_tokens),
        N::from(a.hidden),
        N::from(a.vocab_size),
        N::from(at.q_width()),
        N::from(at.kv_width()),
    );
    let intermediate = match &a.mlp {
        Mlp::Dense(f) => N::from(f.intermediate),
        Mlp::Moe(m) => N::from(m.expert.intermediate),
    };
    let t = p + N::from(g.max_new_tokens) - N::from(1u64);
    let keys = if is_static { t } else { p };
    let layer_spans = spans(a);
    let span_kinds = u64::from(layer_spans.contains(&Span::Local))
        + u64::from(layer_spans.contains(&Span::Global));
    let window = at.sliding_window.as_ref().map_or(u64::MAX, |sw| sw.window);
    let search = Search::of(g);
    let repeated = search.expanded;
    let caller = b * p * (2 * ID);
    let own_prefill = seqs * p * (if repeated { 3 } else { 2 } * ID);
    let own_kept = seqs * p * (if repeated { 2 } else { 1 } * ID);
    let rope = seqs * p * N::from(at.head_dim) * (2 * e) * N::from(rope_tables(a));
    let masks = if eager {
        seqs * p * keys * e * N::from(span_kinds)
    } else if is_static || g.prompt_tokens >= window {
        p * keys
    } else {
        N::ZERO
    };
    let scores = seqs * N::from(at.heads) * p * keys;
    let probabilities = if eager { scores * e } else { N::ZERO };
    let mlp =
        own_prefill + seqs * p * (intermediate * 3 + h * 4) * e + rope + masks + probabilities;
    let attention = if eager {
        let upcast = if e == FP32 { 0 } else { FP32 };
        let kv_copies = if grouped { 3u128 } else { 1 };
        own_prefill
            + scores * (e + upcast + FP32)
            + seqs * p * q * (kv_copies * e)
            + seqs * p * h * (3 * e)
            + rope
            + masks
    } else {
        N::ZERO
    };
    let first_logits =
        own_kept + seqs * v * (e + FP32 * search.prefill_vocab) + seqs * (p + N::from(1u64)) * ID;
    let prefill = N::from(cache.after_prefill)
        + caller
        + search.prefill_state
        + mlp.max(attention).max(first_logits);

    // Decoding. The last step's logits, as for Llama (greedy; sampling keeps two more float32
    // vocabulary-wide tensors and top-k's mask).
    let kept_vocab = search.kept_vocab;
    let at_end = N::from(cache.at_end);
    let ids =
        |len: N| seqs * len * (search.grown_rows * ID) + caller + own_kept + search.decode_state;
    let beams = g.num_beams > 1;
    let mask = if g.do_sample { seqs * v } else { N::ZERO };
    let logits_stage = seqs * v * e + seqs * v * ((kept_vocab + 1) * FP32) + mask + seqs * ID;
    let step = seqs * h * (7 * e) + seqs * v * (kept_vocab * FP32);
    let mut decode = at_end + ids(t) + logits_stage;
    if is_static {
        if eager && grouped {
            decode = decode.max(at_end + ids(t) + seqs * t * q * (2 * e) + step);
        }
        if beams {
            // `reorder_cache` copies one layer's whole slots: a global layer's, the largest.
            let slots = if layer_spans.contains(&Span::Global) {
                t
            } else {
                t.min(N::from(window))
            };
            let scores = seqs * v * (kept_vocab * FP32);
            decode = decode.max(at_end + seqs * slots * kvw * e + ids(t + N::from(1u64)) + scores);
        }
    } else {
        let half = |tokens: u64| seqs * N::from(tokens) * kvw * e;
        let (prompt, new) = (g.prompt_tokens, g.max_new_tokens);
        let new_len = |span: Span, j: u64| {
            let len = prompt.saturating_add(j);
            if span == Span::Local {
                len.min(window)
            } else {
                len
            }
        };
        let old_len = |span: Span, j: u64| match span {
            // Beams: the kept view, copied into a tensor of its own by `reorder_cache`.
            Span::Local if beams => prompt.saturating_add(j - 1).min(window.saturating_sub(1)),
            Span::Local if j == 1 => prompt,
            Span::Local => prompt.saturating_add(j - 1).min(window),
            Span::Global => prompt.saturating_add(j - 1),
        };
        for j in [1, new.saturating_sub(1)] {
            if j == 0 {
                continue;
            }
            for (li, span) in layer_spans.iter().enumerate() {
                let before: N = layer_spans[..li]
                    .iter()
                    .map(|s| half(new_len(*s, j)) * 2)
                    .sum();
                let after: N = layer_spans[li + 1..]
                    .iter()
                    .map(|s| half(old_len(*s, j)) * 2)
                    .sum();
                let own = half(new_len(*span, j)) * 2;
                let mut extra = half(old_len(*span, j));
                if eager && grouped {
                    extra = extra.max(seqs * N::from(new_len(*span, j)) * q * (2 * e));
                }
                let len = N::from(prompt.saturating_add(j));
                decode = decode.max(before + after + own + extra + ids(len) + step);
            }
        }
        if beams {
            // The first reorder: the layers before hold their copies, the others the prompt.
            let kept = |span: Span| match span {
                Span::Local => half(prompt.min(window.saturating_sub(1))),
                Span::Global => half(prompt),
            };
            let scores = ids(p + N::from(1u64)) + seqs * v * (kept_vocab * FP32);
            for li in 0..layer_spans.len() {
                let before: N = layer_spans[..li].iter().map(|s| kept(*s) * 2).sum();
                let rest = half(prompt) * (2 * (layer_spans.len() - li) as u128);
                decode = decode.max(before + rest + kept(layer_spans[li]) + scores);
            }
        }
    }
    let fixed = (
        N::from(cache.after_prefill) + caller + own_prefill + rope + masks + probabilities,
        at_end + ids(t) + seqs * v * (kept_vocab * FP32),
    );
    (GenerateMoments { prefill, decode }, fixed)
}
