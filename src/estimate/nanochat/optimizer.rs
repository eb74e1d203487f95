//! nanochat's `MuonAdamW` (`nanochat/optim.py` at the pinned commit): its state, and what its
//! `step()` allocates on rank 0 when run eagerly (the fused steps are `torch.compile`d in
//! nanochat; the replay cannot compile, and inductor keeps fewer temporaries, so these
//! transients are an upper bound there).
//!
//! Groups (`GPT.setup_optimizer`): AdamW for `lm_head`, `wte`, the value embeddings and the
//! scalars, in that order; then Muon, one group per distinct matrix shape in sorted order.
//! State: AdamW `exp_avg` and `exp_avg_sq` like the parameter (with more than one rank a tensor
//! of 1024 elements or more keeps its rank's rows only); Muon a `momentum_buffer` of the group's
//! stacked matrices and a factored `second_momentum_buffer` (the longer side), for the
//! ⌈K/world⌉ matrices a rank owns.

use super::Run;

/// An AdamW parameter: elements, bytes per element, rows.
struct AdamwParam {
    numel: u128,
    bytes: u128,
    rows: u128,
}

/// A Muon group: `count` float32 matrices of `rows × cols`.
struct MuonGroup {
    rows: u128,
    cols: u128,
    count: u128,
}

impl MuonGroup {
    /// Matrices rank 0 updates: `chunk_size = ⌈K/world⌉` (all of them on one rank).
    fn chunk(&self, world: u128) -> u128 {
        self.count.div_ceil(world)
    }
}

fn adamw_params(r: &Run) -> Vec<AdamwParam> {
    let p = |numel: u128, bytes: u128, rows: u128| AdamwParam { numel, bytes, rows };
    let mut out = vec![p(r.vp * r.h, 4, r.vp), p(r.vp * r.h, r.c, r.vp)];
    for _ in 0..r.ve_layers() {
        out.push(p(r.vp * r.kv(), r.c, r.vp));
    }
    out.extend([
        p(r.n, 4, r.n),
        p(r.n, 4, r.n),
        p(24, 4, 1),
        p(1, 4, 1),
        p(1, 4, 1),
    ]);
    out
}

/// The block matrices grouped by shape, sorted as Python sorts the shapes.
fn muon_groups(r: &Run) -> Vec<MuonGroup> {
    let q = r.heads * r.d;
    let mut shapes: Vec<(u128, u128, u128)> = vec![
        (q, r.h, r.n),
        (r.kv(), r.h, 2 * r.n),
        (r.h, q, r.n),
        (4 * r.h, r.h, r.n),
        (r.h, 4 * r.h, r.n),
        (r.kv_heads, 12, r.ve_layers()),
    ];
    shapes.sort_unstable();
    let mut groups: Vec<MuonGroup> = Vec::new();
    for (rows, cols, count) in shapes {
        match groups.last_mut() {
            Some(g) if g.rows == rows && g.cols == cols => g.count += count,
            _ if count > 0 => groups.push(MuonGroup { rows, cols, count }),
            _ => {}
        }
    }
    groups
}

/// Elements of an AdamW tensor's state on rank 0 (its rows' share when sharded).
fn adamw_slice(p: &AdamwParam, world: u128) -> u128 {
    if world == 1 || p.numel < 1024 {
        p.numel
    } else {
        p.numel / world
    }
}

/// Bytes of the optimizer state on rank 0.
pub(super) fn state_bytes(r: &Run) -> u128 {
    let adamw: u128 = adamw_params(r)
        .iter()
        .map(|p| 2 * adamw_slice(p, r.world) * p.bytes)
        .sum();
    let muon: u128 = muon_groups(r)
        .iter()
        .map(|g| g.chunk(r.world) * (g.rows * g.cols + g.rows.max(g.cols)) * 4)
        .sum();
    adamw + muon
}

/// Whether nanochat's sharded AdamW accepts the run: every sharded tensor's rows divisible by
/// the ranks (`_reduce_adamw`'s assertion).
pub(super) fn shards_evenly(r: &Run) -> bool {
    r.world == 1
        || adamw_params(r)
            .iter()
            .all(|p| p.numel < 1024 || p.rows % r.world == 0)
}

