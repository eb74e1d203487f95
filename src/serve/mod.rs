//! `vramdoc serve`: build the site, serve the output on 127.0.0.1, rebuild when a source
//! changes, and reload open pages (server-sent events) or show the build's errors over them.
//!
//! Threads: the listener, a short-lived thread per connection (one request each; event streams
//! stay open), and the rebuild loop, which owns the file watcher and calls [`site::build`] for
//! each batch of changes. A build holds the output lock for writing, so a request never sees an
//! output folder that is halfway replaced; the files on disk are never modified by the server.

mod events;
mod files;
mod http;
mod inject;
mod server;
mod state;
mod watch;

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[cfg(test)]
use state::ServeStatus;

use crate::diagnostics::{self, Diagnostic};
use crate::site::{self, BuildOptions};
use crate::terminal;
use state::BuildState;
use watch::Watch;

/// The port `vramdoc serve` listens on unless told otherwise.
pub(crate) const DEFAULT_PORT: u16 = 1111;

/// What to build, where, and which port to serve it on.
#[derive(Debug, Clone)]
pub(crate) struct ServeOptions {
    /// The site root and output folder, as for `vramdoc build`.
    pub(crate) build: BuildOptions,
    /// The port on 127.0.0.1 (0 picks a free one; see [`Server::addr`]).
    pub(crate) port: u16,
}

impl ServeOptions {
    /// Options for `root`, writing to `out` (default `root/public`), served on `port`.
    pub(crate) fn new(root: impl Into<PathBuf>, out: Option<PathBuf>, port: u16) -> Self {
        ServeOptions {
            build: BuildOptions::new(root, out)
                .quiet(true)
                .notify(crate::terminal::eprint_line),
            port,
        }
    }
}

/// What the request workers, event streams and the rebuild loop share.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The output folder (absolute).
    pub(crate) out: PathBuf,
    /// The port the server listens on (a request's `Host` must name it, if it names one).
    pub(crate) port: u16,
    /// The latest build's outcome.
    pub(crate) state: BuildState,
    /// Held for reading while a file is served and for writing while a build runs.
    pub(crate) output: RwLock<()>,
    /// The open event streams.
    pub(crate) streams: events::Streams,
    /// Set when a request found nothing: the rebuild loop then looks for outputs deleted by hand.
    pub(crate) look_for_missing: AtomicBool,
}

