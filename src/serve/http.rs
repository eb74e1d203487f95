//! Answering one HTTP request: the output folder's files (HTML with the reload script added),
//! the `/__vramdoc/` endpoints, redirects for folders, and a 404 page.

use std::path::Path;
use std::sync::{Arc, PoisonError};

use tiny_http::{Header, Method, Request, Response, StatusCode};

use super::files::{self, Target};
use super::{events, inject, Shared};

/// The prefix of the server's own endpoints.
const PREFIX: &str = "/__vramdoc/";

type Reply = Response<std::io::Cursor<Vec<u8>>>;

/// Answers `request`; failures to write the answer (a closed connection) are ignored.
pub(crate) fn handle(request: Request, shared: &Arc<Shared>) {
    if !matches!(request.method(), Method::Get | Method::Head) {
        let reply = text(
            405,
            "text/plain; charset=utf-8",
            "only GET and HEAD are served\n",
        );
        let reply = add(reply, "Allow", "GET, HEAD");
        let _ = request.respond(reply);
        return;
    }
    let url = request.url().to_owned();
    let path = url.split(['?', '#']).next().unwrap_or("");
    if let Some(endpoint) = path.strip_prefix(PREFIX) {
        match endpoint {
            "events" => events::stream(request, shared.clone()),
            "status" => {
                let json = shared.state.snapshot().to_json();
                let _ = request.respond(text(200, "application/json; charset=utf-8", &json));
            }
            "reload.js" => {
                let _ =
                    request.respond(text(200, "text/javascript; charset=utf-8", inject::SCRIPT));
            }
            _ => {
                let _ = request.respond(not_found(shared, &url));
            }
        }
        return;
    }
    let _ = request.respond(serve_file(shared, &url));
}

/// The file for `url`, read while no build is replacing the output.
fn serve_file(shared: &Shared, url: &str) -> Reply {
    let _reading = shared.output.read().unwrap_or_else(PoisonError::into_inner);
    match files::resolve(&shared.out, url) {
        Target::File(path) => match std::fs::read(&path) {
            Ok(bytes) => file_reply(shared, &path, bytes),
            Err(_) => not_found(shared, url),
        },
        Target::Redirect(location) => add(
            text(301, "text/plain; charset=utf-8", ""),
            "Location",
            &ascii_url(&location),
        ),
        Target::NotFound => not_found(shared, url),
    }
}

fn file_reply(shared: &Shared, path: &Path, bytes: Vec<u8>) -> Reply {
    let ty = files::content_type(path);
    let body = if files::is_html(path) {
        let html = String::from_utf8_lossy(&bytes);
        inject::inject(&html, shared.state.snapshot().version).into_bytes()
    } else {
        bytes
    };
    let reply = add(Response::from_data(body), "Content-Type", ty);
    add(reply, "Cache-Control", "no-store")
}

/// The site's own `404.html` if it has one, else a small page; both get the reload script, so
/// a tab left on a missing page reloads once a build creates it.
fn not_found(shared: &Shared, url: &str) -> Reply {
    let page = std::fs::read_to_string(shared.out.join("404.html")).unwrap_or_else(|_| {
        let shown = escape_html(url.split('?').next().unwrap_or(""));
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>Not found</title></head>\n\
             <body>\n<h1>404: nothing at <code>{shown}</code></h1>\n\
             <p>vramdoc serve has no file here in {}. <a href=\"/\">Go to the site's root</a>.</p>\n</body>\n</html>\n",
            escape_html(&shared.out.display().to_string())
        )
    });
    let html = inject::inject(&page, shared.state.snapshot().version);
    text(404, "text/html; charset=utf-8", &html)
}

fn text(code: u16, ty: &str, body: &str) -> Reply {
    let reply = Response::from_data(body.as_bytes().to_vec()).with_status_code(StatusCode(code));
    let reply = add(reply, "Content-Type", ty);
    add(reply, "Cache-Control", "no-store")
}

/// `reply` with the header added; every caller passes ASCII, which is always valid.
fn add(reply: Reply, name: &str, value: &str) -> Reply {
    match Header::from_bytes(name.as_bytes(), value.as_bytes()) {
        Ok(h) => reply.with_header(h),
        Err(()) => reply,
    }
}

/// `url` with every byte outside printable ASCII percent-encoded (for a `Location` header).
fn ascii_url(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    for b in url.bytes() {
        if b.is_ascii_graphic() {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Escapes text for HTML element content and attribute values.
fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_urls_are_ascii_and_html_is_escaped() {
        assert_eq!(ascii_url("/zh/显存/"), "/zh/%E6%98%BE%E5%AD%98/");
        assert_eq!(ascii_url("/a b/"), "/a%20b/");
        assert_eq!(
            escape_html("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
    }
}
