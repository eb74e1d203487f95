//! The short answer a guide page shows under its title: the verdict for the guide's scenario,
//! the first option of its options table that fits (the rows are in order of how little they
//! change training), that option as config lines and `train.py` flags to copy, and links to the
//! options table and the charts. Computed from the same rows as `options_table()`.

use fluent_bundle::FluentValue;
use serde::Serialize;

use super::data::GuideData;
use super::{escape_text, figure, tables, ExpandContext};
use crate::estimate::Verdict;
use crate::present;

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

/// The short answer for a guide with `data`, in `ctx`'s language; `None` when its scenario names
/// no GPU (there is no verdict to give).
pub(crate) fn short_answer(data: &GuideData, ctx: &ExpandContext<'_>) -> Option<ShortAnswer> {
    let loc = ctx.loc;
    let est = &data.estimate;
    let (gpu, state) = (est.gpu.as_ref()?, est.verdict?);
    let verdict = loc.t_args(
        "answer-verdict",
        &[
            ("gpu", FluentValue::from(escape_text(&gpu.name))),
            (
                "verdict",
                FluentValue::from(present::verdict_name(state, loc)),
            ),
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
    let variants = tables::same_card_variants(data, ctx);
    let rows = present::option_rows(est, &variants, &data.what_if, loc);
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
    let lines: Vec<String> = row.changes.iter().map(present::config_line).collect();
    answer.config = lines.join("\n");
    if row.needs_code {
        answer.note = Some(loc.t("answer-needs-code"));
    } else {
        let flags: Vec<String> = row.changes.iter().map(present::flag).collect();
        answer.command = Some(format!("python train.py {}", flags.join(" ")));
    }
    Some(answer)
}

/// `html` (a rendered guide body) with the ids the short answer links to: [`TABLE_ID`] on the
/// first options table (the table whose first two headers are the option and change columns)
/// and [`CHARTS_ID`] on the first chart; `answer`'s links are kept only for the targets found.
pub(crate) fn add_targets(html: &str, answer: &mut ShortAnswer, ctx: &ExpandContext<'_>) -> String {
    let loc = ctx.loc;
    let mut out = html.to_string();
    let header = format!(
        "<table><thead><tr><th style=\"text-align: left\">{}</th><th style=\"text-align: left\">{}</th>",
        escape_text(&loc.t("est-col-option")),
        escape_text(&loc.t("est-col-change"))
    );
    const WRAP: &str = "<div class=\"table-wrap\" tabindex=\"0\">";
    if let Some(at) = out.find(&header) {
        if let Some(wrap) = out[..at].rfind(WRAP) {
            out.insert_str(wrap + WRAP.len() - 1, &format!(" id=\"{TABLE_ID}\""));
            answer.table = Some(TABLE_ID);
        }
    }
    if let Some(at) = out.find("<picture>") {
        out.insert_str(at + "<picture".len(), &format!(" id=\"{CHARTS_ID}\""));
        answer.charts = Some(CHARTS_ID);
    }
    out
}
