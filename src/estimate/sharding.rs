//! What sharding the training state among the DDP processes changes (`Scenario::sharding`), for
//! `W` processes. Sources: PyTorch's `ZeroRedundancyOptimizer` and FSDP documentation, and
//! Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
//! Models" (stage 1 partitions the optimizer state, stage 3 also the parameters and gradients).
//! These terms are estimates, not replayed, except the two checked against replays: ZeRO-1's
//! partition (`optimizer_state::heaviest_rank`) and the FSDP root unit's gradient
//! ([`root_gradient`], `tools/nanogpt_replay/fsdp_replay.py`).
//! - `zero1`: each process keeps the optimizer state of the whole tensors PyTorch's partition
//!   gives it (sorted greedy); the heaviest rank decides. Weights, gradients and DDP's buckets
//!   stay whole.
//! - `fsdp` (`FULL_SHARD`, one unit per transformer block and the root unit holding the
//!   embeddings, the final LayerNorm and the tied head): weights, gradients and optimizer state
//!   are `1/W` each (the causal-mask buffers stay whole) and there are no DDP buckets; while a
//!   unit computes, its parameters are gathered whole: the root, the running block and the next
//!   one (backward prefetch), plus one block's unsharded gradient before its reduce-scatter.
//!   The root's gradients are reduce-scattered only when its backward is complete, after the
//!   embedding's: from the head's backward on, the root holds the tied weight's and `ln_f`'s
//!   gradients whole ([`root_gradient`]).

use super::finetune::Training;
use super::memory::{Precision, TrainMoment};
use super::num::N;
use super::params;
use super::scenario::{Scenario, Sharding};

/// What sharding changes at the training peak and in the evaluations.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sharded {
    /// Bytes each moment no longer holds.
    pub(crate) freed_weights: N,
    pub(crate) freed_gradients: N,
    pub(crate) freed_optimizer: N,
    /// Bytes FSDP gathers while computing (counted with the weights).
    pub(crate) gathered: N,
    /// Unsharded gradient bytes the FSDP root holds at the training peak (counted with the
    /// gradients; 0 before the head's backward has run).
    pub(crate) root_gradient: N,
}

/// The [`Sharded`] change for a scenario whose gradients (at the training peak, `moment`) and
/// optimizer state are `gradients` and `optimizer` bytes.
pub(crate) fn sharded(
    s: &Scenario,
    counted: &params::CountedParams,
    moment: TrainMoment,
    gradients: N,
    optimizer: N,
) -> Sharded {
    let p = &counted.params;
    let x = Precision::of(s);
    let w = u128::from(s.ddp_world_size.max(1));
    let part = |n: N| n - n / w;
    match s.sharding {
        Sharding::None => Sharded::default(),
        Sharding::Optimizer => Sharded {
            freed_optimizer: optimizer
                - super::optimizer_state::heaviest_rank(s, x, &counted.groups),
            ..Sharded::default()
        },
        Sharding::Full => {
            let h = N::from(s.n_embd);
            // One Block: c_attn 3h², attn c_proj h², c_fc 4h², mlp c_proj 4h², two LayerNorm
            // weights 2h; with biases 3h + h + 4h + h + 2h = 11h more.
            let block = h * h * 12 + h * 2 + h * 11 * N::from(s.bias);
            let total = N::from(p.total);
            let root = total - block * N::from(s.n_layer);
            let after_head = after_head_backward(moment);
            // Without accumulation the moment's gradients are the early ones, `wte`'s among
            // them: the root keeps that one whole instead of sharding it.
            let accumulating = s.gradient_accumulation_steps >= 2;
            let train = Training::of(s);
            let early_tied = if after_head && !accumulating && train.embeddings {
                N::from(s.vocab_size) * h * x.p
            } else {
                N::ZERO
            };
            let sharded_grads = gradients - early_tied;
            Sharded {
                freed_weights: part(total * x.p),
                freed_gradients: part(sharded_grads) + early_tied,
                freed_optimizer: part(optimizer),
                gathered: (root + block * 3) * x.p,
                root_gradient: if after_head {
                    root_gradient(s)
                } else {
                    N::ZERO
                },
            }
        }
    }
}

/// Whether the head's backward has run at `moment` (the training peak's candidates after it).
fn after_head_backward(moment: TrainMoment) -> bool {
    match moment {
        TrainMoment::MlpBackward
        | TrainMoment::HeadBackward
        | TrainMoment::AttentionBackward
        | TrainMoment::BlockRecompute
        | TrainMoment::BackwardEnd
        | TrainMoment::OptimizerStep => true,
        TrainMoment::LossForward | TrainMoment::LossBackward | TrainMoment::NoTraining => false,
    }
}

