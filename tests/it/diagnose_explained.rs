//! `vramdoc diagnose` on what surrounds and replaces the allocator's message, through the real
//! binary: tracebacks behind launcher prefixes and Windows paths, Apple's MPS message in unified
//! memory terms, and the memory errors that are not the caching allocator's (CUDA context,
//! cuBLAS, cuDNN, NCCL), explained instead of refused.

use serde_json::Value;

use crate::diagnose_formats::diagnose_fixture;
use crate::support::SiteTest;

#[test]
fn tracebacks_behind_prefixes_and_windows_paths_are_read() {
    let t = SiteTest::new();
    let v = diagnose_fixture(&t, "v22_rank0_multiline", &[]);
    let frames = v["message"]["frames"].as_array().unwrap();
    assert!(frames.iter().any(|f| f == "estimate_loss"), "{frames:?}");
    let v = diagnose_fixture(&t, "v110_windows", &[]);
    assert_eq!(v["message"]["windows"], true);
    assert_eq!(v["message"]["frames"][0], "<module>");
    let v = diagnose_fixture(&t, "v22_including", &[]);
    assert_eq!(v["message"]["windows"], false);
    // Two messages: the second's traceback only.
    let v = diagnose_fixture(&t, "v22_two_messages", &[]);
    assert_eq!(v["message"]["frames"].as_array().map(Vec::len), Some(3));
}

#[test]
fn mps_is_explained_in_unified_memory_terms() {
    let t = SiteTest::new();
    let v = diagnose_fixture(&t, "mps_runtime", &[]);
    assert!(v["cards"].as_array().unwrap().is_empty());
    assert!(v["other_processes_bytes"].is_null());
    let r = t.run(&["diagnose", "mps_runtime.txt"]);
    assert!(
        r.stdout.contains("share the Mac's memory")
            && r.stdout.contains("PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0")
            && !r.stdout.contains("PYTORCH_CUDA_ALLOC_CONF"),
        "{}",
        r.stdout
    );
    // With the request, 9.05 + 8.50 + 1.00 GB were wanted of 18.13 GB.
    assert!(
        r.stdout
            .contains("18.55\u{a0}GiB were wanted of 18.13\u{a0}GiB"),
        "{}",
        r.stdout
    );
}

#[test]
fn errors_that_are_not_the_allocators_are_explained() {
    let t = SiteTest::new();
    for (name, error, needle) in [
        (
            "other_cuda_error",
            "cuda_error_out_of_memory",
            "creation of the CUDA context",
        ),
        (
            "other_cuda_runtime_2",
            "cuda_error_out_of_memory",
            "CUDA_VISIBLE_DEVICES",
        ),
        (
            "other_cublas",
            "cublas_alloc_failed",
            "CUBLAS_WORKSPACE_CONFIG",
        ),
        ("other_cudnn", "cudnn_workspace", "cudnn.benchmark"),
        ("other_nccl", "nccl_out_of_memory", "NCCL_BUFFSIZE"),
    ] {
        let v = diagnose_fixture(&t, name, &[]);
        assert_eq!(v["kind"], "other_error", "{name}");
        assert_eq!(v["error"], error, "{name}");
        let r = t.run(&["diagnose", &format!("{name}.txt")]);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        assert!(r.stdout.contains(needle), "{name}: {}", r.stdout);
        let es = t.run(&["diagnose", &format!("{name}.txt"), "--lang", "zh"]);
        assert!(
            es.stdout.contains("第 ") && es.stdout.contains(" 行："),
            "{}",
            es.stdout
        );
    }
    let v = diagnose_fixture(&t, "other_cuda_error", &[]);
    assert_eq!(v["line"], 4);
}

/// PyTorch 1's format, wrapped over two lines as terminals print it.
const V1: &str = "RuntimeError: CUDA out of memory. Tried to allocate 6.14 GiB (GPU 0; 11.76 GiB total capacity;\n 8.91 GiB already allocated; 1.36 GiB free; 9.18 GiB reserved in total by PyTorch)";

