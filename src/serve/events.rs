//! `/__vramdoc/events`: a server-sent-event stream of build statuses, one thread per open tab.
//!
//! The stream starts with the current status and then sends each new one as it is recorded;
//! a comment line every few seconds notices closed tabs. tiny_http buffers chunked bodies, so the
//! stream writes the response itself on the raw connection and flushes after every event.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::Shared;

/// Streams beyond this many are refused with 503 (the page's EventSource retries).
const MAX_STREAMS: usize = 64;

/// How often an idle stream sends a keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// Counts the open streams.
#[derive(Debug, Default)]
pub(crate) struct Streams(AtomicUsize);

/// Answers the request with an event stream on a thread of its own.
pub(crate) fn stream(request: tiny_http::Request, shared: Arc<Shared>) {
    let open = shared.streams.0.fetch_add(1, Ordering::SeqCst);
    if open >= MAX_STREAMS {
        shared.streams.0.fetch_sub(1, Ordering::SeqCst);
        let _ = request.respond(
            tiny_http::Response::from_string("too many open event streams").with_status_code(503),
        );
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("vramdoc-events".into())
        .spawn({
            let shared = shared.clone();
            move || {
                let mut writer = request.into_writer();
                let _ = run(&mut *writer, &shared);
                shared.streams.0.fetch_sub(1, Ordering::SeqCst);
            }
        });
    if spawned.is_err() {
        shared.streams.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Writes the stream until the client goes away or the server stops.
fn run(w: &mut dyn Write, shared: &Shared) -> std::io::Result<()> {
    w.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n\
          Cache-Control: no-store\r\nConnection: close\r\n\r\nretry: 1000\n\n",
    )?;
    let mut status = shared.state.snapshot();
    event(w, &status.to_json())?;
    loop {
        match shared.state.wait_change(status.version, KEEP_ALIVE) {
            Some(next) => {
                status = next;
                event(w, &status.to_json())?;
            }
            None if shared.state.stopped() => return Ok(()),
            None => {
                w.write_all(b": keep-alive\n\n")?;
                w.flush()?;
            }
        }
    }
}

fn event(w: &mut dyn Write, data: &str) -> std::io::Result<()> {
    write!(w, "data: {data}\n\n")?;
    w.flush()
}
