//! The live-reload script and its injection into served HTML (never into the files on disk).

/// The path the script is served at.
pub(crate) const SCRIPT_PATH: &str = "/__vramdoc/reload.js";

/// The script's source.
pub(crate) const SCRIPT: &str = include_str!("reload.js");

/// `html` with a `<script>` tag that loads the reload script, placed before the last `</body>`
/// (or at the end when there is none). `version` is the build the page belongs to.
pub(crate) fn inject(html: &str, version: u64) -> String {
    let tag = format!("<script src=\"{SCRIPT_PATH}\" data-version=\"{version}\"></script>\n");
    let at = rfind_ascii_ci(html, "</body>").unwrap_or(html.len());
    let mut out = String::with_capacity(html.len() + tag.len());
    out.push_str(&html[..at]);
    out.push_str(&tag);
    out.push_str(&html[at..]);
    out
}

/// The byte offset of the last ASCII-case-insensitive occurrence of `needle` (ASCII) in `hay`.
fn rfind_ascii_ci(hay: &str, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.len() > h.len() {
        return None;
    }
    (0..=h.len() - n.len())
        .rev()
        .find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goes_before_the_last_closing_body_tag() {
        let html = "<html><body><p>x</body>\n<!-- </BODY> -->\n</BODY></html>";
        let out = inject(html, 7);
        let tag = "<script src=\"/__vramdoc/reload.js\" data-version=\"7\"></script>\n";
        assert_eq!(
            out,
            format!("<html><body><p>x</body>\n<!-- </BODY> -->\n{tag}</BODY></html>")
        );
    }

    #[test]
    fn appended_when_there_is_no_body_tag() {
        let out = inject("<p>héllo", 1);
        assert!(out.starts_with("<p>héllo<script src="), "{out}");
    }

    #[test]
    fn script_escapes_error_text_and_uses_events() {
        assert!(SCRIPT.contains("/__vramdoc/events"));
        assert!(SCRIPT.contains("&lt;"));
        assert!(SCRIPT.contains("location.reload()"));
    }
}
