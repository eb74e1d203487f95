//! Keys only a Hugging Face model has (bitsandbytes' loading and the like), given for nanoGPT's
//! train.py without a `model`: refused at their lines, all at once, on the command line and in a
//! guide, never computed as if they were not there.

use crate::support::SiteTest;

#[test]
fn bitsandbytes_keys_without_a_model_are_refused_at_their_lines() {
    let t = SiteTest::new();
    t.file(
        "run.yaml",
        "n_layer: 4\nn_head: 4\nn_embd: 256\nload_in_4bit: true\nbnb_4bit_quant_type: nf4\n",
    );
    let r = t.run(&["estimate", "run.yaml", "--gpu", "rtx-4090"]);
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    // Both keys, each at its own line, in one report.
    for (key, line) in [("load_in_4bit", 4), ("bnb_4bit_quant_type", 5)] {
        assert!(
            r.stderr.contains(&format!("`{key}` = ")),
            "{key}: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains(&format!("run.yaml:{line}:")),
            "{key} at line {line}: {}",
            r.stderr
        );
    }
    assert!(r.stderr.contains("--model gpt2"), "{}", r.stderr);
    assert!(r.stdout.is_empty(), "an estimate was printed: {}", r.stdout);
    // The key at its default says nothing nanoGPT lacks: accepted.
    let r = t.run(&["estimate", "--set", "load_in_4bit=false", "--n_layer=2"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // With a model the same key is the model's setting.
    let r = t.run(&[
        "estimate",
        "--model",
        "llama-3.2-1b",
        "--set",
        "load_in_4bit=true",
        "--set",
        "lora_rank=8",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn a_guide_with_a_bitsandbytes_key_and_no_model_is_refused_at_its_line() {
    let t = SiteTest::new();
    t.file(
        "content/g/en.md",
        "---\ntitle: T\nlang: en\nscenario:\n  n_layer: 2\n  n_head: 2\n  n_embd: 64\n  load_in_8bit: true\n---\n\nx\n",
    );
    let r = t.build_err();
    assert!(r.stderr.contains("`load_in_8bit`"), "{}", r.stderr);
    assert!(r.stderr.contains("content/g/en.md:8"), "{}", r.stderr);
    assert!(!t.root().join("public").exists(), "public/ written");
}
