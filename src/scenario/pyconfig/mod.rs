//! The config language nanoGPT accepts: Python files exec'd in order in train.py's globals,
//! then `--key=value` overrides, as nanoGPT's `configurator.py` applies them.
//!
//! [`lexer`] makes tokens, [`parser`] statements and [`exprs`] expressions ([`ast`]), [`eval`] evaluates
//! expressions over the globals ([`value`] holds the values and checked operators, [`builtins`]
//! the builtins, [`size`] bounds what they build and the run's work) and [`exec`] runs
//! statements. Nothing recurses once per operand of a chain, so a file's length costs no stack. A [`Session`] is the globals plus what the report
//! needs: where each key was set, which names the files assigned, and notes on skipped lines.

mod ast;
mod builtins;
mod eval;
mod exec;
mod exprs;
mod lexer;
mod parser;
mod size;
mod value;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ast::PyExprKind;
pub(crate) use eval::Binding;
use eval::{Env, Host};
use parser::Parser;
pub(crate) use value::PyValue;

use crate::diagnostics::Diagnostic;
use crate::estimate::{GpuCatalog, Literal, Scenario};
use crate::scenario::keys;

/// train.py's globals that do not shape memory, with their defaults.
const TRAIN_GLOBALS: &[(&str, Init)] = &[
    ("out_dir", Init::S("out")),
    ("eval_interval", Init::I(2000)),
    ("log_interval", Init::I(1)),
    ("eval_iters", Init::I(200)),
    ("eval_only", Init::B(false)),
    ("always_save_checkpoint", Init::B(true)),
    ("init_from", Init::S("scratch")),
    ("wandb_log", Init::B(false)),
    ("wandb_project", Init::S("owt")),
    ("wandb_run_name", Init::S("gpt2")),
    ("dataset", Init::S("openwebtext")),
    ("learning_rate", Init::F(6e-4)),
    ("max_iters", Init::I(600_000)),
    ("weight_decay", Init::F(1e-1)),
    ("beta1", Init::F(0.9)),
    ("beta2", Init::F(0.95)),
    ("grad_clip", Init::F(1.0)),
    ("decay_lr", Init::B(true)),
    ("warmup_iters", Init::I(2000)),
    ("lr_decay_iters", Init::I(600_000)),
    ("min_lr", Init::F(6e-5)),
    ("backend", Init::S("nccl")),
    ("device", Init::S("cuda")),
];

/// sample.py's globals that train.py lacks, with sample.py's defaults: defined so that
/// `--phase generate --max_new_tokens=100` overrides them as `python sample.py` would; in the
/// train phase, setting one is refused (`super::nanogpt::check_phase`), as nanoGPT's
/// configurator refuses a key train.py does not define.
const SAMPLE_GLOBALS: &[(&str, Init)] = &[
    ("start", Init::S("\n")),
    ("num_samples", Init::I(10)),
    ("max_new_tokens", Init::I(500)),
    ("temperature", Init::F(0.8)),
    ("top_k", Init::I(200)),
    ("seed", Init::I(1337)),
    // Hugging Face `generate`'s settings, read with a `model` (`super::model::generation`).
    ("prompt_tokens", Init::I(512)),
    ("num_return_sequences", Init::I(1)),
    ("num_beams", Init::I(1)),
    ("kv_cache", Init::S("dynamic")),
];

/// The modules train.py imports before it runs the configurator: (name, module).
const TRAIN_MODULES: &[(&str, &str)] = &[
    ("os", "os"),
    ("time", "time"),
    ("math", "math"),
    ("pickle", "pickle"),
    ("np", "numpy"),
    ("torch", "torch"),
];

/// A default value in [`TRAIN_GLOBALS`].
enum Init {
    S(&'static str),
    I(i64),
    F(f64),
    B(bool),
}

/// Where a key got its value.
#[derive(Debug, Clone)]
pub(crate) enum ValueOrigin {
    /// A line of a file.
    File {
        path: PathBuf,
        line: usize,
        col: usize,
        source: Arc<str>,
    },
    /// A command-line argument.
    Arg(String),
}

impl ValueOrigin {
    /// An error located here.
    pub(crate) fn error(&self, msg: &str) -> Diagnostic {
        match self {
            ValueOrigin::File {
                path,
                line,
                col,
                source,
            } => Diagnostic::error(msg.to_owned())
                .in_file(path)
                .at(*line, *col)
                .with_source(Arc::clone(source)),
            ValueOrigin::Arg(arg) => Diagnostic::error(format!("{arg}: {msg}")),
        }
    }

    /// Whether this is a line of the file `path`.
    pub(crate) fn is_in(&self, path: &Path) -> bool {
        matches!(self, ValueOrigin::File { path: p, .. } if p == path)
    }

