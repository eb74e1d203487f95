//! The batch layouts of TRL's SFTTrainer other than full rows (`batch_layout` padded and
//! padding-free), held to the fake-tensor replay of the Llama family's and the mixtures of
//! experts' Trainer step in each (`tools/hf_replay/replay_batches.py` →
//! `tests/data/hf_batch_layout_replay.json`, `hf_moe_batch_layout_replay.json`): every replayed
//! peak within 1 % (both steps), parameters, weights, gradients and optimizer bytes exact.

use crate::hf_llama::{architecture, Model};
use crate::support::SiteTest;
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

#[test]
fn every_replayed_mixture_of_experts_layout_is_within_one_percent() {
    let data: Replay<Entry<crate::hf_moe::Model>> =
        trainer_replay::read("hf_moe_batch_layout_replay.json");
    let held = trainer_replay::hold(&data, crate::hf_moe::architecture, &[]);
    assert!(held.checked >= 12, "{}", held.checked);
}

#[test]
fn every_replayed_trl_qlora_layout_is_within_one_percent() {
    let data = crate::hf_trl::read("hf_trl_batch_layout_replay.json");
    let (checked, refused) = crate::hf_trl::hold(&data, &[]);
    assert_eq!((checked, refused), (data.runs.len(), 0));
    assert!(checked >= 6, "{checked}");
}

/// Philipp Schmid's Llama 3.1 8B QLoRA (rank 256 on every linear layer) as TRL's SFTTrainer runs
/// it by default, padded rows, through the CLI: the replay of that step with all 32 layers.
#[test]
fn schmids_qlora_in_trls_default_padded_rows_gives_its_replayed_peak_through_the_cli() {
    let data = crate::hf_trl::read("hf_trl_batch_layout_replay.json");
    let name = "trl-qlora-llama-3.1-8b-s2048-b1-acc2-r256-adamw-padded-lora_dropout0.05";
    let want = data
        .runs
        .iter()
        .find(|e| e.run.name == name)
        .expect("replayed")
        .train_peak_bytes;
    let v = crate::trainer_replay::cli(&[
        "--model",
        "llama-3.1-8b",
        "--trainer=trl",
        "--load_in_4bit=true",
        "--bnb_4bit_quant_type=nf4",
        "--bnb_4bit_use_double_quant=True",
        "--bnb_4bit_compute_dtype=bfloat16",
        "--lora_rank=256",
        "--lora_targets=all-linear",
        "--lora_dropout=0.05",
        "--dtype=bfloat16",
        "--grad_checkpoint=True",
        "--block_size=2048",
        "--batch_size=1",
        "--gradient_accumulation_steps=2",
        "--batch_layout=padded",
    ]);
    let est = v["bytes"]["train_peak"].as_u64().unwrap();
    assert!(est.abs_diff(want) * 100 <= want, "{est} against {want}");
}

/// The replayed peak of the run `name`.
fn replayed(name: &str) -> u64 {
    replay()
        .runs
        .iter()
        .find(|e| e.run.name == name)
        .unwrap_or_else(|| panic!("{name} is replayed"))
        .train_peak_bytes
}

