//! Micro-batch arithmetic of the what-ifs: a smaller micro-batch with the accumulation that
//! keeps the effective batch, and the divisor search behind it.

use super::Scenario;

/// The scenario with micro-batch `b` and the accumulation that keeps `eff` sequences per step
/// (exactly when `b` divides each DDP process's share; rounded down to a multiple of the
/// processes, at least one micro-step each, while searching).
pub(crate) fn with_micro_batch(s: &Scenario, b: u64, eff: u64) -> Scenario {
    let world = s.ddp_world_size.max(1);
    Scenario {
        batch_size: b,
        gradient_accumulation_steps: (eff / b.max(1) / world).max(1) * world,
        ..s.clone()
    }
}

/// The largest divisor of `n` that is at most `limit` (None when `limit` is 0).
///
/// Trial division up to √n (at most 2^20 steps, for n up to 2^40); beyond that, a scan down
/// from `limit` of at most 2^16 candidates, so absurd sizes cannot stall the options.
pub(crate) fn largest_divisor_at_most(n: u64, limit: u64) -> Option<u64> {
    if limit == 0 || n == 0 {
        return None;
    }
    if limit >= n {
        return Some(n);
    }
    if n <= 1 << 40 {
        let mut best = 1;
        let mut i = 1;
        while i * i <= n {
            if n % i == 0 {
                for d in [i, n / i] {
                    if d <= limit && d > best {
                        best = d;
                    }
                }
            }
            i += 1;
        }
        return Some(best);
    }
    (limit.saturating_sub(1 << 16).max(1)..=limit)
        .rev()
        .find(|d| n % d == 0)
}

#[cfg(test)]
mod tests {
    use super::largest_divisor_at_most as ld;

    #[test]
    fn divisors() {
        assert_eq!(ld(480, 6), Some(6));
        assert_eq!(ld(480, 7), Some(6));
        assert_eq!(ld(480, 1000), Some(480));
        assert_eq!(ld(97, 50), Some(1));
        assert_eq!(ld(480, 0), None);
        assert_eq!(ld((1 << 41) * 3, 1 << 20), Some(1 << 20));
    }
}
