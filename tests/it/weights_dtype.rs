//! `weights_dtype`: what a Hugging Face model's weights are loaded in, as transformers 5's
//! `from_pretrained(dtype="auto")` loads them by default (the config.json's `dtype` or
//! `torch_dtype`), held against independent arithmetic for each family; `pure_bf16` as its
//! synonym, their contradiction and the combinations Trainer itself fails on refused; a
//! config.json without a dtype said to be assumed float32.

use serde_json::Value;

use crate::support::SiteTest;

/// `vramdoc estimate ARGS --format json` in `t`, which must succeed; its stderr too.
fn estimate(t: &SiteTest, args: &[&str]) -> (Value, String) {
    let mut all = vec!["estimate"];
    all.extend_from_slice(args);
    all.extend(["--format", "json"]);
    let r = t.run(&all);
    assert_eq!(r.code, 0, "{all:?}: {}", r.stderr);
    (serde_json::from_str(&r.stdout).unwrap(), r.stderr)
}

/// A catalog model's full fine-tune with Trainer's defaults (no mixed precision), one short
/// sequence on an H200.
fn trainer_step(t: &SiteTest, model: &str, extra: &[&str]) -> (Value, String) {
    let mut args = vec![
        "--model",
        model,
        "--gpu",
        "h200",
        "--batch_size=1",
        "--block_size=256",
    ];
    args.extend_from_slice(extra);
    estimate(t, &args)
}

/// `vramdoc estimate ARGS`, which must fail saying `says`.
fn refused(t: &SiteTest, args: &[&str], says: &str) {
    let mut all = vec!["estimate"];
    all.extend_from_slice(args);
    let r = t.run(&all);
    assert_ne!(r.code, 0, "{all:?}");
    assert!(r.stderr.contains(says), "{all:?}: {}", r.stderr);
}

fn n(v: &Value, path: &[&str]) -> u64 {
    path.iter()
        .fold(v, |at, p| &at[*p])
        .as_u64()
        .unwrap_or_else(|| panic!("{path:?} in {v}"))
}

/// Each family's default is its config's own dtype: the weights take that many bytes a
/// parameter, AdamW's two moments follow them (plus a 4-byte `step` per tensor), and the notes
/// say which dtype and why.
#[test]
fn each_familys_default_is_the_configs_torch_dtype() {
    let t = SiteTest::new();
    // (model, parameters, tensors, bytes a weight, buffers beside the weights, dtype named)
    // Llama family and MoE: the rotary embedding's float32 `inv_freq`, 4 · head_dim/2 · 2 =
    // 512 bytes for a head_dim of 128. GPT-2: none.
    let cases: [(&str, u64, u64, u64, u64, &str); 5] = [
        ("llama-3.1-8b", 8_030_261_248, 291, 2, 512, "bfloat16"),
        ("llama-2-7b", 6_738_415_616, 291, 2, 512, "float16"),
        ("qwen3-30b-a3b", 30_532_122_624, 531, 2, 512, "bfloat16"),
        ("mixtral-8x7b", 46_702_792_704, 291, 2, 512, "bfloat16"),
        ("gpt2", 124_439_808, 148, 4, 0, "float32"),
    ];
    for (model, p, tensors, e, buffers, dtype) in cases {
        let (v, notes) = trainer_step(&t, model, &[]);
        assert_eq!(n(&v, &["params", "total"]), p, "{model}");
        assert_eq!(v["scenario"]["weights_dtype"], dtype, "{model}");
        // Trainer's default: no mixed precision, the weights trained as they are.
        assert_eq!(v["scenario"]["dtype"], "float32", "{model}");
        assert_eq!(n(&v, &["bytes", "weights"]), e * p + buffers, "{model}");
        assert_eq!(
            n(&v, &["bytes", "optimizer"]),
            2 * e * p + 4 * tensors,
            "{model}"
        );
        assert_eq!(n(&v, &["bytes", "autocast_weights"]), 0, "{model}");
        assert!(
            notes.contains(&format!("weights in {dtype}, ")),
            "{model}: {notes}"
        );
    }
    // GPT-2's config.json names no dtype: gpt2's and gpt2-medium's are their checkpoints',
    // sourced; SmolLM2-135M's base config.json is not sourced, and the assumption is said.
    for (model, repo) in [
        ("gpt2", "openai-community/gpt2"),
        ("gpt2-medium", "openai-community/gpt2-medium"),
    ] {
        let (v, notes) = trainer_step(&t, model, &[]);
        assert_eq!(v["scenario"]["weights_dtype"], "float32", "{model}");
        assert!(
            notes.contains(&format!(
                "the dtype of {repo}'s checkpoint tensors (its config.json names no dtype)"
            )),
            "{notes}"
        );
    }
    let (v, notes) = trainer_step(&t, "smollm2-135m", &[]);
    assert_eq!(v["scenario"]["weights_dtype"], "float32");
    assert!(notes.contains("weights assumed float32"), "{notes}");
    let (v, notes) = trainer_step(&t, "llama-3.1-8b", &[]);
    assert!(
        notes.contains("meta-llama/Llama-3.1-8B's config.json's torch_dtype, as from_pretrained's dtype=\"auto\" loads them"),
        "{notes}"
    );
    assert!(v["model"]["source"]["dtype_source"].is_string(), "{v}");
}

