//! Fuzz targets for every reader a user's file reaches: the Python config evaluator (files and
//! `--set`), `meta.pkl` and checkpoint pickles, the out-of-memory message parser, the command
//! line's YAML scenarios, guide front matter and the `{{ }}` expression language.
//!
//! Each target runs, on a thread with the stack the real binary gives that reader:
//! 1. its adversarial families (long chains, deep nesting, repeated opcodes, huge numbers, ...)
//!    at `n` and `16n` bytes, asserting CPU time linear in the size (`t(16n) <= 16 * 3 * t(n)`
//!    plus 20 ms) and peak heap within [`MEM_MULTIPLE`] times the input plus [`MEM_BASE`];
//! 2. random inputs from the format's grammar, mutated (flips, repeats, control characters,
//!    invalid UTF-8), with the same memory bound.
//!
//! A panic fails the run; a stack overflow aborts it (Rust names the thread, which names the
//! case). With the fixed seed a run is the same sequence of cases everywhere.
//!
//! Environment: `VRAMDOC_FUZZ_SEED` (default [`DEFAULT_SEED`]), `VRAMDOC_FUZZ_CASES` (random
//! cases per target), `VRAMDOC_FUZZ_SECONDS` (instead: run random cases for this long per
//! target), `VRAMDOC_FUZZ_CASE` (only this random case, to reproduce one),
//! `VRAMDOC_FUZZ_VERBOSE=1` (print each random case's size, CPU time and peak heap),
//! `VRAMDOC_FUZZ_SAVE=1` (keep every random input under `target/tmp/fuzz-inputs/`; failing ones
//! are always kept), `VRAMDOC_FUZZ_KNOWN=1` (also run the families listed in [`KNOWN_UNFIXED`]). Arguments that do
//! not start with `-` select targets by name: `cargo test --test fuzz -- pickle`.

/// A list of [`Family`] from `"name" => |n| input` pairs.
macro_rules! families {
    ($($name:literal => $make:expr),* $(,)?) => {
        &[$(crate::Family { name: $name, make: $make }),*]
    };
}
pub(crate) use families;

mod expressions;
mod front_matter;
mod harness;
mod oom;
mod pickle;
mod python;
mod self_check;
mod yaml;

use std::time::{Duration, Instant};

use harness::{run_case, Cost, Failure, Rng};

#[global_allocator]
static ALLOC: harness::Counting = harness::Counting;

/// The seed CI runs with.
const DEFAULT_SEED: u64 = 20_261_122;
/// Random cases per target when neither `VRAMDOC_FUZZ_CASES` nor `VRAMDOC_FUZZ_SECONDS` is set.
const DEFAULT_CASES: usize = 150;
/// Peak heap may be this many times the input...
const MEM_MULTIPLE: usize = 32;
/// ...plus this much: what any run holds (the GPU catalog, the locale bundle, the report) and
/// a fixed cap's worth (one config value of a million items is 32 MiB).
const MEM_BASE: usize = 40 << 20;
/// The families run at `n` and `SCALE * n` bytes. At 8 a quadratic term was hidden by the fixed
/// cost of a run (an out-of-memory message repeated: x27 for x8); at 16 it shows (x100).
const SCALE: usize = 16;
/// The linear-time bound: `t(16n) <= 16 * TIME_SLACK * t(n) + TIME_NOISE` (CPU time). Linear
/// readers measured x5 to x16 here.
const TIME_SLACK: f64 = 3.0;
const TIME_NOISE: Duration = Duration::from_millis(20);

/// Families that still crash or blow a bound on this branch, with the issue item that fixes
/// them: skipped unless `VRAMDOC_FUZZ_KNOWN=1`. Remove an entry once its fix has landed.
/// (None since issue 18 closed: each family that failed has its fix, listed in the README.)
const KNOWN_UNFIXED: &[(&str, &str, &str)] = &[];

/// One reader under test.
pub(crate) struct Target {
    pub(crate) name: &'static str,
    /// The stack the real binary runs this reader on ([`harness::MAIN_STACK`] or
    /// [`harness::WORKER_STACK`]).
    pub(crate) stack: usize,
    /// Runs one input (a panic or an abort is the failure; results are not judged here).
    pub(crate) run: fn(&[u8]),
    /// A random input of at most the given number of bytes.
    pub(crate) random: fn(&mut Rng, usize) -> Vec<u8>,
    /// Random inputs are at most this long.
    pub(crate) max_random: usize,
    /// The adversarial families, each checked at `n` and `SCALE * n` bytes.
    pub(crate) families: &'static [Family],
    /// `n` for the families.
    pub(crate) family_size: usize,
}

/// Inputs of one adversarial shape, at a requested size in bytes.
pub(crate) struct Family {
    pub(crate) name: &'static str,
    pub(crate) make: fn(usize) -> Vec<u8>,
}

fn targets() -> Vec<Target> {
    vec![
        python::config(),
        python::set_value(),
        pickle::meta(),
        pickle::checkpoint(),
        oom::target(),
        yaml::cli_scenario(),
        front_matter::target(),
        expressions::target(),
    ]
}

