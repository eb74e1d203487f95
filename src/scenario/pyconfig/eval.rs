//! Evaluates expressions over an environment: names bound earlier, operators, the builtins
//! `int float bool str min max abs round len`, and the few library calls configs make
//! (`torch.cuda.is_available()`, `torch.cuda.is_bf16_supported()`, `os.path.exists/join`).

use std::cell::Cell;
use std::collections::HashMap;
use std::path::Path;

use super::ast::{CmpOp, PyExpr, PyExprKind, Trailer};
use super::size::{Budget, ContainerSize};
use super::value::{self, OpError, PyValue};
use crate::estimate::GpuCatalog;

/// What a name is bound to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Binding {
    /// A value.
    Known(PyValue),
    /// Assigned by a statement vramdoc could not evaluate: why, and where (`file:line`).
    Unknown(String),
    /// Assigned by a statement reported as an error.
    Failed,
}

/// The globals configs are run in.
pub(crate) type Env = HashMap<String, Binding>;

/// What the evaluator knows of the machine: the GPU for `torch.cuda`.
pub(crate) struct Host<'a> {
    /// The catalog that says whether a card supports bf16.
    pub(crate) catalog: &'a GpuCatalog,
    /// `--gpu`, which takes precedence over a `gpu` the config sets.
    pub(crate) gpu: Option<&'a str>,
    /// Set when `torch.cuda.is_bf16_supported()` was answered without knowing the GPU.
    pub(crate) assumed_bf16: Cell<bool>,
    /// The work done so far.
    pub(crate) work: Budget,
}

impl<'a> Host<'a> {
    /// A host deciding bf16 from `catalog` and `gpu` (`--gpu`), with no work done yet.
    pub(crate) fn new(catalog: &'a GpuCatalog, gpu: Option<&'a str>) -> Self {
        Host {
            catalog,
            gpu,
            assumed_bf16: Cell::new(false),
            work: Budget::default(),
        }
    }
}

/// An evaluation error at a position; `python` is true when Python itself would raise.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EvalError {
    pub(crate) msg: String,
    pub(crate) line: usize,
    pub(crate) col: usize,
    pub(crate) python: bool,
    /// It follows from an error already reported.
    pub(crate) cascade: bool,
    /// When it is the use of a name vramdoc could not evaluate: that name's reason, which a
    /// statement failing because of it passes on as it is (not nested one level per line).
    pub(crate) because: Option<String>,
}

impl EvalError {
    /// `err` at a position.
    pub(crate) fn at(err: OpError, line: usize, col: usize) -> Self {
        EvalError {
            msg: err.msg,
            line,
            col,
            python: err.python,
            cascade: err.cascade,
            because: None,
        }
    }
}

type EResult = Result<PyValue, EvalError>;

/// Python builtins that exist but are not evaluated (a call is "cannot evaluate", not a NameError).
const OTHER_BUILTINS: &[&str] = &[
    "print",
    "open",
    "exec",
    "eval",
    "range",
    "sum",
    "sorted",
    "list",
    "tuple",
    "dict",
    "set",
    "isinstance",
    "getattr",
    "setattr",
    "hasattr",
    "globals",
    "locals",
    "type",
    "input",
    "repr",
    "format",
    "enumerate",
    "zip",
    "map",
    "filter",
    "any",
    "all",
    "divmod",
    "pow",
    "hex",
    "oct",
    "bin",
    "ord",
    "chr",
    "id",
    "hash",
    "vars",
    "iter",
    "next",
    "reversed",
    "__import__",
];

/// Modules whose attributes are modules too (`os.path`, `torch.cuda`).
const SUBMODULES: &[&str] = &["os.path", "torch.cuda"];

/// Evaluates `e` in `env`, within the run's work budget.
pub(crate) fn eval(e: &PyExpr, env: &Env, host: &Host<'_>) -> EResult {
    host.work
        .check()
        .map_err(|err| EvalError::at(err, e.line, e.col))?;
    let v = eval_expr(e, env, host)?;
    host.work.charge(&v);
    Ok(v)
}

