//! Builds the scenario of `vramdoc estimate` from files, nanoGPT-style overrides and flags.
//!
//! Precedence, lowest first: nanoGPT's defaults; FILEs (YAML scenarios or nanoGPT Python
//! configs, run in order in the same globals by [`super::pyconfig`]) and `--key=value`
//! overrides, in command-line order as nanoGPT's `configurator.py` applies them; `--set
//! KEY=VALUE`; then what train.py does with them ([`super::nanogpt`]: the dataset's vocabulary
//! unless a key set it, a GPT-2 or resumed checkpoint's shape, which nanoGPT imposes over the
//! config's, the device); `--gpu`.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use super::pyconfig::{is_key, looks_like_python, Session, ValueOrigin};
use crate::diagnostics::Diagnostic;
use crate::estimate::{GpuCatalog, Literal, Phase, Scenario, ScenarioError};
use crate::scenario::keys::{self, KEYS};
use crate::yaml_input::{
    excess_flow_bracket, parse_positioned, Located, Seg, MAX_FILE_FLOW_BRACKETS,
    MAX_SCENARIO_YAML_BYTES,
};

/// One input of a scenario, applied in command-line order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Input {
    /// A YAML scenario or a nanoGPT Python config (`-`: standard input).
    File(std::path::PathBuf),
    /// A nanoGPT-style `--key=value` override.
    Override(String),
}

/// Where the scenario came from, for the report's notes.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// The resulting scenario (not yet validated against the catalog).
    pub(crate) scenario: Scenario,
    /// Names the config files or overrides set that do not affect memory.
    pub(crate) ignored: Vec<String>,
    /// Statements of the config files that were skipped, and assumptions made.
    pub(crate) notes: Vec<String>,
    /// Where each key that an input set was set.
    pub(crate) origins: std::collections::HashMap<String, ValueOrigin>,
    /// What to generate, when the scenario is `phase = generate` (sampling with `sample.py`).
    pub(crate) sampling: Option<crate::estimate::Sampling>,
    /// What `generate` is asked to do, when a `model` is in the generate phase.
    pub(crate) generation: Option<crate::estimate::Generation>,
    /// The model the scenario key `model` names, resolved (a Hugging Face `Trainer` step
    /// instead of nanoGPT's train.py).
    pub(crate) model: Option<super::model::Model>,
}

/// Everything that shapes the scenario, as given on the command line.
pub(crate) struct Sources<'a> {
    pub(crate) inputs: &'a [Input],
    pub(crate) sets: &'a [String],
    pub(crate) gpu: Option<&'a str>,
    pub(crate) catalog: &'a GpuCatalog,
    /// The folder train.py would run in: `data/<dataset>/meta.pkl` and `<out_dir>/ckpt.pt` are
    /// read relative to it.
    pub(crate) base: &'a Path,
}