fn env_num(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    match v.trim().parse() {
        Ok(n) => Some(n),
        Err(_) => {
            eprintln!("fuzz: {name}={v} is not a whole number");
            std::process::exit(2);
        }
    }
}

/// The memory bound for an input of `len` bytes.
fn mem_bound(len: usize) -> usize {
    MEM_MULTIPLE * len + MEM_BASE
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// Runs one case; a panic or a hang is the error.
fn measured(t: &Target, label: &str, input: &[u8]) -> Result<Cost, String> {
    run_case(label, t.stack, t.run, input).map_err(|f| match f {
        Failure::Panic(msg) => format!("{label}: panicked: {msg}"),
        Failure::Hang => format!("{label}: still running after the case deadline"),
    })
}

/// The memory bound's verdict on one case.
fn check_memory(label: &str, len: usize, cost: Cost) -> Result<(), String> {
    if cost.peak > mem_bound(len) {
        return Err(format!(
            "{label}: peak heap {} for {len} bytes of input (bound {MEM_MULTIPLE}x + {})",
            mib(cost.peak),
            mib(MEM_BASE)
        ));
    }
    Ok(())
}

/// The cheaper of two runs (CPU time), so one slow run on a busy machine does not count; one
/// run when it is too quick to matter or slow enough to be judged anyway.
fn best_of_two(t: &Target, label: &str, input: &[u8]) -> Result<Cost, String> {
    let a = measured(t, label, input)?;
    if a.cpu < Duration::from_millis(2) || a.cpu > Duration::from_secs(2) {
        return Ok(a);
    }
    let b = measured(t, label, input)?;
    Ok(if b.cpu < a.cpu { b } else { a })
}

/// Checks one family at `n` and [`SCALE`]` * n`; prints the measured CPU times, their ratio,
/// the peak heap at the larger size and the heap each extra input byte cost.
pub(crate) fn check_family(t: &Target, f: &Family) -> Result<(), String> {
    let n = t.family_size;
    let small = (f.make)(n);
    let large = (f.make)(SCALE * n);
    let label = |input: &[u8]| format!("fuzz {} family {} ({} bytes)", t.name, f.name, input.len());
    let a = best_of_two(t, &label(&small), &small)?;
    let b = best_of_two(t, &label(&large), &large)?;
    let size_ratio = large.len() as f64 / small.len().max(1) as f64;
    let time_ratio = b.cpu.as_secs_f64() / a.cpu.as_secs_f64().max(1e-6);
    let per_byte = b.peak.saturating_sub(a.peak) as f64
        / large.len().saturating_sub(small.len()).max(1) as f64;
    println!(
        "  {:<26} {:>6} B {:>7.1} ms {:>7} B {:>8.1} ms  time x{:<5.1} (size x{:<4.1}) peak {:>9} ({:.0} B/B)",
        f.name,
        small.len(),
        a.cpu.as_secs_f64() * 1e3,
        large.len(),
        b.cpu.as_secs_f64() * 1e3,
        time_ratio,
        size_ratio,
        mib(b.peak),
        per_byte
    );
    check_memory(&label(&small), small.len(), a)?;
    check_memory(&label(&large), large.len(), b)?;
    let bound = a.cpu.mul_f64(size_ratio * TIME_SLACK) + TIME_NOISE;
    if b.cpu > bound {
        return Err(format!(
            "{}: {} bytes took {:.0} ms of CPU, {} bytes {:.0} ms: x{time_ratio:.1} for x{size_ratio:.1} the size (bound {:.0} ms)",
            label(&large),
            small.len(),
            a.cpu.as_secs_f64() * 1e3,
            large.len(),
            b.cpu.as_secs_f64() * 1e3,
            bound.as_secs_f64() * 1e3
        ));
    }
    Ok(())
}

fn known(target: &str, family: &str) -> Option<&'static str> {
    KNOWN_UNFIXED
        .iter()
        .find(|(t, f, _)| *t == target && *f == family)
        .map(|(_, _, why)| *why)
}

