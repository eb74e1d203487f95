//! Saturating 128-bit arithmetic, so that no scenario can overflow or wrap.
//!
//! Every formula is evaluated in [`N`]; a result that does not fit the public `u64`/`i64`
//! fields becomes an error at the boundary ([`N::to_u64`]) instead of a wrong number.

use std::ops::{Add, Div, Mul, Sub};

use super::error::ScenarioError;

/// The largest byte or element count the estimator reports (2^63 − 1, so headroom fits an `i64`).
pub(crate) const LIMIT: u128 = i64::MAX as u128;

/// A non-negative integer that saturates at `u128::MAX` instead of wrapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) struct N(pub(crate) u128);

impl N {
    /// Zero.
    pub(crate) const ZERO: N = N(0);

    /// Converts to `u64`, or says which quantity is too large and what to do.
    pub(crate) fn to_u64(self, what: &str) -> Result<u64, ScenarioError> {
        if self.0 > LIMIT {
            return Err(ScenarioError::general(format!(
                "{what} exceeds 2^63 − 1 (about 8 EiB); the scenario is far beyond any GPU: \
                 check the sizes (n_layer, n_embd, vocab_size, block_size, batch_size)"
            )));
        }
        Ok(self.0 as u64)
    }
}

impl From<u64> for N {
    fn from(v: u64) -> N {
        N(u128::from(v))
    }
}

impl From<bool> for N {
    fn from(v: bool) -> N {
        N(u128::from(v))
    }
}

impl Add for N {
    type Output = N;
    fn add(self, rhs: N) -> N {
        N(self.0.saturating_add(rhs.0))
    }
}

impl Sub for N {
    type Output = N;
    /// Saturates at zero (callers only subtract parts from their whole).
    fn sub(self, rhs: N) -> N {
        N(self.0.saturating_sub(rhs.0))
    }
}

impl Mul for N {
    type Output = N;
    fn mul(self, rhs: N) -> N {
        N(mul(self.0, rhs.0))
    }
}

impl Mul<u128> for N {
    type Output = N;
    fn mul(self, rhs: u128) -> N {
        N(mul(self.0, rhs))
    }
}

/// Saturating multiplication with a fast path: two factors below 2^64 cannot overflow.
#[inline]
fn mul(a: u128, b: u128) -> u128 {
    if (a | b) >> 64 == 0 {
        a * b
    } else {
        a.saturating_mul(b)
    }
}

impl Div<u128> for N {
    type Output = N;
    /// Rounds down; a saturated value stays far above [`LIMIT`].
    fn div(self, rhs: u128) -> N {
        N(self.0 / rhs.max(1))
    }
}

impl std::iter::Sum for N {
    fn sum<I: Iterator<Item = N>>(iter: I) -> N {
        iter.fold(N::ZERO, |a, b| a + b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturates_instead_of_wrapping() {
        let big = N::from(u64::MAX);
        assert_eq!((big * big * big).0, u128::MAX);
        assert!((big * big).to_u64("x").is_err());
        assert_eq!(N::from(6u64).to_u64("x"), Ok(6));
        assert_eq!((N::from(1u64) - N::from(2u64)).0, 0);
    }
}
