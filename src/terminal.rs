//! Everything vramdoc prints to a terminal goes through here, so text from a user's files (a GPU
//! name from `--catalog`, a config's `dataset = '\x1b]0;TITLE\x07'`, a line of an OOM message)
//! can neither send escape sequences (retitle the terminal, move the cursor, recolor) nor forge
//! lines of the report. Control characters become the visible symbols Unicode reserves for them
//! (U+2400 to U+2421, as error snippets already show them): `\x1b` prints as `␛`.

use std::borrow::Cow;
use std::io::Write;

/// Whether `c` must not reach a terminal raw: C0 controls, DEL and the C1 controls (U+0080 to
/// U+009F; U+009B is a CSI on terminals that read 8-bit controls). `keep_newlines` leaves `\n`
/// and `\t` as they are, for text made of lines.
fn hidden(c: char, keep_newlines: bool) -> bool {
    if keep_newlines && (c == '\n' || c == '\t') {
        return false;
    }
    c.is_control()
}

/// The visible stand-in of a control character.
fn picture(c: char, out: &mut String) {
    match c {
        '\0'..='\x1f' => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}')),
        '\x7f' => out.push('\u{2421}'),
        _ => out.push_str(&format!("<U+{:04X}>", c as u32)),
    }
}

fn escape(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| hidden(c, keep_newlines)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if hidden(c, keep_newlines) {
            picture(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` with every control character but newline and tab made visible: for whole reports.
pub fn visible(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// `text` with every control character made visible, newlines and tabs included: for a value
/// printed inside one line (a name, a note), which must stay one line.
pub fn visible_line(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// Prints `text` to stdout as it is, control characters but newline and tab made visible.
pub fn print_out(text: &str) {
    let mut out = std::io::stdout().lock();
    // A closed pipe (`vramdoc estimate ... | head`) is not an error worth a panic.
    let _ = out.write_all(visible(text).as_bytes());
}

/// Prints `text` and a newline to stderr, control characters but newline and tab made visible.
pub fn eprint_line(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", visible(text));
}

/// Prints a one-line note to stderr (`note: ...`): any newline in it is made visible too.
pub fn eprint_note(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "note: {}", visible_line(text));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_become_pictures_and_lines_stay_lines() {
        let s = "a\x1b]0;T\x07\nFAKE\tx\x7f\u{9b}é";
        assert_eq!(visible(s), "a␛]0;T␇\nFAKE\tx␡<U+009B>é");
        assert_eq!(visible_line(s), "a␛]0;T␇␊FAKE␉x␡<U+009B>é");
        assert!(matches!(visible("plain ünïcode"), Cow::Borrowed(_)));
    }
}
