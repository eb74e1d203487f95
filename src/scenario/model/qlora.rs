//! QLoRA's recipe for what a `load_in_4bit` scenario leaves unset: the `BitsAndBytesConfig`
//! of the QLoRA paper and of PEFT's and transformers' QLoRA guides (`bnb_4bit_quant_type="nf4"`,
//! `bnb_4bit_use_double_quant=True`, `bnb_4bit_compute_dtype=torch.bfloat16`) and Trainer's
//! `bf16=True`, instead of `BitsAndBytesConfig`'s and Trainer's own defaults (fp4, no double
//! quantization, float32 compute, no mixed precision), which no QLoRA recipe uses. A note says
//! which were assumed. `prepare_model_for_kbit_training` turns gradient checkpointing on
//! (`use_gradient_checkpointing=True`, its default), and the QLoRA step is replayed only so:
//! `grad_checkpoint` is set to true, and an input that turns it off is refused at its line.
//! With `trainer` trl, TRL's `SFTTrainer` does instead (`SFTConfig`'s `gradient_checkpointing`
//! and `bf16` default to true), and a note says what its QLoRA changes (`estimate/trl.rs`).

use super::Model;
use crate::diagnostics::Diagnostic;
use crate::estimate::{HfTrainer, Literal, Scenario, TRL_VERSION};
use crate::scenario::pyconfig::Session;

/// Each key QLoRA's recipe sets, its value, and the words that say so.
const RECIPE: [(&str, &str, &str); 5] = [
    ("bnb_4bit_quant_type", "nf4", "bnb_4bit_quant_type nf4"),
    ("bnb_4bit_use_double_quant", "True", "double quantization"),
    ("bnb_4bit_compute_dtype", "bfloat16", "bfloat16 compute"),
    ("dtype", "bfloat16", "bf16=True (dtype bfloat16)"),
    (
        "grad_checkpoint",
        "True",
        "gradient checkpointing (prepare_model_for_kbit_training's default)",
    ),
];

/// Sets QLoRA's recipe on the keys no input set when `load_in_4bit` is on; the notes naming
/// what was assumed and, with `trainer` trl, what SFTTrainer changes.
pub(super) fn defaults(
    session: &mut Session<'_>,
    scenario: &mut Scenario,
    model: &Model,
) -> Result<Vec<String>, Diagnostic> {
    if !scenario.load_in_4bit {
        return Ok(Vec::new());
    }
    let trl = scenario.trainer == HfTrainer::Trl;
    let by = if trl {
        "TRL's SFTTrainer runs it with SFTConfig's default gradient_checkpointing=True"
    } else {
        "`prepare_model_for_kbit_training` runs it by default, with gradient checkpointing on"
    };
    if let (Some(at), false) = (
        session.origins.get("grad_checkpoint"),
        scenario.grad_checkpoint,
    ) {
        return Err(at
            .error(&format!("`grad_checkpoint` = False beside `load_in_4bit`: QLoRA is modelled as {by}; without it the step is not replayed"))
            .with_help("leave grad_checkpoint out (or True) with load_in_4bit"));
    }
    let mut assumed = Vec::new();
    for (key, value, words) in RECIPE {
        let words = match key {
            "grad_checkpoint" if trl => "gradient checkpointing (SFTConfig's default)",
            "dtype" if trl => "bf16=True (SFTConfig's default; dtype bfloat16)",
            _ => words,
        };
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
    let mut notes = Vec::new();
    if !assumed.is_empty() {
        notes.push(format!(
            "model = {}: QLoRA as its recipe runs it where no input set a key: {}",
            model.architecture.name,
            assumed.join(", ")
        ));
    }
    if trl {
        notes.push(format!(
            "trainer = trl: QLoRA as TRL {TRL_VERSION}'s SFTTrainer prepares it: no prepare_model_for_kbit_training (the head, embeddings and norms stay bfloat16), the adapters cast to bfloat16 (their gradients and AdamW's moments too), gradient checkpointing on, and compute_loss's entropy and token accuracy after the forward (below the loss's backward, which stays the peak)"
        ));
    }
    Ok(notes)
}
