//! DDP's two memory options through the real binary: `gradient_as_bucket_view=True` (no bucket
//! copy of the gradients) offered wherever DDP's buckets are counted, and ZeRO-1 counted as
//! PyTorch partitions it, checked against a replay of PyTorch's own partition
//! (`tools/zero1_partition.py` → `tests/data/zero1_partition.json`).

use serde_json::Value;

use crate::support::{Run, SiteTest};

fn json(r: &Run) -> Value {
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

#[test]
fn bucket_view_removes_the_bucket_copy_of_the_gradients() {
    let t = SiteTest::new();
    let base = [
        "estimate",
        "--set",
        "init_from='gpt2-xl'",
        "--set",
        "batch_size=1",
        "--set",
        "gradient_accumulation_steps=8",
        "--nproc-per-node",
        "8",
        "--format",
        "json",
    ];
    let ddp = json(&t.run(&base));
    let p = ddp["params"]["total"].as_u64().unwrap();
    // GPT-2 XL: 1.56 B parameters, fp32 gradients: the buckets are 4·P bytes, 5.8 GiB a GPU.
    assert_eq!(ddp["bytes"]["ddp_buckets"], 4 * p);
    assert!((4.0 * p as f64 / (1u64 << 30) as f64 - 5.80).abs() < 0.01);
    let option = ddp["what_if"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "bucket_view")
        .expect("bucket_view offered");
    assert_eq!(option["changes"][0]["key"], "gradient_as_bucket_view");
    assert_eq!(option["changes"][0]["value"], "True");
    let on = json(&t.run(&[&base[..], &["--set", "gradient_as_bucket_view=True"][..]].concat()));
    assert_eq!(on["bytes"]["ddp_buckets"], 0);
    // The peak allocated drops by exactly the bucket copy (the total a little more: the
    // allocator's slack scales with what is allocated).
    let peak = |v: &Value| v["bytes"]["peak"].as_u64().unwrap();
    assert_eq!(
        peak(&ddp) - peak(&on),
        4 * p,
        "the whole bucket copy, nothing else"
    );
    let total = |v: &Value| v["bytes"]["total"].as_u64().unwrap();
    assert!(total(&ddp) - total(&on) >= 4 * p);
    assert!(on["what_if"]
        .as_array()
        .unwrap()
        .iter()
        .all(|o| o["kind"] != "bucket_view"));
    // Marked as a code change in the table (DDP's constructor argument, not a train.py setting).
    let table = t
        .run(&[
            "estimate",
            "--set",
            "init_from='gpt2-xl'",
            "--set",
            "batch_size=1",
            "--set",
            "gradient_accumulation_steps=8",
            "--nproc-per-node",
            "8",
        ])
        .stdout;
    assert!(
        table.contains("(gradient_as_bucket_view=True) ‡"),
        "{table}"
    );
    // One GPU has no buckets and is offered nothing.
    let one = json(&t.run(&["estimate", "--format", "json"]));
    assert!(one["what_if"]
        .as_array()
        .unwrap()
        .iter()
        .all(|o| o["kind"] != "bucket_view"));
}

#[test]
fn zero1_optimizer_state_is_the_heaviest_rank_of_pytorchs_partition() {
    let replay: Value = serde_json::from_str(include_str!("../data/zero1_partition.json")).unwrap();
    let t = SiteTest::new();
    for c in replay["cases"].as_array().unwrap() {
        let w = c["world_size"].as_u64().unwrap().to_string();
        let set = |k: &str| format!("{k}={}", c[k]);
        let bias = if c["bias"] == true {
            "bias=True"
        } else {
            "bias=False"
        };
        let args = [
            "estimate",
            "--set",
            &set("n_layer"),
            "--set",
            &set("n_embd"),
            "--set",
            "n_head=1",
            "--set",
            &set("block_size"),
            "--set",
            &set("vocab_size"),
            "--set",
            bias,
            "--set",
            "batch_size=1",
            "--set",
            &format!("gradient_accumulation_steps={w}"),
            "--nproc-per-node",
            &w,
            "--set",
            "sharding=zero1",
            "--format",
            "json",
        ];
        let v = json(&t.run(&args));
        let heaviest = c["rank_elements"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_u64().unwrap())
            .max()
            .unwrap();
        // AdamW: two fp32 moments, 8 bytes an element, on the rank PyTorch loads most.
        assert_eq!(
            v["bytes"]["optimizer"],
            8 * heaviest,
            "{} on {w}",
            c["name"]
        );
    }
}

/// FSDP's root unit reduce-scatters its gradients only after the embedding's backward, so from
/// the head's backward on it holds the tied `wte`/`lm_head` gradient and `ln_f`'s whole (the
/// replay `tools/nanogpt_replay/fsdp_replay.py` → `tests/data/fsdp_tied_gradient.json` shows it
/// for FSDP1 and FSDP2; `estimate::sharding`'s unit test holds the term to that data). Here,
/// through the binary: a run whose peak is the last block's MLP backward counts it whole; the
/// rest of the early gradients is sharded.
#[test]
fn fsdp_root_keeps_the_tied_gradient_whole_through_the_backward() {
    let t = SiteTest::new();
    let (v, h, w) = (512u64, 256u64, 8u64);
    let run = |sharding: &str| {
        json(&t.run(&[
            "estimate",
            "--set",
            "dtype=float32",
            "--set",
            &format!("vocab_size={v}"),
            "--set",
            "n_layer=4",
            "--set",
            "n_head=4",
            "--set",
            &format!("n_embd={h}"),
            "--set",
            "block_size=256",
            "--set",
            "batch_size=4",
            "--set",
            "bias=False",
            "--set",
            "gradient_accumulation_steps=8",
            "--nproc-per-node",
            &w.to_string(),
            "--set",
            &format!("sharding={sharding}"),
            "--format",
            "json",
        ]))
    };
    let fsdp = run("fsdp");
    assert_eq!(fsdp["train_peak_moment"], "mlp_backward");
    // One micro-step per process, so the gradients at that moment are the early ones: the tied
    // weight's (V·h) and about the last block's MLP, projection and norms (9h² + 8h), fp32.
    let rest = (9 * h * h + 8 * h) * 4;
    let root = (v * h + h) * 4;
    assert_eq!(fsdp["bytes"]["gradients"], rest / w + root);
    // Unsharded DDP holds the same early gradients whole, and its buckets beside them.
    let ddp = run("none");
    assert_eq!(ddp["train_peak_moment"], "mlp_backward");
    let buckets = ddp["bytes"]["ddp_buckets"].as_u64().unwrap();
    assert_eq!(ddp["bytes"]["gradients"], rest + v * h * 4 + buckets);
}