fn eval_expr(e: &PyExpr, env: &Env, host: &Host<'_>) -> EResult {
    let at = |err: OpError| EvalError::at(err, e.line, e.col);
    match &e.kind {
        PyExprKind::Const(v) => Ok(v.clone()),
        PyExprKind::BigInt(text) => Err(at(OpError::unsupported(format!(
            "integer {text} is beyond 64 bits"
        )))),
        PyExprKind::Opaque(why) => Err(at(OpError::unsupported(why.clone()))),
        PyExprKind::Name(n) => match env.get(n) {
            Some(Binding::Unknown(why)) => Err(EvalError {
                because: Some(why.clone()),
                ..at(OpError::unsupported(format!(
                    "`{n}` could not be evaluated ({why})"
                )))
            }),
            _ => lookup(n, env).map_err(at),
        },
        PyExprKind::Unary(op, x) => value::unary(*op, &eval(x, env, host)?).map_err(at),
        PyExprKind::Not(x) => Ok(PyValue::Bool(!eval(x, env, host)?.truthy())),
        PyExprKind::Bin(first, rest) => {
            let mut acc = eval(first, env, host)?;
            for (op, x) in rest {
                acc = value::binop(*op, &acc, &eval(x, env, host)?).map_err(at)?;
            }
            Ok(acc)
        }
        PyExprKind::Logic(and, items) => {
            // The first operand that decides (falsy for `and`, truthy for `or`), else the last.
            let mut v = PyValue::None;
            for x in items {
                v = eval(x, env, host)?;
                if v.truthy() != *and {
                    break;
                }
            }
            Ok(v)
        }
        PyExprKind::Compare(first, rest) => compare_chain(first, rest, env, host),
        PyExprKind::IfElse(cond, a, b) => {
            if eval(cond, env, host)?.truthy() {
                eval(a, env, host)
            } else {
                eval(b, env, host)
            }
        }
        PyExprKind::Postfix(base, trailers) => postfix(e, base, trailers, env, host),
        PyExprKind::Tuple(items) => Ok(PyValue::Tuple(eval_all(items, env, host)?)),
        PyExprKind::List(items) => Ok(PyValue::List(eval_all(items, env, host)?)),
    }
}

/// The values of a tuple or list display or of call arguments, measured as they come so that
/// a hostile display holds no more than [`super::size`] allows.
fn eval_all(items: &[PyExpr], env: &Env, host: &Host<'_>) -> Result<Vec<PyValue>, EvalError> {
    let mut size = ContainerSize::default();
    let mut out = Vec::with_capacity(items.len());
    for x in items {
        let v = eval(x, env, host)?;
        size.add(ContainerSize::of(&v));
        size.check()
            .map_err(|err| EvalError::at(err, x.line, x.col))?;
        out.push(v);
    }
    Ok(out)
}

fn lookup(name: &str, env: &Env) -> Result<PyValue, OpError> {
    match env.get(name) {
        Some(Binding::Known(v)) => Ok(v.clone()),
        Some(Binding::Unknown(why)) => Err(OpError::unsupported(format!(
            "`{name}` could not be evaluated ({why})"
        ))),
        Some(Binding::Failed) => Err(OpError::cascade(name)),
        None if value_builtin(name) || OTHER_BUILTINS.contains(&name) => Err(OpError::unsupported(
            format!("the builtin `{name}` is only evaluated when called"),
        )),
        None => Err(OpError::python(format!(
            "NameError: name '{name}' is not defined"
        ))),
    }
}

fn value_builtin(name: &str) -> bool {
    matches!(
        name,
        "int" | "float" | "bool" | "str" | "min" | "max" | "abs" | "round" | "len"
    )
}

