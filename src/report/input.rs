//! Builds the scenario of `vramdoc estimate` from a file, nanoGPT-style overrides and flags.
//!
//! Precedence, lowest first: nanoGPT's defaults, FILE (YAML or a nanoGPT Python config),
//! nanoGPT-style `--key=value` overrides, `init_from = 'gpt2*'` (which, as in nanoGPT, replaces
//! the model's shape), `--set KEY=VALUE`, `--gpu`.

use std::path::Path;
use std::sync::Arc;

use super::pyexpr;
use crate::diagnostics::Diagnostic;
use crate::estimate::{Literal, Scenario, ScenarioError, KEYS};

/// train.py's configuration keys that do not change GPU memory (accepted and ignored).
pub(crate) const IGNORED_TRAIN_KEYS: &[&str] = &[
    "out_dir",
    "eval_interval",
    "log_interval",
    "eval_iters",
    "eval_only",
    "always_save_checkpoint",
    "wandb_log",
    "wandb_project",
    "wandb_run_name",
    "dataset",
    "learning_rate",
    "max_iters",
    "weight_decay",
    "beta1",
    "beta2",
    "grad_clip",
    "decay_lr",
    "warmup_iters",
    "lr_decay_iters",
    "min_lr",
    "backend",
    "device",
    "seed",
];

/// Where the scenario came from, for the report's notes.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    /// The resulting scenario (not yet validated against the catalog).
    pub(crate) scenario: Scenario,
    /// Keys of the config file that do not affect memory and were skipped.
    pub(crate) ignored: Vec<String>,
}

/// Everything that shapes the scenario, as given on the command line.
pub(crate) struct Sources<'a> {
    pub(crate) file: Option<&'a Path>,
    pub(crate) overrides: &'a [String],
    pub(crate) sets: &'a [String],
    pub(crate) gpu: Option<&'a str>,
}

/// Reads the file, applies overrides and flags in order; every error says where and what to do.
pub(crate) fn load(src: &Sources<'_>) -> Result<Loaded, Box<Diagnostic>> {
    let mut out = Loaded::default();
    let mut init_from: Option<(String, String)> = None; // (model, where it was set)
    if let Some(path) = src.file {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Diagnostic::error(format!("cannot read the scenario file: {e}"))
                .in_file(path)
                .with_help("pass a YAML scenario or a nanoGPT config such as config/train_shakespeare_char.py")
        })?;
        let is_yaml = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        );
        if is_yaml {
            out.scenario = yaml_file(path, &text)?;
        } else {
            python_file(path, &text, &mut out, &mut init_from)?;
        }
    }
    for arg in src.overrides {
        let Some((key, value)) = arg.strip_prefix("--").and_then(|a| a.split_once('=')) else {
            return Err(Box::new(
                Diagnostic::error(format!("unexpected argument `{arg}`"))
                    .with_help("overrides take nanoGPT's form --key=value, e.g. --batch_size=8"),
            ));
        };
        let value = pyexpr::override_value(value);
        if key == "init_from" {
            init_from = Some((text_of(&value), format!("--init_from={}", text_of(&value))));
        } else if IGNORED_TRAIN_KEYS.contains(&key) {
            out.ignored.push(key.to_owned());
        } else {
            out.scenario
                .set(key, value)
                .map_err(|e| flag_error(arg, &e))?;
        }
    }
    if let Some((model, origin)) = init_from {
        pretrained(&mut out.scenario, &model).map_err(|e| flag_error(&origin, &e))?;
    }
    for arg in src.sets {
        let Some((key, value)) = arg.split_once('=') else {
            return Err(Box::new(
                Diagnostic::error(format!("--set {arg}: expected KEY=VALUE"))
                    .with_help("for example --set batch_size=8 or --set dtype=float16"),
            ));
        };
        let lit = pyexpr::override_value(value);
        out.scenario
            .set(key.trim(), lit)
            .map_err(|e| flag_error(&format!("--set {arg}"), &e))?;
    }
    if let Some(gpu) = src.gpu {
        out.scenario
            .set("gpu", Literal::Str(gpu.to_owned()))
            .map_err(|e| flag_error("--gpu", &e))?;
    }
    Ok(out)
}

/// A command-line error naming the flag and the key.
fn flag_error(flag: &str, e: &ScenarioError) -> Diagnostic {
    Diagnostic::error(format!("{flag}: {e}"))
        .with_help(format!("scenario keys: {}", KEYS.join(", ")))
}

