//! A fine-tune's options combined: the least invasive set of changes that fits the card.
//!
//! For a run from GPT-2 weights (`init_from = 'gpt2*'`), the search tries every subset of the
//! [`Lever`]s that apply, each at the largest micro-batch that fits (same effective batch), and
//! reports the least invasive subset whose verdict is "fits" ([`WhatIfKind::Combination`]), the
//! least invasive "tight" one when that is less invasive still ([`WhatIfKind::CombinationTight`]),
//! and, when neither exists, all of them together ([`WhatIfKind::CombinationAll`]).
//!
//! "Least invasive", defined: the levers are ranked by how much they change the training run
//! and the code, from least to most:
//! 0. a smaller micro-batch with more accumulation: the same effective batch and the same
//!    mathematics (only the summation order of the gradients differs), a setting; always taken,
//!    at the largest micro-batch that fits, so it is no lever of its own;
//! 1. gradient checkpointing: the same mathematics, a patch, about a third more compute;
//! 2. 8-bit AdamW (bitsandbytes): a patch; the optimizer's moments are quantized, every
//!    parameter still trains;
//! 3. frozen embeddings: a one-line patch; `wte` (which is also `lm_head`'s weight) and `wpe`
//!    keep their pretrained values, everything else trains;
//! 4. half the context (`block_size`): a setting, but the model no longer sees dependencies
//!    beyond it, for the whole fine-tune;
//! 5. LoRA (rank [`LORA_RANK`] on the scenario's `lora_targets`, `attn.c_attn` by default): a
//!    patch; every pretrained weight is frozen and only a low-rank update of the targets is
//!    learnt (Hu et al. 2021), well under 1 % of the parameters.
//!
//! A subset is less invasive than another when its most invasive lever ranks lower, then its
//! next most invasive, and so on (a lever outranks every combination of the levers below it):
//! the order of `Σ 2^rank`. This puts checkpointing + 8-bit AdamW + frozen embeddings + half the
//! context before LoRA alone: a full fine-tune of a shorter context changes the model less than
//! training a low-rank update only. The order is a choice, stated here and in the guide.

use super::error::ScenarioError;
use super::gpu::GpuCatalog;
use super::scenario::{Dtype, Optimizer, Scenario};
use super::whatif::{largest_divisor_at_most, with_micro_batch, WhatIfKind};
use super::{estimate, Verdict};

/// The LoRA rank the options offer: the LoRA paper's GPT-3 experiments found rank 1–8 on the
/// attention's projections enough (Hu et al. 2021, section 7.2); 8 is PEFT's default too.
pub(crate) const LORA_RANK: u64 = 8;

/// One change the search may make, least invasive first (the module documentation explains the
/// order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lever {
    GradCheckpoint,
    Adamw8bit,
    FreezeEmbeddings,
    BlockSize,
    Lora,
}

impl Lever {
    /// Every lever, least invasive first.
    pub(crate) const ALL: [Lever; 5] = [
        Lever::GradCheckpoint,
        Lever::Adamw8bit,
        Lever::FreezeEmbeddings,
        Lever::BlockSize,
        Lever::Lora,
    ];

    /// Whether the lever changes anything in `s`.
    fn applies(self, s: &Scenario) -> bool {
        match self {
            Lever::GradCheckpoint => !s.grad_checkpoint,
            Lever::Adamw8bit => s.optimizer == Optimizer::Adamw,
            Lever::FreezeEmbeddings => !s.freeze_embeddings && s.lora_rank == 0,
            Lever::BlockSize => s.block_size >= 2,
            Lever::Lora => s.lora_rank == 0,
        }
    }

    /// `s` with the lever applied.
    pub(crate) fn apply(self, s: &Scenario) -> Scenario {
        let mut c = s.clone();
        match self {
            Lever::GradCheckpoint => c.grad_checkpoint = true,
            Lever::Adamw8bit => c.optimizer = Optimizer::Adamw8bit,
            Lever::FreezeEmbeddings => c.freeze_embeddings = true,
            Lever::BlockSize => c.block_size = s.block_size / 2,
            Lever::Lora => c.lora_rank = LORA_RANK,
        }
        c
    }
}

/// Whether going from `s` to `changed` changes what is trained or how: the optimizer, the
/// trained parameters, the context, the numerics (a smaller micro-batch and checkpointing do
/// not).
pub(crate) fn changes_training(s: &Scenario, changed: &Scenario) -> bool {
    changed.optimizer != s.optimizer
        || changed.dtype != s.dtype
        || changed.freeze_embeddings != s.freeze_embeddings
        || changed.lora_rank != s.lora_rank
        || changed.lora_targets != s.lora_targets
        || changed.block_size != s.block_size
}

/// Micro-batches tried per combination, at most (the divisors of the effective batch below the
/// scenario's micro-batch, largest first).
const MICRO_BATCHES: usize = 64;

