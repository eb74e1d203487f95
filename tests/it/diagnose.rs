//! `vramdoc diagnose` through the real binary: both message formats, the seed notes' errors in
//! their languages, tensor and phase matching, fragmentation, other programs, bad input; and a
//! property test that no text makes the parser or the diagnosis panic.

use proptest::prelude::*;
use serde_json::Value;

use crate::support::{Run, SiteTest};

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

/// PyTorch 2's message as seed 002 quotes it, with the traceback through `estimate_loss`.
const SEED_002: &str = r#"step 0: compiling the model... (takes a ~minute)
Traceback (most recent call last):
  File "/home/u/nanoGPT/train.py", line 264, in <module>
    losses = estimate_loss()
             ^^^^^^^^^^^^^^^
  File "/home/u/.venv/lib/python3.11/site-packages/torch/utils/_contextlib.py", line 116, in decorate_context
    return func(*args, **kwargs)
  File "/home/u/nanoGPT/train.py", line 224, in estimate_loss
    logits, loss = model(X, Y)
  File "/home/u/nanoGPT/model.py", line 191, in forward
    logits = self.lm_head(x)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.14 GiB. GPU 0 has a total capacity of 11.69 GiB of which 2.68 GiB is free. Including non-PyTorch memory, this process has 7.04 GiB memory in use. Of the allocated memory 6.78 GiB is allocated by PyTorch, and 106.52 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.
"#;

/// Seed 002's scenario: nanoGPT's GPT-2 config at micro-batch 64, bf16, compiled.
const SEED_002_CONFIG: &str = "batch_size = 64\nblock_size = 1024\ngradient_accumulation_steps = 1\ndtype = 'bfloat16'\ncompile = True\n";

/// PyTorch 1's format, wrapped over two lines as terminals print it.
const V1: &str = "RuntimeError: CUDA out of memory. Tried to allocate 6.14 GiB (GPU 0; 11.76 GiB total capacity;\n 8.91 GiB already allocated; 1.36 GiB free; 9.18 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.";

/// Runs `vramdoc diagnose ARGS`.
fn run(t: &SiteTest, args: &[&str]) -> Run {
    let mut all = vec!["diagnose"];
    all.extend_from_slice(args);
    t.run(&all)
}

/// Runs `vramdoc diagnose ARGS --format json` and parses its output.
fn json(t: &SiteTest, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--format", "json"]);
    let r = run(t, &all);
    assert_eq!(r.code, 0, "{}", r.stderr);
    serde_json::from_str(&r.stdout).expect("JSON")
}

/// A JSON byte count as a float.
fn bytes(v: &Value) -> f64 {
    v.as_u64().unwrap_or_else(|| panic!("not bytes: {v}")) as f64
}

/// Asserts a JSON byte count equals `expected` (to the byte).
fn near(v: &Value, expected: f64) {
    assert!((bytes(v) - expected).abs() < 1.0, "{v} != {expected}");
}

#[test]
fn pytorch2_message_parses_to_its_numbers() {
    let t = SiteTest::new();
    t.file("oom.txt", SEED_002);
    let v = json(&t, &["oom.txt"]);
    let m = &v["message"];
    assert_eq!(m["format"], "pytorch2");
    assert_eq!(m["gpu_index"], 0);
    near(&m["requested"]["bytes"], (6.14 * GIB).round());
    near(&m["capacity"]["bytes"], (11.69 * GIB).round());
    near(&m["free"]["bytes"], (2.68 * GIB).round());
    near(&m["process"]["bytes"], (7.04 * GIB).round());
    near(&m["allocated"]["bytes"], (6.78 * GIB).round());
    near(&m["reserved_unallocated"]["bytes"], (106.52 * MIB).round());
    // Other programs: capacity − free − this process.
    let other =
        bytes(&m["capacity"]["bytes"]) - bytes(&m["free"]["bytes"]) - bytes(&m["process"]["bytes"]);
    near(&v["other_processes_bytes"], other);
    assert!((other / GIB - 1.97).abs() < 0.01);
    assert_eq!(m["frames"][0], "<module>");
    assert!(m["frames"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f == "estimate_loss"));
    // No scenario: the keys that would sharpen it.
    assert!(v["identified"].is_null());
    assert!(v["missing_keys"]
        .as_array()
        .unwrap()
        .iter()
        .any(|k| k == "batch_size"));
    let text = run(&t, &["oom.txt"]).stdout;
    assert!(
        text.contains("1.97\u{a0}GiB") && text.contains("batch_size, block_size"),
        "{text}"
    );
}

