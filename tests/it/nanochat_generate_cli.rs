//! nanochat's generate phase through the real CLI (`estimate --model nanochat-dNN --phase
//! generate`): every catalog depth estimates, its cache is nanochat's own `KVCache` (written out
//! here), the load is a moment of its own, what the Engine does not do is refused, the solvers
//! stop at the rotary tables and agree with a bisection over replays
//! (`tests/data/nanochat_generate_bisect.json`), and the options are the Engine's.

use serde_json::Value;

use crate::nanochat_generate::{architecture, generation, scenario, Run};
use crate::solve_cli::run_json;
use crate::support::SiteTest;
use vramdoc::estimate::{
    generate_max_batch, generate_max_context, what_if_generate, GpuCatalog, Limit, Scenario,
};

/// The report of `estimate` with `args` says `words` in each language.
fn says_in_every_language(t: &SiteTest, args: &[&str], words: [(&str, &str); 3]) {
    for (lang, says) in words {
        let mut all = vec!["estimate"];
        all.extend_from_slice(args);
        all.extend(["--lang", lang]);
        let r = t.run(&all);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains(says), "{lang}: {}", r.stdout);
        assert!(!r.stdout.contains("transformers"), "{lang}: {}", r.stdout);
    }
}

fn u(v: &Value, path: &[&str]) -> u64 {
    path.iter()
        .fold(v, |v, k| &v[*k])
        .as_u64()
        .unwrap_or_else(|| panic!("{path:?} in {v}"))
}

/// Every nanochat depth of the catalog: `n_layer`, `n_kv_head × head_dim` (`n_embd`).
const DEPTHS: [(&str, u64, u64); 5] = [
    ("nanochat-d12", 12, 768),
    ("nanochat-d20", 20, 1280),
    ("nanochat-d24", 24, 1536),
    ("nanochat-d26", 26, 1664),
    ("nanochat-d32", 32, 2048),
];

#[test]
fn every_nanochat_depth_generates_with_its_own_kv_cache_and_load() {
    let t = SiteTest::new();
    for (id, layers, width) in DEPTHS {
        let v = run_json(
            &t,
            &[
                "--model",
                id,
                "--phase",
                "generate",
                "--prompt_tokens=700",
                "--max_new_tokens=300",
                "--batch_size=3",
                "--gpu",
                "h100-80gb",
            ],
        );
        // KVCache(batch_size=3, seq_len=700+300): keys and values of every layer (sliding ones
        // too) in bfloat16, and one int32 position per row.
        let cache = 2 * layers * 3 * 1000 * width * 2 + 4 * 3;
        assert_eq!(u(&v, &["bytes", "kv_cache"]), cache, "{id}");
        let load = u(&v, &["bytes", "load_peak"]);
        let weights = u(&v, &["bytes", "weights"]);
        // to_empty's float32 parameters beside the loaded checkpoint: more than the weights
        // plus four bytes a parameter.
        assert!(load > weights + 4 * u(&v, &["params", "total"]), "{id}");
        let peak = u(&v, &["bytes", "peak"]);
        let moments = [
            load,
            u(&v, &["bytes", "prefill_peak"]),
            u(&v, &["bytes", "decode_peak"]),
        ];
        assert_eq!(peak, *moments.iter().max().unwrap(), "{id}");
        assert_eq!(v["peak_moment"], "load", "{id}: a short call peaks loading");
        assert_eq!(
            v["model"]["nanochat"],
            vramdoc::estimate::arch::NANOCHAT_COMMIT
        );
        assert_eq!(v["verdict"], "fits", "{id}");
    }
}

#[test]
fn a_long_prompt_peaks_at_the_prefill_and_the_report_says_whose_engine() {
    let t = SiteTest::new();
    let args = [
        "--model",
        "nanochat-d20",
        "--phase",
        "generate",
        "--prompt_tokens=16000",
        "--max_new_tokens=64",
        "--gpu",
        "rtx-4090",
    ];
    let v = run_json(&t, &args);
    assert_eq!(v["peak_moment"], "prefill");
    says_in_every_language(
        &t,
        &args,
        [
            ("en", "nanochat’s Engine.generate"),
            ("es", "Engine.generate de nanochat"),
            ("zh", "nanochat 的 Engine.generate"),
        ],
    );
}

