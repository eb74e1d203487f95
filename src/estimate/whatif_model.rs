//! What to change for a model other than nanoGPT's (a Hugging Face model trained as `Trainer`
//! runs a step, `estimate_model`): the same ranking as nanoGPT's what-ifs (`whatif.rs`), least
//! change to training first, each option estimated in full by the model's own step model.
//!
//! Only options the family's step model computes are offered: each candidate is estimated with
//! [`estimate_model`], and one the family refuses (a setting its replay does not cover, such as
//! SDPA under checkpointing for GPT-2, or bf16 weights for GPT-2) is left out rather than
//! borrowed from nanoGPT's numbers. The options, in order:
//! - smaller micro-batches (b/2, b/4, b/8) with the accumulation that keeps the effective batch,
//!   and the largest micro-batch that fits (Trainer's `per_device_train_batch_size` and
//!   `gradient_accumulation_steps`);
//! - SDPA in place of eager attention (`attn_implementation="sdpa"`);
//! - a padding-free batch as padded rows (`batch_layout`; the same training), or with
//!   flash-attn's varlen kernel (`attn_implementation="flash_attention_2"`, no mask);
//! - gradient checkpointing (`gradient_checkpointing=True`), with its extra compute;
//! - 16-bit autocast in place of float32 (`bf16=True`, or `fp16=True` on a card without bf16);
//! - the weights loaded in bfloat16 and trained as they are (`dtype=torch.bfloat16`), where
//!   they load in float32 (GPT-2, Gemma 2's base checkpoints, `weights_dtype: float32`);
//! - PEFT's LoRA (families with it): a full fine-tune as LoRA of rank 16 on PEFT's default
//!   targets (all-linear where PEFT has none); a LoRA run with half its rank, then with PEFT's
//!   default targets where it adapts more modules ([`ModelOptions::lora`]);
//! - QLoRA (`BitsAndBytesConfig(load_in_4bit=True)` with QLoRA's recipe, and LoRA adapters: the
//!   run's rank and targets, or rank 16 on every linear layer as the QLoRA paper trains);
//! - bitsandbytes' 8-bit AdamW, plain and paged (Trainer's `optim="adamw_bnb_8bit"` and
//!   `"paged_adamw_8bit"`);
//! - half the sequence length (nanochat: with twice the micro-steps, as its token budget
//!   per step is fixed);
//! - Liger Kernel's fused linear cross-entropy (`fused_ce.rs`; Llama family, Mixtral,
//!   Qwen3-MoE): training unchanged but a patch to the model's code, so after every setting;
//! - nanochat: with a GPU the run does not fit and no option above does, the deepest shallower
//!   model that does (`--depth`, which also sets the width at base_train.py's default aspect
//!   ratio);
//! - with a GPU, the least invasive combination that fits ([`ModelOptions::combination`]) when no
//!   single change does.

use super::arch::Architecture;
use super::error::ScenarioError;
use super::gpu::GpuCatalog;
use super::lora_targets::LoraTargets;
use super::model_variants::{
    checkpoint_extra_compute_pct, has_peft_lora, with_lora, with_qlora, LORA_RANK,
};
use super::scenario::{Dtype, Optimizer, Scenario};
use super::whatif::{
    changes_between, largest_divisor_at_most, option, with_micro_batch, WhatIf, WhatIfKind,
};
use super::{estimate_model, Estimate, Verdict};
use super::{BatchLayout, WeightsDtype};

/// The options for training the model `a` with the settings of `s`, ordered by how little they
/// change training. The base must estimate (its error is returned); an option its family
/// refuses is skipped.
pub fn what_if_model(
    a: &Architecture,
    s: &Scenario,
    catalog: &GpuCatalog,
) -> Result<Vec<WhatIf>, ScenarioError> {
    let base = estimate_model(a, s, catalog)?;
    let mut o = ModelOptions {
        a,
        catalog,
        run: base.scenario.clone(),
        eff: base.effective_batch,
        base,
        out: Vec::new(),
    };
    o.smaller_micro_batches();
    o.largest_micro_batch();
    o.sdpa();
    o.padded_rows();
    o.flash_attention_2();
    o.grad_checkpoint();
    o.dtype();
    o.bf16_weights();
    o.lora();
    o.qlora();
    o.optimizers();
    o.shorter_sequences();
    o.fused_cross_entropy();
    o.shallower_nanochat();
    o.combination();
    Ok(o.out)
}

