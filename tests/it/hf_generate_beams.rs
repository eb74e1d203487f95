//! `num_beams` (Hugging Face `generate`'s beam search): every beam replay
//! (`tests/data/hf_generate_beams_replay.json`, `tools/hf_replay/replay_generate_beams.py`) held
//! by the estimator (the cache of `batch · num_beams` sequences to the byte, both peaks within
//! 1 %), and through the real CLI: 1, the default, changes nothing; more gives an estimate that
//! says what it assumes, with its what-ifs; what is not replayed (a static or quantized cache,
//! bitsandbytes weights, sliding-window layers) or what transformers refuses is refused at its
//! line; nanoGPT's sample.py has no such setting, and nanochat's Engine no beam search.

use serde::Deserialize;
use vramdoc::estimate::arch::Architecture;
use vramdoc::estimate::kv_cache::{cache_bytes, CacheKind, CacheRun};
use vramdoc::estimate::{estimate_generate, Dtype, Generation, GpuCatalog, QuantType, Scenario};

use crate::hf_generate::{inputs, Replay, Run};
use crate::nanogpt_configs::SAMPLE_PY;
use crate::support::SiteTest;

/// The beam count beside `hf_generate.rs`'s run fields.
#[derive(Deserialize)]
struct Beams {
    num_beams: u64,
    num_return_sequences: u64,
}

/// The beam replays: each run with its beam count.
fn replay() -> (Replay<Run>, Vec<Beams>) {
    let text = std::fs::read_to_string("tests/data/hf_generate_beams_replay.json").unwrap();
    let replay: Replay<Run> = serde_json::from_str(&text).unwrap();
    let beams: Replay<Beams> = serde_json::from_str(&text).unwrap();
    assert_eq!(replay.transformers, "5.24.0");
    (replay, beams.runs.into_iter().map(|e| e.run).collect())
}

/// The estimator's inputs for a beam run: greedy beams, `num_return_sequences` of them returned.
fn beam_inputs(r: &Run, b: &Beams) -> (Architecture, Scenario, Generation) {
    let (a, s, g) = inputs(r);
    let g = Generation {
        num_beams: b.num_beams,
        num_return_sequences: b.num_return_sequences,
        do_sample: false,
        ..g
    };
    (a, s, g)
}

/// `s` with a run's bitsandbytes weights (`replay_generate_bnb.py`'s fields), if it has them.
fn with_bnb(s: Scenario, run: &serde_json::Value) -> Scenario {
    let Some(quant) = run["weights_quant"].as_str() else {
        return s;
    };
    if quant == "int8" {
        return Scenario {
            load_in_8bit: true,
            ..s
        };
    }
    Scenario {
        load_in_4bit: true,
        bnb_4bit_quant_type: if quant == "nf4" {
            QuantType::Nf4
        } else {
            QuantType::Fp4
        },
        bnb_4bit_use_double_quant: run["double_quant"].as_bool().unwrap(),
        bnb_4bit_compute_dtype: Dtype::parse(run["compute_dtype"].as_str().unwrap()).unwrap(),
        ..s
    }
}

/// Within `tolerance` of `want`, relatively.
pub(crate) fn within(got: u64, want: u64, tolerance: f64) -> bool {
    (got as f64 - want as f64).abs() <= tolerance * want as f64
}

