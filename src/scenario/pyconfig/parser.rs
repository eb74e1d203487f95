//! Statements and expressions from tokens, one top-level statement at a time.
//!
//! A simple statement that uses a form outside the language (a lambda, a comprehension, a dict)
//! becomes a [`StmtKind::Skip`] naming the names it would assign; compound statements other than
//! `if` (`def`, `for`, `with`, `try`, ...) are parsed only to learn what they assign. Tokenizing
//! errors and missing blocks are fatal, as in Python.

use super::ast::{AssignTarget, PyExpr, PyExprKind, Stmt, StmtKind, Trailer};
use super::lexer::{Lexer, Tok, Token};
use super::value::BinOp;

/// The deepest nesting of expressions or blocks accepted (hostile input cannot overflow the stack).
pub(super) const MAX_DEPTH: usize = 40;

/// The most operators (or calls, subscripts, attributes) one left-associative chain may hold:
/// chains are flat, so this bounds no stack; it is above what Python itself compiles (most
/// versions refuse such chains beyond about 3,000, 3.13 beyond about 10,000).
pub(super) const MAX_CHAIN: usize = 10_000;

/// A parse error at a position; `fatal` ones end the file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SyntaxError {
    pub(crate) msg: String,
    pub(crate) line: usize,
    pub(crate) col: usize,
    pub(crate) fatal: bool,
}

impl SyntaxError {
    /// Whether this is one of the parser's own limits ([`MAX_CHAIN`], [`MAX_DEPTH`]) rather
    /// than text outside the language.
    pub(crate) fn is_limit(&self) -> bool {
        self.msg.starts_with(LIMIT_CHAIN) || self.msg.starts_with(LIMIT_DEPTH)
    }
}

/// How the errors for [`MAX_CHAIN`] and [`MAX_DEPTH`] begin.
pub(super) const LIMIT_CHAIN: &str = "chain too long:";
pub(super) const LIMIT_DEPTH: &str = "expression nested too deeply";

pub(super) type PResult<T> = Result<T, SyntaxError>;

/// A call's positional and keyword arguments.
pub(super) type CallArgs = (Vec<PyExpr>, Vec<(String, PyExpr)>);

/// Keywords that start a compound statement vramdoc skips.
const SKIPPED_COMPOUND: &[&str] = &["def", "class", "for", "while", "with", "try", "async"];

/// The parser over one file.
pub(crate) struct Parser {
    lx: Lexer,
    pub(super) tok: Token,
    ahead: Option<Token>,
    pub(super) depth: usize,
    /// Tokens of the current logical line, for guessing the targets of a skipped line.
    line_toks: Vec<Tok>,
}

impl Parser {
    /// A parser over `text`.
    pub(crate) fn new(text: &str) -> PResult<Self> {
        let mut lx = Lexer::new(text);
        let tok = lex(&mut lx)?;
        Ok(Parser {
            lx,
            tok,
            ahead: None,
            depth: 0,
            line_toks: Vec::new(),
        })
    }

    pub(super) fn advance(&mut self) -> PResult<Token> {
        let next = match self.ahead.take() {
            Some(t) => t,
            None => lex(&mut self.lx)?,
        };
        self.line_toks.push(self.tok.tok.clone());
        Ok(std::mem::replace(&mut self.tok, next))
    }

    pub(super) fn peek2(&mut self) -> PResult<&Tok> {
        if self.ahead.is_none() {
            self.ahead = Some(lex(&mut self.lx)?);
        }
        Ok(&self.ahead.as_ref().map_or(&self.tok, |t| t).tok)
    }

    pub(super) fn is_op(&self, op: &str) -> bool {
        matches!(&self.tok.tok, Tok::Op(o) if *o == op)
    }

    pub(super) fn is_kw(&self, kw: &str) -> bool {
        matches!(&self.tok.tok, Tok::Name(n) if n == kw)
    }

    pub(super) fn eat_op(&mut self, op: &str) -> PResult<bool> {
        let hit = self.is_op(op);
        if hit {
            self.advance()?;
        }
        Ok(hit)
    }

    pub(super) fn err<T>(&self, msg: impl Into<String>) -> PResult<T> {
        Err(SyntaxError {
            msg: msg.into(),
            line: self.tok.line,
            col: self.tok.col,
            fatal: false,
        })
    }

    fn fatal<T>(&self, msg: impl Into<String>) -> PResult<T> {
        Err(SyntaxError {
            fatal: true,
            ..self.err::<()>(msg).unwrap_err()
        })
    }

    pub(super) fn expect_op(&mut self, op: &str) -> PResult<()> {
        if self.eat_op(op)? {
            Ok(())
        } else {
            self.err(format!("expected `{op}`"))
        }
    }

