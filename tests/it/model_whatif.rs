//! What-ifs of a model other than nanoGPT's through the real CLI (`vramdoc estimate --model`):
//! each option is the model's own step model on the changed settings (the CLI's estimate of
//! those settings, to the byte), options the family refuses are absent, and the ranking keeps
//! what leaves training as it is first.

use serde_json::Value;

use crate::support::SiteTest;

/// `vramdoc estimate --model MODEL ARGS --format json`, parsed.
fn json(t: &SiteTest, model: &str, args: &[String]) -> Value {
    let mut all = vec!["estimate", "--model", model, "--format", "json"];
    all.extend(args.iter().map(String::as_str));
    let r = t.run(&all);
    assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

/// The options' kinds, in order.
fn kinds(v: &Value) -> Vec<String> {
    v["what_if"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["kind"].as_str().unwrap().to_owned())
        .collect()
}

/// The base flags with an option's changes as overrides (`--key=value`, later ones win).
fn with_changes(base: &[String], w: &Value) -> Vec<String> {
    let mut args = base.to_vec();
    for c in w["changes"].as_array().unwrap() {
        args.push(format!(
            "--{}={}",
            c["key"].as_str().unwrap(),
            c["value"].as_str().unwrap()
        ));
    }
    args
}

fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn hugging_face_gpt2_what_ifs_are_its_own_estimates_ranked_least_change_first() {
    let t = SiteTest::new();
    // HF GPT-2 124M, float32, eager attention, 8 × 1024 on a T4: does not fit.
    let base = strings(&[
        "--gpu=t4",
        "--batch_size=8",
        "--block_size=1024",
        "--dtype=float32",
        "--flash=False",
    ]);
    let v = json(&t, "gpt2", &base);
    assert_eq!(v["verdict"], "does_not_fit");
    assert_eq!(
        kinds(&v),
        [
            "micro_batch",
            "micro_batch",
            "micro_batch",
            "max_micro_batch",
            "flash",
            "grad_checkpoint",
            "dtype",
            "lora",
            "optimizer",
            "optimizer",
            "block_size"
        ]
    );
    let base_total = v["bytes"]["total"].as_i64().unwrap();
    let mut changed_training = false;
    for w in v["what_if"].as_array().unwrap() {
        // The option is what the CLI estimates for the changed settings, to the byte.
        let e = json(&t, "gpt2", &with_changes(&base, w));
        assert_eq!(w["total"], e["bytes"]["total"], "{w}");
        assert_eq!(w["verdict"], e["verdict"], "{w}");
        assert_eq!(
            w["saving_bytes"].as_i64().unwrap(),
            base_total - e["bytes"]["total"].as_i64().unwrap()
        );
        // Micro-batches keep the 8 sequences per step: accumulation 8 / b.
        let s = &w["scenario"];
        if w["kind"] == "micro_batch" || w["kind"] == "max_micro_batch" {
            let b = s["batch_size"].as_u64().unwrap();
            assert_eq!(s["gradient_accumulation_steps"].as_u64().unwrap(), 8 / b);
            assert_eq!(w["effective_batch"], 8);
        }
        // Nothing that changes training comes before what does not.
        let changes = w["changes_training"].as_bool().unwrap();
        assert!(changes || !changed_training, "{w}");
        changed_training |= changes;
        assert_eq!(s["model"], "gpt2");
    }
    let w = &v["what_if"].as_array().unwrap();
    // b/2, b/4, b/8: 4, 2, 1; the largest that fits the T4 is 2 (4 is "likely does not fit":
    // only the low end of its range is within the card).
    let bs: Vec<u64> = w[..4]
        .iter()
        .map(|o| o["scenario"]["batch_size"].as_u64().unwrap())
        .collect();
    assert_eq!(bs, [4, 2, 1, 2]);
    assert_eq!(w[0]["verdict"], "unlikely");
    // Checkpointing's extra compute, PaLM's count for GPT-2 124M at 1024 tokens: one more
    // forward of the blocks, 2·12·L·h² + 4·L·h·s, over 6·(12·L·h² + V·h) + 12·L·h·s.
    let (l, h, vocab, s) = (12.0, 768.0, 50257.0, 1024.0);
    let blocks = 24.0 * l * h * h + 4.0 * l * h * s;
    let train = 6.0 * (12.0 * l * h * h + vocab * h) + 12.0 * l * h * s;
    let pct = (1000.0_f64 * blocks / train).round() / 10.0;
    assert_eq!(pct, 24.3);
    assert_eq!(w[5]["extra_compute_pct"], pct);
    // A T4 has no bf16: float16 autocast; bf16 weights are not offered (GPT-2's step model
    // loads float32 weights only), nor QLoRA (its recipe computes in bf16); bitsandbytes' 8-bit
    // AdamW, plain and paged, is.
    assert_eq!(w[6]["scenario"]["dtype"], "float16");
    // PEFT's LoRA at rank 16 on GPT-2's default target, c_attn, then the 8-bit AdamWs and half
    // the context.
    assert_eq!(w[7]["scenario"]["lora_rank"], 16);
    assert_eq!(w[7]["scenario"]["lora_targets"], "attn.c_attn");
    assert_eq!(w[8]["scenario"]["optimizer"], "adamw8bit");
    assert_eq!(w[9]["scenario"]["optimizer"], "paged_adamw8bit");
    assert_eq!(w[10]["scenario"]["block_size"], 512);
}

#[test]
fn options_the_family_refuses_are_not_offered() {
    let t = SiteTest::new();
    // GPT-2's replay covers checkpointing with eager attention only: with SDPA on, no
    // checkpointing option (nanoGPT's figure is never borrowed), and no SDPA option either.
    let base = strings(&["--gpu=t4", "--batch_size=8", "--flash=True"]);
    let v = json(&t, "gpt2", &base);
    let k = kinds(&v);
    assert!(
        !k.iter().any(|k| k == "grad_checkpoint" || k == "flash"),
        "{k:?}"
    );
    // No bf16 on a T4: neither bf16 weights nor QLoRA's bf16 recipe.
    assert!(!k.iter().any(|k| k == "pure_bf16" || k == "qlora"), "{k:?}");
    assert!(k.iter().any(|k| k == "micro_batch"), "{k:?}");
}

#[test]
fn model_what_ifs_read_as_trainer_settings_in_every_language() {
    let t = SiteTest::new();
    let args = [
        "estimate",
        "--model",
        "gpt2",
        "--gpu=t4",
        "--batch_size=8",
        "--dtype=float32",
        "--flash=False",
    ];
    for (lang, want) in [
        (
            "en",
            "SDPA attention instead of eager (attn_implementation=\"sdpa\")",
        ),
        ("es", "Atención SDPA en lugar de eager"),
        ("zh", "用 SDPA 注意力代替 eager"),
    ] {
        let mut all = args.to_vec();
        all.extend_from_slice(&["--lang", lang]);
        let r = t.run(&all);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains(want), "{lang}:\n{}", r.stdout);
        // Trainer settings, not patches to nanoGPT: no ‡ and no nanoGPT code notes.
        assert!(!r.stdout.contains('‡'), "{lang}:\n{}", r.stdout);
        all.extend_from_slice(&["--format", "markdown"]);
        let md = t.run(&all);
        assert!(md.stdout.contains(want), "{lang}:\n{}", md.stdout);
    }
}

