//! Detection of emphasis markers that CommonMark left as literal text.

/// Elements whose text is code or not prose: markers inside them are intended.
const SKIPPED_ELEMENTS: &[&str] = &["code", "pre", "kbd", "samp", "script", "style"];
/// Characters of context kept on each side of a marker in a reported snippet.
const CONTEXT_CHARS: usize = 12;

/// Snippets of rendered `html` where a literal `**` or `__` survived in text outside code.
pub(crate) fn stray_emphasis_markers(html: &str) -> Vec<String> {
    let mut snippets = Vec::new();
    let mut skip_depth = 0usize;
    let mut rest = html;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |end| &after[end + 3..]);
        } else if rest.starts_with('<') {
            let end = rest.find('>').map_or(rest.len(), |i| i + 1);
            track_skipped(&rest[..end], &mut skip_depth);
            rest = &rest[end..];
        } else {
            let end = rest.find('<').unwrap_or(rest.len());
            if skip_depth == 0 {
                collect_markers(&rest[..end], &mut snippets);
            }
            rest = &rest[end..];
        }
    }
    snippets
}

/// Updates the nesting depth of skipped elements for one tag like `<code class="x">` or `</pre>`.
fn track_skipped(tag: &str, depth: &mut usize) {
    let inner = tag.trim_start_matches('<');
    let (closing, inner) = match inner.strip_prefix('/') {
        Some(rest) => (true, rest),
        None => (false, inner),
    };
    let name_end = inner
        .find(|c: char| c.is_ascii_whitespace() || c == '>' || c == '/')
        .unwrap_or(inner.len());
    let name = &inner[..name_end];
    if !SKIPPED_ELEMENTS
        .iter()
        .any(|s| s.eq_ignore_ascii_case(name))
    {
        return;
    }
    if closing {
        *depth = depth.saturating_sub(1);
    } else if !tag.ends_with("/>") {
        *depth += 1;
    }
}

/// Adds one snippet per cluster of markers in `text` (markers whose context windows overlap
/// are reported together).
fn collect_markers(text: &str, snippets: &mut Vec<String>) {
    if !text.contains("**") && !text.contains("__") {
        return;
    }
    let chars: Vec<char> = text.chars().collect();
    let mut window: Option<(usize, usize)> = None;
    let mut i = 0;
    while i + 1 < chars.len() {
        let c = chars[i];
        if (c == '*' || c == '_') && chars[i + 1] == c {
            let start = i.saturating_sub(CONTEXT_CHARS);
            let end = (i + 2 + CONTEXT_CHARS).min(chars.len());
            window = match window {
                Some((s, e)) if start <= e => Some((s, end)),
                Some((s, e)) => {
                    snippets.push(snippet(&chars, s, e));
                    Some((start, end))
                }
                None => Some((start, end)),
            };
            i += 2;
        } else {
            i += 1;
        }
    }
    if let Some((s, e)) = window {
        snippets.push(snippet(&chars, s, e));
    }
}

fn snippet(chars: &[char], start: usize, end: usize) -> String {
    chars[start..end]
        .iter()
        .collect::<String>()
        .trim()
        .to_owned()
}
