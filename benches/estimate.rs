//! Throughput of the estimator: single estimates and what-if sweeps per second, on one core.
//!
//! `cargo bench --bench estimate` (release profile). Target: a million single estimates a
//! second. Prints one line per measurement; no external harness.

use std::hint::black_box;
use std::time::{Duration, Instant};

use vramdoc::estimate::arch::{
    Activation, Attention, Embeddings, Family, FeedForward, MixtureOfExperts, Mlp, Norm,
    NormPlacement, Positions, SlidingWindow, Span,
};
use vramdoc::estimate::{
    estimate, estimate_model, what_if, what_if_model, Architecture, Dtype, GpuCatalog, LoraTargets,
    Optimizer, QuantType, Scenario,
};

/// Nanoseconds this thread has run on a CPU (Linux's schedstat), to report per-core throughput
/// on a shared, busy machine; `None` elsewhere.
fn cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Runs `f` repeatedly for about `budget`; returns calls per wall-clock second, calls per
/// CPU-second of this thread (if known) and the number of calls.
fn rate(budget: Duration, mut f: impl FnMut(u64)) -> (f64, Option<f64>, u64) {
    // Warm up, then time whole batches until the budget is spent.
    for i in 0..1_000 {
        f(i);
    }
    let start = Instant::now();
    let cpu_start = cpu_ns();
    let mut calls = 0u64;
    while start.elapsed() < budget {
        for _ in 0..1_000 {
            f(calls);
            calls += 1;
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu = match (cpu_start, cpu_ns()) {
        (Some(a), Some(b)) if b > a => Some(calls as f64 / ((b - a) as f64 / 1e9)),
        _ => None,
    };
    (calls as f64 / wall, cpu, calls)
}

fn report(what: &str, (wall, cpu, calls): (f64, Option<f64>, u64)) {
    let cpu = cpu.map_or_else(String::new, |c| format!(", {c:>10.0} per CPU-second"));
    println!("{what:<42} {wall:>10.0} /s wall-clock{cpu}  ({calls} calls)");
}

fn main() {
    let catalog = GpuCatalog::builtin();
    let base = Scenario {
        n_layer: 6,
        n_head: 6,
        n_embd: 384,
        block_size: 512,
        batch_size: 16,
        gpu: Some("rtx-4070".into()),
        ..Scenario::default()
    };
    let budget = Duration::from_secs(2);

    report(
        "single estimate (with a scenario clone)",
        rate(budget, |i| {
            let mut s = black_box(&base).clone();
            s.batch_size = 1 + (i & 31);
            black_box(estimate(&s, &catalog).ok());
        }),
    );

    let mut s = base.clone();
    report(
        "single estimate",
        rate(budget, |i| {
            s.batch_size = 1 + (i & 31);
            black_box(estimate(black_box(&s), &catalog).ok());
        }),
    );

    report(
        "what-if sweep (all options)",
        rate(budget, |i| {
            s.batch_size = 1 + (i & 31);
            black_box(what_if(black_box(&s), &catalog).ok());
        }),
    );

    // Hugging Face's GPT-2 from its architecture description (issue 21 target: under 1 ms).
    let gpt2 = Architecture::hf_gpt2(12, 12, 768, 50257, 1024);
    let mut hf = Scenario {
        compile: false,
        dropout: 0.1,
        gpu: Some("rtx-4070".into()),
        ..Scenario::default()
    };
    report(
        "single estimate, Hugging Face GPT-2",
        rate(budget, |i| {
            hf.batch_size = 1 + (i & 31);
            black_box(estimate_model(black_box(&gpt2), &hf, &catalog).ok());
        }),
    );

    // The Llama family: Llama 3.1 8B's shape, bf16 weights, checkpointed blocks (every
    // candidate moment, the recomputed blocks' included).
    let llama = Architecture {
        family: Family::Llama,
        name: "llama-3.1-8b".into(),
        vocab_size: 128_256,
        hidden: 4096,
        layers: 32,
        positions: Positions::rotary(500_000.0, 131_072),
        attention: Attention {
            heads: 32,
            kv_heads: 8,
            head_dim: 128,
            fused_qkv: false,
            qkv_bias: false,
            out_bias: false,
            qk_norm: None,
            softcap: None,
            sliding_window: None,
        },
        mlp: Mlp::Dense(FeedForward {
            intermediate: 14_336,
            gated: true,
            fused_gate_up: false,
            activation: Activation::Silu,
            bias: false,
        }),
        norm: Norm::RmsNorm,
        norm_placement: NormPlacement::Pre,
        embeddings: Embeddings {
            tied_head: false,
            head_bias: false,
            scaled_by_sqrt_hidden: false,
            logit_softcap: None,
        },
    };
    let mut run = Scenario {
        compile: false,
        dropout: 0.0,
        dtype: Dtype::Bfloat16,
        pure_bf16: true,
        grad_checkpoint: true,
        gpu: Some("h100-80gb".into()),
        ..Scenario::default()
    };
    report(
        "single estimate, Llama 3.1 8B (Hugging Face)",
        rate(budget, |i| {
            run.batch_size = 1 + (i & 31);
            black_box(estimate_model(black_box(&llama), &run, &catalog).ok());
        }),
    );

    // A mixture of experts: Mixtral 8x7B's shape (8 experts, 2 per token), bf16 weights,
    // checkpointed blocks: the Llama step's moments and the experts' backward in the first and
    // last recomputed blocks.
    let mut mixtral = llama.clone();
    mixtral.family = Family::Moe;
    mixtral.name = "mixtral-8x7b".into();
    mixtral.vocab_size = 32_000;
    mixtral.mlp = Mlp::Moe(MixtureOfExperts {
        experts: 8,
        experts_per_token: 2,
        expert: FeedForward {
            intermediate: 14_336,
            gated: true,
            fused_gate_up: false,
            activation: Activation::Silu,
            bias: false,
        },
        shared: None,
        shared_gate: false,
        router_bias: false,
    });
    report(
        "single estimate, Mixtral 8x7B (Hugging Face)",
        rate(budget, |i| {
            run.batch_size = 1 + (i & 31);
            black_box(estimate_model(black_box(&mixtral), &run, &catalog).ok());
        }),
    );

    // Gemma 2 9B: sliding-window and global layers, softcapping, four norms per block, eager
    // attention, float32 weights under bf16 autocast.
    let gemma = Architecture {
        family: Family::Gemma2,
        name: "gemma-2-9b".into(),
        vocab_size: 256_000,
        hidden: 3584,
        layers: 42,
        attention: Attention {
            heads: 16,
            head_dim: 256,
            softcap: Some(50.0),
            sliding_window: Some(SlidingWindow {
                window: 4096,
                pattern: vec![Span::Local, Span::Global],
            }),
            ..llama.attention.clone()
        },
        mlp: Mlp::Dense(FeedForward {
            activation: Activation::GeluTanh,
            ..match llama.mlp {
                Mlp::Dense(f) => f,
                Mlp::Moe(m) => m.expert,
            }
        }),
        norm_placement: NormPlacement::Sandwich,
        embeddings: Embeddings {
            tied_head: true,
            scaled_by_sqrt_hidden: true,
            logit_softcap: Some(30.0),
            ..llama.embeddings
        },
        ..llama.clone()
    };
    let mut gemma_run = Scenario {
        compile: false,
        dropout: 0.0,
        dtype: Dtype::Bfloat16,
        flash: false,
        gpu: Some("h100-80gb".into()),
        ..Scenario::default()
    };
    report(
        "single estimate, Gemma 2 9B (Hugging Face)",
        rate(budget, |i| {
            gemma_run.batch_size = 1 + (i & 31);
            black_box(estimate_model(black_box(&gemma), &gemma_run, &catalog).ok());
        }),
    );

    // A model's what-ifs with the combination search (issue 21 target: under 50 ms): Llama 3.1
    // 8B's shape in float32 weights under bf16 autocast on a 24 GB card, where no single change
    // fits, so every subset of the levers is searched.
    let mut full = Scenario {
        compile: false,
        dropout: 0.0,
        dtype: Dtype::Bfloat16,
        gpu: Some("rtx-4090".into()),
        ..Scenario::default()
    };
    report(
        "what-if sweep with combinations, Llama 3.1 8B (Hugging Face)",
        rate(budget, |i| {
            full.batch_size = 1 + (i & 7);
            full.gradient_accumulation_steps = 8;
            black_box(what_if_model(black_box(&llama), &full, &catalog).ok());
        }),
    );

    // QLoRA (4-bit weights, rank-16 adapters on every linear layer, paged 8-bit AdamW).
    let mut qlora = Scenario {
        compile: false,
        dropout: 0.0,
        dtype: Dtype::Bfloat16,
        load_in_4bit: true,
        bnb_4bit_quant_type: QuantType::Nf4,
        bnb_4bit_use_double_quant: true,
        bnb_4bit_compute_dtype: Dtype::Bfloat16,
        lora_rank: 16,
        lora_targets: LoraTargets::ALL,
        optimizer: Optimizer::PagedAdamw8bit,
        gpu: Some("rtx-4060-ti-16gb".into()),
        ..Scenario::default()
    };
    report(
        "single estimate, QLoRA of Llama 3.1 8B",
        rate(budget, |i| {
            qlora.batch_size = 1 + (i & 31);
            black_box(estimate_model(black_box(&llama), &qlora, &catalog).ok());
        }),
    );

    // Every subset of the six levers searched: Llama 3.1 70B's shape on a 12 GB card, where
    // nothing fits, not even QLoRA with every other lever.
    let mut big = llama.clone();
    big.name = "llama-3.1-70b".into();
    big.hidden = 8192;
    big.layers = 80;
    big.attention.heads = 64;
    if let Mlp::Dense(f) = &mut big.mlp {
        f.intermediate = 28_672;
    }
    let mut none_fits = Scenario {
        gpu: Some("rtx-3060-12gb".into()),
        ..full.clone()
    };
    report(
        "what-if sweep, every combination searched, Llama 3.1 70B on 12 GB",
        rate(budget, |i| {
            none_fits.batch_size = 1 + (i & 7);
            none_fits.gradient_accumulation_steps = 8;
            black_box(what_if_model(black_box(&big), &none_fits, &catalog).ok());
        }),
    );
}
