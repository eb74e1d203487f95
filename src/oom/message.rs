//! Reads a PyTorch out-of-memory message (with or without its traceback, alone or inside a long
//! log) into numbers with the meaning the printing PyTorch gave them.
//!
//! The formats themselves (1.x parentheses, 2.x sentences, MPS) and the version ranges that print
//! them are in [`super::formats`]. This module prepares the text and picks the message:
//! - line prefixes that launchers and loggers add (`[rank0]:`, `[default0]:`, a timestamp with a
//!   level) are removed from every line, and the lines are joined (messages are pasted wrapped);
//! - the text is lowercased once, so every lookup is a search from a position: reading is
//!   linear in the size of the text, however many messages or `Process N has` lines it holds;
//! - with several out-of-memory messages, the last is read and the others counted.
//!
//! Sizes are printed by PyTorch's `format_size`: bytes, KiB, MiB or GiB with two decimals (MPS
//! prints KB, MB and GB for the same binary units), so each parsed size keeps its rounding.

use serde::Serialize;

pub(crate) use super::formats::{Hint, MessageFormat, VersionRange};

/// A size read from the message: the bytes it stands for and half its last printed digit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct PrintedSize {
    /// The printed value in bytes.
    pub(crate) bytes: u64,
    /// Half of the last printed digit, in bytes ("6.14 GiB": 0.005 GiB).
    pub(crate) tolerance: u64,
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
    pub(crate) format: MessageFormat,
    /// The PyTorch versions that print this format, and the allocator settings they have.
    pub(crate) versions: VersionRange,
    /// The allocator setting the message itself suggests, if it prints one.
    pub(crate) hint: Option<Hint>,
    /// `expandable_segments:True` is set somewhere in the text other than the message's own hint
    /// (an `export PYTORCH_CUDA_ALLOC_CONF=…` line, a printed environment).
    pub(crate) expandable_segments_on: bool,
    /// The allocation that failed.
    pub(crate) requested: PrintedSize,
    /// The GPU index, if printed.
    pub(crate) gpu_index: Option<u64>,
    /// The card's total capacity (MPS: the "max allowed" limit).
    pub(crate) capacity: PrintedSize,
    /// Free memory on the card when the allocation failed, if printed.
    pub(crate) free: Option<PrintedSize>,
    /// Everything this process held, PyTorch's and not (2.x with NVML only; MPS: PyTorch's plus
    /// its other allocations).
    pub(crate) process: Option<PrintedSize>,
    /// Memory in tensors allocated by PyTorch.
    pub(crate) allocated: PrintedSize,
    /// Reserved by PyTorch's caching allocator but not in tensors (2.x; 1.3 and older print it
    /// as `cached`; 1.4 to 2.0: reserved − allocated).
    pub(crate) reserved_unallocated: PrintedSize,
    /// Reserved by PyTorch in total (1.4 to 2.0 print it; else allocated + reserved-unallocated).
    pub(crate) reserved: PrintedSize,
    /// Allocated in private pools (CUDA graphs), when the message prints it.
    pub(crate) private_pools: Option<PrintedSize>,
    /// Processes the message lists, in order.
    pub(crate) processes: Vec<ProcessLine>,
    /// How many out-of-memory messages the text holds (this one is the last).
    pub(crate) messages_in_text: usize,
    /// Whether the traceback's paths are Windows paths (`C:\…`): capacities print differently
    /// under the Windows display driver model.
    pub(crate) windows: bool,
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
    /// No allocator message at all (the text may still be another kind of memory error).
    pub(crate) no_message: bool,
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

/// Reads a size such as `6.14 GiB`, `106.52 MiB`, `512 bytes` or MPS's `1.23 GB` at the start
/// of `text`; returns it and the rest of the text.
pub(crate) fn size(text: &str) -> Option<(PrintedSize, &str)> {
    let t = text.trim_start();
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let number = &t[..end];
    if number.len() > 40 {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    let decimals = number.split_once('.').map_or(0, |(_, f)| f.len()) as i32;
    let rest = t[end..].trim_start();
    // MPS's format_size prints binary sizes with decimal names (KB = 1024 bytes).
    let (scale, unit_len) = [
        ("bytes", 1.0),
        ("KiB", KIB),
        ("MiB", KIB * KIB),
        ("GiB", KIB * KIB * KIB),
        ("TiB", KIB * KIB * KIB * KIB),
        ("KB", KIB),
        ("MB", KIB * KIB),
        ("GB", KIB * KIB * KIB),
        ("B", 1.0),
    ]
    .iter()
    .find(|(u, _)| rest.starts_with(u))
    .map(|(u, s)| (*s, u.len()))?;
    let bytes = (value * scale).round();
    if !(0.0..9.0e18).contains(&bytes) {
        return None;
    }
    let tolerance = (scale * 0.5 * 10f64.powi(-decimals.min(30))).round() as u64;
    Some((
        PrintedSize {
            bytes: bytes as u64,
            tolerance,
        },
        &rest[unit_len..],
    ))
}

/// The message text, flattened to one line, with an ASCII-lowercased copy of the same byte
/// offsets: every lookup is a search in `lower` from a position, never a new lowercasing.
pub(crate) struct Text<'a> {
    /// The flattened text.
    pub(crate) flat: &'a str,
    /// `flat`, ASCII-lowercased (same length, same offsets).
    pub(crate) lower: &'a str,
}

