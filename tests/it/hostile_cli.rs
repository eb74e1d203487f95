//! The command line against hostile input (issue 18, items 4, 5, 8 and 15): endless files and
//! pipes, deeply nested YAML, control characters meant for the terminal, and numbers that
//! overflow or lose their fraction. Each runs the real binary under a deadline, so a regression
//! fails instead of hanging.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{Run, SiteTest};

/// Runs `vramdoc <args>` in `dir` with `stdin`, killing it after `secs` (then the test fails).
fn run_within(dir: &Path, args: &[&str], stdin: Stdio, secs: u64) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramdoc"))
        .args(args)
        .current_dir(dir)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run vramdoc");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("vramdoc {args:?} ran past {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `vramdoc <args>` with `input` on standard input.
fn run_piped(dir: &Path, args: &[&str], input: &[u8]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramdoc"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run vramdoc");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    // vramdoc may stop reading early (that is the point): a broken pipe is expected.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("output");
    let _ = writer.join();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A PyTorch 2 out-of-memory message.
const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.54 GiB. GPU 0 has a total capacity of 11.72 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 8.61 GiB memory in use. Of the allocated memory 6.20 GiB is allocated by PyTorch, and 1.95 GiB is reserved by PyTorch but unallocated.";

fn zero() -> Stdio {
    Stdio::from(std::fs::File::open("/dev/zero").expect("/dev/zero"))
}

#[test]
fn endless_inputs_stop_at_the_cap_with_an_error() {
    let t = SiteTest::new();
    let dir = t.root();
    t.file("c.py", "n_layer = 2\n");
    t.file("msg.txt", OOM);
    let cases: [(&[&str], bool); 6] = [
        (&["estimate", "/dev/zero"], false),
        (&["estimate", "-"], true),
        (&["estimate", "c.py", "--catalog", "/dev/zero"], false),
        (&["diagnose", "/dev/zero"], false),
        (&["diagnose", "-"], true),
        (&["diagnose", "msg.txt", "--config", "/dev/zero"], false),
    ];
    for (args, stdin) in cases {
        let input = if stdin { zero() } else { Stdio::null() };
        let r = run_within(dir, args, input, 20);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("larger than the 10 MiB vramdoc reads"),
            "{args:?}: {}",
            r.stderr
        );
    }
}

#[test]
fn deeply_nested_yaml_is_refused_fast_at_its_line() {
    let t = SiteTest::new();
    let deep = format!("n_layer: 2\nx: {}\n", "[".repeat(100_000));
    t.file("deep.yaml", &deep);
    t.file("c.py", "n_layer = 2\n");
    t.file("cat.yaml", &format!("gpus:\n  - {}\n", "{".repeat(100_000)));
    let cases: [(&[&str], &str); 3] = [
        (&["estimate", "deep.yaml"], "deep.yaml:2:1"),
        (
            &["estimate", "c.py", "--catalog", "cat.yaml"],
            "cat.yaml:2:1",
        ),
        (
            &["diagnose", "--message", OOM, "--config", "deep.yaml"],
            "deep.yaml:2:1",
        ),
    ];
    for (args, at) in cases {
        let r = run_within(t.root(), args, Stdio::null(), 5);
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(
            r.stderr.contains("more than 4096 `[` and `{`"),
            "{}",
            r.stderr
        );
        assert!(r.stderr.contains(at), "{at}: {}", r.stderr);
    }
    let r = run_piped(t.root(), &["estimate", "-"], deep.as_bytes());
    assert!(r.stderr.contains("<stdin>:2:1"), "{}", r.stderr);
}

#[test]
fn control_characters_never_reach_the_terminal_raw() {
    let t = SiteTest::new();
    // The string a config may hold: an OSC that retitles the terminal, and a forged line.
    t.file(
        "c.py",
        "dataset = '\\x1b]0;TITLE\\x07\\nFAKE: fits'\nn_layer = 2\nn_head = 2\nn_embd = 64\n",
    );
    t.file("cpu.py", "device = '\\x1b[2J\\ncpu'\n");
    t.file(
        "cat.yaml",
        "gpus:\n  - {id: evil, name: \"Evil\\e]0;T\\a\\nFAKE: fits\", capacity_bytes: 80000000000}\n",
    );
    for args in [
        &["estimate", "c.py", "--gpu", "t4"][..],
        &["estimate", "c.py", "--format", "markdown"],
        &["estimate", "c.py", "--format", "json"],
        &["estimate", "cpu.py"],
        &["estimate", "c.py", "--catalog", "cat.yaml", "--gpu", "evil"],
        &[
            "diagnose",
            "--message",
            "CUDA out of memory. \x1b]0;T\x07 Tried",
        ],
    ] {
        let r = run_within(t.root(), args, Stdio::null(), 20);
        for (name, out) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
            let raw = out
                .chars()
                .find(|c| c.is_control() && *c != '\n' && *c != '\t');
            assert_eq!(raw, None, "{args:?} {name}: {out}");
            assert!(
                !out.lines().any(|l| l.starts_with("FAKE")),
                "{args:?}: {out}"
            );
        }
    }
    // The note shows what the config holds, as symbols.
    let r = run_within(t.root(), &["estimate", "c.py"], Stdio::null(), 20);
    assert!(
        r.stderr.contains("data/␛]0;TITLE␇␊FAKE: fits/meta.pkl"),
        "{}",
        r.stderr
    );
    // The catalog entry is refused at its line.
    let r = run_within(
        t.root(),
        &["estimate", "c.py", "--catalog", "cat.yaml"],
        Stdio::null(),
        20,
    );
    assert!(
        r.stderr.contains("cat.yaml:2:1") && r.stderr.contains("control character (U+001B)"),
        "{}",
        r.stderr
    );
}

