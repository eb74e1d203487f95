//! Reads a PyTorch CUDA out-of-memory message (with or without its traceback) into numbers.
//!
//! Two formats, from PyTorch's `CUDACachingAllocator.cpp`:
//! - 1.x (and 2.0): `Tried to allocate 6.14 GiB (GPU 0; 11.76 GiB total capacity; 8.91 GiB
//!   already allocated; 1.36 GiB free; 9.18 GiB reserved in total by PyTorch)`;
//! - 2.1 and later: `Tried to allocate 6.14 GiB. GPU 0 has a total capacity of 11.69 GiB of which
//!   2.68 GiB is free. [Process 123 has 2.07 GiB memory in use. ...] Including non-PyTorch memory,
//!   this process has 7.04 GiB memory in use. Of the allocated memory 6.78 GiB is allocated by
//!   PyTorch, and 106.52 MiB is reserved by PyTorch but unallocated.`
//!
//! Sizes are printed by PyTorch's `format_size`: bytes, KiB, MiB or GiB with two decimals, so each
//! parsed size keeps its rounding tolerance.

use serde::Serialize;

/// A size read from the message: the bytes it stands for and half its last printed digit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Size {
    /// The printed value in bytes.
    pub(crate) bytes: u64,
    /// Half of the last printed digit, in bytes ("6.14 GiB": 0.005 GiB).
    pub(crate) tolerance: u64,
}

/// Which of PyTorch's two message formats the text uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Format {
    /// `(GPU 0; … total capacity; … already allocated; … free; … reserved in total by PyTorch)`.
    Pytorch1,
    /// `GPU 0 has a total capacity of … of which … is free. … this process has …`.
    Pytorch2,
}

/// Another process the message lists (`Process 1234 has 2.07 GiB memory in use`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct ProcessLine {
    /// Its process id.
    pub(crate) pid: u64,
    /// What it holds.
    pub(crate) bytes: u64,
}

/// The numbers of one out-of-memory message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OomMessage {
    /// The message format.
    pub(crate) format: Format,
    /// The allocation that failed.
    pub(crate) requested: Size,
    /// The GPU index, if printed.
    pub(crate) gpu_index: Option<u64>,
    /// The card's total capacity.
    pub(crate) capacity: Size,
    /// Free memory on the card when the allocation failed.
    pub(crate) free: Size,
    /// Everything this process held, PyTorch's and not (2.x only).
    pub(crate) process: Option<Size>,
    /// Memory in tensors allocated by PyTorch.
    pub(crate) allocated: Size,
    /// Reserved by PyTorch's caching allocator but not in tensors (2.x, or reserved − allocated).
    pub(crate) reserved_unallocated: Size,
    /// Reserved by PyTorch in total (1.x, or allocated + reserved-unallocated).
    pub(crate) reserved: Size,
    /// Processes the message lists, in order.
    pub(crate) processes: Vec<ProcessLine>,
    /// Function names of the traceback's frames (`File "…", line N, in NAME`), outermost first.
    pub(crate) frames: Vec<String>,
    /// Source lines quoted in the traceback (`losses = estimate_loss()`), outermost first.
    pub(crate) code: Vec<String>,
}

/// A message that could not be read: what was expected, and the text quoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// What was expected there.
    pub(crate) expected: String,
    /// The part of the message that could not be read (at most 160 characters).
    pub(crate) quoted: String,
    /// The 1-based line of the text where that part starts.
    pub(crate) line: usize,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot read \"{}\": expected {}",
            self.quoted, self.expected
        )
    }
}

const KIB: f64 = 1024.0;

/// Reads a size such as `6.14 GiB`, `106.52 MiB` or `512 bytes` at the start of `text`;
/// returns it and the rest of the text.
fn size(text: &str) -> Option<(Size, &str)> {
    let t = text.trim_start();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let number = &t[..end];
    let value: f64 = number.parse().ok()?;
    let decimals = number.split_once('.').map_or(0, |(_, f)| f.len()) as i32;
    let rest = t[end..].trim_start();
    let (scale, unit_len) = [
        ("bytes", 1.0),
        ("KiB", KIB),
        ("MiB", KIB * KIB),
        ("GiB", KIB * KIB * KIB),
        ("TiB", KIB * KIB * KIB * KIB),
        ("B", 1.0),
    ]
    .iter()
    .find(|(u, _)| rest.starts_with(u))
    .map(|(u, s)| (*s, u.len()))?;
    let bytes = (value * scale).round();
    if !(0.0..9.0e18).contains(&bytes) {
        return None;
    }
    let tolerance = (scale * 0.5 * 10f64.powi(-decimals)).round() as u64;
    Some((
        Size {
            bytes: bytes as u64,
            tolerance,
        },
        &rest[unit_len..],
    ))
}