#[test]
fn a_catalog_model_in_each_layout_gives_its_replayed_peak_through_the_cli() {
    // The replay's runs of Qwen3 0.6B and Llama 3.2 1B have all their layers, bf16 weights (the
    // catalog's torch_dtype) and no autocast (Trainer's default).
    for (model, layout, attn, s, name) in [
        (
            "qwen3-0.6b",
            "padded",
            "sdpa",
            1024,
            "qwen3-0.6b-s1024-b2-acc1-bf16w-sdpa-padded",
        ),
        (
            "llama-3.2-1b",
            "padding_free",
            "sdpa",
            1024,
            "llama-3.2-1b-s1024-b2-acc1-bf16w-sdpa-padding_free",
        ),
        (
            "llama-3.2-1b",
            "padding_free",
            "flash_attention_2",
            2048,
            "llama-3.2-1b-s2048-b2-acc1-bf16w-flash_attention_2-padding_free",
        ),
    ] {
        let t = SiteTest::new();
        let args = [
            "estimate",
            "--model",
            model,
            "--batch_size=2",
            &format!("--block_size={s}"),
            "--gradient_accumulation_steps=1",
            &format!("--batch_layout={layout}"),
            &format!("--attn_implementation={attn}"),
        ];
        let mut json = args.to_vec();
        json.extend(["--format", "json"]);
        let r = t.run(&json);
        assert_eq!(r.code, 0, "{model}: {}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(v["scenario"]["batch_layout"], layout);
        assert_eq!(v["scenario"]["attn_implementation"], attn);
        let est = v["bytes"]["train_peak"].as_u64().unwrap();
        let want = replayed(name);
        assert!(
            est.abs_diff(want) * 100 <= want,
            "{name}: {est} against {want}"
        );
        // The note says what the rows are in this layout.
        let says = match layout {
            "padded" => format!("longest row is block_size = {s} tokens"),
            _ => format!("one row of batch_size·block_size = {} tokens", 2 * s),
        };
        assert!(r.stderr.contains(&says), "{model}: {}", r.stderr);
    }
}

#[test]
fn attn_implementation_is_flash_by_its_transformers_name_and_a_contradiction_is_refused() {
    let t = SiteTest::new();
    let base = ["estimate", "--model", "qwen2.5-0.5b", "--block_size=512"];
    let peak = |extra: &str| {
        let mut args = base.to_vec();
        args.extend([extra, "--format", "json"]);
        let r = t.run(&args);
        assert_eq!(r.code, 0, "{extra}: {}", r.stderr);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        (
            v["bytes"]["train_peak"].as_u64().unwrap(),
            v["scenario"]["attn_implementation"].clone(),
        )
    };
    let eager = peak("--attn_implementation=eager");
    assert_eq!(eager, peak("--flash=False"));
    assert_eq!(eager.1, "eager");
    assert_eq!(peak("--attn_implementation=sdpa"), peak("--flash=True"));
    assert!(peak("--attn_implementation=sdpa").0 < eager.0);
    // Both given, contradicting: refused at the line, in YAML as on the command line.
    t.file(
        "run.yaml",
        "model: qwen2.5-0.5b\nflash: true\nattn_implementation: eager\n",
    );
    let r = t.run(&["estimate", "run.yaml"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stderr.contains("run.yaml:3"), "{}", r.stderr);
    assert!(
        r.stderr.contains("`flash` = True say different things"),
        "{}",
        r.stderr
    );
    // Agreeing, both are accepted.
    t.file(
        "ok.yaml",
        "model: qwen2.5-0.5b\nflash: false\nattn_implementation: eager\nblock_size: 512\n",
    );
    let r = t.run(&["estimate", "ok.yaml", "--format", "json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // A typo lists the values.
    let r = t.run(&[
        "estimate",
        "--model",
        "qwen2.5-0.5b",
        "--attn_implementation=flash",
    ]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("sdpa (transformers' default), eager or flash_attention_2"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_keys_read_as_users_write_them_in_yaml_and_python() {
    let t = SiteTest::new();
    // A dash, capitals, quotes: the same layout; a Python config as train.py's are written.
    t.file(
        "run.yaml",
        "model: qwen3-0.6b\nbatch_layout: Padding-Free\nattn_implementation: 'eager'\nblock_size: 512\nbatch_size: 2\n",
    );
    t.file(
        "run.py",
        "model = 'qwen3-0.6b'\nbatch_layout = 'padding_free'\nflash = False\nblock_size = 512\nbatch_size = 2\n",
    );
    let yaml = crate::trainer_replay::cli_in(&t, &["run.yaml"]);
    let py = crate::trainer_replay::cli_in(&t, &["run.py"]);
    assert_eq!(yaml["scenario"]["batch_layout"], "padding_free");
    assert_eq!(yaml["bytes"], py["bytes"]);
    // An unknown value is an error at its line that lists the layouts.
    t.file("bad.yaml", "model: qwen3-0.6b\nbatch_layout: packed\n");
    let r = t.run(&["estimate", "bad.yaml"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("bad.yaml:2"), "{}", r.stderr);
    assert!(
        r.stderr.contains("padding_free (TRL's padding_free=True"),
        "{}",
        r.stderr
    );
}

#[test]
fn what_is_not_replayed_is_refused_by_name() {
    let t = SiteTest::new();
    for (args, says) in [
        (
            vec![
                "--model",
                "qwen3-0.6b",
                "--attn_implementation=flash_attention_2",
                "--batch_layout=padded",
            ],
            "padded rows with flash-attn are unpadded",
        ),
        (
            vec![
                "--model",
                "qwen3-0.6b",
                "--attn_implementation=flash_attention_2",
                "--weights_dtype=float32",
            ],
            "\"FlashAttention only support fp16 and bf16 data type\"",
        ),
        (
            vec!["--model", "gpt2", "--attn_implementation=flash_attention_2"],
            "the Llama family and the mixtures of experts only",
        ),
        (
            vec!["--model", "gpt2", "--batch_layout=padded"],
            "not for gpt2 (hf_gpt2)",
        ),
        (
            vec!["--model", "gemma-2-2b", "--batch_layout=padding_free"],
            "(gemma2)",
        ),
        (
            vec![
                "--model",
                "qwen3-0.6b",
                "--lora_rank=8",
                "--batch_layout=padded",
            ],
            "not for PEFT's LoRA",
        ),
        (
            vec!["--batch_layout=padded"],
            "setting of Hugging Face models",
        ),
        // A step's refusal of an attention is said at the key given, not at `flash`.
        (
            vec!["--model", "gemma-2-2b", "--attn_implementation=sdpa"],
            "--attn_implementation=sdpa: `attn_implementation`: attn_implementation = sdpa",
        ),
        (
            vec![
                "--model",
                "qwen3-0.6b",
                "--phase=generate",
                "--prompt_tokens=512",
                "--max_new_tokens=64",
                "--attn_implementation=eager",
            ],
            "`attn_implementation`: attn_implementation = eager (flash = False)",
        ),
        (
            vec!["--attn_implementation=eager"],
            "setting of Hugging Face models",
        ),
    ] {
        let mut all = vec!["estimate"];
        all.extend(args.iter());
        let r = t.run(&all);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stdout);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn padded_rows_are_offered_in_place_of_a_padding_free_batch() {
    // Eager attention over one row of 8 × 2048 tokens: its scores grow with (b·s)².
    let v = crate::trainer_replay::cli(&[
        "--model",
        "qwen3-0.6b",
        "--batch_size=8",
        "--block_size=2048",
        "--gradient_accumulation_steps=1",
        "--batch_layout=padding_free",
        "--flash=False",
        "--gpu",
        "rtx-4090",
    ]);
    let options = v["what_if"].as_array().expect("what-ifs");
    let padded = options
        .iter()
        .find(|o| o["kind"] == "batch_layout")
        .expect("a batch_layout option");
    assert_eq!(padded["changes"][0]["key"], "batch_layout");
    assert_eq!(padded["changes"][0]["value"], "padded");
    assert_eq!(padded["changes_training"], false);
    assert!(padded["saving_bytes"].as_i64().unwrap() > 0, "{padded}");
    // flash-attn's varlen kernel: no (b·s)² mask, the same training.
    let fa2 = options
        .iter()
        .find(|o| o["kind"] == "flash_attention_2")
        .expect("a flash_attention_2 option");
    assert!(fa2["changes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["key"] == "attn_implementation" && c["value"] == "flash_attention_2"));
    assert_eq!(fa2["changes_training"], false);
    assert!(fa2["saving_bytes"].as_i64().unwrap() > padded["saving_bytes"].as_i64().unwrap());
}