impl Text<'_> {
    /// The offset just after the first `needle` (lowercase) at or after `from`, before `until`.
    pub(crate) fn after(&self, from: usize, until: usize, needle: &str) -> Option<usize> {
        self.find(from, until, needle).map(|i| i + needle.len())
    }

    /// The offset of the first `needle` (lowercase) at or after `from`, before `until`.
    pub(crate) fn find(&self, from: usize, until: usize, needle: &str) -> Option<usize> {
        let mut until = until.min(self.lower.len());
        while !self.lower.is_char_boundary(until) {
            until -= 1;
        }
        let hay = self.lower.get(from..until)?;
        hay.find(needle).map(|i| from + i)
    }

    /// A size at `at`, and the offset after it.
    pub(crate) fn size_at(&self, at: usize) -> Option<(PrintedSize, usize)> {
        let rest = self.flat.get(at..)?;
        size(rest).map(|(s, r)| (s, self.flat.len() - r.len()))
    }

    /// The text from `at`, for an error's quote.
    pub(crate) fn from(&self, at: usize) -> &str {
        self.flat.get(at..).unwrap_or_default()
    }
}

/// At most 160 characters of `text` from its start, on one line, for an error's quote.
pub(crate) fn quote(text: &str) -> String {
    let head: String = text.chars().take(400).collect();
    let one_line: String = head.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(160) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

/// A parse error expecting `expected`, quoting `text` (its line is set by [`parse`]).
pub(crate) fn err(expected: &str, text: &str) -> ParseError {
    ParseError {
        expected: expected.to_owned(),
        quoted: quote(text),
        line: 1,
        no_message: false,
    }
}

/// Removes the prefixes launchers and loggers put before a line: `[rank3]:`, `[default0]:`,
/// `rank3:`, and a leading timestamp (`2024-05-01 12:00:00,123`) with what follows it up to a
/// level name (`- ERROR -`, `[ERROR]`, `ERROR:`).
pub(crate) fn strip_prefixes(line: &str) -> &str {
    let mut t = line.trim_start();
    loop {
        let before = t.len();
        for open in ["[rank", "[default", "rank"] {
            if let Some(rest) = t.strip_prefix(open) {
                let digits =
                    rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                let tail = &rest[digits..];
                let close = if open.starts_with('[') { "]:" } else { ":" };
                if digits > 0 {
                    if let Some(after) = tail.strip_prefix(close) {
                        t = after.trim_start();
                    }
                }
            }
        }
        t = strip_timestamp(t);
        if t.len() == before {
            return t;
        }
    }
}

/// A leading `YYYY-MM-DD HH:MM:SS[,mmm]` and the logger's fields up to its level name.
fn strip_timestamp(t: &str) -> &str {
    let b = t.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|s| s.iter().all(u8::is_ascii_digit));
    let dated = digits(0..4) && b.get(4) == Some(&b'-') && digits(5..7) && b.get(7) == Some(&b'-');
    if !dated || !digits(8..10) {
        return t;
    }
    for level in ["ERROR", "CRITICAL", "WARNING", "INFO"] {
        if let Some(i) = t.get(..t.len().min(120)).and_then(|h| h.find(level)) {
            let rest = &t[i + level.len()..];
            return rest
                .trim_start_matches([' ', '-', ':', ']', '|'])
                .trim_start();
        }
    }
    t
}

/// The line of `lines` where `quoted` (whitespace-flattened) starts: the first line that holds
/// its first words; else the line that says "out of memory"; else 1.
fn line_of(lines: &[&str], quoted: &str) -> usize {
    let words: Vec<&str> = quoted.split_whitespace().take(3).collect();
    let flat: Vec<String> = lines
        .iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    for n in (1..=words.len()).rev() {
        let probe = words[..n].join(" ");
        if let Some(i) = flat.iter().rposition(|l| l.contains(&probe)) {
            return i + 1;
        }
    }
    lines
        .iter()
        .rposition(|l| l.to_ascii_lowercase().contains("out of memory"))
        .map_or(1, |i| i + 1)
}

/// The flattened text and, for each line, the offset in it where the line starts.
struct Flattened {
    flat: String,
    starts: Vec<usize>,
}

/// Strips each line's prefixes and joins the words with single spaces.
fn flatten(lines: &[&str]) -> Flattened {
    let mut flat = String::new();
    let mut starts = Vec::with_capacity(lines.len());
    for line in lines {
        starts.push(flat.len());
        for word in strip_prefixes(line).split_whitespace() {
            if !flat.is_empty() {
                flat.push(' ');
            }
            flat.push_str(word);
        }
    }
    Flattened { flat, starts }
}

