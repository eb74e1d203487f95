//! Scenario keys, defaults, validation errors and the JSON contract's shape.

use vramdoc::estimate::{estimate, Dtype, GpuCatalog, Literal, Optimizer, Scenario, ScenarioError};

fn key_of(r: Result<impl std::fmt::Debug, ScenarioError>) -> Option<String> {
    r.expect_err("should be rejected").key
}

#[test]
fn defaults_are_nanogpt_train_py() {
    let s = Scenario::default();
    assert_eq!(
        (s.n_layer, s.n_head, s.n_embd, s.block_size, s.vocab_size),
        (12, 12, 768, 1024, 50304)
    );
    assert_eq!(
        (s.batch_size, s.gradient_accumulation_steps, s.eval_batch()),
        (12, 40, 12)
    );
    assert_eq!((s.dtype, s.optimizer), (Dtype::Bfloat16, Optimizer::Adamw));
    assert!(s.compile && s.flash && !s.grad_checkpoint && !s.bias && s.gpu.is_none());
}

#[test]
fn set_parses_and_names_the_key() {
    let mut s = Scenario::default();
    s.set("dtype", Literal::Str("float16".into())).unwrap();
    s.set("optimizer", Literal::Str("AdamW_8bit".into()))
        .unwrap();
    s.set("eval_batch_size", Literal::Int(4)).unwrap();
    s.set("gpu", Literal::Str("RTX-4070".into())).unwrap();
    assert_eq!(
        (s.dtype, s.optimizer, s.eval_batch()),
        (Dtype::Float16, Optimizer::Adamw8bit, 4)
    );
    assert_eq!(s.gpu.as_deref(), Some("rtx-4070"));
    assert_eq!(
        key_of(s.set("dtype", Literal::Str("int8".into()))),
        Some("dtype".into())
    );
    assert_eq!(
        key_of(s.set("optimizer", Literal::Str("lion".into()))),
        Some("optimizer".into())
    );
    assert_eq!(
        key_of(s.set("n_layer", Literal::Int(0))),
        Some("n_layer".into())
    );
    assert_eq!(
        key_of(s.set("n_layer", Literal::Int(-3))),
        Some("n_layer".into())
    );
    assert_eq!(
        key_of(s.set("n_layer", Literal::Float(2.5))),
        Some("n_layer".into())
    );
    assert_eq!(key_of(s.set("bias", Literal::Int(1))), Some("bias".into()));
    assert_eq!(
        key_of(s.set("dropout", Literal::Float(1.0))),
        Some("dropout".into())
    );
    assert_eq!(
        key_of(s.set("learning_rate", Literal::Float(6e-4))),
        Some("learning_rate".into())
    );
    s.set("eval_batch_size", Literal::Str("None".into()))
        .unwrap();
    assert_eq!(s.eval_batch(), s.batch_size);
}

#[test]
fn validate_catches_relations_and_unknown_gpus() {
    let catalog = GpuCatalog::builtin();
    let bad = Scenario {
        n_embd: 100,
        n_head: 12,
        ..Scenario::default()
    };
    let err = estimate(&bad, &catalog).unwrap_err();
    assert_eq!(err.key.as_deref(), Some("n_embd"));
    assert!(err.message.contains("divisible"), "{err}");
    let bad = Scenario {
        gpu: Some("rtx-9999".into()),
        ..Scenario::default()
    };
    assert_eq!(key_of(estimate(&bad, &catalog)), Some("gpu".into()));
    let bad = Scenario {
        batch_size: 0,
        ..Scenario::default()
    };
    assert_eq!(key_of(estimate(&bad, &catalog)), Some("batch_size".into()));
    let bad = Scenario {
        pure_bf16: true,
        dtype: Dtype::Float16,
        ..Scenario::default()
    };
    assert_eq!(key_of(estimate(&bad, &catalog)), Some("pure_bf16".into()));
}

#[test]
fn absurd_sizes_error_instead_of_wrapping() {
    let catalog = GpuCatalog::builtin();
    let huge = Scenario {
        n_layer: u64::MAX,
        n_head: 1,
        n_embd: u64::MAX,
        ..Scenario::default()
    };
    let err = estimate(&huge, &catalog).unwrap_err();
    assert!(err.message.contains("exceeds"), "{err}");
    // Big but representable: a correct number, not an error.
    let big = Scenario {
        batch_size: 1 << 20,
        ..Scenario::default()
    };
    let e = estimate(&big, &catalog).unwrap();
    assert_eq!(e.bytes.logits_tensor, (1u64 << 20) * 1024 * 50304 * 2);
}

#[test]
fn from_yaml_reads_a_mapping() {
    let v: yaml_serde::Value = yaml_serde::from_str(
        "n_layer: 6\nn_head: 6\nn_embd: 384\ndtype: float16\nbias: false\ndropout: 0.1\ngpu: rtx-3060\neval_batch_size: null\n",
    )
    .unwrap();
    let s = Scenario::from_yaml(&v).unwrap();
    assert_eq!(
        (s.n_layer, s.n_embd, s.dtype, s.dropout),
        (6, 384, Dtype::Float16, 0.1)
    );
    let v: yaml_serde::Value = yaml_serde::from_str("n_layer: [1, 2]").unwrap();
    assert_eq!(
        Scenario::from_yaml(&v).unwrap_err().key.as_deref(),
        Some("n_layer")
    );
    let v: yaml_serde::Value = yaml_serde::from_str("- 1").unwrap();
    assert!(Scenario::from_yaml(&v).is_err());
}

#[test]
fn json_contract_fields() {
    let s = Scenario {
        gpu: Some("rtx-4070".into()),
        ..Scenario::default()
    };
    let v = serde_json::to_value(estimate(&s, &GpuCatalog::builtin()).unwrap()).unwrap();
    for key in [
        "total",
        "non_embedding",
        "embedding",
        "decay",
        "no_decay",
        "decay_tensors",
        "no_decay_tensors",
        "linear",
    ] {
        assert!(v["params"][key].is_u64(), "params.{key}");
    }
    for key in [
        "weights",
        "gradients",
        "optimizer",
        "autocast_weights",
        "activations",
        "logits",
        "train_peak",
        "eval_peak",
        "peak",
        "overhead",
        "total",
        "logits_tensor",
        "eval_logits_tensor",
        "cuda_context",
        "allocator_slack",
        "cublas_workspace",
    ] {
        assert!(v["bytes"][key].is_u64(), "bytes.{key}");
    }
    assert!(v["peak_phase"] == "train" || v["peak_phase"] == "eval");
    assert!(v["effective_batch"].is_u64() && v["tokens_per_step"].is_u64());
    assert_eq!(v["gpu"]["id"], "rtx-4070");
    assert!(v["gpu"]["name"].is_string() && v["gpu"]["capacity_bytes"].is_u64());
    assert!(v["fits"].is_boolean() && v["headroom_bytes"].is_i64());
    assert_eq!(v["scenario"]["eval_batch_size"], 12);
    assert_eq!(v["scenario"]["dtype"], "bfloat16");
    assert_eq!(v["scenario"]["gpu"], "rtx-4070");
    let none =
        serde_json::to_value(estimate(&Scenario::default(), &GpuCatalog::builtin()).unwrap())
            .unwrap();
    assert!(none["gpu"].is_null() && none["fits"].is_null() && none["headroom_bytes"].is_null());
    assert!(none["scenario"]["gpu"].is_null());
}
