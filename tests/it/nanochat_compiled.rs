//! nanochat's compiled training step (`torch.compile(model)` as `base_train.py` runs it), held to
//! the replay of inductor on nanochat's own code
//! (`tools/nanochat_replay/replay_nanochat_compiled.py` → `tests/data/nanochat_compiled_replay.json`,
//! its `inductor` runs): what the partition saves for backward and every replayed peak (both
//! steps) within 1 %, and the low end of the compiled range (the peak without the C++ backend's
//! float32 logits buffer: the replay's backward and optimizer phases) within 1 %.

use serde::Deserialize;

use crate::hf_gpt2::within_one_percent;
use crate::nanochat::{architecture, run_scenario as scenario, Run};
use vramdoc::estimate::arch::NANOCHAT_COMMIT;
use vramdoc::estimate::nanochat::compiled_saved_bytes;
use vramdoc::estimate::{estimate_model, GpuCatalog};

#[derive(Deserialize)]
struct Replay {
    nanochat_commit: String,
    torch: String,
    runs: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    run: Run,
    backend: String,
    params: u64,
    saved_activation_bytes: u64,
    train_peak_bytes: u64,
    first_step_peak_bytes: u64,
    phase_peaks: std::collections::BTreeMap<String, u64>,
}

fn replay() -> Replay {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/nanochat_compiled_replay.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn relative(got: u128, want: u64) -> f64 {
    (got as f64 - want as f64).abs() / want as f64
}

#[test]
fn the_compiled_step_is_within_one_percent_of_inductors_replay() {
    let data = replay();
    assert_eq!(data.nanochat_commit, NANOCHAT_COMMIT, "the pinned nanochat");
    assert_eq!(data.torch, "2.15.0", "the pinned torch");
    let runs: Vec<&Entry> = data
        .runs
        .iter()
        .filter(|e| e.backend == "inductor")
        .collect();
    assert!(runs.len() >= 8, "{} inductor runs", runs.len());
    let catalog = GpuCatalog::builtin();
    for e in runs {
        let name = &e.run.name;
        let model = architecture(&e.run);
        let run = scenario(&e.run);
        let est = estimate_model(&model, &run, &catalog).unwrap();
        assert_eq!(est.params.total, e.params, "{name}: parameters");
        let saved = compiled_saved_bytes(&model, &run);
        let err = relative(saved, e.saved_activation_bytes);
        eprintln!(
            "{name}: saved {:+} bytes ({:.5} %)",
            saved as i128 - i128::from(e.saved_activation_bytes),
            err * 100.0
        );
        assert!(err <= 0.01, "{name}: saved {err}");
        within_one_percent(name, &est, e.train_peak_bytes, e.first_step_peak_bytes);
        assert!(!est.eager_upper_bound, "{name}: compiled");
        let low = est
            .compiled_peak_low
            .expect("a compiled nanochat step has a low end");
        let replayed_low = e.phase_peaks["backward"].max(e.phase_peaks["optimizer step"]);
        let err = relative(u128::from(low), replayed_low);
        eprintln!(
            "{name}: low end {low} vs {replayed_low} ({:.5} %)",
            err * 100.0
        );
        assert!(err <= 0.01, "{name}: low end {err}");
        assert!(
            low <= est.bytes.train_peak,
            "{name}: the low end is below the peak"
        );
    }
}

#[test]
fn the_partition_saves_the_same_set_under_both_backends() {
    // aot_eager with inductor's partition and inductor itself save the same tensors; the
    // unfused graph's peak is above inductor's.
    let data = replay();
    for e in data.runs.iter().filter(|e| e.backend == "partition") {
        let inductor = data
            .runs
            .iter()
            .find(|i| i.backend == "inductor" && i.run.name == e.run.name)
            .unwrap();
        assert_eq!(
            e.saved_activation_bytes, inductor.saved_activation_bytes,
            "{}",
            e.run.name
        );
        assert!(
            e.train_peak_bytes >= inductor.train_peak_bytes,
            "{}",
            e.run.name
        );
    }
}
