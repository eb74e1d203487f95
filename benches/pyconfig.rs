//! Time of `vramdoc estimate` on generated nanoGPT Python configs of growing length, through the
//! real binary: it should grow linearly with the number of lines (a quadratic step doubles the
//! time per line each time the file doubles).
//!
//! `cargo bench --bench pyconfig` (release profile). Prints one line per shape and size: the
//! best of three runs and the time per line; no external harness.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The best of three runs of `vramdoc estimate FILE` on `text`.
fn best_of_three(dir: &std::path::Path, text: &str) -> Duration {
    let file = dir.join("c.py");
    std::fs::write(&file, text).expect("write the config");
    (0..3)
        .map(|_| {
            let start = Instant::now();
            Command::new(env!("CARGO_BIN_EXE_vramdoc"))
                .arg("estimate")
                .arg(&file)
                .current_dir(dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("run vramdoc");
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// A kind of config: its name, and its text for a number of lines.
type Shape = (&'static str, fn(usize) -> String);

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let shapes: [Shape; 4] = [
        ("failing lines (NameError)", |n| {
            "n_layer = undefined_name\n".repeat(n)
        }),
        ("skipped lines (print(1))", |n| "print(1)\n".repeat(n)),
        ("distinct names (aN = N)", |n| {
            (0..n).map(|i| format!("a{i} = {i}\n")).collect()
        }),
        ("lines of a 100-term chain", |n| {
            format!("x = {}\n", vec!["1"; 100].join(" + ")).repeat(n / 100)
        }),
    ];
    for (what, make) in shapes {
        for n in [8_000, 16_000, 32_000, 64_000] {
            let took = best_of_three(dir.path(), &make(n));
            println!(
                "{what:<28} {n:>6} lines  {:>8.1} ms  {:>6.2} µs/line",
                took.as_secs_f64() * 1e3,
                took.as_secs_f64() * 1e6 / n as f64
            );
        }
    }
}
