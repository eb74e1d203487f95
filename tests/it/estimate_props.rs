//! Property tests: memory grows with the model and the batch, `total_low ≤ total ≤ total_high`,
//! the verdict follows its rule and is monotonic in capacity and in other programs' memory, and
//! no scenario (however absurd) panics.

use proptest::prelude::*;
use vramdoc::estimate::{
    estimate, what_if, Dtype, Estimate, GpuCatalog, Literal, Optimizer, Phase, Scenario, Verdict,
    WhatIfKind,
};

fn dtype() -> impl Strategy<Value = Dtype> {
    prop_oneof![
        Just(Dtype::Float32),
        Just(Dtype::Bfloat16),
        Just(Dtype::Float16)
    ]
}

/// Realistic scenarios. AdamW and SGD only: bitsandbytes' 8-bit AdamW keeps fp32 state for
/// tensors under 4096 elements, so growing a tensor past that threshold genuinely shrinks its
/// state (see `adamw8bit_is_not_monotone_by_design`).
fn scenario() -> impl Strategy<Value = Scenario> {
    (
        (1u64..=24, 1u64..=16, 1u64..=96, 1u64..=60_000, 1u64..=2048),
        (1u64..=64, 1u64..=16, dtype(), any::<bool>(), any::<bool>()),
        (
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            0.0f64..0.5,
            proptest::option::of(1u64..=64),
        ),
        any::<bool>(),
    )
        .prop_map(
            |(
                (l, a, hd, v, s),
                (b, acc, dtype, compile, flash),
                (ckpt, bias, sgd, dropout, eval),
                pure,
            )| Scenario {
                phase: Phase::Train,
                n_layer: l,
                n_head: a,
                n_embd: a * hd,
                vocab_size: v,
                block_size: s,
                bias,
                dropout,
                batch_size: b,
                gradient_accumulation_steps: acc,
                dtype: if pure { Dtype::Bfloat16 } else { dtype },
                compile,
                flash,
                grad_checkpoint: ckpt,
                optimizer: if sgd {
                    Optimizer::Sgd
                } else {
                    Optimizer::Adamw
                },
                eval_batch_size: eval,
                pure_bf16: pure,
                gpu: None,
                other_processes: 0,
                eval_only: false,
                init_from: vramdoc::estimate::InitFrom::Scratch,
                ddp_world_size: 1,
                sharding: vramdoc::estimate::Sharding::None,
                gradient_as_bucket_view: false,
                freeze_embeddings: false,
                lora_rank: 0,
                lora_targets: Default::default(),
                lora_dropout: 0.0,
                model: None,
                ..Scenario::default()
            },
        )
}

fn est(s: &Scenario) -> Estimate {
    estimate(s, &GpuCatalog::builtin()).expect("realistic scenario")
}

fn no_smaller(a: &Estimate, b: &Estimate) -> Result<(), TestCaseError> {
    prop_assert!(
        b.bytes.train_peak >= a.bytes.train_peak,
        "train {} -> {}",
        a.bytes.train_peak,
        b.bytes.train_peak
    );
    prop_assert!(
        b.bytes.eval_peak >= a.bytes.eval_peak,
        "eval {} -> {}",
        a.bytes.eval_peak,
        b.bytes.eval_peak
    );
    prop_assert!(b.bytes.peak >= a.bytes.peak);
    prop_assert!(b.bytes.total >= a.bytes.total);
    Ok(())
}

