//! The config language nanoGPT accepts: Python files exec'd in order in train.py's globals,
//! then `--key=value` overrides, as nanoGPT's `configurator.py` applies them.
//!
//! [`lexer`] makes tokens, [`parser`] statements and [`exprs`] expressions ([`ast`]), [`eval`] evaluates
//! expressions over the globals ([`value`] holds the values and checked operators, [`builtins`]
//! the builtins) and [`exec`] runs statements. A [`Session`] is the globals plus what the report
//! needs: where each key was set, which names the files assigned, and notes on skipped lines.

mod ast;
mod builtins;
mod eval;
mod exec;
mod exprs;
mod lexer;
mod parser;
mod value;

use std::cell::Cell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ast::ExprKind;
pub(crate) use eval::Binding;
use eval::{Env, Host};
use parser::Parser;
pub(crate) use value::Value;

use crate::diagnostics::Diagnostic;
use crate::estimate::{GpuCatalog, Literal, Scenario, KEYS};

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
pub(crate) enum Origin {
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

impl Origin {
    /// An error located here.
    pub(crate) fn error(&self, msg: &str) -> Diagnostic {
        match self {
            Origin::File {
                path,
                line,
                col,
                source,
            } => Diagnostic::error(msg.to_owned())
                .in_file(path)
                .at(*line, *col)
                .with_source(Arc::clone(source)),
            Origin::Arg(arg) => Diagnostic::error(format!("{arg}: {msg}")),
        }
    }
}

/// Whether `name` is a key that shapes the estimate (a scenario key or `init_from`).
pub(crate) fn is_key(name: &str) -> bool {
    name == "init_from" || KEYS.contains(&name)
}

/// The globals configs run in, and what the report needs to know about them.
pub(crate) struct Session<'a> {
    env: Env,
    host: Host<'a>,
    /// Where each key was last set by a file or an override.
    pub(crate) origins: HashMap<String, Origin>,
    /// Names the inputs assigned, in first-assignment order.
    pub(crate) assigned: Vec<String>,
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
        for (name, d) in TRAIN_GLOBALS {
            let v = match d {
                Init::S(s) => Value::Str((*s).to_owned()),
                Init::I(i) => Value::Int(*i),
                Init::F(f) => Value::Float(*f),
                Init::B(b) => Value::Bool(*b),
            };
            env.insert((*name).to_owned(), Binding::Known(v));
        }
        for (name, module) in TRAIN_MODULES {
            env.insert(
                (*name).to_owned(),
                Binding::Known(Value::Module((*module).to_owned())),
            );
        }
        let defaults = Scenario::default();
        for (key, text) in defaults.display_values() {
            let v = literal_eval(&text).unwrap_or(Value::Str(text));
            env.insert(key.to_owned(), Binding::Known(v));
        }
        Session {
            env,
            host: Host {
                catalog,
                gpu,
                assumed_bf16: Cell::new(false),
            },
            origins: HashMap::new(),
            assigned: Vec::new(),
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

    /// Sets a key from a YAML scenario file.
    pub(crate) fn set_key(&mut self, key: &str, lit: &Literal, origin: Origin) {
        let v = match lit {
            Literal::Int(i) => Value::Int(*i),
            Literal::Float(f) => Value::Float(*f),
            Literal::Bool(b) => Value::Bool(*b),
            Literal::Str(s) => Value::Str(s.clone()),
            Literal::None => Value::None,
        };
        self.env.insert(key.to_owned(), Binding::Known(v));
        self.origins.insert(key.to_owned(), origin);
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
                    "nanoGPT only overrides keys train.py defines; scenario keys: {}",
                    KEYS.join(", ")
                ),
            ));
        };
        let new = match literal_value(raw) {
            Ok(Some(v)) => v,
            Ok(None) => Value::Str(raw.to_owned()),
            Err(e) => return Err(fail(e, "write a value that fits 64 bits")),
        };
        if let Binding::Known(old) = existing {
            if !matches!(old, Value::None) && old.type_name() != new.type_name() {
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
        if is_key(key) {
            self.origins
                .insert(key.to_owned(), Origin::Arg(arg.to_owned()));
        } else if !self.assigned.iter().any(|a| a == key) {
            self.assigned.push(key.to_owned());
        }
        Ok(())
    }

    /// The value of `name` as a scenario literal, if it is bound to one.
    pub(crate) fn literal(&self, name: &str) -> Option<Result<Literal, String>> {
        match self.env.get(name)? {
            Binding::Known(v) => Some(to_literal(v)),
            Binding::Unknown(why) => Some(Err(format!("could not be evaluated ({why})"))),
            Binding::Failed => None,
        }
    }

    /// Evaluates `src` (a `--set` value) in these globals: `Ok(None)` when it does not parse or
    /// names something undefined (the caller takes the text as a string).
    pub(crate) fn eval_str(&self, src: &str) -> Result<Option<Literal>, (String, usize)> {
        let Some(expr) = parse_one(src) else {
            return Ok(None);
        };
        match eval::eval(&expr, &self.env, &self.host) {
            Ok(v) => to_literal(&v).map(Some).map_err(|m| (m, 1)),
            Err(e) if e.msg.starts_with("NameError") => Ok(None),
            Err(e) => Err((e.msg, e.col)),
        }
    }
}

