//! QLoRA's recipe for what a `load_in_4bit` scenario leaves unset: the `BitsAndBytesConfig`
//! of the QLoRA paper and of PEFT's and transformers' QLoRA guides (`bnb_4bit_quant_type="nf4"`,
//! `bnb_4bit_use_double_quant=True`, `bnb_4bit_compute_dtype=torch.bfloat16`) and Trainer's
//! `bf16=True`, instead of `BitsAndBytesConfig`'s and Trainer's own defaults (fp4, no double
//! quantization, float32 compute, no mixed precision), which no QLoRA recipe uses. A note says
//! which were assumed.

use super::Model;
use crate::diagnostics::Diagnostic;
use crate::estimate::{Literal, Scenario};
use crate::scenario::pyconfig::Session;

/// Each key QLoRA's recipe sets, its value, and the words that say so.
const RECIPE: [(&str, &str, &str); 4] = [
    ("bnb_4bit_quant_type", "nf4", "bnb_4bit_quant_type nf4"),
    ("bnb_4bit_use_double_quant", "True", "double quantization"),
    ("bnb_4bit_compute_dtype", "bfloat16", "bfloat16 compute"),
    ("dtype", "bfloat16", "bf16=True (dtype bfloat16)"),
];

/// Sets QLoRA's recipe on the keys no input set when `load_in_4bit` is on; the note naming
/// what was assumed.
pub(super) fn defaults(
    session: &mut Session<'_>,
    scenario: &mut Scenario,
    model: &Model,
) -> Result<Option<String>, Diagnostic> {
    if !scenario.load_in_4bit {
        return Ok(None);
    }
    let mut assumed = Vec::new();
    for (key, value, words) in RECIPE {
        if session.origins.contains_key(key) {
            continue;
        }
        let literal = if value == "True" {
            Literal::Bool(true)
        } else {
            Literal::Str(value.to_owned())
        };
        session.set_default(key, &literal);
        scenario
            .set(key, literal)
            .map_err(|e| Diagnostic::error(e.to_string()))?;
        assumed.push(words);
    }
    if assumed.is_empty() {
        return Ok(None);
    }
    Ok(Some(format!(
        "model = {}: QLoRA as its recipe runs it where no input set a key: {}; prepare_model_for_kbit_training turns gradient checkpointing on",
        model.architecture.name,
        assumed.join(", ")
    )))
}
