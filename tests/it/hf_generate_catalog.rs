//! Every Llama-family catalog model (`data/models/llama.yaml`, `mistral.yaml`, `qwen.yaml`,
//! `phi3.yaml`) has a replay-checked Hugging Face `generate` estimate, through the real CLI.
//!
//! `tools/hf_replay/catalog_runs.py` replays each model's own config with 2 of its layers (every
//! block is the same: the widths, heads, vocabulary, biases, QK-norm, fused projections and
//! sliding window are the model's) with a dynamic and a static cache, and, where the model has a
//! sliding window within its positions, a context ending exactly at the window and a prompt half
//! a window past it with each cache (the masked prefill, the cache cut to the window). Here each
//! model's
//! runs are found, their config checked to be the catalog's but for the layer count, and
//! `vramdoc estimate --model config.json --phase generate` of that config held to them: the KV
//! cache to the byte, the prefill and decode peaks within 1 %, the parameters exactly. The full
//! model (`--model ID`) computes with both caches, past a sliding window too. And optimum-quanto's
//! int4/int2, HQQ's int8 and transformers' fp8 caches compute; on GPT-2 they are refused.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::support::SiteTest;

#[derive(Deserialize)]
struct Catalog {
    models: Vec<CatalogModel>,
}

#[derive(Deserialize)]
struct CatalogModel {
    id: String,
    config: Map<String, Value>,
}

#[derive(Deserialize)]
struct Replay {
    runs: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    run: Run,
    params: u64,
    prefill_peak_bytes: u64,
    decode_peak_bytes: u64,
    kv_cache_bytes: u64,
}

#[derive(Deserialize)]
struct Run {
    name: String,
    #[serde(default)]
    family: String,
    #[serde(default)]
    config: Vec<(String, Value)>,
    #[serde(default)]
    model: String,
    prompt_tokens: u64,
    max_new_tokens: u64,
    batch_size: u64,
    cache: String,
    dtype: String,
}

const FILES: [&str; 4] = ["llama.yaml", "mistral.yaml", "qwen.yaml", "phi3.yaml"];

