//! The solvers' table of a generate guide (`{{ solve_table() }}`): for each `generate` run (a
//! model on a card), its weights, its total, the longest context and the most sequences at once
//! whose verdict is *fits*.

use fluent_bundle::FluentValue;

use super::html::figure;
use super::table::{markdown_cell, markdown_table, Align};
use crate::estimate::kv_cache::CacheKind;
use crate::estimate::{GenerateEstimate, Limit, Solution};
use crate::i18n::Localizer;

/// One row: a run's estimate and its solvers' answers (`None`: the run names no card).
pub(crate) struct SolveRow<'a> {
    /// The `generate` call's estimate (its model, card, generation and bytes).
    pub(crate) estimate: &'a GenerateEstimate,
    /// The longest context that fits.
    pub(crate) max_context: Option<Solution>,
    /// The largest batch that fits, at the estimate's context.
    pub(crate) max_batch: Option<Solution>,
}

/// The table, one row per run in the given order, then what the answers mean and the verdicts'
/// rule.
pub(crate) fn solve_table(rows: &[SolveRow<'_>], loc: &Localizer) -> String {
    let header = [
        loc.t("solve-col-model"),
        loc.t("solve-col-card"),
        loc.t("solve-col-weights"),
        loc.t("solve-col-context"),
        loc.t("solve-col-batch"),
    ];
    let cells: Vec<Vec<String>> = rows.iter().map(|r| row(r, loc)).collect();
    let align = [
        Align::Left,
        Align::Left,
        Align::Right,
        Align::Right,
        Align::Right,
    ];
    let mut out = markdown_table(&header, &align, &cells);
    let g = rows.first().map(|r| r.estimate.generation);
    if let Some(g) = g {
        out.push('\n');
        out.push_str(&loc.t_args(
            "solve-table-note",
            &[("new", FluentValue::from(loc.int(g.max_new_tokens)))],
        ));
        out.push_str("\n\n");
        out.push_str(&super::verdict::verdict_rule(loc));
        out.push('\n');
    }
    out
}

/// The cells of one run.
fn row(r: &SolveRow<'_>, loc: &Localizer) -> Vec<String> {
    let e = r.estimate;
    let none = || loc.t("solve-cell-none");
    let context = match r.max_context {
        Some(Solution {
            value: Some(tokens),
            prompt_tokens,
            limited_by,
            ..
        }) => {
            let mut cell = loc.t_args(
                "solve-cell-context",
                &[
                    ("tokens", FluentValue::from(loc.int(tokens))),
                    (
                        "prompt",
                        FluentValue::from(loc.int(prompt_tokens.unwrap_or(tokens))),
                    ),
                ],
            );
            if limited_by != Limit::Memory {
                cell.push(' ');
                cell.push_str(&loc.t("solve-cell-model-limit"));
            }
            cell
        }
        Some(_) => none(),
        None => String::new(),
    };
    let batch = match r.max_batch {
        Some(Solution {
            value: Some(batch), ..
        }) => loc.t_args(
            "solve-cell-batch",
            &[
                ("batch", FluentValue::from(loc.int(batch))),
                ("tokens", FluentValue::from(loc.int(e.context_tokens))),
            ],
        ),
        Some(_) => none(),
        None => String::new(),
    };
    // A cache other than the default dynamic one is named beside the model.
    let model = match e.generation.cache {
        CacheKind::Dynamic => e.architecture.name.to_string(),
        other => loc.t_args(
            "solve-cell-model-cache",
            &[
                ("model", FluentValue::from(e.architecture.name.to_string())),
                ("cache", FluentValue::from(other.as_str())),
            ],
        ),
    };
    vec![
        markdown_cell(&model),
        markdown_cell(e.gpu.as_ref().map_or("", |g| g.name.as_str())),
        figure(loc, e.bytes.weights, loc.bytes(e.bytes.weights)),
        markdown_cell(&context),
        markdown_cell(&batch),
    ]
}