#[test]
fn what_the_engine_does_not_do_is_refused_at_its_key() {
    let t = SiteTest::new();
    for (extra, says) in [
        (
            "--kv_cache=static",
            "preallocated to the prompt plus max_tokens",
        ),
        ("--num_return_sequences=2", "give them as batch_size"),
        ("--num_beams=2", "has no beam search"),
        ("--dtype=float16", "float16"),
        // 20,000 + 500 > 10 × 2,048 rotary rows.
        ("--prompt_tokens=20000", "rotary tables"),
    ] {
        let r = t.run(&[
            "estimate",
            "--model",
            "nanochat-d20",
            "--phase",
            "generate",
            extra,
        ]);
        assert_ne!(r.code, 0, "{extra}");
        assert!(r.stderr.contains(says), "{extra}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
}

#[test]
fn the_longest_context_stops_at_the_rotary_tables_in_every_language() {
    let t = SiteTest::new();
    // sequence_len 512: 5,120 rotary rows, far below what an H100 holds.
    let args = [
        "--model",
        "nanochat-d12",
        "--phase",
        "generate",
        "--block_size=512",
        "--max_new_tokens=100",
        "--gpu",
        "h100-80gb",
        "--solve",
        "max_context",
    ];
    let v = run_json(&t, &args);
    assert_eq!(v["solve"]["max_context"], 5120);
    assert_eq!(v["solve"]["prompt_tokens"], 5020);
    assert_eq!(v["solve"]["limited_by"], "rotary_tables");
    says_in_every_language(
        &t,
        &args,
        [
            ("en", "rotary tables"),
            ("es", "tablas rotatorias"),
            ("zh", "旋转位置表"),
        ],
    );
}

/// The options are computed by the nanochat model: fewer rows and fewer tokens, each estimated
/// in full; no Hugging Face cache class; bfloat16 offered for float32.
#[test]
fn the_options_are_the_engines() {
    let catalog = GpuCatalog::builtin();
    let run: Run = serde_json::from_value(serde_json::json!({
        "name": "what-if", "depth": 12, "prompt_tokens": 3000, "max_tokens": 200,
        "num_samples": 16, "max_seq_len": 2048, "window_pattern": "SSSL", "dtype": "float32",
        "temperature": 1.0, "top_k": null, "aspect_ratio": 64, "head_dim": 128
    }))
    .unwrap();
    let a = architecture(&run);
    let s = Scenario {
        gpu: Some("rtx-3060".into()),
        ..scenario(&run)
    };
    let options = what_if_generate(&a, &s, &generation(&run), &catalog).unwrap();
    let kinds: Vec<String> = options
        .iter()
        .map(|o| {
            serde_json::to_value(o.kind)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    for kind in ["dtype", "smaller_batch", "fewer_new_tokens"] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} in {kinds:?}");
    }
    for kind in ["static_cache", "quantized_cache", "fewer_sequences"] {
        assert!(!kinds.iter().any(|k| k == kind), "{kind} in {kinds:?}");
    }
    for o in &options {
        assert!(o.saving_bytes >= 0, "{:?}", o.kind);
    }
}

#[derive(serde::Deserialize)]
struct Bisected {
    nanochat_commit: String,
    cases: Vec<BisectCase>,
}

#[derive(serde::Deserialize)]
struct BisectCase {
    solve: String,
    run: Run,
    budget_peak_bytes: u64,
    answer: u64,
}

/// Each solver's answer is within one step (one row, or 256 tokens) of a bisection over
/// replays of nanochat's own load and `Engine.generate`; in fact within one row or token. The
/// card and other programs' memory make "fits" the same question as "peak ≤ budget".
#[test]
fn the_solvers_agree_with_a_bisection_over_nanochat_replays() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/nanochat_generate_bisect.json"
    );
    let data: Bisected = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(
        data.nanochat_commit,
        vramdoc::estimate::arch::NANOCHAT_COMMIT
    );
    assert_eq!(data.cases.len(), 3);
    let catalog = GpuCatalog::builtin();
    for case in &data.cases {
        let a = architecture(&case.run);
        let s = Scenario {
            gpu: Some("a100-80gb".into()),
            other_processes: crate::solve::other_for_peak_budget(
                "a100-80gb",
                case.budget_peak_bytes,
            ),
            ..scenario(&case.run)
        };
        let g = generation(&case.run);
        let (sol, step) = match case.solve.as_str() {
            "max_batch" => (generate_max_batch(&a, &s, &g, &catalog).unwrap(), 1),
            _ => (generate_max_context(&a, &s, &g, &catalog).unwrap(), 256),
        };
        let got = sol.prompt_tokens.or(sol.value).unwrap();
        assert!(
            got.abs_diff(case.answer) <= step,
            "{}: solver {got}, replays {}",
            case.run.name,
            case.answer
        );
        assert!(got.abs_diff(case.answer) <= 1, "{}", case.run.name);
        if case.run.name.ends_with("rotary") {
            assert_eq!(sol.limited_by, Limit::RotaryTables);
        }
    }
}

