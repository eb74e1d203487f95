//! The typed paths and the JSON contract in step: every leaf of `vramdoc estimate --format json`
//! is a path a guide reads with the same value, and every typed field is in that JSON.

use serde_json::{json, Value};

use super::*;
use crate::expand::data::{GuideRun, TrainData, VariantData};

/// A guide's data for `yaml`, with one variant (`big`) at 8× the micro-batch.
fn data(yaml: &str) -> GuideData {
    let catalog = GpuCatalog::builtin();
    let yaml: yaml_serde::Value = yaml_serde::from_str(yaml).expect("yaml");
    let scenario = crate::estimate::Scenario::from_yaml(&yaml).expect("scenario");
    let estimate = crate::estimate::estimate(&scenario, &catalog).expect("estimate");
    let mut big = scenario.clone();
    big.batch_size *= 8;
    let variant = crate::estimate::estimate(&big, &catalog).expect("variant");
    let run = GuideRun::Train(Box::new(TrainData {
        scenario,
        estimate,
        variants: vec![VariantData {
            id: "big".into(),
            estimate: variant,
            what_if: Vec::new(),
        }],
        what_if: Vec::new(),
        model: None,
    }));
    GuideData { run }
}

/// The training data of `d`.
fn train(d: &GuideData) -> &TrainData {
    d.train("the test").expect("a training guide")
}

/// A figure as the JSON contract writes it (`None` for a group, which is an object there).
fn as_json(f: &Figure<'_>) -> Option<Value> {
    Some(match f {
        Figure::Whole(n) => json!(n),
        Figure::Signed(i) => json!(i),
        Figure::Float(x) => json!(x),
        Figure::Flag(b) => json!(b),
        Figure::Text(t) => json!(t),
        Figure::Verdict(v) => json!(v),
        Figure::Missing => Value::Null,
        Figure::Group => return None,
    })
}

/// Looks every node of `json` up at `prefix` + its path and checks the value; returns how many
/// leaves were checked.
fn check_walk(d: &GuideData, prefix: &[String], json: &Value) -> usize {
    let catalog = GpuCatalog::builtin();
    let mut todo = vec![(prefix.to_vec(), json)];
    let mut leaves = 0;
    while let Some((path, v)) = todo.pop() {
        let name = path.join(".");
        if path.len() > prefix.len() {
            let got = d
                .lookup(&path, &catalog)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            match v {
                Value::Object(_) => assert_eq!(got, Figure::Group, "{name}"),
                _ => {
                    assert_eq!(as_json(&got).as_ref(), Some(v), "{name}");
                    leaves += 1;
                }
            }
        }
        if let Value::Object(m) = v {
            for (k, child) in m {
                let mut p = path.clone();
                p.push(k.clone());
                todo.push((p, child));
            }
        }
    }
    leaves
}

/// Whether `json` has a node at `path`.
fn has(json: &Value, path: &[&str]) -> bool {
    path.iter().try_fold(json, |v, k| v.get(*k)).is_some()
}

const SCENARIOS: &[&str] = &[
    // No GPU: `fits`, `verdict`, `gpu.*` are missing (null).
    "n_layer: 4\nn_head: 4\nn_embd: 256\nbatch_size: 8\ndropout: 0.1\n",
    // Fits a large card.
    "n_layer: 4\nn_head: 4\nn_embd: 256\nbatch_size: 8\ngpu: a100-80gb\n",
    // Does not fit a small one: negative headroom.
    "batch_size: 64\nblock_size: 1024\ngpu: t4\nother_processes: 1000000000\n",
    // Resumed, with LoRA: the other branches of the byte and parameter fields.
    "init_from: gpt2\nlora_rank: 8\ndtype: float16\ngpu: rtx-4070\n",
];

#[test]
fn every_json_field_is_a_typed_path_with_the_same_value() {
    for yaml in SCENARIOS {
        let d = data(yaml);
        let json = serde_json::to_value(&train(&d).estimate).expect("json");
        let leaves = check_walk(&d, &[], &json);
        assert!(leaves > 50, "{yaml}: only {leaves} leaves");
        let variant = serde_json::to_value(&train(&d).variants[0].estimate).expect("json");
        let prefix = ["variants".to_owned(), "big".to_owned()];
        assert_eq!(check_walk(&d, &prefix, &variant), leaves, "{yaml}");
    }
    // The scenarios reach every kind of figure.
    let catalog = GpuCatalog::builtin();
    let read = |yaml: &str, p: &str| {
        let path: Vec<String> = p.split('.').map(str::to_owned).collect();
        data(yaml).lookup(&path, &catalog).map(|f| format!("{f:?}"))
    };
    assert_eq!(read(SCENARIOS[0], "fits"), Ok("Missing".into()));
    assert_eq!(
        read(SCENARIOS[0], "scenario.dropout"),
        Ok("Float(0.1)".into())
    );
    assert_eq!(read(SCENARIOS[1], "verdict"), Ok("Verdict(Fits)".into()));
    assert!(read(SCENARIOS[2], "headroom_bytes").is_ok_and(|f| f.starts_with("Signed(-")));
    assert_eq!(read(SCENARIOS[3], "gpu.bf16"), Ok("Flag(true)".into()));
}

