//! QLoRA on the catalog's mixtures of experts through the CLI: the float32 experts that keep
//! the whole Mixtral 8x7B off every card, and the catalog ids held to the replays of the whole
//! models (`tests/data/hf_moe_peft_replay.json`, `tools/hf_replay/replay_moe_peft.py`).

use crate::hf_moe_peft::{replay, run};

/// QLoRA on the full Mixtral 8x7B (the command): its float32 experts alone pass every
/// card's capacity, so it does not fit even on the largest card with the smallest batch; the
/// what-ifs' attention-only LoRA targets spare only the experts' merged copies, never the
/// experts.
#[test]
fn mixtral_qlora_does_not_fit_on_any_card_and_its_what_ifs_keep_the_float32_experts() {
    let t = crate::support::SiteTest::new();
    let json = |args: &[&str]| {
        let r = run(&t, "mixtral-8x7b", &[args, &["--format", "json"]].concat());
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        serde_json::from_str::<serde_json::Value>(&r.stdout).unwrap()
    };
    // Every expert of the 32 layers in float32: gate_up (8, 2·14336, 4096) and down
    // (8, 4096, 14336).
    let experts = 8u64 * 3 * 14336 * 4096 * 32 * 4;
    let all = json(&[
        "--load_in_4bit=True",
        "--lora_rank=16",
        "--lora_targets=all-linear",
        "--gpu=a100-80gb",
    ]);
    assert_eq!(all["verdict"], "does_not_fit", "{all}");
    assert!(all["bytes"]["weights"].as_u64().unwrap() > experts);
    let options = all["what_if"].as_array().unwrap();
    let attention = options
        .iter()
        .find(|w| w["changes"][0]["value"] == "q_proj,k_proj,v_proj,o_proj")
        .expect("the attention's projections");
    let total = attention["total"].as_u64().unwrap();
    assert!(
        total < all["bytes"]["total"].as_u64().unwrap(),
        "{attention}"
    );
    assert!(total > experts, "{attention}");
    assert!(options.iter().all(|w| w["verdict"] == "does_not_fit"));
    // The least it can need: rank 8 on q and v, one 256-token sequence, on the largest card.
    let least = json(&[
        "--load_in_4bit=True",
        "--lora_rank=8",
        "--lora_targets=q_proj,v_proj",
        "--batch_size=1",
        "--block_size=256",
        "--gpu=b200",
    ]);
    assert_eq!(least["verdict"], "does_not_fit", "{least}");
    assert!(least["bytes"]["total_low"].as_u64().unwrap() > 191_501_434_880);
}

/// The catalog's whole Mixtral 8x7B and Qwen3-30B-A3B under QLoRA through the CLI by their ids:
/// the training peak and the first step's within 1 % of the replays of all 32 and 48 layers
/// (Mixtral's led by a recomputed block's float32 experts, Qwen3-30B-A3B's by the loss).
#[test]
fn catalog_moe_qlora_peaks_through_the_cli_are_within_one_percent_of_their_replays() {
    let data = replay();
    let t = crate::support::SiteTest::new();
    for (id, name, targets, moment) in [
        (
            "mixtral-8x7b",
            "qlora-mixtral-8x7b-r16-all-s1024-b1-acc1-bf16w-autocast-adamw",
            "all-linear",
            "block_recompute",
        ),
        (
            "qwen3-30b-a3b",
            "qlora-qwen3-30b-a3b-r16-q+v-s1024-b1-acc1-bf16w-autocast-adamw",
            "q_proj,v_proj",
            "loss_backward",
        ),
    ] {
        let e = data.runs.iter().find(|e| e.run.name == name).unwrap();
        let r = run(
            &t,
            id,
            &[
                "--load_in_4bit=True",
                "--lora_rank=16",
                &format!("--lora_targets={targets}"),
                "--batch_size=1",
                "--block_size=1024",
                "--format=json",
            ],
        );
        assert_eq!(r.code, 0, "{id}: {}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(v["train_peak_moment"], moment, "{id}");
        for (got, want) in [
            (&v["bytes"]["peak"], e.train_peak_bytes),
            (&v["bytes"]["first_step_peak"], e.first_step_peak_bytes),
        ] {
            let err = (got.as_u64().unwrap() as f64 - want as f64).abs() / want as f64;
            assert!(err < 0.01, "{id}: {got} vs {want}");
        }
        assert_eq!(v["params"]["trainable"], e.trainable_params, "{id}");
    }
}
