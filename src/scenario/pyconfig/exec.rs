//! Runs a file's statements against the session's globals, as nanoGPT's `exec` would, as far
//! as they can be decided; what cannot be is skipped with a note, or is an error when it sets a
//! configuration key.

use std::path::Path;
use std::sync::Arc;

use super::ast::{AssignTarget, PyExpr, PyExprKind, Stmt, StmtKind, Trailer};
use super::eval::{eval, Binding, EvalError};
use super::parser::Parser;
use super::value::{self, PyValue};
use super::{is_key, read_after_config, Session, ValueOrigin};
use crate::diagnostics::Diagnostic;

/// What to do after a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// Go on.
    Next,
    /// train.py's `exec(open('configurator.py').read())`: its configuration ends here.
    Stop,
}

type XResult = Result<Flow, Box<Diagnostic>>;

/// Runs `text` (the file at `path`) in `session`; errors go to `session.errors`. A statement
/// with an error leaves its names unset (later uses of them are not reported again); a syntax
/// error ends the file, as in Python.
pub(crate) fn run_file(session: &mut Session<'_>, path: &Path, text: &str) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let source: Arc<str> = Arc::from(universal_newlines(text).as_ref());
    let mut ex = Exec {
        s: session,
        path,
        lines: line_starts(&source),
        source: Arc::clone(&source),
    };
    let mut parser = match Parser::new(&source) {
        Ok(p) => p,
        Err(e) => return ex.s.errors.push(*ex.error(&e.msg, e.line, e.col)),
    };
    loop {
        let stmts = match parser.next_line() {
            Ok(Some(stmts)) => stmts,
            Ok(None) => return,
            Err(e) => return ex.s.errors.push(*ex.error(&e.msg, e.line, e.col)),
        };
        if ex.block(&stmts) == Flow::Stop {
            return;
        }
    }
}

struct Exec<'e, 's> {
    s: &'e mut Session<'s>,
    path: &'e Path,
    source: Arc<str>,
    /// Where each line of `source` starts, so quoting a line costs its length, not the file's.
    lines: Vec<usize>,
}

/// The text as Python's `open().read()` gives it to `exec`: `\r\n` and a lone `\r` (old Mac
/// files) end lines as `\n` does.
pub(super) fn universal_newlines(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\r') {
        text.replace("\r\n", "\n").replace('\r', "\n").into()
    } else {
        text.into()
    }
}

/// The byte offset where each line starts.
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

impl Exec<'_, '_> {
    fn error(&self, msg: &str, line: usize, col: usize) -> Box<Diagnostic> {
        Box::new(
            Diagnostic::error(msg.to_owned())
                .in_file(self.path)
                .at(line, col)
                .with_source(Arc::clone(&self.source)),
        )
    }

    /// The statement's line as written, shortened.
    fn quote(&self, line: usize) -> String {
        let start = self.lines.get(line.saturating_sub(1)).copied();
        let end = self.lines.get(line).copied().unwrap_or(self.source.len());
        let text = start
            .and_then(|s| self.source.get(s..end))
            .unwrap_or("")
            .trim();
        if text.chars().count() > 72 {
            format!("{}…", text.chars().take(71).collect::<String>())
        } else {
            text.to_owned()
        }
    }

    fn note(&mut self, line: usize, why: &str) {
        let note = format!(
            "{}:{line}: skipped `{}`: {why}",
            self.path.display(),
            self.quote(line)
        );
        self.s.notes.push(note);
    }

    /// Runs statements; one with an error is recorded and its names are marked failed.
    fn block(&mut self, stmts: &[Stmt]) -> Flow {
        for stmt in stmts {
            match self.stmt(stmt) {
                Ok(Flow::Stop) => return Flow::Stop,
                Ok(Flow::Next) => {}
                Err(d) => {
                    self.s.errors.push(*d);
                    self.fail(&stmt.kind);
                }
            }
            if self.s.host.assumed_bf16.replace(false) && !self.s.noted_bf16 {
                self.s.noted_bf16 = true;
                self.s.notes.push(format!(
                    "{}:{}: torch.cuda.is_bf16_supported() taken as True (no known GPU); pass --gpu ID to decide it for a card",
                    self.path.display(),
                    stmt.line
                ));
            }
        }
        Flow::Next
    }