/// Bytes of unsharded gradient FSDP's root unit holds from the head's backward until its own
/// reduce-scatter after the embedding's backward: the tied `wte`/`lm_head` weight's (`V·h`,
/// when the embeddings train) and `ln_f`'s (`h`, `2h` with bias, unless LoRA freezes it), `p`
/// bytes each. The blocks' backward runs in between, so this is alive at every backward moment
/// after the head. Replayed (`tools/nanogpt_replay/fsdp_replay.py`,
/// `tests/data/fsdp_tied_gradient.json`): FSDP2 `fully_shard` and FSDP1 with a transformer
/// auto-wrap policy hold exactly this, at any world size; GPT-2 124M: 154,536,960 bytes.
pub(crate) fn root_gradient(s: &Scenario) -> N {
    let x = Precision::of(s);
    let h = N::from(s.n_embd);
    let train = Training::of(s);
    let tied = if train.embeddings {
        N::from(s.vocab_size) * h
    } else {
        N::ZERO
    };
    let ln_f = if train.base {
        h * (N::from(1u64) + N::from(s.bias))
    } else {
        N::ZERO
    };
    (tied + ln_f) * x.p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::Dtype;

    /// FSDP1 and FSDP2 wraps of nanoGPT on a fake process group (torch 2.15): what the root
    /// holds from the head's backward to the embedding's, and what a block keeps.
    const REPLAY: &str = include_str!("../../tests/data/fsdp_tied_gradient.json");

    #[test]
    fn root_gradient_is_what_the_fsdp_replay_holds() {
        let replay: serde_json::Value = serde_json::from_str(REPLAY).expect("replay JSON");
        let runs = replay["runs"].as_array().expect("runs");
        assert!(runs.len() >= 6);
        for r in runs {
            let n = |k: &str| r[k].as_u64().expect(k);
            let name = r["name"].as_str().expect("name");
            // The bf16 MixedPrecisionPolicy gathers 16-bit parameters, so their gradients are
            // 16-bit: the root's part is what pure bf16 (`p` = 2) gives.
            let mixed = r["wrapper"] == "fsdp2-mp";
            let s = Scenario {
                n_layer: n("n_layer"),
                n_head: n("n_head"),
                n_embd: n("n_embd"),
                vocab_size: n("vocab_size"),
                block_size: n("block_size"),
                batch_size: n("batch_size"),
                bias: r["bias"].as_bool().expect("bias"),
                dtype: Dtype::Bfloat16,
                pure_bf16: mixed,
                ddp_world_size: n("world_size"),
                sharding: Sharding::Full,
                ..Scenario::default()
            };
            let p = Precision::of(&s).p;
            assert_eq!(u128::from(n("gradient_element_bytes")), p, "{name}");
            assert_eq!(root_gradient(&s).0, u128::from(n("held_bytes")), "{name}");
            let (v, h) = (u128::from(s.vocab_size), u128::from(s.n_embd));
            assert_eq!(v * h * p, u128::from(n("held_tied_bytes")), "{name}");
            // A block, by contrast, keeps only its fp32 gradient shard (the sharded parameters
            // stay fp32 under the policy too).
            let bias = u128::from(s.bias);
            let block = h * h * 12 + h * 2 + h * 11 * bias;
            assert_eq!(block, u128::from(n("block_params")), "{name}");
            let w = u128::from(s.ddp_world_size);
            assert_eq!(
                block * 4 / w,
                u128::from(n("last_block_kept_bytes")),
                "{name}"
            );
        }
    }

    #[test]
    fn root_gradient_counts_only_what_trains() {
        let s = Scenario {
            sharding: Sharding::Full,
            ddp_world_size: 8,
            ..Scenario::default()
        };
        let (v, h) = (u128::from(s.vocab_size), u128::from(s.n_embd));
        let ln_f = h * (1 + u128::from(s.bias));
        assert_eq!(root_gradient(&s).0, (v * h + ln_f) * 4);
        let frozen = Scenario {
            freeze_embeddings: true,
            ..s.clone()
        };
        assert_eq!(root_gradient(&frozen).0, ln_f * 4);
        let lora = Scenario {
            lora_rank: 8,
            ..s.clone()
        };
        assert_eq!(root_gradient(&lora).0, 0);
    }
}