#[test]
fn numbers_are_refused_rather_than_rounded_or_overflowed() {
    let t = SiteTest::new();
    t.file("c.py", "n_layer = 2\nn_head = 2\nn_embd = 64\n");
    t.file("frac.yaml", "n_layer: 2\nother_processes: '1.5'\n");
    t.file("big.yaml", "n_layer: 2\nbatch_size: 18446744073709551615\n");
    let run = |args: &[&str]| run_within(t.root(), args, Stdio::null(), 20);
    // A fraction of a byte, from the flag and from the scenario key.
    let r = run(&["estimate", "c.py", "--other-processes", "1.5"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.stderr.contains("--other-processes 1.5") && r.stderr.contains("whole number of bytes"),
        "{}",
        r.stderr
    );
    let r = run(&["estimate", "frac.yaml"]);
    assert!(
        r.code == 1 && r.stderr.contains("frac.yaml:2:1"),
        "{}",
        r.stderr
    );
    // A unit scales a fraction; whole bytes stay bytes.
    for (size, bytes) in [("1.5 GiB", 1_610_612_736u64), ("1024", 1024)] {
        let r = run(&[
            "estimate",
            "c.py",
            "--other-processes",
            size,
            "--format",
            "json",
        ]);
        let v: serde_json::Value = serde_json::from_str(&r.stdout).expect(&r.stderr);
        assert_eq!(v["scenario"]["other_processes"], bytes, "{size}");
    }
    // DDP processes beyond 2^63 - 1.
    let r = run(&[
        "estimate",
        "c.py",
        "--nproc-per-node",
        "4294967295",
        "--nnodes",
        "4294967295",
    ]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("more processes than vramdoc can count"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("9223372036854775807"), "{}", r.stderr);
    // 2^64 - 1 is echoed as written, at its line.
    let r = run(&["estimate", "big.yaml"]);
    assert!(
        r.stderr.contains("18446744073709551615 is too large") && r.stderr.contains("big.yaml:2:1"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("e19"), "{}", r.stderr);
}

#[test]
fn yaml_and_catalog_problems_are_each_at_their_line() {
    let t = SiteTest::new();
    t.file("c.py", "n_layer = 2\n");
    t.file("dup.yaml", "n_layer: 2\nbatch_size: 4\nn_layer: 3\n");
    t.file(
        "cat.yaml",
        "gpus:\n  - {id: a, name: A, capacity_bytes: 0}\n  - id: b\n    name: B\n  - {id: ok, name: OK, capacity_bytes: 5}\n  - {id: c d, name: C, capacity_bytes: 5}\n",
    );
    let r = run_within(t.root(), &["estimate", "dup.yaml"], Stdio::null(), 20);
    assert!(
        r.stderr.contains("duplicate entry") && r.stderr.contains("dup.yaml:3:1"),
        "{}",
        r.stderr
    );
    let r = run_within(
        t.root(),
        &["estimate", "c.py", "--catalog", "cat.yaml"],
        Stdio::null(),
        20,
    );
    for (line, what) in [
        (2, "capacity_bytes must be"),
        (3, "missing field `capacity_bytes`"),
        (6, "without spaces"),
    ] {
        let at = format!("cat.yaml:{line}:1");
        let block = r
            .stderr
            .split("error: ")
            .find(|b| b.contains(&at))
            .unwrap_or_else(|| panic!("{at}: {}", r.stderr));
        assert!(block.contains(what), "{at}: {block}");
    }
    assert_eq!(r.stderr.matches("error: ").count(), 3, "{}", r.stderr);
}

#[test]
fn yaml_too_large_to_parse_in_little_memory_is_refused_by_size() {
    // Block nesting no bracket count sees: 4 MB of `- ` cost the YAML parser 1.2 GB.
    let t = SiteTest::new();
    let nested = format!("n_layer:\n{}1\n", "- ".repeat(2 << 20));
    t.file("nested.yaml", &nested);
    t.file("c.py", "n_layer = 2\n");
    t.file(
        "cat.yaml",
        &format!(
            "gpus:\n{}",
            "  - id: a\n    name: A\n    capacity_bytes: 5\n".repeat(8000)
        ),
    );
    let cases: [(&[&str], &str); 2] = [
        (&["estimate", "nested.yaml"], "vramdoc reads at most 64 KiB"),
        (
            &["estimate", "c.py", "--catalog", "cat.yaml"],
            "vramdoc reads at most 256 KiB",
        ),
    ];
    for (args, what) in cases {
        let r = run_within(t.root(), args, Stdio::null(), 10);
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(r.stderr.contains(what), "{args:?}: {}", r.stderr);
    }
    // On standard input, the first lines say it is YAML, and the same limit applies.
    let r = run_piped(t.root(), &["estimate", "-"], nested.as_bytes());
    assert!(
        r.stderr.contains("<stdin>") && r.stderr.contains("at most 64 KiB"),
        "{}",
        r.stderr
    );
}
