//! `vramdoc diagnose` on generation errors that fail in the tensors each cache kind, window and
//! MLP adds (`estimate::generation_tensors`): Phi-3's fused `gate_up_proj` output, a sliding
//! window's mask in the prefill, a `StaticCache`'s preallocated layer, optimum-quanto's
//! quantized states, Gemma 2's eager scores; and the traceback frames of transformers 5.x and
//! 4.4x, nanoGPT and nanochat naming the phase. The messages are shaped as users paste them:
//! PyTorch 2.0's format, the newer one, log timestamps, rank prefixes, partial tracebacks. Every
//! expected size is computed here from the model's config.json.

use serde_json::Value;

use crate::diagnose_formats::diagnose_fixture;
use crate::support::SiteTest;

const MIB: u64 = 1 << 20;

/// The identified tensor of `fixture` under a generate scenario on card `gpu`: `--model M
/// --phase generate`, each of `sets` (`key=value`) as a `--set`.
fn identified(t: &SiteTest, fixture: &str, model: &str, gpu: &str, sets: &[&str]) -> Value {
    let mut args = vec!["--model", model, "--phase", "generate", "--gpu", gpu];
    for set in sets {
        args.extend(["--set", set]);
    }
    let v = diagnose_fixture(t, fixture, &args);
    assert_eq!(v["identified"]["phase"], "generation", "{fixture}: {v}");
    v["identified"].clone()
}

#[test]
fn phi3_failing_in_its_fused_gate_up_projection_in_pytorch_2_0s_format() {
    let t = SiteTest::new();
    let id = identified(
        &t,
        "hf_phi3_generate_gate_up_pt20",
        "phi-3-mini-4k",
        "rtx-4090",
        // No weights_dtype: the catalog's sourced torch_dtype, bfloat16, is what the run loaded.
        &["batch_size=32", "prompt_tokens=2048", "max_new_tokens=256"],
    );
    // gate_up_proj: hidden 3072 → 2 × intermediate 8192, for 32 prompts of 2048 tokens, bf16.
    let bytes = 32 * 2048 * (2 * 8192) * 2;
    assert_eq!(bytes, 2048 * MIB);
    assert_eq!(id["tensor"]["kind"], "prefill_gate_up");
    assert_eq!(id["tensor"]["shape"], "[32, 2048, 16384]");
    assert_eq!(id["tensor"]["bytes"], bytes);
    // `generate` and `_sample` (transformers 4.4x) name the phase.
    assert_eq!(id["phase_source"], "traceback");
}

#[test]
fn mistral_past_its_window_fails_in_the_sliding_masks_bias_behind_a_log_timestamp() {
    let t = SiteTest::new();
    let id = identified(
        &t,
        "hf_mistral_generate_sliding_mask",
        "mistral-7b-v0.1",
        "rtx-4090",
        // No weights_dtype: the catalog's sourced torch_dtype, bfloat16, is what the run loaded.
        &["batch_size=6", "prompt_tokens=6000", "max_new_tokens=64"],
    );
    // A 6,000-token prompt reaches the 4,096-token window: SDPA gets the [6000, 6000] mask,
    // made an additive bias per sequence in bf16, which the allocator rounds to 2 MiB.
    let bytes: u64 = 6 * 6000 * 6000 * 2;
    assert_eq!(bytes.div_ceil(2 * MIB) * 2 * MIB, 412 * MIB);
    assert_eq!(id["tensor"]["kind"], "sliding_mask_bias");
    assert_eq!(id["tensor"]["shape"], "[6, 1, 6000, 6000]");
    assert_eq!(id["tensor"]["bytes"], bytes);
    assert_eq!(id["phase_source"], "traceback");
}

#[test]
fn a_static_cache_fails_preallocating_a_layer_from_a_partial_traceback() {
    let t = SiteTest::new();
    let id = identified(
        &t,
        "hf_llama_generate_static_cache",
        "llama-3.1-8b",
        "rtx-4090",
        &[
            "batch_size=8",
            "prompt_tokens=8000",
            "max_new_tokens=192",
            "kv_cache=static",
        ],
    );
    // lazy_initialization's torch.zeros: 8 sequences × 8 KV heads × (8000 + 192 − 1) slots ×
    // head dim 4096 / 32 = 128, bf16.
    let bytes: u64 = 8 * 8 * 8191 * 128 * 2;
    assert_eq!(bytes.div_ceil(2 * MIB) * 2 * MIB, 128 * MIB);
    assert_eq!(id["tensor"]["kind"], "static_cache_layer");
    assert_eq!(id["tensor"]["shape"], "[8, 8, 8191, 128]");
    // Only the cache's frames were pasted: `self.keys = torch.zeros(` names generation.
    assert_eq!(id["phase_source"], "traceback");
}