/// Runs one target: its families, then random cases. Returns the failures.
/// `family`: only the families whose name contains it, and no random cases.
fn run_target(t: &Target, seed: u64, run_known: bool, family: Option<&str>) -> Vec<String> {
    let mut failures = Vec::new();
    let started = Instant::now();
    println!("fuzz target {} (seed {seed})", t.name);
    // The first call builds what is cached for the process (catalog, locales, guide data).
    if let Err(e) = measured(t, &format!("fuzz {} warm-up", t.name), b"") {
        failures.push(e);
    }
    for f in t.families {
        if family.is_some_and(|only| !f.name.contains(only)) {
            continue;
        }
        if let (Some(why), false) = (known(t.name, f.name), run_known) {
            println!("  {:<26} skipped: known unfixed ({why})", f.name);
            continue;
        }
        match check_family(t, f) {
            Ok(()) => {
                if let Some(why) = known(t.name, f.name) {
                    println!(
                        "  {:<26} passes now: remove it from KNOWN_UNFIXED ({why})",
                        f.name
                    );
                }
            }
            Err(e) => {
                println!("  {:<26} FAILED", f.name);
                failures.push(e);
            }
        }
    }
    let only = env_num("VRAMDOC_FUZZ_CASE");
    let save_all = std::env::var("VRAMDOC_FUZZ_SAVE").is_ok_and(|v| v == "1");
    let verbose = std::env::var("VRAMDOC_FUZZ_VERBOSE").is_ok_and(|v| v == "1");
    let seconds = env_num("VRAMDOC_FUZZ_SECONDS").map(Duration::from_secs);
    let cases = env_num("VRAMDOC_FUZZ_CASES").map_or(DEFAULT_CASES, |n| n as usize);
    let random_start = Instant::now();
    // The worst peak-to-input multiple among inputs of 16 KiB or more (below that the fixed
    // cost dominates), and the largest peak.
    let (mut ran, mut max_len, mut worst, mut max_peak) = (0usize, 0usize, 0.0f64, 0usize);
    for case in 0u64.. {
        let more = match (only, seconds) {
            _ if family.is_some() => false,
            (Some(k), _) => case <= k,
            (None, Some(s)) => random_start.elapsed() < s,
            (None, None) => (case as usize) < cases,
        };
        if !more {
            break;
        }
        if only.is_some_and(|k| k != case) {
            continue;
        }
        // Each case has its own stream, so one can be replayed alone.
        let mut rng = Rng::new(seed ^ fnv(t.name) ^ case.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let input = (t.random)(&mut rng, t.max_random);
        let label = format!("fuzz {} case {case} (VRAMDOC_FUZZ_SEED={seed})", t.name);
        if save_all {
            save(t.name, seed, case, &input);
        }
        match measured(t, &label, &input).and_then(|cost| {
            check_memory(&label, input.len(), cost)?;
            Ok(cost)
        }) {
            Ok(cost) => {
                if verbose {
                    println!(
                        "  case {case}: {} bytes, {:.1} ms, peak {}",
                        input.len(),
                        cost.cpu.as_secs_f64() * 1e3,
                        mib(cost.peak)
                    );
                }
                if input.len() >= 16 << 10 {
                    worst = worst.max(cost.peak as f64 / input.len() as f64);
                }
                max_peak = max_peak.max(cost.peak);
            }
            Err(e) => {
                save(t.name, seed, case, &input);
                failures.push(e);
            }
        }
        ran += 1;
        max_len = max_len.max(input.len());
    }
    if family.is_some() {
        return failures;
    }
    println!(
        "  random: {ran} cases up to {max_len} bytes, largest peak {}, worst {:.1}x input (of 16 KiB+); {:.1} s in all",
        mib(max_peak),
        worst,
        started.elapsed().as_secs_f64()
    );
    failures
}

/// FNV-1a of a target's name: each target draws its own stream from the one seed.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Keeps a random input under `target/tmp/fuzz-inputs/` for a closer look (or to feed it to
/// the real binary).
fn save(target: &str, seed: u64, case: u64, input: &[u8]) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-inputs");
    let path = dir.join(format!("{target}-{seed}-{case}.bin"));
    if std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&path, input))
        .is_ok()
    {
        eprintln!("fuzz: the input is in {}", path.display());
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let all = targets();
    if args.iter().any(|a| a == "--list") {
        for t in &all {
            println!("{}: test", t.name);
        }
        return;
    }
    // `TARGET` or `TARGET/FAMILY` (substrings of the names).
    let filters: Vec<(&str, Option<&str>)> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(|a| match a.split_once('/') {
            Some((t, f)) => (t, Some(f)),
            None => (a.as_str(), None),
        })
        .collect();
    let seed = env_num("VRAMDOC_FUZZ_SEED").unwrap_or(DEFAULT_SEED);
    let run_known = std::env::var("VRAMDOC_FUZZ_KNOWN").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    // An entry naming no family would hide nothing and go stale unseen.
    for (target, family, _) in KNOWN_UNFIXED {
        let exists = all
            .iter()
            .any(|t| t.name == *target && t.families.iter().any(|f| f.name == *family));
        if !exists {
            failures.push(format!(
                "KNOWN_UNFIXED names {target}/{family}, which does not exist"
            ));
        }
    }
    if filters.is_empty() || filters.iter().any(|(name, _)| "self-check".contains(name)) {
        failures.extend(self_check::run_self_check());
    }
    let mut ran = 0;
    for t in &all {
        let wanted = filters.iter().find(|(name, _)| t.name.contains(name));
        if !filters.is_empty() && wanted.is_none() {
            continue;
        }
        ran += 1;
        failures.extend(run_target(t, seed, run_known, wanted.and_then(|w| w.1)));
    }
    if failures.is_empty() {
        println!("fuzz: {ran} targets passed");
        return;
    }
    eprintln!("\nfuzz: {} failures:", failures.len());
    for f in &failures {
        eprintln!("- {f}");
    }
    std::process::exit(1);
}
