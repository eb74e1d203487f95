//! Liger Kernel's fused linear cross-entropy on Gemma 2 and Gemma 3 (`fused_linear_cross_entropy:
//! true`, the softcap applied in Liger's kernel), held to the replay of `replay_gemma.py`'s step
//! with Liger's function ported allocation for allocation
//! (`tools/hf_replay/replay_fused_ce.py --gemma` → `tests/data/hf_gemma_fused_ce_replay.json`):
//! every peak within 1 %, parameters, gradients and optimizer bytes exact, or refused by name.

use crate::hf_gemma::{architecture, Model};
use crate::trainer_replay::{self, Entry, Replay};

fn replay() -> Replay<Entry<Model>> {
    trainer_replay::read("hf_gemma_fused_ce_replay.json")
}

/// The checkpointed runs whose recomputed block may pass the fused step's moments (a
/// 4608-token Gemma 2 2B, a 4096-token Gemma 3 1B), refused as without Liger.
const REFUSED: [(&str, &str); 2] = [
    (
        "gemma-2-2b-2layers-s4608-b1-acc2-bf16w-eager-ckpt-liger",
        "grad_checkpoint",
    ),
    (
        "gemma-3-1b-s4096-b1-acc1-bf16w-sdpa-ckpt-liger",
        "grad_checkpoint",
    ),
];

#[test]
fn gemma_with_the_fused_cross_entropy_is_within_one_percent_of_every_replayed_peak() {
    let data = replay();
    assert!(data.runs.iter().all(|e| e.run.fused_cross_entropy));
    let held = trainer_replay::hold(&data, architecture, &REFUSED);
    assert!(held.checked >= 19, "{}", held.checked);
    // With no logits the peak is the fused chunk, the tied embedding's gradients at the end of
    // backward, or (4608 tokens, eager) the last layer's softmax backward.
    for m in ["LossForward", "BackwardEnd", "AttentionBackward"] {
        assert!(held.moments.contains(m), "{m}: {:?}", held.moments);
    }
}