proptest! {
    #[test]
    fn memory_never_decreases_as_the_run_grows(s in scenario(), grow in 1u64..=64, which in 0usize..4) {
        let mut bigger = s.clone();
        match which {
            0 => bigger.batch_size += grow,
            1 => bigger.block_size += grow,
            2 => bigger.n_layer += grow,
            _ => bigger.n_embd += grow * s.n_head,
        }
        no_smaller(&est(&s), &est(&bigger))?;
    }

    #[test]
    fn verdict_follows_the_rule_and_the_range_holds_the_total(
        s in scenario(),
        capacity in 1u64..=200_000_000_000,
        other in prop_oneof![Just(0u64), 0u64..=4_000_000_000],
    ) {
        let mut catalog = GpuCatalog::builtin();
        let base = est(&s);
        let (low, total, high) = (base.bytes.total_low, base.bytes.total, base.bytes.total_high);
        prop_assert!(low <= total && total <= high, "{} {} {}", low, total, high);
        prop_assert!(low >= base.bytes.peak);
        for (id, cap) in [("prop", capacity), ("high", high + other), ("highless", high + other - 1), ("mid", total + other), ("midless", total + other - 1), ("low", low + other - 1), ("lowfit", low + other)] {
            catalog
                .extend_from_yaml(&format!("gpus:\n  - {{id: {id}, name: P, capacity_bytes: {cap}}}\n"))
                .expect("valid entry");
            let e = estimate(&Scenario { gpu: Some(id.into()), other_processes: other, ..s.clone() }, &catalog).expect("valid");
            prop_assert_eq!(e.bytes.total, total);
            prop_assert_eq!(e.bytes.other_processes, other);
            // Four states, from the three ends of the total: high, middle, low.
            let want = if high + other <= cap {
                Verdict::Fits
            } else if total + other <= cap {
                Verdict::Tight
            } else if low + other <= cap {
                Verdict::Unlikely
            } else {
                Verdict::DoesNotFit
            };
            prop_assert_eq!(e.verdict, Some(want));
            prop_assert_eq!(e.fits, Some(want == Verdict::Fits));
            prop_assert_eq!(e.headroom_bytes, Some(cap as i64 - other as i64 - total as i64));
        }
    }

    #[test]
    fn verdict_is_monotonic_in_capacity_and_other_programs(
        s in scenario(),
        caps in proptest::collection::vec(1u64..=100_000_000_000, 2),
        others in proptest::collection::vec(0u64..=20_000_000_000, 2),
    ) {
        let b = est(&s).bytes;
        let (c0, c1) = (caps[0].min(caps[1]), caps[0].max(caps[1]));
        let (o0, o1) = (others[0].min(others[1]), others[0].max(others[1]));
        let v = |o: u64, c: u64| Verdict::of(b.total_low, b.total, b.total_high, o, c);
        // Fits < Tight < Unlikely < DoesNotFit: more capacity never worsens it, more other memory never improves it.
        prop_assert!(v(o0, c1) <= v(o0, c0));
        prop_assert!(v(o0, c0) <= v(o1, c0));
    }

    #[test]
    fn components_always_add_up(s in scenario()) {
        let b = est(&s).bytes;
        prop_assert_eq!(b.weights + b.gradients + b.optimizer + b.autocast_weights + b.activations + b.logits, b.train_peak);
        prop_assert_eq!(b.total, b.train_peak.max(b.eval_peak) + b.cuda_context + b.allocator_slack + b.cublas_workspace);
    }

    #[test]
    fn no_scenario_panics(
        sizes in proptest::collection::vec(prop_oneof![any::<u64>(), 0u64..=4, 1u64..=100_000], 8),
        flags in proptest::collection::vec(any::<bool>(), 5),
        dtype in dtype(),
        dropout in any::<f64>(),
        gpu in proptest::option::of(prop_oneof![Just("rtx-4070".to_owned()), Just("t4".to_owned()), "[a-z0-9-]{0,12}"]),
    ) {
        let s = Scenario {
            phase: Phase::Train,
            n_layer: sizes[0],
            n_head: sizes[1],
            n_embd: sizes[2],
            vocab_size: sizes[3],
            block_size: sizes[4],
            batch_size: sizes[5],
            gradient_accumulation_steps: sizes[6],
            eval_batch_size: Some(sizes[7]),
            bias: flags[0],
            compile: flags[1],
            flash: flags[2],
            grad_checkpoint: flags[3],
            pure_bf16: flags[4],
            dtype,
            dropout,
            gpu,
            optimizer: Optimizer::Adamw8bit,
            other_processes: sizes[0],
            eval_only: false,
            init_from: vramdoc::estimate::InitFrom::Scratch,
            ddp_world_size: 1,
            sharding: vramdoc::estimate::Sharding::None,
            gradient_as_bucket_view: false,
            freeze_embeddings: flags[0] != flags[1],
            lora_rank: if flags[2] { sizes[7] } else { 0 },
            lora_targets: vramdoc::estimate::LoraTargets::ALL,
            lora_dropout: 0.0,
            model: None,
            ..Scenario::default()
        };
        let catalog = GpuCatalog::builtin();
        if let Ok(e) = estimate(&s, &catalog) {
            prop_assert!(e.bytes.total >= e.bytes.peak);
            prop_assert!(e.bytes.total_low <= e.bytes.total && e.bytes.total <= e.bytes.total_high);
            let _ = serde_json::to_string(&e).expect("serializable");
        }
        let _ = what_if(&s, &catalog);
    }

    #[test]
    fn what_if_options_are_consistent(s in scenario(), gpu in prop_oneof![Just(None), Just(Some("rtx-4070")), Just(Some("t4")), Just(Some("h200"))]) {
        let s = Scenario { gpu: gpu.map(str::to_owned), ..s };
        let catalog = GpuCatalog::builtin();
        let base = estimate(&s, &catalog).expect("valid");
        let options = what_if(&s, &catalog).expect("valid");
        let mut seen_training_change = false;
        for o in &options {
            let e = estimate(&o.scenario, &catalog).expect("option is valid");
            prop_assert_eq!(o.total, e.bytes.total);
            prop_assert_eq!(o.saving_bytes, base.bytes.total as i64 - e.bytes.total as i64);
            prop_assert_eq!(o.fits, e.fits);
            prop_assert!(!o.changes.is_empty());
            if o.changes_training {
                seen_training_change = true;
            } else {
                prop_assert!(!seen_training_change, "{:?} listed after a training change", o.kind);
                prop_assert_eq!(o.effective_batch, base.effective_batch);
            }
            if o.kind == WhatIfKind::MaxMicroBatch {
                prop_assert_eq!(o.fits, Some(true));
            }
            if o.kind == WhatIfKind::Dtype && s.gpu.as_deref() == Some("t4") {
                prop_assert_eq!(o.scenario.dtype, Dtype::Float16);
            }
        }
    }

    #[test]
    fn set_never_panics(key in "[a-z_]{1,30}", int in any::<i64>(), float in any::<f64>(), text in ".{0,12}") {
        let mut s = Scenario::default();
        for lit in [Literal::Int(int), Literal::Float(float), Literal::Bool(int % 2 == 0), Literal::Str(text.clone())] {
            let _ = s.set(&key, lit.clone());
            let _ = s.set("n_layer", lit.clone());
            let _ = s.set("dtype", lit.clone());
            let _ = s.set("dropout", lit);
        }
    }
}

