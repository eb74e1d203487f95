//! The KV-cache arithmetic (`estimate::kv_cache`) against the caches Hugging Face `generate`
//! returned on a real GPU: the 24 runs of `tests/data/gpu_measurements.json` (`hf_generate`: GPT-2,
//! Llama 3.2 1B's, Mistral 7B's and Gemma 2 2B's shapes, dynamic and static, batch 1 and 8,
//! prompts beyond the sliding window), each cache's storages summed by
//! `tools/gpu_measure/hf_cases.py::cache_bytes`. Every one equals the arithmetic to the byte.

use serde::Deserialize;
use std::collections::BTreeMap;

use vramdoc::estimate::arch::{
    Activation, Architecture, Attention, Embeddings, Family, FeedForward, Mlp, Norm, NormPlacement,
    Positions, SlidingWindow, Span,
};
use vramdoc::estimate::kv_cache::{cache_bytes, CacheKind, CacheRun};

#[derive(Deserialize)]
struct Measured {
    hf_generate: Vec<Generate>,
}

#[derive(Deserialize)]
struct Generate {
    name: String,
    family: String,
    config: BTreeMap<String, serde_json::Value>,
    prompt_tokens: u64,
    max_new_tokens: u64,
    batch_size: u64,
    cache: String,
    kv_cache_bytes: u64,
    cache_layers: Vec<String>,
}

fn int(c: &BTreeMap<String, serde_json::Value>, key: &str, default: u64) -> u64 {
    c.get(key).and_then(|v| v.as_u64()).unwrap_or(default)
}

/// The architecture of a measured run, from the config keys it was built with (transformers'
/// defaults where the run kept them: GPT-2's 12 × 12 × 768).
fn architecture(g: &Generate) -> Architecture {
    let c = &g.config;
    if g.family == "gpt2" {
        return Architecture::hf_gpt2(
            int(c, "n_layer", 12),
            int(c, "n_head", 12),
            int(c, "n_embd", 768),
            int(c, "vocab_size", 50257),
            int(c, "n_positions", 1024),
        );
    }
    let (heads, kv_heads) = (
        int(c, "num_attention_heads", 0),
        int(c, "num_key_value_heads", 0),
    );
    let window = int(c, "sliding_window", 0);
    let sliding_window = match g.family.as_str() {
        // Mistral: every layer slides.
        "mistral" => Some(SlidingWindow {
            window,
            pattern: vec![Span::Local],
        }),
        // Gemma 2: even layers slide, odd layers attend globally.
        "gemma2" => Some(SlidingWindow {
            window,
            pattern: vec![Span::Local, Span::Global],
        }),
        _ => None,
    };
    let family = match g.family.as_str() {
        "gemma2" => Family::Gemma2,
        _ => Family::Llama,
    };
    Architecture {
        family,
        name: g.name.clone().into(),
        vocab_size: int(c, "vocab_size", 0),
        hidden: int(c, "hidden_size", 0),
        layers: int(c, "num_hidden_layers", 0),
        positions: Positions::rotary(10000.0, 131_072),
        attention: Attention {
            heads,
            kv_heads,
            head_dim: int(c, "head_dim", 0),
            fused_qkv: false,
            qkv_bias: false,
            out_bias: false,
            qk_norm: None,
            softcap: None,
            sliding_window,
        },
        mlp: Mlp::Dense(FeedForward {
            intermediate: int(c, "intermediate_size", 0),
            gated: true,
            fused_gate_up: false,
            activation: Activation::Silu,
            bias: false,
        }),
        norm: Norm::RmsNorm,
        norm_placement: NormPlacement::Pre,
        embeddings: Embeddings {
            tied_head: false,
            head_bias: false,
            scaled_by_sqrt_hidden: false,
            logit_softcap: None,
        },
    }
}

#[test]
fn every_measured_generate_cache_equals_the_arithmetic_to_the_byte() {
    let text = std::fs::read_to_string("tests/data/gpu_measurements.json").unwrap();
    let measured: Measured = serde_json::from_str(&text).unwrap();
    assert_eq!(measured.hf_generate.len(), 24);
    let mut sliding_beyond_window = 0;
    for g in &measured.hf_generate {
        let a = architecture(g);
        let kind = match g.cache.as_str() {
            "static" => CacheKind::Static,
            _ => CacheKind::Dynamic,
        };
        let run = CacheRun {
            kind,
            element_bytes: 2,
            sequences: g.batch_size,
            prompt: g.prompt_tokens,
            new_tokens: g.max_new_tokens,
        };
        let got = cache_bytes(&a, &run).unwrap();
        assert_eq!(got.at_end, g.kv_cache_bytes, "{}", g.name);
        // The measured layer classes are the ones the description implies.
        let slides = a.attention.sliding_window.is_some();
        assert_eq!(
            g.cache_layers.iter().any(|l| l.contains("SlidingWindow")),
            slides,
            "{}",
            g.name
        );
        if slides && g.prompt_tokens > int(&g.config, "sliding_window", 0) {
            sliding_beyond_window += 1;
        }
    }
    // The window rule is exercised: prompts longer than the window, dynamic and static.
    assert_eq!(sliding_beyond_window, 6);
}