#[test]
fn pytorch1_message_parses_to_its_numbers() {
    let t = SiteTest::new();
    let v = json(&t, &["--message", V1]);
    let m = &v["message"];
    assert_eq!(m["format"], "pytorch1");
    near(&m["requested"]["bytes"], (6.14 * GIB).round());
    near(&m["capacity"]["bytes"], (11.76 * GIB).round());
    near(&m["allocated"]["bytes"], (8.91 * GIB).round());
    near(&m["free"]["bytes"], (1.36 * GIB).round());
    near(&m["reserved"]["bytes"], (9.18 * GIB).round());
    near(
        &m["reserved_unallocated"]["bytes"],
        ((9.18 - 8.91) * GIB).round(),
    );
    assert!(m["process"].is_null() && v["other_processes_bytes"].is_null());
    // Context plus other programs: capacity − free − reserved.
    near(
        &v["outside_pytorch_bytes"],
        ((11.76 - 1.36 - 9.18) * GIB).round(),
    );
}

#[test]
fn seed_002_allocation_is_the_evaluation_logits() {
    let t = SiteTest::new();
    t.file("oom.txt", SEED_002)
        .file("train_gpt2.py", SEED_002_CONFIG);
    let v = json(&t, &["oom.txt", "--config", "train_gpt2.py"]);
    let id = &v["identified"];
    assert_eq!(id["tensor"]["kind"], "eval_logits", "{id}");
    assert_eq!(id["tensor"]["shape"], "(65536, 50304)");
    assert_eq!(id["tensor"]["dtype"], "bfloat16");
    assert_eq!(id["tensor"]["bytes"], 65536u64 * 50304 * 2);
    assert_eq!(id["phase"], "evaluation");
    assert_eq!(id["phase_source"], "traceback");
    assert_eq!(id["before_first_step"], true);
    // 11.69 GiB is, within its rounding, the catalog figure of both 12 GB AD104 cards: the RTX
    // 4070's printed 12557156352 B (11975.4 MiB) and the RTX 4070 SUPER's 11975 MiB (the same
    // nvidia-smi total less the same reserve). Neither is taken: the estimate runs on the
    // message's own figure, and both are named, exact, with the RTX 3060 (11.75-11.76) beside them.
    assert_eq!(12_557_156_352u64 * 100 / (1 << 30), 1169);
    assert_eq!(11975u64 * 100 / 1024, 1169);
    assert_eq!(v["estimate"]["gpu"]["id"], "gpu-from-message");
    let cards = v["cards"].as_array().unwrap();
    let exact: Vec<&str> = cards
        .iter()
        .filter(|c| c["exact"] == true)
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(exact.len(), 2, "{cards:?}");
    assert!(exact.contains(&"rtx-4070") && exact.contains(&"rtx-4070-super"));
    assert!(
        cards
            .iter()
            .any(|c| c["name"] == "NVIDIA GeForce RTX 3060 12GB" && c["exact"] == false),
        "{cards:?}"
    );
    let candidates = v["gpu_candidates"].as_array().unwrap();
    assert!(
        candidates.contains(&Value::from("NVIDIA GeForce RTX 4070"))
            && candidates.contains(&Value::from("NVIDIA GeForce RTX 4070 SUPER")),
        "{candidates:?}"
    );
    assert_eq!(
        v["estimate"]["scenario"]["other_processes"],
        v["other_processes_bytes"]
    );
    assert_eq!(v["estimate"]["verdict"], "does_not_fit");
    assert_eq!(v["fragmentation"]["cause"], false);
    // Options ranked as `estimate` ranks them: same effective batch first.
    assert_eq!(v["what_if"][0]["kind"], "micro_batch");
    assert!(v["what_if"]
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o["verdict"] == "fits"));

    // Without the traceback, the memory in use decides: iteration 0's evaluation.
    let named = json(
        &t,
        &[
            "oom.txt",
            "--config",
            "train_gpt2.py",
            "--gpu",
            "rtx-3060-12gb",
        ],
    );
    assert_eq!(named["estimate"]["gpu"]["id"], "rtx-3060-12gb");
    assert!(named["gpu_candidates"].as_array().unwrap().is_empty());
    let r = run(&t, &["oom.txt", "--config", "train_gpt2.py"]);
    assert!(
        r.stdout.contains(
            "fits several cards: NVIDIA GeForce RTX 4070 SUPER, NVIDIA GeForce RTX 4070,"
        ) && r.stdout.contains("NVIDIA GeForce RTX 3060 12GB")
            && r.stdout.contains("--gpu ID"),
        "{}",
        r.stdout
    );
    let bare: String = SEED_002
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with("Traceback"))
        .collect::<Vec<_>>()
        .join("\n");
    t.file("bare.txt", &bare);
    let v = json(&t, &["bare.txt", "--config", "train_gpt2.py"]);
    assert_eq!(v["identified"]["tensor"]["kind"], "eval_logits");
    assert_eq!(v["identified"]["phase"], "evaluation");
    assert_eq!(v["identified"]["phase_source"], "memory");
    assert_eq!(v["identified"]["before_first_step"], true);

    // Seed 002 is Spanish: the report in Spanish.
    let es = run(
        &t,
        &[
            "oom.txt",
            "--config",
            "train_gpt2.py",
            "--gpu",
            "rtx-3060-12gb",
            "--lang",
            "es",
        ],
    );
    assert_eq!(es.code, 0, "{}", es.stderr);
    for needle in [
        "Los 6,14\u{a0}GiB son los logits de la evaluación",
        "(65536, 50304)",
        "Ocupado por otros programas",
        "1,97\u{a0}GiB",
        "iteración 0",
        "la fragmentación no es la causa",
        "No cabe en la NVIDIA GeForce RTX 3060 12GB",
        "Microlote más pequeño",
    ] {
        assert!(
            es.stdout.contains(needle),
            "missing {needle:?} in\n{}",
            es.stdout
        );
    }
}

