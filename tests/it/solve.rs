//! The generate-phase solvers (`estimate::solve`): each answer fits and one token (or sequence)
//! more does not, unless the model's own limit (sample.py's `block_size` crop, GPT-2's
//! positions) comes first; and the property they rely on: memory never decreases with a longer
//! context or a bigger batch.

use proptest::prelude::*;

use vramdoc::estimate::arch::Architecture;
use vramdoc::estimate::kv_cache::CacheKind;
use vramdoc::estimate::{
    estimate_generate, estimate_sampling, generate_max_batch, generate_max_context,
    sampling_max_context, Dtype, Generation, GpuCatalog, InitFrom, Limit, Sampling, Scenario,
    Verdict,
};

fn gpt2() -> Architecture {
    Architecture::hf_gpt2(12, 12, 768, 50257, 1024)
}

fn hf_scenario(gpu: &str, other: u64) -> Scenario {
    Scenario {
        dtype: Dtype::Bfloat16,
        compile: false,
        gpu: Some(gpu.to_owned()),
        other_processes: other,
        ..Scenario::default()
    }
}

fn generation(prompt: u64, new: u64, batch: u64, cache: CacheKind) -> Generation {
    Generation {
        prompt_tokens: prompt,
        max_new_tokens: new,
        batch_size: batch,
        num_return_sequences: 1,
        do_sample: false,
        num_beams: 1,
        cache,
    }
}

fn capacity(gpu: &str) -> u64 {
    GpuCatalog::builtin().get(gpu).unwrap().capacity_bytes
}

/// Other programs' memory that leaves room for `total_high` of `at` bytes and no more.
fn crowd(gpu: &str, total_high: u64) -> u64 {
    capacity(gpu) - total_high
}

fn hf_fits(s: &Scenario, g: &Generation) -> bool {
    let est = estimate_generate(&gpt2(), s, g, &GpuCatalog::builtin()).unwrap();
    est.verdict == Some(Verdict::Fits)
}

#[test]
fn hf_max_context_is_the_boundary_one_token_more_does_not_fit() {
    let catalog = GpuCatalog::builtin();
    let base = generation(600, 128, 16, CacheKind::Dynamic);
    // Crowd the card so the boundary falls at a 600-token prompt.
    let at = estimate_generate(&gpt2(), &hf_scenario("rtx-4090", 0), &base, &catalog).unwrap();
    let s = hf_scenario("rtx-4090", crowd("rtx-4090", at.bytes.total_high));
    let sol = generate_max_context(&gpt2(), &s, &base, &catalog).unwrap();
    assert_eq!(sol.limited_by, Limit::Memory);
    let prompt = sol.prompt_tokens.unwrap();
    assert_eq!(sol.value, Some(prompt + 128));
    assert_eq!(prompt, 600);
    assert!(hf_fits(
        &s,
        &generation(prompt, 128, 16, CacheKind::Dynamic)
    ));
    assert!(!hf_fits(
        &s,
        &generation(prompt + 1, 128, 16, CacheKind::Dynamic)
    ));
    // On an empty card GPT-2's 1024 positions come first: prompt + new − 1 = 1024.
    let free = hf_scenario("rtx-4090", 0);
    let sol = generate_max_context(&gpt2(), &free, &base, &catalog).unwrap();
    assert_eq!((sol.value, sol.limited_by), (Some(1025), Limit::Positions));
}

#[test]
fn hf_max_batch_is_the_boundary_one_sequence_more_does_not_fit() {
    let catalog = GpuCatalog::builtin();
    for cache in [CacheKind::Dynamic, CacheKind::Static] {
        let g = generation(512, 512, 1, cache);
        let s = hf_scenario("rtx-3060-12gb", 0);
        let sol = generate_max_batch(&gpt2(), &s, &g, &catalog).unwrap();
        let b = sol.value.unwrap();
        assert!(b > 1, "{cache:?}: {b}");
        assert!(hf_fits(&s, &generation(512, 512, b, cache)));
        assert!(!hf_fits(&s, &generation(512, 512, b + 1, cache)));
    }
    // Nothing fits: the weights alone beyond a crowded card.
    let s = hf_scenario("rtx-3060-12gb", capacity("rtx-3060-12gb") - (1 << 20));
    let g = generation(512, 512, 1, CacheKind::Dynamic);
    assert_eq!(
        generate_max_batch(&gpt2(), &s, &g, &catalog).unwrap().value,
        None
    );
}

