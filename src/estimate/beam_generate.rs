//! Beam search in Hugging Face `generate` (`num_beams > 1`, greedy beams): what transformers
//! 5.24's `GenerationMixin._beam_search` (`generation/utils.py`) holds beyond greedy decoding,
//! for `hf_generate.rs`'s moments (issue 22, item 2).
//!
//! Source: the fake-tensor replay of transformers' own `generate` with `num_beams`
//! (`tools/hf_replay/replay_generate_beams.py`, data in
//! `tests/data/hf_generate_beams_replay.json`, its `--explain` listing the storages alive at each
//! peak); `tests/it/hf_generate_beams.rs` holds every run (the KV cache to the byte, both peaks
//! within 1 %). Notation: `b` prompts, `k` beams, `S = b·k` sequences, `P` prompt tokens, `N`
//! new tokens, `L = P + N` (`max_length`), `V` vocabulary.
//!
//! - **The expanded prompt**: `_expand_inputs_for_generation` repeats the prompt and its mask
//!   `max(num_beams, num_return_sequences)` times before the prefill, so the prefill, its logits
//!   and the cache hold `S` rows (`Generation::sequences`), and two expanded copies of the ids
//!   stay to the end, as with `num_return_sequences > 1`.
//! - **The beams' own tensors**, allocated before the prefill ("3. init running tensors"):
//!   `running_sequences` and its clone `sequences`, int64 `(b, k, L)`, and
//!   `running_beam_indices` and its clone `beam_indices`, int32 `(b, k, N)`: `2·S·L·8 +
//!   2·S·N·4`. From the first step on, `_get_top_k_continuations` keeps `max(2, 1 + eos
//!   tokens)·k = 2k` candidates (no end-of-sequence token: the loop runs to `max_new_tokens`) and
//!   gathers their sequences (`topk_running_sequences`, int64 `(b, 2k, L)`) and beam indices
//!   (int32 `(b, 2k, N)`), which stay alive into the next step's forward: `4·S·L·8 + 4·S·N·4`
//!   during decoding. `flat_running_sequences` is a view (the beam dimensions merge), and the
//!   ids never grow by `torch.cat` as greedy decoding's do: only the attention mask does.
//! - **The scores over the vocabulary**: each step copies the last logits to float32
//!   (`.to(copy=True, dtype=torch.float32)`) and takes their `log_softmax`; both stay alive into
//!   the next step's forward (greedy decoding keeps one float32 tensor, sampling three). The
//!   prefill's peak at the logits is the logits, their float32 copy and the log-softmax
//!   (`S·V·(e + 8)`); a step's, the new logits and their float32 copy beside the previous
//!   copy and log-softmax (`S·V·(e + 12)`). The sum with the running scores and the top-k over
//!   `(b, k·V)` come after the model's logits are freed (`del model_outputs`): smaller.
//! - **`reorder_cache`** after every step (`cache_utils.py`, `CacheLayerMixin.reorder_cache`):
//!   each layer's keys, then its values, `index_select`ed by the chosen beams, one layer's
//!   tensor copied at a time beside the whole cache (the old one freed on assignment), with the
//!   float32 copy and log-softmax still alive. A dynamic layer's `torch.cat` at the next step
//!   holds as much (its previous tensor beside the new one) plus that step's activations, so
//!   without a window the replays' decoding peaks are the concatenation or the logits
//!   ([`dynamic_decode`] computes all and keeps the largest).
//! - **A sliding window on every layer** (Mistral v0.1, Phi-3): `DynamicSlidingWindowLayer`
//!   keeps its last `W − 1` tokens as a view of the concatenated tensor, and `reorder_cache`
//!   (which it does not override) copies that view into a tensor of its own: the cache `generate`
//!   returns holds `min(T, W − 1)` tokens a layer, one fewer than without beams past the window
//!   ([`returned_cache`]); right after the prefill the prompt's whole storage is still there
//!   beside the first copy, the decoding peak of a prompt longer than the window.
//!
//! - **A static cache**: no concatenation, so `reorder_cache`'s copy of one layer's whole slots
//!   beside the full cache ([`static_reorder`]) is the decoding peak unless the logits (or, past
//!   a window, the rolled slots) are larger.
//!
//! - **bitsandbytes weights**: their Linears' moments (`bnb_generate.rs`) beside the same terms.
//!
//! Gemma 2 and 3 (a window on some layers) take the same terms in their own module
//! (`hf_gemma/generate.rs`). Not modelled, refused at `num_beams` (`refusals`): a quantized or
//! fp8 cache (not replayed with beams: `QuantizedLayer.reorder_cache` defers the reorder to the
//! next dequantization),
//! `num_return_sequences > num_beams` (transformers raises) and sampling beams
//! (`do_sample=True`).