#[test]
fn fragmentation_is_found_and_expandable_segments_advised() {
    let t = SiteTest::new();
    // Free (1.02 GiB) is short of 1.54 GiB, free + reserved-unallocated (1.95 GiB) is not.
    let msg = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.54 GiB. GPU 0 has a total capacity of 11.72 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 8.61 GiB memory in use. Of the allocated memory 6.20 GiB is allocated by PyTorch, and 1.95 GiB is reserved by PyTorch but unallocated.";
    let v = json(
        &t,
        &[
            "--message",
            msg,
            "--set",
            "batch_size=16",
            "--set",
            "dtype='float16'",
        ],
    );
    assert_eq!(v["fragmentation"]["cause"], true);
    assert_eq!(v["fragmentation"]["advise_expandable_segments"], true);
    assert_eq!(v["identified"]["tensor"]["kind"], "logits");
    let r = run(
        &t,
        &[
            "--message",
            msg,
            "--set",
            "batch_size=16",
            "--set",
            "dtype='float16'",
            "--lang",
            "zh",
        ],
    );
    assert!(
        r.stdout
            .contains("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("缓存已碎片化"), "{}", r.stdout);
    // A PyTorch 1.10-2.0 message (its max_split_size_mb hint tells) gets that setting, "as the
    // message itself suggests"; the same numbers without the hint are 1.4-1.9, which has no
    // setting at all.
    let v1 = "RuntimeError: CUDA out of memory. Tried to allocate 1.54 GiB (GPU 0; 11.76 GiB total capacity; 8.10 GiB already allocated; 1.02 GiB free; 10.05 GiB reserved in total by PyTorch)";
    let hinted = format!("{v1} If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF");
    let r = run(&t, &["--message", &hinted]);
    assert!(
        r.stdout.contains("the cache was fragmented")
            && r.stdout
                .contains("max_split_size_mb:128 instead, as the message itself suggests")
            && !r.stdout.contains("expandable_segments:True"),
        "{}",
        r.stdout
    );
    let r = run(&t, &["--message", v1]);
    assert!(
        r.stdout.contains("the cache was fragmented")
            && r.stdout.contains("(1.4–1.9) has no allocator setting")
            && !r.stdout.contains("max_split_size_mb:128"),
        "{}",
        r.stdout
    );
    // A small unallocated remainder is not fragmentation.
    let v = json(&t, &["--message", V1]);
    assert_eq!(v["fragmentation"]["cause"], false);
    assert_eq!(v["fragmentation"]["advise_expandable_segments"], false);
}

#[test]
fn other_processes_lines_and_their_memory() {
    let t = SiteTest::new();
    // Seed 003's card: an RTX 4070 where other programs hold about 2118 MiB, on a driver where
    // it prints 11.60 GiB (its cited newer-driver figure, 11878 MiB: the one card that prints it).
    let msg = "CUDA out of memory. Tried to allocate 768.00 MiB. GPU 0 has a total capacity of 11.60 GiB of which 194.00 MiB is free. Process 1822 has 2.07 GiB memory in use. Process 4410 has 9.34 GiB memory in use. Including non-PyTorch memory, this process has 9.34 GiB memory in use. Of the allocated memory 8.61 GiB is allocated by PyTorch, and 290.11 MiB is reserved by PyTorch but unallocated.";
    let v = json(
        &t,
        &[
            "--message",
            msg,
            "--set",
            "n_layer=6",
            "--set",
            "n_head=6",
            "--set",
            "n_embd=384",
            "--set",
            "block_size=512",
            "--set",
            "batch_size=64",
        ],
    );
    let procs = v["message"]["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 2);
    assert_eq!(procs[0]["pid"], 1822);
    near(&procs[0]["bytes"], (2.07 * GIB).round());
    // 11.60 GiB less 194 MiB free less this process's 9.34 GiB: 2.07 GiB, process 1822's.
    let other = (11.60 * GIB).round() - (194.0 * MIB) - (9.34 * GIB).round();
    assert!((other / GIB - 2.07).abs() < 0.005);
    near(&v["other_processes_bytes"], other);
    assert_eq!(v["estimate"]["gpu"]["id"], "rtx-4070");
    assert_eq!(
        v["estimate"]["bytes"]["other_processes"],
        v["other_processes_bytes"]
    );
    // An explicit --other-processes wins over what the message implies.
    let v = json(
        &t,
        &[
            "--message",
            msg,
            "--set",
            "batch_size=8",
            "--other-processes",
            "1 GiB",
        ],
    );
    assert_eq!(v["estimate"]["bytes"]["other_processes"], 1u64 << 30);
    let v = json(
        &t,
        &[
            "--message",
            msg,
            "--set",
            "batch_size=8",
            "--other-processes",
            "0",
        ],
    );
    assert_eq!(v["estimate"]["bytes"]["other_processes"], 0);
}

#[test]
fn seed_notes_errors_in_their_languages() {
    let t = SiteTest::new();
    // Seeds 000 (es) and 004 (zh): GPT-2 124M at micro-batch 16 on a 12 GB card, failing in the
    // backward of the loss (the float32 gradient of the logits).
    let backward = "Traceback (most recent call last):\n  File \"train.py\", line 300, in <module>\n    scaler.scale(loss).backward()\n  File \"torch/_tensor.py\", line 521, in backward\n    torch.autograd.backward(\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.07 GiB. GPU 0 has a total capacity of 11.69 GiB of which 2.01 GiB is free. Including non-PyTorch memory, this process has 9.45 GiB memory in use. Of the allocated memory 8.92 GiB is allocated by PyTorch, and 310.50 MiB is reserved by PyTorch but unallocated.\n";
    t.file("seed000.txt", backward)
        .file("seed000.py", "batch_size = 16\nblock_size = 1024\ngradient_accumulation_steps = 32\ndtype = 'bfloat16'\ncompile = False\n");
    let v = json(&t, &["seed000.txt", "--config", "seed000.py"]);
    assert_eq!(v["identified"]["tensor"]["kind"], "logits_fp32");
    assert_eq!(v["identified"]["phase"], "backward");
    for (lang, needles) in [
        (
            "es",
            &[
                "la copia en float32 de los logits",
                "la pasada hacia atrás",
                "Qué cambiar",
            ][..],
        ),
        (
            "zh",
            &[
                "训练微步 logits 的 float32 副本",
                "训练微步的反向传播",
                "可以怎么改",
            ][..],
        ),
    ] {
        let r = run(
            &t,
            &["seed000.txt", "--config", "seed000.py", "--lang", lang],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        for n in needles {
            assert!(
                r.stdout.contains(n),
                "{lang}: missing {n:?} in\n{}",
                r.stdout
            );
        }
    }
    // Seed 001 (es): ~77M parameters (n_embd 576) on an RTX 4070 in float16, failing in the
    // evaluation on the float32 copy of the logits.
    let eval = "  File \"train.py\", line 224, in estimate_loss\n    logits, loss = model(X, Y)\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.07 GiB. GPU 0 has a total capacity of 11.60 GiB of which 1.05 GiB is free. Including non-PyTorch memory, this process has 9.92 GiB memory in use. Of the allocated memory 9.41 GiB is allocated by PyTorch, and 120.00 MiB is reserved by PyTorch but unallocated.\n";
    t.file("seed001.txt", eval).file(
        "seed001.py",
        "n_embd = 576\nbatch_size = 16\nblock_size = 1024\ngradient_accumulation_steps = 32\ndtype = 'float16'\ncompile = False\n",
    );
    let v = json(&t, &["seed001.txt", "--config", "seed001.py"]);
    assert_eq!(v["identified"]["tensor"]["kind"], "eval_logits_fp32");
    assert_eq!(v["identified"]["phase"], "evaluation");
    assert_eq!(v["estimate"]["gpu"]["id"], "rtx-4070");
    let r = run(
        &t,
        &[
            "seed001.txt",
            "--config",
            "seed001.py",
            "--lang",
            "es",
            "--format",
            "markdown",
        ],
    );
    assert!(
        r.stdout
            .contains("la copia en float32 de los logits de la evaluación"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.starts_with("## Diagnóstico"), "{}", r.stdout);
}

#[test]
fn unreadable_message_quotes_the_part_and_names_the_line() {
    let t = SiteTest::new();
    t.file("bad.txt", "Traceback (most recent call last):\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 11.69 GiB of which lots is free.\n");
    let r = run(&t, &["bad.txt"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("\"lots is free.\""), "{}", r.stderr);
    assert!(r.stderr.contains("bad.txt:2"), "{}", r.stderr);
    let r = run(
        &t,
        &["--message", "CUDA out of memory. Tried to allocate plenty"],
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("\"Tried to allocate plenty\""),
        "{}",
        r.stderr
    );
    let r = run(&t, &["--message", "Segmentation fault"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("\"Segmentation fault\"") && r.stderr.contains("out-of-memory"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("panicked"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// No text, random or a valid message cut and spliced, makes parsing or diagnosing panic.
    #[test]
    fn no_message_text_panics(
        noise in ".{0,200}",
        cut in 0usize..600,
        insert in "[0-9 .;()GiMBKbytes]{0,12}",
        which in 0usize..2,
    ) {
        use vramdoc::cli::args::{OutputArgs, ScenarioArgs};
        use vramdoc::cli::diagnose::{self, DiagnoseArgs};
        use vramdoc::oom::{self, message};
        use vramdoc::present::Format;
        let base = [SEED_002, V1][which];
        let mut spliced: String = base.chars().take(cut).collect();
        spliced.push_str(&insert);
        spliced.extend(base.chars().skip(cut + insert.len() / 2));
        for text in [noise.as_str(), spliced.as_str()] {
            if let Ok(m) = message::parse(text) {
                let catalog = vramdoc::estimate::GpuCatalog::builtin();
                let _ = oom::from_message(m.clone());
                let _ = oom::with_scenario(m, vramdoc::estimate::Scenario::default(), &catalog);
            }
            // The whole command, rendering included, in every format.
            for (format, lang) in [(Format::Table, "zh"), (Format::Markdown, "es"), (Format::Json, "en")] {
                let args = DiagnoseArgs {
                    message: Some(text.to_owned()),
                    scenario: ScenarioArgs {
                        set: vec!["batch_size=64".into()],
                        ..ScenarioArgs::default()
                    },
                    output: OutputArgs {
                        format,
                        lang: lang.into(),
                    },
                    ..DiagnoseArgs::default()
                };
                let _ = diagnose::report(&args);
            }
        }
    }
}

/// A guide whose front matter quotes seed 002's message, with its scenario.
fn seed_002_guide(lang: &str, error: Option<&str>, prose: &str) -> String {
    let error = error.map_or_else(String::new, |e| {
        let indented: Vec<String> = e.lines().map(|l| format!("  {l}")).collect();
        format!("error: |\n{}\n", indented.join("\n"))
    });
    format!(
        "---\ntitle: \"OOM\"\nlang: {lang}\ndate: 2026-11-20\nscenario:\n  batch_size: 64\n  gradient_accumulation_steps: 1\n  dtype: bfloat16\n  compile: true\n  gpu: rtx-3060-12gb\n{error}---\n\n{prose}\n\n{{{{ diagnosis() }}}}\n"
    )
}

#[test]
fn guides_embed_the_diagnosis_of_their_error() {
    let t = SiteTest::new();
    t.file(
        "content/oom/en.md",
        &seed_002_guide(
            "en",
            Some(SEED_002),
            "PyTorch tried to allocate 6.14 GiB with 2.68 GiB free, and a forum said 7.5 GiB.",
        ),
    )
    .file(
        "content/oom/es.md",
        &seed_002_guide("es", Some(SEED_002), "PyTorch intentó reservar 6.14 GiB."),
    );
    let r = t.build_ok();
    // Figures quoted from the message are measurements; the one that is not is still flagged.
    assert!(r.stderr.contains("`7.5 GiB` typed by hand"), "{}", r.stderr);
    assert!(
        !r.stderr.contains("`6.14 GiB`") && !r.stderr.contains("`2.68 GiB`"),
        "{}",
        r.stderr
    );
    let en = t.output("en/oom/index.md");
    for needle in [
        "The 6.14\u{a0}GiB are the evaluation logits",
        "| Held by other programs (capacity − free − this process) | 1.97\u{a0}GiB |",
        "iteration 0",
        "Does not fit on the NVIDIA GeForce RTX 3060 12GB",
    ] {
        assert!(en.contains(needle), "missing {needle:?} in\n{en}");
    }
    let es = t.output("es/oom/index.md");
    assert!(
        es.contains("Los 6,14\u{a0}GiB son los logits de la evaluación"),
        "{es}"
    );
    let html = t.output("es/oom/index.html");
    assert!(html.contains("<table>") && html.contains("Reservado por PyTorch pero sin asignar"));
}

#[test]
fn diagnosis_without_or_with_a_bad_error_is_a_build_error() {
    let t = SiteTest::new();
    t.file(
        "content/a/en.md",
        &seed_002_guide("en", None, "No message."),
    )
    .file(
        "content/b/en.md",
        &seed_002_guide(
            "en",
            Some("RuntimeError: CUDA out of memory. Tried to allocate a lot"),
            "Bad.",
        ),
    );
    let r = t.build_err();
    assert!(
        r.stderr.contains("content/a/en.md") && r.stderr.contains("add the out-of-memory message"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("content/b/en.md") && r.stderr.contains("\"Tried to allocate a lot\""),
        "{}",
        r.stderr
    );
}
