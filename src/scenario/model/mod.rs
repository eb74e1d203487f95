//! The scenario key `model`: a model other than nanoGPT's, given as an id of the bundled catalog
//! ([`catalog`], `data/models/`) or as a path to a Hugging Face `config.json` (or a folder
//! holding one), resolved to its [`Architecture`] ([`config`]) for
//! [`crate::estimate::estimate_model`].
//!
//! With a model, the run is one Hugging Face `Trainer` step, not nanoGPT's `train.py`:
//! [`settle`] refuses the keys such a model does not have (nanoGPT's shape keys and train.py's
//! own settings, each at the line that set it, naming both), and gives the keys no input set
//! `Trainer`'s defaults instead of train.py's, with a note saying which.

mod batches;
mod catalog;
pub(crate) use catalog::distance as edit_distance;
mod config;
mod config_file;
mod facts;
mod generate;
mod qlora;
mod rope;
pub(crate) mod weights;

use std::path::Path;

use serde::Serialize;

use super::keys::{self, KEYS};
use super::pyconfig::{Session, ValueOrigin};
use crate::diagnostics::Diagnostic;
use crate::estimate::arch::{Architecture, Family, Positions, HF_TRANSFORMERS};
use crate::estimate::{Literal, LoraModule, LoraTargets, Phase, Scenario};
use config_file::{config_path, looks_like_path, read_config_file};

pub(crate) use catalog::ModelSource;
pub(crate) use generate::{cache_kind, CACHE_KINDS_HELP};

/// A resolved model.
#[derive(Debug, Clone)]
pub(crate) struct Model {
    /// Its description (named by the catalog id or the path).
    pub(crate) architecture: Architecture,
    /// What the JSON's `model` object says about it.
    pub(crate) info: ModelInfo,
    /// The dropout its config trains with, where the family's estimate reads one.
    dropout: Option<f64>,
    /// What `from_pretrained(dtype="auto")` loads its weights in, where known.
    pub(crate) loaded: Option<weights::LoadDtype>,
    /// nanochat's `sequence_len`: the generate phase's `block_size` where no input set one.
    sequence_len: Option<u64>,
}

impl Model {
    /// The model one of nanochat's scripts builds or loads (`nanochat_script`), named by the
    /// script's path.
    pub(crate) fn nanochat_script(architecture: Architecture, path: &str) -> Model {
        Model {
            info: ModelInfo {
                id: None,
                path: Some(path.to_owned()),
                family: Family::Nanochat,
                model_type: "nanochat".to_owned(),
                computed: true,
                transformers: None,
                nanochat: nanochat_commit(Family::Nanochat),
                source: None,
            },
            architecture,
            dropout: None,
            loaded: None,
            sequence_len: None,
        }
    }
}

/// The nanochat commit a nanochat model's figures follow (none for other families).
fn nanochat_commit(family: Family) -> Option<&'static str> {
    (family == Family::Nanochat).then_some(crate::estimate::arch::NANOCHAT_COMMIT)
}

/// The JSON's `model` object: which model, whose code, and where its facts come from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ModelInfo {
    /// The catalog id, when given by id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) id: Option<String>,
    /// The `config.json` read, when given by path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) path: Option<String>,
    /// Whose code runs it.
    pub(crate) family: Family,
    /// The config's `model_type`.
    pub(crate) model_type: String,
    /// Whether vramdoc computes this family's training step.
    pub(crate) computed: bool,
    /// The transformers version whose modeling code the estimate follows (Hugging Face
    /// families).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) transformers: Option<&'static str>,
    /// The nanochat commit whose code the estimate follows (nanochat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) nanochat: Option<&'static str>,
    /// A catalog entry's source; `null` for a `config.json` path.
    pub(crate) source: Option<ModelSource>,
}

