//! The table (terminal) and Markdown formats of `vramdoc estimate`, localized.

use fluent_bundle::FluentValue;

use super::table::{aligned, bold, markdown_table, text_table_wrapped, Align, TextRow};
use super::text::wrap;
use super::verdict::{estimate_verdict, verdict_rule};
use crate::estimate::arch::HF_TRANSFORMERS;
use crate::estimate::{Estimate, Family, TrainMoment, WhatIf};
use crate::i18n::Localizer;
use crate::present::{self, Line, OptionRow};
use crate::scenario::model::applies;

/// A readable terminal report: scenario, model, breakdown, verdict, options.
pub(crate) fn table(
    e: &Estimate,
    options: &[WhatIf],
    loc: &Localizer,
    ignored: &[String],
) -> String {
    let mut out = format!(
        "{}\n\n{}\n",
        loc.t("est-title"),
        loc.t("est-heading-scenario")
    );
    for line in wrap(&scenario_pairs(e), 96) {
        out += &format!("  {line}\n");
    }
    out += &format!("\n{}\n", loc.t("est-heading-model"));
    out += &aligned(&model_rows(e, loc), false);
    out += &format!("\n{}\n", heading_memory(e, loc));
    out += &aligned(&breakdown_rows(e, loc), true);
    out += &format!(
        "  {}\n\n{}\n",
        logits_line(e, loc),
        estimate_verdict(e, loc)
    );
    if e.gpu.is_some() {
        out += &format!("{}\n", verdict_rule(loc));
    }
    out += &format!("\n{}\n", loc.t("est-heading-options"));
    if options.is_empty() {
        out += &format!("  {}\n", no_options(e, loc));
    } else {
        out += &options_text(options, e.architecture().family, loc);
    }
    if !ignored.is_empty() {
        let keys = FluentValue::from(ignored.join(", "));
        out += &format!("\n{}\n", loc.t_args("est-ignored", &[("keys", keys)]));
    }
    out + &format!("\n{}\n", note(e, loc))
}

/// The line for an empty options list: none applies (nanoGPT), or none is computed yet (another
/// model).
fn no_options(e: &Estimate, loc: &Localizer) -> String {
    if e.architecture().is_nanogpt() {
        loc.t("est-no-options")
    } else {
        loc.t("est-no-options-model")
    }
}

/// The note under the report: whose training step the estimate replays.
fn note(e: &Estimate, loc: &Localizer) -> String {
    if e.architecture().is_nanogpt() {
        loc.t("est-note")
    } else if e.architecture().family == Family::Nanochat {
        loc.t_args(
            "est-note-nanochat",
            &[arg(
                "commit",
                crate::estimate::nanochat::short_commit().to_owned(),
            )],
        )
    } else if e.scenario.trainer == crate::estimate::HfTrainer::Trl {
        loc.t_args(
            "est-note-trl",
            &[
                arg("trl", crate::estimate::TRL_VERSION.to_owned()),
                arg("version", HF_TRANSFORMERS.to_owned()),
            ],
        )
    } else {
        loc.t_args(
            "est-note-model",
            &[arg("version", HF_TRANSFORMERS.to_owned())],
        )
    }
}

/// Markdown a guide can embed: the same content as tables.
pub(crate) fn markdown(e: &Estimate, options: &[WhatIf], loc: &Localizer) -> String {
    let pairs: Vec<String> = scenario_pairs(e).iter().map(|p| format!("`{p}`")).collect();
    let mut out = format!(
        "## {}\n\n**{}:** {}\n\n",
        loc.t("est-title"),
        loc.t("est-heading-scenario"),
        pairs.join(" ")
    );
    for (label, value) in model_rows(e, loc) {
        out += &format!("- **{label}:** {value}\n");
    }
    out += &format!("\n### {}\n\n", heading_memory(e, loc));
    let rows = breakdown_rows(e, loc);
    let last = rows.len().saturating_sub(1);
    let cells: Vec<Vec<String>> = rows
        .into_iter()
        .enumerate()
        .filter(|(_, (label, _))| !label.is_empty())
        .map(|(i, (label, value))| match i == last {
            true => vec![bold(&label), bold(&value)],
            false => vec![label, value],
        })
        .collect();
    let header = [loc.t("est-col-component"), loc.t("est-col-memory")];
    out += &markdown_table(&header, &[Align::Default, Align::Right], &cells);
    out += &format!(
        "\n{}\n\n{}\n\n",
        logits_line(e, loc),
        estimate_verdict(e, loc)
    );
    if e.gpu.is_some() {
        out += &format!("{}\n\n", verdict_rule(loc));
    }
    out += &format!("### {}\n\n", loc.t("est-heading-options"));
    if options.is_empty() {
        out += &format!("{}\n", no_options(e, loc));
    } else {
        out += &options_markdown(options, e.architecture().family, loc);
    }
    out + &format!("\n_{}_\n", note(e, loc))
}

