//! How a nanochat estimate is shown where its code differs from what the generic wording says:
//! the breakdown's lines (float32 matrices beside embeddings in `COMPUTE_DTYPE`, the 16-bit
//! weight copies its `Linear` makes, not autocast, and Muon with AdamW) and the options' flags
//! (`base_train.py`'s own).

use super::rows::Line;
use crate::estimate::{Change, Dtype, Estimate, Family, Scenario};
use crate::i18n::Localizer;

/// The label of `line` in the breakdown of `e` (scenario `s`): nanochat's own wording for its
/// weights, optimizer and weight copies, [`Line::label`] otherwise.
pub(crate) fn line_label(line: Line, e: &Estimate, s: &Scenario, loc: &Localizer) -> String {
    if e.architecture().family == Family::Nanochat {
        match line {
            Line::Weights if s.dtype != Dtype::Float32 => return loc.t("est-weights-nanochat"),
            Line::Optimizer => {
                return loc.t_args(line.key(), &[("optimizer", "Muon + AdamW".into())]);
            }
            Line::Autocast => return loc.t("est-weight-casts-nanochat"),
            _ => {}
        }
    }
    line.label(s, e.peak_phase, loc)
}

/// A change as the flag of the program that runs `family`: nanochat's `base_train.py` spells
/// the micro-batch `--device-batch-size`, the sequence `--max-seq-len` and the depth `--depth`,
/// and derives the micro-steps (from `--total-batch-size`) and the width and heads (from
/// `--depth`) itself, so those changes have no flag of their own (`None`); every other family's
/// is `rows::flag`.
pub(crate) fn flag_of(family: Family, c: &Change) -> Option<String> {
    if family != Family::Nanochat {
        return Some(super::rows::flag(c));
    }
    let name = match c.key.as_str() {
        "batch_size" => "device-batch-size",
        "block_size" => "max-seq-len",
        "n_layer" => "depth",
        "gradient_accumulation_steps" | "n_head" | "n_embd" => return None,
        _ => return Some(super::rows::flag(c)),
    };
    Some(format!("--{name}={}", c.value))
}
