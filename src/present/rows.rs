//! The rows an estimate is shown as, with their localized labels: one set of row builders and one
//! set of Fluent keys (`locales/*/estimate.ftl`) for `vramdoc estimate`'s table and Markdown, the
//! guides' tables and the charts, so that they name the same things the same way.

use fluent_bundle::FluentValue;

use super::verdict::verdict_word;
use crate::estimate::{
    Change, Dtype, Estimate, Optimizer, PeakPhase, Scenario, Verdict, WhatIf, WhatIfKind,
};
use crate::i18n::Localizer;
use crate::scenario::keys::{self, Key, NanoGpt, KEYS};

/// One line of the memory breakdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line {
    /// The parameters, in their storage dtype.
    Weights,
    /// The `.grad` tensors.
    Gradients,
    /// The optimizer state.
    Optimizer,
    /// Autocast's 16-bit weight copies.
    Autocast,
    /// Activations saved for backward.
    Activations,
    /// The s·b·V logits terms.
    Logits,
    /// The training step's peak.
    TrainPeak,
    /// `estimate_loss()`'s peak.
    EvalPeak,
    /// The larger of the two peaks, with its phase.
    Peak,
    /// CUDA context, cuBLAS workspace and allocator slack.
    Overhead,
    /// What nvidia-smi shows.
    Total,
    /// The total with the overhead at its low and high ends.
    TotalRange,
    /// Memory other programs hold on the card.
    OtherProcesses,
}

impl Line {
    /// The components whose sum is the training peak, in display order.
    pub(crate) const COMPONENTS: [Line; 6] = [
        Line::Weights,
        Line::Gradients,
        Line::Optimizer,
        Line::Autocast,
        Line::Activations,
        Line::Logits,
    ];

    /// Whether the line is one of the [`Line::COMPONENTS`].
    pub(crate) fn is_component(self) -> bool {
        Line::COMPONENTS.contains(&self)
    }

    /// The line's message key.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Line::Weights => "est-weights",
            Line::Gradients => "est-gradients",
            Line::Optimizer => "est-optimizer",
            Line::Autocast => "est-autocast",
            Line::Activations => "est-activations",
            Line::Logits => "est-logits",
            Line::TrainPeak => "est-train-peak",
            Line::EvalPeak => "est-eval-peak",
            Line::Peak => "est-peak",
            Line::Overhead => "est-overhead",
            Line::Total => "est-total",
            Line::TotalRange => "est-total-range",
            Line::OtherProcesses => "est-other-processes",
        }
    }

    /// The line's label for scenario `s` whose peak is in `phase`, in `loc`'s language.
    pub(crate) fn label(self, s: &Scenario, phase: PeakPhase, loc: &Localizer) -> String {
        let with = |name: &'static str, v: String| loc.t_args(self.key(), &[(name, v.into())]);
        match self {
            Line::Weights => with("dtype", weights_dtype(s).to_owned()),
            Line::Optimizer => with("optimizer", optimizer_name(s.optimizer).to_owned()),
            Line::Peak => with(
                "phase",
                loc.t(match phase {
                    PeakPhase::Train => "est-phase-train",
                    PeakPhase::Eval => "est-phase-eval",
                    PeakPhase::Load => "est-phase-load",
                }),
            ),
            _ => loc.t(self.key()),
        }
    }
}

/// The parameters' storage dtype: fp32, or bf16/fp16 (`weights_dtype`, `pure_bf16`); under QLoRA
/// the blocks' Linear weights in 4 bits and the rest in fp32 (`prepare_model_for_kbit_training`
/// upcasts them), or in bf16 as TRL's SFTTrainer leaves them.
fn weights_dtype(s: &Scenario) -> &'static str {
    use crate::estimate::{HfTrainer, QuantType};
    if s.load_in_4bit {
        match (s.bnb_4bit_quant_type, s.trainer) {
            (QuantType::Nf4, HfTrainer::Transformers) => "nf4 + fp32",
            (QuantType::Fp4, HfTrainer::Transformers) => "fp4 + fp32",
            (QuantType::Nf4, HfTrainer::Trl) => "nf4 + bf16",
            (QuantType::Fp4, HfTrainer::Trl) => "fp4 + bf16",
        }
    } else {
        match s.weights() {
            crate::estimate::Dtype::Bfloat16 => "bf16",
            crate::estimate::Dtype::Float16 => "fp16",
            crate::estimate::Dtype::Float32 => "fp32",
        }
    }
}