/// One expression filling all of `src`, or `None`.
fn parse_one(src: &str) -> Option<ast::Expr> {
    let mut p = Parser::new(src).ok()?;
    let e = p.expr_list().ok()?;
    p.next_line().ok()?.is_none().then_some(e)
}

/// Python's `ast.literal_eval` on the forms configs use: numbers, strings, `True`/`False`/
/// `None`, signs, tuples and lists. `None` when `src` is not such a literal.
pub(crate) fn literal_eval(src: &str) -> Option<Value> {
    literal_value(src).ok().flatten()
}

/// [`literal_eval`], with an error for a literal beyond 64 bits.
fn literal_value(src: &str) -> Result<Option<Value>, String> {
    fn is_literal(e: &ast::Expr) -> bool {
        match &e.kind {
            ExprKind::Const(_) | ExprKind::BigInt(_) => true,
            ExprKind::Unary('-' | '+', x) => matches!(
                &x.kind,
                ExprKind::Const(Value::Int(_) | Value::Float(_)) | ExprKind::BigInt(_)
            ),
            ExprKind::Tuple(items) | ExprKind::List(items) => items.iter().all(is_literal),
            _ => false,
        }
    }
    let Some(e) = parse_one(src) else {
        return Ok(None);
    };
    if !is_literal(&e) {
        return Ok(None);
    }
    let catalog = GpuCatalog::default();
    let host = Host {
        catalog: &catalog,
        gpu: None,
        assumed_bf16: Cell::new(false),
    };
    match eval::eval(&e, &Env::new(), &host) {
        Ok(v) => Ok(Some(v)),
        // -9223372036854775808 is a literal whose positive part does not fit.
        Err(_) if src.trim() == i64::MIN.to_string() => Ok(Some(Value::Int(i64::MIN))),
        Err(err) => Err(format!("column {}: {}", err.col, err.msg)),
    }
}

