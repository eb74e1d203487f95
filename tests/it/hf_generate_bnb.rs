//! Hugging Face `generate` with bitsandbytes-quantized weights (`load_in_4bit`: NF4/FP4, with or
//! without double quantization, any compute dtype; `load_in_8bit`: LLM.int8()) through the real
//! CLI, against `tests/data/hf_generate_bnb_replay.json` (`tools/hf_replay/replay_generate_bnb.py`:
//! every Llama-family catalog model with 2 of its layers in NF4 and in int8, GPT-2 124M, Llama
//! 3.2 1B's shape in the other settings, Gemma 2/3 and the mixtures of experts, whose experts stay
//! unquantized): the weights and the KV cache to the byte, the prefill and decode peaks within
//! 1 %. And what bitsandbytes refuses is refused by name.

use serde::Deserialize;
use serde_json::Value;

use crate::hf_generate_catalog::generate_json;
use crate::support::SiteTest;

#[derive(Deserialize)]
struct Replay {
    transformers: String,
    runs: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    run: Run,
    weights_bytes: u64,
    prefill_peak_bytes: u64,
    decode_peak_bytes: u64,
    kv_cache_bytes: u64,
}

#[derive(Deserialize)]
struct Run {
    name: String,
    family: String,
    config: Vec<(String, Value)>,
    prompt_tokens: u64,
    max_new_tokens: u64,
    batch_size: u64,
    cache: String,
    dtype: String,
    weights_quant: String,
    double_quant: bool,
    compute_dtype: String,
}