/// Gemma 2's base checkpoints are float32, its instruction-tuned ones bfloat16: the name given
/// decides. Beside the weights: two float32 rotary tables (sliding and global layers, 128
/// entries each for a head_dim of 256) and the embedding normalizer, one element of the
/// weights' dtype.
#[test]
fn gemma_2s_base_loads_float32_and_its_instruct_alias_bfloat16() {
    let t = SiteTest::new();
    let p = 2_614_341_888u64;
    let (base, _) = trainer_step(&t, "gemma-2-2b", &[]);
    assert_eq!(base["scenario"]["weights_dtype"], "float32");
    assert_eq!(n(&base, &["bytes", "weights"]), 4 * p + 2 * 512 + 4);
    let (it, notes) = trainer_step(&t, "google/gemma-2-2b-it", &[]);
    assert_eq!(it["scenario"]["weights_dtype"], "bfloat16");
    assert_eq!(n(&it, &["bytes", "weights"]), 2 * p + 2 * 512 + 2);
    assert!(
        notes.contains("google/gemma-2-2b-it's config.json's torch_dtype"),
        "{notes}"
    );
}

/// The entries whose config.json's torch_dtype was sourced later (Mistral 7B v0.1, Phi-3 mini
/// and medium 4k, Qwen2.5 1.5B, Llama 3.2 1B) load bfloat16 by default: two bytes a parameter where
/// float32 takes four, the buffers beside the weights (the float32 rotary tables) the same in
/// both, and the note names the repository's config.json.
#[test]
fn the_newly_sourced_entries_load_their_bfloat16() {
    let t = SiteTest::new();
    for (model, repo) in [
        ("mistral-7b-v0.1", "mistralai/Mistral-7B-v0.1"),
        ("phi-3-mini-4k", "microsoft/Phi-3-mini-4k-instruct"),
        ("phi-3-medium-4k", "microsoft/Phi-3-medium-4k-instruct"),
        ("qwen2.5-1.5b", "Qwen/Qwen2.5-1.5B"),
        ("llama-3.2-1b", "meta-llama/Llama-3.2-1B"),
    ] {
        let (auto, notes) = trainer_step(&t, model, &[]);
        let (f32, _) = trainer_step(&t, model, &["--weights_dtype=float32"]);
        let p = n(&auto, &["params", "total"]);
        assert_eq!(auto["scenario"]["weights_dtype"], "bfloat16", "{model}");
        assert_eq!(
            n(&auto, &["bytes", "weights"]) - 2 * p,
            n(&f32, &["bytes", "weights"]) - 4 * p,
            "{model}"
        );
        assert!(
            notes.contains(&format!(
                "weights in bfloat16, {repo}'s config.json's torch_dtype"
            )),
            "{model}: {notes}"
        );
    }
}