/// The optimizer's display name.
fn optimizer_name(o: Optimizer) -> &'static str {
    match o {
        Optimizer::Adamw => "AdamW",
        Optimizer::Adamw8bit => "AdamW 8-bit",
        Optimizer::PagedAdamw8bit => "paged AdamW 8-bit",
        Optimizer::Sgd => "SGD + momentum",
    }
}

/// One row of the memory breakdown: its line, label and bytes (`low..=high` for the range).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemoryRow {
    /// Which line.
    pub(crate) line: Line,
    /// Its label in the reader's language.
    pub(crate) label: String,
    /// Its bytes (the low end for [`Line::TotalRange`]).
    pub(crate) bytes: u64,
    /// The high end for [`Line::TotalRange`], else `bytes`.
    pub(crate) high: u64,
}

/// The breakdown of `e`: six components, peaks, overhead, total, its range, other programs'.
pub(crate) fn memory_rows(e: &Estimate, loc: &Localizer) -> Vec<MemoryRow> {
    let b = &e.bytes;
    let mut lines = vec![
        (Line::Weights, b.weights),
        (Line::Gradients, b.gradients),
        (Line::Optimizer, b.optimizer),
        (Line::Autocast, b.autocast_weights),
        (Line::Activations, b.activations),
        (Line::Logits, b.logits),
        (Line::TrainPeak, b.train_peak),
        (Line::EvalPeak, b.eval_peak),
        (Line::Peak, b.peak),
        (Line::Overhead, b.overhead),
        (Line::Total, b.total),
        (Line::TotalRange, b.total_low),
    ];
    if b.other_processes > 0 {
        lines.push((Line::OtherProcesses, b.other_processes));
    }
    // A Trainer step (a model other than nanoGPT's) runs no evaluation.
    if b.first_step_peak.is_some() {
        lines.retain(|(line, _)| *line != Line::EvalPeak);
    }
    lines
        .into_iter()
        .map(|(line, bytes)| MemoryRow {
            line,
            label: super::nanochat_labels::line_label(line, e, &e.scenario, loc),
            bytes,
            high: if line == Line::TotalRange {
                b.total_high
            } else {
                bytes
            },
        })
        .collect()
}

/// The scenario keys nanoGPT's `train.py` has no setting for, in key order: changing one is a
/// code change (the key table's [`NanoGpt::Code`] rows).
fn code_keys() -> impl Iterator<Item = &'static Key> {
    KEYS.iter().filter(|k| k.needs_code())
}

/// A change as a line of a nanoGPT config file: `compile = False`, `dtype = 'bfloat16'`.
pub(crate) fn config_line(c: &Change) -> String {
    let quoted = keys::get(&c.key).is_some_and(|k| k.kind.quoted());
    if quoted && c.value != "None" {
        format!("{} = '{}'", c.key, c.value)
    } else {
        format!("{} = {}", c.key, c.value)
    }
}

/// A change as a command-line override of `train.py`: `--compile=False`, `--dtype=bfloat16`.
pub(crate) fn flag(c: &Change) -> String {
    format!("--{}={}", c.key, c.value)
}

/// Whether a change needs a code change, not just a setting nanoGPT reads ([`code_keys`]).
pub(crate) fn needs_code(c: &Change) -> bool {
    keys::get(&c.key).is_some_and(Key::needs_code)
}

/// Whether a change patches a Hugging Face model's code rather than setting an argument
/// (Liger Kernel's fused linear cross-entropy): a code change for a model too.
pub(crate) fn patches_model(c: &Change) -> bool {
    c.key == "fused_linear_cross_entropy" && c.value == "True"
}

/// One row of an options table: one distinct change, with every name it goes by.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OptionRow {
    /// The name of the first option that makes this change, in the reader's language.
    pub(crate) label: String,
    /// The names of the later options that make the same change (merged into this row).
    pub(crate) also: Vec<String>,
    /// The changed keys.
    pub(crate) changes: Vec<Change>,
    /// Whether training itself changes (hyper-parameters, numerics or model).
    pub(crate) changes_training: bool,
    /// Whether some change is not a nanoGPT setting but a code change.
    pub(crate) needs_code: bool,
    /// Its total (nvidia-smi) bytes.
    pub(crate) total: u64,
    /// Its total with the overhead at the low end.
    pub(crate) total_low: u64,
    /// Its total with the overhead at the high end.
    pub(crate) total_high: u64,
    /// Base total minus its total (negative: it needs more).
    pub(crate) saving: i64,
    /// Its verdict against the scenario's GPU, if one is named.
    pub(crate) verdict: Option<Verdict>,
    /// Sequences per optimizer step.
    pub(crate) effective_batch: u64,
    /// Tokens per optimizer step.
    pub(crate) tokens_per_step: u64,
}

