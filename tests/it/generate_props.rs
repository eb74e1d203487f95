//! Issue 22's property test for every family Hugging Face `generate` computes (GPT-2, and the
//! Llama family as each `model_type` builds it: Llama with grouped heads, Qwen2's q/k/v biases,
//! Qwen3's QK-norm with a head wider than `hidden/heads`, Phi-3's fused projections and sliding
//! window, Mistral v0.1's sliding window with grouped heads, multi-head Llama 2): the peak, the
//! verdict's high end and the cache never decrease with a longer prompt, more new tokens or a
//! bigger batch, with a dynamic, static or (the Llama family without a window) optimum-quanto
//! int4/int2, HQQ int8 or fp8 cache, in every dtype, with 16-bit, NF4, FP4 or LLM.int8() weights. The solvers' bisection relies on it; what is refused is only
//! what is out of the model (GPT-2's positions, a quantized cache beside a window or on GPT-2).
//! The windows are short (900 and 1200 tokens), so the contexts pass them: the masked prefill, the
//! dynamic cache cut to the window and the static one's rolled slots are in play.
//! Beam search has one of its own below (every family, windows too; more beams too), and
//! nanochat's `Engine.generate` one (its cache, its rows, its rotary bound).

use proptest::prelude::*;

use vramdoc::estimate::arch::{
    Activation, Attention, Embeddings, FeedForward, Mlp, Norm, NormPlacement, Positions,
    SlidingWindow, Span,
};
use vramdoc::estimate::kv_cache::CacheKind;
use vramdoc::estimate::{
    estimate_generate, Architecture, Dtype, Family, Generation, GpuCatalog, QuantType, Scenario,
};

/// A Llama-family decoder of `model_type`'s kind, small (the property holds at any width).
fn llama_family(model_type: &'static str) -> Architecture {
    let phi3 = model_type == "phi3";
    let (heads, kv_heads, head_dim) = match model_type {
        "qwen3" => (8, 4, 64),
        "phi3" | "llama2" => (8, 8, 32),
        _ => (8, 2, 32),
    };
    let window = match model_type {
        "phi3" => Some(1200),
        "mistral" => Some(900),
        _ => None,
    };
    Architecture {
        family: Family::Llama,
        name: model_type.into(),
        vocab_size: 32000,
        hidden: 256,
        layers: 4,
        positions: Positions::rotary(10_000.0, 131_072),
        attention: Attention {
            heads,
            kv_heads,
            head_dim,
            fused_qkv: phi3,
            qkv_bias: model_type == "qwen2",
            out_bias: false,
            qk_norm: (model_type == "qwen3").then_some(Norm::RmsNorm),
            softcap: None,
            sliding_window: window.map(|window| SlidingWindow {
                window,
                pattern: vec![Span::Local],
            }),
        },
        mlp: Mlp::Dense(FeedForward {
            intermediate: 688,
            gated: true,
            fused_gate_up: phi3,
            activation: Activation::Silu,
            bias: false,
        }),
        norm: Norm::RmsNorm,
        norm_placement: NormPlacement::Pre,
        embeddings: Embeddings {
            tied_head: model_type == "qwen3",
            head_bias: false,
            scaled_by_sqrt_hidden: false,
            logit_softcap: None,
        },
    }
}

/// Every family `generate` computes, with GPT-2's longest context (`prompt + new`) or a
/// Llama-family model's sliding window (`u64::MAX` without one).
fn families() -> Vec<(Architecture, u64)> {
    let mut all = vec![(Architecture::hf_gpt2(12, 12, 768, 50257, 1024), 1025)];
    for t in ["llama", "llama2", "qwen2", "qwen3", "phi3", "mistral"] {
        let a = llama_family(t);
        let limit = a
            .attention
            .sliding_window
            .as_ref()
            .map_or(u64::MAX, |w| w.window);
        all.push((a, limit));
    }
    all
}