/// Whether the scenario key `key` applies to a model of `family`: the key table's `families`
/// column. A model given by `model` lacks nanoGPT's keys: its config gives the shape (`n_layer`,
/// `n_head`, `n_embd`, `vocab_size`, `bias`), train.py's own run settings (`init_from`,
/// `eval_only`, `eval_batch_size`: a `Trainer` step has no `estimate_loss()`) have no meaning
/// for it, and nanoGPT's fine-tuning patches (`freeze_embeddings`, LoRA) are not its code.
pub(crate) fn applies(key: &str, family: Family) -> bool {
    keys::get(key).is_none_or(|k| k.families.contains(family))
}

/// `Trainer`'s sequence length when none is given: nanoGPT's 1024, or the model's positions if
/// fewer.
const DEFAULT_SEQUENCE: u64 = 1024;

/// The `generate` call a model's generate phase describes (`generate.rs`).
pub(crate) fn generation(
    session: &Session<'_>,
    scenario: &Scenario,
) -> Result<crate::estimate::Generation, Diagnostic> {
    generate::generation(session, scenario)
}

/// Resolves the scenario's `model` (set at `origin`), refuses the keys the model lacks, and gives
/// the keys no input set `Trainer`'s defaults; returns the model and the notes saying what was
/// assumed. Every error is returned, each at its line.
pub(crate) fn settle(
    session: &mut Session<'_>,
    scenario: &mut Scenario,
) -> Result<(Model, Vec<String>), Vec<Diagnostic>> {
    let origin = session.origins.get("model").cloned();
    let value = scenario.model.clone().unwrap_or_default();
    let model = resolve(&value, origin.as_ref())?;
    let mut errors = Vec::new();
    let family = model.architecture.family;
    for row in KEYS.iter().filter(|k| !k.families.contains(family)) {
        let key = row.name;
        let Some(at) = session.origins.get(key) else {
            continue;
        };
        // A key other families read (PEFT's LoRA, say) is no key of nanoGPT's alone.
        if row.families.iter().any(|f| f != Family::NanoGpt) {
            let readers: Vec<&str> = row.families.iter().map(family_name).collect();
            errors.push(
                at.error(&format!(
                    "`{key}` is computed for {} only, and model = {value} is {} ({}): vramdoc does not model it there",
                    readers.join(", "),
                    family_name(family),
                    model.info.model_type,
                ))
                .with_help(format!("remove `{key}` to estimate {value}")),
            );
            continue;
        }
        errors.push(
            at.error(&format!(
                "`{key}` is a key of nanoGPT's train.py, and model = {value} is {} ({}), which {}: vramdoc does not mix the two",
                family_name(model.architecture.family),
                model.info.model_type,
                if matches!(key, "n_layer" | "n_head" | "n_embd" | "vocab_size" | "bias") {
                    "takes its shape from its own config"
                } else if family == Family::Nanochat {
                    "trains as its own base_train.py step, without train.py's settings and patches"
                } else {
                    "trains as a Trainer step, without train.py's settings and patches"
                }
            ))
            .with_help(format!(
                "remove `{key}` to estimate {value}, or remove `model` to estimate nanoGPT's model"
            )),
        );
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut notes = if scenario.phase == Phase::Generate {
        generate::defaults(session, scenario, &model).map_err(|e| vec![e])?
    } else {
        let qlora = qlora::defaults(session, scenario, &model).map_err(|e| vec![e])?;
        let mut notes = trainer_defaults(session, scenario, &model).map_err(|e| vec![e])?;
        notes.extend(qlora);
        notes.extend(batches::note(&model, scenario));
        notes
    };
    notes.extend(weights::settle(session, scenario, &model).map_err(|e| vec![e])?);
    if let Err(e) = scenario.attention_agrees(session.origins.contains_key("flash")) {
        let at = session.origins.get("attn_implementation");
        let d = at.map_or_else(|| Diagnostic::error(&e.message), |o| o.error(&e.message));
        return Err(vec![
            d.with_help("give attn_implementation alone (sdpa or eager)")
        ]);
    }
    notes.extend(lora_targets(session, scenario, &model).map_err(|e| vec![e])?);
    notes.extend(crate::estimate::peft_notes(&model.architecture, scenario));
    Ok((model, notes))
}

/// PEFT's LoRA targets for `model`: the names given, checked against its blocks' Linear modules
/// (the error at `lora_targets`' line lists them), or PEFT's default for its `model_type` when
/// `lora_rank` is set without them (a note says so; Phi-3 has none, and PEFT raises).
fn lora_targets(
    session: &mut Session<'_>,
    scenario: &mut Scenario,
    model: &Model,
) -> Result<Option<String>, Diagnostic> {
    let a = &model.architecture;
    if !keys::Families::LORA.contains(a.family) {
        return Ok(None);
    }
    // Without adapters PEFT is not applied: its settings would change nothing.
    if scenario.lora_rank == 0 {
        for key in ["lora_targets", "lora_dropout"] {
            if let Some(at) = session.origins.get(key) {
                return Err(at
                    .error(&format!(
                        "`{key}` is a setting of PEFT's LoRA, which lora_rank = 0 turns off"
                    ))
                    .with_help(
                        "set lora_rank (PEFT's r, e.g. 16) to fine-tune with LoRA, or remove it",
                    ));
            }
        }
    }
    if let Some(at) = session.origins.get("lora_targets") {
        return match scenario.lora_targets.resolve(a) {
            Ok(_) => Ok(None),
            Err(m) => Err(at.error(&m).with_help(
                "name the model's own modules (PEFT matches the end of each module's path), or all-linear",
            )),
        };
    }
    if scenario.lora_rank == 0 {
        return Ok(None);
    }
    let Some(default) = LoraTargets::peft_default(a) else {
        let names: Vec<&str> = LoraModule::names(a).iter().map(|m| m.as_str()).collect();
        let raises = crate::estimate::peft_default_error(a)
            .unwrap_or("Please specify `target_modules` in `peft_config`");
        let msg = format!(
            "model = {} ({}) has no default LoRA targets in PEFT (get_peft_model raises \"{raises}\")",
            a.name, model.info.model_type
        );
        let help = format!(
            "set lora_targets to some of {} or all-linear",
            names.join(", ")
        );
        return Err(match session.origins.get("lora_rank") {
            Some(at) => at.error(&msg),
            None => Diagnostic::error(msg),
        }
        .with_help(help));
    };
    let literal = Literal::Str(default.display());
    session.set_default("lora_targets", &literal);
    scenario
        .set("lora_targets", literal)
        .map_err(|e| Diagnostic::error(e.to_string()))?;
    Ok(Some(format!(
        "model = {}: LoRA on {}, PEFT's default target_modules for {} (--lora_targets)",
        a.name,
        default.display(),
        model.info.model_type
    )))
}

/// `Trainer`'s defaults for a run of `model`: each key, its value, and the words that say it
/// was assumed.
pub(crate) fn trainer_default_values(model: &Model) -> Vec<(&'static str, Literal, &'static str)> {
    if model.architecture.family == Family::Nanochat {
        return nanochat_default_values();
    }
    let sequence = default_sequence(model);
    let mut values = vec![
        ("batch_size", Literal::Int(8), "per_device_train_batch_size 8"),
        (
            "gradient_accumulation_steps",
            Literal::Int(1),
            "gradient_accumulation_steps 1",
        ),
        (
            "dtype",
            Literal::Str("float32".to_owned()),
            "no mixed precision (dtype float32; fp16=True is --dtype=float16, bf16=True --dtype=bfloat16)",
        ),
        ("compile", Literal::Bool(false), "no torch.compile"),
        (
            "dropout",
            Literal::Float(model.dropout.unwrap_or(0.0)),
            "the config's dropout",
        ),
        (
            "block_size",
            Literal::Int(i64::try_from(sequence).unwrap_or(1024)),
            "sequences of block_size tokens",
        ),
    ];
    // transformers 5.24 gives Gemma 2 no SDPA (`_supports_sdpa = False`: softcapping), so
    // `from_pretrained` picks eager attention.
    if model.architecture.family == Family::Gemma2 {
        values.push((
            "flash",
            Literal::Bool(false),
            "eager attention (transformers has no SDPA for Gemma 2's softcapping)",
        ));
    }
    values
}

/// nanochat's `base_train.py` defaults (at the pinned commit) for the keys it has: 32 sequences
/// of 2048 tokens per device, bfloat16 compute (an sm80+ GPU's `COMPUTE_DTYPE`), one
/// micro-step, no dropout, the model compiled (`torch.compile(model, dynamic=False)`).
fn nanochat_default_values() -> Vec<(&'static str, Literal, &'static str)> {
    vec![
        ("batch_size", Literal::Int(32), "--device-batch-size 32"),
        (
            "gradient_accumulation_steps",
            Literal::Int(1),
            "one micro-step per optimizer step",
        ),
        (
            "dtype",
            Literal::Str("bfloat16".to_owned()),
            "COMPUTE_DTYPE bfloat16 (an sm80+ GPU's; float32 before Ampere is --dtype=float32)",
        ),
        (
            "compile",
            Literal::Bool(true),
            "the model compiled as the script compiles it (inductor's partition; compile=false \
             is the eager step)",
        ),
        ("dropout", Literal::Float(0.0), "no dropout"),
        ("block_size", Literal::Int(2048), "--max-seq-len 2048"),
    ]
}

/// `Trainer`'s sequence length for `model` when none is given.
fn default_sequence(model: &Model) -> u64 {
    match model.architecture.positions {
        Positions::Learned { max_positions } => DEFAULT_SEQUENCE.min(max_positions),
        Positions::Rotary { .. } => DEFAULT_SEQUENCE,
    }
}

/// Sets `Trainer`'s defaults on the keys no input set, and says which it assumed.
fn trainer_defaults(
    session: &mut Session<'_>,
    scenario: &mut Scenario,
    model: &Model,
) -> Result<Vec<String>, Diagnostic> {
    let sequence = default_sequence(model);
    let dropout = model.dropout.unwrap_or(0.0);
    let defaults = trainer_default_values(model);
    let mut assumed = Vec::new();
    for (key, value, words) in defaults {
        // QLoRA's recipe (`qlora::defaults`) has set the precision already.
        if session.origins.contains_key(key) || (key == "dtype" && scenario.load_in_4bit) {
            continue;
        }
        session.set_default(key, &value);
        scenario
            .set(key, value.clone())
            .map_err(|e| Diagnostic::error(e.to_string()))?;
        let nanochat = model.architecture.family == Family::Nanochat;
        assumed.push(match key {
            "dropout" if !nanochat => format!("dropout {dropout} (the config's)"),
            "block_size" if !nanochat => format!("{sequence}-token sequences (--block_size)"),
            _ => words.to_owned(),
        });
    }
    let mut notes = Vec::new();
    if !assumed.is_empty() {
        let step = if model.architecture.family == Family::Nanochat {
            format!(
                "one step of nanochat {}'s base_train.py with its defaults",
                crate::estimate::nanochat::short_commit()
            )
        } else {
            "one Trainer step with Trainer's defaults".to_owned()
        };
        notes.push(format!(
            "model = {}: {step} where no input set a key: {}",
            model.architecture.name,
            assumed.join(", ")
        ));
    }
    Ok(notes)
}

/// The model `value` names: a `config.json` (or a folder holding one) when such a file exists
/// (relative to the file that set the key, else to the working folder), else a catalog id or
/// repository; the error is at `origin`.
pub(crate) fn resolve(value: &str, origin: Option<&ValueOrigin>) -> Result<Model, Vec<Diagnostic>> {
    let at = |msg: &str| match origin {
        Some(o) => o.error(msg),
        None => Diagnostic::error(format!("model = {value}: {msg}")),
    };
    let path = config_path(value, origin);
    if let Some(path) = path.filter(|p| p.is_file()) {
        return read_config_file(&path);
    }
    if let Some(dir) = config_path(value, origin).and_then(|p| p.parent().map(Path::to_path_buf)) {
        if dir.is_dir() && Path::new(value).file_name() == dir.file_name() {
            return Err(vec![at(&format!(
                "the folder {} has no config.json",
                dir.display()
            ))
            .with_help("give the folder the model was downloaded or saved to (it holds config.json), or a catalog id")]);
        }
    }
    lookup(value, at).map_err(|d| vec![d])
}

/// The catalog entry `value` names, or the error (made by `at`) saying what is known.
fn lookup(value: &str, at: impl Fn(&str) -> Diagnostic) -> Result<Model, Diagnostic> {
    match catalog::find(value) {
        Err(defect) => Err(at(&format!("the bundled model catalog is invalid: {defect}"))),
        Ok(Some(entry)) => model_of(entry, value).map_err(|m| at(&m)),
        Ok(None) if looks_like_path(value) => Err(at(&format!(
            "no config.json at {value}, and it is no id of vramdoc's model catalog"
        ))
        .with_help(
            "give the path of the model's config.json (or of the folder holding it), relative to the working folder or to the file that sets `model`",
        )),
        Ok(None) => {
            let near = catalog::closest(value);
            let ids: Vec<&str> = catalog::entries()
                .map(|all| all.iter().map(|e| e.id.as_str()).collect())
                .unwrap_or_default();
            let mean = if near.is_empty() {
                String::new()
            } else {
                format!("did you mean {}? ", near.join(", "))
            };
            Err(at(&format!(
                "unknown model \"{}\": {mean}vramdoc's model catalog has {}",
                crate::terminal::visible_line(value),
                ids.join(", ")
            ))
            .with_help(
                "give a catalog id, a Hugging Face repository of the catalog (meta-llama/Llama-3.1-8B), or the path of the model's config.json",
            ))
        }
    }
}

/// The catalog entry's model (found by the name `value`: an alias may load another dtype), or
/// why the bundled catalog cannot give it.
fn model_of(entry: &catalog::ModelEntry, value: &str) -> Result<Model, String> {
    let read = entry
        .read()
        .map_err(|defect| format!("the bundled model catalog is invalid: {defect}"))?;
    Ok(Model {
        info: ModelInfo {
            id: Some(entry.id.clone()),
            path: None,
            family: read.architecture.family,
            model_type: read.model_type,
            computed: read.architecture.family.computed(),
            transformers: transformers(read.architecture.family),
            nanochat: nanochat_commit(read.architecture.family),
            source: Some(entry.source.clone()),
        },
        loaded: weights::loaded(read.torch_dtype, entry, value),
        architecture: read.architecture,
        dropout: read.dropout,
        sequence_len: read.sequence_len,
    })
}

/// The model a guide's `model:` names: an id (or Hugging Face repository) of the bundled
/// catalog only, so that a site builds the same on every machine; the error lists the ids.
pub(crate) fn from_catalog(value: &str) -> Result<Model, String> {
    if let Some(entry) = catalog::find(value)? {
        return model_of(entry, value);
    }
    let near = catalog::closest(value);
    let mean = if near.is_empty() {
        String::new()
    } else {
        format!("did you mean {}? ", near.join(", "))
    };
    Err(format!(
        "unknown model \"{}\": {mean}a guide names a model by an id of vramdoc's model catalog ({})",
        crate::terminal::visible_line(value),
        computed_ids().join(", ")
    ))
}

/// The catalog ids whose family the estimator computes, in catalog order.
pub(crate) fn computed_ids() -> Vec<String> {
    catalog::entries()
        .map(|all| {
            all.iter()
                .filter(|e| e.read().is_ok_and(|m| m.architecture.family.computed()))
                .map(|e| e.id.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// The transformers version a family's numbers follow, for the Hugging Face families.
fn transformers(family: Family) -> Option<&'static str> {
    match family {
        Family::NanoGpt | Family::Nanochat => None,
        _ => Some(HF_TRANSFORMERS),
    }
}

/// A family as messages name it.
pub(crate) fn family_name(family: Family) -> &'static str {
    match family {
        Family::NanoGpt => "nanoGPT's GPT",
        Family::HfGpt2 => "Hugging Face's GPT-2",
        Family::Llama => "a Llama-family model",
        Family::Gemma2 => "a Gemma 2 model",
        Family::Gemma3 => "a Gemma 3 model",
        Family::Moe => "a mixture-of-experts model",
        Family::Nanochat => "nanochat's GPT",
    }
}

#[cfg(test)]
mod tests;