    /// The statements of the next logical line (or compound statement); `None` at the end.
    pub(crate) fn next_line(&mut self) -> PResult<Option<Vec<Stmt>>> {
        while matches!(self.tok.tok, Tok::Newline) {
            self.advance()?;
        }
        match &self.tok.tok {
            Tok::Eof => Ok(None),
            Tok::Indent => self.fatal("IndentationError: unexpected indent"),
            Tok::Dedent => {
                self.advance()?;
                self.next_line()
            }
            _ => self.line().map(Some),
        }
    }

    fn line(&mut self) -> PResult<Vec<Stmt>> {
        let (line, col) = (self.tok.line, self.tok.col);
        let at = |kind| Stmt { kind, line, col };
        if self.is_kw("if") {
            return Ok(vec![at(self.if_stmt()?)]);
        }
        if let Tok::Name(kw) = &self.tok.tok {
            if SKIPPED_COMPOUND.contains(&kw.as_str()) {
                let kw = kw.clone();
                return Ok(vec![at(self.compound(&kw)?)]);
            }
        }
        if self.is_op("@") {
            self.skip_line()?;
            return Ok(vec![at(skip("a decorator", Vec::new()))]);
        }
        self.simple_line()
    }

    /// Simple statements separated by `;`, up to the end of the line.
    fn simple_line(&mut self) -> PResult<Vec<Stmt>> {
        let mut out = Vec::new();
        loop {
            let (line, col) = (self.tok.line, self.tok.col);
            self.line_toks.clear();
            let kind = match self.simple() {
                Ok(k) => k,
                Err(e) if e.fatal => return Err(e),
                Err(e) => {
                    let binds = guess_targets(&self.line_toks);
                    self.skip_line()?;
                    out.push(Stmt {
                        kind: skip(&e.msg, binds),
                        line,
                        col,
                    });
                    return Ok(out);
                }
            };
            out.push(Stmt { kind, line, col });
            if self.eat_op(";")? && !matches!(self.tok.tok, Tok::Newline | Tok::Eof) {
                continue;
            }
            return match self.tok.tok {
                Tok::Newline => {
                    self.advance()?;
                    Ok(out)
                }
                Tok::Eof | Tok::Dedent => Ok(out),
                _ => {
                    let e = self
                        .err::<()>("expected the end of the statement")
                        .unwrap_err();
                    let binds = guess_targets(&self.line_toks);
                    self.skip_line()?;
                    out.pop();
                    out.push(Stmt {
                        kind: skip(&e.msg, binds),
                        line,
                        col,
                    });
                    Ok(out)
                }
            };
        }
    }

    /// Skips to the end of the logical line, and the indented block after it if any.
    fn skip_line(&mut self) -> PResult<()> {
        while !matches!(self.tok.tok, Tok::Newline | Tok::Eof) {
            self.advance()?;
        }
        if matches!(self.tok.tok, Tok::Newline) {
            self.advance()?;
        }
        if matches!(self.tok.tok, Tok::Indent) {
            let mut level = 0usize;
            loop {
                match self.advance()?.tok {
                    Tok::Indent => level += 1,
                    Tok::Dedent => {
                        level -= 1;
                        if level == 0 {
                            break;
                        }
                    }
                    Tok::Eof => break,
                    _ => {}
                }
            }
        }
        Ok(())
    }

    fn simple(&mut self) -> PResult<StmtKind> {
        if let Tok::Name(kw) = &self.tok.tok {
            match kw.as_str() {
                "import" => return self.import(),
                "from" => return self.import_from(),
                "pass" | "global" | "nonlocal" | "break" | "continue" => {
                    while !matches!(self.tok.tok, Tok::Newline | Tok::Eof | Tok::Op(";")) {
                        self.advance()?;
                    }
                    return Ok(StmtKind::Pass);
                }
                "del" => return self.del(),
                "assert" | "raise" | "return" | "yield" | "lambda" | "await" => {
                    return self.err(format!("`{kw}` statements are not evaluated"))
                }
                _ => {}
            }
        }
        let first = self.expr_list()?;
        if self.is_op("=") {
            let mut targets = vec![to_target(&first)?];
            let mut value;
            loop {
                self.advance()?;
                value = self.expr_list()?;
                if !self.is_op("=") {
                    break;
                }
                targets.push(to_target(&value)?);
            }
            return Ok(StmtKind::Assign(targets, value));
        }
        if let Tok::Op(op) = self.tok.tok {
            if let Some(bin) = op.strip_suffix('=').and_then(BinOp::from_token) {
                self.advance()?;
                let target = to_target(&first)?;
                return Ok(StmtKind::AugAssign(target, bin, self.expr_list()?));
            }
            if op == ":" {
                self.advance()?;
                self.expr()?; // the annotation is not evaluated
                let value = if self.eat_op("=")? {
                    Some(self.expr_list()?)
                } else {
                    None
                };
                return Ok(StmtKind::AnnAssign(to_target(&first)?, value));
            }
        }
        Ok(StmtKind::Expr(first))
    }