/// LoRA keeps PEFT's float32 adapters beside the bfloat16 base (`autocast_adapter_dtype`);
/// QLoRA's `prepare_model_for_kbit_training` upcasts what it does not quantize to float32
/// whatever the load dtype, so its bytes do not depend on it.
#[test]
fn lora_adapters_stay_float32_and_qlora_ignores_the_load_dtype() {
    let t = SiteTest::new();
    let p = 8_030_261_248u64;
    // Rank 16 on q_proj (4096 → 4096) and v_proj (4096 → 1024) in 32 blocks.
    let adapters = 32 * 16 * ((4096 + 4096) + (4096 + 1024));
    let (v, notes) = trainer_step(&t, "llama-3.1-8b", &["--lora_rank=16"]);
    assert_eq!(n(&v, &["params", "trainable"]), adapters);
    assert_eq!(n(&v, &["bytes", "weights"]), 2 * p + 4 * adapters + 512);
    // The note says the bf16 weights are frozen, not trained with bf16 moments.
    assert!(
        notes.contains("and frozen, PEFT's adapters beside them in float32"),
        "{notes}"
    );
    assert!(
        !notes.contains("Trainer trains them as they are"),
        "{notes}"
    );
    let qlora = |w: &str| {
        let dtype = format!("--weights_dtype={w}");
        let (v, _) = trainer_step(
            &t,
            "llama-3.1-8b",
            &["--load_in_4bit=True", "--lora_rank=16", &dtype],
        );
        v["bytes"].clone()
    };
    assert_eq!(qlora("bfloat16"), qlora("float32"));
}

