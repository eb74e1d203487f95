//! `vramdoc serve`: build the site, serve the output on 127.0.0.1, rebuild when a source
//! changes, and reload open pages (server-sent events) or show the build's errors over them.
//!
//! Threads: tiny_http's listener, [`WORKERS`] request workers, one thread per open event stream,
//! and the rebuild loop, which owns the file watcher and calls [`build::build`] for each batch
//! of changes. A build holds the output lock for writing, so a request never sees an output
//! folder that is halfway replaced; the files on disk are never modified by the server.

mod events;
mod files;
mod http;
mod inject;
mod state;
mod watch;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

pub use state::{Status, StatusError};

use crate::build::{self, BuildOptions};
use crate::diagnostics::{self, Diagnostic};
use state::BuildState;
use watch::Watch;

/// The port `vramdoc serve` listens on unless told otherwise.
pub const DEFAULT_PORT: u16 = 1111;

/// How many threads answer ordinary requests.
const WORKERS: usize = 4;

/// What to build, where, and which port to serve it on.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The site root and output folder, as for `vramdoc build`.
    pub build: BuildOptions,
    /// The port on 127.0.0.1 (0 picks a free one; see [`Server::addr`]).
    pub port: u16,
}

impl ServeOptions {
    /// Options for `root`, writing to `out` (default `root/public`), served on `port`.
    pub fn new(root: impl Into<PathBuf>, out: Option<PathBuf>, port: u16) -> Self {
        ServeOptions {
            build: BuildOptions::new(root, out),
            port,
        }
    }
}

/// What the request workers, event streams and the rebuild loop share.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The output folder (absolute).
    pub(crate) out: PathBuf,
    /// The latest build's outcome.
    pub(crate) state: BuildState,
    /// Held for reading while a file is served and for writing while a build runs.
    pub(crate) output: RwLock<()>,
    /// The open event streams.
    pub(crate) streams: events::Streams,
}

/// A running preview server; dropping it stops every thread it started.
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    http: Arc<tiny_http::Server>,
    threads: Vec<JoinHandle<()>>,
}

impl Server {
    /// Listens on 127.0.0.1, starts watching the sources, builds once (a failed first build is
    /// reported and served as an error overlay), then starts answering requests and rebuilding.
    pub fn start(opts: &ServeOptions) -> Result<Server, Diagnostic> {
        let root = absolute(&opts.build.root);
        let out = absolute(&opts.build.out);
        let build_opts = BuildOptions::new(root.clone(), Some(out.clone()));
        let http = tiny_http::Server::http(("127.0.0.1", opts.port)).map_err(|e| {
            Diagnostic::error(format!("cannot listen on 127.0.0.1:{}: {e}", opts.port))
                .with_help("another program may be using this port; pass another one with --port")
        })?;
        let addr = http
            .server_addr()
            .to_ip()
            .ok_or_else(|| Diagnostic::error("the server is not listening on an IP address"))?;
        let http = Arc::new(http);
        let mut watch = Watch::start(&root, &out)?;
        let shared = Arc::new(Shared {
            out,
            state: BuildState::new(),
            output: RwLock::new(()),
            streams: events::Streams::default(),
        });
        rebuild(&build_opts, &shared, &[]);
        let mut threads = Vec::new();
        for i in 0..WORKERS {
            let (http, shared) = (http.clone(), shared.clone());
            threads.push(spawn(&format!("vramdoc-http-{i}"), move || {
                worker(&http, &shared)
            })?);
        }
        let loop_shared = shared.clone();
        threads.push(spawn("vramdoc-watch", move || {
            while !loop_shared.state.stopped() {
                match watch.changes(Duration::from_millis(200)) {
                    Ok(changed) if changed.is_empty() => {}
                    Ok(changed) => rebuild(&build_opts, &loop_shared, &changed),
                    Err(watch::Disconnected) => break,
                }
            }
        })?);
        Ok(Server {
            addr,
            shared,
            http,
            threads,
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The latest build's outcome.
    pub fn status(&self) -> Status {
        self.shared.state.snapshot()
    }

    /// Blocks until the server stops (it only stops when dropped, so: until the process ends).
    pub fn wait(mut self) {
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .field("out", &self.shared.out)
            .finish_non_exhaustive()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.state.stop();
        for _ in 0..WORKERS {
            self.http.unblock();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Runs `vramdoc serve` until the process is interrupted; returns the exit code.
pub fn run(opts: &ServeOptions) -> i32 {
    match Server::start(opts) {
        Ok(server) => {
            println!(
                "serving {} at http://{}/ (watching {}/ and {}); press Ctrl-C to stop",
                opts.build.out.display(),
                server.addr(),
                watch::WATCHED_DIRS.join("/, "),
                watch::CONFIG_FILE
            );
            server.wait();
            0
        }
        Err(e) => {
            eprintln!("{}", e.render());
            1
        }
    }
}

/// Answers requests until the server is unblocked for stopping.
fn worker(http: &tiny_http::Server, shared: &Arc<Shared>) {
    loop {
        match http.recv() {
            Ok(request) => http::handle(request, shared),
            Err(_) if shared.state.stopped() => return,
            Err(_) => {}
        }
    }
}

/// Builds with the output locked, prints one line (or the errors), and records the outcome.
fn rebuild(opts: &BuildOptions, shared: &Shared, changed: &[PathBuf]) {
    let cause = match changed {
        [] => String::new(),
        [one] => format!("{} changed: ", one.display()),
        [first, rest @ ..] => format!("{} and {} more changed: ", first.display(), rest.len()),
    };
    let _writing = shared
        .output
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    match build::build(opts) {
        Ok(report) => {
            for w in &report.warnings {
                eprintln!("{}", w.render());
            }
            println!("{cause}{}", report.summary(&opts.out));
            shared.state.record_ok();
        }
        Err(diags) => {
            for d in &diags {
                eprintln!("{}", d.render());
            }
            let n = diagnostics::error_count(&diags);
            eprintln!(
                "{cause}build failed with {n} error{}; still serving the previous output",
                if n == 1 { "" } else { "s" }
            );
            shared.state.record_failure(&diags);
        }
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, Diagnostic> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(f)
        .map_err(|e| Diagnostic::error(format!("cannot start a server thread: {e}")))
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}
