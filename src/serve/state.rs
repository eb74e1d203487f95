//! The outcome of the latest build, shared between the rebuild loop and the HTTP workers.
//!
//! Every build (good or failed) bumps `version`; pages remember the version they were served
//! at and reload when a newer good build exists. Waiters (the server-sent-event streams) block on
//! a condition variable until the version moves or the server stops.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde::Serialize;

use crate::diagnostics::Diagnostic;

/// What `/__vramdoc/status` answers: `{version, ok, errors: [..]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ServeStatus {
    /// Counts builds since the server started (the first build is 1).
    pub(crate) version: u64,
    /// False when the latest build failed (the previous output is still served).
    pub(crate) ok: bool,
    /// The latest build's errors (empty when `ok`).
    pub(crate) errors: Vec<StatusError>,
}

/// One build error as the page overlay shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct StatusError {
    /// The file the error is in, relative to the site root, when known.
    pub(crate) file: Option<String>,
    /// 1-based line in `file`, when known.
    pub(crate) line: Option<usize>,
    /// What is wrong, in one line.
    pub(crate) message: String,
    /// The full rendering, as printed in the terminal (plain text, not escaped).
    pub(crate) text: String,
}

impl ServeStatus {
    /// The status as one line of JSON (the form server-sent events need).
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| {
            format!(
                "{{\"version\":{},\"ok\":false,\"errors\":[{{\"file\":null,\"line\":null,\"message\":\"status not serializable\",\"text\":{:?}}}]}}",
                self.version,
                e.to_string()
            )
        })
    }
}

#[derive(Debug)]
struct Inner {
    status: ServeStatus,
    stopped: bool,
}

/// The shared build status with a wake-up for waiters.
#[derive(Debug)]
pub(crate) struct BuildState {
    inner: Mutex<Inner>,
    changed: Condvar,
}

impl BuildState {
    /// No build yet: version 0, ok.
    pub(crate) fn new() -> Self {
        BuildState {
            inner: Mutex::new(Inner {
                status: ServeStatus {
                    version: 0,
                    ok: true,
                    errors: Vec::new(),
                },
                stopped: false,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current status.
    pub(crate) fn snapshot(&self) -> ServeStatus {
        self.lock().status.clone()
    }

    /// Records a good build as a new version and wakes every waiter.
    pub(crate) fn record_ok(&self) {
        self.record(true, Vec::new());
    }

    /// Records a failed build (its errors; warnings are left out) and wakes every waiter.
    pub(crate) fn record_failure(&self, diags: &[Diagnostic]) {
        let errors = diags
            .iter()
            .filter(|d| d.is_error())
            .take(crate::diagnostics::MAX_PRINTED)
            .map(|d| StatusError {
                file: d.file.as_ref().map(|f| f.display().to_string()),
                line: d.line,
                message: d.message.clone(),
                text: d.render(),
            })
            .collect();
        self.record(false, errors);
    }

    fn record(&self, ok: bool, errors: Vec<StatusError>) {
        let mut inner = self.lock();
        inner.status.version += 1;
        inner.status.ok = ok;
        inner.status.errors = errors;
        drop(inner);
        self.changed.notify_all();
    }

    /// Waits until the version differs from `seen`, the server stops, or `timeout` passes.
    /// Returns the new status, or `None` on timeout or stop (check [`BuildState::stopped`]).
    pub(crate) fn wait_change(&self, seen: u64, timeout: Duration) -> Option<ServeStatus> {
        let guard = self.lock();
        let (guard, _) = self
            .changed
            .wait_timeout_while(guard, timeout, |i| !i.stopped && i.status.version == seen)
            .unwrap_or_else(PoisonError::into_inner);
        (!guard.stopped && guard.status.version != seen).then(|| guard.status.clone())
    }

    /// Tells every waiter to give up.
    pub(crate) fn stop(&self) {
        self.lock().stopped = true;
        self.changed.notify_all();
    }

    /// True once [`BuildState::stop`] was called.
    pub(crate) fn stopped(&self) -> bool {
        self.lock().stopped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_build_lists_errors_and_good_build_clears_them() {
        let state = BuildState::new();
        let err = Diagnostic::error("bad <title>")
            .in_file("content/a/en.md")
            .at(2, 1);
        let warn = Diagnostic::warning("just a warning");
        state.record_failure(&[err, warn]);
        let s = state.snapshot();
        assert_eq!((s.version, s.ok, s.errors.len()), (1, false, 1));
        assert_eq!(s.errors[0].file.as_deref(), Some("content/a/en.md"));
        assert_eq!(s.errors[0].line, Some(2));
        let json: serde_json::Value = serde_json::from_str(&s.to_json()).unwrap();
        assert_eq!(json["ok"], false);
        assert_eq!(json["errors"][0]["message"], "bad <title>");
        assert!(
            !s.to_json().contains('\n'),
            "one line for server-sent events"
        );

        state.record_ok();
        let s = state.snapshot();
        assert_eq!((s.version, s.ok, s.errors.len()), (2, true, 0));
    }

    #[test]
    fn waiters_wake_on_a_new_version_and_on_stop() {
        let state = std::sync::Arc::new(BuildState::new());
        assert_eq!(state.wait_change(0, Duration::from_millis(10)), None);
        let s2 = state.clone();
        let t = std::thread::spawn(move || s2.wait_change(0, Duration::from_secs(20)));
        std::thread::sleep(Duration::from_millis(50));
        state.record_failure(&[Diagnostic::error("x")]);
        assert_eq!(t.join().unwrap().map(|s| s.version), Some(1));

        let s3 = state.clone();
        let t = std::thread::spawn(move || s3.wait_change(1, Duration::from_secs(20)));
        std::thread::sleep(Duration::from_millis(50));
        state.stop();
        assert_eq!(t.join().unwrap(), None);
        assert!(state.stopped());
    }
}
