//! Reading speed of `vramdoc diagnose` on long logs (issue 18: these were quadratic).
//!
//! `cargo bench --bench diagnose` (release profile). Target: linear time, well over 10 MB/s on
//! one core: a 7.6 MB message with 200,000 `Process N has` lines, and one message repeated
//! 30,000 times. Prints one line per input; no external harness.

use std::time::Instant;

use vramdoc::oom::message;

/// A 2.x message listing `n` other processes.
fn many_processes(n: usize) -> String {
    let mut text = String::from("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.00 GiB is free. ");
    for i in 0..n {
        text += &format!("Process {} has 100.00 KiB memory in use. ", 1000 + i);
    }
    text + "Of the allocated memory 60.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.\n"
}

/// One seed-shaped message, `n` times.
fn repeated(n: usize) -> String {
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.14 GiB. GPU 0 has a total capacity of 23.68 GiB of which 3.02 GiB is free. Including non-PyTorch memory, this process has 20.64 GiB memory in use. Of the allocated memory 19.87 GiB is allocated by PyTorch, and 308.15 MiB is reserved by PyTorch but unallocated.\n".repeat(n)
}

fn main() {
    for (what, text) in [
        ("200,000 Process lines", many_processes(200_000)),
        ("30,000 repeated messages", repeated(30_000)),
        ("20,000 Process lines", many_processes(20_000)),
        ("3,000 repeated messages", repeated(3_000)),
    ] {
        let start = Instant::now();
        let m = message::parse(&text).map(|_| ()).map_err(|e| e.to_string());
        let s = start.elapsed().as_secs_f64();
        let mb = text.len() as f64 / 1e6;
        println!(
            "{what:<28} {mb:>6.2} MB in {:>8.1} ms: {:>7.1} MB/s  ({})",
            s * 1e3,
            mb / s,
            if m.is_ok() { "read" } else { "error" }
        );
    }
}
