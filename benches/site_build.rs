//! Site-build benchmark: a synthetic site of N guides × 3 languages, built by the release
//! `vramdoc` binary in a child process, measuring wall time, CPU time and the child's peak RSS for
//! a clean full build, a no-change rebuild and a rebuild after editing one sentence of one guide;
//! then the same edit under `vramdoc serve`, whose rebuild time is read from its output.
//!
//! ```text
//! cargo bench --bench site_build -- [--n 1000] [--corpus plain|computed|both] [--from DIR]
//!                                   [--runs R] [--work DIR] [--keep]
//! ```
//!
//! Each figure is the best of `--runs` (the run least disturbed by other load), with the median
//! beside it. The `serve` edit is measured at least five times.
//!
//! `--from DIR` reads `gen_site.py --format plain` output (`DIR/content/<slug>/<lang>.md`; a
//! `vramdoc.yaml` is written there if missing); without it the corpus is generated here. The
//! computed corpus is the plain one plus a scenario, two tables, two charts and inline figures.
//! The binary is the `vramdoc` cargo builds for the bench (`target/release/vramdoc`); set
//! `VRAMDOC_BIN` to measure another one.

mod corpus;

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: cargo bench --bench site_build -- [--n N] [--corpus plain|computed|both] [--from DIR] [--runs R] [--work DIR] [--keep]";

/// Command-line options.
struct Args {
    n: usize,
    plain: bool,
    computed: bool,
    from: Option<PathBuf>,
    runs: usize,
    work: Option<PathBuf>,
    keep: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        n: 1000,
        plain: true,
        computed: true,
        from: None,
        runs: 1,
        work: None,
        keep: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--bench" => {} // cargo bench passes this to every harness = false bench
            "--n" => args.n = parse_count("--n", &value("--n")?)?,
            "--runs" => args.runs = parse_count("--runs", &value("--runs")?)?,
            "--corpus" => match value("--corpus")?.as_str() {
                "plain" => (args.plain, args.computed) = (true, false),
                "computed" => (args.plain, args.computed) = (false, true),
                "both" => (args.plain, args.computed) = (true, true),
                other => {
                    return Err(format!(
                        "unknown corpus `{other}`: use plain, computed or both"
                    ))
                }
            },
            "--from" => args.from = Some(PathBuf::from(value("--from")?)),
            "--work" => args.work = Some(PathBuf::from(value("--work")?)),
            "--keep" => args.keep = true,
            "--help" | "-h" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    Ok(args)
}

fn parse_count(name: &str, v: &str) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "{name} must be a positive whole number, found `{v}`"
        )),
    }
}

/// The `vramdoc` binary: `VRAMDOC_BIN`, else the one cargo built for this bench.
fn vramdoc_bin() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("VRAMDOC_BIN") {
        return Ok(PathBuf::from(p));
    }
    let built = PathBuf::from(env!("CARGO_BIN_EXE_vramdoc"));
    if built.is_file() {
        Ok(built)
    } else {
        Err(format!(
            "{} is missing: run `cargo build --release` first, or set VRAMDOC_BIN",
            built.display()
        ))
    }
}

/// What one child build cost.
struct Sample {
    wall: Duration,
    cpu: Duration,
    sys: Duration,
    max_rss_kib: i64,
    summary: String,
}

/// Runs `vramdoc build` as a child and measures it with `wait4`, which reports that child's own
/// peak RSS (RUSAGE_CHILDREN would report the largest child so far).
fn run_build(
    bin: &Path,
    root: &Path,
    out: &Path,
    force: bool,
    logs: &Path,
) -> Result<Sample, String> {
    let stdout_path = logs.join("build.stdout");
    let stderr_path = logs.join("build.stderr");
    let open =
        |p: &Path| File::create(p).map_err(|e| format!("cannot create {}: {e}", p.display()));
    let mut cmd = Command::new(bin);
    cmd.arg("build")
        .arg("--root")
        .arg(root)
        .arg("--out")
        .arg(out);
    if force {
        cmd.arg("--force");
    }
    cmd.stdin(Stdio::null())
        .stdout(open(&stdout_path)?)
        .stderr(open(&stderr_path)?);
    settle();
    let start = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let pid = libc::pid_t::try_from(child.id()).map_err(|e| format!("bad pid: {e}"))?;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data, so all-zero is a valid value to be overwritten.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own un-reaped child; both pointers are valid for the call.
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    if reaped != pid {
        return Err(format!("wait4 failed: {}", std::io::Error::last_os_error()));
    }
    let stdout = fs::read_to_string(&stdout_path).unwrap_or_default();
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        let stderr = fs::read_to_string(&stderr_path).unwrap_or_default();
        let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "`vramdoc build --root {}` failed (status {status}); last lines of stderr:\n{}",
            root.display(),
            tail.join("\n")
        ));
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Ok(Sample {
        wall,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        sys: tv(usage.ru_stime),
        max_rss_kib: usage.ru_maxrss,
        summary: stdout.lines().last().unwrap_or("").to_string(),
    })
}

