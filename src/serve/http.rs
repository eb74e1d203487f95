//! Answering one HTTP request: the output folder's files (HTML with the reload script added),
//! the `/__vramdoc/` endpoints, redirects for folders, and a 404 page.

use std::path::Path;
use std::sync::PoisonError;

use super::files::{self, Target};
use super::server::{HttpRequest, Reply};
use super::{inject, Shared};

/// The prefix of the server's own endpoints.
const PREFIX: &str = "/__vramdoc/";

/// What to do with a request.
#[derive(Debug)]
pub(crate) enum Answer {
    /// Send this.
    Reply(Reply),
    /// Turn the connection into the server-sent-event stream.
    Events,
}

/// Decides the answer to `request`.
pub(crate) fn route(request: &HttpRequest, shared: &Shared) -> Answer {
    if let Some(host) = &request.host {
        if !is_local_host(host, shared.port) {
            return Answer::Reply(text(
                403,
                "text/plain; charset=utf-8",
                "vramdoc serve answers only requests for 127.0.0.1, localhost or [::1]\n",
            ));
        }
    }
    if request.method != "GET" && request.method != "HEAD" {
        let reply = text(
            405,
            "text/plain; charset=utf-8",
            "only GET and HEAD are served\n",
        );
        return Answer::Reply(reply.with("Allow", "GET, HEAD".into()));
    }
    let url = request.target.as_str();
    let path = url.split(['?', '#']).next().unwrap_or("");
    if !files::decodes(path) {
        return Answer::Reply(text(
            400,
            "text/plain; charset=utf-8",
            "the path's %-escapes are malformed or not UTF-8\n",
        ));
    }
    let Some(endpoint) = path.strip_prefix(PREFIX) else {
        return Answer::Reply(serve_file(shared, url));
    };
    Answer::Reply(match endpoint {
        "events" if request.method == "GET" => return Answer::Events,
        "status" => text(
            200,
            "application/json; charset=utf-8",
            &shared.state.snapshot().to_json(),
        ),
        "reload.js" => text(200, "text/javascript; charset=utf-8", inject::SCRIPT),
        _ => not_found(shared, url),
    })
}

/// The file for `url`, read while no build is replacing the output.
fn serve_file(shared: &Shared, url: &str) -> Reply {
    let _reading = shared.output.read().unwrap_or_else(PoisonError::into_inner);
    match files::resolve(&shared.out, url) {
        Target::File(path) => match std::fs::read(&path) {
            Ok(bytes) => file_reply(shared, &path, bytes),
            Err(_) => not_found(shared, url),
        },
        Target::Redirect(location) => {
            text(301, "text/plain; charset=utf-8", "").with("Location", ascii_url(&location))
        }
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
    Reply::new(200, ty, body)
}

/// The site's own not-found page if it has one (`<lang>/404.html` under a language folder, else
/// `404.html`), else a small page; all get the reload script, so a tab left on a missing page
/// reloads once a build creates it.
fn not_found(shared: &Shared, url: &str) -> Reply {
    shared
        .look_for_missing
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let first = url
        .trim_start_matches('/')
        .split(['/', '?', '#'])
        .next()
        .unwrap_or("");
    let own = [format!("{first}/404.html"), "404.html".to_string()]
        .into_iter()
        .filter(|p| !first.is_empty() || p == "404.html")
        .filter(|p| !p.contains("..") && !p.starts_with('/'))
        .find_map(|p| std::fs::read_to_string(shared.out.join(p)).ok());
    let page = own.unwrap_or_else(|| {
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

/// True when a `Host` header names this machine's loopback (`127.0.0.1`, `localhost` or
/// `[::1]`), with `port` or no port. Any other name is refused, as Vite's and webpack's dev
/// servers do: a page on another site whose name was re-pointed at 127.0.0.1 (DNS rebinding)
/// sends its own name, and must not read the preview.
fn is_local_host(host: &str, port: u16) -> bool {
    let (name, given_port) = match host.rsplit_once(':') {
        Some((name, p)) if !name.is_empty() && !p.contains(']') => (name, Some(p)),
        _ => (host, None),
    };
    let name_ok = name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1" || name == "[::1]";
    name_ok && given_port.is_none_or(|p| p.parse::<u16>() == Ok(port))
}

fn text(code: u16, ty: &str, body: &str) -> Reply {
    Reply::new(code, ty, body.as_bytes().to_vec())
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

/// Text escaped for HTML element content and attribute values (the site's one escaper).
fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    crate::markdown::escape_html(&mut out, s);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_hosts_on_this_port_are_local() {
        for ok in [
            "127.0.0.1:1111",
            "localhost:1111",
            "LOCALHOST:1111",
            "[::1]:1111",
            "127.0.0.1",
            "localhost",
            "[::1]",
        ] {
            assert!(is_local_host(ok, 1111), "{ok}");
        }
        for bad in [
            "evil.example:1111",
            "127.0.0.1:2222",
            "localhost.evil.example:1111",
            "127.0.0.1.nip.io:1111",
            "[::1]:",
            "::1",
            "",
            ":1111",
            "0.0.0.0:1111",
        ] {
            assert!(!is_local_host(bad, 1111), "{bad}");
        }
    }

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
