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

#[test]
fn eval_only_runs_hold_no_training_state() {
    let t = checkout();
    // nanoGPT's config/eval_gpt2_xl.py, in its shape: the README's GPT-2 XL baseline.
    t.file(
        "config/eval_gpt2_xl.py",
        "batch_size = 8\neval_iters = 500 # use more iterations to get good estimate\neval_only = True\nwandb_log = False\ninit_from = 'gpt2-xl'\n",
    );
    let r = t.run(&[
        "estimate",
        "config/eval_gpt2_xl.py",
        "--gpu",
        "a100-40gb",
        "--format",
        "json",
    ]);
    let v = json(&r);
    let bytes = &v["bytes"];
    assert_eq!(bytes["optimizer"], 0);
    assert_eq!(bytes["activations"], 0);
    assert_eq!(bytes["peak"], bytes["eval_first_peak"]);
    assert_eq!(v["train_peak_moment"], "no_training");
    assert_eq!(v["verdict"], "fits", "{}", r.stdout);
    // The replay's eval-gpt2-xl-s1024-b8 run (eager): 13,570,504,588 bytes at the evaluation.
    let r = t.run(&[
        "estimate",
        "config/eval_gpt2_xl.py",
        "--compile=False",
        "--format",
        "json",
    ]);
    let peak = json(&r)["bytes"]["peak"].as_u64().unwrap() as f64;
    assert!((peak / 13_570_504_588.0 - 1.0).abs() < 0.02, "{peak}");
    // Training the same model would not fit on that card.
    let r = t.run(&[
        "estimate",
        "config/eval_gpt2_xl.py",
        "--eval_only=False",
        "--gpu",
        "a100-40gb",
        "--format",
        "json",
    ]);
    assert_eq!(json(&r)["verdict"], "does_not_fit");
}

#[test]
fn a_resumed_run_holds_the_checkpoint_it_loaded() {
    let t = checkout();
    t.file(
        "config/resume.py",
        "init_from = 'resume'\nout_dir = 'out-gpt2-xl'\nbatch_size = 1\n",
    );
    let v = json(&t.run(&["estimate", "config/resume.py", "--format", "json"]));
    let b = &v["bytes"];
    let p = v["params"]["total"].as_u64().unwrap();
    // Flash attention: no mask buffers, so the checkpoint's weights are 4 bytes a parameter,
    // and loading holds them twice beside 8 bytes of AdamW moments and a step scalar per tensor.
    assert_eq!(b["resume_retained"], 4 * p);
    let tensors = v["params"]["decay_tensors"].as_u64().unwrap()
        + v["params"]["no_decay_tensors"].as_u64().unwrap();
    assert_eq!(b["resume_load_peak"], 16 * p + 4 * tensors);
    let fresh = json(&t.run(&[
        "estimate",
        "config/resume.py",
        "--init_from=gpt2-xl",
        "--format",
        "json",
    ]));
    assert_eq!(
        b["train_peak"].as_u64().unwrap(),
        fresh["bytes"]["train_peak"].as_u64().unwrap() + 4 * p,
        "train.py's state_dict keeps the checkpoint's weights for the whole run"
    );
}

