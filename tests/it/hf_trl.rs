//! QLoRA as TRL's `SFTTrainer` runs it (`trainer: trl`), held to the fake-tensor replay that
//! runs TRL 0.29.1's own cast of the adapters (`tools/hf_replay/replay_trl.py` →
//! `tests/data/hf_trl_replay.json`): every replayed peak within 1 % (both steps), parameters,
//! weights, gradients and optimizer state exact; then the CLI on Philipp Schmid's Llama 3.1 8B
//! QLoRA on an L4, which fitted, and what `trainer: trl` refuses.

use serde::Deserialize;

use crate::hf_gpt2::within_one_percent;
use crate::hf_llama::{architecture, Model};
use vramdoc::estimate::{
    estimate_model, BatchLayout, Dtype, GpuCatalog, HfTrainer, LoraTargets, Optimizer, QuantType,
    Scenario, WeightsDtype,
};

#[derive(Deserialize)]
pub(crate) struct Replay {
    torch: String,
    transformers: String,
    pub(crate) runs: Vec<Entry>,
}

#[derive(Deserialize)]
pub(crate) struct Entry {
    pub(crate) run: Run,
    trainer: String,
    params: u64,
    trainable_params: u64,
    param_bytes: u64,
    model_bytes: u64,
    grad_bytes: u64,
    optimizer_bytes: u64,
    pub(crate) train_peak_bytes: u64,
    first_step_peak_bytes: u64,
}

#[derive(Deserialize)]
pub(crate) struct Run {
    pub(crate) name: String,
    model: Model,
    block_size: u64,
    batch_size: u64,
    accumulation: u64,
    weights: String,
    dtype: String,
    optim: String,
    lora_rank: u64,
    lora_targets: Vec<String>,
    lora_dropout: f64,
    quant_type: String,
    double_quant: bool,
    compute_dtype: String,
    grad_checkpoint: bool,
    /// The batch layout (`replay_batches.py --trl`); full rows where the run does not say.
    #[serde(default)]
    batch_layout: Option<String>,
}

