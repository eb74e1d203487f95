//! Liger Kernel's fused linear cross-entropy on the Llama family (`fused_linear_cross_entropy:
//! true`), held to the replay of the Trainer step with Liger's function ported allocation for
//! allocation (`tools/hf_replay/replay_fused_ce.py` → `tests/data/hf_fused_ce_replay.json`):
//! every peak within 1 %, parameters, gradients and optimizer bytes exact.

use crate::hf_llama::{architecture, Model};
use crate::trainer_replay::{self, Entry, Replay};

fn replay() -> Replay<Entry<Model>> {
    trainer_replay::read("hf_fused_ce_replay.json")
}

#[test]
fn the_fused_cross_entropy_is_within_one_percent_of_every_replayed_peak() {
    let data = replay();
    assert!(data.runs.iter().all(|e| e.run.fused_cross_entropy));
    let held = trainer_replay::hold(&data, architecture, &[]);
    assert!(held.checked >= 18, "{}", held.checked);
}