#[test]
fn a_llama_family_what_if_changes_the_terms_it_should_by_independent_arithmetic() {
    let t = SiteTest::new();
    // Qwen2.5-0.5B: 494,032,768 parameters in 290 tensors, head_dim 64, vocabulary 151,936;
    // bf16 autocast over float32 weights (loaded so: its own are bfloat16), 8 × 1024 tokens on
    // an RTX 4090.
    let base = strings(&[
        "--gpu=rtx-4090",
        "--batch_size=8",
        "--block_size=1024",
        "--dtype=bfloat16",
        "--weights_dtype=float32",
    ]);
    let v = json(&t, "qwen2.5-0.5b", &base);
    let (p, tensors, head_dim, vocab) = (494_032_768u64, 290u64, 64u64, 151_936u64);
    assert_eq!(v["params"]["total"], p);
    assert_eq!(
        v["params"]["decay_tensors"].as_u64().unwrap()
            + v["params"]["no_decay_tensors"].as_u64().unwrap(),
        tensors
    );
    // float32 weights beside the rotary embedding's float32 `inv_freq` buffers (4·head_dim
    // bytes), and fused AdamW's two float32 moments and a 4-byte step per tensor.
    assert_eq!(v["bytes"]["weights"], 4 * p + 4 * head_dim);
    assert_eq!(v["bytes"]["optimizer"], 8 * p + 4 * tensors);
    assert_eq!(v["bytes"]["logits"], 12 * 8 * 1024 * vocab);
    let w = v["what_if"].as_array().unwrap();
    let kinds = kinds(&v);
    for kind in ["micro_batch", "grad_checkpoint", "pure_bf16", "block_size"] {
        assert!(kinds.iter().any(|k| k == kind), "{kind}: {kinds:?}");
    }
    // Already under autocast: no dtype option; SDPA is on: no flash option.
    assert!(
        !kinds.iter().any(|k| k == "dtype" || k == "flash"),
        "{kinds:?}"
    );
    for o in w {
        let e = json(&t, "qwen2.5-0.5b", &with_changes(&base, o));
        assert_eq!(o["total"], e["bytes"]["total"], "{o}");
        let s = &o["scenario"];
        let b = s["batch_size"].as_u64().unwrap();
        let seq = s["block_size"].as_u64().unwrap();
        if o["kind"] == "fused_cross_entropy" {
            // Liger's chunks, at its forward: grad_input (4·s·b·h), loss_1d and the label mask
            // (5·s·b), one chunk's bf16 logits (⌈151936 / 896⌉ = 170, ⌈8192 / 170⌉ = 49 → 64
            // tokens), the chunk's bf16 cast (2·64·h) and the transposed head's (2·V·h).
            assert_eq!(e["train_peak_moment"], "loss_forward", "{o}");
            let (sb, h) = (b * seq, 896);
            let want = 4 * sb * h + 5 * sb + 64 * vocab * 2 + 64 * h * 2 + vocab * h * 2;
            assert_eq!(e["bytes"]["logits"], want, "{o}");
            assert_eq!(e["bytes"]["logits_tensor"], 64 * vocab * 2, "{o}");
            assert_eq!(o["changes_training"], false);
            continue;
        }
        // The loss keeps 12 bytes per logit whatever the option.
        assert_eq!(e["bytes"]["logits"], 12 * b * seq * vocab, "{o}");
        if o["kind"] == "pure_bf16" {
            // Weights loaded in bfloat16: 2 bytes per parameter, and AdamW's moments follow the
            // parameters' dtype.
            assert_eq!(e["bytes"]["weights"], 2 * p + 4 * head_dim);
            assert_eq!(e["bytes"]["optimizer"], 4 * p + 4 * tensors);
            assert_eq!(o["changes_training"], true);
        } else if o["kind"] == "lora" {
            // PEFT's LoRA, rank 16 on q_proj and v_proj (896 → 896 and 896 → 2·64) in each of
            // the 24 blocks: float32 adapters beside the frozen float32 weights, AdamW's state
            // for the 2·2·24 adapter tensors only.
            let lora = 24 * 16 * ((896 + 896) + (896 + 128));
            assert_eq!(o["params_total"], p + lora);
            assert_eq!(e["bytes"]["weights"], 4 * (p + lora) + 4 * head_dim);
            assert_eq!(e["bytes"]["optimizer"], 8 * lora + 4 * 2 * 2 * 24);
            assert_eq!(o["changes_training"], true);
        } else if o["kind"] == "qlora" {
            // 4-bit blocks beside the float32 embeddings: less than half the float32 weights.
            assert!(e["bytes"]["weights"].as_u64() < Some(2 * p), "{o}");
            assert_eq!(o["changes_training"], true);
        } else {
            assert_eq!(e["bytes"]["weights"], v["bytes"]["weights"], "{o}");
        }
    }
}

