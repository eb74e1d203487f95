//! HTML escaping for text and attribute values.

/// Appends `text` with `&`, `<`, `>`, `"` and `'` escaped (safe in text and quoted attributes).
pub(crate) fn escape_html(out: &mut String, text: &str) {
    let mut last = 0;
    for (i, byte) in text.bytes().enumerate() {
        let replacement = match byte {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&#39;",
            _ => continue,
        };
        out.push_str(&text[last..i]);
        out.push_str(replacement);
        last = i + 1;
    }
    out.push_str(&text[last..]);
}
