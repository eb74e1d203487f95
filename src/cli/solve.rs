//! `vramdoc estimate --solve max_context|max_batch`: which solver a flag names, running it on a
//! sampling scenario, and the answer in the JSON (`solve`) and under the table or Markdown.

use crate::diagnostics::Diagnostic;
use crate::estimate::{
    self, GpuCatalog, SampleEstimate, Sampling, Scenario, ScenarioError, Solution,
};
use crate::i18n::Localizer;
use crate::present::solve_report::{sentences, Solved};

/// The solvers `--solve` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Solve {
    /// The longest prompt plus new tokens that fits.
    MaxContext,
    /// The largest batch that fits.
    MaxBatch,
}

impl Solve {
    /// Parses `max_context` or `max_batch` (also with a hyphen).
    pub(crate) fn parse(text: &str) -> Result<Solve, Box<Diagnostic>> {
        match text.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "max_context" => Ok(Solve::MaxContext),
            "max_batch" => Ok(Solve::MaxBatch),
            _ => Err(Box::new(
                Diagnostic::error(format!("--solve {text}: unknown solver"))
                    .with_help("use --solve max_context or --solve max_batch"),
            )),
        }
    }

    /// The JSON key of the answer.
    fn key(self) -> &'static str {
        match self {
            Solve::MaxContext => "max_context",
            Solve::MaxBatch => "max_batch",
        }
    }
}

/// A solver fits a card: without one there is nothing to solve for.
pub(crate) fn needs_gpu(solve: Option<Solve>, s: &Scenario) -> Result<(), Box<Diagnostic>> {
    match (solve, &s.gpu) {
        (Some(which), None) => Err(Box::new(
            Diagnostic::error(format!(
                "--solve {}: a solver finds what fits on a card, and no card is given",
                which.key()
            ))
            .with_help(
                "name the card with --gpu ID (and --other-processes for what else runs on it)",
            ),
        )),
        _ => Ok(()),
    }
}

/// The error for `--solve` with a training scenario.
pub(crate) fn training_refused(solve: Solve) -> Diagnostic {
    Diagnostic::error(format!(
        "--solve {}: the solvers answer for the generate phase (sampling), and this scenario trains",
        solve.key()
    ))
    .with_help("add --phase generate, or give nanoGPT's sample.py")
}

/// Runs the solver on sample.py's run; sample.py has no batch to solve for.
pub(crate) fn for_sampling(
    solve: Solve,
    s: &Scenario,
    run: &Sampling,
    catalog: &GpuCatalog,
) -> Result<Result<Solution, ScenarioError>, Box<Diagnostic>> {
    match solve {
        Solve::MaxContext => Ok(estimate::sampling_max_context(s, run, catalog)),
        Solve::MaxBatch => Err(Box::new(
            Diagnostic::error(
                "--solve max_batch: nanoGPT's sample.py draws its num_samples samples one after another, one sequence at a time: it has no batch to grow".to_owned(),
            )
            .with_help("use --solve max_context; num_samples changes the time, not the memory"),
        )),
    }
}

/// The `solve` object of the JSON: the answer under the solver's name, what bounds it, and for a
/// context the prompt and new tokens it is made of; for Hugging Face `generate`'s context the
/// memory bound (`memory_max_context`) and the model's position bound (`position_limit`, its
/// `position_limit_source` and what the code does past it, `past_position_limit`), also for a
/// batch whose context passes the positions.
pub(crate) fn json(solve: Solve, sol: &Solution, new_tokens: u64) -> serde_json::Value {
    let mut map = serde_json::Map::new();
    map.insert(solve.key().to_owned(), serde_json::json!(sol.value));
    if solve == Solve::MaxContext {
        map.insert("prompt_tokens".into(), serde_json::json!(sol.prompt_tokens));
        map.insert("max_new_tokens".into(), serde_json::json!(new_tokens));
    }
    map.insert("limited_by".into(), serde_json::json!(sol.limited_by));
    if solve == Solve::MaxContext && sol.position_limit.is_some() {
        map.insert(
            "memory_max_context".into(),
            serde_json::json!(sol.memory_max_context),
        );
    }
    if let Some(p) = sol.position_limit {
        map.insert("position_limit".into(), serde_json::json!(p.positions));
        map.insert("position_limit_source".into(), serde_json::json!(p.source));
        map.insert("past_position_limit".into(), serde_json::json!(p.past));
    }
    serde_json::Value::Object(map)
}

/// The answer's sentences for a sampling estimate.
pub(crate) fn sampling_text(
    solve: Solve,
    sol: &Solution,
    est: &SampleEstimate,
    loc: &Localizer,
) -> Vec<String> {
    let gpu = est.gpu.as_ref().map_or("", |g| g.name.as_str());
    let solved = match solve {
        Solve::MaxContext => Solved::MaxContext {
            gpu,
            new: est.sampling.max_new_tokens,
            limit: est.scenario.block_size,
        },
        Solve::MaxBatch => Solved::MaxBatch { gpu },
    };
    sentences(sol, solved, loc)
}
