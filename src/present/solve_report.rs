//! A solver's answer (`vramdoc estimate --solve`) as sentences under the report: the longest
//! context or the largest batch that fits, and what bounds it when the card does not.

use fluent_bundle::FluentValue;

use crate::estimate::arch::{PastLimit, PositionLimit, PositionSource};
use crate::estimate::{Limit, Solution};
use crate::i18n::Localizer;

/// What was solved for, with what the sentences name.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Solved<'a> {
    /// The longest prompt plus new tokens, `new` of them generated; the model's limits.
    MaxContext {
        /// The card's name.
        gpu: &'a str,
        /// `max_new_tokens`.
        new: u64,
        /// nanoGPT's `block_size` (sample.py's crop), or GPT-2's `n_positions`.
        limit: u64,
    },
    /// The largest batch.
    MaxBatch {
        /// The card's name.
        gpu: &'a str,
    },
}

fn arg(name: &'static str, v: String) -> (&'static str, FluentValue<'static>) {
    (name, FluentValue::from(v))
}

/// The answer's sentences, in `loc`'s language.
pub(crate) fn sentences(sol: &Solution, solved: Solved<'_>, loc: &Localizer) -> Vec<String> {
    match solved {
        Solved::MaxContext { gpu, new, limit } => {
            let gpu = arg("gpu", gpu.to_owned());
            let new = arg("new", loc.count(new));
            let (Some(tokens), Some(prompt)) = (sol.value, sol.prompt_tokens) else {
                return match (sol.limited_by, sol.position_limit) {
                    (Limit::Positions, Some(p)) => {
                        vec![loc.t_args("solve-max-context-none-positions", &with(&p, new, loc))]
                    }
                    _ => vec![loc.t_args("solve-max-context-none", &[gpu, new])],
                };
            };
            let mut out = vec![loc.t_args(
                "solve-max-context",
                &[
                    gpu.clone(),
                    new,
                    arg("tokens", loc.count(tokens)),
                    arg("prompt", loc.count(prompt)),
                ],
            )];
            let memory = sol.memory_max_context.map(|m| {
                loc.t_args(
                    "solve-memory-bound",
                    &[gpu.clone(), arg("memory", loc.count(m))],
                )
            });
            match (sol.limited_by, sol.position_limit) {
                (Limit::BlockSize, _) => out
                    .push(loc.t_args("solve-limit-block-size", &[arg("block", loc.count(limit))])),
                (Limit::Positions, Some(p)) if p.past == PastLimit::Warns => {
                    out.push(loc.t_args(
                        "solve-limit-rotary-positions",
                        &with(&p, arg("new", String::new()), loc),
                    ));
                    out.extend(memory);
                }
                (Limit::Positions, p) => {
                    let positions = p.map_or(limit, |p| p.positions);
                    out.push(loc.t_args(
                        "solve-limit-positions",
                        &[arg("positions", loc.count(positions))],
                    ));
                    // generate cannot run past a learned table: the memory bound is what the
                    // card would hold were the table longer.
                    out.extend(sol.memory_max_context.map(|m| {
                        loc.t_args(
                            "solve-memory-bound-table",
                            &[gpu.clone(), arg("memory", loc.count(m))],
                        )
                    }));
                }
                (Limit::Memory, Some(p)) => out.push(loc.t_args(
                    "solve-positions-bound",
                    &with(&p, arg("new", String::new()), loc),
                )),
                (Limit::Memory, None) => {}
            }
            out
        }
        Solved::MaxBatch { gpu } => {
            let gpu = arg("gpu", gpu.to_owned());
            let mut out = match sol.value {
                Some(b) => vec![loc.t_args("solve-max-batch", &[gpu, arg("batch", loc.count(b))])],
                None => vec![loc.t_args("solve-max-batch-none", &[gpu])],
            };
            if let Some(p) = sol.position_limit {
                out.push(loc.t_args(
                    "solve-batch-past-positions",
                    &with(&p, arg("new", String::new()), loc),
                ));
            }
            out
        }
    }
}

/// The position bound's arguments (`positions`, `context`, `source`: exact, never rounded as
/// a large count may be), and `new`.
fn with(
    p: &PositionLimit,
    new: (&'static str, FluentValue<'static>),
    loc: &Localizer,
) -> [(&'static str, FluentValue<'static>); 4] {
    [
        new,
        arg("positions", loc.int(p.positions)),
        arg("context", loc.int(p.max_context)),
        arg("source", loc.t(source_key(p.source))),
    ]
}

/// The words for where a position bound comes from.
pub(crate) fn source_key(source: PositionSource) -> &'static str {
    match source {
        PositionSource::NPositions => "solve-source-n-positions",
        PositionSource::MaxPositionEmbeddings => "solve-source-max-position-embeddings",
        PositionSource::Yarn => "solve-source-yarn",
        PositionSource::RotaryTable => "solve-source-rotary-table",
    }
}