#[test]
fn adamw8bit_is_not_monotone_by_design() {
    // A 64×63 = 4032-element wpe keeps two fp32 moments (8 bytes each element); at 64×64 = 4096
    // elements it switches to 8-bit state (2 bytes each element plus block scales).
    let small = Scenario {
        optimizer: Optimizer::Adamw8bit,
        block_size: 63,
        n_embd: 64,
        n_head: 1,
        ..Scenario::default()
    };
    let big = Scenario {
        block_size: 64,
        ..small.clone()
    };
    let (a, b) = (est(&small).bytes.optimizer, est(&big).bytes.optimizer);
    assert!(b < a, "{b} >= {a}");
}

/// Found by `what_if_options_are_consistent`: near accumulation 1 memory is not monotonic in the
/// micro-batch, and the largest micro-batch offered must still fit.
#[test]
fn largest_micro_batch_offered_always_fits() {
    let s = Scenario {
        phase: Phase::Train,
        n_layer: 17,
        n_head: 12,
        n_embd: 828,
        vocab_size: 12452,
        block_size: 230,
        bias: false,
        dropout: 0.4347133125402929,
        batch_size: 55,
        gradient_accumulation_steps: 14,
        dtype: Dtype::Bfloat16,
        compile: true,
        flash: false,
        grad_checkpoint: true,
        optimizer: vramdoc::estimate::Optimizer::Adamw,
        eval_batch_size: None,
        pure_bf16: true,
        gpu: Some("rtx-4070".into()),
        other_processes: 0,
        eval_only: false,
        init_from: vramdoc::estimate::InitFrom::Scratch,
        ddp_world_size: 1,
        sharding: vramdoc::estimate::Sharding::None,
        gradient_as_bucket_view: false,
        freeze_embeddings: false,
        lora_rank: 0,
        lora_targets: Default::default(),
        lora_dropout: 0.0,
        model: None,
        ..Scenario::default()
    };
    let catalog = GpuCatalog::builtin();
    for o in what_if(&s, &catalog).expect("valid") {
        if o.kind == WhatIfKind::MaxMicroBatch {
            assert_eq!(o.fits, Some(true), "{:?}", o.changes);
        }
    }
}