#[test]
fn every_typed_field_is_in_the_json() {
    let catalog = GpuCatalog::builtin();
    for yaml in SCENARIOS {
        let d = data(yaml);
        let json = serde_json::to_value(&train(&d).estimate).expect("json");
        let mut paths: Vec<Vec<&str>> = Vec::new();
        paths.extend(PARAMS.iter().map(|(n, _)| vec!["params", *n]));
        paths.extend(BYTES.iter().map(|(n, _)| vec!["bytes", *n]));
        paths.extend(keys::KEYS.iter().map(|k| vec!["scenario", k.name]));
        paths.extend(GPU_FIELDS.iter().map(|f| vec!["gpu", *f]));
        // Every top-level name a guide can read, and a few it cannot.
        let top = json.as_object().expect("object").keys();
        paths.extend(top.map(|k| vec![k.as_str()]));
        for name in ["architecture", "what_if", "catalog", "variants", "gpus"] {
            paths.push(vec![name]);
        }
        for p in paths {
            let owned: Vec<String> = p.iter().map(|s| s.to_string()).collect();
            let typed = d.lookup(&owned, &catalog);
            let in_json = has(&json, &p)
                // `gpu` is null when no GPU is named, and its fields read as missing.
                || (p[0] == "gpu" && json["gpu"].is_null());
            match typed {
                Ok(_) => assert!(
                    in_json,
                    "{yaml}: `{}` is typed but not in the JSON",
                    p.join(".")
                ),
                Err(e) => {
                    assert!(!in_json, "{yaml}: `{}`: {e}", p.join("."));
                    assert!(e.contains(&format!("`{}`", p.join("."))), "{e}");
                }
            }
        }
    }
}

#[test]
fn catalog_paths_read_the_catalog_card() {
    let catalog = GpuCatalog::builtin();
    let d = data(SCENARIOS[0]);
    let path = |p: &str| p.split('.').map(str::to_owned).collect::<Vec<_>>();
    let t4 = catalog.get("t4").expect("t4");
    assert_eq!(
        d.lookup(&path("catalog.t4.capacity_bytes"), &catalog),
        Ok(Figure::Whole(t4.capacity_bytes))
    );
    assert_eq!(
        d.lookup(&path("catalog.t4.name"), &catalog),
        Ok(Figure::Text(t4.name.as_str().into()))
    );
    assert_eq!(d.lookup(&path("catalog.t4"), &catalog), Ok(Figure::Group));
    assert_eq!(
        d.lookup(&path("catalog.t4.bf16"), &catalog),
        Err("unknown name `catalog.t4.bf16`".into())
    );
}

/// A generate guide's data: Llama 3.2 1B on a 12 GB card, and a variant on another card and model.
fn generate_data() -> GuideData {
    let yaml = "phase: generate\nmodel: llama-3.2-1b\nweights_dtype: bfloat16\ngpu: rtx-3060-12gb\nprompt_tokens: 2048\n";
    let yaml: yaml_serde::Value = yaml_serde::from_str(yaml).expect("yaml");
    let variant = crate::content::Variant {
        id: "big".into(),
        label: "big".into(),
        set: ["model: llama-3.2-3b", "gpu: rtx-4090", "batch_size: 4"]
            .iter()
            .map(|kv| {
                let (key, value) = kv.split_once(": ").expect("pair");
                crate::content::variants::Setting {
                    key: key.into(),
                    value: yaml_serde::from_str(value).expect("value"),
                    line: 1,
                }
            })
            .collect(),
        line: 1,
    };
    crate::expand::guide_data(&yaml, &[variant], &GpuCatalog::builtin()).expect("generate data")
}