#[test]
fn a_quantized_cache_fails_quantizing_its_returned_keys_behind_rank_prefixes() {
    let t = SiteTest::new();
    let id = identified(
        &t,
        "hf_llama_generate_quanto_flush",
        "llama-3.2-1b",
        "l4",
        &[
            "batch_size=64",
            "prompt_tokens=4096",
            "max_new_tokens=512",
            "kv_cache=quantized",
        ],
    );
    // quanto's quantize_affine writes one byte per element: 64 × 8 KV heads × t × 64 bytes,
    // 32 KiB a token; 128.12 MiB (printed to the hundredth) is 4,100 tokens, the only count
    // between the prompt and the last token within the message's rounding.
    let per_token = 64 * 8 * 64;
    assert_eq!(4100 * per_token, 128 * MIB + MIB / 8);
    assert_eq!(id["tensor"]["kind"], "quantized_cache_flush");
    assert_eq!(id["tensor"]["shape"], "[64, 8, 4100, 64]");
    assert_eq!(id["tensor"]["dtype"], "uint8");
    assert_eq!(id["tensor"]["bytes"], 4100 * per_token);
}

#[test]
fn gemma_2s_eager_prefill_fails_in_its_float32_scores() {
    let t = SiteTest::new();
    let id = identified(
        &t,
        "hf_gemma2_generate_eager_scores",
        "gemma-2-2b",
        "t4",
        &[
            "batch_size=6",
            "prompt_tokens=4096",
            "max_new_tokens=64",
            "flash=False",
            "dtype=float16",
        ],
    );
    // Eager softmax in float32: 6 sequences × 8 heads × 4096 queries × 4096 keys × 4 bytes.
    let bytes: u64 = 6 * 8 * 4096 * 4096 * 4;
    assert_eq!(bytes, 3 * 1024 * MIB);
    assert_eq!(id["tensor"]["kind"], "prefill_attention_scores_fp32");
    assert_eq!(id["tensor"]["shape"], "[6, 8, 4096, 4096]");
    assert_eq!(id["tensor"]["dtype"], "float32");
}

#[test]
fn generation_frames_of_every_version_and_code_base_name_the_phase() {
    let t = SiteTest::new();
    // transformers 4.4x building a HybridCache under `_get_cache` (PyTorch 2.0's format, a
    // partial traceback), nanochat's Engine preallocating its KVCache: no scenario, the phase
    // from the traceback alone.
    for name in [
        "hf_gemma2_static_hybrid_init_pt20",
        "nanochat_engine_generate",
        "hf_llama_generate_static_cache",
        "hf_llama_generate_quanto_flush",
    ] {
        let v = diagnose_fixture(&t, name, &[]);
        // The keys asked for are a generation run's, not a training step's.
        let keys: Vec<&str> = v["missing_keys"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert!(
            keys.contains(&"prompt_tokens") && !keys.contains(&"block_size"),
            "{name}: {keys:?}"
        );
    }
    // A generation error read against a training scenario is matched to no training tensor.
    let v = diagnose_fixture(
        &t,
        "hf_phi3_generate_gate_up_pt20",
        &["--model", "phi-3-mini-4k", "--set", "batch_size=2"],
    );
    assert_eq!(v["identified"]["generation_not_modelled"], true, "{v}");
}

#[test]
fn the_text_names_the_new_tensors_in_each_language() {
    let t = SiteTest::new();
    t.file(
        "oom.txt",
        &crate::diagnose_formats::fixture("hf_mistral_generate_sliding_mask"),
    );
    for (lang, words) in [
        ("en", "additive bias for SDPA"),
        ("es", "sesgo aditivo para SDPA"),
        ("zh", "加性偏置"),
    ] {
        let r = t.run(&[
            "diagnose",
            "oom.txt",
            "--model",
            "mistral-7b-v0.1",
            "--phase",
            "generate",
            "--set",
            "batch_size=6",
            "--set",
            "prompt_tokens=6000",
            "--set",
            "max_new_tokens=64",
            "--gpu",
            "rtx-4090",
            "--lang",
            lang,
        ]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains(words), "{lang}\n{}", r.stdout);
    }
}