    /// Marks the names a statement binds as failed, so their later uses are not reported again.
    fn fail(&mut self, kind: &StmtKind) {
        let mut names = Vec::new();
        kind.bound_names(&mut names);
        for n in names {
            self.s.env.insert(n, Binding::Failed);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) -> XResult {
        match &stmt.kind {
            StmtKind::Assign(targets, value) => {
                let v = eval(value, &self.s.env, &self.s.host);
                self.assign(stmt, targets, v)?;
            }
            StmtKind::AugAssign(target, op, value) => {
                let v = match target {
                    AssignTarget::Name(n, line, col) => {
                        let current = PyExpr {
                            kind: PyExprKind::Name(n.clone()),
                            line: *line,
                            col: *col,
                        };
                        eval(&current, &self.s.env, &self.s.host).and_then(|a| {
                            let b = eval(value, &self.s.env, &self.s.host)?;
                            value::binop(*op, &a, &b)
                                .map_err(|e| EvalError::at(e, value.line, value.col))
                        })
                    }
                    _ => eval(value, &self.s.env, &self.s.host),
                };
                self.assign(stmt, std::slice::from_ref(target), v)?;
            }
            StmtKind::AnnAssign(target, Some(value)) => {
                let v = eval(value, &self.s.env, &self.s.host);
                self.assign(stmt, std::slice::from_ref(target), v)?;
            }
            StmtKind::AnnAssign(_, None) | StmtKind::Pass => {}
            StmtKind::Expr(e) => return Ok(self.expr_stmt(stmt, e)),
            StmtKind::If(branches, orelse) => return self.if_stmt(stmt, branches, orelse),
            StmtKind::Import(names) => {
                for (bound, module) in names {
                    self.s.env.insert(
                        bound.clone(),
                        Binding::Known(PyValue::Module(module.clone())),
                    );
                }
            }
            StmtKind::Del(names) => {
                for n in names {
                    if read_after_config(n) {
                        let msg = format!(
                            "`{}` deletes `{n}`, which is read after the configuration (by \
                             train.py, or by vramdoc's estimate): nanoGPT would stop with \
                             NameError: name '{n}' is not defined",
                            self.quote(stmt.line)
                        );
                        let help = format!(
                            "remove `{n}` from the `del`; to change it, assign the value you mean"
                        );
                        return Err(Box::new(
                            self.error(&msg, stmt.line, stmt.col).with_help(help),
                        ));
                    }
                    if self.s.env.remove(n).is_none() {
                        let msg = format!("NameError: name '{n}' is not defined");
                        return Err(self.error(&msg, stmt.line, stmt.col));
                    }
                }
            }
            StmtKind::Skip { why, binds } => {
                self.undecided(stmt, binds, why, None, (stmt.line, stmt.col))?
            }
        }
        Ok(Flow::Next)
    }

    /// An expression statement: docstrings are silent, train.py's configurator line stops the
    /// file, anything else (`print(...)`) is skipped with a note.
    fn expr_stmt(&mut self, stmt: &Stmt, e: &PyExpr) -> Flow {
        match &e.kind {
            PyExprKind::Const(_) => Flow::Next,
            PyExprKind::Postfix(f, trailers)
                if matches!(&f.kind, PyExprKind::Name(n) if n == "exec")
                    && matches!(&trailers[..], [Trailer::Call(args, _)] if args.iter().any(mentions_configurator)) =>
            {
                let note = format!(
                    "{}:{}: read up to `{}`, where train.py applies the command line: the rest of \
                     the file is not read",
                    self.path.display(),
                    stmt.line,
                    self.quote(stmt.line)
                );
                self.s.notes.push(note);
                Flow::Stop
            }
            _ => {
                self.note(stmt.line, "expression statements are not evaluated");
                Flow::Next
            }
        }
    }

    fn if_stmt(
        &mut self,
        stmt: &Stmt,
        branches: &[(PyExpr, Vec<Stmt>)],
        orelse: &[Stmt],
    ) -> XResult {
        for (k, (cond, body)) in branches.iter().enumerate() {
            match eval(cond, &self.s.env, &self.s.host) {
                Ok(v) if v.truthy() => return Ok(self.block(body)),
                Ok(_) => {}
                Err(e) if e.cascade => {
                    self.fail(&stmt.kind);
                    return Ok(Flow::Next);
                }
                Err(e) if e.python => {
                    let msg = format!("`{}`: {}", self.quote(cond.line), e.msg);
                    return Err(self.error(&msg, e.line, e.col));
                }
                Err(e) => {
                    let mut names = Vec::new();
                    for s in branches[k..].iter().flat_map(|(_, b)| b).chain(orelse) {
                        s.kind.bound_names(&mut names);
                    }
                    let why = format!("cannot decide the condition: {}", e.msg);
                    self.undecided(stmt, &names, &why, e.because.as_deref(), (e.line, e.col))?;
                    return Ok(Flow::Next);
                }
            }
        }
        Ok(self.block(orelse))
    }

    /// A statement that is not run: an error if it may set a key, else its names become
    /// unknown and a note says so.
    fn undecided(
        &mut self,
        stmt: &Stmt,
        names: &[String],
        why: &str,
        because: Option<&str>,
        (line, col): (usize, usize),
    ) -> Result<(), Box<Diagnostic>> {
        if let Some(key) = names.iter().find(|n| is_key(n)) {
            let msg = format!(
                "`{}` sets `{key}` but vramdoc cannot evaluate it: {why}",
                self.quote(stmt.line)
            );
            return Err(Box::new(self.error(&msg, line, col).with_help(help(key))));
        }
        // A name unknown because of another keeps the first reason, so the text stays short
        // however long the chain of lines that pass it on.
        let unknown = because.map_or_else(|| format!("line {}: {why}", stmt.line), str::to_owned);
        for n in names {
            self.s
                .env
                .insert(n.clone(), Binding::Unknown(unknown.clone()));
        }
        self.note(stmt.line, why);
        Ok(())
    }

    fn assign(
        &mut self,
        stmt: &Stmt,
        targets: &[AssignTarget],
        v: Result<PyValue, EvalError>,
    ) -> Result<(), Box<Diagnostic>> {
        let v = match v {
            Ok(v) => v,
            Err(e) if e.cascade => {
                self.fail(&StmtKind::Assign(targets.to_vec(), placeholder()));
                return Ok(());
            }
            Err(e) if e.python => {
                let msg = format!("`{}`: {}", self.quote(stmt.line), e.msg);
                return Err(self.error(&msg, e.line, e.col));
            }
            Err(e) => {
                let mut names = Vec::new();
                StmtKind::Assign(targets.to_vec(), placeholder()).bound_names(&mut names);
                return self.undecided(stmt, &names, &e.msg, e.because.as_deref(), (e.line, e.col));
            }
        };
        for t in targets {
            self.bind(stmt, t, v.clone())?;
        }
        Ok(())
    }

    fn bind(
        &mut self,
        stmt: &Stmt,
        target: &AssignTarget,
        v: PyValue,
    ) -> Result<(), Box<Diagnostic>> {
        match target {
            AssignTarget::Name(n, line, col) => {
                self.s.origins.insert(
                    n.clone(),
                    ValueOrigin::File {
                        path: self.path.to_path_buf(),
                        line: *line,
                        col: *col,
                        source: Arc::clone(&self.source),
                    },
                );
                if let (PyValue::Str(text), true) = (&v, self.s.bool_keys.contains(&n.as_str())) {
                    return Err(self.str_for_bool(stmt, n, text, *line, *col));
                }
                self.s.mark_assigned(n);
                self.s.env.insert(n.clone(), Binding::Known(v));
            }
            AssignTarget::Tuple(items) => {
                let values = match v {
                    PyValue::Tuple(vs) | PyValue::List(vs) => vs,
                    PyValue::Str(s) => s.chars().map(|c| PyValue::Str(c.to_string())).collect(),
                    other => {
                        let msg = format!(
                            "TypeError: cannot unpack non-iterable {} object",
                            other.type_name()
                        );
                        return Err(self.error(&msg, stmt.line, stmt.col));
                    }
                };
                if values.len() != items.len() {
                    let msg = format!(
                        "ValueError: {} values to unpack into {} names",
                        values.len(),
                        items.len()
                    );
                    return Err(self.error(&msg, stmt.line, stmt.col));
                }
                for (t, v) in items.iter().zip(values) {
                    self.bind(stmt, t, v)?;
                }
            }
            AssignTarget::Other(what) => {
                self.note(stmt.line, &format!("assignment to {what} is not evaluated"));
            }
        }
        Ok(())
    }
}

impl Exec<'_, '_> {
    /// The error for a string assigned to a bool key: Python takes any non-empty string for
    /// true, so `bias = 'False'` would be a true `bias` in nanoGPT (and a str where it wants a
    /// bool), not the False the text names.
    fn str_for_bool(
        &self,
        stmt: &Stmt,
        key: &str,
        text: &str,
        line: usize,
        col: usize,
    ) -> Box<Diagnostic> {
        let truth = if text.is_empty() {
            "false (it is empty)"
        } else {
            "true (every non-empty string is)"
        };
        let word = if text.trim().eq_ignore_ascii_case("false") || text.trim() == "0" {
            "False"
        } else {
            "True"
        };
        let msg = format!(
            "`{}` sets the bool key `{key}` to the string {}, which Python takes for {truth}",
            self.quote(stmt.line),
            PyValue::Str(text.to_owned()).repr()
        );
        Box::new(self.error(&msg, line, col).with_help(format!(
            "write `{key} = {word}` (True or False, without quotes)"
        )))
    }
}

/// An expression standing for an assignment's value when only its targets matter.
fn placeholder() -> PyExpr {
    PyExpr {
        kind: PyExprKind::Const(PyValue::None),
        line: 0,
        col: 0,
    }
}

/// What to do about a key vramdoc could not evaluate.
fn help(key: &str) -> String {
    format!(
        "vramdoc evaluates literals, names bound earlier, arithmetic, comparisons, `x if c else y`, \
         int/float/bool/str/min/max/abs/round/len, torch.cuda.is_available/is_bf16_supported and \
         os.path.exists/join; write `{key}` that way or pass --{key}=VALUE"
    )
}

/// Whether an expression holds a string mentioning `configurator` (train.py's
/// `exec(open('configurator.py').read())`).
fn mentions_configurator(e: &PyExpr) -> bool {
    match &e.kind {
        PyExprKind::Const(PyValue::Str(s)) => s.contains("configurator"),
        PyExprKind::Postfix(base, trailers) => {
            mentions_configurator(base)
                || trailers.iter().any(|t| match t {
                    Trailer::Call(args, _) => args.iter().any(mentions_configurator),
                    _ => false,
                })
        }
        _ => false,
    }
}
