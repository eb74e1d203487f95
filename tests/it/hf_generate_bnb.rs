//! Hugging Face `generate` with bitsandbytes-quantized weights (`load_in_4bit`: NF4/FP4, with or
//! without double quantization, any compute dtype; `load_in_8bit`: LLM.int8()) through the real
//! CLI, against `tests/data/hf_generate_bnb_replay.json` (`tools/hf_replay/replay_generate_bnb.py`:
//! every Llama-family catalog model with 2 of its layers in NF4 and in int8, GPT-2 124M, Llama
//! 3.2 1B's shape in the other settings): the weights and the KV cache to the byte, the prefill
//! and decode peaks within 1 %. And what is not replayed is refused by name.

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
        let model = if r.family == "gpt2" {
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

/// Families whose quantized generate is not replayed are refused at the key, with the reason;
/// both formats at once are refused as BitsAndBytesConfig refuses them.
#[test]
fn quantized_generate_outside_the_replays_is_refused_by_name() {
    let t = SiteTest::new();
    for (model, key) in [
        ("mixtral-8x7b", "load_in_4bit=true"),
        ("gemma-2-2b", "load_in_8bit=true"),
    ] {
        let err = refused(&t, model, &[key]);
        let name = key.split('=').next().unwrap();
        assert!(err.contains(&format!("`{name}`")), "{model}: {err}");
        assert!(
            err.contains("replayed for GPT-2 and Llama-family"),
            "{model}: {err}"
        );
    }
    let both = ["load_in_4bit=true", "load_in_8bit=true"];
    let err = refused(&t, "llama-3.1-8b", &both);
    assert!(err.contains("pick one"), "{err}");
}