/// The largest bytes `step()` holds beyond the weights, gradients and state, on rank 0:
/// - with more ranks, phase 1 itself: a group's stacked gradients (`torch.stack`, K matrices)
///   beside its padded `stacked_grads` and `grad_chunk`, after the buffers made before it;
/// - what phase 1 makes and keeps to the end: one rank's stacked gradients per Muon group
///   (`torch.stack`; with more ranks the zero-padded `stacked_grads` of ⌈K/world⌉·world
///   matrices and the rank's `grad_chunk`) and, with more ranks, each sharded AdamW tensor's
///   `grad_slice`;
/// - during AdamW's fused step on a tensor of N elements: float32 copies of a 16-bit parameter,
///   its moments and its gradient (none for float32), and at most two float32 temporaries of N;
/// - during Muon's fused step on group j: the stacked parameters of the earlier groups (kept
///   for the copy-back on one rank), its own stack (S bytes, float32), and at the update
///   `g`, `lr·g`, `lr·wd·P`, its product with the mask (each S), the boolean mask (S/4), the
///   last Polar Express iterate `X` (S/2 in bfloat16, S in float32) and its `A` and `B`
///   (K·min(rows, cols)² each in `COMPUTE_DTYPE`).
pub(super) fn step_transients(r: &Run) -> u128 {
    moments(r).iter().map(|m| m.0).max().unwrap_or(0)
}

/// The first step's `optimizer.step()` at its largest: the same moments, each beside only the
/// state made so far (AdamW's tensors, then Muon's groups, each created before its update).
pub(super) fn first_step_peak(r: &Run) -> u128 {
    moments(r).iter().map(|m| m.0 + m.1).max().unwrap_or(0)
}

/// Every moment of `step()`: its transient bytes (module doc of `step_transients`) and the
/// state that exists by then in the first step.
fn moments(r: &Run) -> Vec<(u128, u128)> {
    let w = r.world;
    let groups = muon_groups(r);
    let adamw = adamw_params(r);
    let kept_grads: u128 = groups
        .iter()
        .map(|g| {
            let e = g.rows * g.cols * 4;
            if w == 1 {
                g.count * e
            } else {
                g.chunk(w) * w * e + g.chunk(w) * e
            }
        })
        .sum::<u128>()
        + if w == 1 {
            0
        } else {
            adamw
                .iter()
                .filter(|p| p.numel >= 1024)
                .map(|p| p.numel / w * p.bytes)
                .sum()
        };
    let mut out = Vec::new();
    if w > 1 {
        // Phase 1 on more ranks: each sharded AdamW tensor's `grad_slice`, then per Muon group
        // `torch.stack` of its gradients (a local, freed on return) beside the zero-padded
        // `stacked_grads` it is copied into and the rank's `grad_chunk`, after the earlier
        // groups' buffers.
        let mut made: u128 = adamw
            .iter()
            .filter(|p| p.numel >= 1024)
            .map(|p| p.numel / w * p.bytes)
            .sum();
        for g in &groups {
            let e = g.rows * g.cols * 4;
            let kept = g.chunk(w) * w * e + g.chunk(w) * e;
            out.push((made + g.count * e + kept, 0));
            made += kept;
        }
    }
    let mut state = 0;
    for p in &adamw {
        let n = adamw_slice(p, w);
        state += 2 * n * p.bytes;
        let copies = if p.bytes == 4 { 0 } else { 4 * n * 4 };
        out.push((kept_grads + copies + 2 * n * 4, state));
    }
    let mut earlier = 0;
    for g in &groups {
        let owned = g.chunk(w).min(g.count);
        state += g.chunk(w) * (g.rows * g.cols + g.rows.max(g.cols)) * 4;
        let s = owned * g.rows * g.cols * 4;
        let x = if r.c == 4 { s } else { s / 2 };
        let a = owned * g.rows.min(g.cols).pow(2) * r.c;
        out.push((kept_grads + earlier + s + 4 * s + s / 4 + x + 2 * a, state));
        if w == 1 {
            earlier += s;
        }
    }
    out
}