/// `tests/data/<file>`, a replay of SFTTrainer's QLoRA step.
pub(crate) fn read(file: &str) -> Replay {
    let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn replay() -> Replay {
    read("hf_trl_replay.json")
}

/// The scenario of a replayed run: SFTTrainer's QLoRA on the run's model.
fn scenario(r: &Run) -> Scenario {
    Scenario {
        trainer: HfTrainer::Trl,
        weights_dtype: WeightsDtype::Bfloat16,
        block_size: r.block_size,
        batch_size: r.batch_size,
        gradient_accumulation_steps: r.accumulation,
        dtype: Dtype::parse(&r.dtype).unwrap(),
        flash: true,
        dropout: 0.0,
        grad_checkpoint: r.grad_checkpoint,
        compile: false,
        optimizer: Optimizer::parse(&r.optim).unwrap(),
        load_in_4bit: true,
        bnb_4bit_quant_type: QuantType::parse(&r.quant_type).unwrap(),
        bnb_4bit_use_double_quant: r.double_quant,
        bnb_4bit_compute_dtype: Dtype::parse(&r.compute_dtype).unwrap(),
        lora_rank: r.lora_rank,
        lora_targets: LoraTargets::parse(&r.lora_targets.join(",")).unwrap(),
        lora_dropout: r.lora_dropout,
        batch_layout: r
            .batch_layout
            .as_deref()
            .map_or(BatchLayout::Full, |l| BatchLayout::parse(l).unwrap()),
        ..Scenario::default()
    }
}

/// Mistral 7B's 32k vocabulary beside its 14k-wide MLP: the loss leads a recomputed block by
/// less than the margin, as under Trainer (`hf_qlora.rs`), and the estimator refuses it.
const REFUSED: [&str; 1] =
    ["trl-qlora-mistral-7b-v0.3-2layers-s1024-b2-acc1-r64-adamw8bit-quant_typefp4"];

#[test]
fn trl_qlora_is_within_one_percent_of_every_replayed_peak_and_its_bytes_exact() {
    let (checked, refused) = hold(&replay(), &REFUSED);
    assert_eq!(refused, REFUSED.len(), "every refused run is in the data");
    assert!(checked >= 5, "{checked}");
}

/// Holds the estimator to every run of `data` (the runs named in `refused` refused at `model`):
/// the runs checked and refused.
pub(crate) fn hold(data: &Replay, refused_runs: &[&str]) -> (usize, usize) {
    assert_eq!(data.transformers, "5.24.0", "the pinned transformers");
    assert_eq!(data.torch, "2.15.0", "the pinned torch");
    let catalog = GpuCatalog::builtin();
    let (mut worst, mut checked, mut refused) = (0.0f64, 0, 0);
    for e in &data.runs {
        let name = &e.run.name;
        assert_eq!(e.trainer, "trl", "{name}");
        assert_eq!(
            e.run.weights, "bfloat16",
            "{name}: the model loaded in bfloat16"
        );
        let (model, run) = (architecture(&e.run.model), scenario(&e.run));
        if refused_runs.contains(&name.as_str()) {
            let err = estimate_model(&model, &run, &catalog).unwrap_err();
            assert_eq!(err.key.as_deref(), Some("model"), "{name}: {}", err.message);
            refused += 1;
            continue;
        }
        let est = estimate_model(&model, &run, &catalog).unwrap();
        let json = serde_json::to_value(&est).unwrap();
        assert_eq!(
            json["params"]["trainable"], e.trainable_params,
            "{name}: adapters"
        );
        assert_eq!(
            est.params.total,
            model.parameter_count() + e.trainable_params,
            "{name}: the model's parameters and the adapters"
        );
        // model.parameters() counts a 4-bit weight by its packed bytes (half its elements).
        assert!(e.params < est.params.total, "{name}: packed 4-bit weights");
        // The head, embeddings and norms in bfloat16 and the adapters cast to bfloat16: every
        // parameter byte is the 4-bit weights' packed byte or two bytes an element.
        let packed = e.params - (e.param_bytes - e.params);
        assert_eq!(
            e.param_bytes,
            packed + 2 * (e.params - packed),
            "{name}: no float32 parameter"
        );
        assert_eq!(est.bytes.weights, e.model_bytes, "{name}: weights");
        assert_eq!(
            e.grad_bytes,
            2 * e.trainable_params,
            "{name}: bfloat16 gradients"
        );
        let earlier = if e.run.accumulation > 1 {
            e.grad_bytes
        } else {
            0
        };
        assert_eq!(est.bytes.gradients, earlier, "{name}: adapter gradients");
        assert_eq!(est.bytes.optimizer, e.optimizer_bytes, "{name}: optimizer");
        let (err, first) =
            within_one_percent(name, &est, e.train_peak_bytes, e.first_step_peak_bytes);
        worst = worst.max(err.max(first));
        checked += 1;
    }
    eprintln!("worst: {:.4} % over {checked} runs", worst * 100.0);
    (checked, refused)
}

/// Philipp Schmid's "How to Fine-Tune LLMs in 2024" (Llama 3.1 8B, QLoRA rank 256 on every
/// linear layer, one packed 2,048-token sequence, 8 accumulation steps, on an L4), which ran:
/// as transformers' Trainer with PEFT's upcast it would not fit, as TRL's SFTTrainer it does.
/// The difference is the float32 head, embeddings and norms (`2·4·V·h` for the untied head and
/// embeddings), their bfloat16 autocast copy of the head, and the adapters' bytes halved.
#[test]
fn schmids_llama_31_8b_qlora_on_an_l4_fits_as_sfttrainer_runs_it() {
    let t = crate::support::SiteTest::new();
    let base = [
        "--model",
        "llama-3.1-8b",
        "--load_in_4bit=true",
        "--lora_rank=256",
        "--lora_targets=all-linear",
        "--lora_dropout=0.05",
        "--dtype=bfloat16",
        "--block_size=2048",
        "--batch_size=1",
        "--gradient_accumulation_steps=8",
        "--gpu",
        "l4",
    ];
    let plain = t.estimate_json(&base);
    let mut trl_args = base.to_vec();
    trl_args.push("--trainer=trl");
    let trl = t.estimate_json(&trl_args);
    assert_eq!(trl["scenario"]["trainer"], "trl");
    assert_eq!(plain["scenario"]["trainer"], "transformers");
    assert_eq!(plain["verdict"], "does_not_fit");
    assert_eq!(trl["verdict"], "fits");
    let (v, h) = (128_256u64, 4096u64);
    let adapters = trl["params"]["trainable"].as_u64().unwrap();
    assert_eq!(adapters, plain["params"]["trainable"].as_u64().unwrap());
    // Weights: the untied head and embeddings, the 65 norms and the adapters, 2 bytes less an
    // element each.
    let norms = (2 * 32 + 1) * h;
    let weights = |v: &serde_json::Value| v["bytes"]["weights"].as_u64().unwrap();
    assert_eq!(
        weights(&plain) - weights(&trl),
        2 * (2 * v * h + norms + adapters)
    );
    let grads = |v: &serde_json::Value| v["bytes"]["gradients"].as_u64().unwrap();
    assert_eq!(grads(&plain), 4 * adapters);
    assert_eq!(grads(&trl), 2 * adapters);
    // The note says what SFTTrainer changes; TRL's own spelling is accepted.
    let text = t.run(&[&["estimate"], &base[..], &["--trainer=SFTTrainer"]].concat());
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stderr.contains("TRL 0.29.1's SFTTrainer")
            && text.stdout.contains("Weights (nf4 + bf16)"),
        "{}{}",
        text.stderr,
        text.stdout
    );
}

/// What `trainer: trl` does not model is refused at its key, never estimated as Trainer's step.
#[test]
fn trl_refuses_what_it_does_not_replay() {
    let t = crate::support::SiteTest::new();
    let refuse = |args: &[&str], words: &str| {
        let mut all = vec!["estimate", "--trainer=trl"];
        all.extend(args);
        let r = t.run(&all);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stdout);
        assert!(r.stderr.contains(words), "{args:?}: {}", r.stderr);
    };
    // LoRA on 16-bit weights and full fine-tunes: compute_loss's metrics are not replayed.
    refuse(&["--model", "llama-3.1-8b", "--lora_rank=16"], "QLoRA");
    refuse(&["--model", "llama-3.1-8b"], "QLoRA");
    // Another family.
    refuse(
        &["--model", "gpt2", "--load_in_4bit=true", "--lora_rank=8"],
        "Llama family",
    );
    // SFTConfig(gradient_checkpointing=False) is not replayed.
    refuse(
        &[
            "--model",
            "llama-3.1-8b",
            "--load_in_4bit=true",
            "--lora_rank=8",
            "--grad_checkpoint=False",
        ],
        "SFTConfig's default gradient_checkpointing=True",
    );
    // Weights loaded in float32 keep a float32 head under SFTTrainer: not replayed.
    refuse(
        &[
            "--model",
            "llama-3.1-8b",
            "--load_in_4bit=true",
            "--lora_rank=8",
            "--weights_dtype=float32",
        ],
        "weights_dtype",
    );
    // nanoGPT's train.py has no trainer.
    refuse(&[], "trainer");
    let r = t.run(&["estimate", "--model", "llama-3.1-8b", "--trainer=axolotl"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stderr.contains("unknown trainer"), "{}", r.stderr);
}
