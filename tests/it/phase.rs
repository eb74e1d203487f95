//! The scenario key `phase` (`train`, the default, or `generate`) through the real CLI: every
//! spelling reaches the one key, a sample.py file implies `generate` (and contradicts an explicit
//! `train`, naming both), keys of the other phase are refused where they are set, the JSON
//! `scenario` object says the phase, and a guide's `phase: generate` is refused at its line.

use crate::nanogpt_configs::SAMPLE_PY;
use crate::support::SiteTest;

/// `vramdoc estimate ARGS --format json`, as a JSON value (the run must succeed).
fn json(t: &SiteTest, args: &[&str]) -> serde_json::Value {
    t.estimate_json(args)
}

/// `vramdoc estimate ARGS`, which must fail; its stderr.
fn refused(t: &SiteTest, args: &[&str]) -> String {
    let mut all = vec!["estimate"];
    all.extend_from_slice(args);
    let r = t.run(&all);
    assert!(r.code != 0, "{args:?} was accepted: {}", r.stdout);
    r.stderr
}

#[test]
fn every_spelling_of_generate_gives_the_sampling_estimate_of_sample_py() {
    let t = SiteTest::new();
    t.file("sample.py", SAMPLE_PY);
    t.file(
        "gen.yaml",
        "phase: generate\ninit_from: gpt2\ndtype: bfloat16\n",
    );
    t.file("gen.py", "phase = 'generate'\ninit_from = 'gpt2'\n");
    // sample.py's own defaults (num_samples 10, max_new_tokens 500, start "\n"), GPT-2 124M,
    // bf16 autocast: as `python sample.py --init_from=gpt2` runs on a bf16 card.
    let reference = json(
        &t,
        &[
            "sample.py",
            "--init_from=gpt2",
            "--dtype=bfloat16",
            "--gpu",
            "rtx-4090",
        ],
    );
    assert_eq!(reference["phase"], "generate");
    assert_eq!(reference["scenario"]["phase"], "generate");
    let spellings: [&[&str]; 6] = [
        &["--phase", "generate", "--init_from=gpt2"],
        &["--init_from=gpt2", "--phase", "generate"],
        &["--phase=generate", "--init_from=gpt2"],
        &["--init_from=gpt2", "--set", "phase=generate"],
        &["gen.yaml"],
        &["gen.py"],
    ];
    for args in spellings {
        let mut all = args.to_vec();
        all.extend(["--gpu", "rtx-4090"]);
        let v = json(&t, &all);
        assert_eq!(v, reference, "{args:?}");
    }
    // sample.py's settings are read in the generate phase without the file, as it reads them.
    let v = json(
        &t,
        &[
            "--phase",
            "generate",
            "--init_from=gpt2",
            "--max_new_tokens=100",
            "--num_samples=2",
            "--start=hello",
        ],
    );
    assert_eq!(v["sampling"]["max_new_tokens"], 100);
    assert_eq!(v["sampling"]["num_samples"], 2);
    assert_eq!(v["sampling"]["prompt_tokens"], 5);
    // 5 prompt tokens and 100 new ones: the longest forward sees 5 + 100 - 1 tokens.
    assert_eq!(v["context_tokens"], 104);
    // ... and from YAML and --set alike.
    t.file(
        "gen100.yaml",
        "phase: generate\ninit_from: gpt2\nmax_new_tokens: 100\nnum_samples: 2\nstart: hello\n",
    );
    assert_eq!(json(&t, &["gen100.yaml"]), v);
    let by_set = json(
        &t,
        &[
            "--phase",
            "generate",
            "--init_from=gpt2",
            "--set",
            "max_new_tokens=100",
            "--set",
            "num_samples=2",
            "--set",
            "start='hello'",
        ],
    );
    assert_eq!(by_set, v);
    // The table lists as having no effect only the settings that have none.
    let r = t.run(&[
        "estimate",
        "--phase",
        "generate",
        "--init_from=gpt2",
        "--temperature=0.5",
        "--seed=3",
        "--start=hi",
        "--top_k=5",
        "--max_new_tokens=20",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("Ignored, no effect on memory: temperature, seed\n"),
        "{}",
        r.stdout
    );
    // Without a file, sample.py's defaults: it samples from out/ckpt.pt, eagerly.
    let err = refused(&t, &["--phase", "generate"]);
    assert!(
        err.contains("init_from = 'resume' (sample.py's default)"),
        "{err}"
    );
    let v = json(&t, &["--phase", "generate", "--init_from=gpt2"]);
    assert_eq!(v["scenario"]["compile"], false);
    let v = json(
        &t,
        &["--phase", "generate", "--init_from=gpt2", "--compile=True"],
    );
    assert_eq!(v["scenario"]["compile"], true);
    // An unknown phase is refused, naming what it knows.
    let err = refused(&t, &["--phase", "sample", "--init_from=gpt2"]);
    assert!(
        err.contains("unknown phase") && err.contains("generate"),
        "{err}"
    );
}

#[test]
fn estimate_help_names_sample_py_settings() {
    let r = SiteTest::new().run(&["estimate", "--help"]);
    assert!(
        r.stdout.contains("With phase = generate, also sample.py's own settings: start, num_samples, max_new_tokens, temperature, top_k, seed."),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("--phase <PHASE>"), "{}", r.stdout);
}

#[test]
fn the_json_scenario_object_says_train_by_default() {
    let t = SiteTest::new();
    let v = json(&t, &[]);
    assert_eq!(v["scenario"]["phase"], "train");
    assert!(
        v.get("phase").is_none(),
        "a training estimate has no top-level phase"
    );
    let v = json(&t, &["--phase", "train"]);
    assert_eq!(v["scenario"]["phase"], "train");
}

#[test]
fn phase_train_contradicting_a_sample_py_file_is_an_error_naming_both() {
    let t = SiteTest::new();
    t.file("sample.py", SAMPLE_PY);
    let line = SAMPLE_PY
        .lines()
        .position(|l| l.starts_with("max_new_tokens"))
        .unwrap()
        + 1;
    for args in [
        &["sample.py", "--init_from=gpt2", "--phase", "train"][..],
        &["sample.py", "--init_from=gpt2", "--set", "phase=train"],
    ] {
        let err = refused(&t, args);
        assert!(
            err.contains("phase = train") && err.contains(&format!("sample.py:{line}")),
            "{args:?}: {err}"
        );
    }
    // In YAML, the error is at the YAML's line.
    t.file("train.yaml", "n_layer: 6\nphase: train\n");
    let err = refused(&t, &["train.yaml", "sample.py", "--init_from=gpt2"]);
    assert!(
        err.contains("train.yaml:2:1") && err.contains(&format!("sample.py:{line}")),
        "{err}"
    );
}

#[test]
fn keys_of_the_other_phase_are_refused_where_they_are_set() {
    let t = SiteTest::new();
    t.file("sample.py", SAMPLE_PY);
    // Training keys with phase generate: sample.py does not read them; all reported at once.
    let err = refused(
        &t,
        &[
            "sample.py",
            "--init_from=gpt2",
            "--batch_size=8",
            "--set",
            "dropout=0.1",
        ],
    );
    assert!(
        err.contains("--batch_size=8: `batch_size` is a training key")
            && err.contains("--set dropout=0.1: `dropout` is a training key"),
        "{err}"
    );
    t.file(
        "gen.yaml",
        "phase: generate\ninit_from: gpt2\ngradient_accumulation_steps: 4\n",
    );
    let err = refused(&t, &["gen.yaml"]);
    assert!(
        err.contains("gen.yaml:3:1")
            && err.contains("`gradient_accumulation_steps` is a training key"),
        "{err}"
    );
    let err = refused(
        &t,
        &[
            "--phase",
            "generate",
            "--init_from=gpt2",
            "--nproc-per-node",
            "2",
        ],
    );
    assert!(err.contains("phase = generate"), "{err}");
    // sample.py's settings in the train phase: nanoGPT's train.py does not define them.
    for arg in [
        "--num_samples=5",
        "--max_new_tokens=100",
        "--temperature=0.5",
    ] {
        let err = refused(&t, &[arg]);
        assert!(
            err.contains(arg) && err.contains("--phase generate"),
            "{arg}: {err}"
        );
    }
    t.file("train.yaml", "n_layer: 6\nnum_samples: 2\n");
    let err = refused(&t, &["train.yaml"]);
    assert!(
        err.contains("train.yaml:2:1") && err.contains("phase = train"),
        "{err}"
    );
    let err = refused(&t, &["--set", "max_new_tokens=9"]);
    assert!(err.contains("--set max_new_tokens=9"), "{err}");
    // A Python training config may define such a global: nanoGPT runs it, and it changes nothing.
    t.file("cfg.py", "n_layer = 6\ntop_k = 5\n");
    let v = json(&t, &["cfg.py"]);
    assert_eq!(v["scenario"]["phase"], "train");
    // Keys of both phases are taken in either (the model's shape, precision, card).
    let v = json(
        &t,
        &[
            "--phase",
            "generate",
            "--init_from=resume",
            "--n_layer=2",
            "--n_head=2",
            "--n_embd=64",
            "--block_size=64",
            "--vocab_size=65",
            "--bias=False",
        ],
    );
    assert_eq!(v["scenario"]["n_layer"], 2);
}

#[test]
fn a_guide_scenario_with_phase_generate_is_refused_at_its_line() {
    let t = SiteTest::new();
    t.file(
        "content/gen/en.md",
        "---\ntitle: T\nlang: en\ndate: 2026-11-20\nscenario:\n  init_from: gpt2\n  phase: generate\n---\n\n{{ bytes.peak | bytes }}\n",
    );
    let run = t.build_err();
    assert!(
        run.stderr.contains("content/gen/en.md:7") && run.stderr.contains("phase = generate"),
        "{}",
        run.stderr
    );
}
