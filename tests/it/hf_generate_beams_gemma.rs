//! Beam search (`num_beams > 1`) on Gemma 2 and Gemma 3 (`hf_gemma/generate.rs` with
//! `beam_generate.rs`'s terms) against the Gemma runs of `tests/data/hf_generate_beams_replay.json`
//! (`tools/hf_replay/replay_generate_beams.py`): the cache to the byte (the sliding layers'
//! `min(T, W − 1)` kept tokens), both peaks within 1 %, with a dynamic and a static cache.

use serde::Deserialize;

use crate::hf_gemma::{architecture, Model};
use crate::hf_generate::greedy;
use crate::hf_generate_beams::within;
use vramdoc::estimate::{estimate_generate, Generation, GpuCatalog, Scenario};

/// A Gemma beam run's fields (`hf_generate_gemma.rs` reads the same from its replays).
#[derive(Deserialize)]
struct GemmaBeamRun {
    name: String,
    prompt_tokens: u64,
    max_new_tokens: u64,
    batch_size: u64,
    dtype: String,
    family: String,
    attn_implementation: String,
    config: Vec<(String, serde_json::Value)>,
    num_beams: u64,
    cache: String,
}

#[test]
fn every_gemma_beam_replay_s_peaks_are_within_one_percent_and_its_cache_exact() {
    let text = std::fs::read_to_string("tests/data/hf_generate_beams_replay.json").unwrap();
    let replay: serde_json::Value = serde_json::from_str(&text).unwrap();
    let catalog = GpuCatalog::builtin();
    let mut checked = Vec::new();
    for e in replay["runs"].as_array().unwrap() {
        if !e["run"]["family"].as_str().unwrap().starts_with("gemma") {
            continue;
        }
        let r: GemmaBeamRun = serde_json::from_value(e["run"].clone()).unwrap();
        let int = |k: &str| {
            r.config
                .iter()
                .find(|(key, _)| key == k)
                .and_then(|(_, v)| v.as_u64())
                .unwrap()
        };
        let a = architecture(&Model {
            model_type: r.family.clone(),
            layers: int("num_hidden_layers"),
            hidden: int("hidden_size"),
            heads: int("num_attention_heads"),
            kv_heads: int("num_key_value_heads"),
            head_dim: int("head_dim"),
            intermediate: int("intermediate_size"),
            vocab_size: int("vocab_size"),
            sliding_window: int("sliding_window"),
            layer_types: Vec::new(),
        });
        let s = Scenario {
            dtype: vramdoc::estimate::Dtype::parse(&r.dtype).unwrap(),
            flash: r.attn_implementation == "sdpa",
            compile: false,
            ..Scenario::default()
        };
        let g = Generation {
            num_beams: r.num_beams,
            ..greedy(r.prompt_tokens, r.max_new_tokens, r.batch_size, &r.cache)
        };
        let est = estimate_generate(&a, &s, &g, &catalog).unwrap();
        let got = &est.bytes;
        let want = |k: &str| e[k].as_u64().unwrap();
        eprintln!(
            "{}: prefill {:+.3} %, decode {:+.3} %",
            r.name,
            (got.prefill_peak as f64 / want("prefill_peak_bytes") as f64 - 1.0) * 100.0,
            (got.decode_peak as f64 / want("decode_peak_bytes") as f64 - 1.0) * 100.0,
        );
        assert_eq!(got.kv_cache_at_end, want("kv_cache_bytes"), "{}", r.name);
        assert_eq!(got.weights, want("weights_bytes"), "{}", r.name);
        assert!(
            within(got.prefill_peak, want("prefill_peak_bytes"), 0.01),
            "{}",
            r.name
        );
        assert!(
            within(got.decode_peak, want("decode_peak_bytes"), 0.01),
            "{}",
            r.name
        );
        checked.push(r.family);
    }
    // Gemma 3 (SDPA) and Gemma 2 (eager), two runs each with a dynamic cache, one static.
    checked.sort();
    assert_eq!(
        checked,
        [
            "gemma2",
            "gemma2",
            "gemma2",
            "gemma3_text",
            "gemma3_text",
            "gemma3_text"
        ]
    );
}
