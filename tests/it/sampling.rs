//! Sampling with nanoGPT's `sample.py` against its replay on PyTorch fake tensors
//! (`tools/nanogpt_replay/sample_replay.py`, output in `tests/data/nanogpt_sample_replay.json`):
//! parameters and every replayed peak exact to the byte, and the CLI reading sample.py
//! as nanoGPT runs it.

use serde::Deserialize;
use vramdoc::estimate::{estimate_sampling, Dtype, GpuCatalog, InitFrom, Sampling, Scenario};

#[derive(Deserialize)]
struct Replay {
    samplings: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    name: String,
    scenario: Setting,
    params: Counts,
    peak_bytes: u64,
}

#[derive(Deserialize)]
struct Counts {
    total: u64,
}

#[derive(Deserialize)]
struct Setting {
    init_from: String,
    n_layer: u64,
    n_head: u64,
    n_embd: u64,
    vocab_size: u64,
    block_size: u64,
    bias: bool,
    dtype: String,
    flash: bool,
    prompt_tokens: u64,
    max_new_tokens: u64,
    num_samples: u64,
    top_k: Option<u64>,
}

fn replay() -> Replay {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/nanogpt_sample_replay.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("replay data")).expect("json")
}

/// The scenario and request the replayed run stands for. For a GPT-2 checkpoint only
/// `init_from` is given, as sample.py's command line gives it: the shape must come from it.
fn request(s: &Setting) -> (Scenario, Sampling) {
    let mut sc = Scenario {
        init_from: InitFrom::parse(&s.init_from).expect("init_from"),
        dtype: Dtype::parse(&s.dtype).expect("dtype"),
        flash: s.flash,
        ..Scenario::default()
    };
    if sc.init_from == InitFrom::Resume {
        sc.n_layer = s.n_layer;
        sc.n_head = s.n_head;
        sc.n_embd = s.n_embd;
        sc.vocab_size = s.vocab_size;
        sc.block_size = s.block_size;
        sc.bias = s.bias;
    }
    let run = Sampling {
        prompt_tokens: s.prompt_tokens,
        max_new_tokens: s.max_new_tokens,
        num_samples: s.num_samples,
        top_k: s.top_k,
    };
    (sc, run)
}

#[test]
fn every_replayed_sampling_peak_is_exact() {
    let catalog = GpuCatalog::builtin();
    let data = replay();
    assert!(data.samplings.len() >= 15);
    let mut worst = (0.0f64, String::new());
    for e in &data.samplings {
        let (sc, run) = request(&e.scenario);
        let est = estimate_sampling(&sc, &run, &catalog)
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        assert_eq!(est.params.total, e.params.total, "{}: parameters", e.name);
        assert_eq!(est.scenario.block_size, e.scenario.block_size, "{}", e.name);
        let diff = (est.bytes.peak as f64 - e.peak_bytes as f64) / e.peak_bytes as f64;
        eprintln!(
            "{}: estimate {} replay {} ({:+.4} %)",
            e.name,
            est.bytes.peak,
            e.peak_bytes,
            diff * 100.0
        );
        if diff.abs() > worst.0 {
            worst = (diff.abs(), e.name.clone());
        }
        let b = est.bytes;
        assert_eq!(
            b.weights
                + b.checkpoint
                + b.autocast_weights
                + b.activations
                + b.sampling
                + b.token_ids,
            b.peak,
            "{}: the components add up to the peak",
            e.name
        );
        assert_eq!(b.kv_cache, 0, "nanoGPT keeps no KV cache");
    }
    assert!(
        worst.0 == 0.0,
        "worst {:.4} % ({})",
        worst.0 * 100.0,
        worst.1
    );
}