/// The scenario's keys and values, those the model has (a Hugging Face model has no nanoGPT
/// shape keys: its config gives them).
fn scenario_pairs(e: &Estimate) -> Vec<String> {
    let family = e.architecture().family;
    e.scenario
        .display_values()
        .into_iter()
        .filter(|(k, _)| applies(k, family))
        .map(|(k, v)| format!("{k}={v}"))
        .collect()
}

/// A family as the model row names it (a proper name, the same in every language).
fn family_label(family: Family) -> &'static str {
    match family {
        Family::NanoGpt => "nanoGPT",
        Family::HfGpt2 => "Hugging Face GPT-2",
        Family::Llama => "Llama family",
        Family::Gemma2 => "Gemma 2",
        Family::Gemma3 => "Gemma 3",
        Family::Moe => "mixture of experts",
        Family::Nanochat => "nanochat",
    }
}

/// The model, when it is not nanoGPT's (whose shape the scenario's keys show): its id or
/// path, its family and the transformers version its numbers follow.
fn model_name_row(e: &Estimate, loc: &Localizer) -> Option<(String, String)> {
    let a = e.architecture();
    if a.is_nanogpt() {
        return None;
    }
    // The terminal's printer makes any control character of a path visible.
    let name = arg("name", a.name.to_string());
    let family = arg("family", family_label(a.family).to_owned());
    let value = if a.family == Family::Nanochat {
        loc.t_args("est-model-name-value-plain", &[name, family])
    } else {
        let version = arg("version", HF_TRANSFORMERS.to_owned());
        loc.t_args("est-model-name-value", &[name, family, version])
    };
    Some((loc.t("est-model-name"), value))
}

/// The model section: parameters, optimizer groups and effective batch, then the rows that
/// apply (trainable parameters, DDP, resume).
fn model_rows(e: &Estimate, loc: &Localizer) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = model_name_row(e, loc).into_iter().collect();
    rows.push(params_row(e, loc));
    // nanoGPT's decay groups; nanochat's are Muon's and AdamW's, which the optimizer row names.
    if e.architecture().family != Family::Nanochat {
        rows.push(groups_row(e, loc));
    }
    rows.push(effective_batch_row(e, loc));
    rows.extend(trainable_row(e, loc));
    rows.extend(ddp_row(e, loc));
    rows.extend(resume_row(e, loc));
    rows
}

/// A named Fluent argument.
fn arg(name: &'static str, v: String) -> (&'static str, FluentValue<'static>) {
    (name, FluentValue::from(v))
}

/// The parameter count, and without position embeddings (as nanoGPT prints it, for its model);
/// for a mixture of experts, what one token runs through beside it (every expert is resident).
fn params_row(e: &Estimate, loc: &Localizer) -> (String, String) {
    let p = &e.params;
    let a = e.architecture();
    let value = if a.is_nanogpt() {
        "est-params-total-value"
    } else if matches!(a.mlp, crate::estimate::arch::Mlp::Moe(_)) {
        "est-params-total-value-moe"
    } else {
        "est-params-total-value-model"
    };
    (
        loc.t("est-params-total"),
        loc.t_args(
            value,
            &[
                arg("total", loc.count(p.total)),
                arg("non_embedding", loc.count(p.non_embedding)),
                arg("active", loc.count(a.active_parameter_count())),
            ],
        ),
    )
}

