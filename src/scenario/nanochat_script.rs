//! nanochat's training scripts given as the FILE of `vramdoc estimate`: `scripts/base_train.py`
//! and `scripts/chat_sft.py` with their own command-line flags, read with the defaults of the
//! pinned commit (`estimate::nanochat::short_commit()`; argparse flags spelled with hyphens).
//!
//! A script is recognized by what it is, not by its name: it imports `nanochat.` and builds the
//! argparse parser of one of the two scripts (its `description`). An older nanochat script
//! (module globals overridden through `configurator.py`, before the argparse flags) is refused
//! by name rather than read with today's defaults. Every flag of the pinned scripts is known:
//! those that shape memory set the run, those that do not are listed as ignored, and those the
//! estimate does not model (`--fp8`, `--resume-from-step`, a device other than CUDA) are
//! refused; an unknown flag is an error naming the script's flags, never a fallback to
//! nanoGPT's train.py.

use std::path::Path;

use super::input::{Input, Loaded, Sources};
use crate::diagnostics::Diagnostic;
use crate::estimate::nanochat::{short_commit as nanochat_commit, GptConfig as NanochatConfig};
use crate::estimate::{Literal, Scenario};

/// Which of nanochat's scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Script {
    /// `scripts/base_train.py`: pretraining a model of `--depth`.
    BaseTrain,
    /// `scripts/chat_sft.py`: the same step on a loaded base model.
    ChatSft,
}

