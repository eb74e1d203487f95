//! What to change: the options a guide lists for a scenario, each estimated in full.

pub(crate) use super::micro_batch::{largest_divisor_at_most, with_micro_batch};
use serde::Serialize;

use super::error::ScenarioError;
use super::gpu::GpuCatalog;
use super::scenario::{Dtype, Optimizer, Scenario, Sharding};
use super::{combine, estimate, Estimate, Verdict};

/// The kind of change an option makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WhatIfKind {
    /// A smaller micro-batch with more accumulation steps: same effective batch.
    MicroBatch,
    /// The largest micro-batch that fits the GPU, keeping the effective batch.
    MaxMicroBatch,
    /// A smaller `estimate_loss` batch (a patch: nanoGPT evaluates at `batch_size`).
    EvalBatch,
    /// A shorter context.
    BlockSize,
    /// Flash attention on.
    Flash,
    /// Per-block activation checkpointing on (a patch).
    GradCheckpoint,
    /// 16-bit autocast instead of fp32 (or fp16 on a card without bf16).
    Dtype,
    /// A narrower model.
    NEmbd,
    /// A shallower model.
    NLayer,
    /// An 8-bit optimizer.
    Optimizer,
    /// DDP's `gradient_as_bucket_view=True`: no bucket copy of the gradients (a patch).
    BucketView,
    /// ZeroRedundancyOptimizer: the optimizer state split among the DDP processes (a patch).
    ShardedOptimizer,
    /// FSDP: parameters, gradients and optimizer state split among the processes (a patch).
    Fsdp,
    /// A fine-tune with frozen embeddings (`wte` = `lm_head.weight`, and `wpe`; a patch).
    FreezeEmbeddings,
    /// A fine-tune of LoRA adapters only (a patch; see `finetune.rs`).
    Lora,
    /// A fine-tune's least invasive combination of changes that fits the GPU (`combine.rs`).
    Combination,
    /// A fine-tune's least invasive combination whose verdict is "tight", when it is less
    /// invasive than the one that fits (or none fits).
    CombinationTight,
    /// Every change of a fine-tune's search together, when no combination fits or is tight.
    CombinationAll,
    /// A Hugging Face model's weights loaded in bf16, trained as they are (`whatif_model.rs`).
    PureBf16,
    /// QLoRA: a Hugging Face model's Linears in 4 bits, LoRA trained on them (`whatif_model.rs`).
    Qlora,
    /// Liger's fused linear cross-entropy patched into a Hugging Face model (`fused_ce.rs`).
    FusedCrossEntropy,
    /// A padding-free batch as padded rows instead (`batch_layout.rs`): the same sequences and
    /// loss, a mask per row instead of one over the whole flattened batch.
    BatchLayout,
    /// flash-attn's kernels for a padding-free batch (`flash_attention_2.rs`): no mask over the
    /// flattened tokens.
    #[serde(rename = "flash_attention_2")]
    FlashAttention2,
}

impl WhatIfKind {
    /// Every kind, in declaration order (for checks that each has its messages).
    pub const ALL: [WhatIfKind; 23] = [
        WhatIfKind::MicroBatch,
        WhatIfKind::MaxMicroBatch,
        WhatIfKind::EvalBatch,
        WhatIfKind::BlockSize,
        WhatIfKind::Flash,
        WhatIfKind::GradCheckpoint,
        WhatIfKind::Dtype,
        WhatIfKind::NEmbd,
        WhatIfKind::NLayer,
        WhatIfKind::Optimizer,
        WhatIfKind::BucketView,
        WhatIfKind::ShardedOptimizer,
        WhatIfKind::Fsdp,
        WhatIfKind::FreezeEmbeddings,
        WhatIfKind::Lora,
        WhatIfKind::Combination,
        WhatIfKind::CombinationTight,
        WhatIfKind::CombinationAll,
        WhatIfKind::PureBf16,
        WhatIfKind::Qlora,
        WhatIfKind::FusedCrossEntropy,
        WhatIfKind::BatchLayout,
        WhatIfKind::FlashAttention2,
    ];
}

