//! A model's position bound beside the card's, through the real CLI: the `max_context` solver
//! reports both (`solve.memory_max_context`, `solve.position_limit`), answers the lesser and
//! says which binds; an estimate past a rotary model's positions says so (transformers 5.24
//! generates on with one warning) and GPT-2's is refused; `max_position_embeddings` and the RoPE
//! scaling are read from a catalog entry and from a `config.json`, a type transformers does not
//! build refused at its line.

use serde_json::Value;

use crate::support::SiteTest;

/// `vramdoc estimate ARGS --format json`, expecting success.
fn json(t: &SiteTest, args: &[&str]) -> Value {
    let mut all = vec!["estimate"];
    all.extend_from_slice(args);
    all.extend(["--format", "json"]);
    let r = t.run(&all);
    assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

/// Qwen2.5 3B on an RTX 4090 (the command): 500 new tokens by default.
const QWEN: [&str; 6] = [
    "--model",
    "qwen2.5-3b",
    "--phase",
    "generate",
    "--gpu",
    "rtx-4090",
];

/// `vramdoc estimate` with `base` then `more`.
fn with<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(more).copied().collect()
}

/// `vramdoc estimate ARGS` (text).
fn text(t: &SiteTest, args: &[&str]) -> crate::support::Run {
    t.run(&with(&["estimate"], args))
}