/// A prefill that runs out of memory upcasting its logits: the 2 GiB are the prompt's logits
/// of every position in float32 (16,384 × 32,768 × 4 bytes), nanochat's tensor, not a Hugging
/// Face one.
#[test]
fn diagnose_names_the_prompts_float32_logits() {
    let t = SiteTest::new();
    t.file(
        "oom.txt",
        "Traceback (most recent call last):\n  File \"/root/nanochat/scripts/chat_cli.py\", line 89, in <module>\n    for token_column, token_masks in engine.generate(conversation_tokens, **generate_kwargs):\n  File \"/root/nanochat/nanochat/engine.py\", line 186, in generate\n    logits = self.model.forward(ids, kv_cache=kv_cache_prefill)\n  File \"/root/nanochat/nanochat/gpt.py\", line 420, in forward\n    logits = logits.float() # switch to fp32 for logit softcap and loss computation\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 11.76 GiB of which 1.10 GiB is free. Including non-PyTorch memory, this process has 10.65 GiB memory in use. Of the allocated memory 9.20 GiB is allocated by PyTorch, and 1.20 GiB is reserved by PyTorch but unallocated.\n",
    );
    let r = t.run(&[
        "diagnose",
        "oom.txt",
        "--model",
        "nanochat-d20",
        "--phase",
        "generate",
        "--set",
        "prompt_tokens=16384",
        "--set",
        "max_new_tokens=100",
        "--gpu",
        "rtx-3060",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("[1, 16384, 32768] float32 tensor"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("logits.float()"), "{}", r.stdout);
}

/// A nanochat `GPTConfig` given as a config.json: its own `sequence_len` (1,024) sizes the
/// rotary tables, so the context stops at 10,240 tokens and one more is refused at its key.
#[test]
fn a_config_json_brings_its_own_sequence_len() {
    let t = SiteTest::new();
    t.file(
        "d8/config.json",
        r#"{"model_type": "nanochat", "n_layer": 8, "n_head": 4, "n_embd": 512, "sequence_len": 1024, "window_pattern": "SL"}"#,
    );
    let base = ["--model", "d8", "--phase", "generate", "--gpu", "h100-80gb"];
    let mut solve = base.to_vec();
    solve.extend(["--solve", "max_context"]);
    let v = run_json(&t, &solve);
    assert_eq!(v["solve"]["max_context"], 10240);
    assert_eq!(v["solve"]["limited_by"], "rotary_tables");
    let mut past = vec!["estimate"];
    past.extend(base);
    past.extend(["--prompt_tokens=9741", "--max_new_tokens=500"]);
    let r = t.run(&past);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("10241") && r.stderr.contains("10240 rows"),
        "{}",
        r.stderr
    );
}
