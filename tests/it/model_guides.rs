//! Guides whose front matter names `model:` (a catalog id): the page is that model's Trainer
//! step as `vramdoc estimate --model` computes it (the same bytes), with its breakdown, its
//! what-ifs, its short answer and charts; keys a model lacks are refused at their line.

use serde_json::Value;

use crate::support::{grouped, SiteTest};

const SCENARIO: &str = "scenario:\n  model: qwen2.5-0.5b\n  weights_dtype: float32\n  batch_size: 4\n  gradient_accumulation_steps: 2\n  block_size: 1024\n  dtype: bfloat16\n  gpu: rtx-4090\nvariants:\n  - id: ckpt\n    label: LABEL\n    set: { grad_checkpoint: true }\n";

const BODY: &str = "Total: {{ bytes.total | int }}. Logits: {{ bytes.logits | int }}. Checkpointed: {{ variants.ckpt.bytes.total | int }}, {{ variants.ckpt.fits | verdict }}.\n\n{{ breakdown_table() }}\n\n{{ options_table() }}\n\n{{ chart(\"breakdown\") }}\n\n{{ chart(\"sweep\", over=\"batch_size\") }}\n";

fn guide(t: &SiteTest, lang: &str, scenario: &str) {
    t.file(
        &format!("content/qwen/{lang}.md"),
        &format!(
            "---\ntitle: T {lang}\nlang: {lang}\ndate: 2026-11-20\n{}---\n\n{BODY}",
            scenario.replace("LABEL", &format!("label {lang}"))
        ),
    );
}

/// `vramdoc estimate --model qwen2.5-0.5b ARGS --format json`, parsed.
fn cli(t: &SiteTest, args: &[&str]) -> Value {
    let mut all = vec![
        "estimate",
        "--model",
        "qwen2.5-0.5b",
        "--gpu",
        "rtx-4090",
        "--batch_size=4",
        "--gradient_accumulation_steps=2",
        "--block_size=1024",
        "--dtype=bfloat16",
        "--weights_dtype=float32",
        "--format",
        "json",
    ];
    all.extend_from_slice(args);
    let r = t.run(&all);
    assert_eq!(r.code, 0, "{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

#[test]
fn a_guide_naming_a_model_shows_that_models_estimate_and_what_ifs() {
    let t = SiteTest::new();
    guide(&t, "en", SCENARIO);
    t.build_ok();
    let html = t.output("en/qwen/index.html");
    let v = cli(&t, &[]);
    let total = v["bytes"]["total"].as_u64().unwrap();
    assert!(
        html.contains(&format!("Total: {}.", grouped(total))),
        "{html}"
    );
    // HF's loss keeps 12 bytes per logit in float32: 12 · s · b · V.
    let logits = 12 * 1024 * 4 * 151_936u64;
    assert_eq!(v["bytes"]["logits"], logits);
    assert!(
        html.contains(&format!("Logits: {}.", grouped(logits))),
        "{html}"
    );
    let ckpt = cli(&t, &["--grad_checkpoint=True"]);
    let ckpt_total = ckpt["bytes"]["total"].as_u64().unwrap();
    assert!(html.contains(&format!("Checkpointed: {},", grouped(ckpt_total))));
    // The model's what-ifs, in its own wording, and its breakdown rows.
    assert!(html.contains("gradient_checkpointing=True"), "{html}");
    assert!(
        html.contains("<code>per_device_train_batch_size=2</code>"),
        "{html}"
    );
    assert!(html.contains("Logits and loss"), "{html}");
    // No nanoGPT code note: the one patch among the options is Liger's, and says so.
    assert!(!html.contains("nanoGPT's train.py reads"), "{html}");
    assert!(html.contains("‡ a patch to the model's code"), "{html}");
    assert!(
        html.contains("<svg") || html.contains("<picture>"),
        "{html}"
    );
    // The short answer: the first row that fits (the variant, listed first), as the Python
    // that sets it.
    assert!(html.contains("class=\"answer\""), "{html}");
    assert!(
        html.contains("args = SFTConfig(\n    gradient_checkpointing=True,\n    ...\n)"),
        "{html}"
    );
    assert!(!html.contains("python train.py"), "{html}");
}

#[test]
fn keys_a_model_lacks_are_refused_at_their_line() {
    let t = SiteTest::new();
    guide(
        &t,
        "en",
        &SCENARIO.replace(
            "  block_size: 1024\n",
            "  block_size: 1024\n  n_layer: 12\n",
        ),
    );
    let r = t.build_err();
    assert!(r.stderr.contains("n_layer"), "{}", r.stderr);
    assert!(r.stderr.contains("en.md:11"), "{}", r.stderr);
    let t = SiteTest::new();
    guide(
        &t,
        "en",
        &SCENARIO.replace("qwen2.5-0.5b", "qwen2.5-05b-typo"),
    );
    let r = t.build_err();
    assert!(r.stderr.contains("en.md:6"), "{}", r.stderr);
    assert!(r.stderr.contains("unknown model"), "{}", r.stderr);
    let t = SiteTest::new();
    guide(
        &t,
        "en",
        &SCENARIO.replace("{ grad_checkpoint: true }", "{ n_embd: 512 }"),
    );
    let r = t.build_err();
    assert!(r.stderr.contains("en.md:16"), "{}", r.stderr);
}

#[test]
fn the_bundled_qwen_guide_shows_the_losss_twelve_bytes_per_logit_in_every_language() {
    let out = tempfile::tempdir().unwrap();
    let public = out.path().join("public");
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_vramdoc"))
        .args(["build", "--root", env!("CARGO_MANIFEST_DIR"), "--out"])
        .arg(&public)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // Qwen2.5's 151,936 entries, 12 float32 bytes each at the loss's backward: the guide's
    // micro-batch 8 × 1024 tokens, and its micro-batch-1 variant.
    let (vocab, seq) = (151_936u64, 1024u64);
    let base = 12 * 8 * seq * vocab;
    let micro1 = 12 * seq * vocab;
    assert_eq!((base, micro1), (14_935_916_544, 1_866_989_568));
    for (lang, base_text, micro1_text) in [
        ("en", "14,935,916,544 bytes", "1,866,989,568 bytes"),
        ("es", "14.935.916.544 bytes", "1.866.989.568 bytes"),
        ("zh", "14935916544 字节", "1866989568 字节"),
    ] {
        let html = std::fs::read_to_string(
            public.join(format!("{lang}/qwen-large-vocab-loss-oom/index.html")),
        )
        .unwrap();
        assert!(html.contains(base_text), "{lang}: {base_text}");
        assert!(html.contains(micro1_text), "{lang}: {micro1_text}");
        // The what-ifs are the model's own: Trainer settings, no nanoGPT code notes; the one
        // patch, Liger's fused cross-entropy, is marked as one.
        assert!(html.contains("gradient_checkpointing=True"), "{lang}");
        assert!(html.contains("_apply_liger_kernel_to_instance"), "{lang}");
        for nanogpt in [
            "nanoGPT's train.py reads",
            "no es un ajuste que lea train.py",
            "不是 nanoGPT 的 train.py 读取的设置",
        ] {
            assert!(!html.contains(nanogpt), "{lang}");
        }
    }
}