#[test]
fn when_no_single_change_fits_the_least_invasive_combination_is_offered() {
    let t = SiteTest::new();
    let run = |gpu: &str| {
        strings(&[
            &format!("--gpu={gpu}"),
            "--batch_size=8",
            "--block_size=1024",
            "--dtype=bfloat16",
            // Loaded in float32 under bf16 autocast (Qwen2.5's own weights are bfloat16).
            "--weights_dtype=float32",
        ])
    };
    let changes = |o: &Value| -> Vec<String> {
        o["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                format!(
                    "{}={}",
                    c["key"].as_str().unwrap(),
                    c["value"].as_str().unwrap()
                )
            })
            .collect()
    };
    // 16 GB: micro-batch 1 alone is tight; with checkpointing it fits, and training is unchanged,
    // so the combination comes before the first option that changes training.
    let v = json(&t, "qwen2.5-0.5b", &run("rtx-4060-ti-16gb"));
    let w = v["what_if"].as_array().unwrap();
    let at = w.iter().position(|o| o["kind"] == "combination").unwrap();
    assert_eq!(
        changes(&w[at]),
        [
            "batch_size=1",
            "gradient_accumulation_steps=8",
            "grad_checkpoint=True"
        ]
    );
    assert_eq!(w[at]["verdict"], "fits");
    assert_eq!(w[at]["changes_training"], false);
    assert!(w[..at].iter().all(|o| o["changes_training"] == false));
    // After it, what changes training, and Liger's patch (which does not, but is a patch).
    assert!(w[at + 1..]
        .iter()
        .all(|o| o["changes_training"] == true || o["kind"] == "fused_cross_entropy"));
    // 12 GB: nothing that keeps training as it is fits (the CLI's own estimates of each such
    // combination at micro-batch 1), so the combination is micro-batch 1 with bf16 weights.
    let base = run("rtx-3060-12gb");
    let v = json(&t, "qwen2.5-0.5b", &base);
    for extra in [&["--grad_checkpoint=True"][..], &[]] {
        let mut args = base.clone();
        args.extend(strings(&[
            "--batch_size=1",
            "--gradient_accumulation_steps=8",
        ]));
        args.extend(strings(extra));
        let e = json(&t, "qwen2.5-0.5b", &args);
        assert_ne!(e["verdict"], "fits", "{extra:?}");
    }
    let last = v["what_if"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["kind"], "combination");
    assert_eq!(
        changes(&last),
        [
            "batch_size=1",
            "gradient_accumulation_steps=8",
            "weights_dtype=bfloat16"
        ]
    );
    assert_eq!(last["verdict"], "fits");
    // Qwen2.5-1.5B on 12 GB: no single change fits; QLoRA at micro-batch 2 does.
    let v = json(&t, "qwen2.5-1.5b", &base);
    let last = v["what_if"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["kind"], "combination");
    assert_eq!(last["scenario"]["load_in_4bit"], true);
    assert_eq!(last["scenario"]["batch_size"], 2);
    assert_eq!(last["verdict"], "fits");
    // Llama 3.1 70B on 12 GB: nothing fits, not even with QLoRA, so every lever together says
    // how far off it is.
    let v = json(&t, "llama-3.1-70b", &base);
    let last = v["what_if"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["kind"], "combination_all");
    assert_eq!(last["verdict"], "does_not_fit");
    assert_eq!(last["scenario"]["batch_size"], 1);
    assert_eq!(last["scenario"]["load_in_4bit"], true);
    assert_eq!(last["scenario"]["lora_rank"], 16);
}
