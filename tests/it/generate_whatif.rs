//! The options of a Hugging Face `generate` estimate through the real CLI (issue 22, item 5):
//! each option's figures are the CLI's own estimate of the changed settings, in the ranking
//! order (cache class, 16-bit weights, fewer sequences, shorter context), with their verdicts;
//! the shorter context's KV cache against independent arithmetic; the table and Markdown in
//! every language, with the note on what is not computed.

use crate::support::SiteTest;
use serde_json::Value;

/// `vramdoc estimate --model MODEL --phase generate --KEY=VALUE… --gpu rtx-3060-12gb`, with
/// `extra` arguments (`--format json`, `--lang es`).
fn run(t: &SiteTest, model: &str, settings: &[(String, String)], extra: &[&str]) -> String {
    let flags: Vec<String> = settings.iter().map(|(k, v)| format!("--{k}={v}")).collect();
    let mut all = vec![
        "estimate",
        "--model",
        model,
        "--phase",
        "generate",
        "--gpu",
        "rtx-3060-12gb",
    ];
    all.extend(flags.iter().map(String::as_str));
    all.extend_from_slice(extra);
    let r = t.run(&all);
    assert_eq!(r.code, 0, "{all:?}: {}", r.stderr);
    r.stdout
}

fn json(t: &SiteTest, model: &str, settings: &[(String, String)]) -> Value {
    serde_json::from_str(&run(t, model, settings, &["--format", "json"])).unwrap()
}

fn settings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The settings with an option's changes applied (each key replaced or added).
fn changed(base: &[(String, String)], option: &Value) -> Vec<(String, String)> {
    let mut out = base.to_vec();
    for c in option["changes"].as_array().unwrap() {
        let (key, value) = (c["key"].as_str().unwrap(), c["value"].as_str().unwrap());
        out.retain(|(k, _)| k != key);
        out.push((key.to_owned(), value.to_owned()));
    }
    out
}

