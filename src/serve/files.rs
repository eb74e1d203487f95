//! Mapping request URLs to files in the output folder, and files to content types.
//!
//! Only files under the output folder can be reached: every path segment must be a plain name
//! (no `..`, `.`, drive prefixes, backslashes or NUL bytes, after percent-decoding), hidden files
//! are not served, and the final path is checked again after resolving symbolic links.

use std::path::{Component, Path, PathBuf};

/// Where a request URL leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// Serve this file.
    File(PathBuf),
    /// A folder asked for without its trailing slash: redirect here so relative links work.
    Redirect(String),
    /// Nothing to serve.
    NotFound,
}

/// Resolves `url` (path and optional query, as sent by the client) against the folder `out`.
pub(crate) fn resolve(out: &Path, url: &str) -> Target {
    let (path, query) = match url.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (url, None),
    };
    let path = path.split('#').next().unwrap_or("");
    if !path.starts_with('/') {
        return Target::NotFound;
    }
    let Some(segments) = segments(path) else {
        return Target::NotFound;
    };
    let mut file = out.to_path_buf();
    file.extend(&segments);
    if file.is_dir() {
        if !path.ends_with('/') {
            let mut location = format!("{path}/");
            if let Some(q) = query {
                location.push('?');
                location.push_str(q);
            }
            return Target::Redirect(location);
        }
        file.push("index.html");
    }
    if !file.is_file() || !inside(out, &file) {
        return Target::NotFound;
    }
    Target::File(file)
}

/// The decoded, checked segments of a URL path, or `None` when any is unsafe.
fn segments(path: &str) -> Option<Vec<String>> {
    let decoded = percent_decode(path)?;
    let mut out = Vec::new();
    for seg in decoded.split('/') {
        if seg.is_empty() {
            continue;
        }
        if seg.starts_with('.') || seg.contains(['\\', '\0']) {
            return None;
        }
        let mut parts = Path::new(seg).components();
        if !matches!(
            (parts.next(), parts.next()),
            (Some(Component::Normal(_)), None)
        ) {
            return None;
        }
        out.push(seg.to_owned());
    }
    Some(out)
}

/// True when the path's `%XX` escapes are well formed and decode to UTF-8.
pub(crate) fn decodes(path: &str) -> bool {
    percent_decode(path).is_some()
}

/// Decodes `%XX` escapes; `None` for a malformed escape or bytes that are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// True when `file`, with links resolved, lies inside `out` (also with links resolved).
fn inside(out: &Path, file: &Path) -> bool {
    match (out.canonicalize(), file.canonicalize()) {
        (Ok(o), Ok(f)) => f.starts_with(o),
        _ => false,
    }
}

/// The `Content-Type` for a file, by extension; text types carry `charset=utf-8`.
pub(crate) fn content_type(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match ext.as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "json" => "application/json; charset=utf-8",
        "md" => "text/markdown; charset=utf-8",
        "svg" => "image/svg+xml; charset=utf-8",
        "xml" => "application/xml; charset=utf-8",
        "txt" => "text/plain; charset=utf-8",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
}

/// True for files that get the live-reload script.
pub(crate) fn is_html(path: &Path) -> bool {
    content_type(path).starts_with("text/html")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("public");
        std::fs::create_dir_all(out.join("en/guide")).unwrap();
        std::fs::write(out.join("index.html"), "root").unwrap();
        std::fs::write(out.join("en/guide/index.html"), "guide").unwrap();
        std::fs::write(out.join("en/guide/index.md"), "md").unwrap();
        std::fs::write(out.join(".vramdoc-build"), "marker").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "secret").unwrap();
        dir
    }

    #[test]
    fn folders_map_to_index_html_and_redirect_without_slash() {
        let dir = site();
        let out = dir.path().join("public");
        assert_eq!(resolve(&out, "/"), Target::File(out.join("index.html")));
        assert_eq!(
            resolve(&out, "/en/guide/"),
            Target::File(out.join("en/guide/index.html"))
        );
        assert_eq!(
            resolve(&out, "/en/guide/index.md?x=1"),
            Target::File(out.join("en/guide/index.md"))
        );
        assert_eq!(
            resolve(&out, "/en/guide?lang=es"),
            Target::Redirect("/en/guide/?lang=es".into())
        );
        assert_eq!(resolve(&out, "/en/nothing/"), Target::NotFound);
        assert_eq!(
            resolve(&out, "/en/"),
            Target::NotFound,
            "folder without index"
        );
    }

    #[test]
    fn nothing_outside_the_output_folder_or_hidden_is_served() {
        let dir = site();
        let out = dir.path().join("public");
        for url in [
            "/../secret.txt",
            "/en/../../secret.txt",
            "/%2e%2e/secret.txt",
            "/%2E%2E%2Fsecret.txt",
            "/en/..%2f..%2fsecret.txt",
            "/..\\secret.txt",
            "/%5c..%5csecret.txt",
            "/.vramdoc-build",
            "/./index.html",
            "/index.html%00",
            "/%zz",
            "/%ff",
            "secret.txt",
            "//secret.txt/..",
        ] {
            assert_eq!(resolve(&out, url), Target::NotFound, "{url}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_link_pointing_outside_is_not_followed() {
        let dir = site();
        let out = dir.path().join("public");
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), out.join("leak.txt")).unwrap();
        assert_eq!(resolve(&out, "/leak.txt"), Target::NotFound);
    }

    #[test]
    fn content_types_by_extension() {
        for (name, ty) in [
            ("a.html", "text/html; charset=utf-8"),
            ("a.CSS", "text/css; charset=utf-8"),
            ("chart.svg", "image/svg+xml; charset=utf-8"),
            ("index.md", "text/markdown; charset=utf-8"),
            ("sitemap.xml", "application/xml; charset=utf-8"),
            ("x.png", "image/png"),
            ("noext", "application/octet-stream"),
        ] {
            assert_eq!(content_type(Path::new(name)), ty, "{name}");
        }
        assert!(is_html(Path::new("x/index.html")));
        assert!(!is_html(Path::new("x/index.md")));
    }
}
