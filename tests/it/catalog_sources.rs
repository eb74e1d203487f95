//! A capacity that no printed message backs is never presented as fact: `estimate --gpu` and
//! `diagnose` say once, on standard error, that the figure they use is not sourced, what it
//! rests on and how to give the real one; sourced figures and a user's own `--catalog` entry get
//! no such note. Through the real binary.

use serde_json::Value;

use crate::support::SiteTest;

const NOTE: &str = "is not sourced";

/// A small nanoGPT scenario for `estimate`.
const SMALL: [&str; 10] = [
    "--set",
    "n_layer=2",
    "--set",
    "n_head=2",
    "--set",
    "n_embd=128",
    "--set",
    "block_size=64",
    "--set",
    "batch_size=2",
];

/// A PyTorch 2.x message printing `capacity` GiB.
fn message(capacity: &str) -> String {
    format!("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of {capacity} GiB of which 1.00 GiB is free. Including non-PyTorch memory, this process has 10.40 GiB memory in use. Of the allocated memory 9.80 GiB is allocated by PyTorch, and 300.00 MiB is reserved by PyTorch but unallocated.")
}

#[test]
fn estimate_on_an_unsourced_card_says_so_once() {
    let t = SiteTest::new();
    let run = |gpu: &str, extra: &[&str]| {
        t.run(&[&["estimate"][..], &SMALL, &["--gpu", gpu], extra].concat())
    };
    // Every built-in base figure is a printed one now (the RTX 4070's 11.72 GiB, once derived,
    // gave way to ComfyUI's printed 12557156352 B): no note for it.
    let r = run("rtx-4070", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains(NOTE), "{}", r.stderr);
    // A site's catalog may still carry a figure it marks "not sourced": 12282 MiB less 281 MiB
    // = 12001 MiB, and 12001 / 1024 = 11.72 GiB.
    assert_eq!(12282 - 281, 12001);
    assert_eq!(12001u64 << 20, 12_583_960_576);
    t.file(
        "site.yaml",
        "gpus:\n  - {id: lab-card, name: Lab Card 12GB, capacity_bytes: 12583960576, source: \"not sourced (no message of it at hand): derived from nvidia-smi's 12282 MiB less 281 MiB\"}\n",
    );
    let unsourced = ["--gpu", "lab-card", "--catalog", "site.yaml"];
    let r = t.run(&[&["estimate"][..], &SMALL, &unsourced].concat());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stderr.matches(NOTE).count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("note: Lab Card 12GB: its capacity in vramdoc's catalog, 11.72 GiB, is not sourced (no message of it at hand):"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("--catalog FILE entry with id lab-card")
            && r.stderr.contains("--other-processes"),
        "{}",
        r.stderr
    );
    // JSON output: the note stays on standard error, the estimate on standard output.
    let json = [&["estimate"][..], &SMALL, &unsourced, &["--format", "json"]].concat();
    let r = t.run(&json);
    assert!(
        serde_json::from_str::<Value>(&r.stdout).is_ok(),
        "{}",
        r.stdout
    );
    assert_eq!(r.stderr.matches(NOTE).count(), 1, "{}", r.stderr);
    // Sourced cards: no note (RTX 4090, OOM messages printing 23.64-23.68 GiB; RTX 4080, a
    // printed total_memory of 16049 MiB; RTX 5070 Ti, an OOM message printing 15.47 GiB; RTX
    // 5080, a cited nvidia-smi total of 16303 MiB less the 462 MiB its RTX 5070 Ti sibling keeps).
    for gpu in ["rtx-4090", "rtx-4080", "rtx-5070-ti", "rtx-5080"] {
        let r = run(gpu, &[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(!r.stderr.contains(NOTE), "{gpu}: {}", r.stderr);
    }
    // The user's real figure, given as the README says: no note.
    t.file(
        "mine.yaml",
        "gpus:\n  - {id: rtx-4070, name: My RTX 4070, capacity_bytes: 12550000000}\n",
    );
    let r = run("rtx-4070", &["--catalog", "mine.yaml"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains(NOTE), "{}", r.stderr);
}

#[test]
fn diagnose_notes_the_unsourced_figure_it_used() {
    let t = SiteTest::new();
    let ids = |r: &crate::support::Run| -> Vec<String> {
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        let cards = v["cards"].as_array().unwrap().iter();
        cards
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect()
    };
    // 14.61 GiB: the RTX A4000's unsourced ECC-on figure (15985 - 1024 = 14961 MiB, and
    // 14961 / 1024 = 14.61), the one card it is exactly; the T4 (14.57 on newer drivers) is
    // named beside it.
    assert_eq!(15985 - 1024, 14961);
    t.file("a4000.txt", &message("14.61"));
    let r = t.run(&["diagnose", "a4000.txt", "--format", "json"]);
    assert_eq!(ids(&r)[0], "rtx-a4000", "{}", r.stdout);
    assert_eq!(r.stderr.matches(NOTE).count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "NVIDIA RTX A4000 with ECC on: its capacity in vramdoc's catalog, 14.61 GiB, is not sourced"
        ),
        "{}",
        r.stderr
    );
    // 11.46 GiB: the RTX 5070's figure, from a cited nvidia-smi total (12,227 MiB less the 489 MiB
    // an RTX 5090 keeps = 11,738 MiB, and 11738 / 1024 = 11.46): the only card, and no note.
    assert_eq!(12227 - 489, 11738);
    t.file("5070.txt", &message("11.46"));
    let r = t.run(&["diagnose", "5070.txt", "--format", "json"]);
    assert_eq!(ids(&r), ["rtx-5070"], "{}", r.stdout);
    assert!(!r.stderr.contains(NOTE), "{}", r.stderr);
    // Recognized through an unsourced ECC-off figure: the note names the setting. 47.42 GiB is
    // the L40S's derived ECC-off figure (45486 + 3072 = 48558 MiB, and 48558 / 1024 = 47.42).
    assert_eq!(45486 + 3072, 48558);
    t.file("ecc_off.txt", &message("47.42"));
    let r = t.run(&["diagnose", "ecc_off.txt"]);
    assert!(
        r.stderr.contains("note: NVIDIA L40S with ECC off: its capacity in vramdoc's catalog, 47.42 GiB, is not sourced"),
        "{}",
        r.stderr
    );
    // The RTX 6000 Ada's figures are printed ones, ECC on (44.43 GiB, MTVCrafter#21) and off
    // (total_memory=48622MB = 47.48 GiB, hengck23's common.py): no note.
    for capacity in ["44.43", "47.48"] {
        t.file("ecc_on.txt", &message(capacity));
        let r = t.run(&["diagnose", "ecc_on.txt"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(!r.stderr.contains(NOTE), "{capacity}: {}", r.stderr);
    }
    // The scenario names the card: its figure is the one used, and the note says so.
    t.file(
        "site.yaml",
        "gpus:\n  - {id: lab-card, name: Lab Card 12GB, capacity_bytes: 12583960576, source: \"not sourced (no message of it at hand): derived from nvidia-smi's 12282 MiB less 281 MiB\"}\n",
    );
    t.file("lab.txt", &message("11.72"));
    let lab = [
        "--set",
        "batch_size=4",
        "--catalog",
        "site.yaml",
        "--gpu",
        "lab-card",
    ];
    let r = t.run(&[&["diagnose", "lab.txt"][..], &lab].concat());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stderr.matches(NOTE).count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("Lab Card 12GB: its capacity"),
        "{}",
        r.stderr
    );
    // Several cards fit and none is named: no card's figure is used, no note. 23.55 GiB is the
    // L4's unsourced ECC-off figure (22579 + 1536 = 24115 MiB) and the RTX 3090 Ti's printed
    // total_memory (24114 MiB) alike.
    assert_eq!(22579 + 1536, 24115);
    t.file("amb.txt", &message("23.55"));
    let r = t.run(&["diagnose", "amb.txt"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains(NOTE), "{}", r.stderr);
    // An nvidia-smi readout compared with a scenario on that card: the same note.
    t.file(
        "smi.csv",
        "memory.total [MiB], memory.used [MiB]\n12282 MiB, 11000 MiB\n",
    );
    let r = t.run(&[&["diagnose", "smi.csv"][..], &lab].concat());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stderr.matches(NOTE).count(), 1, "{}", r.stderr);
    let args = ["diagnose", "smi.csv", "--set", "batch_size=4", "--gpu"];
    let r = t.run(&[&args[..], &["rtx-4090"]].concat());
    assert!(!r.stderr.contains(NOTE), "{}", r.stderr);
}

#[test]
fn windows_figures_of_24_gb_cards_are_not_one_card_s() {
    let t = SiteTest::new();
    // WDDM reports the whole memory: 24.00 GiB is an RTX 3090 (TRELLIS-for-windows#7) or a TITAN
    // RTX (FramePack#79) under Windows, and an RTX 4090 (23.99 GiB there, 12.5 MiB less) is
    // within the driver spread; none is taken, and bf16 (which the TITAN RTX lacks) is not
    // proposed.
    t.file(
        "w24.txt",
        &format!(
            "  File \"C:\\Users\\me\\train.py\", line 3, in <module>\n{}",
            message("24.00")
        ),
    );
    let r = t.run(&["diagnose", "w24.txt", "--format", "json"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    let names = v["gpu_candidates"].as_array().unwrap();
    for name in [
        "NVIDIA GeForce RTX 3090",
        "NVIDIA TITAN RTX",
        "NVIDIA GeForce RTX 4090",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
}
