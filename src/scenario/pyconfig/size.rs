//! Bounds on the tuples and lists a config may build, so that no statement costs unbounded
//! memory or stack: each new container is measured through its nested items before it exists,
//! and the work of a whole run is counted against a budget.
//!
//! Values are copied, not shared, so `b = [a] * 1000` would copy `a` a thousand times, and
//! `x = [x]` repeated on 20,000 lines would nest 20,000 deep (dropping or printing it recurses
//! once per level).

use std::cell::Cell;

use super::value::{OpError, PyValue, MAX_LEN};

/// The deepest nesting of tuples and lists a value may have (configs use one or two levels).
pub(crate) const MAX_NESTING: usize = 32;

/// What a container costs: items counted through every nested tuple and list (a string counts
/// its bytes), and its nesting depth.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ContainerSize {
    /// Items, nested ones included.
    pub(crate) items: usize,
    /// Levels of tuples and lists (0 for a scalar).
    pub(crate) depth: usize,
}

impl ContainerSize {
    /// The size of `v`. Every value was measured when it was built, so this recursion is at
    /// most [`MAX_NESTING`] deep; it stops counting past [`MAX_LEN`] items.
    pub(crate) fn of(v: &PyValue) -> ContainerSize {
        match v {
            PyValue::Str(s) => ContainerSize {
                items: s.len().max(1),
                depth: 0,
            },
            PyValue::Tuple(items) | PyValue::List(items) => {
                let inner = of_items(items);
                ContainerSize {
                    items: inner.items.saturating_add(1),
                    depth: inner.depth + 1,
                }
            }
            _ => ContainerSize { items: 1, depth: 0 },
        }
    }

    /// Adds an item of size `other` to a container being built.
    pub(crate) fn add(&mut self, other: ContainerSize) {
        self.items = self.items.saturating_add(other.items);
        self.depth = self.depth.max(other.depth);
    }

    /// This and `other` together.
    pub(crate) fn plus(mut self, other: ContainerSize) -> ContainerSize {
        self.add(other);
        self
    }

    /// `times` copies of these items.
    pub(crate) fn times(self, times: usize) -> ContainerSize {
        ContainerSize {
            items: self.items.saturating_mul(times),
            depth: self.depth,
        }
    }

    /// An error when a container holding items of this size would be too large or too deep.
    pub(crate) fn check(self) -> Result<(), OpError> {
        if self.items > MAX_LEN {
            return Err(OpError::unsupported(format!(
                "a result of more than {MAX_LEN} items (nested ones included) is larger than \
                 vramdoc evaluates"
            )));
        }
        if self.depth >= MAX_NESTING {
            return Err(OpError::unsupported(format!(
                "tuples and lists nested more than {MAX_NESTING} deep are not evaluated"
            )));
        }
        Ok(())
    }
}

/// The size of a container whose items are `items`.
pub(crate) fn of_items(items: &[PyValue]) -> ContainerSize {
    let mut size = ContainerSize::default();
    for item in items {
        size.add(ContainerSize::of(item));
        if size.items > MAX_LEN {
            break;
        }
    }
    size
}

/// The most work one run may do, in items produced by expressions (a value counts its
/// [`ContainerSize`], each time an expression yields it): one statement may build up to [`MAX_LEN`]
/// items, and this bounds a file of a million statements that each copy a large list (`b = a`
/// line after line) to a fraction of a second. Real configs produce a few thousand.
pub(crate) const MAX_WORK: usize = 1 << 19;

/// The work done so far in a run, against [`MAX_WORK`].
#[derive(Debug, Default)]
pub(crate) struct Budget(Cell<usize>);

impl Budget {
    /// An error once the budget is spent (checked before an expression does any work).
    pub(crate) fn check(&self) -> Result<(), OpError> {
        if self.0.get() > MAX_WORK {
            return Err(OpError::unsupported(format!(
                "the inputs have built more than {MAX_WORK} items in all, more than vramdoc \
                 evaluates"
            )));
        }
        Ok(())
    }

    /// Counts the value an expression produced.
    pub(crate) fn charge(&self, v: &PyValue) {
        self.0
            .set(self.0.get().saturating_add(ContainerSize::of(v).items));
    }
}