/// Where each allocator out-of-memory message starts in `lower`: `out of memory. tried to
/// allocate` (CUDA, every version) and `mps backend out of memory`.
fn message_starts(lower: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    for (i, _) in lower.match_indices("out of memory") {
        let tail = &lower.as_bytes()[i + "out of memory".len()..];
        let skip = tail
            .iter()
            .take(8)
            .take_while(|b| matches!(b, b'.' | b' ' | b':'))
            .count();
        let cuda = tail[skip..].starts_with(b"tried");
        let mps = lower[..i].ends_with("mps backend ");
        if cuda || mps {
            starts.push(i);
        }
    }
    starts
}

/// Reads the last out-of-memory message of `text` in any format; the traceback and any text
/// around it may come along. An error quotes the part it could not read and names its line.
pub fn parse(text: &str) -> Result<OomMessage, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let Flattened { flat, starts } = flatten(&lines);
    let lower = flat.to_ascii_lowercase();
    let t = Text {
        flat: &flat,
        lower: &lower,
    };
    let found = message_starts(&lower);
    let Some(&at) = found.last() else {
        let first = lines.iter().find(|l| !l.trim().is_empty()).unwrap_or(&text);
        let mut e = match lower.find("out of memory") {
            Some(i) => err(
                "\"Tried to allocate SIZE\" after \"out of memory\"",
                t.from(i + "out of memory".len()),
            ),
            None => err(
                "a PyTorch out-of-memory message (\"CUDA out of memory. Tried to allocate …\")",
                first,
            ),
        };
        e.no_message = true;
        e.line = line_of(&lines, e.quoted.trim_end_matches('…'));
        return Err(e);
    };
    let line_at = |offset: usize| starts.partition_point(|&s| s <= offset).max(1) - 1;
    let mut m = super::formats::read(&t, at).map_err(|mut e| {
        let from = line_at(at);
        e.line = from + line_of(&lines[from..], e.quoted.trim_end_matches('…'));
        e
    })?;
    m.messages_in_text = found.len();
    m.expandable_segments_on = setting_on(&lower, "expandable_segments:true")
        > lower
            .matches("alloc_conf=expandable_segments:true to avoid")
            .count();
    // The traceback of this message: the lines after the previous message, up to this one's.
    let last_line = line_at(at);
    let first_line = match found.len() {
        n if n >= 2 => line_at(found[n - 2]) + 1,
        _ => 0,
    };
    let own = &lines[first_line.min(last_line)..=last_line];
    (m.frames, m.code) = traceback(own);
    m.windows = own.iter().any(|l| windows_path(l));
    Ok(m)
}

/// How many times `setting` (lowercase) occurs in `lower`.
fn setting_on(lower: &str, setting: &str) -> usize {
    lower.matches(setting).count()
}

/// Whether a traceback line names a Windows path: `File "C:\…"` or a `\site-packages\`.
fn windows_path(line: &str) -> bool {
    let Some(i) = line.find("File \"") else {
        return false;
    };
    let path = &line[i + 6..];
    let b = path.as_bytes();
    (b.len() > 2 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b[2] == b'\\' || b[2] == b'/'))
        || path.contains("\\site-packages\\")
}

/// The traceback's frame names and quoted source lines, outermost first. Prefixes before `File`
/// (a rank, a timestamp) are ignored.
fn traceback(lines: &[&str]) -> (Vec<String>, Vec<String>) {
    let (mut frames, mut code) = (Vec::new(), Vec::new());
    let mut it = lines.iter().map(|l| strip_prefixes(l)).peekable();
    while let Some(t) = it.next() {
        let Some(at) = t.find("File \"") else {
            continue;
        };
        if let Some((_, name)) = t[at..].rsplit_once(", in ") {
            frames.push(name.trim().to_owned());
            if let Some(next) = it.peek() {
                let n = next.trim();
                if !n.is_empty() && !n.contains("File \"") && !n.starts_with('^') {
                    code.push(n.to_owned());
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
        assert_eq!(size("1.50 GB").unwrap().0.bytes, 3 << 29);
        assert!(size("lots GiB").is_none());
        assert!(size("1e400 GiB").is_none());
    }

    #[test]
    fn prefixes_are_stripped() {
        assert_eq!(
            strip_prefixes("[rank3]: torch.OutOfMemoryError"),
            "torch.OutOfMemoryError"
        );
        assert_eq!(strip_prefixes("[rank0]:[default1]: x"), "x");
        assert_eq!(
            strip_prefixes("2024-05-01 12:00:00,123 - trainer - ERROR - CUDA out of memory."),
            "CUDA out of memory."
        );
        assert_eq!(strip_prefixes("  File \"a.py\""), "File \"a.py\"");
        assert_eq!(strip_prefixes("[rankless]: x"), "[rankless]: x");
    }
}
