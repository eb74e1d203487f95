//! `vramdoc diagnose` on every out-of-memory format PyTorch has printed, through the real binary:
//! each fixture of `tests/data/oom/` (written here, shaped like the messages users paste) parses
//! to its numbers with the meaning its PyTorch gave them, and the version range its format and
//! hint reveal. Expected sizes are the printed figures converted here, independently.

use serde_json::Value;

use crate::support::SiteTest;

const KIB: f64 = 1024.0;
const MIB: f64 = KIB * KIB;
const GIB: f64 = MIB * KIB;

/// `x` GiB, `x` MiB, `x` KiB in bytes, rounded as the parser rounds a printed figure.
fn g(x: f64) -> u64 {
    (x * GIB).round() as u64
}
fn m(x: f64) -> u64 {
    (x * MIB).round() as u64
}
fn k(x: f64) -> u64 {
    (x * KIB).round() as u64
}

/// A fixture's expected reading.
struct Expect {
    /// `tests/data/oom/<name>.txt`.
    name: &'static str,
    format: &'static str,
    /// The version range: first and last (`None`: and later).
    from: &'static str,
    to: Option<&'static str>,
    requested: u64,
    capacity: u64,
    free: Option<u64>,
    process: Option<u64>,
    allocated: u64,
    /// Reserved by PyTorch but unallocated.
    unallocated: u64,
    /// Reserved in total.
    reserved: u64,
    gpu: Option<u64>,
    /// The message's own hint (`max_split_size_mb`, `expandable_segments`, …).
    hint: Option<&'static str>,
    /// Out-of-memory messages in the text.
    count: u64,
}

/// Defaults for the fields most fixtures share.
const BASE: Expect = Expect {
    name: "",
    format: "pytorch2",
    from: "2.2",
    to: None,
    requested: 0,
    capacity: 0,
    free: None,
    process: None,
    allocated: 0,
    unallocated: 0,
    reserved: 0,
    gpu: Some(0),
    hint: Some("expandable_segments"),
    count: 1,
};

/// A 1.x fixture: reserved = printed total (1.4+), or allocated + cached (up to 1.3).
#[allow(clippy::too_many_arguments)]
fn v1(
    name: &'static str,
    range: (&'static str, &'static str),
    requested: u64,
    capacity: u64,
    allocated: u64,
    free: Option<u64>,
    reserved_total: Option<u64>,
    cached: Option<u64>,
) -> Expect {
    let (reserved, unallocated) = match (reserved_total, cached) {
        (Some(r), _) => (r, r - allocated),
        (None, Some(c)) => (allocated + c, c),
        (None, None) => unreachable!(),
    };
    let hint = (range.0 == "1.10").then_some("max_split_size_mb");
    Expect {
        name,
        format: "pytorch1",
        from: range.0,
        to: Some(range.1),
        requested,
        capacity,
        free,
        allocated,
        unallocated,
        reserved,
        hint,
        ..BASE
    }
}

/// A 2.x fixture: reserved = allocated + unallocated.
#[allow(clippy::too_many_arguments)]
fn v2(
    name: &'static str,
    typo: bool,
    requested: u64,
    capacity: u64,
    free: u64,
    process: Option<u64>,
    allocated: u64,
    unallocated: u64,
) -> Expect {
    Expect {
        name,
        from: if typo { "2.1" } else { "2.2" },
        to: typo.then_some("2.1"),
        requested,
        capacity,
        free: Some(free),
        process,
        allocated,
        unallocated,
        reserved: allocated + unallocated,
        hint: Some(if typo {
            "max_split_size_mb"
        } else {
            "expandable_segments"
        }),
        ..BASE
    }
}