/// The text of a string literal (or the literal's Python spelling).
fn text_of(l: &Literal) -> String {
    match l {
        Literal::Str(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A YAML scenario: a mapping of keys, or a document with a `scenario:` mapping.
fn yaml_file(path: &Path, text: &str) -> Result<Scenario, Box<Diagnostic>> {
    let doc: yaml_serde::Value = yaml_serde::from_str(text).map_err(|e| {
        let mut d = Diagnostic::error(format!("invalid YAML: {e}")).in_file(path);
        if let Some(loc) = e.location() {
            d = d.at(loc.line(), loc.column()).with_source(Arc::from(text));
        }
        d
    })?;
    let map = doc.get("scenario").unwrap_or(&doc);
    Scenario::from_yaml(map).map_err(|e| {
        let line = e.key.as_deref().and_then(|k| find_key_line(text, k, ':'));
        Box::new(located(
            Diagnostic::error(e.to_string()).in_file(path),
            line,
            text,
        ))
    })
}

/// A nanoGPT config file: `key = value` lines with Python literals and comments.
fn python_file(
    path: &Path,
    text: &str,
    out: &mut Loaded,
    init_from: &mut Option<(String, String)>,
) -> Result<(), Box<Diagnostic>> {
    for (n, raw) in text.lines().enumerate() {
        let line = pyexpr::strip_comment(raw).trim();
        if line.is_empty() || line.starts_with("import ") || line.starts_with("from ") {
            continue;
        }
        let at = |msg: String| located(Diagnostic::error(msg).in_file(path), Some(n + 1), text);
        let Some((key, value)) = line
            .split_once('=')
            .filter(|(k, v)| !v.starts_with('=') && is_ident(k.trim()))
        else {
            return Err(Box::new(
                at(format!("expected `key = value`, found `{line}`")).with_help(
                    "vramdoc reads nanoGPT config files: one `key = value` assignment per line",
                ),
            ));
        };
        let key = key.trim();
        let lit = pyexpr::eval(value);
        if key == "init_from" {
            if let Some(Literal::Str(model)) = lit {
                *init_from = Some((model, format!("{}:{}", path.display(), n + 1)));
            }
        } else if KEYS.contains(&key) {
            let lit = lit.ok_or_else(|| {
                at(format!("`{key}`: cannot evaluate `{}`", value.trim()))
                    .with_help("use a literal such as 6, 0.1, True or 'bfloat16'")
            })?;
            out.scenario.set(key, lit).map_err(|e| at(e.to_string()))?;
        } else {
            out.ignored.push(key.to_owned());
        }
    }
    Ok(())
}

/// Applies nanoGPT's `from_pretrained`: GPT-2's shape, vocabulary 50257 and biases, with the
/// context cropped to the configured `block_size` when that is shorter (`crop_block_size`).
fn pretrained(s: &mut Scenario, model: &str) -> Result<(), ScenarioError> {
    let (l, a, h) = match model {
        "scratch" | "resume" => return Ok(()),
        "gpt2" => (12, 12, 768),
        "gpt2-medium" => (24, 16, 1024),
        "gpt2-large" => (36, 20, 1280),
        "gpt2-xl" => (48, 25, 1600),
        other => {
            return Err(ScenarioError::key(
                "init_from",
                format!("unknown model '{other}'; nanoGPT knows scratch, resume, gpt2, gpt2-medium, gpt2-large, gpt2-xl"),
            ))
        }
    };
    s.n_layer = l;
    s.n_head = a;
    s.n_embd = h;
    s.vocab_size = 50257;
    s.bias = true;
    s.block_size = s.block_size.min(1024);
    Ok(())
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The 1-based line where `key` is assigned (`key:` in YAML).
fn find_key_line(text: &str, key: &str, sep: char) -> Option<usize> {
    text.lines()
        .position(|l| {
            l.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(sep))
        })
        .map(|i| i + 1)
}

fn located(d: Diagnostic, line: Option<usize>, text: &str) -> Diagnostic {
    match line {
        Some(l) => d.at(l, 1).with_source(Arc::from(text)),
        None => d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(text: &str) -> Result<Loaded, Box<Diagnostic>> {
        let mut out = Loaded::default();
        let mut init = None;
        python_file(Path::new("c.py"), text, &mut out, &mut init)?;
        if let Some((m, _)) = init {
            pretrained(&mut out.scenario, &m).map_err(|e| Diagnostic::error(e.to_string()))?;
        }
        Ok(out)
    }

    #[test]
    fn reads_a_nanogpt_config() {
        let cfg = "# train a miniature character-level shakespeare model\nout_dir = 'out-shakespeare-char'\n\
                   gradient_accumulation_steps = 1\nbatch_size = 64\nblock_size = 256 # context\n\
                   n_layer = 6\nn_head = 6\nn_embd = 384\ndropout = 0.2\nlearning_rate = 1e-3\n\
                   # compile = False\nimport time\nwandb_run_name = 'ft-' + str(time.time())\n";
        let l = py(cfg).unwrap();
        let s = l.scenario;
        assert_eq!(
            (s.batch_size, s.block_size, s.n_layer, s.n_embd, s.dropout),
            (64, 256, 6, 384, 0.2)
        );
        assert!(s.compile);
        assert!(l.ignored.contains(&"learning_rate".to_owned()));
    }

    #[test]
    fn init_from_gpt2_sets_the_shape() {
        let s = py("init_from = 'gpt2-xl'\nblock_size = 512\nbatch_size = 1\n")
            .unwrap()
            .scenario;
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
        let err = py("n_layer = 6\nn_head = 0\n").unwrap_err();
        assert!(err.location().contains(":2"), "{}", err.location());
        assert!(py("n_layer = six\n").is_err());
        assert!(py("if True:\n").is_err());
    }
}