/// Flushes the writes of earlier builds to disk before a timed one: a clean build leaves up to
/// gigabytes of dirty pages, and their write-back would otherwise slow the next measurement.
fn settle() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::thread::sleep(Duration::from_millis(200));
}

/// Runs `step` `runs` times and prints one line: the best wall time (the run least disturbed by
/// other load on the machine) with its CPU time, the peak RSS over all runs, pages per second for
/// the clean build, and the median when there were several runs.
fn measure(
    label: &str,
    prefix: &str,
    pages: usize,
    runs: usize,
    mut step: impl FnMut(usize) -> Result<Sample, String>,
) -> Result<(), String> {
    let mut samples = Vec::new();
    for k in 0..runs {
        samples.push(step(k)?);
    }
    let peak = samples.iter().map(|s| s.max_rss_kib).max().unwrap_or(0);
    samples.sort_by_key(|s| s.wall);
    let best = &samples[0];
    let secs = best.wall.as_secs_f64();
    let mut line = format!("{prefix} {label}={}", fmt_secs(secs));
    if label == "clean" {
        line.push_str(&format!(" ({:.0} pages/s)", pages as f64 / secs));
    }
    line.push_str(&format!(
        " cpu={} (sys {}) peak_rss={:.0}MiB",
        fmt_secs(best.cpu.as_secs_f64()),
        fmt_secs(best.sys.as_secs_f64()),
        peak as f64 / 1024.0
    ));
    if runs > 1 {
        let median = samples[samples.len() / 2].wall.as_secs_f64();
        line.push_str(&format!(" (best of {runs}, median {})", fmt_secs(median)));
    }
    println!("{line}");
    println!("    # vramdoc: {}", best.summary);
    Ok(())
}

fn fmt_secs(s: f64) -> String {
    if s < 1.0 {
        format!("{:.0}ms", s * 1000.0)
    } else {
        format!("{s:.2}s")
    }
}

fn count_pages(root: &Path) -> Result<usize, String> {
    let dirs = corpus::guide_dirs(root)
        .map_err(|e| format!("cannot list {}/content: {e}", root.display()))?;
    Ok(dirs
        .iter()
        .filter_map(|d| fs::read_dir(d).ok())
        .flat_map(|rd| rd.filter_map(Result::ok))
        .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
        .count())
}

/// The bytes of the search index parts (`<lang>/search/*.js`) under the output folder `out`.
fn search_index_bytes(out: &Path) -> u64 {
    let files = |dir: PathBuf| fs::read_dir(dir).into_iter().flatten().flatten();
    files(out.to_path_buf())
        .flat_map(|lang| files(lang.path().join("search")))
        .filter_map(|f| f.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// The page the one-guide edit changes: the first guide's Spanish file (or whatever it has).
fn file_to_edit(root: &Path) -> Result<PathBuf, String> {
    let dirs = corpus::guide_dirs(root).map_err(|e| e.to_string())?;
    let first = dirs
        .first()
        .ok_or_else(|| format!("{}/content has no guides", root.display()))?;
    ["es.md", "en.md", "zh.md"]
        .iter()
        .map(|f| first.join(f))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("{} has no en/es/zh page", first.display()))
}

fn bench_corpus(
    name: &str,
    root: &Path,
    args: &Args,
    bin: &Path,
    work: &Path,
    force: bool,
) -> Result<(), String> {
    let pages = count_pages(root)?;
    let prefix = format!("corpus={name} n={} pages={pages}", pages / 3);
    let out = work.join(format!("out-{name}"));
    // Each clean build writes a fresh folder, and the folders are deleted only afterwards: ext4
    // slows inode allocation for about 30 s after many files were deleted (`recently_deleted`),
    // which would measure the bench's own clean-up rather than the build.
    let fresh = |k: usize| work.join(format!("out-{name}-clean-{k}"));
    let clean = measure("clean", &prefix, pages, args.runs, |k| {
        reset(&fresh(k))?;
        run_build(bin, root, &fresh(k), force, work)
    });
    reset(&out)?;
    let last = fresh(args.runs - 1);
    if clean.is_ok() {
        fs::rename(&last, &out).map_err(|e| format!("cannot rename {}: {e}", last.display()))?;
    }
    for k in 0..args.runs {
        reset(&fresh(k))?;
    }
    clean?;
    println!(
        "{prefix} search_index={:.1}MB (every language's parts, uncompressed)",
        search_index_bytes(&out) as f64 / 1e6
    );
    measure("nochange", &prefix, pages, args.runs, |_| {
        run_build(bin, root, &out, false, work)
    })?;
    let edited = file_to_edit(root)?;
    let original =
        fs::read(&edited).map_err(|e| format!("cannot read {}: {e}", edited.display()))?;
    let result = measure("edit1", &prefix, pages, args.runs, |k| {
        corpus::edit_sentence(&edited, k)
            .map_err(|e| format!("cannot edit {}: {e}", edited.display()))?;
        run_build(bin, root, &out, false, work)
    })
    .and_then(|()| measure_serve(bin, root, &out, &edited, &prefix, args.runs.max(5)));
    fs::write(&edited, original)
        .map_err(|e| format!("cannot restore {}: {e}", edited.display()))?;
    result
}

/// Starts `vramdoc serve` on the site, waits for its first build, edits one guide `runs` times
/// and prints the rebuild time serve reports for each (best and median), the time from writing
/// the file to serve's line about it (which includes the watcher's 100 ms debounce), and the
/// server's peak RSS.
fn measure_serve(
    bin: &Path,
    root: &Path,
    out: &Path,
    edited: &Path,
    prefix: &str,
    runs: usize,
) -> Result<(), String> {
    use std::io::{BufRead, BufReader};
    use std::sync::mpsc;
    let mut child = Command::new(bin)
        .arg("serve")
        .arg("--root")
        .arg(root)
        .arg("--out")
        .arg(out)
        .args(["--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {} serve: {e}", bin.display()))?;
    let stdout = child.stdout.take().ok_or("serve has no stdout")?;
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let wait_for = |needle: &str, limit: Duration| -> Result<String, String> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return Ok(line),
                Ok(_) => {}
                Err(_) => return Err(format!("serve printed no `{needle}` line in time")),
            }
        }
    };
    let result = (|| -> Result<(Vec<Duration>, Vec<Duration>), String> {
        wait_for("serving ", Duration::from_secs(600))?;
        let mut reported = Vec::new();
        let mut latency = Vec::new();
        for k in 0..runs {
            settle();
            std::thread::sleep(Duration::from_millis(200));
            corpus::edit_sentence(edited, 1000 + k)
                .map_err(|e| format!("cannot edit {}: {e}", edited.display()))?;
            let start = Instant::now();
            let line = wait_for("changed: built", Duration::from_secs(60))?;
            latency.push(start.elapsed());
            let ms = line
                .split(" in ")
                .nth(1)
                .and_then(|r| r.split(" ms").next())
                .and_then(|n| n.trim().parse::<u64>().ok())
                .ok_or_else(|| format!("cannot read the rebuild time in `{line}`"))?;
            reported.push(Duration::from_millis(ms));
        }
        Ok((reported, latency))
    })();
    let peak = fs::read_to_string(format!("/proc/{}/status", child.id()))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        });
    let _ = child.kill();
    let _ = child.wait();
    let (mut reported, mut latency) = result?;
    reported.sort();
    latency.sort();
    let mid = |v: &[Duration]| fmt_secs(v[v.len() / 2].as_secs_f64());
    println!(
        "{prefix} serve_edit1={} (best of {runs}, median {}) edit_to_reload={} (median, with the 100ms debounce) peak_rss={}",
        fmt_secs(reported[0].as_secs_f64()),
        mid(&reported),
        mid(&latency),
        peak.map_or("unknown".into(), |kib| format!("{:.0}MiB", kib / 1024.0)),
    );
    Ok(())
}

