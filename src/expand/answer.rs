//! The short answer under a guide's title: `present::short_answer` computes it from the guide's
//! data; this adds the ids it links to in the rendered page.

use super::data::GuideData;
use super::{escape_text, tables, ExpandContext};
pub use crate::present::short_answer::ShortAnswer;
use crate::present::short_answer::{CHARTS_ID, TABLE_ID};

/// The short answer for a guide with `data`, in `ctx`'s language; `None` when its scenario names
/// no GPU (there is no verdict to give) and for a generate guide (its solvers' table answers).
pub(crate) fn short_answer(data: &GuideData, ctx: &ExpandContext<'_>) -> Option<ShortAnswer> {
    let data = data.train("the short answer").ok()?;
    let variants = tables::same_card_variants(data, ctx);
    crate::present::short_answer::short_answer(&data.estimate, &variants, &data.what_if, ctx.loc)
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
