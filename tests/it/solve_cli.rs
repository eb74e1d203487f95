//! `vramdoc estimate --solve` through the real CLI: nanoGPT's README sampling command answers
//! with the block_size crop, a crowded card with its memory boundary (one token more does not
//! fit), in the JSON (`solve.max_context`) and in every language; what has nothing to solve is
//! refused with what to do.

use crate::nanogpt_configs::SAMPLE_PY;
use crate::support::SiteTest;

/// `vramdoc estimate ARGS --format json`, expecting success.
pub(crate) fn run_json(t: &SiteTest, args: &[&str]) -> serde_json::Value {
    t.estimate_json(args)
}

#[test]
fn the_readme_sampling_command_solves_to_the_block_size_crop() {
    let t = SiteTest::new();
    t.file("sample.py", SAMPLE_PY);
    let args = [
        "sample.py",
        "--init_from=gpt2-xl",
        "--gpu",
        "rtx-3090",
        "--solve",
        "max_context",
    ];
    let v = run_json(&t, &args);
    let solve = &v["solve"];
    assert_eq!(solve["max_context"], 1024);
    assert_eq!(solve["prompt_tokens"], 524);
    assert_eq!(solve["max_new_tokens"], 500);
    assert_eq!(solve["limited_by"], "block_size");
    // The table says so, in each language.
    for (lang, words) in [
        ("en", "sample.py’s crop"),
        ("es", "recorte de sample.py"),
        ("zh", "sample.py 的截断"),
    ] {
        let mut with_lang = args.to_vec();
        with_lang.extend(["--lang", lang]);
        let mut all = vec!["estimate"];
        all.extend_from_slice(&with_lang);
        let r = t.run(&all);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains(words), "{lang}: {}", r.stdout);
    }
}

#[test]
fn a_crowded_card_gives_the_memory_boundary_and_one_token_more_does_not_fit() {
    let t = SiteTest::new();
    t.file("sample.py", SAMPLE_PY);
    // GPT-2 XL without flash: the attention scores grow with the context.
    let base = [
        "sample.py",
        "--init_from=gpt2-xl",
        "--set",
        "flash=False",
        "--gpu",
        "rtx-3090",
    ];
    // Crowd the card so that a 300-token prompt is the last to fit.
    let mut at300 = base.to_vec();
    at300.push("--start=FILE:prompt.txt");
    t.file("prompt.txt", &"x".repeat(300));
    let probe = run_json(&t, &at300);
    let high = probe["bytes"]["total_high"].as_u64().unwrap();
    let cap = probe["gpu"]["capacity_bytes"].as_u64().unwrap();
    let other = (cap - high).to_string();
    let mut solve = at300.clone();
    solve.extend(["--other-processes", &other, "--solve", "max_context"]);
    let v = run_json(&t, &solve);
    assert_eq!(v["solve"]["limited_by"], "memory");
    let prompt = v["solve"]["prompt_tokens"].as_u64().unwrap();
    assert_eq!(v["solve"]["max_context"], prompt + 500);
    let verdict = |p: u64| {
        t.file("p.txt", &"x".repeat(p as usize));
        let mut a = base.to_vec();
        a.extend(["--start=FILE:p.txt", "--other-processes", &other]);
        run_json(&t, &a)["verdict"].as_str().unwrap().to_owned()
    };
    assert_eq!(verdict(prompt), "fits");
    assert_ne!(verdict(prompt + 1), "fits");
}

