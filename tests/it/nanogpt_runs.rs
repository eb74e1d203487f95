//! `vramdoc estimate` resolves a config to the run nanoGPT's train.py would do: the dataset's
//! vocabulary from `data/<dataset>/meta.pkl`, GPT-2's shape for `init_from = 'gpt2*'` (and its
//! 1024-position limit), the checkpoint's shape for `init_from = 'resume'`, and no GPU estimate
//! for a CPU run. The fixtures in `tests/data/nanogpt/` are written by
//! `tools/nanogpt_fixtures/make.py` (a real `torch.save` checkpoint with stand-in tensors).

use std::path::Path;

use crate::support::{Run, SiteTest};

/// nanoGPT's `config/train_shakespeare_char.py`, in its shape (our own text).
const SHAKESPEARE_CHAR: &str = "out_dir = 'out-shakespeare-char'\neval_interval = 250\n\
dataset = 'shakespeare_char'\ngradient_accumulation_steps = 1\nbatch_size = 64\nblock_size = 256\n\
n_layer = 6\nn_head = 6\nn_embd = 384\ndropout = 0.2\nlearning_rate = 1e-3\n";

/// A site-less folder laid out like a nanoGPT checkout: `data/shakespeare_char/meta.pkl`,
/// `out-gpt2-xl/ckpt.pt` and a config folder.
fn checkout() -> SiteTest {
    let t = SiteTest::new();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/nanogpt");
    for rel in ["data/shakespeare_char/meta.pkl", "out-gpt2-xl/ckpt.pt"] {
        t.bytes(rel, &std::fs::read(fixtures.join(rel)).unwrap());
    }
    t.file("config/train_shakespeare_char.py", SHAKESPEARE_CHAR);
    t
}

fn json(r: &Run) -> serde_json::Value {
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

#[test]
fn the_dataset_meta_gives_the_vocabulary_as_in_train_py() {
    let t = checkout();
    let r = t.run(&[
        "estimate",
        "config/train_shakespeare_char.py",
        "--format",
        "json",
    ]);
    let v = json(&r);
    assert_eq!(v["scenario"]["vocab_size"], 65, "{}", r.stdout);
    // nanoGPT prints "number of parameters: 10.65M" for this config (non-embedding count).
    assert_eq!(v["params"]["non_embedding"], 10_646_784);
    assert!(
        r.stderr
            .contains("vocab_size = 65, from data/shakespeare_char/meta.pkl"),
        "{}",
        r.stderr
    );

    // From another folder, --data-dir says where train.py runs.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vramdoc"))
        .args(["estimate", "--format", "json", "--data-dir"])
        .arg(t.root())
        .arg(t.root().join("config/train_shakespeare_char.py"))
        .current_dir(elsewhere.path())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["scenario"]["vocab_size"], 65);

    // Without the dataset's meta.pkl, train.py's 50304, and a note that says so.
    std::fs::remove_file(t.root().join("data/shakespeare_char/meta.pkl")).unwrap();
    let r = t.run(&[
        "estimate",
        "config/train_shakespeare_char.py",
        "--format",
        "json",
    ]);
    assert_eq!(json(&r)["scenario"]["vocab_size"], 50304);
    assert!(
        r.stderr.contains("no data/shakespeare_char/meta.pkl"),
        "{}",
        r.stderr
    );
    // A vocabulary the config gives wins, as it would in a fork that sets it.
    let r = t.run(&[
        "estimate",
        "config/train_shakespeare_char.py",
        "--set",
        "vocab_size=96",
        "--format",
        "json",
    ]);
    assert_eq!(json(&r)["scenario"]["vocab_size"], 96);
}

#[test]
fn gpt2_checkpoints_have_their_shape_and_at_most_1024_positions() {
    let t = checkout();
    let r = t.run(&[
        "estimate",
        "--init_from=gpt2-xl",
        "--block_size=512",
        "--format",
        "json",
    ]);
    let v = json(&r);
    for (key, value) in [
        ("n_layer", 48),
        ("n_head", 25),
        ("n_embd", 1600),
        ("vocab_size", 50257),
        ("block_size", 512),
    ] {
        assert_eq!(v["scenario"][key], value, "{key}");
    }
    assert_eq!(v["scenario"]["bias"], true);
    // GPT-2 XL: 1,557,611,200 parameters (Hugging Face), less 1024 positions × 1600 cropped to 512.
    assert_eq!(v["params"]["total"], 1_557_611_200u64 - 512 * 1600);

    let r = t.run(&["estimate", "--init_from=gpt2-xl", "--block_size=2048"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("--block_size=2048"), "{}", r.stderr);
    assert!(r.stderr.contains("1024 positions"), "{}", r.stderr);
    let r = t.run(&["estimate", "--init_from=gpt3"]);
    assert!(
        r.code != 0 && r.stderr.contains("gpt2-medium"),
        "{}",
        r.stderr
    );
}

#[test]
fn resuming_takes_the_shape_from_the_checkpoint() {
    let t = checkout();
    t.file(
        "config/resume.py",
        "init_from = 'resume'\nout_dir = 'out-gpt2-xl'\nbatch_size = 1\nn_layer = 2\n",
    );
    let r = t.run(&["estimate", "config/resume.py", "--format", "json"]);
    let v = json(&r);
    for (key, value) in [
        ("n_layer", 48),
        ("n_head", 25),
        ("n_embd", 1600),
        ("vocab_size", 50257),
        ("block_size", 1024),
    ] {
        assert_eq!(v["scenario"][key], value, "{key}");
    }
    assert!(
        r.stderr
            .contains("out-gpt2-xl/ckpt.pt, saved at iteration 20"),
        "{}",
        r.stderr
    );

    // No checkpoint: the shape keys are required, and the error says which and where.
    t.file(
        "config/resume-missing.py",
        "init_from = 'resume'\nn_layer = 4\n",
    );
    let r = t.run(&["estimate", "config/resume-missing.py"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("config/resume-missing.py:1"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("out/ckpt.pt") && r.stderr.contains("n_head, n_embd"),
        "{}",
        r.stderr
    );
    let given = [
        "--set",
        "n_head=4",
        "--set",
        "n_embd=256",
        "--set",
        "block_size=256",
        "--set",
        "bias=False",
        "--set",
        "vocab_size=65",
    ];
    let mut args = vec!["estimate", "config/resume-missing.py", "--format", "json"];
    args.extend(given);
    assert_eq!(json(&t.run(&args))["scenario"]["n_embd"], 256);

    // A file that is not a checkpoint is an error naming it.
    t.file("out-bad/ckpt.pt", "not a zip");
    let r = t.run(&["estimate", "--init_from=resume", "--out_dir=out-bad"]);
    assert!(
        r.code != 0 && r.stderr.contains("out-bad/ckpt.pt"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_cpu_or_mps_run_gets_no_gpu_estimate() {
    let t = checkout();
    for device in ["cpu", "mps"] {
        t.file(
            "config/cpu.py",
            &format!("device = '{device}'\nbatch_size = 4\n"),
        );
        let r = t.run(&["estimate", "config/cpu.py"]);
        assert_ne!(r.code, 0, "{}", r.stdout);
        assert!(
            r.stderr.contains(&format!("device = '{device}'")),
            "{}",
            r.stderr
        );
        assert!(
            r.stderr.contains("no GPU memory to estimate"),
            "{}",
            r.stderr
        );
        assert!(r.stdout.is_empty(), "{}", r.stdout);
    }
    let r = t.run(&["estimate", "--device=cuda:1", "--format", "json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}
