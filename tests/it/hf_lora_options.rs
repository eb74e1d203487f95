//! What-ifs for PEFT's LoRA on Hugging Face models (`estimate::what_if_model`): LoRA for a full
//! fine-tune, a lower rank and fewer targets for a LoRA run, LoRA in the least invasive
//! combination; each option held to the CLI's own estimate of its changes.

use crate::support::SiteTest;

/// The JSON `what_if` list of `vramdoc estimate` with `args`.
fn what_ifs(t: &SiteTest, args: &[&str]) -> Vec<serde_json::Value> {
    let mut all = vec!["estimate", "--format", "json"];
    all.extend_from_slice(args);
    let r = t.run(&all);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    v["what_if"].as_array().unwrap().clone()
}

/// An option's changes as command-line flags.
pub(crate) fn flags(w: &serde_json::Value) -> Vec<String> {
    w["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "--{}={}",
                c["key"].as_str().unwrap(),
                c["value"].as_str().unwrap()
            )
        })
        .collect()
}

/// Each option's total is the estimate of the run with its changes (computed again through the
/// CLI), and its verdict that estimate's.
fn check_options_against_their_own_estimates(
    t: &SiteTest,
    base: &[&str],
    options: &[serde_json::Value],
) {
    for w in options {
        let mut args: Vec<String> = vec!["estimate".into(), "--format".into(), "json".into()];
        args.extend(base.iter().map(|s| s.to_string()));
        args.extend(flags(w));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = t.run(&refs);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert!(w["total"].is_u64() && w["verdict"].is_string(), "{w}");
        assert_eq!(w["total"], v["bytes"]["total"], "{args:?}");
        assert_eq!(w["verdict"], v["verdict"], "{args:?}");
    }
}

/// A full fine-tune is offered PEFT's LoRA (rank 16 on PEFT's default targets), ranked after the
/// options that keep full training and before QLoRA and a shorter context, marked as changing
/// training; where nothing alone fits, LoRA is part of the least invasive combination that does.
#[test]
fn a_full_fine_tune_is_offered_lora_alone_and_in_the_least_invasive_combination() {
    let t = SiteTest::new();
    let base = [
        "--model=llama-3.1-8b",
        "--gpu=rtx-4090",
        "--batch_size=4",
        "--dtype=bfloat16",
        "--pure_bf16=True",
    ];
    let options = what_ifs(&t, &base);
    let kinds: Vec<&str> = options
        .iter()
        .map(|w| w["kind"].as_str().unwrap())
        .collect();
    let lora = kinds
        .iter()
        .position(|k| *k == "lora")
        .expect("a LoRA option");
    let shorter = kinds.iter().position(|k| *k == "block_size").unwrap();
    let checkpoint = kinds.iter().position(|k| *k == "grad_checkpoint").unwrap();
    assert!(checkpoint < lora && lora < shorter, "{kinds:?}");
    let w = &options[lora];
    assert_eq!(flags(w), ["--lora_rank=16", "--lora_targets=q_proj,v_proj"]);
    assert_eq!(w["changes_training"], true);
    // QLoRA (later: it also quantizes the base) fits alone here.
    let qlora = kinds
        .iter()
        .position(|k| *k == "qlora")
        .expect("a QLoRA option");
    assert!(lora < qlora, "{kinds:?}");
    check_options_against_their_own_estimates(&t, &base, &options);
    // GPT-2 large on a T4 (no bf16, so no QLoRA): nothing alone fits; SDPA and LoRA on
    // GPT-2's default c_attn at micro-batch 1 do.
    let t4 = [
        "--model=gpt2-large",
        "--gpu=t4",
        "--batch_size=8",
        "--dtype=float16",
        "--flash=False",
    ];
    let options = what_ifs(&t, &t4);
    assert!(options.iter().all(|w| w["kind"] != "qlora"));
    let combination = options
        .iter()
        .find(|w| w["kind"] == "combination")
        .expect("a combination");
    assert_eq!(combination["fits"], true);
    assert_eq!(
        flags(combination),
        [
            "--batch_size=1",
            "--gradient_accumulation_steps=8",
            "--flash=True",
            "--lora_rank=16"
        ]
    );
    assert_eq!(combination["scenario"]["lora_targets"], "attn.c_attn");
    check_options_against_their_own_estimates(&t, &t4, &options);
    // Phi-3 has no PEFT default: its LoRA option adapts every Linear.
    let phi = what_ifs(
        &t,
        &[
            "--model=phi-3-mini-4k",
            "--gpu=rtx-4090",
            "--dtype=bfloat16",
        ],
    );
    let w = phi.iter().find(|w| w["kind"] == "lora").unwrap();
    assert_eq!(flags(w), ["--lora_rank=16", "--lora_targets=all-linear"]);
}

/// A LoRA run is offered half its rank, then PEFT's default targets when it adapts more, each
/// with its verdict, and through the text report with PEFT's names.
#[test]
fn a_lora_run_is_offered_a_lower_rank_and_fewer_targets() {
    let t = SiteTest::new();
    let base = [
        "--model=llama-3.1-8b",
        "--gpu=rtx-4090",
        "--lora_rank=16",
        "--lora_targets=all-linear",
        "--lora_dropout=0.05",
        "--batch_size=4",
        "--block_size=2048",
        "--dtype=bfloat16",
        "--pure_bf16=True",
    ];
    let options = what_ifs(&t, &base);
    let lora: Vec<Vec<String>> = options
        .iter()
        .filter(|w| w["kind"] == "lora")
        .map(flags)
        .collect();
    assert_eq!(
        lora,
        [vec!["--lora_rank=8"], vec!["--lora_targets=q_proj,v_proj"]]
    );
    check_options_against_their_own_estimates(&t, &base, &options);
    let mut args = vec!["estimate"];
    args.extend_from_slice(&base);
    let r = t.run(&args);
    assert!(
        r.stdout.contains("PEFT LoRA, rank 8 on all-linear"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("PEFT LoRA, rank 16 on q_proj,v_proj"),
        "{}",
        r.stdout
    );
}

/// The paged 8-bit optimizer is labelled as such beside the 8-bit one, in every language.
#[test]
fn the_paged_optimizer_option_has_its_own_label() {
    let t = SiteTest::new();
    for (lang, eight, paged) in [
        ("en", "8-bit AdamW (bitsandbytes", "Paged 8-bit AdamW"),
        (
            "es",
            "AdamW de 8 bits (bitsandbytes",
            "AdamW de 8 bits paginado",
        ),
        ("zh", "8 位 AdamW（bitsandbytes", "分页 8 位 AdamW"),
    ] {
        let r = t.run(&[
            "estimate",
            "--model",
            "llama-3.1-8b",
            "--gpu",
            "rtx-4090",
            "--lang",
            lang,
        ]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let rows: Vec<&str> = r.stdout.lines().collect();
        let row = |flag: &str| {
            rows.iter()
                .find(|l| l.contains(flag))
                .unwrap_or_else(|| panic!("{lang}: no {flag} row in {}", r.stdout))
                .to_string()
        };
        assert!(row("--optimizer=adamw8bit").contains(eight), "{lang}");
        assert!(row("--optimizer=paged_adamw8bit").contains(paged), "{lang}");
    }
}