/// The optimizer's decayed and not-decayed groups, in parameters and tensors.
fn groups_row(e: &Estimate, loc: &Localizer) -> (String, String) {
    let p = &e.params;
    (
        loc.t("est-params-groups"),
        loc.t_args(
            "est-params-groups-value",
            &[
                arg("decay", loc.int(p.decay)),
                arg("decay_tensors", loc.int(p.decay_tensors)),
                arg("no_decay", loc.int(p.no_decay)),
                arg("no_decay_tensors", loc.int(p.no_decay_tensors)),
            ],
        ),
    )
}

/// Sequences and tokens per optimizer step.
fn effective_batch_row(e: &Estimate, loc: &Localizer) -> (String, String) {
    (
        loc.t("est-effective-batch"),
        loc.t_args(
            "est-effective-batch-value",
            &[
                arg("sequences", loc.int(e.effective_batch)),
                arg("tokens", loc.int(e.tokens_per_step)),
            ],
        ),
    )
}

/// What a fine-tune trains (LoRA adapters or all but the frozen embeddings), when not
/// everything.
fn trainable_row(e: &Estimate, loc: &Localizer) -> Option<(String, String)> {
    let (p, s) = (&e.params, &e.scenario);
    if p.trainable == p.total {
        return None;
    }
    let key = if s.lora_rank > 0 {
        "est-trainable-lora-value"
    } else {
        "est-trainable-frozen-value"
    };
    Some((
        loc.t("est-trainable"),
        loc.t_args(
            key,
            &[
                arg("trainable", loc.int(p.trainable)),
                arg("total", loc.int(p.total)),
                arg("rank", loc.int(s.lora_rank)),
                arg("targets", s.lora_targets.display()),
            ],
        ),
    ))
}

/// A DDP run's processes, micro-steps per GPU and gradient buckets.
fn ddp_row(e: &Estimate, loc: &Localizer) -> Option<(String, String)> {
    (e.scenario.ddp_world_size > 1).then(|| {
        (
            loc.t("est-ddp"),
            loc.t_args(
                "est-ddp-value",
                &[
                    arg("world", loc.int(e.scenario.ddp_world_size)),
                    arg("accumulation", loc.int(e.accumulation_per_gpu)),
                    arg("buckets", loc.bytes(e.bytes.ddp_buckets)),
                ],
            ),
        )
    })
}

/// A resumed run's checkpoint load peak and the weights it keeps.
fn resume_row(e: &Estimate, loc: &Localizer) -> Option<(String, String)> {
    (e.bytes.resume_load_peak > 0).then(|| {
        (
            loc.t("est-resume"),
            loc.t_args(
                "est-resume-value",
                &[
                    arg("load", loc.bytes(e.bytes.resume_load_peak)),
                    arg("retained", loc.bytes(e.bytes.resume_retained)),
                ],
            ),
        )
    })
}

fn heading_memory(e: &Estimate, loc: &Localizer) -> String {
    let moment = match e.train_peak_moment {
        TrainMoment::LossForward => "est-moment-loss_forward",
        TrainMoment::LossBackward => "est-moment-loss_backward",
        TrainMoment::HeadBackward => "est-moment-head_backward",
        TrainMoment::MlpBackward => "est-moment-mlp_backward",
        TrainMoment::BackwardEnd => "est-moment-backward_end",
        TrainMoment::OptimizerStep => "est-moment-optimizer_step",
        TrainMoment::AttentionBackward => "est-moment-attention_backward",
        TrainMoment::BlockRecompute => "est-moment-block_recompute",
        TrainMoment::NoTraining => "est-moment-no_training",
    };
    loc.t_args(
        "est-heading-memory",
        &[("moment", FluentValue::from(loc.t(moment)))],
    )
}