/// One changed key, with its new value as a display string (`"8"`, `"True"`, `"bfloat16"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Scenario key.
    pub(crate) key: String,
    /// New value, as nanoGPT's config files would write it (strings unquoted).
    pub(crate) value: String,
}

/// One computed option.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhatIf {
    /// What kind of change.
    pub kind: WhatIfKind,
    /// The keys it changes.
    pub changes: Vec<Change>,
    /// The changed scenario.
    pub scenario: Scenario,
    /// Its peak (allocated) bytes.
    pub(crate) peak: u64,
    /// Its total (nvidia-smi) bytes.
    pub total: u64,
    /// Its total with the overhead at the low end.
    pub(crate) total_low: u64,
    /// Its total with the overhead at the high end.
    pub(crate) total_high: u64,
    /// Base total minus this option's total (negative: it needs more).
    pub saving_bytes: i64,
    /// Its four-state verdict against the scenario's GPU, if one is named.
    pub(crate) verdict: Option<Verdict>,
    /// Whether it fits the scenario's GPU (`verdict == fits`), if one is named.
    pub fits: Option<bool>,
    /// Its effective batch (sequences per optimizer step).
    pub effective_batch: u64,
    /// Its parameter count.
    pub(crate) params_total: u64,
    /// Extra training compute in percent, an estimate (checkpointing only).
    pub(crate) extra_compute_pct: Option<f64>,
    /// Whether training itself changes (hyper-parameters, numerics or model), not just memory.
    pub changes_training: bool,
}

/// The options for a scenario, ordered by how little they change training: same effective
/// batch and same math first, model-shrinking last. No-ops (flash when on, ...) are skipped.
pub fn what_if(s: &Scenario, catalog: &GpuCatalog) -> Result<Vec<WhatIf>, ScenarioError> {
    let mut o = Options::new(s, catalog)?;
    o.smaller_micro_batches()?;
    o.largest_micro_batch()?;
    o.smaller_eval_batch()?;
    o.flash()?;
    o.grad_checkpoint()?;
    o.dtype()?;
    o.sharding()?;
    o.eight_bit_optimizer()?;
    o.freeze_embeddings()?;
    o.shorter_context()?;
    o.lora()?;
    o.smaller_model()?;
    o.combinations()?;
    Ok(o.out)
}

/// The options of one scenario as they are computed, with what each is measured against.
struct Options<'a> {
    /// The scenario as given.
    s: &'a Scenario,
    /// The GPUs the options are checked against.
    catalog: &'a GpuCatalog,
    /// The scenario's own estimate.
    base: Estimate,
    /// The effective batch, which the micro-batch options keep.
    eff: u64,
    /// What each DDP process runs per step: micro-batches must divide it, so that the
    /// accumulation stays a multiple of the processes (train.py asserts it).
    per_process: u64,
    /// Whether there is a training step. An eval-only run has no accumulation to trade against,
    /// no gradients to checkpoint, no optimizer state: only evaluation or model changes.
    training: bool,
    /// Whether a GPT-2 checkpoint fixes the model's shape (`Scenario::as_run`): no narrower or
    /// shallower model to offer; the fine-tuning patches instead (`combine::Lever`'s order).
    pretrained: bool,
    /// The options so far.
    out: Vec<WhatIf>,
}