    fn dotted(&mut self) -> PResult<String> {
        let mut path = self.name()?;
        while self.eat_op(".")? {
            path.push('.');
            path.push_str(&self.name()?);
        }
        Ok(path)
    }

    pub(super) fn name(&mut self) -> PResult<String> {
        match &self.tok.tok {
            Tok::Name(n) => {
                let n = n.clone();
                self.advance()?;
                Ok(n)
            }
            _ => self.err("expected a name"),
        }
    }

    fn import(&mut self) -> PResult<StmtKind> {
        self.advance()?;
        let mut names = Vec::new();
        loop {
            let path = self.dotted()?;
            let aliased = self.is_kw("as");
            let bound = if aliased {
                self.advance()?;
                self.name()?
            } else {
                path.split('.').next().unwrap_or(&path).to_owned()
            };
            // `import a.b` binds `a` to the package; `import a.b as c` binds `c` to `a.b`.
            let module = if aliased { path.clone() } else { bound.clone() };
            names.push((bound, module));
            if !self.eat_op(",")? {
                return Ok(StmtKind::Import(names));
            }
        }
    }

    fn import_from(&mut self) -> PResult<StmtKind> {
        self.advance()?;
        let mut module = String::new();
        while self.is_op(".") || self.is_op("...") {
            if let Tok::Op(o) = self.advance()?.tok {
                module.push_str(o);
            }
        }
        if !self.is_kw("import") {
            module.push_str(&self.dotted()?);
        }
        if !self.is_kw("import") {
            return self.err("expected `import`");
        }
        self.advance()?;
        if self.eat_op("*")? {
            return self.err("`from ... import *` is not evaluated");
        }
        let paren = self.eat_op("(")?;
        let mut names = Vec::new();
        while let Tok::Name(_) = self.tok.tok {
            let name = self.name()?;
            let bound = if self.is_kw("as") {
                self.advance()?;
                self.name()?
            } else {
                name.clone()
            };
            names.push((bound, format!("{module}.{name}")));
            if !self.eat_op(",")? {
                break;
            }
        }
        if paren {
            self.expect_op(")")?;
        }
        Ok(StmtKind::Import(names))
    }

    fn del(&mut self) -> PResult<StmtKind> {
        self.advance()?;
        let mut names = Vec::new();
        loop {
            names.push(self.name()?);
            if !self.eat_op(",")? {
                return Ok(StmtKind::Del(names));
            }
        }
    }

    /// `if`/`elif`/`else` with their blocks.
    fn if_stmt(&mut self) -> PResult<StmtKind> {
        let mut branches = Vec::new();
        let mut orelse = Vec::new();
        loop {
            self.advance()?; // `if` or `elif`
            let cond = self.header_expr()?;
            branches.push((cond, self.block()?));
            if self.is_kw("elif") {
                continue;
            }
            if self.is_kw("else") {
                self.advance()?;
                self.expect_colon()?;
                orelse = self.block()?;
            }
            return Ok(StmtKind::If(branches, orelse));
        }
    }

    fn expect_colon(&mut self) -> PResult<()> {
        if self.eat_op(":")? {
            Ok(())
        } else {
            self.fatal("SyntaxError: expected ':'")
        }
    }

    /// A condition followed by `:`; one outside the language becomes [`PyExprKind::Opaque`].
    fn header_expr(&mut self) -> PResult<PyExpr> {
        let (line, col) = (self.tok.line, self.tok.col);
        let cond = match self.expr() {
            Ok(e) if self.is_op(":") => e,
            Ok(_) => self.opaque_until_colon(line, col, "expected ':'".into())?,
            Err(e) if e.fatal => return Err(e),
            Err(e) => self.opaque_until_colon(line, col, e.msg)?,
        };
        self.expect_colon()?;
        Ok(cond)
    }

    fn opaque_until_colon(&mut self, line: usize, col: usize, why: String) -> PResult<PyExpr> {
        self.skip_header()?;
        Ok(PyExpr {
            kind: PyExprKind::Opaque(why),
            line,
            col,
        })
    }