/// Reads the inputs, applies overrides and flags in order; every error says where and what to
/// do, and all of them are reported together.
pub(crate) fn load(src: &Sources<'_>) -> Result<Loaded, Vec<Diagnostic>> {
    // nanochat's own scripts take their own flags (`nanochat_script`).
    if let Some(loaded) = super::nanochat_script::load(src) {
        return loaded;
    }
    let mut session = Session::new(src.catalog, src.gpu);
    // The first file that is nanoGPT's sample.py: it implies `phase = generate`.
    let mut sample_file = None;
    // The Python configs read (they may define any global, as nanoGPT's do).
    let mut python_files = Vec::new();
    for input in src.inputs {
        let result = match input {
            Input::File(path) => read_file(&mut session, path),
            Input::Override(arg) => session.apply_override(arg).map(|()| false),
        };
        match (result, input) {
            (Err(d), _) => session.errors.push(*d),
            (Ok(true), Input::File(path)) => {
                let label = if path == Path::new("-") {
                    Path::new("<stdin>")
                } else {
                    path
                };
                python_files.push(label.to_path_buf());
                if sample_file.is_none() {
                    sample_file = super::nanogpt::sample_script(&session);
                }
            }
            (Ok(_), _) => {}
        }
    }
    let mut out = Loaded::default();
    let mut errors = std::mem::take(&mut session.errors);
    errors.extend(apply_keys(&session, &mut out.scenario));
    errors.extend(apply_sets(&mut session, &mut out.scenario, src.sets));
    // What train.py does with the globals (keys given with `--set` count as given).
    if errors.is_empty() {
        if let Err(e) = super::nanogpt::settle_phase(
            &mut session,
            &mut out.scenario,
            sample_file.as_ref(),
            &python_files,
        ) {
            errors.extend(e);
        }
    }
    if errors.is_empty() && out.scenario.model.is_some() {
        // Not nanoGPT: the model's own config and Trainer's defaults, not train.py's set-up.
        match super::model::settle(&mut session, &mut out.scenario) {
            Ok((model, notes)) => {
                session.notes.extend(notes);
                out.model = Some(model);
            }
            Err(e) => errors.extend(e),
        }
        if errors.is_empty() && out.scenario.phase == Phase::Generate {
            match super::model::generation(&session, &out.scenario) {
                Ok(g) => out.generation = Some(g),
                Err(e) => errors.push(e),
            }
        }
    } else if errors.is_empty() {
        match super::nanogpt::apply(&session, &mut out.scenario, src.base) {
            Ok(notes) => session.notes.extend(notes),
            Err(e) => errors.extend(e),
        }
        if errors.is_empty() && out.scenario.phase == Phase::Generate {
            let mut notes = Vec::new();
            match super::nanogpt::sampling(&session, src.base, &mut notes) {
                Ok(run) => out.sampling = Some(run),
                Err(e) => errors.push(e),
            }
            session.notes.extend(notes);
        }
    }
    if let Some(gpu) = src.gpu {
        if let Err(e) = out.scenario.set("gpu", Literal::Str(gpu.to_owned())) {
            errors.push(flag_error("--gpu", &e));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    out.ignored = session
        .assigned
        .iter()
        .filter(|n| !is_key(n))
        .cloned()
        .collect();
    out.notes = std::mem::take(&mut session.notes);
    out.origins = std::mem::take(&mut session.origins);
    Ok(out)
}

/// Sets the scenario from the keys the inputs set, then applies `init_from`.
fn apply_keys(session: &Session<'_>, scenario: &mut Scenario) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    for key in KEYS.iter().map(|k| k.name) {
        let Some(origin) = session.origins.get(key) else {
            continue;
        };
        let result = match session.literal(key) {
            Some(Ok(lit)) => scenario.set(key, lit).map_err(|e| e.to_string()),
            Some(Err(msg)) => Err(format!("`{key}` {msg}")),
            None => Ok(()),
        };
        if let Err(msg) = result {
            errors.push(origin.error(&msg));
        }
    }
    errors
}

/// Applies `--set KEY=VALUE`: VALUE is evaluated in the config's globals (a string when it does
/// not parse or names something undefined).
fn apply_sets(
    session: &mut Session<'_>,
    scenario: &mut Scenario,
    sets: &[String],
) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    for arg in sets {
        let Some((key, value)) = arg.split_once('=') else {
            errors.push(
                Diagnostic::error(format!("--set {arg}: expected KEY=VALUE"))
                    .with_help("for example --set batch_size=8 or --set dtype=float16"),
            );
            continue;
        };
        let key = key.trim();
        let lit = match session.eval_str(key, value) {
            Ok(Some(lit)) => lit,
            Ok(None) => Literal::Str(value.trim().to_owned()),
            Err((msg, col)) => {
                errors.push(
                    Diagnostic::error(format!("--set {arg}: column {col} of the value: {msg}"))
                        .with_help("write a value vramdoc can evaluate, such as 8, 0.1 or float16"),
                );
                continue;
            }
        };
        // sample.py's own settings are globals, not scenario keys (`nanogpt::sampling` reads them).
        if !super::nanogpt::is_sample_setting(key) {
            if let Err(e) = scenario.set(key, lit.clone()) {
                errors.push(flag_error(&format!("--set {arg}"), &e));
                continue;
            }
        }
        let origin = ValueOrigin::Arg(format!("--set {arg}"));
        session.set_key(key, &lit, origin.clone());
        session.origins.insert(key.to_owned(), origin);
    }
    errors
}