impl<'a> Options<'a> {
    /// No options yet, after estimating the scenario itself.
    fn new(s: &'a Scenario, catalog: &'a GpuCatalog) -> Result<Options<'a>, ScenarioError> {
        let base = estimate(s, catalog)?;
        let eff = base.effective_batch;
        Ok(Options {
            s,
            catalog,
            eff,
            per_process: eff / s.ddp_world_size.max(1),
            training: !s.eval_only,
            pretrained: s.init_from.pretrained_shape().is_some(),
            base,
            out: Vec::new(),
        })
    }

    /// A training run from a GPT-2 checkpoint.
    fn fine_tune(&self) -> bool {
        self.training && self.pretrained
    }

    /// Estimates `changed` and appends it as an option of `kind`.
    fn push(
        &mut self,
        kind: WhatIfKind,
        changed: Scenario,
        changes_training: bool,
        pct: Option<f64>,
    ) -> Result<(), ScenarioError> {
        let e = estimate(&changed, self.catalog)?;
        let o = option(kind, self.s, &self.base, changed, &e, changes_training, pct);
        self.out.push(o);
        Ok(())
    }

    /// Same effective batch, smaller micro-batches: b/2, b/4, b/8 (largest divisors of it).
    fn smaller_micro_batches(&mut self) -> Result<(), ScenarioError> {
        let s = self.s;
        if !self.training {
            return Ok(());
        }
        let mut last = s.batch_size;
        for div in [2, 4, 8] {
            if let Some(b) = largest_divisor_at_most(self.per_process, s.batch_size / div) {
                if b < last {
                    last = b;
                    let changed = with_micro_batch(s, b, self.eff);
                    self.push(WhatIfKind::MicroBatch, changed, false, None)?;
                }
            }
        }
        Ok(())
    }

    /// The largest micro-batch that fits the GPU, with the same effective batch, when it is not
    /// the scenario's.
    fn largest_micro_batch(&mut self) -> Result<(), ScenarioError> {
        let s = self.s;
        if !self.training || s.gpu.is_none() {
            return Ok(());
        }
        if let Some(b) = self.largest_fitting_micro_batch()? {
            if b != s.batch_size {
                let changed = with_micro_batch(s, b, self.eff);
                self.push(WhatIfKind::MaxMicroBatch, changed, false, None)?;
            }
        }
        Ok(())
    }

    /// The largest divisor of each process's share whose micro-batch fits ("fits" is the
    /// verdict's: the high end beside the other programs within capacity), None when not even
    /// 1 fits.
    fn largest_fitting_micro_batch(&self) -> Result<Option<u64>, ScenarioError> {
        let (s, eff, per_process) = (self.s, self.eff, self.per_process);
        let fits = |b: u64| {
            estimate(&with_micro_batch(s, b, eff), self.catalog)
                .map(|e| e.verdict == Some(Verdict::Fits))
        };
        if !fits(1)? {
            return Ok(None);
        }
        let (mut lo, mut hi) = (1, per_process);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if fits(mid)? {
                lo = mid
            } else {
                hi = mid - 1
            }
        }
        // Memory is not monotonic in the micro-batch everywhere (at accumulation 1 the
        // gradients are freed before the forward), so confirm the candidate and walk down the
        // divisors of the effective batch until one fits.
        let mut found = largest_divisor_at_most(per_process, lo);
        while let Some(b) = found {
            if fits(b)? {
                break;
            }
            found = b
                .checked_sub(1)
                .and_then(|n| largest_divisor_at_most(per_process, n));
        }
        Ok(found)
    }

    /// When the evaluation sets the peak: the largest eval batch whose evaluation peaks no
    /// higher than the training step.
    fn smaller_eval_batch(&mut self) -> Result<(), ScenarioError> {
        let (s, train_peak) = (self.s, self.base.bytes.train_peak);
        if !(self.training && self.base.bytes.eval_peak > train_peak && s.eval_batch() > 1) {
            return Ok(());
        }
        let eval_at = |e: u64| {
            let mut c = s.clone();
            c.eval_batch_size = Some(e);
            estimate(&c, self.catalog).map(|est| est.bytes.eval_peak)
        };
        let (mut lo, mut hi) = (1, s.eval_batch() - 1);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if eval_at(mid)? <= train_peak {
                lo = mid
            } else {
                hi = mid - 1
            }
        }
        let mut changed = s.clone();
        changed.eval_batch_size = Some(lo);
        self.push(WhatIfKind::EvalBatch, changed, false, None)
    }

    /// Flash attention, when it is off.
    fn flash(&mut self) -> Result<(), ScenarioError> {
        if self.s.flash {
            return Ok(());
        }
        let changed = Scenario {
            flash: true,
            ..self.s.clone()
        };
        self.push(WhatIfKind::Flash, changed, false, None)
    }

    /// Per-block activation checkpointing, when it is off, with its extra compute.
    fn grad_checkpoint(&mut self) -> Result<(), ScenarioError> {
        let s = self.s;
        if !self.training || s.grad_checkpoint {
            return Ok(());
        }
        let changed = Scenario {
            grad_checkpoint: true,
            ..s.clone()
        };
        let pct = checkpoint_extra_compute_pct(&s.as_run());
        self.push(WhatIfKind::GradCheckpoint, changed, false, Some(pct))
    }

    /// 16-bit autocast instead of fp32 (bf16 where the card has it), or fp16 instead of bf16 on
    /// a card without bf16.
    fn dtype(&mut self) -> Result<(), ScenarioError> {
        let s = self.s;
        let bf16_ok = s
            .gpu
            .as_deref()
            .and_then(|id| self.catalog.get(id))
            .is_none_or(|g| g.bf16);
        let better_dtype = match s.dtype {
            Dtype::Float32 if bf16_ok => Some(Dtype::Bfloat16),
            Dtype::Float32 => Some(Dtype::Float16),
            Dtype::Bfloat16 if !bf16_ok && !s.pure_bf16 => Some(Dtype::Float16),
            _ => None,
        };
        match better_dtype {
            Some(dtype) => self.push(
                WhatIfKind::Dtype,
                Scenario { dtype, ..s.clone() },
                true,
                None,
            ),
            None => Ok(()),
        }
    }

    /// DDP's gradient buckets as views of the gradients, then ZeroRedundancyOptimizer, then FSDP,
    /// for an unsharded DDP run.
    fn sharding(&mut self) -> Result<(), ScenarioError> {
        let s = self.s;
        if self.training
            && s.ddp_world_size > 1
            && s.sharding != Sharding::Full
            && !s.gradient_as_bucket_view
        {
            let changed = Scenario {
                gradient_as_bucket_view: true,
                ..s.clone()
            };
            self.push(WhatIfKind::BucketView, changed, false, None)?;
        }
        if !(self.training && s.ddp_world_size > 1 && s.sharding == Sharding::None) {
            return Ok(());
        }
        for (kind, sharding) in [
            (WhatIfKind::ShardedOptimizer, Sharding::Optimizer),
            (WhatIfKind::Fsdp, Sharding::Full),
        ] {
            let changed = Scenario {
                sharding,
                ..s.clone()
            };
            self.push(kind, changed, false, None)?;
        }
        Ok(())
    }

    /// AdamW8bit in place of AdamW.
    fn eight_bit_optimizer(&mut self) -> Result<(), ScenarioError> {
        if !self.training || self.s.optimizer != Optimizer::Adamw {
            return Ok(());
        }
        let changed = Scenario {
            optimizer: Optimizer::Adamw8bit,
            ..self.s.clone()
        };
        self.push(WhatIfKind::Optimizer, changed, true, None)
    }

    /// A fine-tune with frozen embeddings, when neither they nor LoRA are on.
    fn freeze_embeddings(&mut self) -> Result<(), ScenarioError> {
        let s = self.s;
        if !self.fine_tune() || s.freeze_embeddings || s.lora_rank != 0 {
            return Ok(());
        }
        let changed = combine::Lever::FreezeEmbeddings.apply(s);
        self.push(WhatIfKind::FreezeEmbeddings, changed, true, None)
    }

    /// Half the context.
    fn shorter_context(&mut self) -> Result<(), ScenarioError> {
        let s = self.s;
        if s.block_size < 2 {
            return Ok(());
        }
        let changed = Scenario {
            block_size: s.block_size / 2,
            ..s.clone()
        };
        self.push(WhatIfKind::BlockSize, changed, true, None)
    }

    /// A fine-tune of LoRA adapters only, when LoRA is off.
    fn lora(&mut self) -> Result<(), ScenarioError> {
        if !self.fine_tune() || self.s.lora_rank != 0 {
            return Ok(());
        }
        let changed = combine::Lever::Lora.apply(self.s);
        self.push(WhatIfKind::Lora, changed, true, None)
    }

    /// A model from scratch ¾ as wide (a multiple of the heads), then half as deep.
    fn smaller_model(&mut self) -> Result<(), ScenarioError> {
        let s = self.s;
        let narrower =
            (u128::from(s.n_embd) * 3 / 4 / u128::from(s.n_head) * u128::from(s.n_head)) as u64;
        if !self.pretrained && narrower >= s.n_head && narrower < s.n_embd {
            let changed = Scenario {
                n_embd: narrower,
                ..s.clone()
            };
            self.push(WhatIfKind::NEmbd, changed, true, None)?;
        }
        if !self.pretrained && s.n_layer >= 2 {
            let changed = Scenario {
                n_layer: s.n_layer / 2,
                ..s.clone()
            };
            self.push(WhatIfKind::NLayer, changed, true, None)?;
        }
        Ok(())
    }

    /// A fine-tune's least invasive combinations (`combine::search`), each placed before the
    /// first option that changes training unless it changes training itself.
    fn combinations(&mut self) -> Result<(), ScenarioError> {
        let s = self.s;
        if !self.fine_tune() || s.gpu.is_none() {
            return Ok(());
        }
        for (kind, changed) in combine::search(s, self.catalog)? {
            let e = estimate(&changed, self.catalog)?;
            let pct = changed
                .grad_checkpoint
                .then(|| checkpoint_extra_compute_pct(&s.as_run()))
                .filter(|_| !s.grad_checkpoint);
            let training_changes = combine::changes_training(s, &changed);
            let o = option(kind, s, &self.base, changed, &e, training_changes, pct);
            // Options that leave training as it is come first.
            let at = if training_changes {
                self.out.len()
            } else {
                self.out
                    .iter()
                    .position(|w| w.changes_training)
                    .unwrap_or(self.out.len())
            };
            self.out.insert(at, o);
        }
        Ok(())
    }
}