#[test]
fn nothing_to_solve_is_refused_with_what_to_do() {
    let t = SiteTest::new();
    t.file("sample.py", SAMPLE_PY);
    for (args, says) in [
        (
            &[
                "sample.py",
                "--init_from=gpt2",
                "--gpu",
                "t4",
                "--solve",
                "max_batch",
            ][..],
            "one sequence at a time",
        ),
        (
            &["--gpu", "t4", "--solve", "max_context"][..],
            "--phase generate",
        ),
        (
            &["sample.py", "--init_from=gpt2", "--solve", "max_context"][..],
            "--gpu",
        ),
        (
            &["sample.py", "--gpu", "t4", "--solve", "longest"][..],
            "unknown solver",
        ),
    ] {
        let mut all = vec!["estimate"];
        all.extend_from_slice(args);
        let r = t.run(&all);
        assert_ne!(r.code, 0, "{args:?}");
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
}

/// `vramdoc estimate --model gpt2 --phase generate ARGS --format json`.
fn generate_json(t: &SiteTest, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--model", "gpt2", "--phase", "generate"];
    all.extend_from_slice(args);
    run_json(t, &all)
}

#[test]
fn hugging_face_generate_on_gpt2_through_the_cli() {
    let t = SiteTest::new();
    let v = generate_json(
        &t,
        &[
            "--gpu",
            "rtx-3060-12gb",
            "--prompt_tokens=512",
            "--max_new_tokens=256",
            "--batch_size=8",
        ],
    );
    assert_eq!(v["phase"], "generate");
    assert_eq!(v["model"]["id"], "gpt2");
    // The weights in GPT-2's own dtype (its config.json names none: float32, said in a note):
    // 2 × 12 layers × 12 heads × 64 × (512 + 256 − 1) tokens × 4 bytes × 8 sequences.
    assert_eq!(v["dtype"], "float32");
    assert_eq!(v["bytes"]["kv_cache"], 2 * 12 * 12 * 64 * 767 * 4 * 8);
    assert_eq!(v["bytes"]["weights"], 124_439_808u64 * 4);
    let prefill = v["bytes"]["prefill_peak"].as_u64().unwrap();
    assert!(prefill > v["bytes"]["weights"].as_u64().unwrap());
    assert_eq!(v["generation"]["cache"]["kind"], "dynamic");
    // A static cache in float32: preallocated, four bytes an element, 8 bytes a layer beside.
    let s = generate_json(
        &t,
        &[
            "--prompt_tokens=100",
            "--max_new_tokens=28",
            "--kv_cache=static",
            "--dtype=float32",
        ],
    );
    assert_eq!(s["bytes"]["kv_cache"], 2 * 12 * 12 * 64 * 127 * 4 + 12 * 8);
}

#[test]
fn max_batch_for_gpt2_generate_is_the_boundary_through_the_cli() {
    let t = SiteTest::new();
    let base = ["--gpu", "rtx-3060-12gb", "--max_new_tokens=256"];
    let mut solve = base.to_vec();
    solve.extend(["--solve", "max_batch"]);
    let v = generate_json(&t, &solve);
    assert_eq!(v["solve"]["limited_by"], "memory");
    let b = v["solve"]["max_batch"].as_u64().unwrap();
    let verdict = |batch: u64| {
        let arg = format!("--batch_size={batch}");
        let mut a = base.to_vec();
        a.push(&arg);
        generate_json(&t, &a)["verdict"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(verdict(b), "fits");
    assert_ne!(verdict(b + 1), "fits");
    // The longest context stops at GPT-2's positions, said in the table.
    let r = t.run(&[
        "estimate",
        "--model",
        "gpt2",
        "--phase",
        "generate",
        "--gpu",
        "rtx-3060-12gb",
        "--solve",
        "max_context",
        "--max_new_tokens=256",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("1,025 tokens (769 of prompt + 256 new)"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("GPT-2’s 1,024 positions"), "{}", r.stdout);
}

#[test]
fn generate_settings_are_refused_where_they_do_not_apply() {
    let t = SiteTest::new();
    t.file("sample.py", SAMPLE_PY);
    for (args, says) in [
        // sample.py has no prompt_tokens: its prompt is `start`.
        (
            &["sample.py", "--init_from=gpt2", "--prompt_tokens=100"][..],
            "setting of Hugging Face generate",
        ),
        // nanoGPT's sampling has no batch.
        (
            &["sample.py", "--init_from=gpt2", "--batch_size=4"][..],
            "training key",
        ),
        (
            &["--model", "gpt2", "--phase", "generate", "--kv_cache=paged"][..],
            "not a cache transformers builds",
        ),
        (
            &[
                "--model",
                "gpt2",
                "--phase",
                "generate",
                "--max_new_tokens=900",
            ][..],
            "positions",
        ),
        (
            &[
                "--model",
                "nanochat-d20",
                "--phase",
                "generate",
                "--kv_cache=quantized",
            ][..],
            "nanochat's Engine has one cache of its own",
        ),
    ] {
        let mut all = vec!["estimate"];
        all.extend_from_slice(args);
        let r = t.run(&all);
        assert_ne!(r.code, 0, "{args:?}");
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn a_llama_with_grouped_heads_generates_with_a_dynamic_and_a_static_cache() {
    let t = SiteTest::new();
    let args = [
        "--model",
        "llama-3.2-1b",
        "--phase",
        "generate",
        "--prompt_tokens=1000",
        "--max_new_tokens=25",
        "--batch_size=2",
        "--weights_dtype=bfloat16",
    ];
    let v = run_json(&t, &args);
    // 2 × 16 layers × 8 KV heads × 64 × 1024 tokens × 2 bytes × 2 sequences.
    assert_eq!(v["bytes"]["kv_cache"], 2 * 16 * 8 * 64 * 1024 * 2 * 2);
    let mut all = vec!["estimate"];
    all.extend_from_slice(&args);
    all.push("--kv_cache=static");
    all.extend(["--format", "json"]);
    let r = t.run(&all);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    // The same 1024 slots preallocated, plus each layer's int64 `cumulative_length`; transformers
    // 5.24 repeats nothing for the grouped heads (`pack_gqa`), so only the cache differs.
    assert_eq!(
        v["bytes"]["kv_cache"],
        2 * 16 * 8 * 64 * 1024 * 2 * 2 + 16 * 8
    );
}

#[test]
fn a_sliding_window_does_not_bound_the_longest_context() {
    let t = SiteTest::new();
    // Phi-3 mini 4k: every layer slides over 2047 tokens; an H100 holds far more, with either
    // cache: the window is no limit. Its 4096 positions (max_position_embeddings) are: the
    // answer is 4096 + 1 tokens (the last new token is never fed), the card's own bound beyond.
    for cache in ["dynamic", "static"] {
        let c = format!("--kv_cache={cache}");
        let args = [
            "--model",
            "phi-3-mini-4k",
            "--phase",
            "generate",
            "--max_new_tokens=47",
            c.as_str(),
            "--gpu",
            "h100-80gb",
            "--solve",
            "max_context",
        ];
        let v = run_json(&t, &args);
        assert_eq!(v["solve"]["limited_by"], "positions", "{cache}");
        assert_eq!(v["solve"]["max_context"], 4097, "{cache}");
        assert_eq!(v["solve"]["prompt_tokens"], 4097 - 47, "{cache}");
        assert_eq!(v["solve"]["position_limit"], 4096, "{cache}");
        assert!(
            v["solve"]["memory_max_context"].as_u64().unwrap() > 4097,
            "{cache}"
        );
    }
}
