//! Bounds on one template render. A site's templates are code, and tera has no step limit: two
//! nested `range(end=100000)` loops grew a page to 1.4 GB and aborted the build. Each render
//! gets a budget, and running past it is an error naming the template:
//!
//! - output: at most [`MAX_OUTPUT`] bytes, enforced by the writer the page is rendered into,
//!   which fails the write that would pass it (tera stops at once);
//! - `range()`: at most [`MAX_RANGE_VALUES`] values over the whole render (tera's own limit is
//!   100,000 per call, so nested loops multiply it); `range` is replaced by this module's, which
//!   otherwise behaves as tera's;
//! - time: [`MAX_TIME`], checked at every write, every `range()` and every `t()` call, so a loop
//!   that writes, counts or translates anything stops within moments of it.
//!
//! The budget lives in a thread-local for the duration of [`with_budget`]: a render runs on one
//! thread, and the build renders pages on several at once.

use std::cell::Cell;
use std::io::Write;
use std::time::{Duration, Instant};

use tera::{Error, Kwargs, State, TeraResult};

/// The most bytes one render may write (a large guide page is about 200 KB).
pub(crate) const MAX_OUTPUT: usize = 16 * 1024 * 1024;

/// The most values `range()` may produce in one render.
pub(crate) const MAX_RANGE_VALUES: u64 = 1_000_000;

/// The longest one render may run (a page takes milliseconds).
pub(crate) const MAX_TIME: Duration = Duration::from_secs(10);

/// Which bound a render ran past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exceeded {
    Output,
    Range,
    Time,
}

impl Exceeded {
    /// What happened, for the error message.
    pub(crate) fn describe(self) -> String {
        match self {
            Exceeded::Output => format!(
                "it wrote more than {} MiB",
                MAX_OUTPUT / (1024 * 1024)
            ),
            Exceeded::Range => format!(
                "its `range()` calls produced more than {MAX_RANGE_VALUES} values (nested loops multiply them)"
            ),
            Exceeded::Time => format!("it ran for more than {} s", MAX_TIME.as_secs()),
        }
    }
}

/// The budget of the render running on this thread.
#[derive(Clone, Copy)]
struct RenderBudget {
    range_left: u64,
    deadline: Instant,
    exceeded: Option<Exceeded>,
}

thread_local! {
    static BUDGET: Cell<Option<RenderBudget>> = const { Cell::new(None) };
}

/// Runs `render` (one template render into the given writer) with a fresh budget; returns its
/// result and the bound it ran past, if any.
pub(crate) fn with_budget<T>(
    render: impl FnOnce(&mut LimitedWriter) -> T,
) -> (T, Vec<u8>, Option<Exceeded>) {
    let before = BUDGET.with(|b| {
        b.replace(Some(RenderBudget {
            range_left: MAX_RANGE_VALUES,
            deadline: Instant::now() + MAX_TIME,
            exceeded: None,
        }))
    });
    let mut writer = LimitedWriter { buf: Vec::new() };
    let out = render(&mut writer);
    let exceeded = BUDGET.with(|b| b.replace(before)).and_then(|b| b.exceeded);
    (out, writer.buf, exceeded)
}

/// Records `e` as the bound run past and returns the error that stops tera.
fn exceed(e: Exceeded) -> Error {
    BUDGET.with(|b| {
        if let Some(mut budget) = b.get() {
            budget.exceeded.get_or_insert(e);
            b.set(Some(budget));
        }
    });
    Error::message(format!("the render stopped: {}", e.describe()))
}

/// Fails once the render's time is up (outside a budgeted render: never).
pub(crate) fn check_time() -> TeraResult<()> {
    let late = BUDGET.with(|b| b.get().is_some_and(|b| Instant::now() > b.deadline));
    if late {
        Err(exceed(Exceeded::Time))
    } else {
        Ok(())
    }
}

/// Takes `n` values from the render's `range()` budget.
fn take_range(n: u64) -> TeraResult<()> {
    check_time()?;
    let over = BUDGET.with(|b| match b.get() {
        Some(mut budget) => {
            let over = n > budget.range_left;
            budget.range_left = budget.range_left.saturating_sub(n);
            b.set(Some(budget));
            over
        }
        None => false,
    });
    if over {
        Err(exceed(Exceeded::Range))
    } else {
        Ok(())
    }
}

/// The buffer a page is rendered into: a write that would take it past [`MAX_OUTPUT`], or one
/// after the render's time is up, fails.
pub(crate) struct LimitedWriter {
    buf: Vec<u8>,
}

impl Write for LimitedWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let fail = |e: Exceeded| std::io::Error::other(exceed(e).to_string());
        if self.buf.len() + data.len() > MAX_OUTPUT {
            return Err(fail(Exceeded::Output));
        }
        if check_time().is_err() {
            return Err(fail(Exceeded::Time));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `range(end=, start=0, step_by=1)`, as tera's (the integers from `start` up to, not
/// including, `end`, or down to it with a negative `step_by`; at most 100,000 of them), drawing
/// on the render's budget.
pub(crate) fn range(kwargs: Kwargs, _: &State<'_>) -> TeraResult<Vec<i128>> {
    let start = kwargs.get::<i128>("start")?.unwrap_or_default();
    let end = kwargs.must_get::<i128>("end")?;
    let step = kwargs.get::<i128>("step_by")?.unwrap_or(1);
    if step == 0 {
        return Err(Error::message(
            "Function `range` was called with a `step_by` argument of 0",
        ));
    }
    if start > end && step > 0 {
        return Err(Error::message(
            "Function `range` was called with a `start` argument greater than the `end` one",
        ));
    }
    let overflow =
        || Error::message("Function `range` was called with arguments that overflow i128");
    let (span, by) = if step > 0 {
        (end.checked_sub(start).ok_or_else(overflow)?, step)
    } else if start <= end {
        (0, 1)
    } else {
        (
            start.checked_sub(end).ok_or_else(overflow)?,
            step.checked_neg().ok_or_else(overflow)?,
        )
    };
    let len = span.checked_add(by - 1).ok_or_else(overflow)? / by;
    if len > 100_000 {
        return Err(Error::message(format!(
            "Function `range` would produce {len} elements, which exceeds the limit of 100000"
        )));
    }
    take_range(len as u64)?;
    Ok((0..len).map(|i| start + i * step).collect())
}