/// A running preview server; dropping it stops every thread it started.
pub(crate) struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl Server {
    /// Listens on 127.0.0.1, starts watching the sources, builds once (a failed first build is
    /// reported and served as an error overlay), then starts answering requests and rebuilding.
    pub(crate) fn start(opts: &ServeOptions) -> Result<Server, Diagnostic> {
        let root = absolute(&opts.build.root);
        let out = absolute(&opts.build.out);
        let build_opts = BuildOptions::new(root.clone(), Some(out.clone()))
            .quiet(true)
            .notify(opts.build.notify);
        // A folder no build may write is not served either: its files are not this site's.
        site::output::check_output(&out, &root)?;
        let listener = TcpListener::bind(("127.0.0.1", opts.port)).map_err(|e| {
            Diagnostic::error(format!("cannot listen on 127.0.0.1:{}: {e}", opts.port))
                .with_help("another program may be using this port; pass another one with --port")
        })?;
        let addr = listener
            .local_addr()
            .map_err(|e| Diagnostic::error(format!("cannot read the listening address: {e}")))?;
        let mut watch = Watch::start(&root, &out)?;
        let shared = Arc::new(Shared {
            out,
            port: addr.port(),
            state: BuildState::new(),
            output: RwLock::new(()),
            streams: events::Streams::default(),
            look_for_missing: AtomicBool::new(false),
        });
        let mut kept = site::KeptBuild::new();
        rebuild(&build_opts, &shared, &[], &mut kept);
        let mut threads = Vec::new();
        let http_shared = shared.clone();
        threads.push(spawn("vramdoc-http", move || {
            server::accept_loop(&listener, &http_shared)
        })?);
        let loop_shared = shared.clone();
        threads.push(spawn("vramdoc-watch", move || {
            let mut looked = Instant::now();
            while !loop_shared.state.stopped() {
                match watch.changes(Duration::from_millis(200)) {
                    Ok((changed, incomplete)) => {
                        kept.changed(&changed);
                        if incomplete {
                            kept.forget_changes();
                        }
                        if !changed.is_empty() || incomplete {
                            rebuild(&build_opts, &loop_shared, &changed, &mut kept);
                        } else if looked.elapsed() >= RESTORE_INTERVAL
                            && loop_shared.look_for_missing.swap(false, Ordering::Relaxed)
                        {
                            looked = Instant::now();
                            restore(&build_opts, &loop_shared, &mut kept);
                        }
                    }
                    Err(watch::Disconnected) => break,
                }
            }
        })?);
        Ok(Server {
            addr,
            shared,
            threads,
        })
    }

    /// The address the server listens on.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The latest build's outcome.
    #[cfg(test)]
    pub(crate) fn status(&self) -> ServeStatus {
        self.shared.state.snapshot()
    }

    /// Blocks until the server stops (it only stops when dropped, so: until the process ends).
    pub(crate) fn wait(mut self) {
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
        server::wake(self.addr);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Runs `vramdoc serve` until the process is interrupted; returns the exit code.
pub(crate) fn run(opts: &ServeOptions) -> i32 {
    match Server::start(opts) {
        Ok(server) => {
            terminal::print_out(&format!(
                "serving {} at http://{}/ (watching {}/ and {}); press Ctrl-C to stop\n",
                opts.build.out.display(),
                server.addr(),
                watch::WATCHED_DIRS.join("/, "),
                watch::CONFIG_FILE
            ));
            server.wait();
            0
        }
        Err(e) => {
            terminal::eprint_line(&e.render());
            1
        }
    }
}

/// The shortest time between two looks for outputs deleted by hand (each stats every page).
const RESTORE_INTERVAL: Duration = Duration::from_secs(1);

/// After a request found nothing: a build that stats every source and output (the watcher does
/// not watch the output folder), so outputs deleted by hand (`rm -rf public/en`) are rendered
/// again. Quiet, and no page reloads, when nothing was missing; a failure is left to the next
/// source change to report.
fn restore(opts: &BuildOptions, shared: &Shared, kept: &mut site::KeptBuild) {
    kept.forget_changes();
    let _writing = shared
        .output
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    if let Ok(report) = site::try_build(opts, Some(kept)) {
        if report.rendered > 0 {
            terminal::print_out(&format!(
                "outputs were missing: {}\n",
                report.summary(&opts.out)
            ));
            shared.state.record_ok();
        }
    }
}

/// Builds with the output locked, prints one line (or the errors), and records the outcome.
/// `kept` makes the build check only the sources the watcher reported changed.
fn rebuild(opts: &BuildOptions, shared: &Shared, changed: &[PathBuf], kept: &mut site::KeptBuild) {
    let cause = match changed {
        [] => String::new(),
        [one] => format!("{} changed: ", one.display()),
        [first, rest @ ..] => format!("{} and {} more changed: ", first.display(), rest.len()),
    };
    let _writing = shared
        .output
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    match site::try_build(opts, Some(kept)) {
        Ok(report) => {
            for text in diagnostics::render_capped(&report.warnings) {
                terminal::eprint_line(&text);
            }
            // A changed file's name is the user's: one line, control characters made visible.
            terminal::print_out(&format!(
                "{}{}\n",
                terminal::visible_line(&cause),
                report.summary(&opts.out)
            ));
            shared.state.record_ok();
        }
        Err(failure) => {
            let diags = failure.diagnostics;
            for text in diagnostics::render_capped(&diags) {
                terminal::eprint_line(&text);
            }
            let n = diagnostics::error_count(&diags);
            let serving = match failure.output {
                site::OutputState::Unchanged => "still serving the previous output",
                site::OutputState::Changed => {
                    "the output could not be restored (see above); the next build rewrites it"
                }
            };
            terminal::eprint_line(&format!(
                "{}build failed with {n} error{}; {serving}",
                terminal::visible_line(&cause),
                if n == 1 { "" } else { "s" }
            ));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_builds_once_and_stops_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("vramdoc.yaml"),
            "title:\n  en: T\nbase_url: https://example.org/\nlanguages: [en]\ndefault_language: en\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join("content/a")).unwrap();
        std::fs::write(
            root.join("content/a/en.md"),
            "---\ntitle: \"A\"\nlang: en\n---\n\nBody.\n",
        )
        .unwrap();
        let server = Server::start(&ServeOptions::new(root, None, 0)).unwrap();
        let addr = server.addr();
        assert!(addr.ip().is_loopback());
        assert_eq!(server.status().version, 1);
        assert!(server.status().ok, "{:?}", server.status().errors);
        assert!(root.join("public/en/a/index.html").is_file());
        assert!(std::net::TcpStream::connect(addr).is_ok());
        drop(server);
        assert!(
            std::net::TcpStream::connect(addr).is_err(),
            "the listener is closed once the server is dropped"
        );
    }
}
