//! Parameter counts against nanoGPT: docs/contracts.md's reference facts, published GPT-2 counts, and
//! configs counted module by module here (not by the closed form the estimator uses).

use vramdoc::estimate::{estimate, GpuCatalog, Literal, Params, Scenario};

fn scenario(pairs: &[(&str, Literal)]) -> Scenario {
    let mut s = Scenario::default();
    for (k, v) in pairs {
        s.set(k, v.clone()).expect("valid key");
    }
    s
}

fn params(s: &Scenario) -> Params {
    estimate(s, &GpuCatalog::builtin())
        .expect("valid scenario")
        .params
}

/// Counts nanoGPT's modules one by one: returns (total, decay, decay tensors, no_decay, no_decay tensors).
fn count_modules(l: u64, h: u64, v: u64, s: u64, bias: bool) -> (u64, u64, u64, u64, u64) {
    let mut tensors: Vec<(u64, bool)> = vec![(v * h, true), (s * h, true)]; // wte (= lm_head), wpe
    for _ in 0..l {
        tensors.push((h, false)); // ln_1.weight
        tensors.push((h * 3 * h, true)); // c_attn.weight
        tensors.push((h * h, true)); // attn.c_proj.weight
        tensors.push((h, false)); // ln_2.weight
        tensors.push((h * 4 * h, true)); // c_fc.weight
        tensors.push((4 * h * h, true)); // mlp.c_proj.weight
        if bias {
            for n in [h, 3 * h, h, h, 4 * h, h] {
                tensors.push((n, false)); // ln_1, c_attn, attn.c_proj, ln_2, c_fc, mlp.c_proj biases
            }
        }
    }
    tensors.push((h, false)); // ln_f.weight
    if bias {
        tensors.push((h, false)); // ln_f.bias
    }
    let total = tensors.iter().map(|t| t.0).sum();
    let decay: Vec<u64> = tensors.iter().filter(|t| t.1).map(|t| t.0).collect();
    let no_decay: Vec<u64> = tensors.iter().filter(|t| !t.1).map(|t| t.0).collect();
    (
        total,
        decay.iter().sum(),
        decay.len() as u64,
        no_decay.iter().sum(),
        no_decay.len() as u64,
    )
}

#[test]
fn design_md_reference_facts() {
    let p = params(&scenario(&[
        ("n_layer", Literal::Int(6)),
        ("n_head", Literal::Int(6)),
        ("n_embd", Literal::Int(384)),
        ("block_size", Literal::Int(512)),
        ("bias", Literal::Bool(false)),
    ]));
    assert_eq!(p.non_embedding, 29_938_560);
    assert_eq!(p.decay, 30_130_176);
    assert_eq!(p.decay_tensors, 26);
    assert_eq!(p.no_decay, 4_992);
    assert_eq!(p.no_decay_tensors, 13);
    assert_eq!(p.total, 29_938_560 + 512 * 384);
    assert_eq!(p.total, p.decay + p.no_decay);
}

#[test]
fn gpt2_small_published_count() {
    // GPT-2 small (HF checkpoint): 124,439,808 parameters; nanoGPT prints 123.65M without wpe.
    let p = params(&scenario(&[
        ("vocab_size", Literal::Int(50257)),
        ("bias", Literal::Bool(true)),
    ]));
    assert_eq!(p.total, 124_439_808);
    assert_eq!(p.non_embedding, 124_439_808 - 1024 * 768);
}

#[test]
fn shakespeare_char_prints_10_65m() {
    // config/train_shakespeare_char.py: nanoGPT prints "number of parameters: 10.65M".
    let p = params(&scenario(&[
        ("n_layer", Literal::Int(6)),
        ("n_head", Literal::Int(6)),
        ("n_embd", Literal::Int(384)),
        ("block_size", Literal::Int(256)),
        ("vocab_size", Literal::Int(65)),
    ]));
    assert_eq!((p.non_embedding as f64 / 1e4).round() / 100.0, 10.65);
    let (total, ..) = count_modules(6, 384, 65, 256, false);
    assert_eq!(p.total, total);
}

#[test]
fn module_by_module_counts() {
    for (l, a, h, v, s, bias) in [
        (4u64, 4u64, 128u64, 65u64, 64u64, true),
        (12, 12, 768, 50304, 1024, false),
        (3, 2, 10, 7, 5, true),
        (24, 16, 1024, 50304, 1024, true),
    ] {
        let p = params(&scenario(&[
            ("n_layer", Literal::Int(l as i64)),
            ("n_head", Literal::Int(a as i64)),
            ("n_embd", Literal::Int(h as i64)),
            ("vocab_size", Literal::Int(v as i64)),
            ("block_size", Literal::Int(s as i64)),
            ("bias", Literal::Bool(bias)),
        ]));
        let (total, decay, decay_t, no_decay, no_decay_t) = count_modules(l, h, v, s, bias);
        assert_eq!(p.total, total, "total for {l}/{h}/{v}/{s}/{bias}");
        assert_eq!(p.non_embedding, total - s * h);
        assert_eq!(p.embedding, v * h + s * h);
        assert_eq!((p.decay, p.decay_tensors), (decay, decay_t));
        assert_eq!((p.no_decay, p.no_decay_tensors), (no_decay, no_decay_t));
        let linear_biases = if bias { 9 * h * l } else { 0 };
        assert_eq!(p.linear, 12 * h * h * l + v * h + linear_biases);
    }
}