/// A named variant of a guide's scenario, as an options table lists it.
pub(crate) struct NamedVariant<'a> {
    /// Its label in the page's language.
    pub(crate) label: &'a str,
    /// Its estimate.
    pub(crate) estimate: &'a Estimate,
}

/// The options table's rows: the `variants`, then the what-ifs `options` of `base`, one row per
/// distinct change (the names of options making the same change are merged into one label).
pub(crate) fn option_rows(
    base: &Estimate,
    variants: &[NamedVariant<'_>],
    options: &[WhatIf],
    loc: &Localizer,
) -> Vec<OptionRow> {
    let candidates = variants
        .iter()
        .map(|v| {
            let e = v.estimate;
            let changes = crate::estimate::changes_between(&base.scenario, &e.scenario);
            OptionRow {
                label: v.label.to_owned(),
                also: Vec::new(),
                changes_training: changes
                    .iter()
                    .any(|c| changes_training_key(&c.key, &base.scenario, &e.scenario)),
                // A Hugging Face model's variants are Trainer and from_pretrained settings, or a
                // patch to its code.
                needs_code: changes
                    .iter()
                    .any(|c| needs_code(c) && (e.scenario.model.is_none() || patches_model(c))),
                changes,
                total: e.bytes.total,
                total_low: e.bytes.total_low,
                total_high: e.bytes.total_high,
                saving: base.bytes.total as i64 - e.bytes.total as i64,
                verdict: e.verdict,
                effective_batch: e.effective_batch,
                tokens_per_step: e.tokens_per_step,
            }
        })
        .chain(options.iter().map(|o| OptionRow::of(o, loc)));
    merge(candidates)
}

/// One row per distinct change, in first-seen order: a row making the same change as an earlier
/// one adds its name to that row's `also` (said under the table, [`merged_notes`]) and its
/// "changes training" mark. A row keeps one label, so a table cell never glues names together.
pub(crate) fn merge(candidates: impl IntoIterator<Item = OptionRow>) -> Vec<OptionRow> {
    let mut rows: Vec<OptionRow> = Vec::new();
    for row in candidates {
        let same = |r: &&mut OptionRow| {
            r.changes.len() == row.changes.len()
                && row.changes.iter().all(|c| r.changes.contains(c))
        };
        match rows.iter_mut().find(same) {
            Some(r) => {
                if r.label != row.label && !r.also.contains(&row.label) {
                    r.also.push(row.label);
                }
                r.changes_training |= row.changes_training;
            }
            None => rows.push(row),
        }
    }
    rows
}

/// Whether changing `key` from `a` to `b` changes training, as the key table's
/// [`keys::TrainingEffect`] column says: the micro-batch split of one effective batch does not.
fn changes_training_key(key: &str, a: &Scenario, b: &Scenario) -> bool {
    match keys::get(key).map(|k| k.training) {
        Some(keys::TrainingEffect::EffectiveBatch) => {
            a.batch_size.saturating_mul(a.gradient_accumulation_steps)
                != b.batch_size.saturating_mul(b.gradient_accumulation_steps)
        }
        Some(keys::TrainingEffect::Same) => false,
        Some(keys::TrainingEffect::Changes) | None => true,
    }
}

/// The message key of a what-if's label: per kind, and for a float16 switch its own.
pub fn option_key(kind: WhatIfKind, dtype: Dtype) -> String {
    match (kind, dtype) {
        (WhatIfKind::Dtype, Dtype::Float16) => "est-opt-dtype_fp16".to_owned(),
        _ => {
            let name = serde_json::to_value(kind).ok();
            format!(
                "est-opt-{}",
                name.as_ref().and_then(|v| v.as_str()).unwrap_or_default()
            )
        }
    }
}

/// The message key of a Hugging Face model's what-if where its wording differs from nanoGPT's:
/// a `Trainer` or `from_pretrained` setting, not a patch to nanoGPT.
pub(crate) fn model_option_key(kind: WhatIfKind, dtype: Dtype) -> Option<&'static str> {
    match (kind, dtype) {
        (WhatIfKind::Flash, _) => Some("est-opt-hf-flash"),
        (WhatIfKind::GradCheckpoint, _) => Some("est-opt-hf-grad_checkpoint"),
        (WhatIfKind::Dtype, Dtype::Float16) => Some("est-opt-hf-dtype_fp16"),
        (WhatIfKind::Dtype, _) => Some("est-opt-hf-dtype"),
        (WhatIfKind::Lora, _) => Some("est-opt-hf-lora"),
        (WhatIfKind::Optimizer, _) => Some("est-opt-hf-optimizer"),
        _ => None,
    }
}