/// The components, then the peaks and totals (`present::memory_rows`); an empty label marks a
/// separator.
fn breakdown_rows(e: &Estimate, loc: &Localizer) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    for row in present::memory_rows(e, loc) {
        if row.line == Line::TrainPeak {
            rows.push((String::new(), String::new()));
        }
        let value = if row.line == Line::TotalRange {
            loc.byte_range(row.bytes, row.high)
        } else {
            loc.bytes(row.bytes)
        };
        rows.push((row.label, value));
    }
    rows
}

/// The largest logits tensor: the whole batch's, or with Liger's fused cross-entropy one
/// chunk's.
fn logits_line(e: &Estimate, loc: &Localizer) -> String {
    let s = &e.scenario;
    let rows = crate::estimate::fused_ce::logits_rows(s, e.architecture.hidden);
    let shape = format!("({rows}, {})", s.vocab_size);
    loc.t_args(
        "est-logits-tensor",
        &[
            ("shape", FluentValue::from(shape)),
            ("bytes", FluentValue::from(loc.bytes(e.bytes.logits_tensor))),
        ],
    )
}

/// The options table's header: option, change, total, saving, verdict (the training and the
/// generate options tables alike).
pub(super) fn option_header(loc: &Localizer) -> Vec<String> {
    [
        "est-col-option",
        "est-col-change",
        "est-col-total",
        "est-col-saving",
        "est-col-verdict",
    ]
    .iter()
    .map(|k| loc.t(k))
    .collect()
}

/// How the options table's columns line up: the total and the saving right, the verdict
/// centred (in Markdown).
pub(super) const OPTION_ALIGN: [Align; 5] = [
    Align::Default,
    Align::Default,
    Align::Right,
    Align::Right,
    Align::Center,
];

/// The options table's columns narrowed first when it is wider than a terminal: the change's
/// flags (one or two a line), then the label, then the verdict.
pub(super) const OPTION_NARROWING: [usize; 3] = [1, 0, 4];

/// The what-ifs `options` as a terminal table, one row per distinct change, with the footnotes
/// of the markers it uses (`vramdoc estimate` and `vramdoc diagnose`).
pub(crate) fn options_text(options: &[WhatIf], family: Family, loc: &Localizer) -> String {
    let (cells, notes) = option_table(options, family, loc, false);
    let mut rows = vec![TextRow::Cells(option_header(loc))];
    rows.extend(cells.into_iter().map(TextRow::Cells));
    let mut out = text_table_wrapped(&rows, &OPTION_ALIGN, &OPTION_NARROWING);
    for note in notes {
        out += &format!("  {note}\n");
    }
    out
}

/// The same as a Markdown table, the footnotes below it.
pub(crate) fn options_markdown(options: &[WhatIf], family: Family, loc: &Localizer) -> String {
    let (cells, notes) = option_table(options, family, loc, true);
    let mut out = markdown_table(&option_header(loc), &OPTION_ALIGN, &cells);
    out += &format!("\n{}\n", notes.join("\n\n"));
    out
}

/// The options table's rows, one per distinct change (`present::merge`), as cells, and the
/// footnotes of the markers they use.
fn option_table(
    options: &[WhatIf],
    family: Family,
    loc: &Localizer,
    md: bool,
) -> (Vec<Vec<String>>, Vec<String>) {
    let rows = present::merge(options.iter().map(|o| OptionRow::of(o, loc)));
    let cells = rows.iter().map(|r| row_cells(r, family, loc, md)).collect();
    let mut notes = present::merged_notes(&rows, loc);
    notes.extend(present::footnotes(&rows, loc));
    (cells, notes)
}

/// One option as table cells: label with markers, changes as command-line overrides (the
/// family's program's flags), total, saving, verdict.
fn row_cells(r: &OptionRow, family: Family, loc: &Localizer, md: bool) -> Vec<String> {
    let changes: Vec<String> = r
        .changes
        .iter()
        .filter_map(|c| super::nanochat_labels::flag_of(family, c))
        .collect();
    let change = if md {
        format!("`{}`", changes.join("` `"))
    } else {
        changes.join(" ")
    };
    vec![
        r.marked_label(),
        change,
        loc.bytes(r.total),
        r.saving_text(loc),
        r.verdict_text(loc),
    ]
}