#[test]
fn a_beam_search_cache_holds_batch_times_beams_sequences_to_the_byte() {
    let (replay, beams) = replay();
    let mut families = Vec::new();
    for (e, b) in replay.runs.iter().zip(&beams) {
        let r = &e.run;
        // Sliding-window layers keep fewer tokens with beams (the tests below).
        if r.family == "mistral" || r.family.starts_with("gemma") {
            continue;
        }
        let (a, _, _) = inputs(r);
        assert!(b.num_beams > 1, "{}", r.name);
        let kind = match r.cache.as_str() {
            "dynamic" => CacheKind::Dynamic,
            "static" => CacheKind::Static,
            other => panic!("{}: {other}", r.name),
        };
        let element_bytes = if r.dtype == "float32" { 4 } else { 2 };
        let run = CacheRun {
            kind,
            element_bytes,
            sequences: r.batch_size * b.num_beams,
            prompt: r.prompt_tokens,
            new_tokens: r.max_new_tokens,
        };
        let got = cache_bytes(&a, &run).unwrap();
        assert_eq!(got.at_end, e.kv_cache_bytes, "{}", r.name);
        // Independently: 2 (keys, values) × layers × KV heads × head dim × (P + N − 1)
        // tokens × sequences × element bytes; a static layer's slots as many, and its 8-byte
        // `cumulative_length`.
        let per_token = 2 * a.layers * a.attention.kv_heads * a.attention.head_dim;
        let tokens = r.prompt_tokens + r.max_new_tokens - 1;
        let counters = if kind == CacheKind::Static {
            8 * a.layers
        } else {
            0
        };
        assert_eq!(
            e.kv_cache_bytes,
            per_token * tokens * run.sequences * element_bytes + counters,
            "{}",
            r.name
        );
        families.push((r.family.clone(), a.attention.kv_heads < a.attention.heads));
    }
    // GPT-2 (multi-head), grouped-query and multi-head Llama shapes and a mixture of experts
    // are all held.
    for held in [
        ("gpt2", false),
        ("llama", true),
        ("llama", false),
        ("mixtral", true),
    ] {
        assert!(families.contains(&(held.0.into(), held.1)), "{held:?}");
    }
}

#[test]
fn every_beam_replay_s_peaks_are_within_one_percent_and_its_cache_exact() {
    let (replay, beams) = replay();
    let text = std::fs::read_to_string("tests/data/hf_generate_beams_replay.json").unwrap();
    let raw: serde_json::Value = serde_json::from_str(&text).unwrap();
    let catalog = GpuCatalog::builtin();
    let mut checked = 0;
    for (i, (e, b)) in replay.runs.iter().zip(&beams).enumerate() {
        let r = &e.run;
        if r.family.starts_with("gemma") {
            continue;
        }
        let (a, s, g) = beam_inputs(r, b);
        let s = with_bnb(s, &raw["runs"][i]["run"]);
        let est = estimate_generate(&a, &s, &g, &catalog).unwrap();
        let got = &est.bytes;
        eprintln!(
            "{}: prefill {} vs {} ({:+.3} %), decode {} vs {} ({:+.3} %)",
            r.name,
            got.prefill_peak,
            e.prefill_peak_bytes,
            (got.prefill_peak as f64 / e.prefill_peak_bytes as f64 - 1.0) * 100.0,
            got.decode_peak,
            e.decode_peak_bytes,
            (got.decode_peak as f64 / e.decode_peak_bytes as f64 - 1.0) * 100.0,
        );
        assert_eq!(got.kv_cache_at_end, e.kv_cache_bytes, "{}", r.name);
        assert_eq!(got.weights, e.weights_bytes, "{}", r.name);
        assert!(
            within(got.prefill_peak, e.prefill_peak_bytes, 0.01),
            "{}: prefill {} vs replay {}",
            r.name,
            got.prefill_peak,
            e.prefill_peak_bytes
        );
        assert!(
            within(got.decode_peak, e.decode_peak_bytes, 0.01),
            "{}: decode {} vs replay {}",
            r.name,
            got.decode_peak,
            e.decode_peak_bytes
        );
        checked += 1;
    }
    assert_eq!(checked, 24);
}

const LLAMA: [&str; 7] = [
    "estimate",
    "--model",
    "llama-3.2-1b",
    "--phase",
    "generate",
    "--gpu",
    "rtx-4070",
];

/// `vramdoc estimate` on Llama 3.2 1B's generate with `extra`: (exit code, stdout, stderr).
fn llama(t: &SiteTest, extra: &[&str]) -> (i32, String, String) {
    let mut args = LLAMA.to_vec();
    args.extend_from_slice(extra);
    let r = t.run(&args);
    (r.code, r.stdout, r.stderr)
}

#[test]
fn num_beams_1_is_the_estimate_without_it() {
    let t = SiteTest::new();
    let (code, plain, err) = llama(&t, &["--format", "json"]);
    assert_eq!(code, 0, "{err}");
    for given in [&["--set", "num_beams=1"][..], &["--num_beams=1"][..]] {
        let mut extra = given.to_vec();
        extra.extend(["--format", "json"]);
        let (code, out, err) = llama(&t, &extra);
        assert_eq!(code, 0, "{given:?}: {err}");
        assert_eq!(out, plain, "{given:?}");
    }
}

