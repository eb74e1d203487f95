//! What nanoGPT's `train.py` does with the configured globals before it builds the model, so the
//! estimate is of the run nanoGPT would do:
//! - `device` other than CUDA: there is no GPU memory to estimate;
//! - `init_from = 'scratch'`: the vocabulary is `data/<dataset>/meta.pkl`'s `vocab_size` when
//!   that file exists, else GPT-2's 50304 (train.py: `meta_vocab_size if ... else 50304`);
//! - `init_from = 'gpt2*'`: `GPT.from_pretrained`: GPT-2's shape, vocabulary 50257 and biases
//!   (applied by the estimator, `Scenario::as_run`, which also refuses a `block_size` above the
//!   1024 positions, as nanoGPT's `assert t <= self.config.block_size` would);
//! - `init_from = 'resume'`: the shape comes from `<out_dir>/ckpt.pt`'s `model_args` (train.py
//!   overwrites the config's values with them).
//!
//! A sampling run (`phase = generate`, which nanoGPT's `sample.py` given as a file implies:
//! [`settle_phase`]) is read as sample.py reads its globals ([`sampling`]) and estimated as
//! sampling, not as training.
//!
//! Paths are relative to the folder train.py would run in: the working folder, or `--data-dir`.

use std::path::Path;

use super::artifacts::{self, CHECKPOINT_KEYS};
use super::keys::KEYS;
use super::pyconfig::{Session, ValueOrigin};
use crate::diagnostics::Diagnostic;
use crate::estimate::{InitFrom, Literal, Phase, Sampling, Scenario, GPT2_VOCAB};

/// Settings that nanoGPT's `sample.py` defines and `train.py` does not: a Python file that
/// sets one is sample.py (under any name), which implies `phase = generate`.
const SAMPLING_ONLY: &[&str] = &["max_new_tokens", "num_samples"];

/// sample.py's settings that train.py lacks: overriding one in the train phase is refused, as
/// nanoGPT's configurator refuses a key the script does not define.
pub(crate) const SAMPLE_SETTINGS: &[&str] = &[
    "start",
    "num_samples",
    "max_new_tokens",
    "temperature",
    "top_k",
    "seed",
    "prompt_tokens",
    "num_return_sequences",
    "num_beams",
    "kv_cache",
];

/// The generate-phase settings of Hugging Face `generate` (with a `model`), which sample.py
/// does not have: given for nanoGPT's sampling they are refused.
pub(crate) const HF_GENERATE_SETTINGS: &[&str] = &[
    "prompt_tokens",
    "num_return_sequences",
    "num_beams",
    "kv_cache",
];

/// Whether `name` is one of sample.py's own settings (read as sample.py reads them, in the
/// generate phase, from any input: a file, YAML, `--name=value` or `--set`).
pub(crate) fn is_sample_setting(name: &str) -> bool {
    SAMPLE_SETTINGS.contains(&name)
}

/// Where the Python file just read, if it is nanoGPT's `sample.py`, set one of sample.py's own
/// settings (call after each Python file: the origin is then that file's line).
pub(crate) fn sample_script(session: &Session<'_>) -> Option<ValueOrigin> {
    SAMPLING_ONLY
        .iter()
        .filter_map(|k| session.origins.get(*k))
        .find(|o| matches!(o, ValueOrigin::File { .. }))
        .cloned()
}

