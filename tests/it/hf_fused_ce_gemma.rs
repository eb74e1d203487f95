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

/// Gemma's LoRA replays with the fused cross-entropy (`replay_fused_ce_peft.py --gemma`).
#[derive(serde::Deserialize)]
struct LoraReplay {
    liger_kernel: String,
    runs: Vec<crate::hf_lora::Entry<Model>>,
}

/// Gemma's LoRA runs are estimated only where the fused function clearly passes any block's
/// backward (`GemmaLoraStep::block_bound`): float32 weights under autocast, where Liger casts
/// the frozen float32 head to bf16 for each chunk's products. The others are refused at the key.
const LORA_ESTIMATED: [&str; 2] = [
    "gemma-2-2b-2layers-r8-all-s1024-b1-acc1-autocast-eager-ckpt-liger",
    "gemma-3-1b-6layers-r8-q+k+v+o-s768-b2-acc1-autocast-eager-liger",
];

#[test]
fn gemma_lora_with_the_fused_cross_entropy_is_within_one_percent_or_refused() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/hf_gemma_fused_ce_lora_replay.json"
    );
    let data: LoraReplay = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(data.liger_kernel, "0.8.5");
    let catalog = vramdoc::estimate::GpuCatalog::builtin();
    let (mut estimated, mut refused) = (0, 0);
    for e in &data.runs {
        let name = &e.run.name;
        let model = architecture(&e.run.model);
        let mut run = crate::hf_lora::scenario_with(&e.run, 0.0);
        run.fused_linear_cross_entropy = true;
        let result = vramdoc::estimate::estimate_model(&model, &run, &catalog);
        if !LORA_ESTIMATED.contains(&name.as_str()) {
            let err = result.unwrap_err();
            assert_eq!(
                err.key.as_deref(),
                Some("fused_linear_cross_entropy"),
                "{name}: {}",
                err.message
            );
            assert!(
                err.message.contains("a block's backward may"),
                "{}",
                err.message
            );
            refused += 1;
            continue;
        }
        let est = result.unwrap();
        assert_eq!(est.bytes.optimizer, e.optimizer_bytes, "{name}: optimizer");
        crate::hf_gpt2::within_one_percent(name, &est, e.train_peak_bytes, e.first_step_peak_bytes);
        estimated += 1;
    }
    assert_eq!(estimated, LORA_ESTIMATED.len());
    assert!(refused >= 10, "{refused}");
}