/// The text after the first occurrence of `needle` (ASCII case-insensitive).
fn after<'a>(text: &'a str, needle: &str) -> Option<&'a str> {
    let lower = text.to_ascii_lowercase();
    lower
        .find(&needle.to_ascii_lowercase())
        .map(|i| &text[i + needle.len()..])
}

/// At most 160 characters of `text` from its start, on one line, for an error's quote.
fn quote(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(160) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

/// A parse error expecting `expected`, quoting `text` (its line is set by [`parse`]).
fn err(expected: &str, text: &str) -> ParseError {
    ParseError {
        expected: expected.to_owned(),
        quoted: quote(text),
        line: 1,
    }
}

/// The 1-based line of `text` where `quoted` (whitespace-flattened) starts: the first line that
/// holds its first words; else the line that says "out of memory"; else 1.
fn line_of(text: &str, quoted: &str) -> usize {
    let words: Vec<&str> = quoted.split_whitespace().take(3).collect();
    let lines: Vec<&str> = text.lines().collect();
    for n in (1..=words.len()).rev() {
        let probe = words[..n].join(" ");
        let hit = lines.iter().position(|l| {
            l.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .contains(&probe)
        });
        if let Some(i) = hit {
            return i + 1;
        }
    }
    lines
        .iter()
        .position(|l| l.to_ascii_lowercase().contains("out of memory"))
        .map_or(1, |i| i + 1)
}

/// Reads a message in either format; the traceback and any text around it may come along.
/// An error quotes the part it could not read and names its line.
pub fn parse(text: &str) -> Result<OomMessage, ParseError> {
    parse_flat(text).map_err(|mut e| {
        e.line = line_of(text, e.quoted.trim_end_matches('…'));
        e
    })
}

/// [`parse`] without the line numbers of its errors.
fn parse_flat(text: &str) -> Result<OomMessage, ParseError> {
    // Messages are often pasted wrapped: read them as one line.
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let Some(tail) = after(&flat, "out of memory") else {
        return Err(err(
            "a PyTorch CUDA out-of-memory message (\"CUDA out of memory. Tried to allocate …\")",
            text.lines().find(|l| !l.trim().is_empty()).unwrap_or(text),
        ));
    };
    let tried = after(tail, "Tried to allocate")
        .ok_or_else(|| err("\"Tried to allocate SIZE\" after \"out of memory\"", tail))?;
    let (requested, rest) = size(tried).ok_or_else(|| {
        err(
            "a size such as 6.14 GiB after \"Tried to allocate\"",
            &format!("Tried to allocate{tried}"),
        )
    })?;
    let rest = rest.trim_start();
    let mut m = if rest.starts_with('(') {
        parse_v1(requested, rest)?
    } else {
        parse_v2(requested, rest)?
    };
    (m.frames, m.code) = traceback(text);
    Ok(m)
}

/// `(GPU 0; 11.76 GiB total capacity; 8.91 GiB already allocated; 1.36 GiB free; 9.18 GiB
/// reserved in total by PyTorch)`.
fn parse_v1(requested: Size, rest: &str) -> Result<OomMessage, ParseError> {
    let inner = rest[1..].split(')').next().unwrap_or_default();
    let (mut capacity, mut allocated, mut free, mut reserved, mut gpu) =
        (None, None, None, None, None);
    for part in inner.split(';') {
        let part = part.trim();
        if let Some(n) = part.strip_prefix("GPU ") {
            gpu = n.trim().parse().ok();
            continue;
        }
        let (s, what) = size(part).ok_or_else(|| {
            err(
                "\"SIZE total capacity\", \"SIZE already allocated\", \"SIZE free\" or \"SIZE reserved in total by PyTorch\"",
                part,
            )
        })?;
        let what = what.trim();
        if what.starts_with("total capacity") {
            capacity = Some(s);
        } else if what.starts_with("already allocated") {
            allocated = Some(s);
        } else if what.starts_with("free") {
            free = Some(s);
        } else if what.starts_with("reserved") || what.starts_with("cached") {
            reserved = Some(s);
        }
    }
    let need = |v: Option<Size>, what: &str| {
        v.ok_or_else(|| err(&format!("\"SIZE {what}\" inside the parentheses"), rest))
    };
    let (capacity, allocated) = (
        need(capacity, "total capacity")?,
        need(allocated, "already allocated")?,
    );
    let free = need(free, "free")?;
    let reserved = reserved.unwrap_or(allocated);
    Ok(OomMessage {
        format: Format::Pytorch1,
        requested,
        gpu_index: gpu,
        capacity,
        free,
        process: None,
        allocated,
        reserved_unallocated: Size {
            bytes: reserved.bytes.saturating_sub(allocated.bytes),
            tolerance: reserved.tolerance + allocated.tolerance,
        },
        reserved,
        processes: Vec::new(),
        frames: Vec::new(),
        code: Vec::new(),
    })
}

/// `GPU 0 has a total capacity of … of which … is free. …`.
fn parse_v2(requested: Size, rest: &str) -> Result<OomMessage, ParseError> {
    let expected_gpu = "\"GPU N has a total capacity of SIZE of which SIZE is free\" (PyTorch 2) or \"(GPU N; SIZE total capacity; …)\" (PyTorch 1)";
    let gpu_at = after(rest, "GPU ").ok_or_else(|| err(expected_gpu, rest))?;
    let gpu_index = gpu_at
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok());
    let cap_text = after(gpu_at, "total capacity of").ok_or_else(|| err(expected_gpu, rest))?;
    let (capacity, r) =
        size(cap_text).ok_or_else(|| err("a size after \"total capacity of\"", cap_text))?;
    let free_text = after(r, "of which").ok_or_else(|| err("\"of which SIZE is free\"", r))?;
    let (free, r) = size(free_text).ok_or_else(|| err("a size after \"of which\"", free_text))?;
    let mut processes = Vec::new();
    let mut scan = r;
    while let Some(p) = after(scan, "Process ") {
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        let Ok(pid) = digits.parse() else {
            scan = p;
            continue;
        };
        let has = p[digits.len()..].trim_start();
        let Some(has) = has.strip_prefix("has") else {
            scan = p;
            continue;
        };
        let (s, r2) = size(has).ok_or_else(|| {
            err(
                "\"Process N has SIZE memory in use\"",
                &format!("Process {p}"),
            )
        })?;
        processes.push(ProcessLine {
            pid,
            bytes: s.bytes,
        });
        scan = r2;
    }
    let process = match after(r, "this process has") {
        Some(t) => Some(
            size(t)
                .ok_or_else(|| err("a size after \"this process has\"", t))?
                .0,
        ),
        None => None,
    };
    let alloc_text = after(r, "allocated memory").ok_or_else(|| {
        err(
            "\"Of the allocated memory SIZE is allocated by PyTorch, and SIZE is reserved by PyTorch but unallocated\"",
            r,
        )
    })?;
    let (allocated, r3) = size(alloc_text)
        .ok_or_else(|| err("a size after \"Of the allocated memory\"", alloc_text))?;
    let unalloc_text = after(r3, "and")
        .ok_or_else(|| err("\"and SIZE is reserved by PyTorch but unallocated\"", r3))?;
    let (reserved_unallocated, _) =
        size(unalloc_text).ok_or_else(|| err("a size after \"and\"", unalloc_text))?;
    Ok(OomMessage {
        format: Format::Pytorch2,
        requested,
        gpu_index,
        capacity,
        free,
        process,
        allocated,
        reserved: Size {
            bytes: allocated.bytes + reserved_unallocated.bytes,
            tolerance: allocated.tolerance + reserved_unallocated.tolerance,
        },
        reserved_unallocated,
        processes,
        frames: Vec::new(),
        code: Vec::new(),
    })
}

/// The traceback's frame names and quoted source lines, outermost first.
fn traceback(text: &str) -> (Vec<String>, Vec<String>) {
    let (mut frames, mut code) = (Vec::new(), Vec::new());
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("File \"") {
            if let Some((_, name)) = rest.rsplit_once(", in ") {
                frames.push(name.trim().to_owned());
                if let Some(next) = lines.peek() {
                    let n = next.trim();
                    if !n.is_empty() && !n.starts_with("File \"") && !n.starts_with('^') {
                        code.push(n.to_owned());
                    }
                }
            }
        }
    }
    (frames, code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_keep_their_rounding() {
        let (s, rest) = size("6.14 GiB (GPU").unwrap();
        assert_eq!(s.bytes, (6.14 * KIB * KIB * KIB).round() as u64);
        assert_eq!(s.tolerance, (0.005 * KIB * KIB * KIB).round() as u64);
        assert_eq!(rest, " (GPU");
        assert_eq!(size("512 bytes").unwrap().0.bytes, 512);
        assert!(size("lots GiB").is_none());
        assert!(size("1e400 GiB").is_none());
    }
}
