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