#[test]
fn ddp_divides_the_accumulation_and_adds_gradient_buckets() {
    let t = checkout();
    let one = json(&t.run(&["estimate", "--batch_size=12", "--format", "json"]));
    let r = t.run(&[
        "estimate",
        "--batch_size=12",
        "--nproc-per-node",
        "4",
        "--nnodes",
        "2",
        "--gpu",
        "a100-80gb",
        "--format",
        "json",
    ]);
    let v = json(&r);
    assert_eq!(v["scenario"]["ddp_world_size"], 8);
    assert_eq!(v["accumulation_per_gpu"], 5, "train.py: 40 // 8");
    assert_eq!(
        v["effective_batch"], one["effective_batch"],
        "the job's batch is unchanged"
    );
    let p = v["params"]["total"].as_u64().unwrap();
    assert_eq!(
        v["bytes"]["ddp_buckets"],
        4 * p,
        "gradient_as_bucket_view=False: a copy of every gradient"
    );
    // Every option keeps the accumulation a multiple of the 8 processes.
    for option in v["what_if"].as_array().unwrap() {
        for change in option["changes"].as_array().unwrap() {
            if change["key"] == "gradient_accumulation_steps" {
                let value: u64 = change["value"].as_str().unwrap().parse().unwrap();
                assert_eq!(value % 8, 0, "{option}");
            }
        }
    }
    // train.py asserts the accumulation divides among the processes.
    let r = t.run(&["estimate", "--nproc-per-node", "3"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("multiple of the 3 DDP processes"),
        "{}",
        r.stderr
    );
}

#[test]
fn sharded_optimizer_and_fsdp_split_the_state_among_the_gpus() {
    let t = checkout();
    let base = [
        "estimate",
        "--batch_size=12",
        "--nproc-per-node",
        "8",
        "--format",
        "json",
    ];
    let ddp = json(&t.run(&base));
    let p = ddp["params"]["total"].as_u64().unwrap();
    // Both are offered to a DDP run, marked as needing code (they are not train.py settings).
    let kinds: Vec<&str> = ddp["what_if"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"sharded_optimizer") && kinds.contains(&"fsdp"),
        "{kinds:?}"
    );
    let table = t
        .run(&["estimate", "--batch_size=12", "--nproc-per-node", "8"])
        .stdout;
    assert!(
        table.contains("(ZeroRedundancyOptimizer) ‡") && table.contains("(FSDP) ‡"),
        "{table}"
    );

    let mut args = base.to_vec();
    args.extend(["--set", "sharding=zero1"]);
    let zero = json(&t.run(&args));
    // AdamW's two fp32 moments (8 bytes a parameter) on the heaviest GPU. PyTorch keeps each
    // parameter whole on one rank (sorted greedy): the rank given wte (50304 × 768, more than
    // twice the even share of 124M / 8) holds nothing else, and decides.
    assert_eq!(zero["bytes"]["optimizer"], 8 * 50304 * 768);
    assert!(8 * 50304 * 768 > 2 * (8 * p / 8));
    assert_eq!(
        zero["bytes"]["gradients"], ddp["bytes"]["gradients"],
        "gradients and buckets stay whole"
    );

    let mut args = base.to_vec();
    args.extend(["--set", "sharding=fsdp"]);
    let fsdp = json(&t.run(&args));
    let (h, layers) = (768u64, 12u64);
    let block = 12 * h * h + 2 * h; // one GPT-2 block without biases
    let root = p - layers * block; // embeddings, final LayerNorm, tied head
    let b = &fsdp["bytes"];
    assert_eq!(
        b["weights"],
        4 * p / 8 + 4 * (root + 3 * block),
        "an eighth, plus the gathered units"
    );
    assert_eq!(b["gradients"], 4 * p / 8);
    assert_eq!(b["optimizer"], 8 * p / 8);
    assert_eq!(b["ddp_buckets"], 0, "FSDP has no DDP reducer");

    // Sharding needs processes to share with.
    let r = t.run(&["estimate", "--set", "sharding=fsdp"]);
    assert!(
        r.code != 0 && r.stderr.contains("ddp_world_size"),
        "{}",
        r.stderr
    );
}

/// A guide can show what a DDP run and a resumed run add, by the same names the JSON uses.
#[test]
fn guides_read_the_ddp_and_resume_figures() {
    let t = SiteTest::new();
    t.file(
        "content/ddp/en.md",
        "---\ntitle: DDP\nlang: en\ndate: 2026-11-20\nscenario:\n  ddp_world_size: 8\n  init_from: resume\n  gpu: a100-80gb\n---\n\n\
         Each GPU runs {{ accumulation_per_gpu }} micro-steps; buckets {{ bytes.ddp_buckets | int }} B; \
         the load peaks at {{ bytes.resume_load_peak | int }} B.\n",
    );
    t.build_ok();
    let page = t.output("en/ddp/index.html");
    // On the command line, resuming without a checkpoint needs the shape: train.py's defaults.
    let mut args = vec![
        "estimate",
        "--set",
        "ddp_world_size=8",
        "--set",
        "init_from=resume",
    ];
    for key in [
        "n_layer=12",
        "n_head=12",
        "n_embd=768",
        "block_size=1024",
        "bias=False",
        "vocab_size=50304",
    ] {
        args.extend(["--set", key]);
    }
    args.extend(["--format", "json"]);
    let v = json(&t.run(&args));
    assert!(page.contains("Each GPU runs 5 micro-steps"), "{page}");
    let buckets = v["bytes"]["ddp_buckets"].as_u64().unwrap();
    let load = v["bytes"]["resume_load_peak"].as_u64().unwrap();
    let grouped = |n: u64| {
        let s = n.to_string();
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    };
    assert!(
        page.contains(&grouped(buckets)) && page.contains(&grouped(load)),
        "{page}"
    );
}
