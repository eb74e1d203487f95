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
//!   holds as much (its previous tensor beside the new one) plus that step's activations, so the
//!   replays' decoding peaks are the concatenation or the logits; the copy is computed and the
//!   larger kept.
//!
//! Not modelled, refused at `num_beams` (`refusals`): a static or quantized cache (not
//! replayed with beams), `num_return_sequences > num_beams` (transformers raises), bitsandbytes
//! weights (not replayed with beams), sampling beams (`do_sample=True`), and sliding-window
//! layers (Mistral v0.1, Phi-3, Gemma 2/3): `DynamicSlidingWindowLayer` keeps its last
//! `window − 1` tokens as a view of the concatenated tensor, and `reorder_cache` (which it does
//! not override) copies that view into a tensor of its own, so the window's storage shrinks by a
//! token and its decoding moments change; the beam replays of a Mistral-like model and of Gemma
//! 3 1B's shape are kept in the data, not computed.

use super::arch::Architecture;
use super::hf_generate::Generation;
use super::kv_cache::{CacheBytes, CacheKind};
use super::num::N;
use super::scenario::Scenario;
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

/// With beams, the copy `reorder_cache` makes of the largest layer's keys after the last step
/// (`index_select` over the beams: the layer's tensor at the cache's end); `None` without beams.
/// Every layer of a model `generate` computes beams for holds as many tokens (no window, or the
/// same window on every layer), so the largest is the cache at its end over `2 · layers`.
pub(crate) fn reorder_copy(a: &Architecture, g: &Generation, cache: &CacheBytes) -> Option<N> {
    (g.num_beams > 1 && a.layers > 0).then(|| N::from(cache.at_end) / (2 * u128::from(a.layers)))
}

/// What beam search on `a` with `s` and `g` is refused for, by key: nothing with one beam.
pub(crate) fn refusals(
    a: &Architecture,
    s: &Scenario,
    g: &Generation,
) -> Vec<(&'static str, String)> {
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
    if g.cache != CacheKind::Dynamic {
        wrong.push((
            "num_beams",
            format!(
                "beam search is replayed with the dynamic cache only, not with a {} cache \
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
    if a.attention.sliding_window.is_some() {
        wrong.push((
            "num_beams",
            format!(
                "beam search on {} is not modelled: its sliding-window layers keep a view of \
                 the last window − 1 tokens inside a larger tensor, and reorder_cache's \
                 index_select copies that view out, so the cache and the decoding moments differ \
                 from the model's without beams (the Mistral-like beam replay ends one token \
                 shorter per layer, its decoding peak 3 % lower than the rule without beams); \
                 set num_beams to 1",
                a.name
            ),
        ));
    }
    if s.load_in_4bit || s.load_in_8bit {
        wrong.push((
            "num_beams",
            "beam search with bitsandbytes weights is not replayed: use 16-bit weights or \
             num_beams=1"
                .to_owned(),
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