/// Every allocator fixture with its expected numbers.
fn fixtures() -> Vec<Expect> {
    const V13: (&str, &str) = ("0.4", "1.3");
    const V14: (&str, &str) = ("1.4", "1.9");
    const V110: (&str, &str) = ("1.10", "2.0");
    vec![
        // 0.4 to 1.3: `cached` is the cache's unallocated part.
        v1(
            "v13_gtx1060",
            V13,
            m(198.0),
            g(5.93),
            g(4.64),
            Some(m(54.94)),
            None,
            Some(m(233.05)),
        ),
        v1(
            "v13_kib",
            V13,
            k(1024.0),
            g(10.92),
            g(10.65),
            Some(k(576.0)),
            None,
            Some(m(30.96)),
        ),
        Expect {
            gpu: Some(2),
            ..v1(
                "v13_traceback_gpu2",
                V13,
                m(48.0),
                g(11.91),
                g(11.12),
                Some(m(29.06)),
                None,
                Some(m(165.40)),
            )
        },
        v1(
            "v13_wrapped",
            V13,
            g(2.50),
            g(15.75),
            g(11.03),
            Some(g(1.91)),
            None,
            Some(g(2.04)),
        ),
        // 1.4 to 1.9: reserved in total, no hint.
        v1(
            "v14_plain",
            V14,
            m(42.0),
            g(7.79),
            g(6.11),
            Some(m(29.31)),
            Some(g(6.33)),
            None,
        ),
        Expect {
            gpu: Some(4),
            ..v1(
                "v14_gpu4",
                V14,
                m(216.0),
                g(10.91),
                g(6.64),
                Some(m(151.38)),
                Some(g(6.71)),
                None,
            )
        },
        v1(
            "v14_no_free",
            V14,
            m(384.0),
            g(14.76),
            g(12.87),
            None,
            Some(g(13.19)),
            None,
        ),
        v1(
            "v14_zero_free",
            V14,
            m(20.0),
            g(3.95),
            g(3.41),
            Some(0),
            Some(g(3.47)),
            None,
        ),
        // 1.10 to 2.0: the max_split_size_mb hint.
        v1(
            "v110_runtime",
            V110,
            g(4.56),
            g(23.68),
            g(18.96),
            Some(g(2.84)),
            Some(g(18.97)),
            None,
        ),
        v1(
            "v110_torch_cuda",
            V110,
            g(1.88),
            g(7.78),
            g(5.65),
            Some(m(677.44)),
            Some(g(5.90)),
            None,
        ),
        v1(
            "v110_jupyter",
            V110,
            m(64.0),
            g(14.75),
            g(13.30),
            Some(m(21.06)),
            Some(g(13.71)),
            None,
        ),
        v1(
            "v110_windows",
            V110,
            m(22.0),
            g(12.00),
            g(10.89),
            Some(0),
            Some(g(11.31)),
            None,
        ),
        Expect {
            gpu: Some(1),
            ..v1(
                "v110_rank_prefix",
                V110,
                g(3.07),
                g(39.59),
                g(33.12),
                Some(g(2.61)),
                Some(g(35.80)),
                None,
            )
        },
        // 2.1: "capacty", the max_split_size_mb hint.
        v2(
            "v21_colab_process",
            true,
            g(2.00),
            g(14.75),
            g(1.37),
            None,
            g(12.08),
            g(1.15),
        ),
        v2(
            "v21_including",
            true,
            m(768.0),
            g(23.65),
            m(402.81),
            Some(g(23.24)),
            g(22.11),
            m(712.40),
        ),
        v2(
            "v21_no_nvml",
            true,
            g(1.50),
            g(79.15),
            g(1.06),
            None,
            g(75.40),
            g(1.20),
        ),
        // 2.2 and later.
        v2(
            "v22_including",
            false,
            g(6.14),
            g(23.68),
            g(3.02),
            Some(g(20.64)),
            g(19.87),
            m(308.15),
        ),
        v2(
            "v22_processes",
            false,
            g(1.00),
            g(79.11),
            m(812.0),
            Some(g(38.18)),
            g(36.90),
            m(612.33),
        ),
        v2(
            "v22_no_nvml",
            false,
            g(32.00),
            g(44.42),
            g(10.11),
            None,
            g(30.97),
            g(2.20),
        ),
        v2(
            "v22_private_pools",
            false,
            m(512.0),
            g(79.11),
            m(301.94),
            Some(g(78.80)),
            g(76.02),
            g(1.93),
        ),
        v2(
            "v22_rank0_multiline",
            false,
            g(3.07),
            g(79.15),
            g(2.10),
            Some(g(77.04)),
            g(74.11),
            g(2.31),
        ),
        v2(
            "v22_logging_prefix",
            false,
            m(256.0),
            g(15.77),
            m(120.38),
            Some(g(15.65)),
            g(14.90),
            m(380.55),
        ),
        v2(
            "v22_windows_l40s",
            false,
            g(12.28),
            g(44.68),
            g(9.12),
            None,
            g(33.80),
            g(1.02),
        ),
        v2(
            "v22_expandable_on",
            false,
            g(1.54),
            g(23.65),
            g(1.02),
            Some(g(22.61)),
            g(19.20),
            g(2.95),
        ),
        Expect {
            count: 2,
            ..v2(
                "v22_two_messages",
                false,
                g(1.54),
                g(11.76),
                g(1.02),
                Some(g(10.71)),
                g(9.90),
                m(340.12),
            )
        },
        v2(
            "v22_wrapped80",
            false,
            m(20.0),
            g(7.78),
            m(4.38),
            Some(g(7.76)),
            g(7.51),
            m(106.52),
        ),
        v2(
            "v22_zero_free",
            false,
            m(2.0),
            g(5.79),
            0,
            Some(g(5.78)),
            g(5.41),
            m(222.10),
        ),
        v2(
            "v22_request_above_card",
            false,
            g(28.87),
            g(15.83),
            g(13.02),
            Some(g(2.02)),
            g(1.61),
            m(78.0),
        ),
        v2(
            "v22_ecc_rtx6000",
            false,
            m(26.0),
            g(44.43),
            m(19.0),
            Some(g(44.40)),
            g(43.94),
            m(41.95),
        ),
        // MPS: binary sizes printed as GB/MB; the limit stands for the capacity.
        Expect {
            name: "mps_runtime",
            format: "mps",
            from: "2.0",
            requested: g(1.00),
            capacity: g(18.13),
            process: Some(g(9.05) + g(8.50)),
            allocated: g(9.05),
            reserved: g(9.05),
            gpu: None,
            hint: Some("mps_high_watermark"),
            ..BASE
        },
        Expect {
            name: "mps_torch",
            format: "mps",
            from: "2.0",
            requested: m(768.0),
            capacity: g(18.13),
            process: Some(g(17.82) + m(1.04)),
            allocated: g(17.82),
            reserved: g(17.82),
            gpu: None,
            hint: Some("mps_high_watermark"),
            ..BASE
        },
    ]
}