/// Each option's kind, in order, after checking that its figures are the CLI's own estimate of
/// its settings.
fn checked_kinds(t: &SiteTest, model: &str, base: &[(String, String)]) -> Vec<String> {
    let v = json(t, model, base);
    let total = v["bytes"]["total"].as_i64().unwrap();
    let options = v["what_if"].as_array().unwrap();
    for o in options {
        let e = json(t, model, &changed(base, o));
        let kind = &o["kind"];
        assert_eq!(o["total"], e["bytes"]["total"], "{kind}");
        assert_eq!(o["total_low"], e["bytes"]["total_low"], "{kind}");
        assert_eq!(o["total_high"], e["bytes"]["total_high"], "{kind}");
        assert_eq!(o["kv_cache"], e["bytes"]["kv_cache"], "{kind}");
        assert_eq!(o["peak"], e["bytes"]["peak"], "{kind}");
        assert_eq!(o["verdict"], e["verdict"], "{kind}");
        assert_eq!(o["fits"], e["fits"], "{kind}");
        assert_eq!(o["generation"], e["generation"], "{kind}");
        let saving = total - e["bytes"]["total"].as_i64().unwrap();
        assert_eq!(o["saving_bytes"].as_i64().unwrap(), saving, "{kind}");
    }
    options
        .iter()
        .map(|o| o["kind"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn gpt2_options_are_the_clis_own_estimates_in_ranking_order() {
    let t = SiteTest::new();
    let base = settings(&[
        ("prompt_tokens", "512"),
        ("max_new_tokens", "500"),
        ("batch_size", "512"),
        ("dtype", "float32"),
    ]);
    assert_eq!(
        checked_kinds(&t, "gpt2", &base),
        [
            "static_cache",
            "dtype",
            "int8_weights",
            "four_bit_weights",
            "smaller_batch",
            "max_batch",
            "fewer_new_tokens"
        ]
    );
    let v = json(&t, "gpt2", &base);
    assert_eq!(v["verdict"], "does_not_fit");
    let o = &v["what_if"];
    // The preallocated cache needs more; the largest batch is the solver's and fits.
    assert!(o[0]["saving_bytes"].as_i64().unwrap() < 0);
    assert_eq!(o[1]["changes"][0]["value"], "bfloat16");
    // bitsandbytes' LLM.int8() and NF4 Linears (float32 elsewhere): less, not enough.
    assert_eq!(o[2]["changes"][0]["key"], "load_in_8bit");
    assert_eq!(o[3]["changes"][0]["key"], "load_in_4bit");
    assert_eq!(o[3]["changes"][3]["value"], "float32");
    for i in [2, 3] {
        assert!(o[i]["saving_bytes"].as_i64().unwrap() > 0);
        assert_eq!(o[i]["verdict"], "does_not_fit");
    }
    assert_eq!(o[4]["generation"]["batch_size"], 256);
    let b = o[5]["generation"]["batch_size"].as_u64().unwrap();
    assert_eq!(o[5]["verdict"], "fits");
    let mut one_more = base.clone();
    one_more.retain(|(k, _)| k != "batch_size");
    one_more.push(("batch_size".into(), (b + 1).to_string()));
    assert_ne!(json(&t, "gpt2", &one_more)["verdict"], "fits");
    assert_eq!(o[6]["generation"]["max_new_tokens"], 250);
    // No quantized cache on GPT-2 (transformers' QuantizedCache is replayed on Llama only).
    let text = o.to_string();
    assert!(
        !text.contains("quantized") && !text.contains("fp8"),
        "{text}"
    );
}

#[test]
fn a_static_cache_and_returned_sequences_give_the_dynamic_cache_and_fewer_sequences() {
    let t = SiteTest::new();
    // Weights in bfloat16 (GPT-2's own are float32): the dtype option is not the point here.
    let base = settings(&[
        ("prompt_tokens", "256"),
        ("max_new_tokens", "100"),
        ("num_return_sequences", "8"),
        ("kv_cache", "static"),
        ("dtype", "bfloat16"),
    ]);
    assert_eq!(
        checked_kinds(&t, "gpt2", &base),
        [
            "dynamic_cache",
            "int8_weights",
            "four_bit_weights",
            "fewer_sequences",
            "fewer_new_tokens"
        ]
    );
}

#[test]
fn a_long_llama_context_is_cut_to_the_longest_that_fits_with_its_kv_cache_by_hand() {
    let t = SiteTest::new();
    let base = settings(&[
        ("prompt_tokens", "30000"),
        ("max_new_tokens", "1000"),
        ("batch_size", "4"),
        ("dtype", "float32"),
    ]);
    // One prompt does not fit, so no batch from the solver.
    assert_eq!(
        checked_kinds(&t, "llama-3.2-1b", &base),
        [
            "static_cache",
            "dtype",
            "int8_weights",
            "int8_cache",
            "fp8_cache",
            "quantized_cache",
            "four_bit_weights",
            "smaller_batch",
            "fewer_new_tokens",
            "max_context"
        ]
    );
    let v = json(&t, "llama-3.2-1b", &base);
    let o = &v["what_if"];
    // The static cache, grouped heads as they are: 2 × 16 layers × 8 KV heads × 64 head dim ×
    // (30,000 + 1,000 − 1) tokens × 4 bytes × 4, and each layer's 8-byte counter.
    assert_eq!(
        o[0]["kv_cache"],
        2 * 16 * 8 * 64 * 30_999 * 4 * 4u64 + 16 * 8
    );
    // optimum-quanto's int4 cache at its largest, the step before the last flush (step 895 of
    // 999): 30,768 tokens quantized (half a byte an element, a float32 scale and shift per 64)
    // and 127 in full precision, 2 × 4 sequences × 8 KV heads × 64 elements a token, 16 layers.
    let per_token = 2 * 4 * 8 * 64u64;
    // HQQ's int8 cache at its largest, at the end (a byte an element outweighs quanto's half):
    // 30,896 tokens quantized (a float32 scale and zero per 64 elements), 103 (999 mod 128) in
    // full precision.
    assert_eq!(
        o[3]["kv_cache"],
        16 * (per_token * 30_896 + per_token * 30_896 / 64 * 8 + per_token * 103 * 4)
    );
    // transformers' fp8 cache: a byte an element, a float32 scale per layer's keys and values.
    assert_eq!(o[4]["kv_cache"], 16 * (per_token * 30_999 + 8));
    assert_eq!(
        o[5]["kv_cache"],
        16 * (per_token * 30_768 / 2 + per_token * 30_768 / 64 * 8 + per_token * 127 * 4)
    );
    // 2 × 16 layers × 8 KV heads × 64 head dim × (30,000 + 500 − 1) tokens × 4 bytes × 4.
    assert_eq!(o[8]["kv_cache"], 2 * 16 * 8 * 64 * 30_499 * 4 * 4u64);
    let cut = &o[9];
    assert_eq!(cut["verdict"], "fits");
    assert_eq!(cut["changes"][0]["key"], "prompt_tokens");
    let p = cut["generation"]["prompt_tokens"].as_u64().unwrap();
    assert!(p < 30_000);
    assert_eq!(cut["kv_cache"], 2 * 16 * 8 * 64 * (p + 1000 - 1) * 4 * 4);
    // One token more of prompt does not fit.
    let mut longer = base.clone();
    longer.retain(|(k, _)| k != "prompt_tokens");
    longer.push(("prompt_tokens".into(), (p + 1).to_string()));
    assert_ne!(json(&t, "llama-3.2-1b", &longer)["verdict"], "fits");
}

/// Llama 3.1 8B with a 32,000-token prompt on a 12 GB card: no single change fits (16-bit
/// weights alone are 15 GiB), so the least change combined that does is offered: NF4 weights,
/// the int4 cache and the longest prompt that fits them, which one token more does not.
#[test]
fn when_no_single_change_fits_the_least_combination_that_does_is_offered() {
    let t = SiteTest::new();
    let mut args = vec!["estimate", "--model", "llama-3.1-8b", "--phase", "generate"];
    args.extend([
        "--prompt_tokens=32000",
        "--gpu",
        "rtx-4070",
        "--format",
        "json",
    ]);
    let r = t.run(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let o = v["what_if"].as_array().unwrap();
    let kinds: Vec<&str> = o.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "static_cache",
            "int8_weights",
            "int8_cache",
            "fp8_cache",
            "quantized_cache",
            "four_bit_weights",
            "fewer_new_tokens",
            "combination"
        ]
    );
    assert!(o[..7].iter().all(|o| o["verdict"] != "fits"));
    let c = &o[7];
    assert_eq!(c["verdict"], "fits");
    let flags: Vec<String> = c["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "--{}={}",
                c["key"].as_str().unwrap(),
                c["value"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        flags[..5],
        [
            "--load_in_4bit=true",
            "--bnb_4bit_quant_type=nf4",
            "--bnb_4bit_use_double_quant=true",
            "--bnb_4bit_compute_dtype=bfloat16",
            "--kv_cache=quantized"
        ]
    );
    let p: u64 = flags[5]
        .strip_prefix("--prompt_tokens=")
        .unwrap()
        .parse()
        .unwrap();
    assert!(p < 32_000);
    // The option is the CLI's own estimate of those changes; one token more does not fit.
    for (prompt, fits) in [(p, true), (p + 1, false)] {
        let mut again = vec!["estimate", "--model", "llama-3.1-8b", "--phase", "generate"];
        again.extend(["--gpu", "rtx-4070", "--format", "json"]);
        let prompt_flag = format!("--prompt_tokens={prompt}");
        again.extend(flags[..5].iter().map(String::as_str));
        again.push(&prompt_flag);
        let r = t.run(&again);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let e: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(e["verdict"] == "fits", fits, "{prompt}");
        if fits {
            assert_eq!(e["bytes"]["total"], c["total"]);
        }
    }
}

#[test]
fn the_options_table_in_every_language_and_in_markdown() {
    let t = SiteTest::new();
    let base = settings(&[
        ("prompt_tokens", "512"),
        ("max_new_tokens", "500"),
        ("batch_size", "64"),
        ("dtype", "float32"),
    ]);
    let en = run(&t, "gpt2", &base, &[]);
    for says in [
        "What to change (least change to the output first)",
        "--kv_cache=static",
        "--dtype=bfloat16",
        "--batch_size=32",
        "--max_new_tokens=250",
        "Not computed, so not listed",
    ] {
        assert!(en.contains(says), "{says}: {en}");
    }
    let md = run(&t, "gpt2", &base, &["--format", "markdown"]);
    // The weights' dtype, generate's `dtype`, is `weights_dtype` too: both flags.
    assert!(
        md.contains("| `--dtype=bfloat16` `--weights_dtype=bfloat16` |"),
        "{md}"
    );
    let es = run(&t, "gpt2", &base, &["--lang", "es"]);
    assert!(
        es.contains("Qué cambiar (primero lo que menos altera la salida)"),
        "{es}"
    );
    assert!(es.contains("Pesos en bfloat16"), "{es}");
    let zh = run(&t, "gpt2", &base, &["--lang", "zh"]);
    assert!(
        zh.contains("可以怎么改（对输出影响最小的排在前面）"),
        "{zh}"
    );
    assert!(zh.contains("新 token 数减半"), "{zh}");
}

/// `vramdoc estimate sample.py --init_from=gpt2-xl --gpu rtx-3090 --KEY=VALUE… EXTRA`.
fn sample(t: &SiteTest, settings: &[(String, String)], extra: &[&str]) -> String {
    let flags: Vec<String> = settings.iter().map(|(k, v)| format!("--{k}={v}")).collect();
    let mut all = vec![
        "estimate",
        "sample.py",
        "--init_from=gpt2-xl",
        "--gpu",
        "rtx-3090",
    ];
    all.extend(flags.iter().map(String::as_str));
    all.extend_from_slice(extra);
    let r = t.run(&all);
    assert_eq!(r.code, 0, "{all:?}: {}", r.stderr);
    r.stdout
}

fn sample_json(t: &SiteTest, settings: &[(String, String)]) -> Value {
    serde_json::from_str(&sample(t, settings, &["--format", "json"])).unwrap()
}

#[test]
fn nanogpt_sampling_options_are_the_clis_own_estimates() {
    let t = SiteTest::new();
    t.file("sample.py", crate::nanogpt_configs::SAMPLE_PY);
    let base = settings(&[("dtype", "float32")]);
    let v = sample_json(&t, &base);
    let total = v["bytes"]["total"].as_i64().unwrap();
    let options = v["what_if"].as_array().unwrap();
    let kinds: Vec<&str> = options
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["autocast", "fewer_new_tokens"]);
    for o in options {
        let e = sample_json(&t, &changed(&base, o));
        assert_eq!(o["total"], e["bytes"]["total"], "{}", o["kind"]);
        assert_eq!(o["peak"], e["bytes"]["peak"], "{}", o["kind"]);
        assert_eq!(o["verdict"], e["verdict"], "{}", o["kind"]);
        assert_eq!(o["sampling"], e["sampling"], "{}", o["kind"]);
        let saving = total - e["bytes"]["total"].as_i64().unwrap();
        assert_eq!(o["saving_bytes"].as_i64().unwrap(), saving);
    }
    // Autocast keeps the float32 weights and adds 16-bit copies: it needs more, said so.
    assert!(options[0]["saving_bytes"].as_i64().unwrap() < 0);
    assert_eq!(options[1]["sampling"]["max_new_tokens"], 250);
    // In bfloat16 already: only the shorter generation is left.
    let bf16 = sample_json(&t, &settings(&[("dtype", "bfloat16")]));
    assert_eq!(bf16["what_if"].as_array().unwrap().len(), 1);
    for (lang, says) in [
        ("en", "Autocast in bfloat16 (the weights stay float32)"),
        ("en", "a smaller block_size crop"),
        ("es", "un recorte block_size más pequeño"),
        ("zh", "更小的 block_size 截断"),
    ] {
        let text = sample(&t, &base, &["--lang", lang]);
        assert!(text.contains(says), "{lang}: {text}");
    }
}