use super::arch::{Architecture, Span};
use super::hf_generate::Generation;
use super::kv_cache::{CacheBytes, CacheKind};
use super::num::N;
use super::whatif::Change;
use super::whatif_generate::GenerateWhatIfKind;

/// Bytes of an int64 id.
const ID: u128 = 8;
/// Bytes of an int32 beam index.
const INDEX: u128 = 4;

/// How the decoding loop keeps its tensors: greedy decoding, sampling or beam search.
pub(crate) struct Search {
    /// The prompt is repeated before the prefill (`num_return_sequences > 1` or beams).
    pub(crate) expanded: bool,
    /// Float32 tensors over (sequences, vocabulary) kept into the next step's forward: greedy
    /// one (the last scores), sampling three (scores, top-k scores, probabilities), beams two
    /// (the float32 copy and its log-softmax).
    pub(crate) kept_vocab: u128,
    /// Float32 tensors over (sequences, vocabulary) beside the prefill's logits: the copy, and
    /// with beams its log-softmax.
    pub(crate) prefill_vocab: u128,
    /// Id rows grown by one token each step: greedy decoding and sampling grow the ids and the
    /// mask, beam search the mask only (its sequences are the beams' own tensors).
    pub(crate) grown_rows: u128,
    /// The beams' own tensors during the prefill: `2·S·L·8 + 2·S·N·4`.
    pub(crate) prefill_state: N,
    /// The beams' own tensors during decoding, the top-k candidates' with them:
    /// `4·S·L·8 + 4·S·N·4`.
    pub(crate) decode_state: N,
}

impl Search {
    /// The loop `generate` runs for `g`.
    pub(crate) fn of(g: &Generation) -> Search {
        if g.num_beams <= 1 {
            return Search {
                expanded: g.num_return_sequences > 1,
                kept_vocab: if g.do_sample { 3 } else { 1 },
                prefill_vocab: 1,
                grown_rows: 2,
                prefill_state: N::ZERO,
                decode_state: N::ZERO,
            };
        }
        let seqs = g.sequences();
        let length = N::from(g.prompt_tokens) + N::from(g.max_new_tokens);
        let new = N::from(g.max_new_tokens);
        // Running and finished sequences (int64) and beam indices (int32).
        let state = seqs * length * (2 * ID) + seqs * new * (2 * INDEX);
        Search {
            expanded: true,
            kept_vocab: 2,
            prefill_vocab: 2,
            grown_rows: 1,
            prefill_state: state,
            // The 2k candidates' gathered sequences and beam indices: twice as many again.
            decode_state: state * 2,
        }
    }
}

/// What lies beside a beam-search decoding step's cache moments (`hf_generate.rs`'s terms).
pub(crate) struct BeamStep<'a> {
    /// One layer's keys for one token of every sequence: `S · kv_width · e`.
    pub(crate) kv_token: N,
    /// The cache as [`cache_bytes`](super::kv_cache::cache_bytes) gives it without beams: its
    /// storage after the prefill and during the last step.
    pub(crate) cache: &'a CacheBytes,
    /// The ids at the last step (the mask of `T` tokens, the beams' own tensors).
    pub(crate) ids: N,
    /// The step's own activations beside the previous step's float32 tensors over the
    /// vocabulary.
    pub(crate) step: N,
    /// The float32 copy of the logits and their log-softmax: `2·S·V·4`.
    pub(crate) vocab: N,
}