    /// Skips to the `:` that ends a compound statement's header (not one inside brackets),
    /// collecting the names after `as` and those between `for` and `in`.
    fn skip_header(&mut self) -> PResult<Vec<String>> {
        let (mut depth, mut names, mut in_for, mut after_as) = (0usize, Vec::new(), false, false);
        loop {
            match &self.tok.tok {
                Tok::Op(":") if depth == 0 => return Ok(names),
                Tok::Op("(" | "[" | "{") => depth += 1,
                Tok::Op(")" | "]" | "}") => depth = depth.saturating_sub(1),
                Tok::Newline | Tok::Eof => return self.fatal("SyntaxError: expected ':'"),
                Tok::Name(n) if n == "for" => in_for = true,
                Tok::Name(n) if n == "in" => in_for = false,
                Tok::Name(n) if n == "as" => after_as = true,
                Tok::Name(n) if in_for || after_as => {
                    names.push(n.clone());
                    after_as = false;
                }
                _ => {}
            }
            self.advance()?;
        }
    }

    /// `def`, `class`, `for`, `while`, `with`, `try` (and their clauses): parsed, not run.
    fn compound(&mut self, kw: &str) -> PResult<StmtKind> {
        self.advance()?;
        let mut kw = kw.to_owned();
        if kw == "async" {
            kw = self.name()?;
        }
        let own_scope = matches!(kw.as_str(), "def" | "class");
        let mut binds = if own_scope {
            vec![self.name()?]
        } else {
            Vec::new()
        };
        binds.extend(self.skip_header()?);
        self.expect_colon()?;
        let mut body = self.block()?;
        while let Tok::Name(n) = &self.tok.tok {
            if !matches!(n.as_str(), "except" | "else" | "finally") || own_scope {
                break;
            }
            self.advance()?;
            binds.extend(self.skip_header()?);
            self.expect_colon()?;
            body.extend(self.block()?);
        }
        if !own_scope {
            body.iter().for_each(|s| s.kind.bound_names(&mut binds));
        }
        Ok(skip(&format!("a `{kw}` statement is not evaluated"), binds))
    }

    /// The block after a `:`: an indented suite, or simple statements on the same line.
    fn block(&mut self) -> PResult<Vec<Stmt>> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.fatal("blocks nested too deeply");
        }
        let out = self.block_inner();
        self.depth -= 1;
        out
    }

    fn block_inner(&mut self) -> PResult<Vec<Stmt>> {
        if !matches!(self.tok.tok, Tok::Newline) {
            return self.simple_line();
        }
        self.advance()?;
        if !matches!(self.tok.tok, Tok::Indent) {
            return self.fatal("IndentationError: expected an indented block");
        }
        self.advance()?;
        let mut out = Vec::new();
        loop {
            while matches!(self.tok.tok, Tok::Newline) {
                self.advance()?;
            }
            match self.tok.tok {
                Tok::Dedent => {
                    self.advance()?;
                    return Ok(out);
                }
                Tok::Eof => return Ok(out),
                _ => out.extend(self.line()?),
            }
        }
    }
}

fn lex(lx: &mut Lexer) -> PResult<Token> {
    lx.next_token().map_err(|e| SyntaxError {
        msg: e.msg,
        line: e.line,
        col: e.col,
        fatal: true,
    })
}

/// A skipped statement.
fn skip(why: &str, binds: Vec<String>) -> StmtKind {
    StmtKind::Skip {
        why: why.to_owned(),
        binds,
    }
}

/// An expression as an assignment target.
fn to_target(e: &PyExpr) -> PResult<AssignTarget> {
    Ok(match &e.kind {
        PyExprKind::Name(n) => AssignTarget::Name(n.clone(), e.line, e.col),
        PyExprKind::Tuple(items) | PyExprKind::List(items) => {
            AssignTarget::Tuple(items.iter().map(to_target).collect::<PResult<_>>()?)
        }
        PyExprKind::Postfix(_, trailers) => match trailers.last() {
            Some(Trailer::Attr(_)) => AssignTarget::Other("an attribute".into()),
            Some(Trailer::Index(_)) => AssignTarget::Other("a subscript".into()),
            _ => return Err(cannot_assign(e)),
        },
        _ => return Err(cannot_assign(e)),
    })
}

fn cannot_assign(e: &PyExpr) -> SyntaxError {
    SyntaxError {
        msg: "SyntaxError: cannot assign to this expression".into(),
        line: e.line,
        col: e.col,
        fatal: false,
    }
}

/// The names a line that could not be parsed assigns: those before its first `=` (or augmented
/// or annotated assignment) when only names, commas and brackets come before it.
fn guess_targets(toks: &[Tok]) -> Vec<String> {
    let mut names = Vec::new();
    for t in toks {
        match t {
            Tok::Name(n) => names.push(n.clone()),
            Tok::Op("," | "(" | ")" | "[" | "]") => {}
            Tok::Op(op) if op.ends_with('=') && !matches!(*op, "==" | "<=" | ">=" | "!=") => {
                return names
            }
            Tok::Op(":") if names.len() == 1 => return names,
            _ => return Vec::new(),
        }
    }
    Vec::new()
}
