//! A generate guide's table block: `{{ solve_table() }}`, the guide's run and each variant's (a
//! model on a card) with the solvers' answers; `present::solve_table` writes it.

use super::data::GuideData;
use super::ExpandContext;
use crate::present::solve_table::{solve_table as write, SolveRow};

/// The solvers' table of the guide's runs, in front-matter order (the scenario's first).
pub(super) fn solve_table(data: &GuideData, ctx: &ExpandContext<'_>) -> Result<String, String> {
    let g = data.generate("solve_table()")?;
    let rows: Vec<SolveRow<'_>> = std::iter::once(&g.run)
        .chain(g.variants.iter().map(|(_, r)| r))
        .map(|r| SolveRow {
            estimate: &r.estimate,
            max_context: r.max_context,
            max_batch: r.max_batch,
        })
        .collect();
    Ok(write(&rows, ctx.loc))
}