fn catalog() -> Vec<CatalogModel> {
    FILES
        .iter()
        .flat_map(|f| {
            let path = format!("{}/data/models/{f}", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(path).unwrap();
            yaml_serde::from_str::<Catalog>(&text).unwrap().models
        })
        .collect()
}

fn replay() -> Replay {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/hf_generate_replay.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `vramdoc estimate ARGS --phase generate --format json`, which must succeed.
pub(crate) fn generate_json(t: &SiteTest, model: &str, sets: &[String]) -> Value {
    let mut args = vec!["estimate", "--model", model, "--phase", "generate"];
    for s in sets {
        args.extend(["--set", s.as_str()]);
    }
    args.extend(["--format", "json"]);
    let r = t.run(&args);
    assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

fn u(v: &Value, path: &[&str]) -> u64 {
    let mut at = v;
    for p in path {
        at = &at[*p];
    }
    at.as_u64().unwrap_or_else(|| panic!("{path:?} in {v}"))
}

/// A config without the keys a reduced-layer replay changes or moves out.
fn shape(config: &Map<String, Value>) -> Map<String, Value> {
    let mut c = config.clone();
    c.remove("num_hidden_layers");
    c.remove("model_type");
    // The replays load the dtype each run names.
    c.remove("torch_dtype");
    c
}

/// The model's sliding window, when it has one within its positions (the window is reachable).
fn reachable_window(config: &Map<String, Value>) -> Option<u64> {
    let w = config.get("sliding_window")?.as_u64()?;
    (w <= config["max_position_embeddings"].as_u64()?).then_some(w)
}

#[test]
fn every_llama_family_catalog_model_is_held_to_its_reduced_layer_generate_replays() {
    let models = catalog();
    assert!(models.len() >= 29, "{} models", models.len());
    let replay = replay();
    let t = SiteTest::new();
    let mut worst = (0.0f64, String::new());
    for m in &models {
        let runs: Vec<&Entry> = replay.runs.iter().filter(|e| e.run.model == m.id).collect();
        let caches: Vec<&str> = runs.iter().map(|e| e.run.cache.as_str()).collect();
        assert!(
            caches.contains(&"dynamic") && caches.contains(&"static"),
            "{}: replayed with {caches:?}",
            m.id
        );
        if let Some(w) = reachable_window(&m.config) {
            // The context that ends exactly at the window, with both caches.
            let at_window = runs
                .iter()
                .filter(|e| e.run.prompt_tokens + e.run.max_new_tokens == w)
                .count();
            assert_eq!(at_window, 2, "{}: runs at its window of {w}", m.id);
            assert!(
                runs.iter().any(|e| e.run.prompt_tokens > w),
                "{}: no run past its window of {w}",
                m.id
            );
        }
        for e in runs {
            let r = &e.run;
            let config: Map<String, Value> = r.config.iter().cloned().collect();
            assert_eq!(
                shape(&config),
                shape(&m.config),
                "{}: not the catalog's",
                r.name
            );
            assert_eq!(Value::from(r.family.clone()), m.config["model_type"]);
            let layers = config["num_hidden_layers"].as_u64().unwrap();
            assert!(layers <= m.config["num_hidden_layers"].as_u64().unwrap());
            let mut file = config.clone();
            file.insert("model_type".into(), r.family.clone().into());
            let rel = format!("models/{}/config.json", r.name);
            t.file(&rel, &serde_json::to_string(&file).unwrap());
            let v = generate_json(
                &t,
                &rel,
                &[
                    format!("prompt_tokens={}", r.prompt_tokens),
                    format!("max_new_tokens={}", r.max_new_tokens),
                    format!("batch_size={}", r.batch_size),
                    format!("kv_cache={}", r.cache),
                    format!("dtype={}", r.dtype),
                ],
            );
            let name = &r.name;
            assert_eq!(u(&v, &["params", "total"]), e.params, "{name}");
            assert_eq!(
                u(&v, &["bytes", "kv_cache_at_end"]),
                e.kv_cache_bytes,
                "{name}"
            );
            for (what, est, replayed) in [
                (
                    "prefill",
                    u(&v, &["bytes", "prefill_peak"]),
                    e.prefill_peak_bytes,
                ),
                (
                    "decode",
                    u(&v, &["bytes", "decode_peak"]),
                    e.decode_peak_bytes,
                ),
            ] {
                let off = (est as f64 - replayed as f64) / replayed as f64;
                assert!(off.abs() < 0.01, "{name}: {what} {off:+.4}");
                if off.abs() > worst.0 {
                    worst = (off.abs(), format!("{name} {what}"));
                }
            }
        }
    }
    eprintln!("worst: {:.3} % ({})", worst.0 * 100.0, worst.1);
}

#[test]
fn every_llama_family_catalog_model_computes_generate_with_both_caches() {
    let t = SiteTest::new();
    for m in catalog() {
        for cache in ["dynamic", "static"] {
            let v = generate_json(&t, &m.id, &[format!("kv_cache={cache}")]);
            // The defaults: one 512-token prompt, 500 new tokens, the weights in the model's own
            // dtype (from_pretrained's dtype="auto": the catalog's torch_dtype, float32 where it
            // has none). The cache ends holding 1011 tokens in every layer (no window is
            // passed): 2·layers·kv_heads·head_dim·tokens·e bytes, plus a static layer's or a
            // sliding layer's 8-byte counter.
            let c = &m.config;
            let e = match c.get("torch_dtype").and_then(Value::as_str) {
                Some("bfloat16" | "float16") => 2,
                _ => 4,
            };
            let heads = c["num_attention_heads"].as_u64().unwrap();
            let head_dim = c
                .get("head_dim")
                .and_then(Value::as_u64)
                .unwrap_or(c["hidden_size"].as_u64().unwrap() / heads);
            let kv_heads = c["num_key_value_heads"].as_u64().unwrap();
            let layers = c["num_hidden_layers"].as_u64().unwrap();
            let windowed = c.get("sliding_window").is_some_and(|w| !w.is_null());
            let counter = if cache == "static" || windowed { 8 } else { 0 };
            let expected = layers * (2 * kv_heads * head_dim * 1011 * e + counter);
            assert_eq!(
                u(&v, &["bytes", "kv_cache_at_end"]),
                expected,
                "{} {cache}",
                m.id
            );
            assert!(u(&v, &["bytes", "peak"]) > u(&v, &["bytes", "weights"]) + expected);
        }
    }
}

#[test]
fn both_caches_compute_past_a_sliding_window() {
    let t = SiteTest::new();
    // Phi-3 mini 4k: every layer slides over 2047 tokens; 32 layers of 32 heads of 96.
    let at = |prompt: u64, cache: &str| {
        let sets = [
            format!("prompt_tokens={prompt}"),
            format!("kv_cache={cache}"),
            "max_new_tokens=47".to_owned(),
            "weights_dtype=bfloat16".to_owned(),
        ];
        generate_json(&t, "phi-3-mini-4k", &sets)
    };
    let per_token = 2 * 32 * 96 * 2u64;
    // Within the window the static slots are the whole context (2000 + 47 − 1 tokens); past it
    // they stop at the window, and each layer keeps an 8-byte counter.
    let within = at(2000, "static");
    assert_eq!(
        u(&within, &["bytes", "kv_cache"]),
        32 * (per_token * 2046 + 8)
    );
    let past = at(3000, "static");
    assert_eq!(
        u(&past, &["bytes", "kv_cache"]),
        32 * (per_token * 2047 + 8)
    );
    // The dynamic cache holds the whole prompt after the prefill (its largest), then the window.
    let dynamic = at(3000, "dynamic");
    assert_eq!(
        u(&dynamic, &["bytes", "kv_cache"]),
        32 * (per_token * 3000 + 8)
    );
    assert_eq!(
        u(&dynamic, &["bytes", "kv_cache_at_end"]),
        32 * (per_token * 2047 + 8)
    );
    // The masked prefill outgrows the unmasked one: more than the 1000 tokens' MLP alone.
    assert!(u(&past, &["bytes", "prefill_peak"]) > u(&within, &["bytes", "prefill_peak"]));
}

#[test]
fn the_quantized_and_fp8_caches_compute_and_the_others_are_refused_naming_what_is_replayed() {
    let t = SiteTest::new();
    // Llama 3.2 1B in bfloat16, a 512-token prompt and 500 new tokens: 499 decoding steps leave 115 tokens
    // in the full-precision residual (499 mod 128) and 896 quantized. Per layer and token,
    // keys and values are 2 × 8 heads × 64 = 1,024 elements: int4 packs two in a byte, and every
    // group of 64 has a bf16 scale and shift.
    let per_layer = |bits: u64| 1024 * 896 * bits / 8 + 1024 * 896 / 64 * 4 + 1024 * 115 * 2;
    for (cache, bits) in [("quantized", 4), ("quantized_int2", 2)] {
        let sets = [
            format!("kv_cache={cache}"),
            "weights_dtype=bfloat16".to_owned(),
        ];
        let v = generate_json(&t, "llama-3.2-1b", &sets);
        assert_eq!(u(&v, &["bytes", "kv_cache_at_end"]), 16 * per_layer(bits));
    }
    // transformers' fp8 cache: a byte per element of the 1,011 tokens, a float32 scale per
    // layer's keys and values.
    let v = generate_json(&t, "llama-3.2-1b", &["kv_cache=fp8".to_owned()]);
    assert_eq!(
        u(&v, &["bytes", "kv_cache_at_end"]),
        16 * (1024 * 1011 + 2 * 4)
    );
    // HQQ's int8: a byte an element, a scale and zero per 64 in the weights' dtype (bfloat16
    // here, so 2 bytes each), 115 tokens in full precision.
    let v = generate_json(
        &t,
        "llama-3.2-1b",
        &[
            "kv_cache=quantized_int8".to_owned(),
            "weights_dtype=bfloat16".to_owned(),
        ],
    );
    assert_eq!(
        u(&v, &["bytes", "kv_cache_at_end"]),
        16 * (1024 * 896 + 1024 * 896 / 64 * 4 + 1024 * 115 * 2)
    );
    // fp8 on GPT-2, and any quantized cache beside sliding-window layers: refused.
    for (model, cache, words) in [
        (
            "gpt2",
            "quantized_int8",
            "replayed on Llama-family models only",
        ),
        ("gpt2", "fp8", "replayed on Llama-family models only"),
        (
            "mistral-7b-v0.1",
            "quantized",
            "only models whose every layer is full attention",
        ),
    ] {
        let set = format!("kv_cache={cache}");
        let r = t.run(&[
            "estimate", "--model", model, "--phase", "generate", "--set", &set,
        ]);
        assert_ne!(r.code, 0);
        assert!(r.stderr.contains(words), "{cache}: {}", r.stderr);
    }
}
