//! Names as people paste them: a card as `nvidia-smi` prints it, another tool's setting names
//! (TrainingArguments, PEFT, axolotl, LLaMA-Factory), Trainer's optimizer names. Each either
//! finds what it means or is refused with the vramdoc name to use.

use crate::support::SiteTest;

/// The card spelled as nvidia-smi, an out-of-memory message or a person writes it finds the
/// catalog's card: the same estimate as its id.
#[test]
fn a_card_spelled_as_nvidia_smi_prints_it_is_the_catalogs_card() {
    let t = SiteTest::new();
    let by_id = t.estimate_json(&["--model", "gpt2", "--gpu", "rtx-4090"]);
    for name in [
        "RTX 4090",
        "NVIDIA GeForce RTX 4090",
        "rtx_4090",
        "GeForce RTX 4090",
    ] {
        let r = t.estimate_json(&["--model", "gpt2", "--gpu", name]);
        assert_eq!(r["verdict"], by_id["verdict"], "{name}");
        assert_eq!(r["bytes"], by_id["bytes"], "{name}");
    }
}

/// A card number alone or a typo is refused, naming the ids it may have meant first.
#[test]
fn an_unknown_card_is_refused_with_the_ids_it_may_have_meant() {
    let t = SiteTest::new();
    for (typed, meant) in [
        ("4090", "rtx-4090"),
        ("rtx-4900", "rtx-4090"),
        ("3090 Ti", "rtx-3090-ti"),
        ("a100-80", "a100-80gb"),
    ] {
        let r = t.run(&["estimate", "--model", "gpt2", "--gpu", typed]);
        assert_eq!(r.code, 1, "{typed}: {}", r.stdout);
        let hint = r
            .stderr
            .split("did you mean ")
            .nth(1)
            .and_then(|rest| rest.split('?').next())
            .unwrap_or_else(|| panic!("{typed}: no hint in {}", r.stderr));
        assert!(hint.contains(meant), "{typed}: {hint}");
    }
    let r = t.run(&["estimate", "--model", "gpt2", "--gpu", "my-cluster"]);
    assert_eq!(r.code, 1);
    assert!(!r.stderr.contains("did you mean"), "{}", r.stderr);
    assert!(r.stderr.contains("known ids: "), "{}", r.stderr);
}

/// Settings under another tool's name are refused (they may not mean the same thing), and the
/// error names vramdoc's key, or says the setting changes no memory.
#[test]
fn another_tools_setting_names_vramdocs_key() {
    let t = SiteTest::new();
    for (set, says) in [
        ("gradient_checkpointing=True", "`grad_checkpoint`"),
        ("per_device_train_batch_size=2", "`batch_size`"),
        ("max_seq_length=2048", "`block_size`"),
        ("cutoff_len=2048", "`block_size`"),
        ("optim=adamw_bnb_8bit", "`optimizer`"),
        ("bf16=True", "`dtype` bfloat16"),
        ("r=16", "`lora_rank`"),
        ("target_modules=q_proj", "`lora_targets`"),
        ("lora_alpha=32", "changes no memory"),
    ] {
        let r = t.run(&["estimate", "--model", "llama-3.2-1b", "--set", set]);
        assert_eq!(r.code, 1, "{set}: {}", r.stdout);
        assert!(
            r.stderr.contains("unknown scenario key"),
            "{set}: {}",
            r.stderr
        );
        assert!(r.stderr.contains(says), "{set}: {}", r.stderr);
    }
    // nanoGPT's --key=value form gets it too.
    let r = t.run(&[
        "estimate",
        "--model",
        "llama-3.2-1b",
        "--gradient_checkpointing=True",
    ]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stderr.contains("`grad_checkpoint`"), "{}", r.stderr);
    // A YAML scenario gets the same hint at the line.
    t.file(
        "s.yaml",
        "model: llama-3.2-1b\ngradient_checkpointing: true\n",
    );
    let r = t.run(&["estimate", "s.yaml"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("s.yaml:2"), "{}", r.stderr);
    assert!(r.stderr.contains("`grad_checkpoint`"), "{}", r.stderr);
}

/// Trainer's default `optim="adamw_torch_fused"` is vramdoc's `adamw` (what the replays
/// run); the unfused `adamw_torch` is refused with why.
#[test]
fn trainers_optimizer_names_read_as_trainer_means_them() {
    let t = SiteTest::new();
    let base = ["--model", "llama-3.2-1b", "--set", "block_size=256"];
    let fused = t.estimate_json(&[&base[..], &["--set", "optimizer=adamw_torch_fused"]].concat());
    let ours = t.estimate_json(&[&base[..], &["--set", "optimizer=adamw"]].concat());
    assert_eq!(fused["bytes"], ours["bytes"]);
    let eight = t.estimate_json(&[&base[..], &["--set", "optimizer=adamw_bnb_8bit"]].concat());
    let ours8 = t.estimate_json(&[&base[..], &["--set", "optimizer=adamw8bit"]].concat());
    assert_eq!(eight["bytes"], ours8["bytes"]);
    let r = t.run(
        &[
            &["estimate"][..],
            &base[..],
            &["--set", "optimizer=adamw_torch"],
        ]
        .concat(),
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stderr.contains("foreach"), "{}", r.stderr);
}

/// `--set lora_targets=all-linear` as a shell passes it, unquoted: Python would read
/// `all - linear` (and fail on the builtin `all`); the value is the string typed, the same
/// estimate as the quoted form and as a scenario file's.
#[test]
fn an_unquoted_all_linear_on_the_command_line_is_the_string_typed() {
    let t = SiteTest::new();
    t.file(
        "s.yaml",
        "model: llama-3.2-1b\nlora_rank: 8\nlora_targets: all-linear\n",
    );
    let file = t.estimate_json(&["s.yaml"]);
    for value in ["all-linear", "'all-linear'"] {
        let set = format!("lora_targets={value}");
        let cli = t.estimate_json(&[
            "--model",
            "llama-3.2-1b",
            "--set",
            "lora_rank=8",
            "--set",
            &set,
        ]);
        assert_eq!(cli["bytes"], file["bytes"], "{value}");
        assert_eq!(cli["params"], file["params"], "{value}");
    }
    // Bare words that are not a target are still refused, naming the family's modules.
    let r = t.run(&[
        "estimate",
        "--model",
        "llama-3.2-1b",
        "--set",
        "lora_rank=8",
        "--set",
        "lora_targets=all-linears",
    ]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stderr.contains("all-linears"), "{}", r.stderr);
}
