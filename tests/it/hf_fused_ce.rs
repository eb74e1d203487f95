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

/// Mixtral's and Qwen3-MoE's step with the fused cross-entropy, the mixtures Liger patches
/// (`replay_fused_ce.py --moe` → `tests/data/hf_moe_fused_ce_replay.json`).
#[test]
fn mixtures_of_experts_with_the_fused_cross_entropy_are_within_one_percent() {
    let data: Replay<Entry<crate::hf_moe::Model>> =
        trainer_replay::read("hf_moe_fused_ce_replay.json");
    assert!(data.runs.iter().all(|e| e.run.fused_cross_entropy));
    let held = trainer_replay::hold(&data, crate::hf_moe::architecture, &[]);
    assert!(held.checked >= 6, "{}", held.checked);
}

/// Qwen2.5 0.5B's 152k vocabulary, fully fine-tuned in bf16 at 2048 tokens, micro-batch 8, on
/// an A100 40GB: the loss's `12·s·b·V` float32 buffers (29.9 GB) alone pass the card, and the
/// fused cross-entropy turns "does not fit" into "fits", through the real CLI, marked as a patch.
#[test]
fn the_fused_cross_entropy_makes_a_large_vocabulary_fit_through_the_cli() {
    let base = [
        "--model",
        "qwen2.5-0.5b",
        "--batch_size=8",
        "--block_size=2048",
        "--dtype=bfloat16",
        "--pure_bf16=True",
        "--gpu",
        "a100-40gb",
    ];
    let v = trainer_replay::cli(&base);
    assert_eq!(v["verdict"], "does_not_fit", "{}", v["verdict"]);
    assert_eq!(v["train_peak_moment"], "loss_backward");
    let option = v["what_if"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "fused_cross_entropy")
        .expect("the fused cross-entropy among the options");
    assert_eq!(option["fits"], true, "{option}");
    assert_eq!(option["changes_training"], false);
    assert_eq!(
        option["changes"][0]["key"], "fused_linear_cross_entropy",
        "{option}"
    );
    // The same run with the key set: a user who already runs Liger gets it as the estimate.
    let mut fused = base.to_vec();
    fused.push("--fused_linear_cross_entropy=True");
    let f = trainer_replay::cli(&fused);
    assert_eq!(f["verdict"], "fits");
    assert_eq!(f["bytes"]["total"], option["total"]);
    assert_eq!(f["scenario"]["fused_linear_cross_entropy"], true);
    // Without it, the loss's backward holds 12·s·b·V bytes of float32 buffers:
    // 12 · 16,384 · 151,936 = 29,871,833,088, more than the whole fused step.
    let sbv12 = 12u64 * 2048 * 8 * 151_936;
    assert_eq!(sbv12, 29_871_833_088);
    assert!(f["bytes"]["train_peak"].as_u64().unwrap() < sbv12);
    // The table marks it as a patch (‡) and says what to run.
    let t = crate::support::SiteTest::new();
    let mut args = vec!["estimate"];
    args.extend_from_slice(&base);
    let r = t.run(&args);
    let row = r
        .stdout
        .lines()
        .find(|l| l.contains("Fused linear cross-entropy"))
        .expect("its row");
    assert!(row.contains('‡') && !row.contains('†'), "{row}");
    assert!(
        r.stdout.contains("‡ a patch to the model's code")
            && r.stdout.contains(
                "_apply_liger_kernel_to_instance(model=model, fused_linear_cross_entropy=True"
            ),
        "{}",
        r.stdout
    );
}

/// Refused by name where Liger has no patch, or vramdoc no replay: GPT-2, nanoGPT, Gemma with
/// QLoRA, Qwen2-MoE, QLoRA where a recomputed block may pass the loss, a mixture of experts with
/// LoRA.
#[test]
fn the_fused_cross_entropy_is_refused_where_it_is_not_modelled() {
    let t = crate::support::SiteTest::new();
    for (args, says) in [
        (
            vec!["--model", "gpt2", "--fused_linear_cross_entropy=True"],
            "is computed for a Llama-family model",
        ),
        (
            vec!["--fused_linear_cross_entropy=True"],
            "nanoGPT's model.py is not one Liger Kernel patches",
        ),
        (
            vec![
                "--model",
                "gemma-2-2b",
                "--load_in_4bit=True",
                "--lora_rank=8",
                "--fused_linear_cross_entropy=True",
            ],
            "not with QLoRA",
        ),
        (
            vec![
                "--model",
                "qwen1.5-moe-a2.7b",
                "--fused_linear_cross_entropy=True",
            ],
            "not Qwen2-MoE",
        ),
        (
            vec![
                "--model",
                "qwen2.5-0.5b",
                "--load_in_4bit=True",
                "--lora_rank=16",
                "--fused_linear_cross_entropy=True",
            ],
            "no longer clearly sets QLoRA's peak",
        ),
        (
            vec![
                "--model",
                "mixtral-8x7b",
                "--lora_rank=16",
                "--lora_targets=q_proj,v_proj",
                "--fused_linear_cross_entropy=True",
            ],
            "not with LoRA",
        ),
    ] {
        let mut all = vec!["estimate"];
        all.extend_from_slice(&args);
        let r = t.run(&all);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stdout);
        assert!(
            r.stderr.contains("fused_linear_cross_entropy") && r.stderr.contains(says),
            "{args:?}: {}",
            r.stderr
        );
    }
}

/// What `block_size` means is said with every Hugging Face training estimate: full rows with no
/// padding and no mask, and the key for the other layouts (`src/scenario/model/batches.rs`).
#[test]
fn a_trainer_estimate_says_what_its_rows_are() {
    let t = crate::support::SiteTest::new();
    for model in ["qwen2.5-0.5b", "gpt2", "gemma-2-2b"] {
        let r = t.run(&["estimate", "--model", model, "--block_size=512"]);
        assert_eq!(r.code, 0, "{model}: {}", r.stderr);
        let note = r
            .stderr
            .lines()
            .find(|l| l.contains("block_size is the length of every row"))
            .unwrap_or_else(|| panic!("{model}: {}", r.stderr));
        for says in [
            "no padding and no attention mask",
            "packing_strategy=\"wrapped\"",
            "padding_free=True",
            "--batch_layout=padded",
        ] {
            assert!(note.contains(says), "{model}: {says}: {note}");
        }
    }
}