/// A what-if's label in `loc`'s language, without markers (a model other than nanoGPT's, named
/// by the scenario's `model`, has its own wording where [`model_option_key`] gives one).
pub(crate) fn option_label(o: &WhatIf, loc: &Localizer) -> String {
    let model_key = o
        .scenario
        .model
        .as_ref()
        .and_then(|_| model_option_key(o.kind, o.scenario.dtype));
    let key = match model_key {
        // The paged optimizer is its own option beside the 8-bit one: its own label.
        Some("est-opt-hf-optimizer") if o.scenario.optimizer == Optimizer::PagedAdamw8bit => {
            "est-opt-hf-optimizer-paged".to_owned()
        }
        Some(k) => k.to_owned(),
        None => option_key(o.kind, o.scenario.dtype),
    };
    match (o.extra_compute_pct, o.kind) {
        (Some(pct), _) => loc.t_args(
            &key,
            &[("pct", FluentValue::from(loc.percent(pct / 100.0)))],
        ),
        (None, WhatIfKind::NEmbd | WhatIfKind::NLayer) => loc.t_args(
            &key,
            &[("params", FluentValue::from(loc.count(o.params_total)))],
        ),
        (_, WhatIfKind::Lora | WhatIfKind::Qlora) => loc.t_args(
            &key,
            &[
                ("rank", FluentValue::from(loc.int(o.scenario.lora_rank))),
                (
                    "targets",
                    FluentValue::from(o.scenario.lora_targets.display()),
                ),
            ],
        ),
        _ => loc.t(&key),
    }
}

impl OptionRow {
    /// The row of one what-if, on its own.
    pub(crate) fn of(o: &WhatIf, loc: &Localizer) -> OptionRow {
        OptionRow {
            label: option_label(o, loc),
            also: Vec::new(),
            changes: o.changes.clone(),
            changes_training: o.changes_training,
            // A Hugging Face model's options are Trainer and from_pretrained settings, or a
            // patch to its code.
            needs_code: o
                .changes
                .iter()
                .any(|c| needs_code(c) && (o.scenario.model.is_none() || patches_model(c))),
            total: o.total,
            total_low: o.total_low,
            total_high: o.total_high,
            saving: o.saving_bytes,
            verdict: o.verdict,
            effective_batch: o.effective_batch,
            tokens_per_step: o.effective_batch.saturating_mul(o.scenario.block_size),
        }
    }

    /// The label with its markers: † changes training, ‡ needs a code change.
    pub(crate) fn marked_label(&self) -> String {
        let mut label = self.label.clone();
        if self.changes_training {
            label += " †";
        }
        if self.needs_code {
            label += " ‡";
        }
        label
    }

    /// The saving in `loc`'s language: the bytes saved, "—" for none, or how much more it needs.
    pub(crate) fn saving_text(&self, loc: &Localizer) -> String {
        match self.saving {
            s if s > 0 => loc.bytes(s.unsigned_abs()),
            0 => "—".to_owned(),
            s => loc.t_args(
                "est-saving-more",
                &[("bytes", FluentValue::from(loc.bytes(s.unsigned_abs())))],
            ),
        }
    }

    /// The verdict in words, with the range of the total when only part of it fits; "—"
    /// without a GPU.
    pub(crate) fn verdict_text(&self, loc: &Localizer) -> String {
        verdict_word(self.verdict, self.total_low, self.total_high, loc)
    }

    /// The effective batch in sequences, with the tokens per step when they differ from the
    /// base's while the sequences do not (a shorter context hides behind the same sequences).
    pub(crate) fn batch_text(&self, base: &Estimate, loc: &Localizer) -> String {
        if self.effective_batch == base.effective_batch
            && self.tokens_per_step != base.tokens_per_step
        {
            loc.t_args(
                "est-batch-tokens",
                &[
                    (
                        "sequences",
                        FluentValue::from(loc.int(self.effective_batch)),
                    ),
                    ("tokens", FluentValue::from(loc.int(self.tokens_per_step))),
                ],
            )
        } else {
            loc.int(self.effective_batch)
        }
    }
}