    /// Where, in words: `path:line` or the argument.
    pub(crate) fn location(&self) -> String {
        match self {
            ValueOrigin::File { path, line, .. } => format!("{}:{line}", path.display()),
            ValueOrigin::Arg(arg) => arg.clone(),
        }
    }
}

/// Whether `name` is a key that shapes the estimate (a scenario key or `init_from`).
pub(crate) fn is_key(name: &str) -> bool {
    name == "init_from" || keys::is_key(name)
}

/// Whether `name` is read after the configuration: a key, or a global or module train.py
/// defines before it (deleting one makes nanoGPT stop with a NameError).
fn read_after_config(name: &str) -> bool {
    is_key(name)
        || TRAIN_GLOBALS.iter().any(|(n, _)| *n == name)
        || TRAIN_MODULES.iter().any(|(n, _)| *n == name)
}

/// The globals configs run in, and what the report needs to know about them.
pub(crate) struct Session<'a> {
    env: Env,
    host: Host<'a>,
    /// Where each name (scenario key or not) was last set by a file or an override.
    pub(crate) origins: HashMap<String, ValueOrigin>,
    /// Names the inputs assigned, in first-assignment order.
    pub(crate) assigned: Vec<String>,
    /// The same names, to find one in constant time.
    assigned_set: HashSet<String>,
    /// The keys whose value is a bool (`bias`, `compile`, ...).
    bool_keys: Vec<&'static str>,
    /// Skipped statements and assumptions, for the report.
    pub(crate) notes: Vec<String>,
    /// Every error found so far, in order.
    pub(crate) errors: Vec<Diagnostic>,
    noted_bf16: bool,
}

impl<'a> Session<'a> {
    /// train.py's globals (and vramdoc's own keys at their defaults); `gpu` is `--gpu`.
    pub(crate) fn new(catalog: &'a GpuCatalog, gpu: Option<&'a str>) -> Self {
        let mut env = Env::new();
        for (name, d) in TRAIN_GLOBALS.iter().chain(SAMPLE_GLOBALS) {
            let v = match d {
                Init::S(s) => PyValue::Str((*s).to_owned()),
                Init::I(i) => PyValue::Int(*i),
                Init::F(f) => PyValue::Float(*f),
                Init::B(b) => PyValue::Bool(*b),
            };
            env.insert((*name).to_owned(), Binding::Known(v));
        }
        for (name, module) in TRAIN_MODULES {
            env.insert(
                (*name).to_owned(),
                Binding::Known(PyValue::Module((*module).to_owned())),
            );
        }
        let defaults = Scenario::default();
        let mut bool_keys = Vec::new();
        for (key, text) in defaults.display_values() {
            let v = literal_eval(&text).unwrap_or(PyValue::Str(text));
            if matches!(v, PyValue::Bool(_)) {
                bool_keys.push(key);
            }
            env.insert(key.to_owned(), Binding::Known(v));
        }
        Session {
            env,
            host: Host::new(catalog, gpu),
            origins: HashMap::new(),
            assigned: Vec::new(),
            assigned_set: HashSet::new(),
            bool_keys,
            notes: Vec::new(),
            errors: Vec::new(),
            noted_bf16: false,
        }
    }

    /// Runs a Python config file (`text` read from `path`) in these globals; its errors are
    /// added to [`Session::errors`], and the first of them is returned.
    pub(crate) fn run_file(&mut self, path: &Path, text: &str) -> Result<(), Box<Diagnostic>> {
        let before = self.errors.len();
        exec::run_file(self, path, text);
        match self.errors.get(before) {
            Some(d) => Err(Box::new(d.clone())),
            None => Ok(()),
        }
    }

    /// Replaces a global's default (a script's own default, as sample.py's `compile = False`):
    /// no input set it, so it gets no origin and is not counted as assigned.
    pub(crate) fn set_default(&mut self, name: &str, lit: &Literal) {
        let v = match lit {
            Literal::Int(i) => PyValue::Int(*i),
            Literal::Float(f) => PyValue::Float(*f),
            Literal::Bool(b) => PyValue::Bool(*b),
            Literal::Str(s) => PyValue::Str(s.clone()),
            Literal::None => PyValue::None,
        };
        self.env.insert(name.to_owned(), Binding::Known(v));
    }

    /// Sets a key from a YAML scenario file.
    pub(crate) fn set_key(&mut self, key: &str, lit: &Literal, origin: ValueOrigin) {
        let v = match lit {
            Literal::Int(i) => PyValue::Int(*i),
            Literal::Float(f) => PyValue::Float(*f),
            Literal::Bool(b) => PyValue::Bool(*b),
            Literal::Str(s) => PyValue::Str(s.clone()),
            Literal::None => PyValue::None,
        };
        self.env.insert(key.to_owned(), Binding::Known(v));
        self.origins.insert(key.to_owned(), origin);
        if !is_key(key) {
            self.mark_assigned(key);
        }
    }