/// What a flag does to the estimate.
#[derive(Clone, Copy)]
enum Effect {
    /// Sets a quantity the estimate reads.
    Shapes,
    /// Does not change the training step's memory (logging, schedules, evaluation cadence).
    Ignored,
    /// Not modelled: refused with the reason.
    Refused(&'static str),
}

/// Whether the flag takes a value (argparse `store_true` flags do not).
#[derive(Clone, Copy, PartialEq)]
enum Takes {
    Value,
    Nothing,
}

use Effect::{Ignored, Refused, Shapes};
use Takes::{Nothing, Value};

const FP8: &str = "FP8 training (torchao-style Float8Linear) is not replayed";
const RESUME: &str = "loading a checkpoint and its optimizer state is not replayed";

/// `base_train.py`'s flags at the pinned commit.
const BASE_TRAIN: &[(&str, Takes, Effect)] = &[
    ("run", Value, Ignored),
    ("device-type", Value, Shapes),
    ("fp8", Nothing, Refused(FP8)),
    ("fp8-recipe", Value, Ignored),
    ("depth", Value, Shapes),
    ("aspect-ratio", Value, Shapes),
    ("head-dim", Value, Shapes),
    ("max-seq-len", Value, Shapes),
    ("window-pattern", Value, Shapes),
    ("num-iterations", Value, Ignored),
    ("target-flops", Value, Ignored),
    ("target-param-data-ratio", Value, Ignored),
    ("device-batch-size", Value, Shapes),
    ("total-batch-size", Value, Shapes),
    ("embedding-lr", Value, Ignored),
    ("unembedding-lr", Value, Ignored),
    ("weight-decay", Value, Ignored),
    ("matrix-lr", Value, Ignored),
    ("scalar-lr", Value, Ignored),
    ("warmup-steps", Value, Ignored),
    ("warmdown-ratio", Value, Ignored),
    ("final-lr-frac", Value, Ignored),
    ("resume-from-step", Value, Shapes),
    ("eval-every", Value, Ignored),
    ("eval-tokens", Value, Ignored),
    ("core-metric-every", Value, Ignored),
    ("core-metric-max-per-task", Value, Ignored),
    ("sample-every", Value, Ignored),
    ("save-every", Value, Ignored),
    ("model-tag", Value, Ignored),
];

/// `chat_sft.py`'s flags at the pinned commit.
const CHAT_SFT: &[(&str, Takes, Effect)] = &[
    ("run", Value, Ignored),
    ("device-type", Value, Shapes),
    ("model-tag", Value, Shapes),
    ("model-step", Value, Ignored),
    ("load-optimizer", Value, Ignored),
    ("num-iterations", Value, Ignored),
    ("max-seq-len", Value, Shapes),
    ("device-batch-size", Value, Shapes),
    ("total-batch-size", Value, Shapes),
    ("embedding-lr", Value, Ignored),
    ("unembedding-lr", Value, Ignored),
    ("matrix-lr", Value, Ignored),
    ("init-lr-frac", Value, Ignored),
    ("warmup-ratio", Value, Ignored),
    ("warmdown-ratio", Value, Ignored),
    ("final-lr-frac", Value, Ignored),
    ("eval-every", Value, Ignored),
    ("eval-tokens", Value, Ignored),
    ("chatcore-every", Value, Ignored),
    ("chatcore-max-cat", Value, Ignored),
    ("chatcore-max-sample", Value, Ignored),
    ("mmlu-epochs", Value, Ignored),
    ("gsm8k-epochs", Value, Ignored),
];

/// Which nanochat script `text` is, if any; an older nanochat script is an error.
pub(crate) fn recognize(path: &Path, text: &str) -> Result<Option<Script>, Box<Diagnostic>> {
    if !text.contains("from nanochat.") {
        return Ok(None);
    }
    if text.contains("ArgumentParser(description=\"Pretrain base model\")") {
        return Ok(Some(Script::BaseTrain));
    }
    if text.contains("ArgumentParser(description=\"Supervised fine-tuning (SFT) the model\")") {
        return Ok(Some(Script::ChatSft));
    }
    if text.contains("configurator.py") && text.contains("device_batch_size") {
        return Err(Box::new(
            Diagnostic::error(format!(
                "this is an older nanochat script (globals set through configurator.py); vramdoc \
                 follows nanochat {}, whose scripts take argparse flags with other defaults and \
                 another model",
                nanochat_commit()
            ))
            .in_file(path)
            .with_help(
                "estimate the current scripts/base_train.py or scripts/chat_sft.py, or give the \
                 model as --model nanochat-d20 with --batch_size and --block_size",
            ),
        ));
    }
    Ok(None)
}

/// The flags as given: `--name=value`, `--name value`, or a bare `store_true` flag.
pub(crate) struct Flags {
    /// Each flag with its value (`None` for a bare flag), in order.
    pub(crate) given: Vec<(String, Option<String>)>,
}

/// What a script and its flags make: the run, its model and the notes.
pub(crate) struct Settled {
    /// The run (batch, sequence, accumulation over the whole job, bfloat16, eager).
    pub(crate) scenario: Scenario,
    /// The model `base_train.py` builds (or `chat_sft.py` loads).
    pub(crate) config: NanochatConfig,
    /// Assumptions and ignored flags, said once.
    pub(crate) notes: Vec<String>,
}

/// Reads `flags` as `script` parses them, with the pinned defaults; every error at once.
pub(crate) fn settle(
    path: &Path,
    script: Script,
    flags: &Flags,
) -> Result<Settled, Vec<Diagnostic>> {
    let table = match script {
        Script::BaseTrain => BASE_TRAIN,
        Script::ChatSft => CHAT_SFT,
    };
    let mut errors = Vec::new();
    let mut ignored = Vec::new();
    let value = |name: &str| -> Option<String> {
        flags
            .given
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.clone())
    };
    let err = |msg: String| {
        Diagnostic::error(msg)
            .in_file(path)
            .with_help("give nanochat's own flags, as torchrun passes them after `--`")
    };
    for (name, v) in &flags.given {
        let Some((_, takes, effect)) = table.iter().find(|(n, _, _)| n == name) else {
            let hyphens = name.replace('_', "-");
            let hint = if table.iter().any(|(n, _, _)| *n == hyphens) {
                format!(" (nanochat spells it --{hyphens})")
            } else {
                String::new()
            };
            let known: Vec<String> = table.iter().map(|(n, _, _)| format!("--{n}")).collect();
            errors.push(err(format!(
                "--{name}{hint}: not a flag of this script at nanochat {}; its flags are {}",
                nanochat_commit(),
                known.join(", ")
            )));
            continue;
        };
        match (takes, v) {
            (Value, None) => errors.push(err(format!("--{name} needs a value"))),
            (Nothing, Some(_)) => errors.push(err(format!("--{name} takes no value"))),
            _ => {}
        }
        match effect {
            Refused(why) => errors.push(err(format!("--{name}: {why}"))),
            Ignored => ignored.push(format!("--{name}")),
            Shapes => {}
        }
    }
    let mut bad_numbers = Vec::new();
    let mut problems: Vec<String> = Vec::new();
    let mut whole = |name: &str, default: i64| -> i64 {
        match value(name) {
            None => default,
            Some(v) => v.parse::<i64>().unwrap_or_else(|_| {
                bad_numbers.push(format!("--{name} {v}: expected a whole number"));
                default
            }),
        }
    };
    let mut notes = Vec::new();
    let device = value("device-type").unwrap_or_default();
    if !device.is_empty() && device != "cuda" {
        errors.push(err(format!(
            "--device-type {device}: vramdoc estimates CUDA GPUs only"
        )));
    }
    let (depth, pattern) = match script {
        Script::BaseTrain => {
            let resumed = whole("resume-from-step", -1) != -1;
            if resumed {
                problems.push(format!("--resume-from-step: {RESUME}"));
            }
            (
                whole("depth", 20),
                value("window-pattern").unwrap_or_else(|| "SSSL".to_owned()),
            )
        }
        Script::ChatSft => {
            let tag = value("model-tag").unwrap_or_default();
            let depth = tag
                .strip_prefix('d')
                .and_then(|d| d.parse::<i64>().ok())
                .unwrap_or_else(|| {
                    problems.push(format!(
                        "--model-tag {}: chat_sft.py loads the base checkpoint it names; give \
                         the tag base_train.py wrote, d and the depth (e.g. --model-tag=d20), so \
                         that vramdoc knows the model",
                        crate::terminal::visible_line(&tag)
                    ));
                    20
                });
            notes.push(
                "chat_sft.py: the base model is assumed trained with base_train.py's defaults \
                 (--aspect-ratio 64, --head-dim 128, --window-pattern SSSL); unset batch and \
                 sequence flags take chat_sft.py's fallbacks (32, 2048, 524,288 tokens), as for \
                 a checkpoint that recorded none; the step is estimated, not the loading of \
                 the checkpoint and its optimizer state before it"
                    .to_owned(),
            );
            (depth, "SSSL".to_owned())
        }
    };
    let aspect = whole("aspect-ratio", 64);
    let head_dim = whole("head-dim", 128);
    let seq = whole("max-seq-len", 2048);
    let batch = whole("device-batch-size", 32);
    let total = whole(
        "total-batch-size",
        if script == Script::ChatSft {
            524288
        } else {
            -1
        },
    );
    errors.extend(bad_numbers.into_iter().chain(problems).map(err));
    for (name, v) in [
        ("depth", depth),
        ("aspect-ratio", aspect),
        ("head-dim", head_dim),
        ("max-seq-len", seq),
        ("device-batch-size", batch),
    ] {
        if v < 1 {
            errors.push(err(format!("--{name} {v}: must be at least 1")));
        }
    }
    if seq == 1 {
        errors.push(err(
            "--max-seq-len 1: gpt.py's training forward asserts at least 2 tokens".to_owned(),
        ));
    }
    if head_dim >= 1 && head_dim % 8 != 0 {
        errors.push(err(format!(
            "--head-dim {head_dim}: FA3 needs a multiple of 8 (base_train.py says so), and the \
             replay covers no other"
        )));
    }
    let positive = |v: i64| u64::try_from(v).unwrap_or(1).max(1);
    let config = NanochatConfig::from_depth(
        positive(depth),
        positive(aspect),
        positive(head_dim),
        positive(seq),
        &pattern,
    );
    if let Some(problem) = config.problem() {
        errors.push(err(problem));
    }
    let tokens = positive(batch).saturating_mul(positive(seq));
    let total = if total == -1 {
        let auto = auto_total_batch(&config, positive(aspect), positive(head_dim), positive(seq));
        notes.push(format!(
            "--total-batch-size -1: base_train.py's own choice for depth {depth}, {auto} tokens"
        ));
        auto
    } else {
        positive(total)
    };
    if total % tokens != 0 {
        errors.push(err(format!(
            "--total-batch-size {total} is not a whole number of micro-batches of \
             --device-batch-size × --max-seq-len = {tokens} tokens (the script asserts it)"
        )));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if !ignored.is_empty() {
        notes.push(format!(
            "{} do not change the training step's memory",
            ignored.join(", ")
        ));
    }
    let scenario = Scenario {
        batch_size: positive(batch),
        block_size: positive(seq),
        gradient_accumulation_steps: (total / tokens).max(1),
        dtype: crate::estimate::Dtype::Bfloat16,
        compile: true,
        dropout: 0.0,
        ..Scenario::default()
    };
    Ok(Settled {
        scenario,
        config,
        notes,
    })
}

/// `base_train.py`'s total batch size for `--total-batch-size -1`: 2^19 tokens at depth 12,
/// scaled by the model's scaling parameters (block matrices and `lm_head`) relative to d12's
/// to the power 0.383 (the Power Lines fit it cites), rounded to a power of two.
fn auto_total_batch(c: &NanochatConfig, aspect: u64, head_dim: u64, seq: u64) -> u64 {
    // GPT.num_scaling_params: `transformer_matrices` (the blocks, value gates included) plus
    // `lm_head`: every parameter less `wte`, the value embeddings and the scalars.
    // (in f64: a figure for a power of two, safe from overflow at any depth).
    let scaling = |c: &NanochatConfig| -> f64 {
        let a = c.architecture("");
        let (h, n) = (a.hidden as f64, a.layers as f64);
        let (q, kv) = (a.attention.q_width() as f64, a.attention.kv_width() as f64);
        let gates = a.layers.div_ceil(2) as f64 * a.attention.kv_heads as f64 * 12.0;
        let rows = crate::estimate::arch::nanochat_padded_vocab(a.vocab_size) as f64;
        n * (2.0 * q * h + 2.0 * kv * h + 8.0 * h * h) + gates + rows * h
    };
    let d12 = NanochatConfig::from_depth(12, aspect, head_dim, seq, &c.window_pattern);
    let ratio = scaling(c) / scaling(&d12);
    let predicted = 524_288.0 * ratio.powf(0.383);
    let exponent = predicted.log2().round().clamp(0.0, 62.0);
    1u64 << (exponent as u32)
}

/// The whole input when the first FILE is one of nanochat's scripts: its flags (every other
/// input), `--gpu`; `None` when it is not one, so the inputs are read as nanoGPT's or YAML.
pub(crate) fn load(src: &Sources<'_>) -> Option<Result<Loaded, Vec<Diagnostic>>> {
    let path = src.inputs.iter().find_map(|i| match i {
        Input::File(p) if p != Path::new("-") => Some(p),
        _ => None,
    })?;
    let text = super::input::read_capped_text(Some(path)).ok()?;
    let script = match recognize(path, &text) {
        Ok(Some(s)) => s,
        Ok(None) => return None,
        Err(e) => return Some(Err(vec![*e])),
    };
    Some(load_script(src, path, script))
}

fn load_script(src: &Sources<'_>, path: &Path, script: Script) -> Result<Loaded, Vec<Diagnostic>> {
    let mut given: Vec<(String, Option<String>)> = Vec::new();
    let mut errors = Vec::new();
    let mut seen_script = false;
    for input in src.inputs {
        match input {
            Input::File(p) if p == path && !seen_script => seen_script = true,
            // torchrun's separator before the script's own flags (`-- --depth=20`).
            Input::Override(arg) if arg == "--" => {}
            Input::Override(arg) => {
                let flag = arg.trim_start_matches('-');
                match flag.split_once('=') {
                    Some((n, v)) => given.push((n.to_owned(), Some(v.to_owned()))),
                    None => given.push((flag.to_owned(), None)),
                }
            }
            // `--name value`: the value of the bare flag before it.
            Input::File(p) => match given.last_mut() {
                Some((_, v @ None)) => *v = Some(p.to_string_lossy().into_owned()),
                _ => errors.push(
                    Diagnostic::error(format!(
                        "{}: a second FILE beside nanochat's script",
                        p.display()
                    ))
                    .with_help("give the script once, followed by its flags"),
                ),
            },
        }
    }
    if !src.sets.is_empty() {
        errors.push(Diagnostic::error(
            "--set: nanochat's scripts take their own flags (e.g. --device-batch-size=16)",
        ));
    }
    let settled = settle(path, script, &Flags { given });
    let mut settled = match settled {
        Ok(s) if errors.is_empty() => s,
        Ok(_) => return Err(errors),
        Err(e) => {
            errors.extend(e);
            return Err(errors);
        }
    };
    let shown = path.to_string_lossy().into_owned();
    let architecture = settled.config.architecture(&shown);
    settled.scenario.model = Some(shown.clone());
    if let Some(gpu) = src.gpu {
        if let Err(e) = settled.scenario.set("gpu", Literal::Str(gpu.to_owned())) {
            return Err(vec![Diagnostic::error(format!("--gpu: {}", e.message))]);
        }
    }
    let mut notes = vec![format!(
        "{shown}: nanochat {}'s {} (depth {}, width {}, {} heads, window pattern {}), one \
         optimizer step of {} micro-batch(es) of {} × {} tokens per GPU in bfloat16 \
         (COMPUTE_DTYPE on an sm80+ GPU), compiled as the script compiles the model \
         (inductor's partition and buffers; compile=false gives the eager step)",
        nanochat_commit(),
        match script {
            Script::BaseTrain => "base_train.py",
            Script::ChatSft => "chat_sft.py",
        },
        settled.config.n_layer,
        settled.config.n_embd,
        settled.config.n_head,
        settled.config.window_pattern,
        settled.scenario.gradient_accumulation_steps,
        settled.scenario.batch_size,
        settled.scenario.block_size
    )];
    notes.append(&mut settled.notes);
    Ok(Loaded {
        scenario: settled.scenario,
        notes,
        model: Some(super::model::Model::nanochat_script(architecture, &shown)),
        ..Loaded::default()
    })
}
