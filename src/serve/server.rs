//! The HTTP/1.1 listener: one short-lived thread per connection, one request per connection
//! (`Connection: close`), GET and HEAD only, bounded request heads and timeouts.
//!
//! Written on `std::net` because a preview server needs little, and a pool that parks keep-alive
//! connections can starve a browser's later requests (seen with tiny_http 0.12's task pool:
//! a page's script request stayed unread). Closing after each answer keeps every thread brief,
//! except the event streams, which are counted and bounded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{http, Shared};

/// Connections served at once; more are answered 503 at once.
const MAX_CONNECTIONS: usize = 256;

/// The longest request head read (request line plus headers).
const MAX_HEAD: usize = 16 * 1024;

/// How long a client may take to send its whole request head, however it trickles in (a
/// per-read timeout alone let a client sending a byte a second hold a connection for ever), and
/// to read the answer.
const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// An answer to one request.
#[derive(Debug)]
pub(crate) struct Reply {
    /// The status code.
    pub(crate) code: u16,
    /// Headers besides `Content-Length`, `Connection` and `Cache-Control`, which every reply gets.
    pub(crate) headers: Vec<(&'static str, String)>,
    /// The body (not sent for HEAD).
    pub(crate) body: Vec<u8>,
}

impl Reply {
    /// A reply with a `Content-Type`.
    pub(crate) fn new(code: u16, content_type: &str, body: Vec<u8>) -> Reply {
        Reply {
            code,
            headers: vec![("Content-Type", content_type.to_owned())],
            body,
        }
    }

    /// Adds a header.
    pub(crate) fn with(mut self, name: &'static str, value: String) -> Reply {
        self.headers.push((name, value));
        self
    }
}

/// One parsed request line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpRequest {
    /// `GET`, `HEAD`, ...
    pub(crate) method: String,
    /// The request target as sent (path and query).
    pub(crate) target: String,
    /// The `Host` header's value, if the request had one.
    pub(crate) host: Option<String>,
    /// True for HTTP/1.1 (or later 1.x), which requires a `Host` header.
    pub(crate) needs_host: bool,
}

/// Reads from the connection until a deadline: each read may wait only for the time left.
struct Deadline<'a> {
    stream: &'a TcpStream,
    until: Instant,
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        self.stream.set_read_timeout(Some(left))?;
        (&mut &*self.stream).read(buf)
    }
}

/// Accepts connections until the server stops; each gets a thread of its own.
pub(crate) fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let active = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        if shared.state.stopped() {
            return;
        }
        let Ok(stream) = stream else { continue };
        if active.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            active.fetch_sub(1, Ordering::SeqCst);
            let reply = Reply::new(503, "text/plain; charset=utf-8", b"busy\n".to_vec());
            let _ = write_reply(&stream, &reply, false);
            continue;
        }
        let (shared, count) = (shared.clone(), active.clone());
        let spawned = std::thread::Builder::new()
            .name("vramdoc-conn".into())
            .spawn(move || {
                serve_connection(stream, &shared);
                count.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            active.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Wakes the accept loop (blocked in `accept`) so it sees the stop flag.
pub(crate) fn wake(addr: SocketAddr) {
    let _ = TcpStream::connect_timeout(&addr, Duration::from_secs(1));
}

fn serve_connection(stream: TcpStream, shared: &Arc<Shared>) {
    let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
    let request = match read_request(&stream) {
        Ok(r) => r,
        Err(Some(reply)) => {
            let _ = write_reply(&stream, &reply, false);
            return;
        }
        Err(None) => return,
    };
    let head_only = request.method == "HEAD";
    match http::route(&request, shared) {
        http::Answer::Reply(reply) => {
            let _ = write_reply(&stream, &reply, head_only);
        }
        http::Answer::Events => super::events::stream(stream, shared),
    }
}

/// Reads and parses the request head; `Err(Some(reply))` for a malformed request, `Err(None)`
/// when the client went away.
fn read_request(stream: &TcpStream) -> Result<HttpRequest, Option<Reply>> {
    let bad = |msg: &str| {
        Some(Reply::new(
            400,
            "text/plain; charset=utf-8",
            format!("{msg}\n").into_bytes(),
        ))
    };
    let deadline = Deadline {
        stream,
        until: Instant::now() + IO_TIMEOUT,
    };
    let mut reader = BufReader::new(deadline).take(MAX_HEAD as u64);
    // Lines are read as bytes: one that is not UTF-8 is answered, not dropped.
    let mut read_line = |line: &mut String| {
        let mut bytes = Vec::new();
        let n = reader.read_until(b'\n', &mut bytes).map_err(|_| None)?;
        *line = String::from_utf8(bytes).map_err(|_| bad("the request head is not UTF-8"))?;
        Ok::<usize, Option<Reply>>(n)
    };
    let mut line = String::new();
    if read_line(&mut line)? == 0 {
        return Err(None);
    }
    let mut request = parse_request_line(&line).ok_or_else(|| bad("malformed request line"))?;
    // Only `Host` is kept. A head that does not end within the limit is refused.
    loop {
        let mut header = String::new();
        match read_line(&mut header) {
            Ok(0) => return Err(bad("request head too long or cut short")),
            Ok(_) if header == "\r\n" || header == "\n" => {
                if request.needs_host && request.host.is_none() {
                    return Err(bad("an HTTP/1.1 request needs a Host header"));
                }
                return Ok(request);
            }
            Ok(_) => {
                if let Some((name, value)) = header.split_once(':') {
                    if name.eq_ignore_ascii_case("host") {
                        if request.host.is_some() {
                            return Err(bad("more than one Host header"));
                        }
                        request.host = Some(value.trim().to_owned());
                    }
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Parses `METHOD TARGET HTTP/1.x`.
pub(crate) fn parse_request_line(line: &str) -> Option<HttpRequest> {
    let mut parts = line.trim_end_matches(['\r', '\n']).split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some()
        || method.is_empty()
        || !method.bytes().all(|b| b.is_ascii_uppercase())
        || !target.starts_with('/')
        || !version.starts_with("HTTP/1.")
    {
        return None;
    }
    Some(HttpRequest {
        method: method.to_owned(),
        target: target.to_owned(),
        host: None,
        needs_host: version != "HTTP/1.0",
    })
}

fn write_reply(mut stream: &TcpStream, reply: &Reply, head_only: bool) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.code, reason(reply.code));
    for (name, value) in &reply.headers {
        // Values are built by the server; refuse line breaks all the same.
        if !value.contains(['\r', '\n']) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        reply.body.len()
    ));
    stream.write_all(head.as_bytes())?;
    if !head_only {
        stream.write_all(&reply.body)?;
    }
    stream.flush()
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        301 => "Moved Permanently",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        503 => "Service Unavailable",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines() {
        assert_eq!(
            parse_request_line("GET /en/?x=1 HTTP/1.1\r\n"),
            Some(HttpRequest {
                method: "GET".into(),
                target: "/en/?x=1".into(),
                host: None,
                needs_host: true,
            })
        );
        assert!(parse_request_line("HEAD / HTTP/1.0\n").is_some());
        for bad in [
            "",
            "GET\r\n",
            "GET / \r\n",
            "get / HTTP/1.1\r\n",
            "GET http://x/ HTTP/1.1\r\n",
            "GET / HTTP/2\r\n",
            "GET / HTTP/1.1 extra\r\n",
        ] {
            assert_eq!(parse_request_line(bad), None, "{bad:?}");
        }
    }
}
