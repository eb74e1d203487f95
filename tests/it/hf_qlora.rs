//! bitsandbytes with the Hugging Face families: 8-bit AdamW (plain and paged) and QLoRA,
//! held to the fake-tensor replay of their Trainer steps (`tools/hf_replay/replay_qlora.py` →
//! `tests/data/hf_qlora_replay.json`, bitsandbytes' CUDA allocations emulated in
//! `bnb_emulation.py`): every replayed peak within 1 % (both steps), parameters, weights,
//! gradients and optimizer state exact.

use serde::Deserialize;

use crate::hf_gpt2::within_one_percent;
use crate::hf_llama::{architecture, Model};
use vramdoc::estimate::{
    estimate_model, Architecture, Dtype, GpuCatalog, LoraTargets, Optimizer, QuantType, Scenario,
};

#[derive(Deserialize)]
struct Replay {
    torch: String,
    transformers: String,
    runs: Vec<Entry>,
}

/// One replayed QLoRA or 8-bit AdamW run of a model `M` (a Llama-family config or GPT-2's
/// shape by default; `hf_gemma_peft.rs` reads Gemma's).
#[derive(Deserialize)]
pub(crate) struct Entry<M = Model> {
    pub(crate) run: Run<M>,
    pub(crate) params: u64,
    pub(crate) trainable_params: u64,
    pub(crate) param_bytes: u64,
    pub(crate) model_bytes: u64,
    pub(crate) grad_bytes: u64,
    pub(crate) optimizer_bytes: u64,
    pub(crate) train_peak_bytes: u64,
    pub(crate) first_step_peak_bytes: u64,
}

#[derive(Deserialize)]
pub(crate) struct Run<M = Model> {
    pub(crate) name: String,
    pub(crate) model: M,
    pub(crate) method: String,
    pub(crate) block_size: u64,
    pub(crate) batch_size: u64,
    pub(crate) accumulation: u64,
    pub(crate) weights: String,
    pub(crate) dtype: String,
    pub(crate) optim: String,
    pub(crate) attn_implementation: String,
    pub(crate) lora_rank: u64,
    pub(crate) lora_targets: Vec<String>,
    pub(crate) lora_dropout: f64,
    pub(crate) quant_type: String,
    pub(crate) double_quant: bool,
    pub(crate) compute_dtype: String,
    pub(crate) grad_checkpoint: bool,
}