/// `pure_bf16` is `weights_dtype = bfloat16` for a Hugging Face model: the same estimate; given
/// with another `weights_dtype`, refused at its line, naming both.
#[test]
fn pure_bf16_is_a_synonym_and_a_contradiction_is_refused_at_its_line() {
    let t = SiteTest::new();
    // Hugging Face's GPT-2 is replayed with float32 weights only: refused, saying how.
    refused(
        &t,
        &["--model", "gpt2", "--weights_dtype=bfloat16"],
        "the replay loads float32 weights (weights_dtype: float32)",
    );
    let (bf16, _) = trainer_step(&t, "qwen2.5-0.5b", &["--weights_dtype=bfloat16"]);
    let (pure, _) = trainer_step(
        &t,
        "qwen2.5-0.5b",
        &["--pure_bf16=True", "--dtype=bfloat16"],
    );
    assert_eq!(bf16["bytes"]["weights"], pure["bytes"]["weights"]);
    assert_eq!(bf16["bytes"]["optimizer"], pure["bytes"]["optimizer"]);
    t.file(
        "run.yaml",
        "model: qwen2.5-0.5b\nweights_dtype: float32\npure_bf16: true\ndtype: bfloat16\n",
    );
    let r = t.run(&["estimate", "run.yaml"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stderr.contains("run.yaml:3"), "{}", r.stderr);
    assert!(
        r.stderr.contains("`pure_bf16` = True") && r.stderr.contains("`weights_dtype` = float32"),
        "{}",
        r.stderr
    );
}

/// float16 weights trained whole under `fp16=True` stop at the first step in torch's GradScaler
/// ("Attempting to unscale FP16 gradients."): refused, saying so. The same weights trained as
/// they are, without autocast (Trainer's default), are estimated.
#[test]
fn fp16_weights_under_fp16_autocast_are_refused_as_trainer_fails() {
    let t = SiteTest::new();
    refused(
        &t,
        &["--model", "llama-2-7b", "--dtype=float16"],
        "Attempting to unscale FP16 gradients.",
    );
    trainer_step(&t, "llama-2-7b", &["--dtype=float32"]);
    // bfloat16 autocast over float16 weights mixes the two 16-bit types: not replayed.
    refused(
        &t,
        &["--model", "llama-2-7b", "--dtype=bfloat16"],
        "the other 16-bit autocast",
    );
}

/// A config.json is read as transformers 5 reads it: `dtype`, else `torch_dtype`; without
/// either, float32 is assumed and said; a dtype vramdoc does not model is refused at its line.
#[test]
fn a_config_json_gives_its_own_dtype_or_the_assumption_is_said() {
    let t = SiteTest::new();
    let config = |extra: &str| {
        format!(
            "{{\"model_type\": \"qwen2\", \"hidden_size\": 896, \"intermediate_size\": 4864,\n\
             \"num_hidden_layers\": 24, \"num_attention_heads\": 14, \"num_key_value_heads\": 2,\n\
             \"vocab_size\": 151936, \"tie_word_embeddings\": true{extra}}}\n"
        )
    };
    let p = 494_032_768u64;
    t.file("plain/config.json", &config(""));
    let (v, notes) = estimate(&t, &["--model", "plain/config.json", "--gpu", "h200"]);
    assert_eq!(n(&v, &["bytes", "weights"]), 4 * p + 256);
    assert!(
        notes.contains("its config.json names no dtype (torch_dtype)")
            && notes.contains("weights assumed float32"),
        "{notes}"
    );
    t.file(
        "bf16/config.json",
        &config(",\n\"torch_dtype\": \"bfloat16\""),
    );
    let (v, notes) = estimate(&t, &["--model", "bf16/config.json", "--gpu", "h200"]);
    assert_eq!(n(&v, &["bytes", "weights"]), 2 * p + 256);
    assert!(notes.contains("config.json's torch_dtype"), "{notes}");
    // transformers 5 writes `dtype`, and prefers it to an older `torch_dtype`.
    t.file(
        "both/config.json",
        &config(",\n\"torch_dtype\": \"float32\", \"dtype\": \"float16\""),
    );
    let (v, notes) = estimate(&t, &["--model", "both/config.json", "--gpu", "h200"]);
    assert_eq!(v["scenario"]["weights_dtype"], "float16");
    assert!(notes.contains("config.json's dtype"), "{notes}");
    t.file(
        "fp8/config.json",
        &config(",\n\"torch_dtype\": \"float8_e4m3fn\""),
    );
    let r = t.run(&["estimate", "--model", "fp8/config.json"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("config.json:4"), "{}", r.stderr);
    assert!(r.stderr.contains("float8_e4m3fn"), "{}", r.stderr);
    // Given, weights_dtype wins over the config's.
    let (v, _) = estimate(
        &t,
        &["--model", "bf16/config.json", "--weights_dtype=float32"],
    );
    assert_eq!(n(&v, &["bytes", "weights"]), 4 * p + 256);
}

/// Generating, `dtype` is the weights' dtype and follows the same rule: the config's own where
/// no input sets it; `weights_dtype` and a contradicting `dtype` refused.
#[test]
fn generate_loads_the_same_dtype() {
    let t = SiteTest::new();
    let gen = |extra: &[&str]| {
        let mut args = vec!["--model", "llama-3.1-8b", "--phase", "generate"];
        args.extend_from_slice(extra);
        estimate(&t, &args).0
    };
    let p = 8_030_261_248u64;
    let v = gen(&[]);
    assert_eq!(v["dtype"], "bfloat16");
    assert_eq!(n(&v, &["bytes", "weights"]), 2 * p + 512);
    let v = gen(&["--weights_dtype=float32"]);
    assert_eq!(v["dtype"], "float32");
    assert_eq!(n(&v, &["bytes", "weights"]), 4 * p + 512);
    refused(
        &t,
        &[
            "--model",
            "llama-3.1-8b",
            "--phase",
            "generate",
            "--weights_dtype=float32",
            "--dtype=bfloat16",
        ],
        "contradicts `weights_dtype` = float32",
    );
}

/// nanoGPT's model is no `from_pretrained` load: `weights_dtype` is refused for it.
#[test]
fn nanogpt_refuses_weights_dtype() {
    let t = SiteTest::new();
    refused(&t, &["--weights_dtype=bfloat16"], "pure_bf16 patch");
}