fn compare_chain(first: &PyExpr, rest: &[(CmpOp, PyExpr)], env: &Env, host: &Host<'_>) -> EResult {
    let mut left = eval(first, env, host)?;
    for (op, e) in rest {
        let right = eval(e, env, host)?;
        let ok = compare(*op, &left, &right).map_err(|err| EvalError::at(err, e.line, e.col))?;
        if !ok {
            return Ok(PyValue::Bool(false));
        }
        left = right;
    }
    Ok(PyValue::Bool(true))
}

fn compare(op: CmpOp, a: &PyValue, b: &PyValue) -> Result<bool, OpError> {
    use std::cmp::Ordering::*;
    Ok(match op {
        CmpOp::Eq => value::equal(a, b),
        CmpOp::Ne => !value::equal(a, b),
        CmpOp::Is => same(a, b),
        CmpOp::IsNot => !same(a, b),
        CmpOp::In => value::contains(b, a)?,
        CmpOp::NotIn => !value::contains(b, a)?,
        CmpOp::Lt | CmpOp::Le | CmpOp::Gt | CmpOp::Ge => {
            if [a, b]
                .iter()
                .any(|v| matches!(v, PyValue::Float(f) if f.is_nan()))
            {
                return Ok(false);
            }
            let ord = value::compare(a, b)?;
            match op {
                CmpOp::Lt => ord == Less,
                CmpOp::Le => ord != Greater,
                CmpOp::Gt => ord == Greater,
                _ => ord != Less,
            }
        }
    })
}

/// `is`: identity, which for the values a config compares this way (None, True, False) is
/// equality of the same type.
fn same(a: &PyValue, b: &PyValue) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b) && a == b
}

fn subscript(base: &PyValue, index: &PyValue) -> Result<PyValue, OpError> {
    let i = match index {
        PyValue::Int(i) => *i,
        PyValue::Bool(b) => i64::from(*b),
        other => {
            return Err(OpError::python(format!(
                "TypeError: indices must be integers, not {}",
                other.type_name()
            )))
        }
    };
    let pick = |len: usize| -> Result<usize, OpError> {
        let len = i64::try_from(len).unwrap_or(i64::MAX);
        let k = if i < 0 { i.checked_add(len) } else { Some(i) };
        k.filter(|k| (0..len).contains(k))
            .and_then(|k| usize::try_from(k).ok())
            .ok_or_else(|| OpError::python("IndexError: index out of range"))
    };
    match base {
        PyValue::Tuple(v) | PyValue::List(v) => Ok(v[pick(v.len())?].clone()),
        PyValue::Str(s) => {
            let chars: Vec<char> = s.chars().collect();
            Ok(PyValue::Str(chars[pick(chars.len())?].to_string()))
        }
        other => Err(OpError::python(format!(
            "TypeError: '{}' object is not subscriptable",
            other.type_name()
        ))),
    }
}

