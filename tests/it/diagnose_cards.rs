//! `vramdoc diagnose` names the card a message came from: a named card checked against the
//! printed capacity, capacity variants (ECC, newer drivers) matched and a near one not taken,
//! through the real binary.

use serde_json::Value;

use crate::diagnose_formats::diagnose_fixture;
use crate::support::SiteTest;

#[test]
fn a_named_card_is_checked_against_the_printed_capacity() {
    let t = SiteTest::new();
    // 11.76 GiB printed, an RTX 3060 named: it fits.
    let v = diagnose_fixture(
        &t,
        "v22_two_messages",
        &["--set", "batch_size=8", "--gpu", "rtx-3060-12gb"],
    );
    assert_eq!(v["named_card"]["matches"], true);
    // A 79.15 GiB card printed, an RTX 3060 named: the run was elsewhere.
    let v = diagnose_fixture(
        &t,
        "v21_no_nvml",
        &["--set", "batch_size=8", "--gpu", "rtx-3060-12gb"],
    );
    assert_eq!(v["named_card"]["matches"], false);
    let text = t
        .run(&[
            "diagnose",
            "v21_no_nvml.txt",
            "--set",
            "batch_size=8",
            "--gpu",
            "rtx-3060-12gb",
        ])
        .stdout;
    assert!(
        text.contains("the run was probably on another card"),
        "{text}"
    );
}

#[test]
fn a_card_matched_through_a_variant_uses_that_capacity_and_a_near_one_is_not_taken() {
    let t = SiteTest::new();
    // 15.83 GiB is a T4's Windows figure: the estimate runs on 15.83 GiB, not the Linux 14.75.
    let v = diagnose_fixture(&t, "v22_request_above_card", &["--set", "batch_size=8"]);
    assert_eq!(v["estimate"]["gpu"]["id"], "t4");
    // 15.83 GiB rounded to a whole MiB, as the catalog stores printed figures: 16210 MiB.
    assert_eq!(v["estimate"]["gpu"]["capacity_bytes"], 16210u64 << 20);
    // 5.93 GiB (a GTX 1060, not in the catalog) is only near an RTX 2060's Windows 6.00: named,
    // not taken; the printed capacity is used.
    let v = diagnose_fixture(&t, "v13_gtx1060", &["--set", "batch_size=4"]);
    assert_eq!(v["cards"][0]["id"], "rtx-2060");
    assert_eq!(v["cards"][0]["exact"], false);
    assert_eq!(v["estimate"]["gpu"]["id"], "gpu-from-message");
    let text = t.run(&["diagnose", "v13_gtx1060.txt"]).stdout;
    assert!(
        text.contains("is no catalog card's, but within the spread"),
        "{text}"
    );
}