#[test]
fn a_sliding_window_with_beams_ends_one_token_shorter() {
    // `reorder_cache` copies a window layer's view (its last window − 1 tokens) out of the
    // larger tensor it lives in: the cache ends one token per layer shorter than without beams,
    // and right after the prefill the prompt's whole storage sits beside the first copy.
    let (replay, beams) = replay();
    let catalog = GpuCatalog::builtin();
    let mut windows = 0;
    for (e, b) in replay.runs.iter().zip(&beams) {
        let r = &e.run;
        // The dynamic cache's view; a static cache's slots are copied whole.
        if r.family != "mistral" || r.cache != "dynamic" {
            continue;
        }
        let (a, s, g) = beam_inputs(r, b);
        let window = a.attention.sliding_window.as_ref().unwrap().window;
        let per_token = 2 * a.layers * a.attention.kv_width() * r.batch_size * b.num_beams * 2;
        let tokens = (r.prompt_tokens + r.max_new_tokens - 1).min(window - 1);
        // The cache's tensors plus each layer's 8-byte `_sliding_window_tensor`.
        assert_eq!(
            e.kv_cache_bytes,
            per_token * tokens + 8 * a.layers,
            "{}",
            r.name
        );
        let est = estimate_generate(&a, &s, &g, &catalog).unwrap();
        assert_eq!(est.bytes.kv_cache_at_end, e.kv_cache_bytes, "{}", r.name);
        // Without beams the same sequences end holding the window's whole storage.
        let sampled = Generation {
            num_beams: 1,
            do_sample: true,
            num_return_sequences: b.num_beams,
            ..g
        };
        let without = estimate_generate(&a, &s, &sampled, &catalog).unwrap();
        assert_eq!(
            without.bytes.kv_cache_at_end - est.bytes.kv_cache_at_end,
            per_token,
            "{}",
            r.name
        );
        windows += 1;
    }
    assert_eq!(windows, 2);
}

const README_BEAMS: [&str; 11] = [
    "--model",
    "llama-3.2-1b",
    "--phase",
    "generate",
    "--set",
    "num_beams=4",
    "--set",
    "prompt_tokens=2000",
    "--gpu",
    "rtx-4070",
    "--lang=en",
];