fn replay() -> Replay {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/hf_generate_bnb_replay.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The `--set` values of a run's generation and quantization.
fn sets(r: &Run) -> Vec<String> {
    let mut out = vec![
        format!("prompt_tokens={}", r.prompt_tokens),
        format!("max_new_tokens={}", r.max_new_tokens),
        format!("batch_size={}", r.batch_size),
        format!("kv_cache={}", r.cache),
        format!("dtype={}", r.dtype),
    ];
    if r.weights_quant == "int8" {
        out.push("load_in_8bit=true".into());
    } else {
        out.extend([
            "load_in_4bit=true".into(),
            format!("bnb_4bit_quant_type={}", r.weights_quant),
            format!("bnb_4bit_use_double_quant={}", r.double_quant),
            format!("bnb_4bit_compute_dtype={}", r.compute_dtype),
        ]);
    }
    out
}

fn u(v: &Value, key: &str) -> u64 {
    v["bytes"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} in {v}"))
}

#[test]
fn every_quantized_generate_replay_matches_weights_and_cache_exactly_and_peaks_within_one_percent()
{
    let replay = replay();
    assert_eq!(replay.transformers, "5.24.0");
    assert!(replay.runs.len() >= 60, "{} runs", replay.runs.len());
    let t = SiteTest::new();
    let mut worst = (0.0f64, String::new());
    let mut wrong = Vec::new();
    for e in &replay.runs {
        let r = &e.run;
        let model = if r.family == "gpt2" && r.config.is_empty() {
            "gpt2".to_owned()
        } else {
            let mut file: serde_json::Map<String, Value> = r.config.iter().cloned().collect();
            file.insert("model_type".into(), r.family.clone().into());
            let rel = format!("models/{}/config.json", r.name);
            t.file(&rel, &serde_json::to_string(&file).unwrap());
            rel
        };
        let v = generate_json(&t, &model, &sets(r));
        let name = &r.name;
        assert_eq!(u(&v, "weights"), e.weights_bytes, "{name}: weights");
        assert_eq!(u(&v, "kv_cache_at_end"), e.kv_cache_bytes, "{name}: cache");
        for (what, est, replayed) in [
            ("prefill", u(&v, "prefill_peak"), e.prefill_peak_bytes),
            ("decode", u(&v, "decode_peak"), e.decode_peak_bytes),
        ] {
            let off = (est as f64 - replayed as f64) / replayed as f64;
            if off.abs() >= 0.01 {
                wrong.push(format!("{name}: {what} {off:+.4} ({est} vs {replayed})"));
            }
            if off.abs() > worst.0 {
                worst = (off.abs(), format!("{name} {what}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    eprintln!("worst: {:.3} % ({})", worst.0 * 100.0, worst.1);
}

/// Every Llama-family catalog model is among the runs, in both formats.
#[test]
fn every_llama_family_catalog_model_is_replayed_in_nf4_and_int8() {
    let replay = replay();
    for file in ["llama.yaml", "mistral.yaml", "qwen.yaml", "phi3.yaml"] {
        let path = format!("{}/data/models/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(path).unwrap();
        for line in text.lines() {
            let Some(id) = line.trim().strip_prefix("- id: ") else {
                continue;
            };
            for quant in ["nf4", "int8"] {
                let prefix = format!("{id}-2l-{quant}-");
                assert!(
                    replay.runs.iter().any(|e| e.run.name.starts_with(&prefix)),
                    "{id} not replayed in {quant}"
                );
            }
        }
    }
}

/// `vramdoc estimate --model MODEL --phase generate` of 512 + 64 tokens with `sets`, which must
/// fail; its error.
fn refused(t: &SiteTest, model: &str, sets: &[&str]) -> String {
    let mut args = vec!["estimate", "--model", model, "--phase", "generate"];
    args.extend(["--prompt_tokens=512", "--max_new_tokens=64"]);
    for s in sets {
        args.extend(["--set", s]);
    }
    let r = t.run(&args);
    assert_ne!(r.code, 0, "{args:?}");
    r.stderr
}

/// Both formats at once are refused as BitsAndBytesConfig refuses them; nanochat (not a
/// transformers model) takes no bitsandbytes key.
#[test]
fn both_formats_or_a_model_outside_transformers_is_refused_by_name() {
    let t = SiteTest::new();
    let both = ["load_in_4bit=true", "load_in_8bit=true"];
    let err = refused(&t, "llama-3.1-8b", &both);
    assert!(err.contains("pick one"), "{err}");
    let err = refused(&t, "nanochat-d20", &["load_in_4bit=true"]);
    assert!(err.contains("`load_in_4bit`"), "{err}");
}

/// Llama 3.1 8B's weights in NF4 with double quantization, by hand: per layer `q` and `o`
/// (4096 × 4096), `k` and `v` (1024 × 4096), `gate`, `up` and `down` (14336 × 4096) packed two to
/// a byte, a uint8 absmax per 64 elements, a float32 absmax per 256 of those, the dynamic map's
/// copy (1 KiB), the mean (4 bytes) and the 4-bit code (64 bytes); the embeddings and the untied
/// head (128256 × 4096), the norms and RoPE's two `inv_freq` buffers in bfloat16/float32; the
/// dynamic map once (1 KiB). In LLM.int8(): a byte per element and a float32 per output row.
#[test]
fn llama_3_1_8b_weights_in_nf4_and_int8_by_hand() {
    let t = SiteTest::new();
    let four = |n: u64| n / 2 + n / 64 + (n / 64).div_ceil(256) * 4 + 1024 + 4 + 64;
    let shapes = [
        (4096u64, 4096u64),
        (1024, 4096),
        (1024, 4096),
        (4096, 4096),
        (14336, 4096),
        (14336, 4096),
        (4096, 14336),
    ];
    let rest = 2 * 128_256 * 4096 * 2 + (2 * 32 + 1) * 4096 * 2 + 128 * 4;
    let nf4: u64 = 32 * shapes.iter().map(|(o, i)| four(o * i)).sum::<u64>() + rest + 1024;
    let int8: u64 = 32 * shapes.iter().map(|(o, i)| o * i + o * 4).sum::<u64>() + rest;
    let nf4_sets = [
        "load_in_4bit=true",
        "bnb_4bit_quant_type=nf4",
        "bnb_4bit_use_double_quant=true",
    ];
    for (sets, want) in [(&nf4_sets[..], nf4), (&["load_in_8bit=true"][..], int8)] {
        let sets: Vec<String> = sets.iter().map(|s| (*s).to_owned()).collect();
        let v = generate_json(&t, "llama-3.1-8b", &sets);
        assert_eq!(u(&v, "weights"), want, "{sets:?}");
        assert_eq!(
            v["weights_quantization"],
            if want == nf4 { "nf4" } else { "int8" }
        );
    }
    // 5.3 GiB and 8.5 GiB, against 15.0 GiB in bfloat16.
    assert_eq!(nf4 / (1 << 20), 5_438);
    assert_eq!(int8 / (1 << 20), 8_665);
}

/// What the quantized weights' estimate assumes is said beside them, in every language: the
/// outlier columns LLM.int8() finds, and the 4-bit kernel a GPU picks for mid-sized calls.
#[test]
fn the_quantized_weights_row_says_what_it_assumes() {
    let t = crate::support::SiteTest::new();
    for (lang, int8, four) in [
        (
            "en",
            "64 outlier columns assumed",
            "counts the dequantizing fallback",
        ),
        (
            "es",
            "se suponen 64 columnas atípicas",
            "cuenta la alternativa que descuantiza",
        ),
        ("zh", "假定每次调用有 64 个离群列", "反量化回退路径"),
    ] {
        for (flag, words) in [("--load_in_8bit=true", int8), ("--load_in_4bit=true", four)] {
            let r = t.run(&[
                "estimate",
                "--model",
                "llama-3.2-1b",
                "--phase",
                "generate",
                flag,
                "--gpu",
                "rtx-4070",
                "--lang",
                lang,
            ]);
            assert_eq!(r.code, 0, "{lang} {flag}: {}", r.stderr);
            assert!(r.stdout.contains(words), "{lang} {flag}: {}", r.stdout);
        }
    }
}
