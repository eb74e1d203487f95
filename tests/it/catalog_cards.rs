//! Real capacities the catalog once missed, through the real binary: an A40 with ECC on prints
//! 44.42 GiB (the L40S's figure too), 39.50 GiB is printed both by an A100 40GB on drivers
//! after 535 and by an H100's MIG 4g.40gb slice, an RTX 5070 Ti under Linux prints 15.47 GiB and
//! an RTX 4090 under Windows 23.99 GiB. Fixtures of `tests/data/oom/` shaped like those messages
//! (github.com/nexthybrid/AReaL's RunPod guide, github.com/TianheWu/CoSeR/issues/10,
//! github.com/thebloodlust/VRAMancer's benchmarks, ComfyUI's Windows tracebacks).

use serde_json::Value;

use crate::diagnose_formats::diagnose_fixture;
use crate::support::SiteTest;

const MIB: u64 = 1 << 20;

/// `x` GiB in bytes, as the parser reads a two-decimal figure.
fn g(x: f64) -> u64 {
    (x * (1u64 << 30) as f64).round() as u64
}

/// The cards a diagnosis names: id, matched setting, and whether the figure is the printed one.
fn cards(v: &Value) -> Vec<(String, Value, bool)> {
    let list = v["cards"].as_array().unwrap().iter();
    list.map(|c| {
        let id = c["id"].as_str().unwrap().to_owned();
        (id, c["variant"].clone(), c["exact"].as_bool().unwrap())
    })
    .collect()
}

/// The exact matches' ids, sorted.
fn exact(v: &Value) -> Vec<String> {
    let mut ids: Vec<_> = cards(v).into_iter().filter(|c| c.2).map(|c| c.0).collect();
    ids.sort();
    ids
}