/// Reads at most [`MAX_INPUT_BYTES`] from `path` (`None`: standard input) without ever holding
/// more: `vramdoc estimate /dev/zero` or `yes | vramdoc diagnose -` stop at the cap with an
/// error instead of growing until memory runs out. FIFOs and process substitutions (`<(...)`)
/// are read like files. Errors are the sentence after "cannot read ...: ".
pub(crate) fn read_capped(path: Option<&Path>) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    let limit = MAX_INPUT_BYTES + 1;
    let read = match path {
        Some(p) => std::fs::File::open(p).and_then(|f| f.take(limit).read_to_end(&mut bytes)),
        None => std::io::stdin().lock().take(limit).read_to_end(&mut bytes),
    };
    read.map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(format!(
            "it is larger than the {} MiB vramdoc reads",
            MAX_INPUT_BYTES >> 20
        ));
    }
    Ok(bytes)
}

/// The most vramdoc reads from one command-line input (a scenario, config, catalog, message
/// file or standard input): the site build's limit, 10 MiB.
pub(crate) const MAX_INPUT_BYTES: u64 = crate::site_files::MAX_FILE_BYTES;

/// [`read_capped`] as UTF-8 text.
pub(crate) fn read_capped_text(path: Option<&Path>) -> Result<String, String> {
    String::from_utf8(read_capped(path)?).map_err(|e| {
        let line = e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        format!("line {line} is not valid UTF-8; save the file as UTF-8")
    })
}

/// Reads one FILE (`-` is standard input) and runs or applies it; `true` when it was a Python
/// config (which may be nanoGPT's sample.py).
fn read_file(session: &mut Session<'_>, path: &Path) -> Result<bool, Box<Diagnostic>> {
    let stdin = path == Path::new("-");
    let read = read_capped_text((!stdin).then_some(path));
    let label = if stdin { Path::new("<stdin>") } else { path };
    let text = read.map_err(|e| {
        Diagnostic::error(format!("cannot read the scenario file: {e}"))
            .in_file(label)
            .with_help(
                "pass a YAML scenario or a nanoGPT config such as config/train_shakespeare_char.py",
            )
    })?;
    if let Some(model) = hugging_face_model(&text) {
        return Err(Box::new(hugging_face_refused(label, &model)));
    }
    if stdin {
        check_flow_brackets(label, &text)?;
    }
    let is_yaml = if stdin {
        // Judged on the first lines only, so a large input costs the parser little here.
        let head = if text.len() > MAX_SCENARIO_YAML_BYTES {
            let cut = (0..=MAX_SCENARIO_YAML_BYTES)
                .rev()
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(0);
            text[..cut].rsplit_once('\n').map_or("", |(head, _)| head)
        } else {
            &text
        };
        !looks_like_python(&text)
            && matches!(
                yaml_serde::from_str::<yaml_serde::Value>(head),
                Ok(yaml_serde::Value::Mapping(_))
            )
    } else {
        matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        )
    };
    if is_yaml {
        yaml_file(session, label, &text).map(|()| false)
    } else {
        // Its errors are in the session's list already.
        let _ = session.run_file(label, &text);
        Ok(true)
    }
}

/// The most `[` and `{` a command-line YAML input may contain (see [`MAX_FILE_FLOW_BRACKETS`]).
pub(crate) const MAX_FLOW_BRACKETS: usize = MAX_FILE_FLOW_BRACKETS;

/// Refuses YAML with more than [`MAX_FLOW_BRACKETS`] `[` and `{`, at the line of the first one
/// too many, before the parser sees it.
pub(crate) fn check_flow_brackets(path: &Path, text: &str) -> Result<(), Box<Diagnostic>> {
    match excess_flow_bracket(text, MAX_FLOW_BRACKETS) {
        None => Ok(()),
        Some(line) => Err(Box::new(
            Diagnostic::error(format!(
                "more than {MAX_FLOW_BRACKETS} `[` and `{{`: vramdoc does not read YAML nested this deeply"
            ))
            .in_file(path)
            .at(line, 1)
            .with_source(Arc::from(text))
            .with_help("write lists and mappings as indented YAML blocks, not deeply nested `[...]` or `{...}`"),
        )),
    }
}

