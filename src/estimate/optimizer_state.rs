//! Optimizer state: per tensor, for the whole model, and on the heaviest rank of ZeRO-1's
//! partition.
//!
//! PyTorch's `ZeroRedundancyOptimizer._partition_parameters` keeps every parameter whole on one
//! rank: for each param group in turn (nanoGPT's weight-decay group, then its no-decay group) it
//! sorts the tensors by element count, largest first, and puts each on the rank with the fewest
//! elements so far (the first such rank on a tie); the per-rank counts carry over between groups.
//! Each rank then keeps the optimizer state of its tensors, and the rank with the most decides
//! whether the run fits. For nanoGPT 124M on 8 GPUs the rank holding `wte` (38.6 M elements)
//! carries 2.5 times the even share. `tools/zero1_partition.py` runs PyTorch's own method on
//! nanoGPT's parameter lists; `tests/data/zero1_partition.json` is its output, which the tests
//! check [`partition`] against.

use super::memory::Precision;
use super::num::N;
use super::params::TensorGroup;
use super::scenario::{Optimizer, Scenario};

/// One tensor's optimizer state, `numel` elements. AdamW: two moments in the parameter dtype,
/// `2·p` bytes per element (8 with nanoGPT's fp32 parameters). SGD with momentum: one buffer,
/// `p`. bitsandbytes `AdamW8bit`: a tensor of ≥ 4096 elements keeps two 1-byte moments, one fp32
/// absmax per 256-element block per moment, and two 256-entry fp32 quantization maps; a smaller
/// tensor keeps two fp32 moments (`min_8bit_size = 4096`).
pub(crate) fn per_tensor(s: &Scenario, x: Precision, numel: N) -> N {
    match s.optimizer {
        Optimizer::Adamw => numel * (2 * x.p),
        Optimizer::Sgd => numel * x.p,
        // nanoGPT's estimate refuses the paged optimizer (`estimate`), which is Trainer's.
        Optimizer::Adamw8bit | Optimizer::PagedAdamw8bit if numel >= N(4096) => {
            numel * 2 + (numel + N(255)) / 256 * 8 + N(2 * 256 * 4)
        }
        Optimizer::Adamw8bit | Optimizer::PagedAdamw8bit => numel * 8,
    }
}

/// Optimizer state of the trainable parameters among `groups` (frozen ones are not in
/// `configure_optimizers`' groups).
pub(crate) fn optimizer_state(s: &Scenario, x: Precision, groups: &[TensorGroup]) -> N {
    groups
        .iter()
        .filter(|g| g.trainable)
        .map(|g| per_tensor(s, x, g.numel) * g.count)
        .sum()
}

/// The element count of each rank under PyTorch's partition of `groups` (each a list of
/// `(numel, count)`: `count` tensors of `numel` elements) among `world` ranks, with each rank's
/// optimizer state by `cost`. `None` when the partition is too large to follow exactly (more
/// than a million ranks, or too many steps): the caller then uses the greedy bound.
pub(crate) fn partition(
    groups: &[Vec<(N, N)>],
    world: u64,
    cost: &dyn Fn(N) -> N,
) -> Option<Vec<(N, N)>> {
    let w = usize::try_from(world)
        .ok()
        .filter(|w| (1..=1_000_000).contains(w))?;
    let mut ranks = vec![(N::ZERO, N::ZERO); w];
    let mut budget: u64 = 5_000_000;
    for group in groups {
        let mut sorted: Vec<(N, N)> = group.iter().copied().filter(|g| g.1 > N::ZERO).collect();
        // Stable, largest first: equal sizes are interchangeable, so their order is moot.
        sorted.sort_by_key(|g| std::cmp::Reverse(g.0));
        for (numel, count) in sorted {
            place(&mut ranks, numel, count.0, cost(numel), &mut budget)?;
        }
    }
    Some(ranks)
}

/// Puts `count` tensors of `numel` elements (state `cost` each) one by one on the rank with the
/// fewest elements (the first on a tie), in jumps: the least-loaded rank takes tensors until it
/// passes the next one; once every rank is within one tensor of the others, whole rounds go to
/// all ranks in the same order.
fn place(ranks: &mut [(N, N)], numel: N, mut count: u128, cost: N, budget: &mut u64) -> Option<()> {
    if numel == N::ZERO {
        return Some(()); // no elements: no load and no state
    }
    let w = ranks.len() as u128;
    let size = numel.0;
    while count > 0 {
        *budget = budget.checked_sub(ranks.len() as u64)?;
        let (min, max) = ranks.iter().fold((u128::MAX, 0), |(lo, hi), r| {
            (lo.min(r.0 .0), hi.max(r.0 .0))
        });
        if max - min < size {
            // Every rank takes one per round, in (elements, index) order, which each round keeps.
            let rounds = count / w;
            let mut order: Vec<usize> = (0..ranks.len()).collect();
            order.sort_by_key(|&i| (ranks[i].0, i));
            for (k, &i) in order.iter().enumerate() {
                let n = rounds + u128::from((k as u128) < count % w);
                ranks[i].0 = ranks[i].0 + numel * n;
                ranks[i].1 = ranks[i].1 + cost * n;
            }
            return Some(());
        }
        // The least-loaded rank and the next one, by (elements, index).
        let mut order = (0..ranks.len()).map(|i| (ranks[i].0, i));
        let first = order.next()?;
        let (mut lo, mut next) = (first, None::<(N, usize)>);
        for r in order {
            if r < lo {
                next = Some(lo);
                lo = r;
            } else if next.is_none_or(|n| r < n) {
                next = Some(r);
            }
        }
        let take = match next {
            None => count,
            Some((load2, i2)) => {
                let gap = load2.0 - lo.0 .0;
                if lo.1 < i2 {
                    gap / size + 1
                } else {
                    gap.div_ceil(size).max(1)
                }
            }
        }
        .min(count);
        let r = &mut ranks[lo.1];
        r.0 = r.0 + numel * take;
        r.1 = r.1 + cost * take;
        count -= take;
    }
    Some(())
}