/// A primary and its trailers, left to right in one loop (`e` is the whole chain, where errors
/// point): a builtin or library call is recognized from the name or module path before it.
fn postfix(e: &PyExpr, base: &PyExpr, trailers: &[Trailer], env: &Env, host: &Host<'_>) -> EResult {
    let at = |err: OpError| EvalError::at(err, e.line, e.col);
    let mut rest = trailers.iter().peekable();
    let mut cur = match (&base.kind, trailers.first()) {
        (PyExprKind::Name(n), Some(Trailer::Call(args, kwargs)))
            if !env.contains_key(n) && value_builtin(n) =>
        {
            rest.next();
            if !kwargs.is_empty() {
                return Err(at(OpError::unsupported(format!(
                    "keyword arguments to `{n}()` are not evaluated"
                ))));
            }
            let args = eval_all(args, env, host)?;
            super::builtins::call(n, &args).map_err(at)?
        }
        (PyExprKind::Name(n), Some(Trailer::Call(..)))
            if !env.contains_key(n) && OTHER_BUILTINS.contains(&n.as_str()) =>
        {
            return Err(at(OpError::unsupported(format!(
                "`{n}(...)` is not evaluated"
            ))))
        }
        _ => eval(base, env, host)?,
    };
    while let Some(trailer) = rest.next() {
        cur = match trailer {
            Trailer::Attr(name) => match (cur, rest.peek()) {
                (PyValue::Module(m), Some(Trailer::Call(args, _))) => {
                    rest.next();
                    let args = eval_all(args, env, host)?;
                    library(&format!("{m}.{name}"), &args, env, host).map_err(at)?
                }
                (PyValue::Module(m), _) if SUBMODULES.contains(&format!("{m}.{name}").as_str()) => {
                    PyValue::Module(format!("{m}.{name}"))
                }
                (PyValue::Module(m), _) => {
                    return Err(at(OpError::unsupported(format!(
                        "`{m}.{name}` is not evaluated"
                    ))))
                }
                (other, Some(Trailer::Call(..))) => {
                    return Err(at(OpError::unsupported(format!(
                        "methods of {} values are not evaluated",
                        other.type_name()
                    ))))
                }
                (other, _) => {
                    return Err(at(OpError::unsupported(format!(
                        "attributes of {} values are not evaluated",
                        other.type_name()
                    ))))
                }
            },
            Trailer::Call(..) => {
                return Err(at(OpError::python(format!(
                    "TypeError: '{}' object is not callable",
                    cur.type_name()
                ))))
            }
            Trailer::Index(index) => subscript(&cur, &eval(index, env, host)?).map_err(at)?,
        };
    }
    Ok(cur)
}

/// The library functions configs call.
fn library(path: &str, args: &[PyValue], env: &Env, host: &Host<'_>) -> Result<PyValue, OpError> {
    let strs = || -> Result<Vec<&str>, OpError> {
        args.iter()
            .map(|a| match a {
                PyValue::Str(s) => Ok(s.as_str()),
                other => Err(OpError::python(format!(
                    "TypeError: {path}() expects str, not {}",
                    other.type_name()
                ))),
            })
            .collect()
    };
    match (path, args.len()) {
        ("torch.cuda.is_available", 0) => Ok(PyValue::Bool(true)),
        ("torch.cuda.is_bf16_supported", 0) => Ok(PyValue::Bool(bf16(env, host))),
        ("os.path.exists" | "os.path.isfile" | "os.path.isdir", 1) => {
            let p = Path::new(strs()?[0]);
            Ok(PyValue::Bool(match path {
                "os.path.exists" => p.exists(),
                "os.path.isfile" => p.is_file(),
                _ => p.is_dir(),
            }))
        }
        ("os.path.join", 1..) => Ok(PyValue::Str(path_join(&strs()?))),
        _ => Err(OpError::unsupported(format!("`{path}()` is not evaluated"))),
    }
}

/// Whether the GPU (`--gpu`, else the config's `gpu`) supports bf16; `true` when it is not
/// known, as most cards nanoGPT is trained on do (noted in the report).
fn bf16(env: &Env, host: &Host<'_>) -> bool {
    let from_env = match env.get("gpu") {
        Some(Binding::Known(PyValue::Str(s))) => Some(s.as_str()),
        _ => None,
    };
    let card = host
        .gpu
        .or(from_env)
        .and_then(|id| host.catalog.get(id.trim()));
    match card {
        Some(gpu) => gpu.bf16,
        None => {
            host.assumed_bf16.set(true);
            true
        }
    }
}