/// Parses a command-line YAML input after [`check_flow_brackets`] and if it is at most
/// `max_bytes` long, with the positions of its keys and values; a syntax error or duplicate key
/// is located at its own line.
pub(crate) fn parse_yaml(
    path: &Path,
    text: &str,
    max_bytes: usize,
) -> Result<Located, Box<Diagnostic>> {
    check_flow_brackets(path, text)?;
    if text.len() > max_bytes {
        return Err(Box::new(
            Diagnostic::error(format!(
                "the YAML is {} KiB; vramdoc reads at most {} KiB of it",
                text.len().div_ceil(1024),
                max_bytes / 1024
            ))
            .in_file(path)
            .with_help(
                "a scenario is a few keys and a catalog a few cards: is this the right file?",
            ),
        ));
    }
    check_flow_brackets(path, text)?;
    parse_positioned(text).map_err(|e| {
        let mut d = Diagnostic::error(format!("invalid YAML: {}", e.message))
            .in_file(path)
            .with_help(e.help);
        if let Some((line, col)) = e.line_col {
            d = d.at(line, col).with_source(Arc::from(text));
        }
        Box::new(d)
    })
}

/// The model a Hugging Face `config.json` describes (its `model_type`, else its first
/// architecture), if `text` is one: a JSON object with either key.
fn hugging_face_model(text: &str) -> Option<String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let field = |key: &str| match value.get(key)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Array(items) => items.first()?.as_str().map(str::to_owned),
        _ => None,
    };
    field("model_type").or_else(|| field("architectures"))
}

/// The refusal of a Hugging Face model: vramdoc models nanoGPT's code, and estimating another
/// code base's model as nanoGPT's is wrong (nanoGPT's model comes out up to 48 % below Hugging
/// Face's GPT-2 at the same shape and settings: `tests/data/hf_gpt2_replay.json`, replayed by
/// `tools/hf_replay/`, compared in `tests/it/hugging_face.rs`).
fn hugging_face_refused(label: &Path, model: &str) -> Diagnostic {
    Diagnostic::error(format!(
        "this is a Hugging Face config.json (model '{model}'), not a scenario: a scenario FILE is \
         read as nanoGPT's train.py reads its config, and estimating a Hugging Face model with \
         nanoGPT's shapes would be wrong (for Hugging Face's GPT-2 alone, nanoGPT's GPT-2 of the \
         same shape and settings comes out up to 48 % below what it trains with)"
    ))
    .in_file(label)
    .at(1, 1)
    .with_help(format!(
        "give it as the model: vramdoc estimate --model {}",
        crate::terminal::visible_line(&label.display().to_string())
    ))
}

/// A command-line error naming the flag and the key.
fn flag_error(flag: &str, e: &ScenarioError) -> Diagnostic {
    Diagnostic::error(format!("{flag}: {e}")).with_help(format!("scenario keys: {}", keys::names()))
}