/// The footnotes explaining the markers the rows use: `† est-changes-training`, then `‡
/// est-needs-code` followed by what each code change of these rows needs (`est-code-<key>`,
/// one note per changed key, so LoRA's row is not told about PyTorch 2.0).
pub(crate) fn footnotes(rows: &[OptionRow], loc: &Localizer) -> Vec<String> {
    let mut notes = Vec::new();
    if rows.iter().any(|r| r.changes_training) {
        notes.push(format!("† {}", loc.t("est-changes-training")));
    }
    let mut keys: Vec<&str> = Vec::new();
    for key in code_keys() {
        let note_key = code_note_key(key);
        let used = rows
            .iter()
            .any(|r| r.needs_code && r.changes.iter().any(|c| c.key == key.name));
        if used && !keys.contains(&note_key) {
            keys.push(note_key);
        }
    }
    if !keys.is_empty() {
        let each: Vec<String> = keys.iter().map(|k| loc.t(k)).collect();
        let sep = if loc.lang().starts_with("zh") {
            "；"
        } else {
            "; "
        };
        // Chinese runs sentences together; the other languages put a space between them.
        let (space, stop) = if loc.lang().starts_with("zh") {
            ("", "。")
        } else {
            (" ", ".")
        };
        // Rows whose only code change patches a Hugging Face model (Liger) say so, not nanoGPT.
        let lead = if rows
            .iter()
            .filter(|r| r.needs_code)
            .all(|r| r.changes.iter().any(patches_model))
        {
            "est-needs-patch"
        } else {
            "est-needs-code"
        };
        notes.push(format!("‡ {}{space}{}{stop}", loc.t(lead), each.join(sep)));
    }
    notes
}

/// The message key of what a code change of `key` needs (LoRA's two keys share one).
fn code_note_key(key: &Key) -> &'static str {
    match key.nanogpt {
        NanoGpt::Code(note) => note,
        _ => "",
    }
}

/// One note per row that merges several options: "“A” is also: “B”, “C”." (`est-merged`).
pub(crate) fn merged_notes(rows: &[OptionRow], loc: &Localizer) -> Vec<String> {
    rows.iter()
        .filter(|r| !r.also.is_empty())
        .map(|r| {
            let others: Vec<String> = r
                .also
                .iter()
                .map(|a| loc.t_args("est-quoted", &[("text", FluentValue::from(a.clone()))]))
                .collect();
            let sep = if loc.lang().starts_with("zh") {
                "、"
            } else {
                ", "
            };
            loc.t_args(
                "est-merged",
                &[
                    ("label", FluentValue::from(r.label.clone())),
                    ("others", FluentValue::from(others.join(sep))),
                ],
            )
        })
        .collect()
}

/// Every message key the rows build at run time (each must exist in every locale).
pub(crate) fn runtime_message_keys() -> Vec<String> {
    let mut keys: Vec<String> = [
        Line::COMPONENTS.as_slice(),
        &[
            Line::TrainPeak,
            Line::EvalPeak,
            Line::Peak,
            Line::Overhead,
            Line::Total,
            Line::TotalRange,
            Line::OtherProcesses,
        ],
    ]
    .concat()
    .into_iter()
    .map(|l| l.key().to_owned())
    .collect();
    for kind in WhatIfKind::ALL {
        for dtype in [Dtype::Float32, Dtype::Bfloat16, Dtype::Float16] {
            keys.push(option_key(kind, dtype));
            keys.extend(model_option_key(kind, dtype).map(str::to_owned));
        }
    }
    keys.extend(
        [
            "est-phase-train",
            "est-phase-eval",
            "est-saving-more",
            "est-batch-tokens",
            "est-changes-training",
            "est-needs-code",
            "est-needs-patch",
            "est-merged",
            "est-quoted",
            "est-trainable",
            "est-trainable-frozen-value",
            "est-trainable-lora-value",
        ]
        .map(str::to_owned),
    );
    keys.extend(code_keys().map(|k| code_note_key(k).to_owned()));
    keys.extend(super::verdict::MESSAGE_KEYS.map(str::to_owned));
    keys.sort();
    keys.dedup();
    keys
}

mod trainer_args;
pub(crate) use trainer_args::{loads_model, model_setting};

#[cfg(test)]
mod tests;