fn load() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

fn run(args: &Args) -> Result<(), String> {
    let bin = vramdoc_bin()?;
    let help = Command::new(&bin)
        .args(["build", "--help"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let force = String::from_utf8_lossy(&help.stdout).contains("--force");
    let (work, _temp) = match &args.work {
        Some(w) => (w.clone(), None),
        None => {
            let t = tempfile::Builder::new()
                .prefix("vramdoc-bench-")
                .tempdir()
                .map_err(|e| format!("cannot create a temporary folder: {e}"))?;
            if args.keep {
                (t.keep(), None)
            } else {
                (t.path().to_path_buf(), Some(t))
            }
        }
    };
    fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "# site_build: {} (clean build {}), {cores} cores, load average {}, work dir {}",
        bin.display(),
        if force {
            "with --force"
        } else {
            "into an empty folder"
        },
        load(),
        work.display()
    );
    let n = args.n;
    if args.plain {
        let root = match &args.from {
            Some(dir) => {
                let config = dir.join("vramdoc.yaml");
                if !config.exists() {
                    fs::write(&config, corpus::SITE_CONFIG)
                        .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
                }
                dir.clone()
            }
            None => generate(&work.join(format!("plain-{n}")), n, false)?,
        };
        bench_corpus("plain", &root, args, &bin, &work, force)?;
    }
    if args.computed {
        let root = work.join(format!("computed-{n}"));
        match &args.from {
            Some(dir) => {
                reset(&root)?;
                corpus::write_computed_from(dir, &root).map_err(|e| {
                    format!(
                        "cannot derive the computed corpus from {}: {e}",
                        dir.display()
                    )
                })?;
            }
            None => {
                generate(&root, n, true)?;
            }
        }
        bench_corpus("computed", &root, args, &bin, &work, force)?;
    }
    println!("# load average at the end: {}", load());
    Ok(())
}

fn reset(dir: &Path) -> Result<(), String> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot remove {}: {e}", dir.display()))
        }
        _ => Ok(()),
    }
}

fn generate(root: &Path, n: usize, computed: bool) -> Result<PathBuf, String> {
    reset(root)?;
    corpus::write_generated(root, n, computed)
        .map_err(|e| format!("cannot write the corpus to {}: {e}", root.display()))?;
    Ok(root.to_path_buf())
}

fn main() -> ExitCode {
    match parse_args().and_then(|a| run(&a)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("site_build: {e}");
            ExitCode::FAILURE
        }
    }
}
