//! The batch layouts of TRL's SFTTrainer other than full rows (`batch_layout` padded and
//! padding-free), held to the fake-tensor replay of the Llama family's Trainer step in each
//! (`tools/hf_replay/replay_batches.py` → `tests/data/hf_batch_layout_replay.json`): every
//! replayed peak within 1 % (both steps), parameters, weights, gradients and optimizer bytes
//! exact.

use crate::hf_llama::{architecture, Model};
use crate::trainer_replay::{self, Entry, Replay};
use vramdoc::estimate::TrainMoment;

fn replay() -> Replay<Entry<Model>> {
    trainer_replay::read("hf_batch_layout_replay.json")
}

#[test]
fn every_replayed_padded_and_padding_free_peak_is_within_one_percent() {
    let data = replay();
    for layout in ["padded", "padding_free"] {
        for attn in ["sdpa", "eager"] {
            assert!(
                data.runs.iter().any(|e| {
                    e.run.batch_layout.as_deref() == Some(layout)
                        && e.run.attn_implementation == attn
                }),
                "{layout} {attn}"
            );
        }
    }
    // Multi-query SDPA with a mask: transformers' repeat_kv of one head is a view.
    let refused = [(
        "tiny-llama-mqa-v512-s512-b4-acc1-bf16w-sdpa-padded",
        "batch_layout",
    )];
    let held = trainer_replay::hold(&data, architecture, &refused);
    assert!(held.checked >= 32, "{}", held.checked);
    assert!(
        held.moments
            .contains(&format!("{:?}", TrainMoment::LossBackward)),
        "{:?}",
        held.moments
    );
}