fn replay() -> Replay {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/hf_qlora_replay.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The model and Trainer settings of a replayed run (GPT-2 with 1024 positions, no dropout).
fn model_and_run(r: &Run) -> (Architecture, Scenario) {
    let m = &r.model;
    let model = if m.model_type == "gpt2" {
        Architecture::hf_gpt2(m.layers, m.heads, m.hidden, m.vocab_size, 1024)
    } else {
        architecture(m)
    };
    (model, scenario(r))
}

/// The Trainer settings of a replayed run of any model (no dropout).
pub(crate) fn scenario<M>(r: &Run<M>) -> Scenario {
    let bf16_weights = r.weights == "bfloat16";
    let qlora = r.method == "qlora";
    Scenario {
        block_size: r.block_size,
        batch_size: r.batch_size,
        gradient_accumulation_steps: r.accumulation,
        dtype: if bf16_weights && !qlora {
            Dtype::Bfloat16
        } else {
            Dtype::parse(&r.dtype).unwrap()
        },
        pure_bf16: bf16_weights && !qlora,
        flash: r.attn_implementation == "sdpa",
        dropout: 0.0,
        grad_checkpoint: r.grad_checkpoint,
        compile: false,
        optimizer: Optimizer::parse(&r.optim).unwrap(),
        load_in_4bit: qlora,
        bnb_4bit_quant_type: QuantType::parse(&r.quant_type).unwrap(),
        bnb_4bit_use_double_quant: r.double_quant,
        bnb_4bit_compute_dtype: Dtype::parse(&r.compute_dtype).unwrap(),
        lora_rank: r.lora_rank,
        lora_targets: if r.lora_targets.is_empty() {
            LoraTargets::default()
        } else {
            LoraTargets::parse(&r.lora_targets.join(",")).unwrap()
        },
        lora_dropout: r.lora_dropout,
        ..Scenario::default()
    }
}

/// The runs the estimator refuses, with the key it names: a 1024-token vocabulary, where a
/// recomputed block's backward is the peak, and Mistral 7B's 32k vocabulary beside its 14k-wide
/// MLP, where the loss leads by less than the margin.
const REFUSED: [(&str, &str); 2] = [
    ("qlora-tiny-llama-v1024-s1024-b4-acc1-r8-adamw", "model"),
    (
        "qlora-mistral-7b-v0.3-2layers-s1024-b2-acc1-r64-paged_adamw8bit-quant_typefp4",
        "model",
    ),
];

#[test]
fn qlora_is_within_one_percent_of_every_replayed_peak_and_its_bytes_exact() {
    let data = replay();
    let catalog = GpuCatalog::builtin();
    let (mut worst, mut checked, mut refused) = (0.0f64, 0, 0);
    for e in data.runs.iter().filter(|e| e.run.method == "qlora") {
        let name = &e.run.name;
        let (model, run) = model_and_run(&e.run);
        if let Some((_, key)) = REFUSED.iter().find(|(n, _)| n == name) {
            let err = estimate_model(&model, &run, &catalog).unwrap_err();
            assert_eq!(err.key.as_deref(), Some(*key), "{name}: {}", err.message);
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
        // Linear4bit casts a quantized layer's bias to the bf16 compute dtype at the first
        // forward: Qwen2's q/k/v biases, GPT-2's four per block.
        let m = &e.run.model;
        let biases = match m.model_type.as_str() {
            "qwen2" => m.layers * (m.hidden + 2 * m.kv_heads * (m.hidden / m.heads)),
            "gpt2" => m.layers * 9 * m.hidden,
            _ => 0,
        };
        let cast = if e.run.compute_dtype == "bfloat16" {
            2 * biases
        } else {
            0
        };
        assert_eq!(est.bytes.weights + cast, e.model_bytes, "{name}: weights");
        let earlier = if e.run.accumulation > 1 {
            e.grad_bytes
        } else {
            0
        };
        assert_eq!(est.bytes.gradients, earlier, "{name}: adapter gradients");
        assert_eq!(
            e.grad_bytes,
            e.trainable_params * 4,
            "{name}: float32 gradients"
        );
        assert_eq!(est.bytes.optimizer, e.optimizer_bytes, "{name}: optimizer");
        let (err, first) =
            within_one_percent(name, &est, e.train_peak_bytes, e.first_step_peak_bytes);
        worst = worst.max(err.max(first));
        checked += 1;
    }
    eprintln!("worst: {:.4} % over {checked} runs", worst * 100.0);
    assert_eq!(refused, REFUSED.len(), "every refused run is in the data");
    assert!(checked >= 12, "{checked}");
}

#[test]
fn eight_bit_adamw_full_fine_tunes_are_within_one_percent_of_every_replayed_peak() {
    let data = replay();
    assert_eq!(data.transformers, "5.24.0", "the pinned transformers");
    assert_eq!(data.torch, "2.15.0", "the pinned torch");
    let catalog = GpuCatalog::builtin();
    let (mut worst, mut checked) = (0.0f64, 0);
    for e in data.runs.iter().filter(|e| e.run.method == "full") {
        let name = &e.run.name;
        let (model, run) = model_and_run(&e.run);
        let est = estimate_model(&model, &run, &catalog).unwrap();
        let w = if e.run.weights == "bfloat16" { 2 } else { 4 };
        assert_eq!(est.params.total, e.params, "{name}: parameters");
        assert_eq!(e.params, e.trainable_params, "{name}: full training");
        assert_eq!(est.params.total * w, e.param_bytes, "{name}: weight bytes");
        assert_eq!(
            est.bytes.weights, e.model_bytes,
            "{name}: weights and buffers"
        );
        assert_eq!(est.params.total * w, e.grad_bytes, "{name}: gradients");
        assert_eq!(est.bytes.optimizer, e.optimizer_bytes, "{name}: optimizer");
        let (err, first) =
            within_one_percent(name, &est, e.train_peak_bytes, e.first_step_peak_bytes);
        worst = worst.max(err.max(first));
        checked += 1;
    }
    eprintln!("worst: {:.4} % over {checked} runs", worst * 100.0);
    assert!(checked >= 6, "{checked}");
}

/// The paged optimizer's moments are outside PyTorch's allocator: only the absmax of the
/// 8-bit tensors and the state of tensors under 100 000 elements stay in it.
#[test]
fn paged_state_is_left_out_of_the_allocator() {
    let data = replay();
    let pair = |optim: &str| {
        data.runs
            .iter()
            .find(|e| {
                e.run.method == "full" && e.run.optim == optim && e.run.model.model_type == "gpt2"
            })
            .unwrap()
    };
    let (plain, paged) = (pair("adamw8bit"), pair("paged_adamw8bit"));
    // GPT-2 124M: the embeddings' 32-bit state alone is 8 bytes per element of wte and wpe.
    assert!(plain.optimizer_bytes > 8 * (50257 + 1024) * 768);
    assert!(paged.optimizer_bytes < plain.optimizer_bytes / 100);
}

/// The QLoRA user's question through the CLI, as users type it (`--load_in_4bit=true`): Llama
/// 3.1 8B with QLoRA's recipe filled in, the adapters PEFT's default, and the what-ifs each the
/// CLI's own estimate of the changed settings.
#[test]
fn qlora_of_an_8b_model_through_the_cli_with_its_recipe_and_what_ifs() {
    let t = crate::support::SiteTest::new();
    let base = [
        "--model",
        "llama-3.1-8b",
        "--load_in_4bit=true",
        "--lora_rank=16",
        "--gpu",
        "rtx-4060-ti-16gb",
    ];
    let v = t.estimate_json(&base);
    let s = &v["scenario"];
    assert_eq!(s["bnb_4bit_quant_type"], "nf4");
    assert_eq!(s["bnb_4bit_use_double_quant"], true);
    assert_eq!(s["bnb_4bit_compute_dtype"], "bfloat16");
    assert_eq!(s["dtype"], "bfloat16");
    // LoRA rank 16 on q_proj and v_proj of 32 blocks: 16·(4096 + 4096) + 16·(4096 + 1024).
    let adapters = 32 * (16 * (4096 + 4096) + 16 * (4096 + 1024));
    assert_eq!(v["params"]["trainable"], adapters);
    // Trainer's micro-batch 8 of 1024 tokens: the loss alone is 3·4·8192·128256 bytes.
    assert_eq!(v["verdict"], "does_not_fit");
    assert!(v["bytes"]["logits"].as_u64().unwrap() == 3 * 4 * 8192 * 128_256);
    let options = v["what_if"].as_array().unwrap();
    let kinds: Vec<&str> = options
        .iter()
        .map(|w| w["kind"].as_str().unwrap())
        .collect();
    // QLoRA checkpoints and upcasts already: no checkpointing or bf16-weights option.
    assert!(
        !kinds.contains(&"grad_checkpoint") && !kinds.contains(&"pure_bf16"),
        "{kinds:?}"
    );
    assert!(kinds.contains(&"optimizer"), "{kinds:?}");
    let fits = options
        .iter()
        .find(|w| w["fits"] == true)
        .expect("an option fits");
    // Each option is the CLI's estimate of its changes.
    let mut args: Vec<String> = base.iter().map(|a| (*a).to_owned()).collect();
    for c in fits["changes"].as_array().unwrap() {
        args.push(format!(
            "--{}={}",
            c["key"].as_str().unwrap(),
            c["value"].as_str().unwrap()
        ));
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let again = t.estimate_json(&refs);
    assert_eq!(again["bytes"]["total"], fits["total"]);
    assert_eq!(again["verdict"], "fits");
}

/// A full bf16 fine-tune of the same model on a 24 GB card: QLoRA and the 8-bit optimizers are
/// offered with their verdicts, the paged one counting less than the plain one (its moments are
/// outside PyTorch's allocator), and QLoRA is what fits.
#[test]
fn a_full_fine_tune_is_offered_qlora_and_eight_bit_optimizers() {
    let t = crate::support::SiteTest::new();
    let v = t.estimate_json(&[
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "rtx-4090",
        "--dtype=bfloat16",
        "--batch_size=2",
    ]);
    let options = v["what_if"].as_array().unwrap();
    let find = |key: &str, value: &str| {
        options
            .iter()
            .find(|w| {
                w["changes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| c["key"] == key && c["value"] == value)
            })
            .unwrap_or_else(|| panic!("{key}={value}: {options:?}"))
    };
    let plain = find("optimizer", "adamw8bit");
    let paged = find("optimizer", "paged_adamw8bit");
    assert!(paged["total"].as_u64() < plain["total"].as_u64());
    let qlora = find("load_in_4bit", "True");
    assert_eq!(qlora["kind"], "qlora");
    assert_eq!(qlora["fits"], true);
    assert_eq!(qlora["changes_training"], true);
}

/// What QLoRA does not model is refused at its key, never estimated as something else.
#[test]
fn qlora_refuses_what_it_does_not_model() {
    let t = crate::support::SiteTest::new();
    let refuse = |args: &[&str], key: &str| {
        let mut all = vec!["estimate", "--model", "llama-3.1-8b"];
        all.extend(args);
        let r = t.run(&all);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stdout);
        assert!(r.stderr.contains(key), "{args:?}: {}", r.stderr);
    };
    refuse(&["--load_in_4bit=true"], "lora_rank");
    refuse(
        &["--load_in_4bit=true", "--lora_rank=8", "--dtype=float16"],
        "dtype",
    );
    refuse(
        &["--load_in_4bit=true", "--lora_rank=8", "--flash=False"],
        "flash",
    );
    refuse(&["--load_in_8bit=true", "--lora_rank=8"], "LLM.int8()");
    // QLoRA is replayed with prepare_model_for_kbit_training's checkpointing only.
    refuse(
        &[
            "--load_in_4bit=true",
            "--lora_rank=8",
            "--grad_checkpoint=False",
        ],
        "prepare_model_for_kbit_training",
    );
    let r = t.run(&[
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--load_in_4bit=true",
        "--lora_rank=8",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("\"grad_checkpoint\": true"),
        "QLoRA's scenario says it checkpoints: {}",
        r.stdout
    );
    // A small vocabulary, where a recomputed block may be the peak.
    let small = r#"{"model_type": "llama", "hidden_size": 512, "intermediate_size": 1536,
        "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
        "vocab_size": 1024, "max_position_embeddings": 4096}"#;
    t.file("small/config.json", small);
    let path = t.root().join("small/config.json");
    let r = t.run(&[
        "estimate",
        "--model",
        path.to_str().unwrap(),
        "--load_in_4bit=true",
        "--lora_rank=8",
    ]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stderr.contains("recomputed block"), "{}", r.stderr);
}