/// A YAML scenario: a mapping of keys, or a document with a `scenario:` mapping. Its keys are
/// checked as a whole, then set in the session's globals, each located where it was written.
fn yaml_file(session: &mut Session<'_>, path: &Path, text: &str) -> Result<(), Box<Diagnostic>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let doc = parse_yaml(path, text, MAX_SCENARIO_YAML_BYTES)?;
    let nested = doc.value.get("scenario");
    let map = nested.unwrap_or(&doc.value);
    let key_at = |key: &str| {
        let mut keys_path = Vec::new();
        if nested.is_some() {
            keys_path.push(Seg::key("scenario"));
        }
        keys_path.push(Seg::key(key));
        doc.at.key(&keys_path)
    };
    let source: Arc<str> = Arc::from(text);
    // sample.py's own settings are read by `nanogpt::sampling`, not by the key table.
    let keys_only = match map {
        yaml_serde::Value::Mapping(m) => {
            let mut m = m.clone();
            m.retain(|k, _| !k.as_str().is_some_and(super::nanogpt::is_sample_setting));
            yaml_serde::Value::Mapping(m)
        }
        other => other.clone(),
    };
    Scenario::from_yaml(&keys_only).map_err(|e| {
        let d = Diagnostic::error(e.to_string()).in_file(path);
        Box::new(match e.key.as_deref().and_then(key_at) {
            Some((line, col)) => d.at(line, col).with_source(Arc::clone(&source)),
            None => d,
        })
    })?;
    for (k, v) in map.as_mapping().into_iter().flatten() {
        // The whole mapping was checked above: what is left out here cannot occur.
        let Some(key) = k.as_str() else { continue };
        let Ok(lit) = crate::estimate::yaml_literal(key, v) else {
            continue;
        };
        let (line, col) = key_at(key).unwrap_or((1, 1));
        let origin = ValueOrigin::File {
            path: path.to_path_buf(),
            line,
            col,
            source: Arc::clone(&source),
        };
        session.set_key(key, &lit, origin);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(text: &str, gpu: Option<&str>) -> Result<Loaded, Box<Diagnostic>> {
        py_all(text, gpu).map_err(|mut errors| Box::new(errors.remove(0)))
    }

    fn py_all(text: &str, gpu: Option<&str>) -> Result<Loaded, Vec<Diagnostic>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.py");
        std::fs::write(&path, text).unwrap();
        let catalog = GpuCatalog::builtin();
        load(&Sources {
            inputs: &[Input::File(path)],
            sets: &[],
            gpu,
            catalog: &catalog,
            base: dir.path(),
        })
    }

    #[test]
    fn reads_a_nanogpt_config() {
        let cfg = "# train a miniature character-level shakespeare model\nout_dir = 'out-shakespeare-char'\n\
                   gradient_accumulation_steps = 1\nbatch_size = 64\nblock_size = 256 # context\n\
                   n_layer = 6\nn_head = 6\nn_embd = 384\ndropout = 0.2\nlearning_rate = 1e-3\n\
                   # compile = False\nimport time\nwandb_run_name = 'ft-' + str(time.time())\n";
        let l = py(cfg, None).unwrap();
        let s = l.scenario;
        assert_eq!(
            (s.batch_size, s.block_size, s.n_layer, s.n_embd, s.dropout),
            (64, 256, 6, 384, 0.2)
        );
        assert!(s.compile);
        assert!(l.ignored.contains(&"learning_rate".to_owned()));
        assert!(
            l.notes.iter().any(|n| n.contains(":13: skipped")),
            "{:?}",
            l.notes
        );
    }

    #[test]
    fn init_from_gpt2_sets_the_shape() {
        let s = py(
            "init_from = 'gpt2-xl'\nblock_size = 512\nbatch_size = 1\n",
            None,
        )
        .unwrap()
        .scenario
        .as_run();
        assert_eq!(
            (
                s.n_layer,
                s.n_head,
                s.n_embd,
                s.vocab_size,
                s.block_size,
                s.bias
            ),
            (48, 25, 1600, 50257, 512, true)
        );
    }

    #[test]
    fn errors_name_the_line() {
        let err = py("n_layer = 6\nn_head = 0\n", None).unwrap_err();
        assert!(err.location().contains(":2:1"), "{}", err.location());
        let err = py("n_layer = six\n", None).unwrap_err();
        assert!(err.location().ends_with(":1:11"), "{}", err.location());
        assert!(py("if True:\n", None).is_err());
        let err = py("x = 1\nn_embd = n_head * foo()\n", None).unwrap_err();
        assert!(err.location().ends_with(":2:19"), "{}", err.location());
        assert!(
            err.message.contains("n_embd = n_head * foo()"),
            "{}",
            err.message
        );
    }

    #[test]
    fn every_error_is_reported_once() {
        let errors = py_all(
            "n_layer = 0\nn_head = foo()\nn_embd = n_head * 64\nx = 1 / 0\nbatch_size = 'x'\n",
            None,
        )
        .unwrap_err();
        let lines: Vec<_> = errors.iter().map(|d| d.line).collect();
        // n_embd's line follows from n_head's error and is not reported again.
        assert_eq!(lines, [Some(2), Some(4), Some(1), Some(5)], "{errors:?}");
    }
}
