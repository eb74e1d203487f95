//! `num_beams` (Hugging Face `generate`'s beam search) through the real CLI: 1, the default, is
//! greedy or sampling decoding and changes nothing; more is refused at its line with what beam
//! search allocates that vramdoc does not compute, in every input form; nanoGPT's sample.py has
//! no such setting, and nanochat's Engine no beam search. The beam replays
//! (`tests/data/hf_generate_beams_replay.json`, `tools/hf_replay/replay_generate_beams.py`) hold
//! the cache rule the refusal states: `batch · num_beams` sequences, to the byte.

use serde::Deserialize;
use vramdoc::estimate::kv_cache::{cache_bytes, CacheKind, CacheRun};

use crate::hf_generate::{inputs, Replay, Run};
use crate::nanogpt_configs::SAMPLE_PY;
use crate::support::SiteTest;

/// The beam count beside `hf_generate.rs`'s run fields.
#[derive(Deserialize)]
struct Beams {
    num_beams: u64,
}

#[test]
fn a_beam_search_cache_holds_batch_times_beams_sequences_to_the_byte() {
    let text = std::fs::read_to_string("tests/data/hf_generate_beams_replay.json").unwrap();
    let replay: Replay<Run> = serde_json::from_str(&text).unwrap();
    let beams: Replay<Beams> = serde_json::from_str(&text).unwrap();
    assert_eq!(replay.transformers, "5.24.0");
    assert_eq!(replay.runs.len(), 4);
    let mut families = Vec::new();
    for (e, b) in replay.runs.iter().zip(&beams.runs) {
        let r = &e.run;
        let (a, _, _) = inputs(r);
        assert!(b.run.num_beams > 1, "{}", r.name);
        assert_eq!(r.cache, "dynamic", "{}", r.name);
        let element_bytes = if r.dtype == "float32" { 4 } else { 2 };
        let run = CacheRun {
            kind: CacheKind::Dynamic,
            element_bytes,
            sequences: r.batch_size * b.run.num_beams,
            prompt: r.prompt_tokens,
            new_tokens: r.max_new_tokens,
        };
        let got = cache_bytes(&a, &run).unwrap();
        assert_eq!(got.at_end, e.kv_cache_bytes, "{}", r.name);
        // Independently: 2 (keys, values) × layers × KV heads × head dim × (P + N − 1) tokens
        // × sequences × element bytes.
        let per_token = 2 * a.layers * a.attention.kv_heads * a.attention.head_dim;
        let tokens = r.prompt_tokens + r.max_new_tokens - 1;
        assert_eq!(
            e.kv_cache_bytes,
            per_token * tokens * run.sequences * element_bytes,
            "{}",
            r.name
        );
        families.push((r.family.clone(), a.attention.kv_heads < a.attention.heads));
    }
    // GPT-2 (multi-head) and a grouped-query Llama shape are both held.
    assert!(families.contains(&("gpt2".into(), false)));
    assert!(families.contains(&("llama".into(), true)));
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
fn beams_are_refused_at_their_line_with_what_is_not_modelled() {
    let t = SiteTest::new();
    t.file(
        "beams.yaml",
        "phase: generate\nmodel: llama-3.2-1b\ngpu: rtx-4070\nnum_beams: 4\n",
    );
    let from_file = t.run(&["estimate", "beams.yaml"]);
    let (code, _, from_set) = llama(&t, &["--set", "num_beams=4"]);
    assert_ne!(code, 0);
    assert_ne!(from_file.code, 0);
    for stderr in [&from_set, &from_file.stderr] {
        assert!(stderr.contains("`num_beams` > 1"), "{stderr}");
        assert!(stderr.contains("beam search is not modelled"), "{stderr}");
        assert!(stderr.contains("batch × num_beams"), "{stderr}");
        assert!(stderr.contains("leave num_beams at 1"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert!(
        from_file.stderr.contains("beams.yaml:4"),
        "{}",
        from_file.stderr
    );
    // GPT-2 and a static cache: the same refusal, not a figure.
    let r = t.run(&[
        "estimate",
        "--model",
        "gpt2",
        "--phase",
        "generate",
        "--kv_cache=static",
        "--num_beams=2",
    ]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("beam search is not modelled"),
        "{}",
        r.stderr
    );
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
