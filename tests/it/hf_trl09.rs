//! What TRL 0.9's `SFTTrainer` changes in a QLoRA step's memory, held to the fake-tensor replay
//! of its preparation (`tools/hf_replay/replay_trl09.py` → `tests/data/hf_trl09_replay.json`).
//! vramdoc does not model it as a `trainer` value (VALIDATION.md, "TRL 0.9's QLoRA", says why);
//! these tests pin, against that replay, the difference the documentation states from the
//! `Trainer` QLoRA step vramdoc estimates (`trainer: transformers`):
//!
//! - TRL 0.9.6 runs PEFT's `prepare_model_for_kbit_training` and `get_peft_model` as the
//!   `Trainer` recipe does, then `peft_module_casting_to_bf16`: the head and the embeddings go
//!   back to bfloat16 (the norms and the float32 adapters stay). Weights: 2 bytes less per
//!   element of the embeddings and the head (a tied pair once); gradients and optimizer state
//!   unchanged.
//! - At the loss's backward (the peak of every run below rank 256) nothing else changes but
//!   what follows from a bfloat16 head and embedding: no bfloat16 autocast copy of the head
//!   (`2·V·h`), the first block's checkpointed input and the rotary `cos` and `sin` in bfloat16
//!   (`2·s·b·h` and `2·2·s·d` less).
//! - At rank 256 on every linear layer (Philipp Schmid's Llama 3.1 8B on an L4), the step peaks
//!   instead at the end of the loss's forward, where autocast still caches a bfloat16 copy of
//!   every float32 adapter (`2` bytes per trainable parameter): 20.10 GiB, below the L4's
//!   22.05 GiB, where vramdoc's `Trainer` estimate says it does not fit. The replay's control,
//!   the same run as `Trainer` prepares it, peaks at that moment too (23.08 GiB), which
//!   vramdoc's `Trainer` estimate models (`qlora::ForwardEnd`), checked within 1 %.

use serde::Deserialize;

use crate::hf_llama::{architecture, Model};
use crate::hf_qlora::Run;
use vramdoc::estimate::{estimate_model, Estimate, GpuCatalog, Scenario, WeightsDtype};

#[derive(Deserialize)]
struct Replay {
    transformers: String,
    peft: String,
    runs: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    run: Run,
    trainer: String,
    trainable_params: u64,
    model_bytes: u64,
    grad_bytes: u64,
    optimizer_bytes: u64,
    train_peak_bytes: u64,
    train_peak_phase: String,
}

fn replay() -> Replay {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/hf_trl09_replay.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// vramdoc's `Trainer` QLoRA estimate of a replayed run (the step TRL 0.9 starts from).
fn trainer_estimate(r: &Run) -> Estimate {
    let run = Scenario {
        weights_dtype: WeightsDtype::Bfloat16,
        grad_checkpoint: true,
        ..crate::hf_qlora::scenario(r)
    };
    estimate_model(&architecture(&r.model), &run, &GpuCatalog::builtin()).unwrap()
}

/// Elements of the embeddings and the head, a tied pair once.
fn embeddings_and_head(m: &Model) -> u64 {
    let one = m.vocab_size * m.hidden;
    if m.tied {
        one
    } else {
        2 * one
    }
}

#[test]
fn trl_09_keeps_trainers_qlora_but_the_head_and_embeddings_in_bfloat16() {
    let data = replay();
    assert_eq!(data.transformers, "5.24.0", "the pinned transformers");
    assert_eq!(data.peft, "0.21.2", "the pinned peft");
    let mut at_backward = 0;
    for e in data.runs.iter().filter(|e| e.trainer == "trl-0.9") {
        let (r, name) = (&e.run, &e.run.name);
        let est = trainer_estimate(r);
        let json = serde_json::to_value(&est).unwrap();
        assert_eq!(json["params"]["trainable"], e.trainable_params, "{name}");
        let cast = 2 * embeddings_and_head(&r.model);
        // The replay reads the weights before the first forward, where Linear4bit casts Qwen2's
        // q/k/v biases to the bfloat16 compute dtype; vramdoc's weights are after it
        // (`hf_qlora.rs` says the same).
        let m = &r.model;
        let biases = match m.model_type.as_str() {
            "qwen2" => m.layers * (m.hidden + 2 * m.kv_heads * (m.hidden / m.heads)),
            _ => 0,
        };
        assert_eq!(
            e.model_bytes,
            est.bytes.weights + 2 * biases - cast,
            "{name}: weights"
        );
        // The float32 adapters as under Trainer: their gradients and the optimizer's state.
        assert_eq!(e.grad_bytes, 4 * e.trainable_params, "{name}: gradients");
        assert_eq!(e.optimizer_bytes, est.bytes.optimizer, "{name}: optimizer");
        if e.train_peak_phase.starts_with("backward") {
            let (s, b, h, v) = (
                r.block_size,
                r.batch_size,
                r.model.hidden,
                r.model.vocab_size,
            );
            let head_dim = if r.model.head_dim == 0 {
                h / r.model.heads
            } else {
                r.model.head_dim
            };
            let less = cast + 2 * v * h + 2 * s * b * h + 2 * 2 * s * head_dim;
            let want = est.bytes.train_peak - less;
            let off = (want as f64 / e.train_peak_bytes as f64 - 1.0).abs();
            eprintln!(
                "{name}: {want} vs replayed {} ({off:.5})",
                e.train_peak_bytes
            );
            assert!(off <= 0.01, "{name}: {want} vs {}", e.train_peak_bytes);
            at_backward += 1;
        }
    }
    assert!(at_backward >= 4, "{at_backward}");
}

#[test]
fn schmids_rank_256_run_peaks_in_the_loss_forward_and_fits_the_l4() {
    let data = replay();
    let schmid = |trainer: &str| {
        data.runs
            .iter()
            .find(|e| e.run.model.layers == 32 && e.run.lora_rank == 256 && e.trainer == trainer)
            .expect("Philipp Schmid's Llama 3.1 8B run")
    };
    let (e, control) = (schmid("trl-0.9"), schmid("transformers"));
    assert_eq!(e.train_peak_phase, "forward 2");
    assert_eq!(control.train_peak_phase, "forward 2");
    // Autocast's bfloat16 copies of the float32 adapters, alive to the end of the forward,
    // outweigh the bfloat16 logits the backward no longer holds.
    let (s, v) = (e.run.block_size * e.run.batch_size, e.run.model.vocab_size);
    assert!(2 * e.trainable_params > 2 * s * v);
    let l4 = GpuCatalog::builtin().get("l4").unwrap().capacity_bytes;
    assert!(e.train_peak_bytes < l4, "{} of {l4}", e.train_peak_bytes);
    let trainer = trainer_estimate(&e.run);
    assert!(control.train_peak_bytes > l4, "Trainer's step does not fit");
    // vramdoc's Trainer QLoRA estimate peaks at that moment too (`qlora::ForwardEnd`), within
    // 1 % of the full 32-layer replay.
    let off = (trainer.bytes.train_peak as f64 / control.train_peak_bytes as f64 - 1.0).abs();
    eprintln!(
        "Trainer's estimate {:.3} % from the replayed peak",
        off * 100.0
    );
    assert_eq!(
        trainer.train_peak_moment,
        vramdoc::estimate::TrainMoment::LossForward
    );
    assert!(off <= 0.01, "{off}");
}