/// `os.path.join` on POSIX: an absolute part restarts the path.
fn path_join(parts: &[&str]) -> String {
    let mut out = String::new();
    for p in parts {
        if p.starts_with('/') || out.is_empty() {
            out = (*p).to_owned();
        } else if out.ends_with('/') {
            out.push_str(p);
        } else {
            out.push('/');
            out.push_str(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::pyconfig::parser::Parser;

    fn ev(src: &str, gpu: Option<&str>) -> EResult {
        let catalog = GpuCatalog::builtin();
        let host = Host::new(&catalog, gpu);
        let mut env = Env::new();
        env.insert("n_head".into(), Binding::Known(PyValue::Int(6)));
        env.insert(
            "torch".into(),
            Binding::Known(PyValue::Module("torch".into())),
        );
        env.insert("os".into(), Binding::Known(PyValue::Module("os".into())));
        env.insert("t".into(), Binding::Unknown("line 3".into()));
        let mut p = Parser::new(src).expect("parse");
        let e = p.expr_list().expect("expr");
        eval(&e, &env, &host)
    }

    #[test]
    fn names_operators_and_builtins() {
        assert_eq!(ev("n_head * 64", None), Ok(PyValue::Int(384)));
        assert_eq!(ev("2**4 // 3 % 4", None), Ok(PyValue::Int(1)));
        assert_eq!(
            ev("-7 // 2, 7 / 2", None),
            Ok(PyValue::Tuple(vec![PyValue::Int(-4), PyValue::Float(3.5)]))
        );
        assert_eq!(
            ev("int(3.9) + int('12') + int(True)", None),
            Ok(PyValue::Int(16))
        );
        assert_eq!(
            ev(
                "min(4, 2, 8), max([1, 5]), abs(-3), round(2.5), len('abc')",
                None
            ),
            Ok(PyValue::Tuple(vec![
                PyValue::Int(2),
                PyValue::Int(5),
                PyValue::Int(3),
                PyValue::Int(2),
                PyValue::Int(3)
            ]))
        );
        assert_eq!(
            ev("str(1e-3) + str(True)", None),
            Ok(PyValue::Str("0.001True".into()))
        );
        assert_eq!(
            ev("1 < n_head <= 6 and not False", None),
            Ok(PyValue::Bool(true))
        );
        assert_eq!(
            ev("'a' if n_head > 8 else 'b'", None),
            Ok(PyValue::Str("b".into()))
        );
        assert_eq!(
            ev("None is None, 3 in (1, 3), 'x' not in 'abc'", None),
            Ok(PyValue::Tuple(vec![PyValue::Bool(true); 3]))
        );
        assert_eq!(ev("(1, 2)[-1]", None), Ok(PyValue::Int(2)));
    }

    #[test]
    fn torch_follows_the_gpu_and_os_path_reads_the_disk() {
        let dtype = "'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'";
        assert_eq!(ev(dtype, Some("t4")), Ok(PyValue::Str("float16".into())));
        assert_eq!(
            ev(dtype, Some("rtx-4070")),
            Ok(PyValue::Str("bfloat16".into()))
        );
        assert_eq!(ev(dtype, None), Ok(PyValue::Str("bfloat16".into())));
        assert_eq!(
            ev("os.path.exists('/no/such/path/x')", None),
            Ok(PyValue::Bool(false))
        );
        assert_eq!(
            ev("os.path.join('out', 'ckpt.pt')", None),
            Ok(PyValue::Str("out/ckpt.pt".into()))
        );
        assert_eq!(
            ev("os.path.join('a', '/b', 'c')", None),
            Ok(PyValue::Str("/b/c".into()))
        );
    }

    #[test]
    fn errors_say_whether_python_would_fail() {
        let e = ev("n_head + undefined", None).unwrap_err();
        assert!(
            e.python && e.msg.contains("NameError") && e.col == 10,
            "{e:?}"
        );
        let e = ev("(-9223372036854775807 - 1) // -1", None).unwrap_err();
        assert!(!e.python && e.msg.contains("64 bits"), "{e:?}");
        assert!(!ev("t + 1", None).unwrap_err().python);
        assert!(!ev("print(1)", None).unwrap_err().python);
        assert!(!ev("os.getcwd()", None).unwrap_err().python);
        assert!(ev("1 / 0", None).unwrap_err().python);
        assert!(ev("int(float('inf'))", None).unwrap_err().python);
        assert!(!ev("f'{n_head}'", None).unwrap_err().python);
    }
}