#[test]
fn an_a40_with_ecc_on_is_named_beside_the_l40s() {
    let t = SiteTest::new();
    let v = diagnose_fixture(&t, "v22_a40_runpod", &[]);
    let msg = &v["message"];
    assert_eq!(msg["capacity"]["bytes"], g(44.42));
    assert_eq!(msg["requested"]["bytes"], 64 * MIB);
    // 44.42 GiB = 45486.08 MiB: the A40's and the L40S's figure, 45486 MiB each (nvidia-smi's
    // 46068 MiB with ECC on less 582 MiB), within the printed rounding of both.
    assert_eq!(46068 - 582, 45486);
    assert!(g(44.42).abs_diff(45486 * MIB) < 6 * MIB);
    assert_eq!(exact(&v), ["a40", "l40s"]);
    // Neither is taken: the printed capacity stands for the card, and --gpu is asked for.
    let v = diagnose_fixture(&t, "v22_a40_runpod", &["--set", "batch_size=4"]);
    assert_eq!(v["estimate"]["gpu"]["id"], "gpu-from-message");
    assert_eq!(v["estimate"]["gpu"]["capacity_bytes"], g(44.42));
    let names = v["gpu_candidates"].as_array().unwrap();
    for name in ["NVIDIA A40", "NVIDIA L40S"] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
    let text = t.run(&["diagnose", "v22_a40_runpod.txt"]).stdout;
    assert!(text.contains("--gpu ID"), "{text}");
    // Told the card, diagnose uses the A40's figure and prints no unsourced note.
    let r = t.run(&[
        "diagnose",
        "v22_a40_runpod.txt",
        "--set",
        "batch_size=4",
        "--gpu",
        "a40",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("is not sourced"), "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["estimate"]["gpu"]["capacity_bytes"], 45486 * MIB);
}

#[test]
fn the_39_50_figure_is_an_a100_40gb_or_an_h100_mig_slice() {
    let t = SiteTest::new();
    let v = diagnose_fixture(&t, "v22_a100_39_50", &[]);
    let msg = &v["message"];
    assert_eq!(msg["capacity"]["bytes"], g(39.50));
    assert_eq!(msg["free"]["bytes"], g(17.31));
    assert_eq!(msg["process"]["bytes"], g(22.18));
    // 39.50 GiB = 40448 MiB exactly: 40960 MiB (40 GiB) less 512 MiB on the A100, and the
    // 4g.40gb slice's own memory on the H100.
    assert_eq!(g(39.50), 40448 * MIB);
    assert_eq!(40960 - 512, 40448);
    assert_eq!(exact(&v), ["a100-40gb", "h100-mig-4g-40gb"]);
    let newer = Value::from("newer-driver");
    assert!(
        cards(&v)
            .iter()
            .any(|c| c.0 == "a100-40gb" && c.1 == newer && c.2),
        "{:?}",
        cards(&v)
    );
    // Both have bf16, so bf16 may be proposed; neither is taken without --gpu.
    let r = t.run(&["diagnose", "v22_a100_39_50.txt"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("NVIDIA A100 40GB (newer driver)")
            && r.stdout.contains("NVIDIA H100 80GB, MIG 4g.40gb slice")
            && r.stdout.contains("--gpu ID"),
        "{}",
        r.stdout
    );
    // The older figures stay apart: 39.59 GiB (40536 MiB, 88 MiB above) is the A100's own,
    // the only exact card.
    let older = std::fs::read_to_string(format!(
        "{}/tests/data/oom/v22_a100_39_50.txt",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    .replace("39.50 GiB", "39.59 GiB");
    t.file("older.txt", &older);
    let r = t.run(&["diagnose", "older.txt", "--format", "json"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(exact(&v), ["a100-40gb"]);
    assert_eq!(v["cards"][0]["variant"], Value::Null);
}

/// An RTX 5070 Ti under Linux (GPU 1 of two) prints 15.47 GiB: its own figure, and the RTX
/// 5080's (same chip and nvidia-smi total), so both are named and neither is taken.
#[test]
fn an_rtx_5070_ti_under_linux_prints_15_47() {
    let t = SiteTest::new();
    let v = diagnose_fixture(&t, "v22_rtx5070ti_gpu1", &[]);
    let msg = &v["message"];
    assert_eq!(msg["gpu_index"], 1);
    assert_eq!(msg["capacity"]["bytes"], g(15.47));
    assert_eq!(msg["requested"]["bytes"], g(9.50));
    // 15.47 GiB = 15841.28 MiB: nvidia-smi's 16303 MiB less the 462 MiB the card keeps.
    assert_eq!(16303 - 462, 15841);
    assert!(g(15.47).abs_diff(15841 * MIB) < 6 * MIB);
    assert_eq!(exact(&v), ["rtx-5070-ti", "rtx-5080"]);
    // Told the card, diagnose uses the RTX 5070 Ti's printed figure: no unsourced note.
    let r = t.run(&[
        "diagnose",
        "v22_rtx5070ti_gpu1.txt",
        "--set",
        "batch_size=4",
        "--gpu",
        "rtx-5070-ti",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("is not sourced"), "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["estimate"]["gpu"]["capacity_bytes"], 15841 * MIB);
}

/// A PyTorch 2.x message printing `capacity` GiB, of a run holding 10 GiB.
fn message(capacity: &str) -> String {
    format!("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of {capacity} GiB of which 1.00 GiB is free. Including non-PyTorch memory, this process has 10.40 GiB memory in use. Of the allocated memory 9.80 GiB is allocated by PyTorch, and 300.00 MiB is reserved by PyTorch but unallocated.")
}

/// Figures the catalog now takes from printed device properties and messages: each is its card's
/// own (exact), with the variant it is; a figure two cards print names both.
#[test]
fn printed_figures_name_their_cards() {
    let t = SiteTest::new();
    let newer = Value::from("newer-driver");
    let ecc_off = Value::from("ecc-off");
    for (capacity, expected) in [
        // total_memory=15974MB (RTX 4070 Ti SUPER, driver 560.35.03): 15974 / 1024 = 15.60, which
        // an RTX 4080 SUPER (same AD103 chip and 16 GB) printed in 2025: both are named.
        (
            "15.60",
            vec![
                ("rtx-4070-ti-super", Value::Null),
                ("rtx-4080", newer.clone()),
            ],
        ),
        // total_memory=16049MB (RTX 4080): 16049 / 1024 = 15.67.
        ("15.67", vec![("rtx-4080", Value::Null)]),
        // total_memory=24114MB (RTX 3090 Ti, driver 590.44.01): 24114 / 1024 = 23.55; the L4's
        // derived ECC-off figure, 22579 + 1536 = 24115 MiB, prints the same.
        (
            "23.55",
            vec![("l4", ecc_off.clone()), ("rtx-3090-ti", Value::Null)],
        ),
        // TensorFlow's totalMemory: 23.62GiB on a TITAN RTX.
        ("23.62", vec![("titan-rtx", Value::Null)]),
        // ComfyUI's Total VRAM 20147 MB on an RTX 4000 Ada (RunPod, ECC off): 20147 / 1024 =
        // 19.67.
        ("19.67", vec![("rtx-4000-ada", Value::Null)]),
        // An RTX A6000 in 2026, 47.40 GiB = 48537.6 MiB: its newer-driver 48538 MiB, and the
        // L40's ECC-off figure, 45466 + 3072 = 48538 MiB.
        (
            "47.40",
            vec![("l40", ecc_off.clone()), ("rtx-a6000", newer.clone())],
        ),
        // NVBench's 7973 MiB Total on an RTX 3060 Ti: 7973 / 1024 = 7.786, printed 7.79, as the
        // Turing cards' 7977 MiB (RTX 2070 SUPER, RTX 2080) is.
        (
            "7.79",
            vec![
                ("rtx-2070", Value::Null),
                ("rtx-2080", Value::Null),
                ("rtx-3060-ti", Value::Null),
            ],
        ),
        // An RTX 4070 under Ubuntu in 2026: 11.60 GiB = 11878.4 MiB, 12282 - 11878 = 404 MiB
        // below nvidia-smi's total.
        ("11.60", vec![("rtx-4070", newer.clone())]),
        // A B200, 178.35 GiB = 182630.4 MiB.
        ("178.35", vec![("b200", Value::Null)]),
        // An RTX 5070 Ti under Windows: VRAM Total 17094475776 B = 16302.56 MiB, and 16302.56 /
        // 1024 = 15.92; the RTX 5080 (same chip and total) is derived from it.
        (
            "15.92",
            vec![
                ("rtx-5070-ti", Value::from("windows")),
                ("rtx-5080", Value::from("windows")),
            ],
        ),
    ] {
        let file = format!("m{capacity}.txt");
        t.file(&file, &message(capacity));
        let r = t.run(&["diagnose", &file, "--format", "json"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let v: Value = serde_json::from_str(&r.stdout).unwrap();
        let mut got: Vec<(String, Value)> = cards(&v)
            .into_iter()
            .filter(|c| c.2)
            .map(|c| (c.0, c.1))
            .collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        let expected: Vec<(String, Value)> = expected
            .into_iter()
            .map(|(id, variant)| (id.to_owned(), variant))
            .collect();
        assert_eq!(got, expected, "{capacity}");
    }
    assert_eq!(45466 + 3072, 48538);
    assert_eq!(22579 + 1536, 24115);
    assert_eq!(12282 - 11878, 404);
    assert_eq!((47.40f64 * 1024.0 * 10.0).round() / 10.0, 48537.6);
    assert_eq!(17094475776_f64 / MIB as f64, 16302.5625);
    assert_eq!((20147.0f64 / 1024.0 * 100.0).round() / 100.0, 19.67);
}

/// WDDM reports an 8 GB card's whole memory, or within half a MiB of it: 8.00 GiB with `C:\`
/// paths is an RTX 3060 Ti (bitsandbytes#268), an RTX 2070 SUPER (FramePack#382), an RTX 3070
/// (8191.5 MiB, ComfyUI-MochiWrapper#87), an RTX 4060 Ti 8GB (8187.5 MiB, nvidia-smi's 8188 less
/// half a MiB) or any other 8 GB card under Windows; none is taken, and bf16 (which the Turing
/// cards lack) is not proposed.
#[test]
fn windows_figures_of_8_gb_cards_are_not_one_card_s() {
    let t = SiteTest::new();
    t.file(
        "w8.txt",
        &format!(
            "  File \"C:\\Users\\me\\train.py\", line 3, in <module>\n{}",
            message("8.00")
        ),
    );
    let fp32 = ["--set", "dtype='float32'", "--set", "batch_size=12"];
    let r = t.run(&[&["diagnose", "w8.txt", "--format", "json"][..], &fp32[..]].concat());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    // 8.00 GiB = 8192 MiB, printed to ±5.12 MiB: the Turing and Ampere cards' Windows figure
    // (8192 and 8191.5 MiB) and the 8 GB Ada cards' (8187.5 MiB) alike.
    assert!((8192.0f64 - 8187.5).abs() < 5.12);
    assert_eq!(8585216000u64, 8187 * MIB + MIB / 2);
    assert_eq!(8589410304u64, 8191 * MIB + MIB / 2);
    assert_eq!(
        exact(&v),
        [
            "rtx-2070",
            "rtx-2080",
            "rtx-3060-ti",
            "rtx-3070",
            "rtx-4060",
            "rtx-4060-ti-8gb"
        ]
    );
    assert_eq!(v["estimate"]["gpu"]["id"], "gpu-from-message");
    let names = v["gpu_candidates"].as_array().unwrap();
    for name in [
        "NVIDIA GeForce RTX 2070",
        "NVIDIA GeForce RTX 3060 Ti",
        "NVIDIA GeForce RTX 4060",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
    assert!(
        !r.stdout.contains("bfloat16"),
        "bf16 proposed for a card that may be a Turing one: {}",
        r.stdout
    );
}

/// WDDM shows a card nvidia-smi's total less half a MiB, and an Ada card's total is less than its
/// whole memory: an RTX 4090 under Windows prints 23.99 GiB (24563.5 of 24564 MiB,
/// ssitu/ComfyUI_UltimateSDUpscale#106), as an RTX 3090 Ti (nvidia-smi 24564 MiB too) does, while
/// 24.00 GiB stays the RTX 3090's and the TITAN RTX's (24576 MiB).
#[test]
fn an_rtx_4090_under_windows_prints_23_99() {
    let t = SiteTest::new();
    let windows = |capacity: &str| {
        format!(
            "  File \"C:\\Users\\me\\train.py\", line 3, in <module>\n{}",
            message(capacity)
        )
    };
    let v = diagnose_fixture(&t, "v22_windows_rtx4090", &[]);
    assert_eq!(v["message"]["capacity"]["bytes"], g(23.99));
    // 23.99 GiB = 24565.76 MiB, printed to ±5.12 MiB: 24563.5 is within, 24576 is not.
    assert!((23.99f64 * 1024.0 - 24563.5).abs() < 5.12);
    assert!((23.99f64 * 1024.0 - 24576.0).abs() > 5.12);
    assert_eq!(exact(&v), ["rtx-3090-ti", "rtx-4090"]);
    for card in v["cards"].as_array().unwrap().iter().take(2) {
        assert_eq!(card["variant"], "windows");
        assert_eq!(card["capacity_bytes"], 25756696576u64);
    }
    assert_eq!(25756696576u64, 24563 * MIB + MIB / 2);
    // 24.00 GiB: the RTX 3090's and the TITAN RTX's, not the RTX 4090's or the RTX 3090 Ti's.
    t.file("w2400.txt", &windows("24.00"));
    let r = t.run(&["diagnose", "w2400.txt", "--format", "json"]);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(exact(&v), ["rtx-3090", "titan-rtx"]);
}

/// The same for 16 GB Ada cards: an RTX 4080 under Windows prints 15.99 GiB (16374 of
/// nvidia-smi's 16376 MiB), which the RTX 4070 Ti SUPER (same 16376 MiB, 16375.5 seen) prints
/// too: both are named, none taken; the RTX 4060 Ti 16GB (16380 MiB, 16379.5 seen) prints 16.00
/// and is named beside them.
#[test]
fn windows_figures_of_16_gb_ada_cards_are_not_one_card_s() {
    let t = SiteTest::new();
    t.file(
        "w16.txt",
        &format!(
            "  File \"C:\\Users\\me\\train.py\", line 3, in <module>\n{}",
            message("15.99")
        ),
    );
    let r = t.run(&["diagnose", "w16.txt", "--format", "json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    // 15.99 GiB = 16373.8 MiB, printed to ±5.1 MiB: 16374 and 16375.5 within, 16379.5 not.
    assert!((16373.76f64 - 16375.5).abs() < 5.12);
    assert!((16373.76f64 - 16379.5).abs() > 5.12);
    assert_eq!(17175150592u64, 16379 * MIB + MIB / 2);
    assert_eq!(exact(&v), ["rtx-4070-ti-super", "rtx-4080"]);
    let names = v["gpu_candidates"].as_array().unwrap();
    assert!(
        names.iter().any(|n| n == "NVIDIA GeForce RTX 4060 Ti 16GB"),
        "{names:?}"
    );
}
