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
