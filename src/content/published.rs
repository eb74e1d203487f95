//! Characters that published text may not hold: the C0 control characters other than tab and
//! newline, DEL, and the non-characters U+FFFE and U+FFFF. XML 1.0 forbids all but DEL, so one
//! of them in a title, description, variant label, site title or GPU name made `atom.xml` and
//! every SVG chart of the guide unreadable; in HTML and `llms.txt` they are invisible at best
//! and terminal escapes at worst. Every such text is refused at its line.

/// The first character of `text` that may not be published, with its 1-based position in
/// characters.
pub(crate) fn forbidden_char(text: &str) -> Option<(usize, char)> {
    text.chars()
        .enumerate()
        .find(|(_, c)| is_forbidden(*c))
        .map(|(i, c)| (i + 1, c))
}

/// True for a character that may not be published (see the module's doc).
pub(crate) fn is_forbidden(c: char) -> bool {
    (c.is_ascii_control() && c != '\t' && c != '\n') || c == '\u{FFFE}' || c == '\u{FFFF}'
}

/// The error message for `what` (e.g. "`title`") holding the character `c` at character `at`,
/// or `None` when `text` is clean.
pub(crate) fn refusal(what: &str, text: &str) -> Option<String> {
    forbidden_char(text).map(|(at, c)| {
        format!(
            "{what} contains the control character U+{:04X} (character {at}), which XML feeds, SVG charts and HTML cannot carry",
            c as u32
        )
    })
}

/// What to do about it.
pub(crate) const HELP: &str =
    "remove it (in a double-quoted YAML string, escapes such as \\a, \\x07 or \\u0007 write one)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tab_and_newline_pass_other_controls_do_not() {
        assert_eq!(forbidden_char("a\tb\nc"), None);
        assert_eq!(forbidden_char("ab\u{7}"), Some((3, '\u{7}')));
        assert_eq!(forbidden_char("\r"), Some((1, '\r')));
        assert_eq!(forbidden_char("x\u{7f}"), Some((2, '\u{7f}')));
        assert_eq!(forbidden_char("\u{FFFF}"), Some((1, '\u{FFFF}')));
        assert_eq!(forbidden_char("显存 ü"), None);
        assert!(refusal("`title`", "a\u{0}").unwrap().contains("U+0000"));
    }
}