fn sample_scenario(gpu: &str, other: u64) -> Scenario {
    Scenario {
        init_from: InitFrom::Gpt2Xl,
        compile: false,
        gpu: Some(gpu.to_owned()),
        other_processes: other,
        ..Scenario::default()
    }
}

fn sampling(prompt: u64, new: u64) -> Sampling {
    Sampling {
        prompt_tokens: prompt,
        max_new_tokens: new,
        num_samples: 10,
        top_k: Some(200),
    }
}

#[test]
fn sample_py_max_context_stops_at_the_block_size_crop_or_the_card() {
    let catalog = GpuCatalog::builtin();
    // nanoGPT's README command on a 24 GB card: the crop at block_size 1024 is the limit.
    let free = sample_scenario("rtx-3090", 0);
    let sol = sampling_max_context(&free, &sampling(1, 500), &catalog).unwrap();
    assert_eq!(
        (sol.value, sol.prompt_tokens, sol.limited_by),
        (Some(1024), Some(524), Limit::BlockSize)
    );
    // A crowded card: the boundary is memory, at the prompt chosen.
    let at = estimate_sampling(&free, &sampling(300, 500), &catalog).unwrap();
    let s = sample_scenario("rtx-3090", crowd("rtx-3090", at.bytes.total_high));
    let sol = sampling_max_context(&s, &sampling(1, 500), &catalog).unwrap();
    assert_eq!(sol.limited_by, Limit::Memory);
    let p = sol.prompt_tokens.unwrap();
    let fits = |p: u64| {
        estimate_sampling(&s, &sampling(p, 500), &catalog)
            .unwrap()
            .verdict
            == Some(Verdict::Fits)
    };
    assert!(fits(p) && !fits(p + 1), "{p}");
    assert!(p <= 300);
    // Without a card there is nothing to fit.
    let none = Scenario {
        gpu: None,
        ..free.clone()
    };
    let e = sampling_max_context(&none, &sampling(1, 500), &catalog).unwrap_err();
    assert_eq!(e.key.as_deref(), Some("gpu"));
}