/// The options of one model run as they are computed.
struct ModelOptions<'a> {
    /// The model.
    a: &'a Architecture,
    /// The GPUs the options are checked against.
    catalog: &'a GpuCatalog,
    /// The run as estimated (the model's shape in the scenario's shape keys).
    run: Scenario,
    /// The run's estimate.
    base: Estimate,
    /// The effective batch, which the micro-batch options keep.
    eff: u64,
    /// The options so far.
    out: Vec<WhatIf>,
}

impl ModelOptions<'_> {
    /// The estimate of `changed`, None when the family refuses it.
    fn estimate(&self, changed: &Scenario) -> Option<Estimate> {
        estimate_model(self.a, changed, self.catalog).ok()
    }

    /// Estimates `changed` and appends it as an option of `kind`, unless the family refuses it.
    fn push(&mut self, kind: WhatIfKind, changed: Scenario, changes_training: bool, pct: bool) {
        let Some(e) = self.estimate(&changed) else {
            return;
        };
        let pct = pct.then(|| checkpoint_extra_compute_pct(self.a, &self.base));
        let o = option(
            kind,
            &self.run,
            &self.base,
            changed,
            &e,
            changes_training,
            pct,
        );
        self.out.push(o);
    }

    /// Same effective batch, smaller micro-batches: b/2, b/4, b/8 (largest divisors of it).
    fn smaller_micro_batches(&mut self) {
        let mut last = self.run.batch_size;
        for div in [2, 4, 8] {
            if let Some(b) = largest_divisor_at_most(self.eff, self.run.batch_size / div) {
                if b < last {
                    last = b;
                    let changed = with_micro_batch(&self.run, b, self.eff);
                    self.push(WhatIfKind::MicroBatch, changed, false, false);
                }
            }
        }
    }

    /// The largest divisor of the effective batch whose micro-batch fits the GPU ("fits" is the
    /// verdict's), when it is not the run's. Memory rises with the micro-batch at a fixed
    /// accumulation setting, but accumulation 1 frees the gradients before the forward, so
    /// every divisor is tried from the largest down (at most the divisors of the effective
    /// batch; a binary search first narrows where to start).
    fn largest_micro_batch(&mut self) {
        if self.run.gpu.is_none() {
            return;
        }
        let fits = |b: u64| {
            self.estimate(&with_micro_batch(&self.run, b, self.eff))
                .is_some_and(|e| e.verdict == Some(Verdict::Fits))
        };
        if !fits(1) {
            return;
        }
        let (mut lo, mut hi) = (1, self.eff);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if fits(mid) {
                lo = mid
            } else {
                hi = mid - 1
            }
        }
        let mut found = largest_divisor_at_most(self.eff, lo);
        while let Some(b) = found {
            if fits(b) {
                break;
            }
            found = b
                .checked_sub(1)
                .and_then(|n| largest_divisor_at_most(self.eff, n));
        }
        if let Some(b) = found.filter(|b| *b != self.run.batch_size) {
            let changed = with_micro_batch(&self.run, b, self.eff);
            self.push(WhatIfKind::MaxMicroBatch, changed, false, false);
        }
    }

    /// SDPA (`flash`) in place of eager attention.
    fn sdpa(&mut self) {
        if self.run.flash {
            return;
        }
        let changed = Scenario {
            flash: true,
            ..self.run.clone()
        };
        self.push(WhatIfKind::Flash, changed, false, false);
    }

    /// A padding-free batch as padded rows (`batch_layout.rs`): the same training, the mask
    /// and eager's scores per row instead of over the flattened `b·s` tokens.
    fn padded_rows(&mut self) {
        if self.run.batch_layout != BatchLayout::PaddingFree {
            return;
        }
        let changed = Scenario {
            batch_layout: BatchLayout::Padded,
            ..self.run.clone()
        };
        self.push(WhatIfKind::BatchLayout, changed, false, false);
    }

    /// flash-attn's varlen kernel for a padding-free batch run with SDPA or eager attention: the
    /// same training, no `(b·s)²` mask (`attn_implementation="flash_attention_2"`).
    fn flash_attention_2(&mut self) {
        if self.run.batch_layout != BatchLayout::PaddingFree || self.run.flash_attention_2() {
            return;
        }
        let mut changed = self.run.clone();
        with_flash_attention_2(&mut changed);
        self.push(WhatIfKind::FlashAttention2, changed, false, false);
    }

    /// `gradient_checkpointing_enable()`, with its extra compute.
    fn grad_checkpoint(&mut self) {
        // QLoRA checkpoints every block already (prepare_model_for_kbit_training).
        if self.run.grad_checkpoint || self.run.load_in_4bit {
            return;
        }
        let changed = Scenario {
            grad_checkpoint: true,
            ..self.run.clone()
        };
        self.push(WhatIfKind::GradCheckpoint, changed, false, true);
    }

    /// bf16 autocast in place of float32 weights without autocast (float16 on a card without
    /// bf16); nothing when the weights are already 16-bit or autocast is on.
    fn dtype(&mut self) {
        if self.run.dtype != Dtype::Float32 || self.run.half_weights() || self.run.load_in_4bit {
            return;
        }
        let dtype = if self.bf16_ok() {
            Dtype::Bfloat16
        } else {
            Dtype::Float16
        };
        let changed = Scenario {
            dtype,
            ..self.run.clone()
        };
        self.push(WhatIfKind::Dtype, changed, true, false);
    }

    /// The float32 weights loaded in bfloat16 instead and trained as they are (`weights_dtype`,
    /// with Trainer's `bf16=True`), where the card has bf16.
    fn bf16_weights(&mut self) {
        // QLoRA upcasts what it does not quantize to float32 whatever it was loaded in.
        if self.run.half_weights() || !self.bf16_ok() || self.run.load_in_4bit {
            return;
        }
        let changed = Scenario {
            weights_dtype: WeightsDtype::Bfloat16,
            dtype: Dtype::Bfloat16,
            ..self.run.clone()
        };
        self.push(WhatIfKind::PureBf16, changed, true, false);
    }

    /// PEFT's LoRA, by how little it changes training: for a full fine-tune, LoRA of rank
    /// [`LORA_RANK`] on PEFT's default targets (all-linear where PEFT has none, as for Phi-3);
    /// for a LoRA run, half its rank (the same modules adapted), then PEFT's default targets
    /// where the run adapts more modules (the adapters' saved inputs and masks shrink with them).
    fn lora(&mut self) {
        if !has_peft_lora(self.a) {
            return;
        }
        if self.run.lora_rank == 0 {
            let changed = with_lora(&self.run, self.a, LORA_RANK, None);
            self.push(WhatIfKind::Lora, changed, true, false);
            return;
        }
        if self.run.lora_rank >= 2 {
            let changed = Scenario {
                lora_rank: self.run.lora_rank / 2,
                ..self.run.clone()
            };
            self.push(WhatIfKind::Lora, changed, true, false);
        }
        let adapted = |t: LoraTargets| t.resolve(self.a).map_or(0, |m| m.len());
        // A mixture of experts has no PEFT default: its attention's projections, which leave
        // the experts without merged copies (`hf_moe::targets`).
        let fewer = LoraTargets::peft_default(self.a)
            .or_else(|| super::hf_moe::targets::attention_only(self.a));
        if let Some(fewer) = fewer.filter(|d| adapted(*d) < adapted(self.run.lora_targets)) {
            let changed = Scenario {
                lora_targets: fewer,
                ..self.run.clone()
            };
            self.push(WhatIfKind::Lora, changed, true, false);
        }
    }

    /// QLoRA on the run ([`with_qlora`]), where the card has bf16.
    fn qlora(&mut self) {
        if self.run.load_in_4bit || !self.bf16_ok() {
            return;
        }
        let changed = with_qlora(&self.run);
        self.push(WhatIfKind::Qlora, changed, true, false);
    }

    /// bitsandbytes' 8-bit AdamW, plain and paged, in place of fused AdamW.
    fn optimizers(&mut self) {
        if self.run.optimizer != Optimizer::Adamw {
            return;
        }
        for optimizer in [Optimizer::Adamw8bit, Optimizer::PagedAdamw8bit] {
            let changed = Scenario {
                optimizer,
                ..self.run.clone()
            };
            self.push(WhatIfKind::Optimizer, changed, true, false);
        }
    }

    /// Half the sequence length.
    fn shorter_sequences(&mut self) {
        if self.run.block_size < 2 {
            return;
        }
        let mut changed = Scenario {
            block_size: self.run.block_size / 2,
            ..self.run.clone()
        };
        // nanochat keeps its --total-batch-size in tokens: half the sequence, twice the
        // micro-steps (which keeps the gradients between them).
        if self.a.family == super::arch::Family::Nanochat {
            changed.gradient_accumulation_steps =
                changed.gradient_accumulation_steps.saturating_mul(2);
        }
        self.push(WhatIfKind::BlockSize, changed, true, false);
    }

    /// Liger Kernel's fused linear cross-entropy (`fused_ce.rs`), where the family has it: no
    /// change to training, but a patch to the model's code, so after every setting above.
    fn fused_cross_entropy(&mut self) {
        if self.run.fused_linear_cross_entropy {
            return;
        }
        let changed = Scenario {
            fused_linear_cross_entropy: true,
            ..self.run.clone()
        };
        self.push(WhatIfKind::FusedCrossEntropy, changed, false, false);
    }

    /// nanochat, when the run does not fit a GPU and no option before this does: the deepest
    /// shallower model that fits, as
    /// base_train.py builds it (`--depth`: the width at the default aspect ratio of 64 and head
    /// width of 128, the same sequence and window pattern). Left out for a model not built with
    /// those defaults, whose aspect ratio the description does not keep.
    fn shallower_nanochat(&mut self) {
        use super::arch::{Family, Span};
        use super::nanochat::GptConfig;
        let a = self.a;
        let fitting = self.out.iter().any(|o| o.fits == Some(true));
        if a.family != Family::Nanochat || self.base.fits != Some(false) || fitting {
            return;
        }
        let pattern: String = a.attention.sliding_window.as_ref().map_or_else(
            || "L".to_owned(),
            |w| {
                w.pattern
                    .iter()
                    .map(|s| if *s == Span::Local { 'S' } else { 'L' })
                    .collect()
            },
        );
        let config = |depth: u64| GptConfig {
            vocab_size: a.vocab_size,
            ..GptConfig::from_depth(depth, 64, 128, self.run.block_size, &pattern)
        };
        let own = config(a.layers);
        if own.n_embd != a.hidden || own.n_head != a.attention.heads {
            return;
        }
        // The memory grows with the depth (more and wider layers): bisect for the deepest
        // that fits, below the run's own.
        let fits = |depth: u64| {
            let shallower = config(depth).architecture(&format!("{} at depth {depth}", a.name));
            estimate_model(&shallower, &self.run, self.catalog)
                .ok()
                .filter(|e| e.fits == Some(true))
        };
        let (mut lo, mut hi) = (0u64, a.layers);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid).is_some() {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        if let Some(e) = (lo >= 1).then(|| fits(lo)).flatten() {
            let o = option(
                WhatIfKind::NLayer,
                &self.run,
                &self.base,
                e.scenario.clone(),
                &e,
                true,
                None,
            );
            self.out.push(o);
        }
    }

    /// When no option fits the GPU: the least invasive combination that does. The levers are
    /// SDPA, checkpointing (neither changes training), bf16 weights, PEFT's LoRA (families with
    /// it), QLoRA, the paged 8-bit optimizer and half the sequence (these do), and Liger's fused
    /// cross-entropy (a patch: counted as invasive as those); the subsets are tried by how many invasive levers they use, then how many levers,
    /// then the latest lever they use (later levers cost more), each with the largest micro-batch that fits (same effective
    /// batch). The first that fits is kept: before the first option that changes training
    /// unless it changes training itself. When none fits, every lever the family computes
    /// together at micro-batch 1 (`combination_all`).
    fn combination(&mut self) {
        if self.run.gpu.is_none() || self.out.iter().any(|o| o.fits == Some(true)) {
            return;
        }
        type Lever<'l> = Box<dyn Fn(&mut Scenario) + 'l>;
        let a = self.a;
        let lora = has_peft_lora(a);
        let mut levers: Vec<(bool, Lever<'_>)> = vec![
            (false, Box::new(|s| s.flash = true)),
            (false, Box::new(|s| s.grad_checkpoint = true)),
            (
                true,
                Box::new(|s| {
                    if !s.half_weights() {
                        s.weights_dtype = WeightsDtype::Bfloat16;
                        s.dtype = Dtype::Bfloat16;
                    }
                }),
            ),
        ];
        if lora {
            levers.push((
                true,
                Box::new(move |s| {
                    *s = if s.lora_rank == 0 {
                        with_lora(s, a, LORA_RANK, None)
                    } else {
                        with_lora(s, a, s.lora_rank, LoraTargets::peft_default(a))
                    }
                }),
            ));
        }
        if self.run.batch_layout == BatchLayout::PaddingFree {
            levers.push((false, Box::new(|s| s.batch_layout = BatchLayout::Padded)));
            if !self.run.flash_attention_2() {
                levers.push((false, Box::new(with_flash_attention_2)));
            }
        }
        let qlora_lever = levers.len();
        levers.push((true, Box::new(|s| *s = with_qlora(s))));
        levers.push((true, Box::new(|s| s.optimizer = Optimizer::PagedAdamw8bit)));
        levers.push((true, Box::new(|s| s.block_size = (s.block_size / 2).max(1))));
        // Liger's fused cross-entropy: training unchanged, but a patch to the model's code,
        // ranked as invasive as a lever that changes training, and last among them.
        let fused_lever = levers.len();
        levers.push((false, Box::new(|s| s.fused_linear_cross_entropy = true)));
        let n = levers.len();
        let mut subsets: Vec<u32> = (1..(1u32 << n)).collect();
        let cost = |m: &u32| {
            let invasive = (0..n)
                .filter(|i| m & (1 << i) != 0 && (levers[*i].0 || *i == fused_lever))
                .count();
            (invasive, m.count_ones(), *m)
        };
        subsets.sort_by_key(cost);
        for m in subsets {
            let mut s = self.run.clone();
            for (i, (_, apply)) in levers.iter().enumerate() {
                if m & (1 << i) != 0 {
                    apply(&mut s);
                }
            }
            let bf16 = (s.half_weights() && !self.run.half_weights())
                || (s.load_in_4bit && !self.run.load_in_4bit);
            if changes_between(&self.run, &s).is_empty() || (bf16 && !self.bf16_ok()) {
                continue;
            }
            let Some(b) = self.largest_fitting(&s) else {
                continue;
            };
            let changed = with_micro_batch(&s, b, self.eff);
            let Some(e) = self.estimate(&changed) else {
                continue;
            };
            let training = (0..n).any(|i| m & (1 << i) != 0 && levers[i].0);
            let pct = changed
                .grad_checkpoint
                .then(|| checkpoint_extra_compute_pct(self.a, &self.base))
                .filter(|_| !self.run.grad_checkpoint);
            let o = option(
                WhatIfKind::Combination,
                &self.run,
                &self.base,
                changed,
                &e,
                training,
                pct,
            );
            let at = if training {
                self.out.len()
            } else {
                self.out
                    .iter()
                    .position(|w| w.changes_training)
                    .unwrap_or(self.out.len())
            };
            self.out.insert(at, o);
            return;
        }
        // None fits: every lever the family computes, at micro-batch 1, to say how far off.
        let mut all = with_micro_batch(&self.run, 1, self.eff);
        for (i, (_, apply)) in levers.iter().enumerate() {
            let mut next = all.clone();
            apply(&mut next);
            let refused =
                ((i == 2 || i == qlora_lever) && !self.bf16_ok()) || self.estimate(&next).is_none();
            if !refused {
                all = next;
            }
        }
        if let Some(e) = self.estimate(&all).filter(|_| all != self.run) {
            let pct = (all.grad_checkpoint && !self.run.grad_checkpoint)
                .then(|| checkpoint_extra_compute_pct(self.a, &self.base));
            let training = all.weights() != self.run.weights()
                || all.block_size != self.run.block_size
                || all.lora_rank != self.run.lora_rank
                || all.lora_targets != self.run.lora_targets
                || all.load_in_4bit != self.run.load_in_4bit
                || all.optimizer != self.run.optimizer;
            let o = option(
                WhatIfKind::CombinationAll,
                &self.run,
                &self.base,
                all,
                &e,
                training,
                pct,
            );
            self.out.push(o);
        }
    }

    /// The largest divisor of the effective batch whose micro-batch fits with the settings of
    /// `s`, trying each from the run's micro-batch down (None when not even 1 fits).
    fn largest_fitting(&self, s: &Scenario) -> Option<u64> {
        let mut b = largest_divisor_at_most(self.eff, self.run.batch_size);
        while let Some(m) = b {
            let fits = self
                .estimate(&with_micro_batch(s, m, self.eff))
                .is_some_and(|e| e.verdict == Some(Verdict::Fits));
            if fits {
                return Some(m);
            }
            b = m
                .checked_sub(1)
                .and_then(|n| largest_divisor_at_most(self.eff, n));
        }
        None
    }

    /// Whether the run's GPU (any, when none is named) computes in bfloat16.
    fn bf16_ok(&self) -> bool {
        self.run
            .gpu
            .as_deref()
            .and_then(|id| self.catalog.get(id))
            .is_none_or(|g| g.bf16)
    }
}

/// `s` with flash-attn's kernels (`attn_implementation="flash_attention_2"`).
fn with_flash_attention_2(s: &mut Scenario) {
    s.flash = true;
    s.attn_implementation = Some(super::AttnImplementation::FlashAttention2);
}