/// What `estimate --model M --phase generate --format json` prints of a run, with both solvers'
/// answers in `solve`, less what a guide does not read as such (the architecture's config
/// numbers, and the dtype and phase, which `scenario.dtype` and `scenario.phase` read).
fn generate_json(run: &super::super::generate_data::GenerateRun) -> Value {
    let mut json = serde_json::to_value(&run.estimate).expect("json");
    let map = json.as_object_mut().expect("object");
    for gone in ["architecture", "dtype", "phase"] {
        map.remove(gone);
    }
    map["generation"]
        .as_object_mut()
        .expect("generation")
        .remove("cache");
    let (context, batch) = (run.max_context.expect("card"), run.max_batch.expect("card"));
    map.insert(
        "solve".into(),
        json!({
            "max_context": context.value,
            "prompt_tokens": context.prompt_tokens,
            "max_new_tokens": run.estimate.generation.max_new_tokens,
            "max_batch": batch.value,
            "memory_max_context": context.memory_max_context,
            "position_limit": context.position_limit.map(|p| p.positions),
        }),
    );
    json
}

#[test]
fn a_generate_guide_reads_the_generate_json_and_both_solvers() {
    let d = generate_data();
    let g = d.generate("the test").expect("generate guide");
    let leaves = check_walk(&d, &[], &generate_json(&g.run));
    assert!(leaves > 30, "only {leaves} leaves");
    let prefix = ["variants".to_owned(), "big".to_owned()];
    let big = g.variant("big").expect("variant");
    assert_eq!(check_walk(&d, &prefix, &generate_json(big)), leaves);
    // The variant changed the model and the card.
    assert_ne!(big.estimate.bytes.weights, g.run.estimate.bytes.weights);
    let catalog = GpuCatalog::builtin();
    let path = |p: &str| p.split('.').map(str::to_owned).collect::<Vec<_>>();
    let limit = g.run.max_context.and_then(|s| s.value).expect("fits");
    assert_eq!(
        d.lookup(&path("solve.max_context"), &catalog),
        Ok(Figure::Whole(limit))
    );
    // A training field in a generate guide, and a generate field in a training one, say so.
    let e = d
        .lookup(&path("bytes.logits"), &catalog)
        .expect_err("training");
    assert!(
        e.contains("`bytes.logits`") && e.contains("generates"),
        "{e}"
    );
    let e = data(SCENARIOS[1])
        .lookup(&path("solve.max_context"), &catalog)
        .expect_err("generate");
    assert!(
        e.contains("`solve.max_context`") && e.contains("trains"),
        "{e}"
    );
    assert!(Field::resolve(&path("solve.nothing")).is_err());
}

#[test]
fn a_generate_guide_reads_the_shape_and_one_tokens_cache() {
    let d = generate_data();
    let g = d.generate("the test").expect("generate guide");
    let catalog = GpuCatalog::builtin();
    let json = serde_json::to_value(&g.run.estimate.architecture).expect("json");
    for (tail, _) in ARCHITECTURE {
        let mut path = vec!["architecture".to_owned()];
        path.extend(tail.iter().map(|s| s.to_string()));
        let want = tail
            .iter()
            .try_fold(&json, |v, k| v.get(*k))
            .expect("in the JSON");
        let got = d.lookup(&path, &catalog).expect("typed");
        assert_eq!(as_json(&got).as_ref(), Some(want), "{}", path.join("."));
    }
    // Keys and values of every layer, bfloat16: 2 × layers × KV heads × head dim × 2 bytes.
    let a = &g.run.estimate.architecture;
    let per_token = 2 * a.layers * a.attention.kv_heads * a.attention.head_dim * 2;
    assert_eq!(
        d.lookup(&["kv_cache_per_token".to_owned()], &catalog),
        Ok(Figure::Whole(per_token))
    );
    // The whole cache is that times the tokens it ends holding (prompt + new − 1).
    let gen = g.run.estimate.generation;
    let tokens = gen.prompt_tokens + gen.max_new_tokens - 1;
    assert_eq!(g.run.estimate.bytes.kv_cache, per_token * tokens);
}

#[test]
fn a_generate_guide_reads_the_quantized_cache_of_the_same_call() {
    use crate::estimate::kv_cache::{cache_bytes, CacheKind, CacheRun};
    let d = generate_data();
    let g = d.generate("the test").expect("generate guide");
    let run = &g.run.estimate;
    let int4 = cache_bytes(
        &run.architecture,
        &CacheRun {
            kind: CacheKind::QUANTIZED_INT4,
            element_bytes: 2,
            sequences: 1,
            prompt: run.generation.prompt_tokens,
            new_tokens: run.generation.max_new_tokens,
        },
    )
    .expect("quantized")
    .largest;
    let catalog = GpuCatalog::builtin();
    assert_eq!(
        d.lookup(&["kv_cache_quantized".to_owned()], &catalog),
        Ok(Figure::Whole(int4))
    );
    // Four bits and a scale and shift per 64 elements, beside 128 tokens kept in bfloat16: well
    // under the bfloat16 cache, and over a quarter of it.
    assert!(
        int4 < run.bytes.kv_cache / 2 && int4 > run.bytes.kv_cache / 4,
        "{int4}"
    );
}
