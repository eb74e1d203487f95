//! The cache's bytes against independent arithmetic, `2 × layers × KV heads × head dim × tokens ×
//! bytes × sequences`, for a published model of every family, with the sliding-window and static
//! rules stated once each.

use super::*;
use crate::estimate::arch::{
    Activation, Attention, Embeddings, Family, FeedForward, MixtureOfExperts, Mlp, Norm,
    NormPlacement, Positions, SlidingWindow, Span,
};

/// A decoder of the Llama kind with the attention shape that decides its cache.
fn decoder(family: Family, layers: u64, heads: u64, kv_heads: u64, head_dim: u64) -> Architecture {
    let ffn = FeedForward {
        intermediate: 4 * heads * head_dim,
        gated: true,
        fused_gate_up: false,
        activation: Activation::Silu,
        bias: false,
    };
    Architecture {
        family,
        name: "test".into(),
        vocab_size: 32000,
        hidden: heads * head_dim,
        layers,
        positions: Positions::rotary(10000.0, 131_072),
        attention: Attention {
            heads,
            kv_heads,
            head_dim,
            fused_qkv: false,
            qkv_bias: false,
            out_bias: false,
            qk_norm: None,
            softcap: None,
            sliding_window: None,
        },
        mlp: Mlp::Dense(ffn),
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

fn sliding(mut a: Architecture, window: u64, pattern: Vec<Span>) -> Architecture {
    a.attention.sliding_window = Some(SlidingWindow { window, pattern });
    a
}

/// The models: (name, architecture, full-attention layers, sliding layers).
fn models() -> Vec<(&'static str, Architecture, u64, u64)> {
    use Span::{Global as G, Local as L};
    let mut mixtral = decoder(Family::Moe, 32, 32, 8, 128);
    if let Mlp::Dense(f) = mixtral.mlp {
        mixtral.mlp = Mlp::Moe(MixtureOfExperts {
            experts: 8,
            experts_per_token: 2,
            expert: f,
            shared: None,
            shared_gate: false,
            router_bias: false,
        });
    }
    let mut qwen3 = decoder(Family::Llama, 36, 32, 8, 128);
    qwen3.attention.qk_norm = Some(Norm::RmsNorm);
    vec![
        // openai-community/gpt2: 12 layers, 12 heads of 64, multi-head.
        (
            "gpt2",
            Architecture::hf_gpt2(12, 12, 768, 50257, 1024),
            12,
            0,
        ),
        // meta-llama/Llama-3.1-8B: 32 layers, 8 KV heads of 128.
        (
            "llama-3.1-8b",
            decoder(Family::Llama, 32, 32, 8, 128),
            32,
            0,
        ),
        // Qwen/Qwen3-8B: 36 layers, 8 KV heads of 128 (QK-norm changes nothing in the cache).
        ("qwen3-8b", qwen3, 36, 0),
        // mistralai/Mixtral-8x7B: the experts change nothing in the cache.
        ("mixtral-8x7b", mixtral, 32, 0),
        // mistralai/Mistral-7B-v0.1: every layer slides over 4096 tokens.
        (
            "mistral-7b",
            sliding(decoder(Family::Llama, 32, 32, 8, 128), 4096, vec![L]),
            0,
            32,
        ),
        // google/gemma-2-2b: 26 layers alternating local (first) and global, 4 KV heads of 256.
        (
            "gemma-2-2b",
            sliding(decoder(Family::Gemma2, 26, 8, 4, 256), 4096, vec![L, G]),
            13,
            13,
        ),
        // google/gemma-3-1b-pt: 26 layers, five local then one global, window 512, 1 KV head of
        // 256: 4 whole patterns (20 local, 4 global) and 2 more local layers.
        (
            "gemma-3-1b",
            sliding(
                decoder(Family::Gemma3, 26, 4, 1, 256),
                512,
                vec![L, L, L, L, L, G],
            ),
            4,
            22,
        ),
        // nanochat with `--window-pattern SSSL` over 20 layers of 10 heads of 128.
        (
            "nanochat-d20",
            sliding(
                decoder(Family::Nanochat, 20, 10, 10, 128),
                1024,
                vec![L, L, L, G],
            ),
            5,
            15,
        ),
    ]
}

fn run(kind: CacheKind, e: u64, b: u64, prompt: u64, new_tokens: u64) -> CacheRun {
    CacheRun {
        kind,
        element_bytes: e,
        sequences: b,
        prompt,
        new_tokens,
    }
}

/// `2 × KV heads × head dim × tokens × bytes × sequences` for one layer, written out again.
fn per_layer(a: &Architecture, tokens: u64, e: u64, b: u64) -> u64 {
    2 * a.attention.kv_heads * a.attention.head_dim * tokens * e * b
}

#[test]
fn layer_spans_follow_the_repeating_pattern() {
    for (name, a, global, local) in models() {
        let s = layer_spans(&a);
        assert_eq!((s.global, s.local), (global, local), "{name}");
    }
}

#[test]
fn dynamic_cache_is_two_layers_heads_head_dim_tokens_bytes_for_full_attention() {
    for (name, a, global, local) in models() {
        for (e, b, p, n) in [(2, 1, 512, 512), (4, 8, 2048, 256), (2, 3, 7, 1)] {
            let got = cache_bytes(&a, &run(CacheKind::Dynamic, e, b, p, n)).unwrap();
            let t = p + n - 1;
            if local == 0 {
                assert_eq!(got.at_end, global * per_layer(&a, t, e, b), "{name}");
                assert_eq!(got.after_prefill, global * per_layer(&a, p, e, b), "{name}");
                assert_eq!(got.largest, got.at_end, "{name}");
            }
        }
    }
}

/// The sliding-window rule: after a decoding step a sliding layer holds `min(T, W)` tokens, the
/// `W − 1` it keeps plus the new one, and an 8-byte window tensor; right after the prefill it still
/// holds the whole prompt (its kept slice is a view of the concatenation).
#[test]
fn sliding_layers_hold_at_most_the_window_once_decoding_started() {
    for (name, a, global, local) in models() {
        if local == 0 {
            continue;
        }
        let w = layer_spans(&a).window;
        for (p, n) in [
            (w / 2, 16),
            (w - 1, 2),
            (w + 100, 64),
            (3 * w, 1),
            (10, 3 * w),
        ] {
            let (e, b) = (2, 4);
            let got = cache_bytes(&a, &run(CacheKind::Dynamic, e, b, p, n)).unwrap();
            let t = p + n - 1;
            let local_end = if n == 1 { p } else { t.min(w) };
            let end =
                global * per_layer(&a, t, e, b) + local * (per_layer(&a, local_end, e, b) + 8);
            let prefill = (global + local) * per_layer(&a, p, e, b) + local * 8;
            assert_eq!(got.at_end, end, "{name} p{p} n{n}");
            assert_eq!(got.after_prefill, prefill, "{name} p{p} n{n}");
            assert_eq!(got.largest, end.max(prefill), "{name} p{p} n{n}");
        }
    }
    // The common formula (every layer holds every token) overstates Gemma 3 at a long context.
    let gemma3 = &models()[6].1;
    let r = run(CacheKind::Dynamic, 2, 1, 1024, 31 * 1024 + 1);
    let naive = 26 * per_layer(gemma3, 32 * 1024, 2, 1);
    let real = cache_bytes(gemma3, &r).unwrap().at_end;
    assert!(naive > 5 * real, "{naive} vs {real}");
}

/// The static rule: every layer is allocated at the first forward for `P + N − 1` tokens
/// (`generate`'s `max_length − 1`), a sliding layer for `min(W, P + N − 1)`, each with an 8-byte
/// `cumulative_length`; the size never changes.
#[test]
fn static_cache_is_preallocated_to_the_maximum_length() {
    for (name, a, global, local) in models() {
        let w = layer_spans(&a).window;
        for (e, b, p, n) in [(2, 8, 512, 512), (4, 1, 100, 5000), (2, 2, 9, 1)] {
            let got = cache_bytes(&a, &run(CacheKind::Static, e, b, p, n)).unwrap();
            let max_len = p + n - 1;
            let want = global * per_layer(&a, max_len, e, b)
                + local * per_layer(&a, max_len.min(w), e, b)
                + (global + local) * 8;
            assert_eq!(
                (got.after_prefill, got.at_end, got.largest),
                (want, want, want),
                "{name}"
            );
        }
    }
}

#[test]
fn quantized_cache_stores_packed_values_scales_shifts_and_a_full_precision_residual() {
    let gpt2 = Architecture::hf_gpt2(12, 12, 768, 50257, 1024);
    // One token of one layer: 2·12·64 = 1536 elements; int4 packs 768 bytes; 24 groups of 64
    // with a 2-byte scale and shift each: 96 bytes.
    let per_token_q4 = 768 + 24 * 2 * 2;
    // Prefill of 512, 200 new tokens: 199 decoding steps, flushed at step 128, 71 left in the
    // residual at 2 bytes per element.
    let r = run(CacheKind::QUANTIZED_INT4, 2, 1, 512, 200);
    let got = cache_bytes(&gpt2, &r).unwrap();
    assert_eq!(got.after_prefill, 12 * 512 * per_token_q4);
    let at_end = 12 * ((512 + 128) * per_token_q4 + 71 * 1536 * 2);
    assert_eq!(got.at_end, at_end);
    // Just before the flush (step 127) the residual held 127 tokens.
    let before = 12 * (512 * per_token_q4 + 127 * 1536 * 2);
    assert_eq!(got.largest, at_end.max(before));
    // int8 (HQQ): one byte per element.
    let r8 = run(CacheKind::QUANTIZED_INT8, 2, 1, 512, 1);
    let per_token_q8 = 1536 + 24 * 2 * 2;
    assert_eq!(
        cache_bytes(&gpt2, &r8).unwrap().at_end,
        12 * 512 * per_token_q8
    );
    // Far fewer bytes than the bf16 dynamic cache at a long context.
    let long = |kind| {
        cache_bytes(&gpt2, &run(kind, 2, 1, 1000, 24))
            .unwrap()
            .at_end
    };
    assert!(long(CacheKind::QUANTIZED_INT4) * 3 < long(CacheKind::Dynamic));
}

#[test]
fn fp8_cache_is_one_byte_per_element_and_two_float32_scales_per_layer() {
    let llama = &models()[1].1;
    let got = cache_bytes(llama, &run(CacheKind::Fp8, 2, 2, 1000, 25)).unwrap();
    assert_eq!(got.at_end, 32 * (per_layer(llama, 1024, 1, 2) + 8));
    assert_eq!(got.after_prefill, 32 * (per_layer(llama, 1000, 1, 2) + 8));
}

#[test]
fn quantized_caches_are_refused_for_sliding_window_models() {
    for (name, a, _, local) in models() {
        for kind in [CacheKind::QUANTIZED_INT4, CacheKind::Fp8] {
            let got = cache_bytes(&a, &run(kind, 2, 1, 10, 10));
            assert_eq!(got.is_err(), local > 0, "{name}");
            if let Err(e) = got {
                assert!(e.message.contains("full attention"), "{}", e.message);
                assert_eq!(e.key.as_deref(), Some("kv_cache"));
            }
        }
    }
}

#[test]
fn no_prompt_or_no_new_token_is_an_error_and_huge_shapes_do_not_wrap() {
    let a = &models()[0].1;
    assert!(cache_bytes(a, &run(CacheKind::Dynamic, 2, 1, 0, 5)).is_err());
    assert!(cache_bytes(a, &run(CacheKind::Dynamic, 2, 1, 5, 0)).is_err());
    assert!(cache_bytes(a, &run(CacheKind::Static, 4, u64::MAX, u64::MAX / 2, 9)).is_err());
}