impl<'a> BeamStep<'a> {
    /// The step's terms, as named in the fields.
    pub(crate) fn new(kv_token: N, cache: &'a CacheBytes, ids: N, step: N, vocab: N) -> Self {
        BeamStep {
            kv_token,
            cache,
            ids,
            step,
            vocab,
        }
    }
}

/// Tokens a layer keeps after `reorder_cache` when it holds `tokens`: all of them, or with a
/// sliding window the last `W − 1` (the view it keeps, now a tensor of its own).
fn kept(window: Option<u64>, tokens: N) -> N {
    window.map_or(tokens, |w| tokens.min(N::from(w.saturating_sub(1))))
}

/// The decoding peak of beam search with a dynamic cache (`N ≥ 2`), beside the weights, with
/// no window or one window on every layer (`None` without beams), the largest of:
/// - the last step's concatenation in the last layer: the cache's storage (every layer's new
///   tensors), the last layer's previous tensor (`torch.cat` before the old one is freed; a
///   sliding layer concatenates keys and values before dropping either, so both), which after
///   `reorder_cache` is a tensor of its own of `T − 1` tokens (`min(T − 1, W − 1)`), beside the
///   ids and the step's activations;
/// - `reorder_cache` right after the prefill: the prompt's cache whole (every layer still holds
///   `P` tokens) and the first layer's copy of its kept keys, beside the float32 scores;
/// - `reorder_cache` after the last step: the storage of the last step and one layer's copy.
///
/// Without a window the concatenation is the peak (its old tensor is as large as the copy, and
/// the step's activations lie beside it); past a window the first reorder can be, the prompt's
/// storage being larger than the window.
pub(crate) fn dynamic_decode(g: &Generation, window: Option<u64>, s: &BeamStep<'_>) -> Option<N> {
    if g.num_beams <= 1 {
        return None;
    }
    let (p, new) = (N::from(g.prompt_tokens), N::from(g.max_new_tokens));
    let t = p + new - N::from(1u64);
    let (after_prefill, at_end) = (N::from(s.cache.after_prefill), N::from(s.cache.at_end));
    let old = kept(window, t - N::from(1u64)) * u128::from(1 + u8::from(window.is_some()));
    let cat = at_end + s.kv_token * old + s.ids + s.step;
    // Right after the prefill the mask holds `P + 1` tokens, not `T`.
    let first_ids = s.ids - g.sequences() * t * ID + g.sequences() * (p + N::from(1u64)) * ID;
    let first = after_prefill + s.kv_token * kept(window, p) + first_ids + s.vocab;
    let last = at_end + s.kv_token * kept(window, t) + s.ids + s.vocab;
    Some(cat.max(first).max(last))
}

/// With beams and a static cache, the moment of `reorder_cache` after the last step: the whole
/// preallocated cache and the copy `index_select` makes of one layer's slots (the preallocated
/// tensor replaced by a new one, the old freed on assignment), beside `rest` (the ids, the
/// float32 scores) and the mask one token longer; zero without beams. No concatenation ever
/// holds a second copy, so with a narrow vocabulary this is the decoding peak.
pub(crate) fn static_reorder(a: &Architecture, g: &Generation, cache: &CacheBytes, rest: N) -> N {
    if g.num_beams <= 1 || a.layers == 0 {
        return N::ZERO;
    }
    let at_end = N::from(cache.at_end);
    at_end + at_end / (2 * u128::from(a.layers)) + rest + g.sequences() * ID
}