/// sample.py's defaults where they differ from train.py's: it samples from `out/ckpt.pt`
/// (`init_from = 'resume'`) and runs eagerly (`compile = False`).
fn sample_defaults() -> [(&'static str, Literal); 2] {
    [
        ("init_from", Literal::Str("resume".to_owned())),
        ("compile", Literal::Bool(false)),
    ]
}

/// Decides the phase: `phase` as set, or `generate` when a file is sample.py; in the generate
/// phase, keys no input set take sample.py's defaults ([`sample_defaults`]). Refuses a
/// `phase = train` that contradicts a sample.py file (naming both), a sample.py override in the
/// train phase, and, in the generate phase, every key the table marks as training-only (sample.py
/// does not read it, so it would be silently ignored); all errors at once.
pub(crate) fn settle_phase(
    session: &mut Session<'_>,
    scenario: &mut Scenario,
    sample_file: Option<&ValueOrigin>,
    python_files: &[std::path::PathBuf],
) -> Result<(), Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let explicit = session.origins.get("phase");
    if let Some(file) = sample_file {
        match explicit {
            Some(at) if scenario.phase == Phase::Train => errors.push(
                at.error(&format!(
                    "phase = train, but {} is nanoGPT's sample.py (it sets num_samples or max_new_tokens, which only sample.py has): it samples, it does not train",
                    file.location()
                ))
                .with_help("drop phase = train to estimate sampling, or give a train.py config (config/train_*.py) instead of sample.py to estimate training"),
            ),
            _ => scenario.phase = Phase::Generate,
        }
    }
    match scenario.phase {
        Phase::Train => {
            for name in SAMPLE_SETTINGS {
                let at = session.origins.get(*name);
                // A Python config may define any global; an override, `--set` or YAML may not.
                let Some(at) = at.filter(|o| !python_files.iter().any(|p| o.is_in(p))) else {
                    continue;
                };
                // A model's training: Hugging Face generate's settings (beams, the cache) have
                // no training counterpart.
                errors.push(if scenario.model.is_some() && HF_GENERATE_SETTINGS.contains(name) {
                    at.error(&format!(
                        "`{name}` is a setting of Hugging Face generate, and this scenario is phase = train: training decodes nothing (no prompt, beams or KV cache)"
                    ))
                    .with_help("to estimate generation, add --phase generate")
                } else {
                    at.error(&format!(
                        "`{name}` is a setting of sample.py, not of train.py (nanoGPT's configurator stops with \"Unknown config key: {name}\"), and this scenario is phase = train"
                    ))
                    .with_help("to estimate sampling, add --phase generate (or give nanoGPT's sample.py as the file)")
                });
            }
        }
        Phase::Generate => {
            for (name, value) in sample_defaults() {
                if session.origins.contains_key(name) {
                    continue;
                }
                session.set_default(name, &value);
                if let Err(e) = scenario.set(name, value) {
                    errors.push(Diagnostic::error(e.to_string()));
                }
            }
            // Hugging Face `generate` decodes a batch of prompts; sample.py one sample at a time.
            let no_batch = scenario.model.is_none();
            for key in KEYS.iter().filter(|k| {
                !k.phases.contains(&Phase::Generate) || (no_batch && k.name == "batch_size")
            }) {
                if let Some(at) = session.origins.get(key.name) {
                    errors.push(
                        at.error(&format!(
                            "`{}` is a training key: sample.py does not read it, so with phase = generate it would change nothing",
                            key.name
                        ))
                        .with_help("remove it to estimate sampling, or set phase = train to estimate training"),
                    );
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// What sample.py is asked to generate, read from its globals (sample.py's defaults where the
/// inputs left one unset), with a note on the prompt's length. `start` is the prompt, or
/// `FILE:path` to read it from (relative to `base`, where sample.py runs). Its token count is
/// not computed (GPT-2's tokenizer is not bundled): its UTF-8 length bounds it, since GPT-2's
/// byte-level BPE and a character vocabulary both give at most one token per byte, and memory
/// only grows with the context.
pub(crate) fn sampling(
    session: &Session<'_>,
    base: &Path,
    notes: &mut Vec<String>,
) -> Result<Sampling, Diagnostic> {
    let count = |key: &str, default: u64| -> Result<u64, Diagnostic> {
        match session.literal(key) {
            None => Ok(default),
            Some(Ok(Literal::Int(n))) if n >= 1 => Ok(n as u64),
            Some(Ok(other)) => Err(at_key(
                session,
                key,
                &format!("`{key}` = {other:?}: sample.py needs a whole number of at least 1"),
            )),
            Some(Err(msg)) => Err(at_key(session, key, &format!("`{key}` {msg}"))),
        }
    };
    if let Some((name, at)) = HF_GENERATE_SETTINGS
        .iter()
        .find_map(|n| session.origins.get(*n).map(|o| (*n, o)))
    {
        return Err(at
            .error(&format!(
                "`{name}` is a setting of Hugging Face generate (with a model), not of nanoGPT's sample.py"
            ))
            .with_help("give the prompt as start (or start = 'FILE:prompt.txt'), or add --model to estimate Hugging Face generate"));
    }
    let max_new_tokens = count("max_new_tokens", 500)?;
    let num_samples = count("num_samples", 10)?;
    let top_k = Some(count("top_k", 200)?);
    let start = text(session, "start").unwrap_or_else(|| "\n".into());
    let prompt = match start.strip_prefix("FILE:") {
        Some(file) => std::fs::read_to_string(base.join(file)).map_err(|e| {
            at_key(
                session,
                "start",
                &format!("start = 'FILE:{file}': sample.py reads the prompt from {file}: {e}"),
            )
        })?,
        None => start,
    };
    let prompt_tokens = prompt.len() as u64;
    if prompt_tokens == 0 {
        return Err(at_key(
            session,
            "start",
            "the prompt is empty: sample.py's model needs at least one token to continue",
        ));
    }
    let pretrained = text(session, "init_from").is_some_and(|i| i.starts_with("gpt2"));
    if pretrained && session.origins.contains_key("block_size") {
        notes.push(
            "block_size is not a setting of sample.py: GPT.from_pretrained builds GPT-2 with its 1024 positions, so the estimate uses 1024".to_owned(),
        );
    }
    if matches!(session.literal("compile"), Some(Ok(Literal::Bool(true)))) {
        notes.push(
            "compile = True: sampling is estimated as it runs eagerly (the replay is eager); torch.compile's kernels are counted in the overhead range, and its recompilation for each new length is not modelled".to_owned(),
        );
    }
    if prompt_tokens > 1 {
        notes.push(format!(
            "prompt: at most {prompt_tokens} tokens (its UTF-8 bytes; GPT-2's tokenizer and a character vocabulary give no more), so the context is estimated at its longest"
        ));
    }
    Ok(Sampling {
        prompt_tokens,
        max_new_tokens,
        num_samples,
        top_k,
    })
}

/// A string global of the config (`device`, `dataset`, `init_from`, `out_dir`).
fn text(session: &Session<'_>, name: &str) -> Option<String> {
    match session.literal(name) {
        Some(Ok(Literal::Str(s))) => Some(s),
        _ => None,
    }
}

/// An error located where the config set `key`, or unlocated when a default decided it.
fn at_key(session: &Session<'_>, key: &str, msg: &str) -> Diagnostic {
    match session.origins.get(key) {
        Some(origin) => origin.error(msg),
        None => Diagnostic::error(msg.to_owned()),
    }
}

/// Applies train.py's model set-up to `scenario`; returns notes for the report, or the errors.
pub(crate) fn apply(
    session: &Session<'_>,
    scenario: &mut Scenario,
    base: &Path,
) -> Result<Vec<String>, Vec<Diagnostic>> {
    let foreign = model_keys_refused(session, scenario);
    if !foreign.is_empty() {
        return Err(foreign);
    }
    let mut notes = Vec::new();
    let device = text(session, "device").unwrap_or_else(|| "cuda".into());
    if !device.starts_with("cuda") {
        return Err(vec![at_key(
            session,
            "device",
            &format!("device = '{}': this run does not use a CUDA GPU, so it has no GPU memory to estimate", crate::terminal::visible_line(&device)),
        )
        .with_help("vramdoc estimates CUDA memory; set device = 'cuda' (train.py's default) to estimate the run on a GPU")]);
    }
    let init = text(session, "init_from").unwrap_or_else(|| "scratch".into());
    if init == "scratch" && scenario.phase == Phase::Generate {
        return Err(vec![at_key(
            session,
            "init_from",
            "init_from = 'scratch': sample.py samples from a trained model; it knows 'resume' (a checkpoint in out_dir) and the GPT-2 variants",
        )
        .with_help("sample with --init_from=resume --out_dir=DIR, or --init_from=gpt2 (or gpt2-medium, gpt2-large, gpt2-xl)")]);
    }
    let result = match init.as_str() {
        "scratch" => scratch_vocabulary(session, scenario, base, &mut notes),
        "resume" => resumed_shape(session, scenario, base, &mut notes),
        model => pretrained_shape(session, scenario, model, &mut notes),
    };
    result.map(|()| notes).map_err(|d| vec![d])
}

/// The keys set to other than their default that nanoGPT's train.py has no use for (the key
/// table's `families` column leaves nanoGPT out: bitsandbytes' loading, a Hugging Face model's
/// trainer settings), with their values: refused by the CLI and the guides alike, since
/// computing nanoGPT's run without them would answer a question nobody asked.
pub(crate) fn model_only_keys(scenario: &Scenario) -> Vec<(&'static str, String)> {
    let defaults = Scenario::default().display_values();
    let values = scenario.display_values();
    KEYS.iter()
        .filter(|row| !row.families.contains(crate::estimate::Family::NanoGpt))
        .filter_map(|row| {
            let value = values.iter().find(|(k, _)| *k == row.name)?;
            let default = defaults.iter().find(|(k, _)| *k == row.name)?;
            (value.1 != default.1).then(|| (row.name, value.1.clone()))
        })
        .collect()
}

/// What is said of a key [`model_only_keys`] finds: the message, then the advice.
pub(crate) fn model_only_key_message(key: &str, value: &str) -> (String, String) {
    let why = match key {
        "weights_dtype" => "nanoGPT's weights in bfloat16 are its pure_bf16 patch",
        "lora_dropout" => "nanoGPT's LoRA patch has no dropout",
        "fused_linear_cross_entropy" => "nanoGPT's model.py is not one Liger Kernel patches",
        _ => "nanoGPT's train.py has no such setting",
    };
    (
        format!(
            "`{key}` = {value} is a setting of Hugging Face models, and no `model` is given: \
             {why}"
        ),
        format!(
            "remove `{key}`, or add `model` (e.g. --model gpt2 or --model llama-3.1-8b) to \
             estimate a Hugging Face model"
        ),
    )
}

/// [`model_only_keys`] given by an input, each refused at its line.
fn model_keys_refused(session: &Session<'_>, scenario: &Scenario) -> Vec<Diagnostic> {
    model_only_keys(scenario)
        .into_iter()
        .filter_map(|(key, value)| {
            let at = session.origins.get(key)?;
            let (message, help) = model_only_key_message(key, &value);
            Some(at.error(&message).with_help(help))
        })
        .collect()
}

/// `init_from = 'scratch'`: the dataset's vocabulary, unless the config set `vocab_size` itself.
fn scratch_vocabulary(
    session: &Session<'_>,
    scenario: &mut Scenario,
    base: &Path,
    notes: &mut Vec<String>,
) -> Result<(), Diagnostic> {
    if session.origins.contains_key("vocab_size") {
        return Ok(());
    }
    let dataset = text(session, "dataset").unwrap_or_else(|| "openwebtext".into());
    let rel = Path::new("data").join(&dataset).join("meta.pkl");
    let meta = base.join(&rel);
    if meta.exists() {
        let vocab = artifacts::dataset_vocab(&meta).map_err(|e| {
            at_key(session, "dataset", &e)
                .with_help("train.py reads vocab_size from this file; regenerate it with the dataset's prepare.py")
        })?;
        scenario
            .set("vocab_size", Literal::Int(vocab as i64))
            .map_err(|e| at_key(session, "dataset", &format!("{}: {e}", rel.display())))?;
        notes.push(format!(
            "vocab_size = {vocab}, from {} (train.py takes the vocabulary from the dataset's meta.pkl)",
            rel.display()
        ));
    } else {
        notes.push(format!(
            "no {} in {}: vocab_size = {} (GPT-2's tokenizer padded to 50304, train.py's choice without a meta.pkl); run from nanoGPT's folder, pass --data-dir DIR, or --set vocab_size=N",
            rel.display(),
            base.display(),
            scenario.vocab_size
        ));
    }
    Ok(())
}

/// `init_from = 'gpt2*'`: a note on the shape the estimator gives the run (`Scenario::as_run`:
/// the checkpoint's layers, heads, width, vocabulary and biases; it also refuses a `block_size`
/// above GPT-2's 1024 positions, as nanoGPT's forward asserts).
fn pretrained_shape(
    session: &Session<'_>,
    scenario: &Scenario,
    model: &str,
    notes: &mut Vec<String>,
) -> Result<(), Diagnostic> {
    let shape = InitFrom::parse(model).and_then(InitFrom::pretrained_shape);
    let Some((layers, heads, width)) = shape else {
        return Err(at_key(
            session,
            "init_from",
            &format!("init_from = '{}': nanoGPT knows scratch, resume, gpt2, gpt2-medium, gpt2-large and gpt2-xl", crate::terminal::visible_line(model)),
        ));
    };
    notes.push(format!(
        "init_from = '{model}': GPT-2's shape ({layers} layers, {heads} heads, {width} wide, vocabulary {GPT2_VOCAB}, biases), block_size {}",
        scenario.block_size
    ));
    Ok(())
}

/// `init_from = 'resume'`: the shape from the checkpoint, or the keys the config gives when
/// there is none to read.
fn resumed_shape(
    session: &Session<'_>,
    scenario: &mut Scenario,
    base: &Path,
    notes: &mut Vec<String>,
) -> Result<(), Diagnostic> {
    let out_dir = text(session, "out_dir").unwrap_or_else(|| "out".into());
    let rel = Path::new(&out_dir).join("ckpt.pt");
    let path = base.join(&rel);
    if !path.exists() {
        let missing: Vec<&str> = CHECKPOINT_KEYS
            .iter()
            .copied()
            .filter(|k| !session.origins.contains_key(*k))
            .collect();
        if missing.is_empty() {
            notes.push(format!(
                "init_from = 'resume': no {} in {}, so the shape is the one the config gives",
                rel.display(),
                base.display()
            ));
            return Ok(());
        }
        return Err(at_key(
            session,
            "init_from",
            &format!(
                "init_from = 'resume'{} builds the model from {}, which is not in {}, and the config does not give {}",
                if session.origins.contains_key("init_from") { "" } else if scenario.phase == Phase::Generate { " (sample.py's default)" } else { "" },
                rel.display(),
                base.display(),
                missing.join(", ")
            ),
        )
        .with_help("run vramdoc where train.py runs (or pass --data-dir DIR), or give the checkpoint's shape, e.g. --set n_layer=48"));
    }
    let ckpt = artifacts::checkpoint(&path).map_err(|e| at_key(session, "init_from", &e))?;
    let mut shape = Vec::new();
    for (key, value) in ckpt.model_args {
        shape.push(format!("{key}={value}"));
        scenario
            .set(key, value)
            .map_err(|e| at_key(session, "init_from", &format!("{}: {e}", rel.display())))?;
    }
    let when = ckpt
        .iter_num
        .map(|n| format!(", saved at iteration {n}"))
        .unwrap_or_default();
    notes.push(format!(
        "init_from = 'resume': the shape comes from {}{when}: {}",
        rel.display(),
        shape.join(" ")
    ));
    Ok(())
}
