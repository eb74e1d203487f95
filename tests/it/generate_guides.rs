//! Guides whose scenario says `phase: generate` with a catalog `model:`: Hugging Face `generate`
//! on that model as `vramdoc estimate --model M --phase generate` computes it, both solvers'
//! answers (`solve.max_context`, `solve.max_batch`, the `solve_table()` block), the stacked
//! context chart, and variants that change the model or the card.

use serde_json::Value;

use crate::support::{grouped, table, SiteTest};

const FRONT: &str = "scenario:\n  phase: generate\n  model: llama-3.2-1b\n  weights_dtype: bfloat16\n  gpu: rtx-3060-12gb\n  prompt_tokens: 1024\n  max_new_tokens: 256\nvariants:\n  - id: big\n    set: { model: llama-3.2-3b, gpu: rtx-4090 }\n";

const BODY: &str = "Context: {{ solve.max_context | int }} ({{ solve.prompt_tokens | int }} + {{ solve.max_new_tokens | int }}). Batch: {{ solve.max_batch | int }}. Cache: {{ bytes.kv_cache | int }}. Prefill: {{ bytes.prefill_peak | int }}. Per token: {{ kv_cache_per_token | int }}. Heads: {{ architecture.attention.heads }}/{{ architecture.attention.kv_heads }}. Big: {{ variants.big.solve.max_context | int }}, {{ variants.big.fits | verdict }}.\n\n{{ solve_table() }}\n\n{{ chart(\"context\") }}\n\n{{ chart(\"context\", variant=\"big\") }}\n";

fn guide(t: &SiteTest, body: &str) {
    t.file(
        "content/gen/en.md",
        &format!("---\ntitle: T\nlang: en\ndate: 2026-11-20\n{FRONT}---\n\n{body}"),
    );
}