/// The optimizer state of ZeRO-1's heaviest rank for `s` among `s.ddp_world_size` processes:
/// nanoGPT's decay group then its no-decay group of `groups`, partitioned as PyTorch does. Beyond
/// what [`partition`] follows exactly, the greedy bound: an even share plus the largest tensor.
pub(crate) fn heaviest_rank(s: &Scenario, x: Precision, groups: &[TensorGroup]) -> N {
    let pick = |decay: bool| -> Vec<(N, N)> {
        groups
            .iter()
            .filter(|g| g.trainable && g.decay == decay)
            .map(|g| (g.numel, g.count))
            .collect()
    };
    let cost = |numel: N| per_tensor(s, x, numel);
    let world = s.ddp_world_size.max(1);
    match partition(&[pick(true), pick(false)], world, &cost) {
        Some(ranks) => ranks.iter().map(|r| r.1).max().unwrap_or(N::ZERO),
        None => {
            let total = optimizer_state(s, x, groups);
            let largest = groups
                .iter()
                .filter(|g| g.trainable && g.count > N::ZERO)
                .map(|g| cost(g.numel))
                .max()
                .unwrap_or(N::ZERO);
            (total / u128::from(world) + largest).min(total)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::params;

    /// PyTorch's own partition (`tools/zero1_partition.py`, run on torch 2.x): per-rank element
    /// counts for nanoGPT and GPT-2 shapes on 2 to 64 ranks.
    const REPLAY: &str = include_str!("../../tests/data/zero1_partition.json");

    #[test]
    fn partition_is_pytorchs() {
        let replay: serde_json::Value = serde_json::from_str(REPLAY).expect("replay JSON");
        let cases = replay["cases"].as_array().expect("cases");
        assert!(cases.len() >= 6);
        for c in cases {
            let n = |k: &str| c[k].as_u64().expect(k);
            let s = Scenario {
                n_layer: n("n_layer"),
                n_embd: n("n_embd"),
                n_head: 1,
                block_size: n("block_size"),
                vocab_size: n("vocab_size"),
                bias: c["bias"].as_bool().expect("bias"),
                ..Scenario::default()
            };
            let groups = params::tensor_groups(&s);
            let pick = |decay: bool| -> Vec<(N, N)> {
                groups
                    .iter()
                    .filter(|g| g.decay == decay)
                    .map(|g| (g.numel, g.count))
                    .collect()
            };
            let ranks =
                partition(&[pick(true), pick(false)], n("world_size"), &|e| e).expect("partition");
            let got: Vec<u64> = ranks.iter().map(|r| r.0 .0 as u64).collect();
            let want: Vec<u64> = c["rank_elements"]
                .as_array()
                .expect("ranks")
                .iter()
                .map(|v| v.as_u64().expect("count"))
                .collect();
            assert_eq!(got, want, "{} on {}", c["name"], c["world_size"]);
            assert_eq!(got.iter().sum::<u64>(), n("total_elements"));
        }
    }

    /// Many equal tensors, many ranks: the jumps and whole rounds give what one-by-one placement
    /// gives.
    #[test]
    fn jumps_equal_one_by_one_placement() {
        let groups = vec![
            vec![(N(1000), N(3)), (N(7), N(500)), (N(300), N(41))],
            vec![(N(5), N(999))],
        ];
        for world in [1u64, 2, 3, 7, 64] {
            let fast = partition(&groups, world, &|e| e * 2).expect("partition");
            let mut slow = vec![(0u128, 0u128); world as usize];
            for g in &groups {
                let mut items: Vec<u128> = g
                    .iter()
                    .flat_map(|(n, c)| std::iter::repeat_n(n.0, c.0 as usize))
                    .collect();
                items.sort_by(|a, b| b.cmp(a));
                for it in items {
                    let i = (0..slow.len())
                        .min_by_key(|&i| (slow[i].0, i))
                        .expect("rank");
                    slow[i].0 += it;
                    slow[i].1 += it * 2;
                }
            }
            let fast: Vec<(u128, u128)> = fast.iter().map(|r| (r.0 .0, r.1 .0)).collect();
            assert_eq!(fast, slow, "world {world}");
        }
    }
}