#[test]
fn the_beam_search_command_gives_an_estimate_that_says_what_it_assumes() {
    let t = SiteTest::new();
    let mut args = vec!["estimate"];
    args.extend_from_slice(&README_BEAMS);
    let r = t.run(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Beam search"), "{}", r.stdout);
    assert!(r.stdout.contains("4 beams per prompt"), "{}", r.stdout);
    assert!(r.stdout.contains("no beam finishes early"), "{}", r.stdout);
    assert!(r.stdout.contains("8 candidates"), "{}", r.stdout);
    assert!(r.stdout.contains("Half the beams"), "{}", r.stdout);
    assert!(r.stdout.contains("--num_beams=1"), "{}", r.stdout);
    let json = t.estimate_json(&README_BEAMS);
    assert_eq!(json["generation"]["num_beams"], 4);
    // Llama 3.2 1B: 16 layers, 8 KV heads of 64, bfloat16; 4 sequences of 2,000 + 500 − 1.
    let kv = 2 * 16 * 8 * 64 * 2 * 4 * (2000 + 500 - 1);
    assert_eq!(json["bytes"]["kv_cache"], kv);
    // The same call from a file, its keys at their lines.
    t.file(
        "beams.yaml",
        "phase: generate\nmodel: llama-3.2-1b\ngpu: rtx-4070\nnum_beams: 4\nprompt_tokens: 2000\n",
    );
    assert_eq!(t.estimate_json(&["beams.yaml"]), json);
    // One beam is the estimate without beams; more beams, more memory at both peaks.
    let plain = t.estimate_json(&README_BEAMS[..4]);
    assert!(plain["generation"].get("num_beams").is_none());
    let one = t.estimate_json(&[&README_BEAMS[..4], &["--set", "prompt_tokens=2000"]].concat());
    for peak in ["prefill_peak", "decode_peak"] {
        assert!(
            json["bytes"][peak].as_u64() > one["bytes"][peak].as_u64(),
            "{peak}"
        );
    }
    // Each what-if is a full estimate of the changed call.
    let options = json["what_if"].as_array().unwrap();
    let half = options.iter().find(|o| o["kind"] == "fewer_beams").unwrap();
    assert_eq!(half["generation"]["num_beams"], 2);
    assert_eq!(half["kv_cache"], kv / 2);
    let none = options.iter().find(|o| o["kind"] == "no_beams").unwrap();
    assert_eq!(none["total"], one["bytes"]["total"]);
}

#[test]
fn beams_are_refused_at_their_line_where_they_are_not_modelled() {
    let t = SiteTest::new();
    let file = |name: &str, extra: &str| {
        t.file(
            name,
            &format!("phase: generate\nmodel: llama-3.2-1b\ngpu: rtx-4070\n{extra}"),
        );
        let r = t.run(&["estimate", name]);
        assert_ne!(r.code, 0, "{name}");
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
        r.stderr
    };
    let err = file("quantized.yaml", "num_beams: 2\nkv_cache: quantized\n");
    assert!(err.contains("quantized.yaml:4"), "{err}");
    assert!(err.contains("dynamic and static caches"), "{err}");
    let err = file("fp8.yaml", "kv_cache: fp8\nnum_beams: 4\n");
    assert!(err.contains("fp8.yaml:5"), "{err}");
    // Gemma's static cache with beams is computed.
    let json = t.estimate_json(&[
        "--model",
        "gemma-3-1b",
        "--phase",
        "generate",
        "--kv_cache=static",
        "--num_beams=2",
    ]);
    assert_eq!(json["generation"]["num_beams"], 2);
    // transformers' own words.
    let err = file("more.yaml", "num_return_sequences: 5\nnum_beams: 4\n");
    assert!(
        err.contains("`num_return_sequences` (5) has to be smaller or equal to `num_beams` (4)"),
        "{err}"
    );
    assert!(err.contains("more.yaml:4"), "{err}");
    // Gemma 2 and 3 and Mistral v0.1 (sliding windows) are computed.
    for model in ["gemma-3-1b", "gemma-2-2b"] {
        let json = t.estimate_json(&["--model", model, "--phase", "generate", "--num_beams=2"]);
        assert_eq!(json["generation"]["num_beams"], 2, "{model}");
    }
    let json = t.estimate_json(&[
        "--model",
        "mistral-7b-v0.1",
        "--phase",
        "generate",
        "--num_beams=2",
        "--prompt_tokens=5000",
    ]);
    // 32 layers, 8 KV heads of 128, bfloat16, 2 sequences: the window's 4,095 kept tokens.
    assert_eq!(
        json["bytes"]["kv_cache_at_end"],
        2 * 32 * 8 * 128 * 2 * 2 * 4095 + 8 * 32
    );
    // nanochat's Engine has no beam search.
    let r = t.run(&[
        "estimate",
        "--model",
        "nanochat-d20",
        "--phase",
        "generate",
        "--num_beams=2",
    ]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("no beam search"), "{}", r.stderr);
    // Training has no beams.
    let r = t.run(&[
        "estimate",
        "--model",
        "llama-3.2-1b",
        "--set",
        "num_beams=4",
    ]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains(
            "`num_beams` is a setting of Hugging Face generate, and this scenario is phase = train"
        ),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("add --phase generate"), "{}", r.stderr);
    t.file(
        "train.yaml",
        "model: llama-3.2-1b\ngpu: rtx-4070\nnum_beams: 2\n",
    );
    let r = t.run(&["estimate", "train.yaml"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("train.yaml:3"), "{}", r.stderr);
}

#[test]
fn num_beams_below_one_or_not_a_number_is_refused_at_its_key() {
    let t = SiteTest::new();
    for (value, says) in [("0", "at least 1"), ("four", "num_beams")] {
        let (code, _, err) = llama(&t, &["--set", &format!("num_beams={value}")]);
        assert_ne!(code, 0, "{value}");
        assert!(err.contains(says), "{value}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn sample_py_has_no_num_beams() {
    let t = SiteTest::new();
    t.file("sample.py", SAMPLE_PY);
    let r = t.run(&["estimate", "sample.py", "--init_from=gpt2", "--num_beams=2"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr
            .contains("`num_beams` is a setting of Hugging Face generate"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_solvers_answer_with_beams_at_their_boundary() {
    let t = SiteTest::new();
    let base = [
        "--model",
        "llama-3.2-1b",
        "--phase",
        "generate",
        "--num_beams=4",
        "--gpu",
        "rtx-4070",
    ];
    let with = |extra: &[&str]| t.estimate_json(&[&base[..], extra].concat());
    let verdict = |extra: &[&str]| with(extra)["verdict"].as_str().unwrap().to_owned();
    // The largest batch: it fits, one prompt more does not; fewer than without beams.
    let batch = with(&["--solve", "max_batch"])["solve"]["max_batch"]
        .as_u64()
        .unwrap();
    assert_eq!(verdict(&[&format!("--batch_size={batch}")]), "fits");
    assert_ne!(verdict(&[&format!("--batch_size={}", batch + 1)]), "fits");
    let greedy = t.estimate_json(&[
        "--model",
        "llama-3.2-1b",
        "--phase",
        "generate",
        "--gpu",
        "rtx-4070",
        "--solve",
        "max_batch",
    ])["solve"]["max_batch"]
        .as_u64()
        .unwrap();
    assert!(batch < greedy, "{batch} vs {greedy}");
    // The longest context: its prompt fits, one token more does not.
    let solved = with(&["--batch_size=8", "--solve", "max_context"]);
    let context = solved["solve"]["max_context"].as_u64().unwrap();
    let prompt = context - 500;
    let at = |p: u64| verdict(&["--batch_size=8", &format!("--prompt_tokens={p}")]);
    assert_eq!(at(prompt), "fits");
    assert_ne!(at(prompt + 1), "fits");
}

/// A bisection over beam replays (`tools/hf_replay/bisect_generate_beams.py`).
#[derive(Deserialize)]
struct Bisected {
    cases: Vec<BisectCase>,
}

#[derive(Deserialize)]
struct BisectCase {
    solve: String,
    run: Run,
    budget_peak_bytes: u64,
    answer: u64,
}

/// Each solver's answer with beams is within one step (one prompt, or 256 tokens) of a
/// bisection over replays of transformers' own beam search
/// (`tests/data/hf_generate_beams_bisect.json`: GPT-2's largest batch and longest prompt with 4
/// beams, Llama 3.2 1B's grouped-query shape's longest prompt with 8), in fact within one.
#[test]
fn the_solvers_with_beams_agree_with_a_bisection_over_beam_replays() {
    let text = std::fs::read_to_string("tests/data/hf_generate_beams_bisect.json").unwrap();
    let data: Bisected = serde_json::from_str(&text).unwrap();
    let beams: serde_json::Value = serde_json::from_str(&text).unwrap();
    let catalog = GpuCatalog::builtin();
    assert_eq!(data.cases.len(), 3);
    for (i, case) in data.cases.iter().enumerate() {
        let b = Beams {
            num_beams: beams["cases"][i]["run"]["num_beams"].as_u64().unwrap(),
            num_return_sequences: 1,
        };
        let (a, _, g) = beam_inputs(&case.run, &b);
        let s = Scenario {
            gpu: Some("a100-80gb".to_owned()),
            other_processes: crate::solve::other_for_peak_budget(
                "a100-80gb",
                case.budget_peak_bytes,
            ),
            compile: false,
            ..Scenario::default()
        };
        let (got, step) = match case.solve.as_str() {
            "max_batch" => (
                vramdoc::estimate::generate_max_batch(&a, &s, &g, &catalog)
                    .unwrap()
                    .value,
                1,
            ),
            _ => (
                vramdoc::estimate::generate_max_context(&a, &s, &g, &catalog)
                    .unwrap()
                    .prompt_tokens,
                256,
            ),
        };
        let got = got.unwrap();
        assert!(
            got.abs_diff(case.answer) <= step,
            "{}: {got} vs {}",
            case.run.name,
            case.answer
        );
        assert!(
            got.abs_diff(case.answer) <= 1,
            "{}: {got} vs {}",
            case.run.name,
            case.answer
        );
    }
}
