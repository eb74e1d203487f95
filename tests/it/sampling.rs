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

/// A replayed `sample.py` run's settings (also what `gpu_measured` reads for the measured runs).
#[derive(Deserialize)]
pub(crate) struct Setting {
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
pub(crate) fn request(s: &Setting) -> (Scenario, Sampling) {
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

mod properties {
    use proptest::prelude::*;
    use vramdoc::estimate::{estimate_sampling, Dtype, GpuCatalog, InitFrom, Sampling, Scenario};

    fn model() -> impl Strategy<Value = Scenario> {
        (
            (1u64..=24, 1u64..=16, 1u64..=64, 1u64..=60_000, 1u64..=2048),
            (
                prop_oneof![
                    Just(Dtype::Float32),
                    Just(Dtype::Bfloat16),
                    Just(Dtype::Float16)
                ],
                any::<bool>(),
                any::<bool>(),
            ),
        )
            .prop_map(|((l, a, hd, v, s), (dtype, flash, bias))| Scenario {
                n_layer: l,
                n_head: a,
                n_embd: a * hd,
                vocab_size: v,
                block_size: s,
                dtype,
                flash,
                bias,
                init_from: InitFrom::Resume,
                ..Scenario::default()
            })
    }

    fn run() -> impl Strategy<Value = Sampling> {
        (
            1u64..=3000,
            1u64..=3000,
            1u64..=4,
            proptest::option::of(1u64..=500),
        )
            .prop_map(|(prompt, new, samples, top_k)| Sampling {
                prompt_tokens: prompt,
                max_new_tokens: new,
                num_samples: samples,
                top_k,
            })
    }

    proptest! {
        /// A longer prompt or more new tokens (a longer context, more ids) never needs less.
        #[test]
        fn memory_never_decreases_with_a_longer_context(
            m in model(),
            r in run(),
            more_prompt in 0u64..=2000,
            more_new in 0u64..=2000,
        ) {
            let catalog = GpuCatalog::builtin();
            let base = estimate_sampling(&m, &r, &catalog).unwrap();
            let longer = Sampling {
                prompt_tokens: r.prompt_tokens + more_prompt,
                max_new_tokens: r.max_new_tokens + more_new,
                ..r
            };
            let more = estimate_sampling(&m, &longer, &catalog).unwrap();
            prop_assert!(more.bytes.peak >= base.bytes.peak);
            prop_assert!(more.context_tokens >= base.context_tokens);
            prop_assert!(more.context_tokens <= m.block_size);
            let b = more.bytes;
            prop_assert!(b.total_low <= b.total && b.total <= b.total_high);
        }
    }
}