/// The fixture's text.
pub(crate) fn fixture(name: &str) -> String {
    let path = format!("{}/tests/data/oom/{name}.txt", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `vramdoc diagnose FILE --format json` (plus `extra`) on a fixture.
pub(crate) fn diagnose_fixture(t: &SiteTest, name: &str, extra: &[&str]) -> Value {
    t.file(&format!("{name}.txt"), &fixture(name));
    let file = format!("{name}.txt");
    let mut args = vec!["diagnose", file.as_str(), "--format", "json"];
    args.extend_from_slice(extra);
    let r = t.run(&args);
    assert_eq!(r.code, 0, "{name}: {}", r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{name}: {e}\n{}", r.stdout))
}

/// A JSON size (`{bytes, tolerance}` or a bare count) as bytes.
fn bytes_of(v: &Value) -> Option<u64> {
    v.get("bytes").unwrap_or(v).as_u64()
}

#[test]
fn every_format_parses_to_its_numbers_and_versions() {
    let t = SiteTest::new();
    let all = fixtures();
    assert!(all.len() >= 30, "{}", all.len());
    for e in &all {
        let v = diagnose_fixture(&t, e.name, &[]);
        let msg = &v["message"];
        let n = e.name;
        assert_eq!(msg["format"], e.format, "{n}");
        assert_eq!(msg["versions"]["from"], e.from, "{n}");
        assert_eq!(msg["versions"]["to"].as_str(), e.to, "{n}");
        assert_eq!(
            bytes_of(&msg["requested"]),
            Some(e.requested),
            "{n}: requested"
        );
        assert_eq!(
            bytes_of(&msg["capacity"]),
            Some(e.capacity),
            "{n}: capacity"
        );
        assert_eq!(bytes_of(&msg["free"]), e.free, "{n}: free");
        assert_eq!(bytes_of(&msg["process"]), e.process, "{n}: process");
        assert_eq!(
            bytes_of(&msg["allocated"]),
            Some(e.allocated),
            "{n}: allocated"
        );
        assert_eq!(
            bytes_of(&msg["reserved_unallocated"]),
            Some(e.unallocated),
            "{n}: reserved but unallocated"
        );
        assert_eq!(
            bytes_of(&msg["reserved"]),
            Some(e.reserved),
            "{n}: reserved"
        );
        assert_eq!(msg["gpu_index"].as_u64(), e.gpu, "{n}: gpu");
        assert_eq!(msg["hint"].as_str(), e.hint, "{n}: hint");
        assert_eq!(msg["messages_in_text"], e.count, "{n}: count");
    }
}

#[test]
fn settings_offered_are_the_ones_the_version_has() {
    let t = SiteTest::new();
    let setting = |name: &str| {
        let v = diagnose_fixture(&t, name, &[]);
        let f = &v["fragmentation"];
        (
            f["setting"].as_str().map(str::to_owned),
            f["suggested_by_message"] == true,
        )
    };
    // 1.3: 233.05 MiB cached + 54.94 MiB free would have held the 198 MiB: fragmentation, and
    // that PyTorch has no setting against it.
    let v = diagnose_fixture(&t, "v13_gtx1060", &[]);
    assert_eq!(v["fragmentation"]["cause"], true);
    assert_eq!(v["fragmentation"]["setting"], "none_in_this_version");
    // Everything outside the cache: capacity − free − (allocated + cached), about 1 GiB.
    let outside = g(5.93) - m(54.94) - (g(4.64) + m(233.05));
    assert_eq!(v["outside_pytorch_bytes"], outside);
    assert!((outside as f64 / GIB - 1.0).abs() < 0.05);
    // 1.10-2.0 with its hint: max_split_size_mb, as the message suggests (2.68 GiB unused).
    let v = diagnose_fixture(&t, "v110_rank_prefix", &[]);
    assert_eq!(v["fragmentation"]["setting"], "max_split_size_mb");
    assert_eq!(v["fragmentation"]["suggested_by_message"], true);
    // 2.1's hint names max_split_size_mb, but 2.1 has expandable segments: offered, not "as
    // the message suggests".
    assert_eq!(
        setting("v21_colab_process"),
        (Some("expandable_segments".into()), false)
    );
    // Already on in the log: not offered again.
    assert_eq!(
        setting("v22_expandable_on"),
        (Some("already_on".into()), false)
    );
    let text = t.run(&["diagnose", "v22_expandable_on.txt"]).stdout;
    assert!(text.contains("already set in this log"), "{text}");
    assert!(!text.contains("Set PYTORCH_CUDA_ALLOC_CONF"), "{text}");
    // The message says nothing: nothing "as the message suggests".
    t.file("bare.txt", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.54 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 22.61 GiB memory in use. Of the allocated memory 19.20 GiB is allocated by PyTorch, and 2.95 GiB is reserved by PyTorch but unallocated.");
    let text = t.run(&["diagnose", "bare.txt"]).stdout;
    assert!(
        text.contains("expandable_segments:True:") && !text.contains("suggests"),
        "{text}"
    );
}
