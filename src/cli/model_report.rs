//! `vramdoc estimate --model`: the report of a model given by the scenario key `model` (the
//! estimator's [`crate::estimate::estimate_model`], whichever family it computes: a family marked
//! computed there is reached from here unchanged), and the refusal of a family it does not
//! compute yet, with the model's parameter count.

use crate::diagnostics::Diagnostic;
use crate::estimate::{Estimate, WhatIf};
use crate::i18n::Localizer;
use crate::present::{estimate_report, Format};
use crate::scenario::model::{family_name, Model};

/// The report in `format`: the JSON gains a `model` object (id or path, family, model_type,
/// whether computed, the transformers version, the catalog source), the model's what-ifs
/// (`what_if`, as nanoGPT's estimate has them) and, for a mixture of experts, `params.active`
/// beside `params.total` (every expert resident).
pub(crate) fn render(
    est: &Estimate,
    options: &[WhatIf],
    model: &Model,
    format: Format,
    lang: &str,
    ignored: &[String],
) -> Result<String, Box<Diagnostic>> {
    let json_error = |e: serde_json::Error| Box::new(Diagnostic::error(e.to_string()));
    if format == Format::Json {
        let mut value = serde_json::to_value(est).map_err(json_error)?;
        if let serde_json::Value::Object(map) = &mut value {
            add_active_params(map, model);
            let info = serde_json::to_value(&model.info).map_err(json_error)?;
            map.insert("model".to_owned(), info);
            let list = serde_json::to_value(options).map_err(json_error)?;
            map.insert("what_if".to_owned(), list);
        }
        let text = serde_json::to_string_pretty(&value).map_err(json_error)?;
        return Ok(text + "\n");
    }
    let loc = Localizer::for_flag(lang)?;
    Ok(match format {
        Format::Markdown => estimate_report::markdown(est, options, &loc),
        _ => estimate_report::table(est, options, &loc, ignored),
    })
}

/// For a mixture of experts, `params.active` (what one token runs through) beside
/// `params.total` (every expert, all resident: what memory needs), in an estimate's JSON.
pub(crate) fn add_active_params(
    map: &mut serde_json::Map<String, serde_json::Value>,
    model: &Model,
) {
    if let Some(serde_json::Value::Object(params)) = map.get_mut("params") {
        if matches!(model.architecture.mlp, crate::estimate::arch::Mlp::Moe(_)) {
            let active = model.architecture.active_parameter_count();
            params.insert("active".to_owned(), active.into());
        }
    }
}

/// An estimate error of a model: for a family whose training step is not computed yet, the help
/// gives what is known (its parameter count, from its description) and what to give instead.
pub(crate) fn refusal(model: &Model, error: Diagnostic) -> Diagnostic {
    let a = &model.architecture;
    if a.family.computed() {
        return error;
    }
    let ids = crate::scenario::model::computed_ids();
    error.with_help(format!(
        "{} is {} ({}) of {} parameters; of the model catalog, vramdoc estimates the training memory of {} (or give a config.json of such a model)",
        crate::terminal::visible_line(&a.name),
        family_name(a.family),
        model.info.model_type,
        grouped(a.parameter_count()),
        ids.join(", "),
    ))
}

/// `n` with a comma every three digits (messages are English).
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_grouped() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(8_030_261_248), "8,030,261,248");
    }
}
