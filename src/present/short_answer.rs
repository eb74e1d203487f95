//! The short answer a guide page shows under its title: the verdict for the guide's scenario,
//! the first option of its options table that fits (the rows are in order of how little they
//! change training), that option as config lines and `train.py` flags to copy, and links to the
//! options table and the charts. Computed from the same rows as `options_table()`.

use fluent_bundle::FluentValue;
use serde::Serialize;

use super::html::{escape_text, figure};
use super::rows::{self, NamedVariant};
use super::verdict::verdict_name;
use crate::estimate::{Estimate, Verdict, WhatIf};
use crate::i18n::Localizer;

/// The id the page gives its (first) options table, which the short answer links to.
pub(crate) const TABLE_ID: &str = "options";
/// The id the page gives its first chart.
pub(crate) const CHARTS_ID: &str = "charts";

/// What the guide template shows in its short-answer box. The `verdict` and `change` sentences
/// are HTML (they hold figures with their exact bytes); everything else is text.
#[derive(Debug, Serialize)]
pub struct ShortAnswer {
    /// The scenario's verdict against its card, with its total and the card's capacity.
    pub(crate) verdict: String,
    /// The option that fits with the least change, named (`None`: none is needed or none fits).
    pub(crate) change: Option<String>,
    /// That option's settings as lines of a nanoGPT config file.
    pub(crate) config: String,
    /// The same as `train.py` flags, when every setting is one train.py reads.
    pub(crate) command: Option<String>,
    /// The words before the command.
    pub(crate) command_intro: String,
    /// Said when the option needs a code change.
    pub(crate) note: Option<String>,
    /// Said when the scenario already fits, or when no option does.
    pub(crate) none: Option<String>,
    /// The options table's id, when the page has one.
    pub(crate) table: Option<&'static str>,
    /// The first chart's id, when the page has one.
    pub(crate) charts: Option<&'static str>,
}

/// The short answer for a guide whose scenario's estimate is `est` (the options table lists
/// `variants`, then `what_if`), in `loc`'s language; `None` when its scenario names no GPU (there
/// is no verdict to give).
pub(crate) fn short_answer(
    est: &Estimate,
    variants: &[NamedVariant<'_>],
    what_if: &[WhatIf],
    loc: &Localizer,
) -> Option<ShortAnswer> {
    let (gpu, state) = (est.gpu.as_ref()?, est.verdict?);
    let verdict = loc.t_args(
        "answer-verdict",
        &[
            ("gpu", FluentValue::from(escape_text(&gpu.name))),
            ("verdict", FluentValue::from(verdict_name(state, loc))),
            (
                "total",
                FluentValue::from(figure(loc, est.bytes.total, loc.bytes(est.bytes.total))),
            ),
            (
                "capacity",
                FluentValue::from(figure(
                    loc,
                    gpu.capacity_bytes,
                    loc.bytes(gpu.capacity_bytes),
                )),
            ),
        ],
    );
    let mut answer = ShortAnswer {
        verdict,
        change: None,
        config: String::new(),
        command: None,
        command_intro: loc.t("answer-command-intro"),
        note: None,
        none: None,
        table: None,
        charts: None,
    };
    if state == Verdict::Fits {
        answer.none = Some(loc.t("answer-fits"));
        return Some(answer);
    }
    let rows = rows::option_rows(est, variants, what_if, loc);
    let Some(row) = rows.iter().find(|r| r.verdict == Some(Verdict::Fits)) else {
        answer.none = Some(loc.t("answer-none"));
        return Some(answer);
    };
    let total = figure(loc, row.total, loc.bytes(row.total));
    answer.change = Some(loc.t_args(
        "answer-change",
        &[
            ("option", FluentValue::from(escape_text(&row.label))),
            ("total", FluentValue::from(total)),
        ],
    ));
    if est.scenario.model.is_some() {
        // A Hugging Face model: the settings as Trainer and from_pretrained take them, and a
        // patch to its code (Liger's) said to be one.
        answer.config = trainer_lines(&row.changes);
        if row.needs_code {
            answer.note = Some(loc.t("answer-needs-patch"));
        }
        return Some(answer);
    }
    let lines: Vec<String> = row.changes.iter().map(rows::config_line).collect();
    answer.config = lines.join("\n");
    if row.needs_code {
        answer.note = Some(loc.t("answer-needs-code"));
    } else {
        let flags: Vec<String> = row.changes.iter().map(rows::flag).collect();
        answer.command = Some(format!("python train.py {}", flags.join(" ")));
    }
    Some(answer)
}

/// A model's changed settings as the Python that sets them, one call per object the code
/// builds: bitsandbytes' keys as `BitsAndBytesConfig(...)` handed to `from_pretrained` as
/// `quantization_config` (transformers takes no `load_in_4bit` of its own), `from_pretrained`'s
/// other arguments, PEFT's keys as `LoraConfig(...)`, and the rest as TRL's `SFTConfig`
/// (`TrainingArguments` with `max_length`), one per line ([`rows::model_setting`]).
fn trainer_lines(changes: &[crate::estimate::Change]) -> String {
    let is_bnb = |c: &&crate::estimate::Change| {
        c.key.starts_with("load_in_") || c.key.starts_with("bnb_4bit_")
    };
    let is_lora = |c: &&crate::estimate::Change| c.key.starts_with("lora_");
    let is_patch = |c: &&crate::estimate::Change| rows::patches_model(c);
    let bnb: Vec<String> = changes
        .iter()
        .filter(is_bnb)
        .map(rows::model_setting)
        .collect();
    let lora: Vec<String> = changes
        .iter()
        .filter(is_lora)
        .map(|c| match c.key.as_str() {
            "lora_rank" => format!("r={}", c.value),
            _ => rows::model_setting(c),
        })
        .collect();
    let patches: Vec<String> = changes
        .iter()
        .filter(is_patch)
        .map(rows::model_setting)
        .collect();
    let rest = || {
        changes
            .iter()
            .filter(|c| !is_bnb(c) && !is_lora(c) && !is_patch(c))
    };
    let mut load: Vec<String> = rest()
        .filter(|c| rows::loads_model(c))
        .map(rows::model_setting)
        .collect();
    let args: Vec<String> = rest()
        .filter(|c| !rows::loads_model(c))
        .map(|c| format!("    {},", rows::model_setting(c)))
        .collect();
    let mut out = Vec::new();
    if !bnb.is_empty() {
        out.push(format!("bnb = BitsAndBytesConfig({})", bnb.join(", ")));
        load.push("quantization_config=bnb".to_owned());
    }
    if !load.is_empty() {
        out.push(format!(
            "model = AutoModelForCausalLM.from_pretrained(..., {})",
            load.join(", ")
        ));
    }
    out.extend(patches);
    if !lora.is_empty() {
        out.push(format!(
            "peft_config = LoraConfig({}, task_type=\"CAUSAL_LM\")",
            lora.join(", ")
        ));
    }
    if !args.is_empty() {
        out.push("args = SFTConfig(".to_owned());
        out.extend(args);
        out.push("    ...\n)".to_owned());
    }
    out.join("\n")
}