fn dtype() -> impl Strategy<Value = Dtype> {
    prop_oneof![
        Just(Dtype::Float32),
        Just(Dtype::Bfloat16),
        Just(Dtype::Float16)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Memory never decreases with a longer prompt, more new tokens or a bigger batch.
    #[test]
    fn generate_memory_never_decreases_with_context_or_batch(
        p in 1u64..=700, dp in 0u64..=300, n in 1u64..=300, dn in 0u64..=20,
        b in 1u64..=16, db in 0u64..=16, r in 1u64..=4, dtype in dtype(), stat in any::<bool>(),
    ) {
        let catalog = GpuCatalog::builtin();
        let s = Scenario { dtype, compile: false, ..Scenario::default() };
        let cache = if stat { CacheKind::Static } else { CacheKind::Dynamic };
        let g = |p: u64, n: u64, b: u64| Generation {
            prompt_tokens: p,
            max_new_tokens: n,
            batch_size: b,
            num_return_sequences: r,
            do_sample: r > 1,
            num_beams: 1,
            cache,
        };
        let total = |g: Generation| {
            let e = estimate_generate(&gpt2(), &s, &g, &catalog).unwrap();
            (e.bytes.peak, e.bytes.total_high, e.bytes.kv_cache)
        };
        let small = total(g(p, n, b));
        for bigger in [g(p + dp, n, b), g(p, n + dn, b), g(p, n, b + db)] {
            if bigger.prompt_tokens + bigger.max_new_tokens > 1025 {
                continue;
            }
            let big = total(bigger);
            prop_assert!(big.0 >= small.0 && big.1 >= small.1 && big.2 >= small.2,
                "{small:?} > {big:?} for {bigger:?}");
        }
    }

    /// sample.py's memory never decreases with a longer prompt or more new tokens.
    #[test]
    fn sampling_memory_never_decreases_with_context(
        p in 1u64..=1500, dp in 0u64..=600, n in 1u64..=600, dn in 0u64..=600,
        flash in any::<bool>(), dtype in dtype(), k in proptest::option::of(1u64..=60_000),
    ) {
        let catalog = GpuCatalog::builtin();
        let s = Scenario { init_from: InitFrom::Gpt2, compile: false, flash, dtype,
            ..Scenario::default() };
        let run = |p: u64, n: u64| Sampling { prompt_tokens: p, max_new_tokens: n,
            num_samples: 2, top_k: k };
        let peak = |r: Sampling| estimate_sampling(&s, &r, &catalog).unwrap().bytes.peak;
        let small = peak(run(p, n));
        prop_assert!(peak(run(p + dp, n)) >= small);
        prop_assert!(peak(run(p, n + dn)) >= small);
    }
}

#[derive(serde::Deserialize)]
struct Bisected {
    cases: Vec<BisectCase>,
}

#[derive(serde::Deserialize)]
struct BisectCase {
    solve: String,
    run: BisectRun,
    budget_peak_bytes: u64,
    answer: u64,
}

#[derive(serde::Deserialize)]
struct BisectRun {
    prompt_tokens: u64,
    max_new_tokens: u64,
    batch_size: u64,
    cache: String,
    #[serde(default)]
    family: String,
    #[serde(default)]
    config: Vec<(String, serde_json::Value)>,
}

/// Other programs' memory on `gpu` that makes "fits" the same question as "peak ≤ budget": the
/// verdict's high end is the peak plus the high ends of the overhead (`estimate/overhead.rs`,
/// without torch.compile: a 1 GiB CUDA context, 30 % allocator slack, a 32 MiB cuBLAS
/// workspace), which grows with the peak and nothing else.
pub(crate) fn other_for_peak_budget(gpu: &str, budget: u64) -> u64 {
    let high = budget + (1 << 30) + budget * 30 / 100 + (32 << 20);
    capacity(gpu) - high
}

/// Each solver's answer is within one step (one sequence, or 256 tokens) of a bisection over
/// replays of transformers' own `generate` (`tools/hf_replay/bisect_generate.py`,
/// `tests/data/hf_generate_bisect.json`: GPT-2 with a dynamic cache, and Llama 3.2 1B's config
/// with 2 layers and a static cache, grouped heads); in fact within one token or sequence.
#[test]
fn the_solvers_agree_with_a_bisection_over_generate_replays() {
    solvers_agree_with_bisection("tests/data/hf_generate_bisect.json", 4);
}

/// The solvers against the `cases` bisections over replays in `path`, each on its run's model
/// (GPT-2, a Llama-family config, a mixture of experts' config): within one step, in fact within
/// one token or sequence.
pub(crate) fn solvers_agree_with_bisection(path: &str, cases: usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let data: Bisected = serde_json::from_str(&text).unwrap();
    let catalog = GpuCatalog::builtin();
    assert_eq!(data.cases.len(), cases);
    for case in &data.cases {
        let a = match case.run.family.as_str() {
            "llama" => crate::hf_generate::llama(&case.run.config),
            "mixtral" | "qwen2_moe" | "qwen3_moe" => {
                crate::hf_moe_generate::architecture_of_config(&case.run.family, &case.run.config)
            }
            _ => gpt2(),
        };
        let s = hf_scenario(
            "a100-80gb",
            other_for_peak_budget("a100-80gb", case.budget_peak_bytes),
        );
        let g = generation(
            case.run.prompt_tokens,
            case.run.max_new_tokens,
            case.run.batch_size,
            if case.run.cache == "static" {
                CacheKind::Static
            } else {
                CacheKind::Dynamic
            },
        );
        let (got, step) = match case.solve.as_str() {
            "max_batch" => (generate_max_batch(&a, &s, &g, &catalog).unwrap().value, 1),
            _ => (
                generate_max_context(&a, &s, &g, &catalog)
                    .unwrap()
                    .prompt_tokens,
                256,
            ),
        };
        let got = got.unwrap();
        assert!(
            got.abs_diff(case.answer) <= step,
            "{}: solver {got}, replays {}",
            case.solve,
            case.answer
        );
        assert!(
            got.abs_diff(case.answer) <= 1,
            "{}: {got} vs {}",
            case.solve,
            case.answer
        );
    }
}