/// `vramdoc diagnose FILE --set batch_size=8 --format json` on `text` written to `name`: the JSON.
fn diagnose_json(t: &SiteTest, name: &str, text: &str) -> Value {
    t.file(name, text);
    let args = [
        "diagnose",
        name,
        "--set",
        "batch_size=8",
        "--format",
        "json",
    ];
    let r = t.run(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap()
}

/// The cards a diagnosis names: id, variant (null for the card's own figure) and whether the
/// printed capacity is the card's exactly.
fn card_matches(v: &Value) -> Vec<(String, Value, bool)> {
    let list = v["cards"].as_array().unwrap().iter();
    list.map(|c| {
        let id = c["id"].as_str().unwrap().to_owned();
        (id, c["variant"].clone(), c["exact"].as_bool().unwrap())
    })
    .collect()
}

/// ECC states from messages printed on real cards (the threads are the catalog's sources): an
/// A10G with ECC on prints 22.19 GiB and an A10 22.18 (22712 MiB, as the RTX A5000 with ECC on
/// is taken to print): each message takes its own card and names the others; an A10 with ECC
/// off is recognized through its variant; a T4 and an L4 with ECC on are their cards alone.
#[test]
fn ecc_states_from_real_messages_name_every_card_that_prints_them() {
    let t = SiteTest::new();
    let cards = |name: &str, text: &str| diagnose_json(&t, name, text);
    let ids = card_matches;
    // AWS g5 (A10G), ECC on: github.com/vllm-project/vllm/issues/372. 22.19 GiB is 22722.6 MiB:
    // the A10G's 22723 MiB within the printed rounding (±5.1 MiB), the A10's 22712 MiB 10.6 MiB
    // away, within the 100 MiB spread only.
    let a10g = "OutOfMemoryError: CUDA out of memory. Tried to allocate 294.00 MiB (GPU 0; 22.19 GiB total capacity; 21.35 GiB already allocated; 46.50 MiB free; 21.35 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF";
    let v = cards("a10g.txt", a10g);
    let got = ids(&v);
    for (id, variant, exact) in [
        ("a10g", Value::Null, true),
        ("a10", Value::Null, false),
        ("rtx-a5000", Value::from("ecc-on"), false),
    ] {
        assert!(
            got.iter()
                .any(|c| c.0 == id && c.1 == variant && c.2 == exact),
            "{id} {variant} {exact} not in {got:?}"
        );
    }
    assert_eq!(v["estimate"]["gpu"]["id"], "a10g");
    // An A10 under vLLM, ECC on (github.com/OpenBMB/MiniCPM-V/issues/640): 22.18 GiB is the A10's
    // and the A5000's ECC-on 22712 MiB, so both are named and --gpu is asked for.
    let a10 = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 22.18 GiB of which 3.47 GiB is free. Process 8007 has 18.71 GiB memory in use. Of the allocated memory 18.29 GiB is allocated by PyTorch, and 142.04 MiB is reserved by PyTorch but unallocated.";
    let v = cards("a10.txt", a10);
    let got = ids(&v);
    for (id, variant) in [("a10", Value::Null), ("rtx-a5000", Value::from("ecc-on"))] {
        assert!(
            got.iter().any(|c| c.0 == id && c.1 == variant && c.2),
            "{id} {variant} not exact in {got:?}"
        );
    }
    assert_eq!(v["estimate"]["gpu"]["id"], "gpu-from-message");
    let names = v["gpu_candidates"].as_array().unwrap();
    for name in ["NVIDIA A10G", "NVIDIA A10", "NVIDIA RTX A5000"] {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
    let text = t.run(&["diagnose", "a10.txt"]).stdout;
    assert!(
        text.contains("fits several cards") && text.contains("--gpu ID"),
        "{text}"
    );
    // An A10 printing 23.70 GiB, more than ECC on allows: its ECC-off variant.
    // github.com/tatsu-lab/stanford_alpaca/issues/76.
    let v = cards("a10_off.txt", "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 388.00 MiB (GPU 2; 23.70 GiB total capacity; 21.91 GiB already allocated; 315.69 MiB free; 22.09 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF");
    let got = ids(&v);
    assert!(
        got.iter().any(|c| c.0 == "a10" && c.1 == "ecc-off" && c.2),
        "{got:?}"
    );
    // A Tesla T4 with ECC on (github.com/xinge008/Cylinder3D/issues/109): the T4 alone, its
    // ECC-off variant (15.76 GiB) far away.
    let v = cards("t4.txt", "RuntimeError: CUDA out of memory. Tried to allocate 844.00 MiB (GPU 0; 14.76 GiB total capacity; 9.70 GiB already allocated; 498.75 MiB free; 10.15 GiB reserved in total by PyTorch)");
    let got = ids(&v);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!((got[0].0.as_str(), &got[0].1), ("t4", &Value::Null));
    // The L4 of vLLM's CI, ECC on (github.com/vllm-project/vllm/issues/20214): the L4, taken.
    let v = cards("l4.txt", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 116.00 MiB. GPU 0 has a total capacity of 22.05 GiB of which 112.12 MiB is free. Including non-PyTorch memory, this process has 21.92 GiB memory in use. Of the allocated memory 21.56 GiB is allocated by PyTorch, and 113.98 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.");
    assert_eq!(ids(&v)[0].0, "l4");
    assert_eq!(v["estimate"]["gpu"]["id"], "l4");
}

/// Newer drivers keep about 0.2 GiB more: a T4 on driver 535.183 prints 14.56-14.58 GiB
/// (github.com/Zheng-Chong/CatVTON/issues/133, github.com/QwenLM/Qwen3-VL/issues/1046), an A10
/// 21.99 GiB (github.com/vllm-project/vllm/issues/16128) and an A10G total_memory=22587MB = 22.06
/// GiB (meta-pytorch/torchcodec's rendered CUDA tutorial), all beyond the 100 MiB spread of the
/// older figures (14.75, 22.18-22.19). The catalog's newer-driver variants name these cards.
#[test]
fn newer_driver_figures_name_their_cards() {
    let t = SiteTest::new();
    let json = |name: &str, text: &str| diagnose_json(&t, name, text);
    let cards = card_matches;
    let newer = Value::from("newer-driver");
    let t4 = |capacity: &str| {
        format!("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 5.20 GiB. GPU 0 has a total capacity of {capacity} GiB of which 3.90 GiB is free. Including non-PyTorch memory, this process has 10.67 GiB memory in use. Of the allocated memory 10.41 GiB is allocated by PyTorch, and 52.00 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
    };
    // 14.57 GiB is the T4's newer-driver figure itself: the T4 is taken, at that capacity (14920
    // MiB), and the RTX A4000 with ECC on (14961 MiB, 41 MiB away) is named beside it.
    let v = json("t4_new.txt", &t4("14.57"));
    let got = cards(&v);
    assert_eq!(
        (got[0].0.as_str(), &got[0].1, got[0].2),
        ("t4", &newer, true)
    );
    assert!(got.iter().any(|c| c.0 == "rtx-a4000" && !c.2), "{got:?}");
    assert_eq!(v["estimate"]["gpu"]["id"], "t4");
    assert_eq!(v["estimate"]["gpu"]["capacity_bytes"], 14920u64 << 20);
    // 14.56 GiB is 11 MiB from it: the T4 is named, not taken, and since a T4 has no bf16 the
    // options offer float16, not bfloat16 (the A4000 alone, the only match before, has bf16).
    let v = json("t4_low.txt", &t4("14.56"));
    let got = cards(&v);
    assert_eq!(
        (got[0].0.as_str(), &got[0].1, got[0].2),
        ("t4", &newer, false)
    );
    let text = t
        .run(&["diagnose", "t4_low.txt", "--set", "batch_size=8"])
        .stdout;
    assert!(text.contains("NVIDIA Tesla T4 (newer driver)"), "{text}");
    assert!(
        text.contains("--dtype=float16") && !text.contains("--dtype=bfloat16"),
        "{text}"
    );
    // An A10 on a newer driver, 21.99 GiB = 22517.8 MiB: the A10's own newer figure (22518 MiB);
    // the A10G's (22587 MiB, 69 MiB away) is within the drivers' spread, so it is named beside
    // it and --gpu is asked for.
    assert_eq!(22587 - 22518, 69);
    let a10 = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 288.00 MiB. GPU 0 has a total capacity of 21.99 GiB of which 21.38 MiB is free. Including non-PyTorch memory, this process has 21.95 GiB memory in use. Of the allocated memory 21.70 GiB is allocated by PyTorch, and 7.25 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)";
    let v = json("a10_new.txt", a10);
    let got = cards(&v);
    for (id, exact) in [("a10", true), ("a10g", false)] {
        assert!(
            got.iter()
                .any(|c| c.0 == id && c.1 == newer && c.2 == exact),
            "{id} in {got:?}"
        );
    }
    // 22.06 GiB = 22589.4 MiB: the A10G's newer figure itself (22587 MiB, printed to ±5.12).
    let v = json(
        "a10g_new.txt",
        &a10.replace("21.99 GiB of which", "22.06 GiB of which"),
    );
    let got = cards(&v);
    assert!(
        got.iter().any(|c| c.0 == "a10g" && c.1 == newer && c.2),
        "{got:?}"
    );
    assert!((22.06f64 * 1024.0 - 22587.0).abs() < 5.12);
    let r = t.run(&["diagnose", "a10_new.txt", "--lang", "es"]);
    assert!(
        r.stdout.contains("NVIDIA A10 (driver más reciente)") && r.stdout.contains("--gpu ID"),
        "{}",
        r.stdout
    );
    let r = t.run(&["diagnose", "a10_new.txt", "--lang", "zh"]);
    assert!(r.stdout.contains("NVIDIA A10G (较新驱动)"), "{}", r.stdout);
}
