//! nanochat's inference (`checkpoint_manager.build_model`, then `Engine.generate`) at the pinned
//! commit, estimated from its architecture and held to the fake-tensor replay of its own code
//! (`tools/nanochat_replay/replay_nanochat_generate.py` →
//! `tests/data/nanochat_generate_replay.json`): the weights and the KV cache exact (and the
//! cache by hand), the load, prefill and decoding peaks within 1 %.

use serde::Deserialize;

use vramdoc::estimate::arch::NANOCHAT_COMMIT;
use vramdoc::estimate::kv_cache::CacheKind;
use vramdoc::estimate::nanochat::{GptConfig as NanochatConfig, NANOCHAT_VOCAB};
use vramdoc::estimate::{estimate_generate, Architecture, Dtype, Generation, GpuCatalog, Scenario};

#[derive(Deserialize)]
pub(crate) struct Replay {
    nanochat_commit: String,
    torch: String,
    pub(crate) runs: Vec<Entry>,
}

#[derive(Deserialize)]
pub(crate) struct Entry {
    pub(crate) run: Run,
    model_dim: u64,
    n_head: u64,
    params: u64,
    param_bytes: u64,
    buffer_bytes: u64,
    load_peak_bytes: u64,
    prefill_kv_bytes: u64,
    kv_cache_bytes: u64,
    prefill_peak_bytes: u64,
    decode_peak_bytes: u64,
    pub(crate) generate_peak_bytes: u64,
}

#[derive(Deserialize)]
pub(crate) struct Run {
    pub(crate) name: String,
    depth: u64,
    prompt_tokens: u64,
    max_tokens: u64,
    num_samples: u64,
    max_seq_len: u64,
    window_pattern: String,
    dtype: String,
    temperature: f64,
    top_k: Option<u64>,
    aspect_ratio: u64,
    head_dim: u64,
}

pub(crate) fn replay() -> Replay {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/nanochat_generate_replay.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `base_train.py`'s `build_model_meta` for the run's depth, written out: the width is
/// `depth·aspect_ratio` rounded up to whole heads of `head_dim`, as many key/value heads.
pub(crate) fn architecture(r: &Run) -> Architecture {
    let width = (r.depth * r.aspect_ratio).div_ceil(r.head_dim) * r.head_dim;
    NanochatConfig {
        sequence_len: r.max_seq_len,
        vocab_size: NANOCHAT_VOCAB,
        n_layer: r.depth,
        n_head: width / r.head_dim,
        n_kv_head: width / r.head_dim,
        n_embd: width,
        window_pattern: r.window_pattern.clone(),
    }
    .architecture(&r.name)
}

/// The scenario `estimate --model … --phase generate` builds: `block_size` the checkpoint's
/// `sequence_len`, `dtype` its `COMPUTE_DTYPE`.
pub(crate) fn scenario(r: &Run) -> Scenario {
    Scenario {
        block_size: r.max_seq_len,
        batch_size: r.num_samples,
        dtype: Dtype::parse(&r.dtype).unwrap(),
        compile: false,
        ..Scenario::default()
    }
}

pub(crate) fn generation(r: &Run) -> Generation {
    Generation {
        prompt_tokens: r.prompt_tokens,
        max_new_tokens: r.max_tokens,
        batch_size: r.num_samples,
        num_return_sequences: 1,
        do_sample: false,
        num_beams: 1,
        cache: CacheKind::Dynamic,
    }
}

/// nanochat's `KVCache(batch, seq_len, …)`, written out: keys and values of `n_layer × batch ×
/// seq_len × n_kv_head × head_dim` elements of `COMPUTE_DTYPE`, and one int32 position per row.
fn kv_cache(r: &Run, width: u64, rows: u64, positions: u64) -> u64 {
    let element = if r.dtype == "float32" { 4 } else { 2 };
    2 * r.depth * rows * positions * width * element + 4 * rows
}

/// `ours` within 1 % of `theirs`.
fn within_one_percent(ours: u64, theirs: u64) -> bool {
    ours.abs_diff(theirs) * 100 <= theirs
}

/// Bytes the sampling of the estimate (a temperature, no top-k) keeps beyond greedy or top-k
/// sampling: the scaled logits, their softmax and `multinomial`'s draw over the vocabulary.
fn sampling_bound(r: &Run) -> u64 {
    3 * r.num_samples * 32768 * 4
}

#[test]
fn nanochat_generate_is_within_one_percent_of_every_replayed_peak() {
    let data = replay();
    assert_eq!(data.nanochat_commit, NANOCHAT_COMMIT, "the pinned nanochat");
    assert_eq!(data.torch, "2.15.0", "the pinned torch");
    assert!(data.runs.len() >= 8);
    let catalog = GpuCatalog::builtin();
    let mut depths = std::collections::BTreeSet::new();
    let mut worst = 0.0f64;
    for e in &data.runs {
        let r = &e.run;
        let name = &r.name;
        depths.insert(r.depth);
        let model = architecture(r);
        assert_eq!(
            (model.hidden, model.attention.heads),
            (e.model_dim, e.n_head)
        );
        let est = estimate_generate(&model, &scenario(r), &generation(r), &catalog).unwrap();
        assert_eq!(est.params.total, e.params, "{name}: parameters");
        assert_eq!(
            est.bytes.weights,
            e.param_bytes + e.buffer_bytes,
            "{name}: weights and rotary tables"
        );
        let width = e.model_dim;
        let context = r.prompt_tokens + r.max_tokens;
        assert_eq!(
            kv_cache(r, width, 1, r.prompt_tokens),
            e.prefill_kv_bytes,
            "{name}: the prefill's cache by hand"
        );
        assert_eq!(
            kv_cache(r, width, r.num_samples, context),
            e.kv_cache_bytes,
            "{name}: the cache by hand"
        );
        assert_eq!(est.bytes.kv_cache, e.kv_cache_bytes, "{name}: KV cache");
        let load = est.bytes.load_peak.unwrap();
        let default_sampling = r.temperature > 0.0 && r.top_k.is_none();
        for (what, ours, theirs) in [
            ("load", load, e.load_peak_bytes),
            ("prefill", est.bytes.prefill_peak, e.prefill_peak_bytes),
            ("decode", est.bytes.decode_peak, e.decode_peak_bytes),
        ] {
            let d = (ours as f64 - theirs as f64) / theirs as f64;
            if default_sampling || what == "load" {
                worst = worst.max(d.abs());
                assert!(
                    within_one_percent(ours, theirs),
                    "{name}: {what} {ours} vs the replay's {theirs} ({:+.2} %)",
                    d * 100.0
                );
            } else {
                // Greedy or top-k sampling keeps less than the estimate's default sampling.
                assert!(
                    ours >= theirs && ours <= theirs + theirs / 100 + sampling_bound(r),
                    "{name}: {what} {ours} vs the replay's {theirs}"
                );
            }
        }
    }
    assert!(depths.len() >= 4, "depths replayed: {depths:?}");
    eprintln!(
        "nanochat generate: largest difference {:.5} % (the Engine's default sampling)",
        worst * 100.0
    );
}
