//! `vramdoc estimate --model M --phase generate`: Hugging Face `generate` on the model
//! ([`crate::estimate::estimate_generate`]) and its options ([`crate::estimate::what_if_generate`]),
//! with `--solve max_context|max_batch`, as JSON (the estimate, the `model` object, `what_if` and
//! `solve`), a table or Markdown.

use super::solve::{self, Solve};
use crate::diagnostics::Diagnostic;
use crate::estimate::{self, Generation, GpuCatalog, Scenario, ScenarioError};
use crate::i18n::Localizer;
use crate::present::generate_report;
use crate::present::solve_report::{sentences, Solved};
use crate::present::Format;
use crate::scenario::model::Model;

/// How the report is asked for.
pub(crate) struct Output<'a> {
    /// `--format`.
    pub(crate) format: Format,
    /// `--lang`.
    pub(crate) lang: &'a str,
    /// `--solve`.
    pub(crate) solve: Option<Solve>,
}

/// The report; estimator errors go through `scenario_error` (which places them at their key).
pub(crate) fn report(
    model: &Model,
    s: &Scenario,
    g: &Generation,
    catalog: &GpuCatalog,
    out: &Output<'_>,
    scenario_error: &dyn Fn(ScenarioError) -> Diagnostic,
) -> Result<String, Diagnostic> {
    let a = &model.architecture;
    let est = estimate::estimate_generate(a, s, g, catalog).map_err(scenario_error)?;
    let options = estimate::what_if_generate(a, s, g, catalog).map_err(scenario_error)?;
    let solved = match out.solve {
        Some(Solve::MaxContext) => Some(estimate::generate_max_context(a, s, g, catalog)),
        Some(Solve::MaxBatch) => Some(estimate::generate_max_batch(a, s, g, catalog)),
        None => None,
    }
    .transpose()
    .map_err(scenario_error)?;
    let json_error = |e: serde_json::Error| Diagnostic::error(e.to_string());
    if out.format == Format::Json {
        let mut value = serde_json::to_value(&est).map_err(json_error)?;
        if let serde_json::Value::Object(map) = &mut value {
            super::model_report::add_active_params(map, model);
            map.insert(
                "model".to_owned(),
                serde_json::to_value(&model.info).map_err(json_error)?,
            );
            map.insert(
                "what_if".to_owned(),
                serde_json::to_value(&options).map_err(json_error)?,
            );
            if let (Some(which), Some(sol)) = (out.solve, &solved) {
                map.insert("solve".into(), solve::json(which, sol, g.max_new_tokens));
            }
        }
        return Ok(serde_json::to_string_pretty(&value).map_err(json_error)? + "\n");
    }
    let loc = Localizer::for_flag(out.lang).map_err(|d| *d)?;
    let mut text = match out.format {
        Format::Markdown => generate_report::markdown(&est, &options, &loc),
        _ => generate_report::table(&est, &options, &loc),
    };
    if let (Some(which), Some(sol)) = (out.solve, &solved) {
        let gpu = est.gpu.as_ref().map_or("", |c| c.name.as_str());
        let limit = a.position_limit().positions;
        let what = match which {
            Solve::MaxContext => Solved::MaxContext {
                gpu,
                new: g.max_new_tokens,
                limit,
            },
            Solve::MaxBatch => Solved::MaxBatch { gpu },
        };
        for line in sentences(sol, what, &loc) {
            text.push('\n');
            text.push_str(&line);
            text.push('\n');
        }
    }
    Ok(text)
}