/// `vramdoc estimate --model M --phase generate --gpu G --solve S --format json`, parsed.
fn cli(t: &SiteTest, model: &str, gpu: &str, solve: &str) -> Value {
    let r = t.run(&[
        "estimate",
        "--model",
        model,
        "--phase",
        "generate",
        "--gpu",
        gpu,
        "--prompt_tokens=1024",
        "--max_new_tokens=256",
        "--weights_dtype=bfloat16",
        "--solve",
        solve,
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

#[test]
fn a_generate_guide_shows_the_cli_estimate_and_both_solvers() {
    let t = SiteTest::new();
    guide(&t, BODY);
    t.build_ok();
    let md = t.output("en/gen/index.md");
    let context = cli(&t, "llama-3.2-1b", "rtx-3060-12gb", "max_context");
    let batch = cli(&t, "llama-3.2-1b", "rtx-3060-12gb", "max_batch");
    let big = cli(&t, "llama-3.2-3b", "rtx-4090", "max_context");
    let n = |v: &Value, p: &[&str]| p.iter().fold(v, |v, k| &v[*k]).as_u64().unwrap();
    let max_context = n(&context, &["solve", "max_context"]);
    let expected = format!(
        "Context: {} ({} + 256). Batch: {}. Cache: {}. Prefill: {}.",
        grouped(max_context),
        grouped(n(&context, &["solve", "prompt_tokens"])),
        grouped(n(&batch, &["solve", "max_batch"])),
        grouped(n(&context, &["bytes", "kv_cache"])),
        grouped(n(&context, &["bytes", "prefill_peak"])),
    );
    assert!(md.contains(&expected), "{expected}\n{md}");
    // Llama 3.2 1B: 16 layers, 8 KV heads of 64 dims, bfloat16 (weights_dtype); the cache holds
    // prompt + new − 1 tokens.
    let per_token = 2 * 16 * 8 * 64 * 2;
    assert!(
        md.contains(&format!("Per token: {}.", grouped(per_token))),
        "{md}"
    );
    assert_eq!(
        n(&context, &["bytes", "kv_cache"]),
        per_token * (1024 + 256 - 1)
    );
    assert!(md.contains("Heads: 32/8."), "{md}");
    let big_context = n(&big, &["solve", "max_context"]);
    assert!(
        md.contains(&format!("Big: {}, fits.", grouped(big_context))),
        "{md}"
    );
    // The table: one row per run, the guide's first, with the same answers.
    let rows = table(&md, "Longest context that fits");
    assert_eq!(rows.len(), 2, "{md}");
    assert_eq!(rows[0][0], "llama-3.2-1b");
    assert!(rows[0][3].starts_with(&format!("{} tokens", grouped(max_context))));
    assert!(rows[1][1].contains("RTX 4090"), "{:?}", rows[1]);
    assert!(rows[1][3].starts_with(&format!("{} tokens", grouped(big_context))));
    // The charts, wide and narrow, beside the page; the same build twice draws the same bytes.
    for file in ["context.svg", "context-narrow.svg", "context-big.svg"] {
        let svg = t.output(&format!("en/gen/{file}"));
        assert!(
            svg.contains("<title>Memory against context length"),
            "{file}"
        );
    }
    let first = t.output("en/gen/context.svg");
    assert_eq!(
        t.clean_build_into("again")
            .iter()
            .find(|(p, _)| p.ends_with("en/gen/context.svg"))
            .map(|(_, b)| b.clone()),
        Some(first.into_bytes())
    );
}

#[test]
fn generate_guides_refuse_what_they_cannot_show_at_its_line() {
    // A training field and a training table; then a cache generate does not replay.
    for (body, said) in [
        (
            "{{ bytes.logits | bytes }}\n",
            "this guide's scenario generates",
        ),
        ("{{ breakdown_table() }}\n", "phase: generate"),
        ("{{ chart(\"sweep\") }}\n", "phase: generate"),
    ] {
        let t = SiteTest::new();
        guide(&t, body);
        let run = t.build_err();
        assert!(
            run.stderr.contains("content/gen/en.md:17") && run.stderr.contains(said),
            "{body}: {}",
            run.stderr
        );
    }
    let t = SiteTest::new();
    t.file(
        "content/gen/en.md",
        "---\ntitle: T\nlang: en\ndate: 2026-11-20\nscenario:\n  phase: generate\n  model: gpt2\n  gpu: rtx-4090\n  kv_cache: fp8\n---\n\n{{ solve.max_context }}\n",
    );
    let run = t.build_err();
    assert!(
        run.stderr.contains("content/gen/en.md:9") && run.stderr.contains("fp8"),
        "{}",
        run.stderr
    );
    // Beam search with a quantized cache, not replayed, at its line; beams with the dynamic
    // cache and num_beams 1 (the run without them) build.
    let t = SiteTest::new();
    t.file(
        "content/gen/en.md",
        "---\ntitle: T\nlang: en\ndate: 2026-11-20\nscenario:\n  phase: generate\n  model: llama-3.2-1b\n  gpu: rtx-4090\n  kv_cache: quantized\n  num_beams: 4\n---\n\n{{ solve.max_context }}\n",
    );
    let run = t.build_err();
    assert!(
        run.stderr.contains("content/gen/en.md:10")
            && run.stderr.contains("dynamic and static caches"),
        "{}",
        run.stderr
    );
    for beams in [1, 4] {
        let t = SiteTest::new();
        t.file(
            "content/gen/en.md",
            &format!("---\ntitle: T\nlang: en\ndate: 2026-11-20\nscenario:\n  phase: generate\n  model: llama-3.2-1b\n  gpu: rtx-4090\n  num_beams: {beams}\n---\n\n{{{{ solve.max_context | int }}}} tokens, beams: {{{{ generation.num_beams }}}}.\n"),
        );
        t.build_ok();
        let page = t.output("en/gen/index.md");
        assert!(page.contains(&format!("beams: {beams}.")), "{page}");
    }
    // A training key beside phase: generate, at its line.
    let t = SiteTest::new();
    t.file(
        "content/gen/en.md",
        "---\ntitle: T\nlang: en\ndate: 2026-11-20\nscenario:\n  phase: generate\n  model: llama-3.2-1b\n  gradient_accumulation_steps: 4\n---\n\n{{ bytes.total }}\n",
    );
    let run = t.build_err();
    assert!(
        run.stderr.contains("content/gen/en.md:8")
            && run.stderr.contains("gradient_accumulation_steps"),
        "{}",
        run.stderr
    );
    // A solver's answer on a run without a card has no value.
    let t = SiteTest::new();
    t.file(
        "content/gen/en.md",
        "---\ntitle: T\nlang: en\ndate: 2026-11-20\nscenario:\n  phase: generate\n  model: llama-3.2-1b\n---\n\n{{ solve.max_context }}\n",
    );
    let run = t.build_err();
    assert!(run.stderr.contains("has no value"), "{}", run.stderr);
}