#[test]
fn message_from_standard_input() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramdoc"))
        .args(["diagnose", "-", "--format", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(V1.as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["message"]["format"], "pytorch1");
}

#[test]
fn memory_summary_is_read_like_a_message() {
    let t = SiteTest::new();
    let v = diagnose_fixture(&t, "summary_v2", &[]);
    let s = &v["snapshot"];
    assert_eq!(s["kind"], "memory_summary");
    assert_eq!(s["device"], 0);
    assert_eq!(s["allocated"]["current"], 9136u64 << 20);
    assert_eq!(s["allocated"]["peak"], 10421u64 << 20);
    assert_eq!(s["reserved"]["current"], 10680u64 << 20);
    assert_eq!(s["non_releasable"]["current"], 500215u64 << 10);
    assert_eq!(s["ooms"], 1);
    let text = t.run(&["diagnose", "summary_v2.txt"]).stdout;
    // The cache: reserved − allocated, 10680 − 9136 MiB.
    assert!(text.contains("1.51\u{a0}GiB"), "{text}");
    assert!(text.contains("Paste nvidia-smi beside it"), "{text}");
    // With a scenario: the estimate's peak beside the measured one.
    let v = diagnose_fixture(&t, "summary_v2", &["--set", "batch_size=8"]);
    assert!(v["estimate"]["bytes"]["peak"].as_u64().unwrap() > 0);
    let text = t
        .run(&[
            "diagnose",
            "summary_v2.txt",
            "--set",
            "batch_size=8",
            "--lang",
            "es",
        ])
        .stdout;
    assert!(
        text.contains("el pico del resumen es 10,18\u{a0}GiB"),
        "{text}"
    );
}

#[test]
fn nvidia_smi_is_read_like_a_message() {
    let t = SiteTest::new();
    let v = diagnose_fixture(&t, "smi_table", &[]);
    let s = &v["snapshot"];
    assert_eq!(s["kind"], "nvidia_smi");
    assert_eq!(s["gpus"][0]["name"], "NVIDIA GeForce RTX 3060");
    assert_eq!(s["gpus"][0]["used"], 11843u64 << 20);
    assert_eq!(s["gpus"][0]["total"], 12288u64 << 20);
    let procs = s["processes"].as_array().unwrap();
    assert_eq!(procs.len(), 3);
    assert_eq!(procs[2]["pid"], 9120);
    assert_eq!(procs[2]["kind"], "C");
    assert_eq!(procs[2]["bytes"], 11298u64 << 20);
    assert_eq!(procs[0]["name"], "/usr/lib/xorg/Xorg");
    // With a scenario: the card from the name, the run's process beside the estimate.
    let v = diagnose_fixture(&t, "smi_table", &["--set", "batch_size=8"]);
    assert_eq!(v["estimate"]["gpu"]["id"], "rtx-3060-12gb");
    let text = t
        .run(&["diagnose", "smi_table.txt", "--set", "batch_size=8"])
        .stdout;
    assert!(
        text.contains("nvidia-smi shows 11.03\u{a0}GiB for process 9120"),
        "{text}"
    );
    // The CSV query, with units.
    let v = diagnose_fixture(&t, "smi_csv", &[]);
    let gpus = v["snapshot"]["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 2);
    assert_eq!(gpus[0]["total"], 40960u64 << 20);
    assert_eq!(gpus[1]["used"], 4u64 << 20);
    assert_eq!(gpus[1]["index"], 1);
    // Without units or header names beyond the two columns.
    t.file(
        "nounits.txt",
        "memory.total [MiB], memory.used [MiB]\n24564, 23001\n",
    );
    let r = t.run(&["diagnose", "nounits.txt", "--format", "json"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["snapshot"]["gpus"][0]["used"], 23001u64 << 20);
}