    /// Applies nanoGPT's `--key=value`: the key must exist, the value is `literal_eval`'d (or
    /// kept as a string) and must have the type of the value it replaces.
    pub(crate) fn apply_override(&mut self, arg: &str) -> Result<(), Box<Diagnostic>> {
        let fail = |msg: String, help: &str| {
            Box::new(Diagnostic::error(format!("{arg}: {msg}")).with_help(help.to_owned()))
        };
        let Some((key, raw)) = arg.strip_prefix("--").and_then(|a| a.split_once('=')) else {
            return Err(fail(
                "unexpected argument".into(),
                "overrides take nanoGPT's form --key=value, e.g. --batch_size=8",
            ));
        };
        let Some(existing) = self.env.get(key) else {
            return Err(fail(
                format!("Unknown config key: {key}"),
                &format!(
                    "{}nanoGPT only overrides keys train.py defines; scenario keys: {}",
                    crate::scenario::key_synonyms::hint(key),
                    keys::names()
                ),
            ));
        };
        let new = match literal_value(raw) {
            Ok(Some(v)) => v,
            Ok(None) => PyValue::Str(raw.to_owned()),
            Err(e) => return Err(fail(e, "write a value that fits 64 bits")),
        };
        // A key nanoGPT's code never reads (a Hugging Face model's, such as load_in_4bit) is no
        // train.py global, so its configurator's rule does not bind it: `true`/`false` as
        // transformers' and YAML's spelling of a bool.
        let hf_only =
            keys::get(key).is_some_and(|k| !k.families.contains(crate::estimate::Family::NanoGpt));
        let new = match (&new, existing) {
            (PyValue::Str(t), Binding::Known(PyValue::Bool(_))) if hf_only => {
                match t.to_ascii_lowercase().as_str() {
                    "true" => PyValue::Bool(true),
                    "false" => PyValue::Bool(false),
                    _ => new,
                }
            }
            _ => new,
        };

        if let Binding::Known(old) = existing {
            if !matches!(old, PyValue::None) && old.type_name() != new.type_name() {
                return Err(fail(
                    format!(
                        "nanoGPT's configurator requires the type of `{key}`'s value {} ({}), got {} ({})",
                        old.repr(),
                        old.type_name(),
                        new.repr(),
                        new.type_name()
                    ),
                    &format!("write a {} literal, e.g. --{key}={}", old.type_name(), old.repr()),
                ));
            }
        }
        self.env.insert(key.to_owned(), Binding::Known(new));
        self.origins
            .insert(key.to_owned(), ValueOrigin::Arg(arg.to_owned()));
        if !is_key(key) {
            self.mark_assigned(key);
        }
        Ok(())
    }

    /// Records that an input assigned `name` (once, in first-assignment order).
    fn mark_assigned(&mut self, name: &str) {
        if self.assigned_set.insert(name.to_owned()) {
            self.assigned.push(name.to_owned());
        }
    }

    /// The value of `name` as a scenario literal, if it is bound to one.
    pub(crate) fn literal(&self, name: &str) -> Option<Result<Literal, String>> {
        match self.env.get(name)? {
            // `lora_targets` alone takes a list of names (`['c_attn', 'c_fc']`).
            Binding::Known(v) => Some(to_literal(v, name == "lora_targets")),
            Binding::Unknown(why) => Some(Err(format!("could not be evaluated ({why})"))),
            Binding::Failed => None,
        }
    }

    /// Evaluates `src` (a `--set` value) in these globals: `Ok(None)` when it does not parse or
    /// names something undefined (the caller takes the text as a string).
    /// `key` says which scenario key it is for (`lora_targets` takes a list of names).
    pub(crate) fn eval_str(
        &self,
        key: &str,
        src: &str,
    ) -> Result<Option<Literal>, (String, usize)> {
        let expr = match parse_one(src) {
            Ok(Some(expr)) => expr,
            Ok(None) => return Ok(None),
            Err(e) => return Err((e.msg, e.col)),
        };
        match eval::eval(&expr, &self.env, &self.host) {
            Ok(v) => to_literal(&v, key == "lora_targets")
                .map(Some)
                .map_err(|m| (m, 1)),
            Err(e) if e.msg.starts_with("NameError") => Ok(None),
            // `all-linear` parses as `all - linear` and fails on the builtin `all`: a value of
            // bare words is the string the user typed, as the shell gave it.
            Err(_) if is_bare_words(src) => Ok(None),
            Err(e) => Err((e.msg, e.col)),
        }
    }
}