/// A value as a scenario literal.
fn to_literal(v: &Value) -> Result<Literal, String> {
    Ok(match v {
        Value::None => Literal::None,
        Value::Bool(b) => Literal::Bool(*b),
        Value::Int(i) => Literal::Int(*i),
        Value::Float(f) => Literal::Float(*f),
        Value::Str(s) => Literal::Str(s.clone()),
        other => {
            return Err(format!(
                "expected a number, a boolean or a string, got {}",
                other.repr()
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Random expressions over the language's operators, builtins and extreme values.
    fn expr() -> impl Strategy<Value = String> {
        let atom = prop_oneof![
            Just("9223372036854775807".to_owned()),
            Just("(-9223372036854775807 - 1)".to_owned()),
            Just("99999999999999999999".to_owned()),
            Just("1e308".to_owned()),
            Just("float('nan')".to_owned()),
            Just("float('-inf')".to_owned()),
            Just("'ab'".to_owned()),
            Just("True".to_owned()),
            Just("None".to_owned()),
            Just("n_head".to_owned()),
            Just("undefined".to_owned()),
            Just("torch.cuda.is_bf16_supported()".to_owned()),
            Just("os.path.join('a', 'b')".to_owned()),
            (-70i64..70).prop_map(|i| i.to_string()),
            (-3.0f64..3.0).prop_map(|f| format!("{f:?}")),
        ];
        atom.prop_recursive(5, 48, 3, |inner| {
            let op = prop::sample::select(vec![
                "**", "//", "%", "*", "/", "+", "-", "<<", ">>", "&", "|", "^", "<", "==", "and",
                "or", "in",
            ]);
            let func = prop::sample::select(vec![
                "int", "float", "bool", "str", "min", "max", "abs", "round", "len", "-", "~",
                "not ",
            ]);
            prop_oneof![
                (inner.clone(), op, inner.clone()).prop_map(|(a, o, b)| format!("({a} {o} {b})")),
                (func, inner.clone()).prop_map(|(f, a)| match f {
                    "-" | "~" | "not " => format!("{f}{a}"),
                    _ => format!("{f}({a})"),
                }),
                (inner.clone(), inner.clone(), inner.clone())
                    .prop_map(|(a, c, b)| format!("({a} if {c} else {b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}, {b})[{b}]")),
                (inner.clone(), inner).prop_map(|(a, b)| format!("max({a}, {b})")),
            ]
        })
    }

    /// Config-file text made of Python's pieces, in random order.
    fn config_text() -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            "\n",
            "    ",
            "\t",
            "n_layer",
            "x",
            " = ",
            "=",
            "+=",
            "**",
            "//",
            "%",
            "-",
            "1",
            "9223372036854775807",
            "(",
            ")",
            "[",
            "]",
            "{",
            ",",
            ":",
            ";",
            "'",
            "\"\"\"",
            "\\\n",
            "if ",
            "elif ",
            "else",
            "def ",
            "for ",
            " in ",
            "with ",
            "import ",
            "from ",
            "print",
            "#",
            "f'",
            "\u{feff}",
            "é",
            "True",
            "not ",
            " if ",
            " else ",
            ".",
            "torch",
            "lambda",
        ]);
        prop::collection::vec(piece, 0..80).prop_map(|v| v.concat())
    }

    /// Runs `text` as a file and checks any error is located; also as `--set` and an override.
    fn check(text: &str) -> Result<(), TestCaseError> {
        let catalog = GpuCatalog::builtin();
        let mut s = Session::new(&catalog, None);
        if let Err(d) = s.run_file(Path::new("p.py"), text) {
            prop_assert!(
                d.file.is_some() && d.line.is_some() && d.column.is_some(),
                "{d:?}"
            );
        }
        let _ = s.eval_str(text);
        if let Err(d) = s.apply_override(&format!("--n_layer={text}")) {
            prop_assert!(d.message.starts_with("--n_layer="), "{d:?}");
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn expressions_never_panic_and_errors_are_located(e in expr()) {
            check(&format!("x = 1\nn_layer = {e}\nhelper = {e}\nif {e}:\n    n_head = {e}\n"))?;
            check(&e)?;
        }

        #[test]
        fn config_text_never_panics_and_errors_are_located(text in config_text()) {
            check(&text)?;
        }

        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
            check(&text)?;
        }
    }

    #[test]
    fn literal_eval_is_configurators() {
        assert_eq!(literal_eval("8"), Some(Value::Int(8)));
        assert_eq!(literal_eval("-1e-3"), Some(Value::Float(-1e-3)));
        assert_eq!(literal_eval("'x'"), Some(Value::Str("x".into())));
        assert_eq!(
            literal_eval("(1, [2])"),
            Some(Value::Tuple(vec![
                Value::Int(1),
                Value::List(vec![Value::Int(2)])
            ]))
        );
        assert_eq!(
            literal_eval("-9223372036854775808"),
            Some(Value::Int(i64::MIN))
        );
        for not_literal in ["float16", "4*2", "1 + 2", "n_head", "f(1)", "1 2"] {
            assert_eq!(literal_eval(not_literal), None, "{not_literal}");
        }
        assert!(literal_value("99999999999999999999").is_err());
    }
}

#[cfg(test)]
mod statement_tests {
    use super::*;

    /// Runs `text` and returns the session.
    fn run(text: &str) -> Session<'static> {
        static CATALOG: std::sync::OnceLock<GpuCatalog> = std::sync::OnceLock::new();
        let catalog = CATALOG.get_or_init(GpuCatalog::builtin);
        let mut s = Session::new(catalog, Some("t4"));
        s.run_file(Path::new("c.py"), text).expect("runs");
        s
    }

    fn get(s: &Session<'_>, name: &str) -> Value {
        match s.env.get(name) {
            Some(Binding::Known(v)) => v.clone(),
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn each_statement_form() {
        let s = run("'''doc'''\na = 1; b = 2\nc = 1 + \\\n  2\nd = (1,\n  2)\na *= 10\ne: int = 5\nf: int\n\
                     g, (h, i) = 1, [2, 3]\nj = k = 7\nif a > 100:\n    m = 1\nelif a == 10: m = 2\nelse:\n    m = 3\n\
                     del k\nimport os.path\nfrom math import sqrt as root\n");
        assert_eq!(get(&s, "a"), Value::Int(10));
        assert_eq!(get(&s, "c"), Value::Int(3));
        assert_eq!(
            get(&s, "d"),
            Value::Tuple(vec![Value::Int(1), Value::Int(2)])
        );
        assert_eq!(get(&s, "e"), Value::Int(5));
        assert!(!s.env.contains_key("f") && !s.env.contains_key("k"));
        assert_eq!((get(&s, "g"), get(&s, "i")), (Value::Int(1), Value::Int(3)));
        assert_eq!(get(&s, "j"), Value::Int(7));
        assert_eq!(get(&s, "m"), Value::Int(2));
        assert_eq!(get(&s, "os"), Value::Module("os".into()));
        assert_eq!(get(&s, "root"), Value::Module("math.sqrt".into()));
        assert!(s.notes.is_empty(), "{:?}", s.notes);
    }

    #[test]
    fn skipped_statements_leave_notes_and_unknown_names() {
        let s = run(
            "print('hi')\ntorch._dynamo.config.x = True\ndef f():\n    n_layer = 1\n\
                     with open('x') as fh:\n    y = 1\nz = {'a': 1}\nif f():\n    w = 2\n",
        );
        assert_eq!(s.notes.len(), 6, "{:?}", s.notes);
        for name in ["f", "fh", "y", "z", "w"] {
            assert!(
                matches!(s.env.get(name), Some(Binding::Unknown(_))),
                "{name}"
            );
        }
        assert!(
            !s.origins.contains_key("n_layer"),
            "a def's body is its own scope"
        );
    }

    #[test]
    fn hostile_nesting_is_an_error_not_a_stack_overflow() {
        let catalog = GpuCatalog::builtin();
        let deep = |open: &str, close: &str| {
            format!("n_layer = {}1{}\n", open.repeat(5000), close.repeat(5000))
        };
        let mut blocks = String::new();
        for depth in 0..300 {
            blocks += &format!("{}if True:\n", " ".repeat(depth));
        }
        blocks += &format!("{}n_layer = 1\n", " ".repeat(300));
        let cases = [
            deep("(", ")"),
            deep("[", "]"),
            deep("-", ""),
            deep("not ", ""),
            deep("2 ** ", ""),
            deep("int(", ")"),
            deep("1 if True else ", ""),
            blocks,
        ];
        // Half the stack of a test thread, for a margin in debug builds.
        std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || {
                for text in cases {
                    let mut s = Session::new(&catalog, None);
                    let d = s.run_file(Path::new("c.py"), &text).unwrap_err();
                    assert!(d.line.is_some(), "{}", d.message);
                }
            })
            .expect("thread")
            .join()
            .expect("no stack overflow");
    }

    #[test]
    fn train_py_stops_at_the_configurator() {
        let s = run("n_layer = 3\nexec(open('configurator.py').read())\nn_layer = 4\nfor i in x: n_layer = i\n");
        assert_eq!(get(&s, "n_layer"), Value::Int(3));
    }

    #[test]
    fn keys_that_cannot_be_evaluated_are_errors() {
        let catalog = GpuCatalog::builtin();
        for (text, at) in [
            ("n_layer = time.time()\n", (1, 11)),
            ("x = 1\nif os.getcwd():\n    batch_size = 2\n", (2, 4)),
            ("while False:\n    dtype = 'float16'\n", (1, 1)),
            ("a, n_head = 1, {}\n", (1, 1)),
            ("n_layer = len\n", (1, 11)),
        ] {
            let mut s = Session::new(&catalog, None);
            let d = s.run_file(Path::new("c.py"), text).unwrap_err();
            assert_eq!(
                (d.line, d.column),
                (Some(at.0), Some(at.1)),
                "{text}: {}",
                d.message
            );
        }
    }
}