/// The search (module documentation): the combinations to list, with their kinds. Nothing when
/// the scenario fits as it is or names no GPU.
pub(crate) fn search(
    s: &Scenario,
    catalog: &GpuCatalog,
) -> Result<Vec<(WhatIfKind, Scenario)>, ScenarioError> {
    let base = estimate(s, catalog)?;
    if base.verdict.is_none_or(|v| v == Verdict::Fits) {
        return Ok(Vec::new());
    }
    // A card without bf16 (T4, V100) runs float16 autocast whatever else changes: every
    // combination starts from it (the same bytes; `WhatIfKind::Dtype` lists it on its own).
    let no_bf16 = base.gpu.as_ref().is_some_and(|g| !g.bf16);
    let start = if no_bf16 && s.dtype == Dtype::Bfloat16 && !s.pure_bf16 {
        Scenario {
            dtype: Dtype::Float16,
            ..s.clone()
        }
    } else {
        s.clone()
    };
    let levers: Vec<(usize, Lever)> = Lever::ALL
        .into_iter()
        .enumerate()
        .filter(|(_, l)| l.applies(s))
        .collect();
    let cost = |mask: usize| -> u32 {
        levers
            .iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0)
            .map(|(_, (rank, _))| 1u32 << rank)
            .sum()
    };
    let mut masks: Vec<usize> = (0..1usize << levers.len()).collect();
    masks.sort_by_key(|&m| cost(m));
    let with = |mask: usize| {
        levers
            .iter()
            .enumerate()
            .filter(|(i, _)| mask & (1 << i) != 0)
            .fold(start.clone(), |c, (_, (_, l))| l.apply(&c))
    };
    let mut tight: Option<Scenario> = None;
    for mask in masks {
        let changed = with(mask);
        if let Some(fit) = largest_micro_batch(s, &changed, Verdict::Fits, catalog)? {
            let mut out = Vec::new();
            out.extend(tight.map(|t| (WhatIfKind::CombinationTight, t)));
            out.push((WhatIfKind::Combination, fit));
            return Ok(out);
        }
        // A scenario already tight needs no tight combination.
        if tight.is_none() && base.verdict != Some(Verdict::Tight) {
            tight = largest_micro_batch(s, &changed, Verdict::Tight, catalog)?.filter(|t| t != s);
        }
    }
    Ok(match tight {
        Some(t) => vec![(WhatIfKind::CombinationTight, t)],
        None => {
            let all = with((1 << levers.len()) - 1);
            let one = with_micro_batch(&all, 1, base.effective_batch);
            vec![(WhatIfKind::CombinationAll, one)]
        }
    })
}

/// `changed` at the largest micro-batch (at most the scenario's, dividing each process's share
/// of the effective batch) whose verdict is `want` or better; `None` when even 1 is worse.
fn largest_micro_batch(
    s: &Scenario,
    changed: &Scenario,
    want: Verdict,
    catalog: &GpuCatalog,
) -> Result<Option<Scenario>, ScenarioError> {
    let eff = s.batch_size.saturating_mul(s.gradient_accumulation_steps);
    let per_process = eff / s.ddp_world_size.max(1);
    let ok = |c: &Scenario| -> Result<bool, ScenarioError> {
        Ok(estimate(c, catalog)?.verdict.is_some_and(|v| v <= want))
    };
    if ok(changed)? {
        return Ok(Some(changed.clone()));
    }
    if !ok(&with_micro_batch(changed, 1, eff))? {
        return Ok(None);
    }
    let mut b = largest_divisor_at_most(per_process, s.batch_size.saturating_sub(1));
    for _ in 0..MICRO_BATCHES {
        let Some(micro) = b else { break };
        let c = with_micro_batch(changed, micro, eff);
        if ok(&c)? {
            return Ok(Some(c));
        }
        b = micro
            .checked_sub(1)
            .and_then(|n| largest_divisor_at_most(per_process, n));
    }
    Ok(Some(with_micro_batch(changed, 1, eff)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The documented order: a lever outranks every combination of the levers below it.
    #[test]
    fn a_lever_outranks_every_combination_below_it() {
        let cost = |ls: &[Lever]| -> u32 {
            ls.iter()
                .map(|l| 1 << Lever::ALL.iter().position(|x| x == l).unwrap())
                .sum()
        };
        let lesser = [
            Lever::GradCheckpoint,
            Lever::Adamw8bit,
            Lever::FreezeEmbeddings,
            Lever::BlockSize,
        ];
        assert!(cost(&lesser) < cost(&[Lever::Lora]));
        assert!(cost(&[Lever::Lora]) < cost(&[Lever::GradCheckpoint, Lever::Lora]));
        assert!(
            cost(&[Lever::GradCheckpoint, Lever::Adamw8bit]) < cost(&[Lever::FreezeEmbeddings])
        );
    }

    #[test]
    fn levers_change_what_they_say() {
        let s = Scenario::default();
        assert!(Lever::ALL.iter().all(|l| l.applies(&s) && l.apply(&s) != s));
        let lora = Lever::Lora.apply(&s);
        assert_eq!(lora.lora_rank, LORA_RANK);
        assert!(
            !Lever::FreezeEmbeddings.applies(&lora),
            "LoRA freezes them already"
        );
        assert!(changes_training(&s, &lora));
        assert!(!changes_training(&s, &Lever::GradCheckpoint.apply(&s)));
    }
}