/// The cache `generate` returns with beams: beside sliding-window layers, `reorder_cache` copies
/// each layer's kept view (`min(T, W − 1)` tokens) into a tensor of its own, where without beams
/// the view keeps its concatenation's storage (`min(T, W)` tokens, the prompt's whole with one new
/// token): each layer ends that many tokens shorter. Without a window, with a static cache or
/// one beam, `cache`.
pub(crate) fn returned_cache(
    a: &Architecture,
    g: &Generation,
    e: u64,
    cache: CacheBytes,
) -> CacheBytes {
    let Some(sw) = a.attention.sliding_window.as_ref() else {
        return cache;
    };
    // A static layer's slots are copied whole: as many tokens.
    if g.num_beams <= 1 || sw.pattern.is_empty() || g.cache != CacheKind::Dynamic {
        return cache;
    }
    // The layers that slide: the pattern repeats over the layers.
    let local = (0..a.layers)
        .filter(|i| {
            let at = usize::try_from(*i).unwrap_or(0) % sw.pattern.len();
            sw.pattern.get(at) == Some(&Span::Local)
        })
        .count();
    let (p, new) = (N::from(g.prompt_tokens), N::from(g.max_new_tokens));
    let t = p + new - N::from(1u64);
    let storage = if g.max_new_tokens == 1 {
        p
    } else {
        t.min(N::from(sw.window))
    };
    let shorter = storage - kept(Some(sw.window), t);
    let layer_token = g.sequences() * u128::from(a.attention.kv_width()) * u128::from(e);
    let less = layer_token * shorter * (2 * local as u128);
    let at_end = N::from(cache.at_end) - less;
    CacheBytes {
        at_end: at_end.to_u64("the cache").unwrap_or(cache.at_end),
        ..cache
    }
}

/// What beam search `g` is refused for, by key: nothing with one beam.
pub(crate) fn refusals(g: &Generation) -> Vec<(&'static str, String)> {
    let mut wrong = Vec::new();
    if g.num_beams == 0 {
        wrong.push(("num_beams", "must be at least 1".to_owned()));
    }
    if g.num_beams <= 1 {
        return wrong;
    }
    if g.num_return_sequences > g.num_beams {
        wrong.push((
            "num_return_sequences",
            format!(
                "transformers raises \"`num_return_sequences` ({}) has to be smaller or equal to \
                 `num_beams` ({})\": return at most num_beams sequences",
                g.num_return_sequences, g.num_beams
            ),
        ));
    }
    if !matches!(g.cache, CacheKind::Dynamic | CacheKind::Static) {
        wrong.push((
            "num_beams",
            format!(
                "beam search is replayed with the dynamic and static caches, not with the {} cache \
                 (its reorder_cache copies differ): set kv_cache to dynamic or num_beams to 1",
                g.cache.as_str()
            ),
        ));
    }
    if g.do_sample {
        wrong.push((
            "num_beams",
            "beam search is modelled greedy (do_sample=False), not sampling beams".to_owned(),
        ));
    }
    wrong
}

/// The beam options of a what-if (`whatif_generate.rs`), each the changed call: half the beams
/// where that leaves at least two and no fewer than the returned sequences, then none
/// (`num_beams=1`: greedy decoding, or sampling when more than one sequence is returned, as
/// transformers requires).
pub(crate) fn fewer_beams(g: &Generation) -> Vec<(GenerateWhatIfKind, Vec<Change>, Generation)> {
    let mut out = Vec::new();
    if g.num_beams <= 1 {
        return out;
    }
    let change = |value: u64| {
        vec![Change {
            key: "num_beams".to_owned(),
            value: value.to_string(),
        }]
    };
    let half = g.num_beams / 2;
    if half >= 2 && half >= g.num_return_sequences {
        let changed = Generation {
            num_beams: half,
            ..*g
        };
        out.push((GenerateWhatIfKind::FewerBeams, change(half), changed));
    }
    let none = Generation {
        num_beams: 1,
        do_sample: g.num_return_sequences > 1,
        ..*g
    };
    out.push((GenerateWhatIfKind::NoBeams, change(1), none));
    out
}