/// Builds one option from its estimate; `s` is the scenario as given (the base estimate's is the
/// run, a GPT-2 checkpoint's shape in place of the given one).
pub(crate) fn option(
    kind: WhatIfKind,
    s: &Scenario,
    base: &Estimate,
    changed: Scenario,
    e: &Estimate,
    changes_training: bool,
    pct: Option<f64>,
) -> WhatIf {
    WhatIf {
        kind,
        changes: changes_between(s, &changed),
        peak: e.bytes.peak,
        total: e.bytes.total,
        total_low: e.bytes.total_low,
        total_high: e.bytes.total_high,
        saving_bytes: base.bytes.total as i64 - e.bytes.total as i64,
        verdict: e.verdict,
        fits: e.fits,
        effective_batch: e.effective_batch,
        params_total: e.params.total,
        extra_compute_pct: pct,
        changes_training,
        scenario: changed,
    }
}

/// Extra compute of per-block checkpointing, in percent: one more forward of the blocks.
///
/// Training FLOPs per token ≈ `6·N + 12·L·h·s` with `N = 12·L·h² + V·h` matmul parameters
/// (Chowdhery et al. 2022, PaLM, appendix B); recomputing the blocks adds their forward,
/// `2·12·L·h² + 4·L·h·s`. About 33 % for large models, less when lm_head dominates.
/// Rounded to 0.1 %.
fn checkpoint_extra_compute_pct(s: &Scenario) -> f64 {
    let (l, h, v, ctx) = (
        s.n_layer as f64,
        s.n_embd as f64,
        s.vocab_size as f64,
        s.block_size as f64,
    );
    let blocks = 24.0 * l * h * h + 4.0 * l * h * ctx;
    let train = 6.0 * (12.0 * l * h * h + v * h) + 12.0 * l * h * ctx;
    (1000.0 * blocks / train).round() / 10.0
}

/// The keys whose values differ from `a` to `b`, in key order, with `b`'s display values.
pub fn changes_between(a: &Scenario, b: &Scenario) -> Vec<Change> {
    let av = a.display_values();
    b.display_values()
        .into_iter()
        .zip(av)
        .filter(|(new, old)| new.1 != old.1)
        .map(|((key, value), _)| Change {
            key: key.to_owned(),
            value,
        })
        .collect()
}
