//! `vramdoc diagnose` checks a message's numbers before reasoning from them, recognizes cards
//! from printed capacities, and reads any text in linear time without panicking: through the
//! real binary, on the fixtures of `tests/data/oom/`.

use proptest::prelude::*;
use serde_json::Value;

use crate::diagnose_formats::diagnose_fixture;
use crate::support::SiteTest;

/// The kinds of a diagnosis's findings.
fn kinds(v: &Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn impossible_numbers_are_named_and_nothing_is_concluded_from_them() {
    let t = SiteTest::new();
    for (name, kind, needle) in [
        (
            "bad_free_above_capacity",
            "free_above_capacity",
            "more than the card's capacity",
        ),
        (
            "bad_allocated_above_reserved",
            "allocated_above_reserved",
            "tensors live inside",
        ),
        (
            "bad_reserved_above_process",
            "reserved_above_process",
            "larger than everything",
        ),
        (
            "bad_huge_process",
            "process_above_capacity",
            "Process 77 holds",
        ),
        (
            "bad_all_zero",
            "all_zero",
            "Every figure of the message is zero",
        ),
        (
            "bad_in_use_above_capacity",
            "in_use_above_capacity",
            "plus what the processes hold",
        ),
        (
            "bad_reserved_above_capacity",
            "reserved_above_capacity",
            "more than the whole card",
        ),
    ] {
        let v = diagnose_fixture(&t, name, &[]);
        assert!(
            kinds(&v).iter().any(|k| k == kind),
            "{name}: {:?}",
            kinds(&v)
        );
        // No other programs, no fragmentation verdict, no setting from impossible numbers.
        assert!(v["other_processes_bytes"].is_null(), "{name}");
        assert_eq!(v["fragmentation"]["concluded"], false, "{name}");
        assert!(v["fragmentation"]["setting"].is_null(), "{name}");
        let r = t.run(&["diagnose", &format!("{name}.txt")]);
        assert!(r.stdout.contains(needle), "{name}: {}", r.stdout);
        assert!(!r.stdout.contains("really in use"), "{name}: {}", r.stdout);
    }
    // A consistent message has no finding.
    let v = diagnose_fixture(&t, "v22_including", &[]);
    assert!(kinds(&v).is_empty(), "{:?}", kinds(&v));
    assert_eq!(v["fragmentation"]["concluded"], true);
}

#[test]
fn a_request_larger_than_the_card_is_called_that() {
    let t = SiteTest::new();
    let v = diagnose_fixture(&t, "v22_request_above_card", &[]);
    assert_eq!(kinds(&v), ["request_above_capacity"]);
    let r = t.run(&["diagnose", "v22_request_above_card.txt"]);
    assert!(
        r.stdout
            .contains("(28.87\u{a0}GiB) is larger than the whole card (15.83\u{a0}GiB)"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("really in use") && !r.stdout.contains("Set PYTORCH"));
}

#[test]
fn several_messages_use_the_last_and_say_how_many() {
    let t = SiteTest::new();
    let v = diagnose_fixture(&t, "v22_two_messages", &[]);
    assert_eq!(v["findings"][0]["kind"], "several_messages");
    assert_eq!(v["findings"][0]["count"], 2);
    let r = t.run(&["diagnose", "v22_two_messages.txt", "--lang", "es"]);
    assert!(r.stdout.contains("contiene 2 mensajes"), "{}", r.stdout);
}

#[test]
fn a_scenario_that_fits_where_the_run_failed_is_not_the_run() {
    let t = SiteTest::new();
    let tiny = [
        "--set",
        "n_layer=2",
        "--set",
        "n_head=2",
        "--set",
        "n_embd=128",
        "--set",
        "block_size=64",
        "--set",
        "batch_size=1",
    ];
    let v = diagnose_fixture(&t, "v22_including", &tiny);
    let f = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "scenario_cannot_be_the_run")
        .expect("finding");
    // What the run held: allocated + the request, 19.87 + 6.14 GiB.
    assert_eq!(
        f["run"],
        ((19.87f64 + 6.14) * (1u64 << 30) as f64).round() as u64
    );
    let r = t.run(&[&["diagnose", "v22_including.txt"][..], &tiny[..]].concat());
    assert!(
        r.stdout.contains("the scenario cannot be the run"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("batch_size or block_size"),
        "{}",
        r.stdout
    );
    // A scenario that does not fit gets no such finding.
    let v = diagnose_fixture(&t, "v22_including", &["--set", "batch_size=64"]);
    assert!(!kinds(&v).iter().any(|k| k == "scenario_cannot_be_the_run"));
}

#[test]
fn cards_are_recognized_from_printed_capacities() {
    let t = SiteTest::new();
    let ids = |v: &Value| -> Vec<(String, Value)> {
        v["cards"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["id"].as_str().unwrap().to_owned(), c["variant"].clone()))
            .collect()
    };
    // Unique: 39.59 GiB is an A100 40GB, and the scenario runs on it.
    let v = diagnose_fixture(&t, "v110_rank_prefix", &["--set", "batch_size=8"]);
    assert_eq!(ids(&v)[0].0, "a100-40gb");
    assert_eq!(v["estimate"]["gpu"]["id"], "a100-40gb");
    // Across drivers: an RTX 4090 printing 23.68 GiB (the catalog has 23.65) still matches.
    let v = diagnose_fixture(&t, "v110_runtime", &[]);
    assert!(
        ids(&v).iter().any(|(id, _)| id == "rtx-4090"),
        "{:?}",
        ids(&v)
    );
    // ECC: 44.43 GiB is an RTX 6000 Ada with ECC on; 47.48 GiB the same card with ECC off (a
    // printed total_memory of 48622 MiB, and 48622 / 1024 = 47.48).
    let v = diagnose_fixture(&t, "v22_ecc_rtx6000", &[]);
    assert_eq!(ids(&v)[0].0, "rtx-6000-ada");
    t.file(
        "ecc_off.txt",
        &std::fs::read_to_string(format!(
            "{}/tests/data/oom/v22_ecc_rtx6000.txt",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
        .replace("44.43 GiB", "47.48 GiB"),
    );
    let r = t.run(&["diagnose", "ecc_off.txt", "--format", "json"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        ids(&v)[0],
        ("rtx-6000-ada".to_owned(), Value::from("ecc-off"))
    );
    let text = t.run(&["diagnose", "ecc_off.txt"]).stdout;
    assert!(
        text.contains("NVIDIA RTX 6000 Ada Generation (ECC off)"),
        "{text}"
    );
    // Windows: WDDM reports a 12 GB card's whole memory, so 12.00 GiB (12288 MiB) with C:\ paths
    // is an RTX 3060 (PuLID#13), an RTX 3080 Ti (Stable-textual-inversion_win#36) or an RTX 3080
    // 12GB under WDDM (12288 MiB, 12287.5 on the 3080 12GB's nvidia-smi rule): all are named and
    // --gpu asked for; the 12 GB Ada cards print 11.99 (an RTX 4070 Ti 12281.5 MiB by its rule; an
    // RTX 4070 12281.4 MiB: github.com/Lightricks/ComfyUI-LTXVideo/issues/337; an RTX 4070 SUPER
    // 12278 MiB: github.com/erew123/alltalk_tts/issues/195), 6.5 to 10 MiB away, so they are
    // named too, nearest first.
    let v = diagnose_fixture(&t, "v110_windows", &[]);
    let windows = Value::from("windows");
    let w = |id: &str| (id.to_owned(), windows.clone());
    assert_eq!(
        ids(&v),
        [
            w("rtx-3060-12gb"),
            w("rtx-3080-ti"),
            w("rtx-3080-12gb"),
            w("rtx-4070-ti"),
            w("rtx-4070"),
            w("rtx-4070-super"),
        ]
    );
    assert_eq!(12288 - 12278, 10);
    assert_eq!(12288.0 - 12877955072.0 / (1u64 << 20) as f64, 6.625);
    assert_eq!(v["gpu_candidates"].as_array().unwrap().len(), 6, "{v}");
    // Ambiguous: 11.70 GiB is three cards' figure: all named, --gpu asked for, the printed
    // capacity used.
    t.file("amb.txt", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 11.70 GiB of which 1.00 GiB is free. Including non-PyTorch memory, this process has 10.60 GiB memory in use. Of the allocated memory 9.80 GiB is allocated by PyTorch, and 300.00 MiB is reserved by PyTorch but unallocated.");
    let r = t.run(&[
        "diagnose",
        "amb.txt",
        "--set",
        "batch_size=16",
        "--format",
        "json",
    ]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let names = v["gpu_candidates"].as_array().unwrap();
    for name in [
        "NVIDIA GeForce RTX 3080 12GB",
        "NVIDIA GeForce RTX 3080 Ti",
        "NVIDIA GeForce RTX 4070 Ti",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
    assert_eq!(v["estimate"]["gpu"]["id"], "gpu-from-message");
    let text = t.run(&["diagnose", "amb.txt"]).stdout;
    assert!(
        text.contains("fits several cards") && text.contains("--gpu ID"),
        "{text}"
    );
}

#[test]
fn no_dtype_is_proposed_that_a_candidate_card_lacks() {
    let t = SiteTest::new();
    let fp32 = ["--set", "dtype='float32'", "--set", "batch_size=12"];
    let dtypes = |v: &Value| -> Vec<String> {
        v["what_if"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["kind"] == "dtype")
            .map(|o| o.to_string())
            .collect()
    };
    // A GTX 1060 (no catalog card prints 5.93 GiB), a P100 (15.90 GiB) and a T4 (14.75 GiB):
    // none has bf16, and none is offered it.
    for name in ["v13_gtx1060", "v110_jupyter"] {
        let v = diagnose_fixture(&t, name, &fp32);
        let offered = dtypes(&v);
        assert!(
            offered.iter().all(|o| !o.contains("bfloat16")),
            "{name}: {offered:?}"
        );
    }
    t.file("p100.txt", "RuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB (GPU 0; 15.90 GiB total capacity; 13.80 GiB already allocated; 700.00 MiB free; 14.10 GiB reserved in total by PyTorch)");
    let r = t.run(&[&["diagnose", "p100.txt", "--format", "json"][..], &fp32[..]].concat());
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["estimate"]["gpu"]["id"], "p100");
    assert!(
        dtypes(&v).iter().all(|o| !o.contains("bfloat16")),
        "{:?}",
        dtypes(&v)
    );
    // An A100 is offered bf16.
    let v = diagnose_fixture(&t, "v110_rank_prefix", &fp32);
    assert!(
        dtypes(&v).iter().any(|o| o.contains("bfloat16")),
        "{:?}",
        dtypes(&v)
    );
}

/// Writes a message with `n` `Process N has …` lines, and one message repeated `n` times,
/// straight to files (the test process holds neither: a child's peak memory as `wait4` reports
/// it starts from its parent's, and other tests measure theirs). Returns the first file's size.
fn write_long_logs(t: &SiteTest, n: usize) -> u64 {
    use std::io::Write;
    let mut many =
        std::io::BufWriter::new(std::fs::File::create(t.root().join("many.txt")).unwrap());
    write!(many, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.00 GiB is free. ").unwrap();
    for i in 0..n {
        write!(many, "Process {} has 100.00 KiB memory in use. ", 1000 + i).unwrap();
    }
    writeln!(many, "Of the allocated memory 60.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.").unwrap();
    many.flush().unwrap();
    let one = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.14 GiB. GPU 0 has a total capacity of 23.68 GiB of which 3.02 GiB is free. Including non-PyTorch memory, this process has 20.64 GiB memory in use. Of the allocated memory 19.87 GiB is allocated by PyTorch, and 308.15 MiB is reserved by PyTorch but unallocated.\n";
    let mut repeated =
        std::io::BufWriter::new(std::fs::File::create(t.root().join("repeated.txt")).unwrap());
    for _ in 0..n / 20 * 3 {
        repeated.write_all(one.as_bytes()).unwrap();
    }
    repeated.flush().unwrap();
    std::fs::metadata(t.root().join("many.txt")).unwrap().len()
}

/// Regression (issue 18, item 5): 200,000 `Process N has` lines (7.6 MB) took over 20 s and a
/// message repeated 30,000 times 7 s, each lookup lowercasing the rest of the text. Reading is
/// linear now; the bound is generous (a debug build on a busy machine), the old cost was
/// quadratic.
#[test]
fn long_logs_are_read_in_linear_time() {
    let t = SiteTest::new();
    let size = write_long_logs(&t, 200_000);
    assert!(size > 7_000_000, "{size}");
    for (file, needle) in [
        ("many.txt", "199,980 more processes listed"),
        (
            "repeated.txt",
            "The text holds 30,000 out-of-memory messages",
        ),
    ] {
        let start = std::time::Instant::now();
        let r = t.run(&["diagnose", file]);
        let took = start.elapsed();
        assert_eq!(r.code, 0, "{file}: {}", r.stderr);
        assert!(r.stdout.contains(needle), "{file}: {}", r.stdout);
        assert!(took.as_secs() < 15, "{file}: {took:?}");
    }
}

/// Pieces real messages are made of, to build adversarial texts from.
const PIECES: &[&str] = &[
    "out of memory",
    "CUDA out of memory. Tried to allocate 1.00 GiB",
    ". GPU 0 has a total capacity of 11.76 GiB of which 1.00 GiB is free. ",
    "Process 12 has ",
    "this process has ",
    "Of the allocated memory ",
    " and ",
    "(GPU 0; 1.00 GiB total capacity;",
    " 1.00 GiB cached)",
    "MPS backend out of memory (MPS allocated: ",
    "[rank0]: ",
    "  File \"C:\\x.py\", line 1, in f\n",
    "\n",
    "9999999999999999999999.99 GiB",
    "é中",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// No text built from message pieces, repeated into hundreds of kilobytes, makes the whole
    /// command panic or take more than linear time (a generous bound: 400 KB in under 5 s in a
    /// debug build, where a lookup that lowercases the rest of the text takes minutes).
    #[test]
    fn no_text_panics_or_takes_superlinear_time(
        picks in proptest::collection::vec(0usize..PIECES.len(), 1..6),
        noise in ".{0,40}",
        size in 1_000usize..400_000,
    ) {
        use vramdoc::cli::args::ScenarioArgs;
        use vramdoc::cli::diagnose::{self, DiagnoseArgs};
        let unit: String = picks.iter().map(|&i| PIECES[i]).collect::<String>() + &noise;
        let text = unit.repeat(size / unit.len().max(1) + 1);
        let args = DiagnoseArgs {
            message: Some(text),
            scenario: ScenarioArgs {
                set: vec!["batch_size=8".into()],
                ..ScenarioArgs::default()
            },
            ..DiagnoseArgs::default()
        };
        let start = std::time::Instant::now();
        let _ = diagnose::report(&args);
        prop_assert!(start.elapsed().as_secs() < 5, "{:?} for {} bytes", start.elapsed(), size);
    }
}