#[test]
fn qwen_on_a_4090_is_bound_by_its_32768_positions_not_the_card() {
    let t = SiteTest::new();
    let v = json(&t, &with(&QWEN, &["--solve", "max_context"]));
    let s = &v["solve"];
    // config.json: max_position_embeddings 32768. A sequence of P + N tokens feeds P + N − 1
    // positions, so the longest within them is 32,769 tokens: 32,269 of prompt + 500 new.
    assert_eq!(s["position_limit"], 32768);
    assert_eq!(s["position_limit_source"], "max_position_embeddings");
    assert_eq!(s["past_position_limit"], "warns");
    assert_eq!(s["max_context"], 32769);
    assert_eq!(s["prompt_tokens"], 32269);
    assert_eq!(s["limited_by"], "positions");
    // The card's own bound is further, and it is the memory boundary: one token more does not
    // fit.
    let memory = s["memory_max_context"].as_u64().unwrap();
    assert!(memory > 32769, "{memory}");
    let at = |prompt: u64| {
        let p = format!("--prompt_tokens={prompt}");
        json(&t, &with(&QWEN, &[p.as_str()]))
    };
    assert_eq!(at(memory - 500)["verdict"], "fits");
    assert_ne!(at(memory - 500 + 1)["verdict"], "fits");
    // Both bounds in the text, in each language.
    for (lang, words) in [
        ("en", ["32,768 positions", "never trained", "would hold"]),
        ("es", ["32.768 posiciones", "nunca se entrenó", "admitiría"]),
        ("zh", ["32768个位置", "从未", "可以容纳"]),
    ] {
        let r = text(
            &t,
            &with(&QWEN, &["--solve", "max_context", "--lang", lang]),
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        for w in words {
            assert!(r.stdout.contains(w), "{lang}: {w}\n{}", r.stdout);
        }
    }
}

#[test]
fn an_estimate_past_the_positions_says_so_and_one_within_does_not() {
    let t = SiteTest::new();
    // 32,269 + 500 = 32,769 tokens: positions 0 to 32,767, all within.
    let within = json(&t, &with(&QWEN, &["--prompt_tokens=32269"]));
    assert!(within.get("beyond_position_limit").is_none(), "{within}");
    // One token more feeds position 32,768: past the bound, estimated as asked, said so.
    let past = json(&t, &with(&QWEN, &["--prompt_tokens=32270"]));
    assert_eq!(past["beyond_position_limit"]["positions"], 32768);
    assert_eq!(past["beyond_position_limit"]["past"], "warns");
    assert_eq!(past["context_tokens"], 32770);
    let r = text(&t, &with(&QWEN, &["--prompt_tokens=50000"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("This context (50,500 tokens) passes the model's 32,768 positions"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("predefined maximum length"),
        "{}",
        r.stdout
    );
}

#[test]
fn gpt2_past_its_table_is_refused_and_its_solver_states_both_bounds() {
    let t = SiteTest::new();
    let base = [
        "--model",
        "gpt2",
        "--phase",
        "generate",
        "--gpu",
        "h100-80gb",
    ];
    let v = json(&t, &with(&base, &["--solve", "max_context"]));
    let s = &v["solve"];
    assert_eq!(s["position_limit"], 1024);
    assert_eq!(s["position_limit_source"], "n_positions");
    assert_eq!(s["past_position_limit"], "fails");
    assert_eq!(s["max_context"], 1025);
    assert_eq!(s["limited_by"], "positions");
    assert!(s["memory_max_context"].as_u64().unwrap() > 1025);
    let r = text(&t, &with(&base, &["--solve", "max_context"]));
    assert!(
        r.stdout.contains("1,024 positions") && r.stdout.contains("Were its position table longer"),
        "{}",
        r.stdout
    );
    let r = text(&t, &with(&base, &["--prompt_tokens=526"]));
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("exceeds GPT-2's 1024"), "{}", r.stderr);
}

#[test]
fn on_a_small_card_memory_binds_and_the_positions_are_still_stated() {
    let t = SiteTest::new();
    let args = [
        "--model",
        "qwen2.5-3b",
        "--phase",
        "generate",
        "--gpu",
        "rtx-3060-12gb",
        "--solve",
        "max_context",
    ];
    let v = json(&t, &args);
    let s = &v["solve"];
    assert_eq!(s["limited_by"], "memory");
    assert_eq!(s["max_context"], s["memory_max_context"]);
    assert!(s["max_context"].as_u64().unwrap() < 32769);
    assert_eq!(s["position_limit"], 32768);
    let r = text(&t, &args);
    assert!(
        r.stdout.contains("The card binds first") && r.stdout.contains("32,769 tokens"),
        "{}",
        r.stdout
    );
}

#[test]
fn every_family_carries_its_positions_from_the_catalog() {
    let t = SiteTest::new();
    // (model, card, max_position_embeddings as each config.json gives it).
    for (model, gpu, positions) in [
        ("llama-3.2-1b", "rtx-4090", 131072),
        ("mistral-7b-v0.1", "h100-80gb", 32768),
        ("phi-3-mini-4k", "h100-80gb", 4096),
        ("gemma-2-2b", "rtx-4090", 8192),
        ("gemma-3-1b", "rtx-4090", 32768),
        ("qwen3-30b-a3b", "h200", 40960),
    ] {
        let v = json(
            &t,
            &[
                "--model",
                model,
                "--phase",
                "generate",
                "--gpu",
                gpu,
                "--solve",
                "max_context",
            ],
        );
        let s = &v["solve"];
        assert_eq!(s["position_limit"], positions, "{model}");
        assert_eq!(v["architecture"]["positions"]["max_positions"], positions);
        let (answer, memory) = (
            s["max_context"].as_u64().unwrap(),
            s["memory_max_context"].as_u64().unwrap(),
        );
        // The answer is the lesser bound, and `limited_by` names it.
        assert_eq!(answer, memory.min(positions + 1), "{model}");
        let binds = if memory > positions + 1 {
            "positions"
        } else {
            "memory"
        };
        assert_eq!(s["limited_by"], binds, "{model}");
    }
}

#[test]
fn the_batch_solver_says_when_its_context_passes_the_positions() {
    let t = SiteTest::new();
    let v = json(
        &t,
        &with(&QWEN, &["--prompt_tokens=40000", "--solve", "max_batch"]),
    );
    assert_eq!(v["solve"]["position_limit"], 32768);
    assert!(v["solve"]["max_batch"].as_u64().unwrap() >= 1);
    let within = json(&t, &with(&QWEN, &["--solve", "max_batch"]));
    assert!(within["solve"].get("position_limit").is_none());
}

/// Qwen2.5 3B's config.json, with `extra` keys added.
fn qwen_config(extra: &str) -> String {
    format!(
        "{{\n  \"model_type\": \"qwen2\",\n  \"hidden_act\": \"silu\",\n  \"hidden_size\": 2048,\n  \"intermediate_size\": 11008,\n  \"num_hidden_layers\": 36,\n  \"num_attention_heads\": 16,\n  \"num_key_value_heads\": 2,\n  \"vocab_size\": 151936,\n  \"tie_word_embeddings\": true,\n  \"rope_theta\": 1000000.0,\n  \"max_position_embeddings\": 32768,\n  \"use_sliding_window\": false{extra}\n}}\n"
    )
}

/// `--solve max_context` on an H200 for the model of `config` (a config.json).
fn solve_config(t: &SiteTest, config: &str) -> Value {
    t.file("qwen/config.json", config);
    let args = [
        "--model",
        "qwen/config.json",
        "--phase",
        "generate",
        "--gpu",
        "h200",
    ];
    json(t, &with(&args, &["--solve", "max_context"]))
}

#[test]
fn a_yarn_config_extends_the_bound_to_factor_times_the_original_length() {
    let t = SiteTest::new();
    // Qwen's documented YaRN setting: 4 × 32,768 = 131,072 positions.
    let yarn = ",\n  \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 32768}";
    let v = solve_config(&t, &qwen_config(yarn));
    let s = &v["solve"];
    assert_eq!(s["position_limit"], 131072);
    assert_eq!(s["position_limit_source"], "yarn");
    assert_eq!(
        v["architecture"]["positions"]["scaling"]["type"], "yarn",
        "{}",
        v["architecture"]["positions"]
    );
    // transformers 5's `rope_parameters` says the same; llama3 and linear leave the bound at
    // max_position_embeddings.
    for (extra, bound) in [
        (",\n  \"rope_parameters\": {\"rope_type\": \"yarn\", \"factor\": 2.0, \"original_max_position_embeddings\": 32768, \"rope_theta\": 1000000.0}", 65536),
        (",\n  \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2.0}", 32768),
        // A top-level original_max_position_embeddings wins over the mapping's: 4 × 16,384.
        (",\n  \"original_max_position_embeddings\": 16384,\n  \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": 32768}", 65536),
    ] {
        let v = solve_config(&t, &qwen_config(extra));
        assert_eq!(v["solve"]["position_limit"], bound, "{extra}");
    }
}

#[test]
fn a_config_without_max_position_embeddings_gets_its_classs_default() {
    let t = SiteTest::new();
    let without = |model_type: &str| {
        qwen_config("")
            .replace("\"qwen2\"", model_type)
            .replace("  \"max_position_embeddings\": 32768,\n", "")
    };
    // transformers 5.24: Qwen2Config's 32,768, LlamaConfig's 2,048.
    for (model_type, bound) in [("\"qwen2\"", 32768), ("\"llama\"", 2048)] {
        let v = solve_config(&t, &without(model_type));
        assert_eq!(v["solve"]["position_limit"], bound, "{model_type}");
    }
}

#[test]
fn a_rope_type_transformers_does_not_build_is_refused_at_its_line() {
    let t = SiteTest::new();
    t.file(
        "qwen/config.json",
        &qwen_config(",\n  \"rope_scaling\": {\"type\": \"ntk-by-parts\", \"factor\": 4.0}"),
    );
    let r = t.run(&[
        "estimate",
        "--model",
        "qwen/config.json",
        "--phase",
        "generate",
    ]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr
            .contains("RoPE type \"ntk-by-parts\" is not modelled")
            && r.stderr.contains("config.json:14"),
        "{}",
        r.stderr
    );
    // Phi-3 reads the old "su" as longrope and refuses what its config class refuses.
    let phi3 = |scaling: &str| {
        format!(
            "{{\"model_type\": \"phi3\", \"hidden_act\": \"silu\", \"hidden_size\": 3072, \"intermediate_size\": 8192, \"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"num_key_value_heads\": 32, \"vocab_size\": 32064, \"tie_word_embeddings\": false, \"max_position_embeddings\": 131072, \"original_max_position_embeddings\": 4096, \"rope_scaling\": {scaling}}}\n"
        )
    };
    t.file("phi/config.json", &phi3("{\"type\": \"su\"}"));
    let v = json(&t, &["--model", "phi/config.json", "--phase", "generate"]);
    let scaling = &v["architecture"]["positions"]["scaling"];
    assert_eq!(scaling["type"], "longrope", "{scaling}");
    assert_eq!(scaling["original_max_positions"], 4096);
    t.file(
        "phi/config.json",
        &phi3("{\"type\": \"linear\", \"factor\": 2.0}"),
    );
    let r = t.run(&[
        "estimate",
        "--model",
        "phi/config.json",
        "--phase",
        "generate",
    ]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("Phi-3's config accepts"), "{}", r.stderr);
}

#[test]
fn a_guide_says_when_the_positions_bind_in_its_table_chart_and_fields() {
    let t = SiteTest::new();
    // Phi-3 mini 4k on an H100: its 4,096 positions bind long before the card.
    t.file(
        "content/gen/en.md",
        "---\ntitle: T\nlang: en\ndate: 2026-11-20\nscenario:\n  phase: generate\n  model: phi-3-mini-4k\n  gpu: h100-80gb\n  prompt_tokens: 1024\n  max_new_tokens: 256\n---\n\nPositions: {{ solve.position_limit | int }}; memory alone: {{ solve.memory_max_context | int }}.\n\n{{ solve_table() }}\n\n{{ chart(\"context\") }}\n",
    );
    t.build_ok();
    let md = t.output("en/gen/index.md");
    let cli = json(
        &t,
        &[
            "--model",
            "phi-3-mini-4k",
            "--phase",
            "generate",
            "--gpu",
            "h100-80gb",
            "--prompt_tokens=1024",
            "--max_new_tokens=256",
            "--solve",
            "max_context",
        ],
    );
    let memory = cli["solve"]["memory_max_context"].as_u64().unwrap();
    assert!(
        md.contains(&format!(
            "Positions: 4,096; memory alone: {}.",
            crate::support::grouped(memory)
        )),
        "{md}"
    );
    assert!(
        md.contains("4,097 tokens (3,841 of prompt) (the model's own limit)"),
        "{md}"
    );
    assert!(
        md.contains("The vertical line is the model's own limit, 4,097 tokens"),
        "{md}"
    );
}
