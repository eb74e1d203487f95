//! A solver's answer (`vramdoc estimate --solve`) as sentences under the report: the longest
//! context or the largest batch that fits, and what bounds it when the card does not.

use fluent_bundle::FluentValue;

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
        /// nanoGPT's `block_size` (sample.py's crop), GPT-2's `n_positions`, or nanochat's
        /// rotary rows.
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
                return vec![loc.t_args("solve-max-context-none", &[gpu, new])];
            };
            let mut out = vec![loc.t_args(
                "solve-max-context",
                &[
                    gpu,
                    new,
                    arg("tokens", loc.count(tokens)),
                    arg("prompt", loc.count(prompt)),
                ],
            )];
            match sol.limited_by {
                Limit::BlockSize => out
                    .push(loc.t_args("solve-limit-block-size", &[arg("block", loc.count(limit))])),
                Limit::Positions => out.push(loc.t_args(
                    "solve-limit-positions",
                    &[arg("positions", loc.count(limit))],
                )),
                Limit::RotaryTables => out
                    .push(loc.t_args("solve-limit-rotary", &[arg("positions", loc.count(limit))])),
                Limit::Memory => {}
            }
            out
        }
        Solved::MaxBatch { gpu } => {
            let gpu = arg("gpu", gpu.to_owned());
            match sol.value {
                Some(b) => vec![loc.t_args("solve-max-batch", &[gpu, arg("batch", loc.count(b))])],
                None => vec![loc.t_args("solve-max-batch-none", &[gpu])],
            }
        }
    }
}
