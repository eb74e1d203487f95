//! The fuzz harness: a seeded generator, a counting allocator, and the runner that executes one
//! case on a thread with the stack the real binary gives that reader, catching panics and
//! measuring CPU time and peak memory.

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

/// The stack of the main thread, where `estimate` and `diagnose` run their readers: Linux gives
/// the main thread `ulimit -s`, 8 MiB by default.
pub(crate) const MAIN_STACK: usize = 8 << 20;
/// The stack of rayon's worker threads, where `build` reads pages and expands expressions:
/// rayon leaves it at the standard library's default for spawned threads, 2 MiB.
pub(crate) const WORKER_STACK: usize = 2 << 20;

/// A case that runs longer than this is reported as a hang (wall time, so a loaded machine
/// does not trip it).
const CASE_DEADLINE: Duration = Duration::from_secs(120);

/// Past this many live bytes the allocator refuses, and the process aborts with the running
/// case's name, rather than take the machine's memory with it.
const HARD_CAP: usize = 3 << 30;

/// SplitMix64: a small, fast, well-mixed generator; one seed gives one sequence everywhere.
#[derive(Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `1 / n`.
    pub(crate) fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub(crate) fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.below(items.len())]
    }

    /// A length up to `max`, small far more often than large (log-uniform).
    pub(crate) fn size(&mut self, max: usize) -> usize {
        let bits = usize::BITS - max.leading_zeros();
        let cap = 1usize << self.below(bits as usize + 1);
        self.below(cap.min(max) + 1)
    }
}

/// Mutates `bytes` a few times: flips, inserts a dictionary token, deletes, repeats a range (so
/// long runs and repeated opcodes arise), truncates or splices in random bytes.
pub(crate) fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>, dict: &[&str], max: usize) {
    for _ in 0..=rng.below(8) {
        let at = if bytes.is_empty() {
            0
        } else {
            rng.below(bytes.len() + 1)
        };
        match rng.below(7) {
            0 if at < bytes.len() => bytes[at] ^= 1 << rng.below(8),
            1 => {
                let token = rng.pick(dict).as_bytes().to_vec();
                bytes.splice(at..at, token);
            }
            2 if at < bytes.len() => {
                let end = (at + rng.size(64)).min(bytes.len());
                bytes.drain(at..end);
            }
            3 if at < bytes.len() => {
                let end = (at + 1 + rng.size(32)).min(bytes.len());
                let piece = bytes[at..end].to_vec();
                let times = rng.size(4096);
                for _ in 0..times {
                    if bytes.len() + piece.len() > max {
                        break;
                    }
                    bytes.splice(at..at, piece.iter().copied());
                }
            }
            4 => bytes.truncate(at),
            5 => {
                let noise: Vec<u8> = (0..rng.size(16)).map(|_| rng.next_u64() as u8).collect();
                bytes.splice(at..at, noise);
            }
            _ => {
                // A control character or a byte that is never valid UTF-8.
                let b = *rng.pick(&[&0u8, &7, &0x1b, &0x7f, &b'\r', &0xff, &0xc3]);
                bytes.insert(at, b);
            }
        }
    }
    bytes.truncate(max);
}

/// Repeats `unit` until the text reaches `n` bytes (at least once).
pub(crate) fn repeat_to(unit: &str, n: usize) -> String {
    unit.repeat((n / unit.len().max(1)).max(1))
}

/// Counts live heap bytes and their peak, around the system allocator.
pub(crate) struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// The running case, for the message when [`HARD_CAP`] is hit.
static LABEL: Mutex<String> = Mutex::new(String::new());

fn grew(size: usize) -> bool {
    let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
    PEAK.fetch_max(live, Ordering::Relaxed);
    if live > HARD_CAP {
        LIVE.fetch_sub(size, Ordering::Relaxed);
        let note = b"\nfuzz: a case holds over 3 GiB of heap; it is: ";
        // SAFETY: write(2) on stderr with valid buffers; no allocation on this path.
        unsafe {
            libc::write(2, note.as_ptr().cast(), note.len());
            if let Ok(label) = LABEL.try_lock() {
                libc::write(2, label.as_ptr().cast(), label.len());
            }
            libc::write(2, b"\n".as_ptr().cast(), 1);
        }
        return false;
    }
    true
}

// SAFETY: every call forwards to `System` with the same layout; the counters are atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !grew(layout.size()) {
            return std::ptr::null_mut();
        }
        let p = System.alloc(layout);
        if p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !grew(layout.size()) {
            return std::ptr::null_mut();
        }
        let p = System.alloc_zeroed(layout);
        if p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() && !grew(new_size - layout.size()) {
            return std::ptr::null_mut();
        }
        let p = System.realloc(ptr, layout, new_size);
        if p.is_null() {
            if new_size > layout.size() {
                LIVE.fetch_sub(new_size - layout.size(), Ordering::Relaxed);
            }
        } else if new_size < layout.size() {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        p
    }
}

/// What one case cost.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cost {
    /// CPU time of the thread that ran it (unaffected by other processes on the machine).
    pub(crate) cpu: Duration,
    /// Heap bytes held at the peak beyond those held before the case.
    pub(crate) peak: usize,
}

/// Why a case failed.
#[derive(Debug)]
pub(crate) enum Failure {
    Panic(String),
    Hang,
}

fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Runs `f(input)` on a fresh thread named `label` with `stack` bytes of stack. A stack overflow
/// aborts the whole process, and Rust's message names the thread, so the case stays known.
pub(crate) fn run_case(
    label: &str,
    stack: usize,
    f: fn(&[u8]),
    input: &[u8],
) -> Result<Cost, Failure> {
    if let Ok(mut l) = LABEL.lock() {
        l.clear();
        l.push_str(label);
    }
    let (tx, rx) = mpsc::channel();
    let owned = input.to_vec();
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let worker = std::thread::Builder::new()
        .name(label.to_string())
        .stack_size(stack)
        .spawn(move || {
            let start = thread_cpu_time();
            let result = std::panic::catch_unwind(AssertUnwindSafe(|| f(&owned)));
            let cpu = thread_cpu_time().saturating_sub(start);
            drop(owned);
            let _ = tx.send(result.map(|()| cpu).map_err(|p| {
                p.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "a panic without a message".into())
            }));
        })
        .map_err(|e| Failure::Panic(format!("cannot start the case's thread: {e}")))?;
    match rx.recv_timeout(CASE_DEADLINE) {
        Ok(Ok(cpu)) => {
            let _ = worker.join();
            let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
            Ok(Cost { cpu, peak })
        }
        Ok(Err(msg)) => {
            let _ = worker.join();
            Err(Failure::Panic(msg))
        }
        Err(_) => Err(Failure::Hang),
    }
}