fn dtype() -> impl Strategy<Value = Dtype> {
    prop_oneof![
        Just(Dtype::Float32),
        Just(Dtype::Bfloat16),
        Just(Dtype::Float16)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generate_memory_never_decreases_with_context_or_batch_for_every_family(
        which in 0usize..7, p in 1u64..=700, dp in 0u64..=300, n in 1u64..=300,
        dn in 0u64..=300, b in 1u64..=16, db in 0u64..=16, r in 1u64..=4, dtype in dtype(),
        cache in 0usize..6, weights in 0usize..4, compute in dtype(),
    ) {
        let catalog = GpuCatalog::builtin();
        let (a, limit) = &families()[which];
        let s = Scenario {
            dtype,
            compile: false,
            load_in_4bit: weights == 1 || weights == 2,
            bnb_4bit_quant_type: if weights == 1 { QuantType::Nf4 } else { QuantType::Fp4 },
            bnb_4bit_use_double_quant: weights == 1,
            bnb_4bit_compute_dtype: compute,
            load_in_8bit: weights == 3,
            ..Scenario::default()
        };
        let cache = [
            CacheKind::Dynamic,
            CacheKind::Static,
            CacheKind::QUANTIZED_INT4,
            CacheKind::QUANTIZED_INT2,
            CacheKind::QUANTIZED_INT8,
            CacheKind::Fp8,
        ][cache];
        let quantized = matches!(cache, CacheKind::Quantized { .. } | CacheKind::Fp8);
        // transformers' QuantizedCache takes only full-attention models; quanto, HQQ and fp8 are
        // replayed for the Llama family.
        let computed = !quantized || (*limit == u64::MAX && a.family == Family::Llama);
        let g = |p: u64, n: u64, b: u64| Generation {
            prompt_tokens: p,
            max_new_tokens: n,
            batch_size: b,
            num_return_sequences: r,
            do_sample: r > 1,
            num_beams: 1,
            cache,
        };
        let total = |g: Generation| {
            // GPT-2's positions bound every cache.
            let bound = if a.family == Family::Llama { u64::MAX } else { *limit };
            let fits = computed && g.prompt_tokens + g.max_new_tokens <= bound;
            match estimate_generate(a, &s, &g, &catalog) {
                Ok(e) => {
                    assert!(fits, "{}: computed past its limit: {g:?}", a.name);
                    Some((e.bytes.peak, e.bytes.total_high, e.bytes.kv_cache))
                }
                Err(e) => {
                    assert!(!fits, "{}: {g:?} refused: {}", a.name, e.message);
                    None
                }
            }
        };
        let Some(small) = total(g(p, n, b)) else { return Ok(()) };
        for bigger in [g(p + dp, n, b), g(p, n + dn, b), g(p, n, b + db)] {
            if let Some(big) = total(bigger) {
                prop_assert!(big.0 >= small.0 && big.1 >= small.1 && big.2 >= small.2,
                    "{}: {small:?} > {big:?} for {bigger:?}", a.name);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// nanochat's `Engine.generate` (its own cache; one prompt, `b` rows): the peak, the
    /// verdict's high end and the cache never decrease with a longer prompt, more new tokens or
    /// more rows, in bfloat16 or float32, any window pattern and `sequence_len`; refused exactly
    /// past its rotary tables (`10 × sequence_len`).
    #[test]
    fn nanochat_generate_memory_never_decreases_with_context_or_rows(
        depth in 1u64..=8, pattern in 0usize..3, sequence in 64u64..=512, p in 1u64..=3000,
        dp in 0u64..=1000, n in 1u64..=1000, dn in 0u64..=1000, b in 1u64..=16,
        db in 0u64..=16, fp32 in any::<bool>(),
    ) {
        let catalog = GpuCatalog::builtin();
        let config = vramdoc::estimate::nanochat::GptConfig::from_depth(
            depth, 64, 128, sequence, ["L", "SL", "SSSL"][pattern]);
        let a = config.architecture("nanochat");
        let dtype = if fp32 { Dtype::Float32 } else { Dtype::Bfloat16 };
        let s = Scenario { dtype, compile: false, block_size: sequence, ..Scenario::default() };
        let g = |p: u64, n: u64, b: u64| Generation {
            prompt_tokens: p,
            max_new_tokens: n,
            batch_size: b,
            num_return_sequences: 1,
            do_sample: false,
            num_beams: 1,
            cache: CacheKind::Dynamic,
        };
        let total = |g: Generation| {
            let fits = g.prompt_tokens + g.max_new_tokens <= 10 * sequence;
            match estimate_generate(&a, &s, &g, &catalog) {
                Ok(e) => {
                    assert!(fits, "computed past the rotary tables: {g:?}");
                    Some((e.bytes.peak, e.bytes.total_high, e.bytes.kv_cache))
                }
                Err(e) => {
                    assert!(!fits, "{g:?} refused: {}", e.message);
                    None
                }
            }
        };
        let Some(small) = total(g(p, n, b)) else { return Ok(()) };
        for bigger in [g(p + dp, n, b), g(p, n + dn, b), g(p, n, b + db)] {
            if let Some(big) = total(bigger) {
                prop_assert!(big.0 >= small.0 && big.1 >= small.1 && big.2 >= small.2,
                    "{small:?} > {big:?} for {bigger:?}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Beam search (`num_beams > 1`, greedy, `num_return_sequences ≤ num_beams`, a dynamic or
    /// static cache): on every family, sliding windows included, the peak, the verdict's high
    /// end and the cache never decrease with a longer prompt, more new tokens, a bigger batch or
    /// more beams.
    #[test]
    fn beam_search_memory_never_decreases_with_context_batch_or_beams(
        which in 0usize..7, p in 1u64..=700, dp in 0u64..=300, n in 1u64..=300,
        dn in 0u64..=300, b in 1u64..=8, db in 0u64..=8, k in 2u64..=8, dk in 0u64..=8,
        r in 1u64..=8, dtype in dtype(), fixed in any::<bool>(),
    ) {
        let catalog = GpuCatalog::builtin();
        let (a, limit) = &families()[which];
        let s = Scenario { dtype, compile: false, ..Scenario::default() };
        let r = r.min(k);
        let g = |p: u64, n: u64, b: u64, k: u64| Generation {
            prompt_tokens: p,
            max_new_tokens: n,
            batch_size: b,
            num_return_sequences: r,
            do_sample: false,
            num_beams: k,
            cache: if fixed { CacheKind::Static } else { CacheKind::Dynamic },
        };
        let total = |g: Generation| {
            let bound = if a.family == Family::Llama { u64::MAX } else { *limit };
            let fits = g.prompt_tokens + g.max_new_tokens <= bound;
            match estimate_generate(a, &s, &g, &catalog) {
                Ok(e) => {
                    assert!(fits, "{}: computed: {g:?}", a.name);
                    Some((e.bytes.peak, e.bytes.total_high, e.bytes.kv_cache))
                }
                Err(e) => {
                    assert!(!fits, "{}: {g:?} refused: {}", a.name, e.message);
                    None
                }
            }
        };
        let Some(small) = total(g(p, n, b, k)) else { return Ok(()) };
        let bigger = [g(p + dp, n, b, k), g(p, n + dn, b, k), g(p, n, b + db, k), g(p, n, b, k + dk)];
        for bigger in bigger {
            if let Some(big) = total(bigger) {
                prop_assert!(big.0 >= small.0 && big.1 >= small.1 && big.2 >= small.2,
                    "{}: {small:?} > {big:?} for {bigger:?}", a.name);
            }
        }
    }
}