/// Whether `src` is bare words: names joined by `-`, `.` or `,` (`all-linear`,
/// `q_proj,v_proj`, `meta-llama/Llama-3.2-1B`), which a shell passes unquoted.
fn is_bare_words(src: &str) -> bool {
    let src = src.trim();
    src.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && src
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ',' | '/'))
}

/// Whether `text` (standard input, which has no extension to go by) is a Python config rather
/// than a YAML scenario: some statement assigns, imports or branches (`n_layer = 4`, or
/// `n_layer: int = 4`, which YAML would read as the string `int = 4`). Lines of `key: value`
/// alone are YAML (to Python, annotations without a value).
pub(crate) fn looks_like_python(text: &str) -> bool {
    let text = exec::universal_newlines(text);
    let Ok(mut parser) = Parser::new(&text) else {
        return false;
    };
    while let Ok(Some(stmts)) = parser.next_line() {
        let runs = |s: &ast::Stmt| {
            !matches!(
                s.kind,
                ast::StmtKind::AnnAssign(_, None)
                    | ast::StmtKind::Expr(_)
                    | ast::StmtKind::Pass
                    | ast::StmtKind::Skip { .. }
            )
        };
        if stmts.iter().any(runs) {
            return true;
        }
    }
    false
}

/// One expression filling all of `src`, or `None`; an error only when it is beyond what the
/// parser takes (a chain or nesting too long), which as a string would be a silent surprise.
fn parse_one(src: &str) -> Result<Option<ast::PyExpr>, parser::SyntaxError> {
    let Ok(mut p) = Parser::new(src) else {
        return Ok(None);
    };
    let e = match p.expr_list() {
        Ok(e) => e,
        Err(e) if e.is_limit() => return Err(e),
        Err(_) => return Ok(None),
    };
    Ok(matches!(p.next_line(), Ok(None)).then_some(e))
}

/// Python's `ast.literal_eval` on the forms configs use: numbers, strings, `True`/`False`/
/// `None`, signs, tuples and lists. `None` when `src` is not such a literal.
pub(crate) fn literal_eval(src: &str) -> Option<PyValue> {
    literal_value(src).ok().flatten()
}

/// [`literal_eval`], with an error for a literal beyond 64 bits.
fn literal_value(src: &str) -> Result<Option<PyValue>, String> {
    fn is_literal(e: &ast::PyExpr) -> bool {
        match &e.kind {
            PyExprKind::Const(_) | PyExprKind::BigInt(_) => true,
            PyExprKind::Unary('-' | '+', x) => matches!(
                &x.kind,
                PyExprKind::Const(PyValue::Int(_) | PyValue::Float(_)) | PyExprKind::BigInt(_)
            ),
            PyExprKind::Tuple(items) | PyExprKind::List(items) => items.iter().all(is_literal),
            _ => false,
        }
    }
    let Ok(Some(e)) = parse_one(src) else {
        return Ok(None);
    };
    if !is_literal(&e) {
        return Ok(None);
    }
    let catalog = GpuCatalog::default();
    let host = Host::new(&catalog, None);
    match eval::eval(&e, &Env::new(), &host) {
        Ok(v) => Ok(Some(v)),
        // -9223372036854775808 is a literal whose positive part does not fit.
        Err(_) if src.trim() == i64::MIN.to_string() => Ok(Some(PyValue::Int(i64::MIN))),
        Err(err) => Err(format!("column {}: {}", err.col, err.msg)),
    }
}

/// A value as a scenario literal.
/// A value as a scenario literal; with `lists`, a list or tuple of strings becomes one
/// comma-separated string (how `lora_targets` reads several names).
fn to_literal(v: &PyValue, lists: bool) -> Result<Literal, String> {
    Ok(match v {
        PyValue::None => Literal::None,
        PyValue::Bool(b) => Literal::Bool(*b),
        PyValue::Int(i) => Literal::Int(*i),
        PyValue::Float(f) => Literal::Float(*f),
        PyValue::Str(s) => Literal::Str(s.clone()),
        // A list of names (`lora_targets = ['c_attn', 'c_fc']`): the keys that take several
        // names read them comma-separated.
        PyValue::List(items) | PyValue::Tuple(items)
            if lists && !items.is_empty() && items.iter().all(|i| matches!(i, PyValue::Str(_))) =>
        {
            let names: Vec<&str> = items
                .iter()
                .filter_map(|i| match i {
                    PyValue::Str(s) => Some(s.as_str()),
                    _ => None,
                })
                .collect();
            Literal::Str(names.join(","))
        }
        other => {
            return Err(format!(
                "expected a number, a boolean or a string, got {}",
                other.repr()
            ))
        }
    })
}

#[cfg(test)]
mod tests;
