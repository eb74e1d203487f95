//! Statements and expressions from tokens, one top-level statement at a time.
//!
//! A simple statement that uses a form outside the language (a lambda, a comprehension, a dict)
//! becomes a [`StmtKind::Skip`] naming the names it would assign; compound statements other than
//! `if` (`def`, `for`, `with`, `try`, ...) are parsed only to learn what they assign. Tokenizing
//! errors and missing blocks are fatal, as in Python.

use super::ast::{CmpOp, Expr, ExprKind, Stmt, StmtKind, Target};
use super::lexer::{Lexer, Tok, Token};
use super::value::{BinOp, Value};

/// The deepest nesting of expressions or blocks accepted (hostile input cannot overflow the stack).
const MAX_DEPTH: usize = 100;

/// A parse error at a position; `fatal` ones end the file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ParseError {
    pub(crate) msg: String,
    pub(crate) line: usize,
    pub(crate) col: usize,
    pub(crate) fatal: bool,
}

type PResult<T> = Result<T, ParseError>;

/// A call's positional and keyword arguments.
type CallArgs = (Vec<Expr>, Vec<(String, Expr)>);

/// Keywords that start a compound statement vramdoc skips.
const SKIPPED_COMPOUND: &[&str] = &["def", "class", "for", "while", "with", "try", "async"];

/// The parser over one file.
pub(crate) struct Parser<'a> {
    lx: Lexer<'a>,
    tok: Token,
    ahead: Option<Token>,
    depth: usize,
    /// Tokens of the current logical line, for guessing the targets of a skipped line.
    line_toks: Vec<Tok>,
}

impl<'a> Parser<'a> {
    /// A parser over `text`.
    pub(crate) fn new(text: &'a str) -> PResult<Self> {
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

    fn advance(&mut self) -> PResult<Token> {
        let next = match self.ahead.take() {
            Some(t) => t,
            None => lex(&mut self.lx)?,
        };
        self.line_toks.push(self.tok.tok.clone());
        Ok(std::mem::replace(&mut self.tok, next))
    }

    fn peek2(&mut self) -> PResult<&Tok> {
        if self.ahead.is_none() {
            self.ahead = Some(lex(&mut self.lx)?);
        }
        Ok(&self.ahead.as_ref().map_or(&self.tok, |t| t).tok)
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(&self.tok.tok, Tok::Op(o) if *o == op)
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(&self.tok.tok, Tok::Name(n) if n == kw)
    }

    fn eat_op(&mut self, op: &str) -> PResult<bool> {
        let hit = self.is_op(op);
        if hit {
            self.advance()?;
        }
        Ok(hit)
    }

    fn err<T>(&self, msg: impl Into<String>) -> PResult<T> {
        Err(ParseError {
            msg: msg.into(),
            line: self.tok.line,
            col: self.tok.col,
            fatal: false,
        })
    }

    fn fatal<T>(&self, msg: impl Into<String>) -> PResult<T> {
        Err(ParseError {
            fatal: true,
            ..self.err::<()>(msg).unwrap_err()
        })
    }

    fn expect_op(&mut self, op: &str) -> PResult<()> {
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

    fn name(&mut self) -> PResult<String> {
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

    /// A condition followed by `:`; one outside the language becomes [`ExprKind::Opaque`].
    fn header_expr(&mut self) -> PResult<Expr> {
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

    fn opaque_until_colon(&mut self, line: usize, col: usize, why: String) -> PResult<Expr> {
        self.skip_header()?;
        Ok(Expr {
            kind: ExprKind::Opaque(why),
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

    /// `a, b, c` (a tuple when there is a comma) or one expression.
    pub(crate) fn expr_list(&mut self) -> PResult<Expr> {
        let (line, col) = (self.tok.line, self.tok.col);
        let first = self.expr()?;
        if !self.is_op(",") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_op(",")? {
            if self.ends_expr() {
                break;
            }
            items.push(self.expr()?);
        }
        Ok(Expr {
            kind: ExprKind::Tuple(items),
            line,
            col,
        })
    }

    fn ends_expr(&self) -> bool {
        matches!(
            self.tok.tok,
            Tok::Newline | Tok::Eof | Tok::Op("=" | ")" | "]" | ";" | ":")
        )
    }

    /// One expression, conditional expressions included.
    pub(crate) fn expr(&mut self) -> PResult<Expr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.depth -= 1;
            return self.err("expression nested too deeply");
        }
        let out = self.expr_inner();
        self.depth -= 1;
        out
    }

    fn expr_inner(&mut self) -> PResult<Expr> {
        if self.is_kw("lambda") {
            return self.err("`lambda` is not evaluated");
        }
        let a = self.or_test()?;
        if !self.is_kw("if") {
            if self.is_op(":=") {
                return self.err("`:=` is not evaluated");
            }
            return Ok(a);
        }
        self.advance()?;
        let cond = self.or_test()?;
        if !self.is_kw("else") {
            return self.err("expected `else` in a conditional expression");
        }
        self.advance()?;
        let b = self.expr()?;
        let (line, col) = (a.line, a.col);
        Ok(Expr {
            kind: ExprKind::IfElse(Box::new(cond), Box::new(a), Box::new(b)),
            line,
            col,
        })
    }

    fn or_test(&mut self) -> PResult<Expr> {
        let mut a = self.and_test()?;
        while self.is_kw("or") {
            self.advance()?;
            let b = self.and_test()?;
            a = join(a, b, |a, b| ExprKind::Logic(false, a, b));
        }
        Ok(a)
    }

    fn and_test(&mut self) -> PResult<Expr> {
        let mut a = self.not_test()?;
        while self.is_kw("and") {
            self.advance()?;
            let b = self.not_test()?;
            a = join(a, b, |a, b| ExprKind::Logic(true, a, b));
        }
        Ok(a)
    }

    fn not_test(&mut self) -> PResult<Expr> {
        if !self.is_kw("not") {
            return self.comparison();
        }
        let (line, col) = (self.tok.line, self.tok.col);
        self.advance()?;
        self.depth += 1;
        let inner = if self.depth > MAX_DEPTH {
            self.err("expression nested too deeply")
        } else {
            self.not_test()
        };
        self.depth -= 1;
        Ok(Expr {
            kind: ExprKind::Not(Box::new(inner?)),
            line,
            col,
        })
    }

    fn comparison(&mut self) -> PResult<Expr> {
        let first = self.binary(0)?;
        let mut rest = Vec::new();
        while let Some(op) = self.cmp_op()? {
            rest.push((op, self.binary(0)?));
        }
        if rest.is_empty() {
            return Ok(first);
        }
        let (line, col) = (first.line, first.col);
        Ok(Expr {
            kind: ExprKind::Compare(Box::new(first), rest),
            line,
            col,
        })
    }

    fn cmp_op(&mut self) -> PResult<Option<CmpOp>> {
        let not_in = self.is_kw("not") && matches!(self.peek2()?, Tok::Name(m) if m == "in");
        let op = match &self.tok.tok {
            Tok::Op("==") => CmpOp::Eq,
            Tok::Op("!=") => CmpOp::Ne,
            Tok::Op("<") => CmpOp::Lt,
            Tok::Op("<=") => CmpOp::Le,
            Tok::Op(">") => CmpOp::Gt,
            Tok::Op(">=") => CmpOp::Ge,
            Tok::Name(n) if n == "in" => CmpOp::In,
            Tok::Name(n) if n == "is" => {
                self.advance()?;
                if self.is_kw("not") {
                    self.advance()?;
                    return Ok(Some(CmpOp::IsNot));
                }
                return Ok(Some(CmpOp::Is));
            }
            Tok::Name(_) if not_in => {
                self.advance()?;
                CmpOp::NotIn
            }
            _ => return Ok(None),
        };
        self.advance()?;
        Ok(Some(op))
    }

    /// Binary operators by precedence level: `|`, `^`, `&`, shifts, `+ -`, `* / // % @`.
    fn binary(&mut self, level: usize) -> PResult<Expr> {
        const LEVELS: &[&[&str]] = &[
            &["|"],
            &["^"],
            &["&"],
            &["<<", ">>"],
            &["+", "-"],
            &["*", "/", "//", "%", "@"],
        ];
        let Some(ops) = LEVELS.get(level) else {
            return self.factor();
        };
        let mut a = self.binary(level + 1)?;
        while let Tok::Op(op) = self.tok.tok {
            if !ops.contains(&op) {
                break;
            }
            let Some(bin) = BinOp::from_token(op) else {
                return self.err("the `@` operator is not evaluated");
            };
            self.advance()?;
            let b = self.binary(level + 1)?;
            a = join(a, b, |a, b| ExprKind::Bin(bin, a, b));
        }
        Ok(a)
    }

    fn factor(&mut self) -> PResult<Expr> {
        let op = match self.tok.tok {
            Tok::Op("-") => '-',
            Tok::Op("+") => '+',
            Tok::Op("~") => '~',
            _ => return self.power(),
        };
        let (line, col) = (self.tok.line, self.tok.col);
        self.advance()?;
        self.depth += 1;
        let inner = if self.depth > MAX_DEPTH {
            self.err("expression nested too deeply")
        } else {
            self.factor()
        };
        self.depth -= 1;
        Ok(Expr {
            kind: ExprKind::Unary(op, Box::new(inner?)),
            line,
            col,
        })
    }

    fn power(&mut self) -> PResult<Expr> {
        let base = self.primary()?;
        if !self.eat_op("**")? {
            return Ok(base);
        }
        self.depth += 1;
        let exp = if self.depth > MAX_DEPTH {
            self.err("expression nested too deeply")
        } else {
            self.factor()
        };
        self.depth -= 1;
        Ok(join(base, exp?, |a, b| ExprKind::Bin(BinOp::Pow, a, b)))
    }
}

fn lex(lx: &mut Lexer<'_>) -> PResult<Token> {
    lx.next_token().map_err(|e| ParseError {
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

fn join(a: Expr, b: Expr, f: impl FnOnce(Box<Expr>, Box<Expr>) -> ExprKind) -> Expr {
    let (line, col) = (a.line, a.col);
    Expr {
        kind: f(Box::new(a), Box::new(b)),
        line,
        col,
    }
}

/// An expression as an assignment target.
fn to_target(e: &Expr) -> PResult<Target> {
    Ok(match &e.kind {
        ExprKind::Name(n) => Target::Name(n.clone(), e.line, e.col),
        ExprKind::Tuple(items) | ExprKind::List(items) => {
            Target::Tuple(items.iter().map(to_target).collect::<PResult<_>>()?)
        }
        ExprKind::Attr(..) => Target::Other("an attribute".into()),
        ExprKind::Index(..) => Target::Other("a subscript".into()),
        _ => {
            return Err(ParseError {
                msg: "SyntaxError: cannot assign to this expression".into(),
                line: e.line,
                col: e.col,
                fatal: false,
            })
        }
    })
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

impl Parser<'_> {
    fn primary(&mut self) -> PResult<Expr> {
        let mut e = self.atom()?;
        loop {
            let (line, col) = (e.line, e.col);
            let kind = if self.eat_op(".")? {
                ExprKind::Attr(Box::new(e), self.name()?)
            } else if self.eat_op("(")? {
                let (args, kwargs) = self.call_args()?;
                ExprKind::Call(Box::new(e), args, kwargs)
            } else if self.eat_op("[")? {
                let index = self.expr_list()?;
                if self.is_op(":") {
                    return self.err("slices are not evaluated");
                }
                self.expect_op("]")?;
                ExprKind::Index(Box::new(e), Box::new(index))
            } else {
                return Ok(e);
            };
            e = Expr { kind, line, col };
        }
    }

    fn call_args(&mut self) -> PResult<CallArgs> {
        let (mut args, mut kwargs) = (Vec::new(), Vec::new());
        while !self.is_op(")") {
            if self.is_op("*") || self.is_op("**") {
                return self.err("`*` and `**` arguments are not evaluated");
            }
            if matches!(self.tok.tok, Tok::Name(_)) && matches!(self.peek2()?, Tok::Op("=")) {
                let name = self.name()?;
                self.advance()?;
                kwargs.push((name, self.expr()?));
            } else {
                args.push(self.expr()?);
                if self.is_kw("for") {
                    return self.err("generator expressions are not evaluated");
                }
            }
            if !self.eat_op(",")? {
                break;
            }
        }
        self.expect_op(")")?;
        Ok((args, kwargs))
    }

    fn atom(&mut self) -> PResult<Expr> {
        let (line, col) = (self.tok.line, self.tok.col);
        let at = |kind| Expr { kind, line, col };
        let t = self.advance()?;
        Ok(at(match t.tok {
            Tok::Int(i) => ExprKind::Const(Value::Int(i)),
            Tok::BigInt(text) => ExprKind::BigInt(text),
            Tok::Float(f) => ExprKind::Const(Value::Float(f)),
            Tok::Imaginary => ExprKind::Opaque("complex numbers are not evaluated".into()),
            Tok::Str { text, special } => self.strings(text, special)?,
            Tok::Name(n) => match n.as_str() {
                "True" => ExprKind::Const(Value::Bool(true)),
                "False" => ExprKind::Const(Value::Bool(false)),
                "None" => ExprKind::Const(Value::None),
                "lambda" | "yield" | "await" => return self.err(format!("`{n}` is not evaluated")),
                "if" | "else" | "elif" | "for" | "in" | "and" | "or" | "not" | "is" | "def"
                | "class" | "import" | "from" | "return" | "pass" | "del" | "while" | "with"
                | "try" | "except" | "finally" | "raise" | "global" => {
                    return Err(ParseError {
                        msg: format!("SyntaxError: unexpected `{n}`"),
                        line,
                        col,
                        fatal: false,
                    })
                }
                _ => ExprKind::Name(n),
            },
            Tok::Op("(") => return self.paren(line, col),
            Tok::Op("[") => ExprKind::List(self.sequence("]")?),
            Tok::Op("{") => return self.err("dicts and sets are not evaluated"),
            Tok::Op("...") => return self.err("`...` is not evaluated"),
            other => {
                return Err(ParseError {
                    msg: format!("SyntaxError: unexpected {}", describe(&other)),
                    line,
                    col,
                    fatal: false,
                })
            }
        }))
    }

    /// Adjacent string literals concatenate (`'a' 'b'`).
    fn strings(&mut self, mut text: String, mut special: Option<char>) -> PResult<ExprKind> {
        while let Tok::Str {
            text: more,
            special: s,
        } = &self.tok.tok
        {
            text.push_str(more);
            special = special.or(*s);
            self.advance()?;
        }
        Ok(match special {
            Some('f') => ExprKind::Opaque("f-strings are not evaluated".into()),
            Some(_) => ExprKind::Opaque("bytes literals are not evaluated".into()),
            None => ExprKind::Const(Value::Str(text)),
        })
    }

    fn paren(&mut self, line: usize, col: usize) -> PResult<Expr> {
        if self.eat_op(")")? {
            return Ok(Expr {
                kind: ExprKind::Tuple(Vec::new()),
                line,
                col,
            });
        }
        let inner = self.expr_list()?;
        if self.is_kw("for") {
            return self.err("generator expressions are not evaluated");
        }
        self.expect_op(")")?;
        // `(x)` is x itself; `(x,)` came back from expr_list as a tuple.
        Ok(Expr { line, col, ..inner })
    }

    fn sequence(&mut self, close: &str) -> PResult<Vec<Expr>> {
        let mut items = Vec::new();
        while !self.is_op(close) {
            items.push(self.expr()?);
            if self.is_kw("for") {
                return self.err("comprehensions are not evaluated");
            }
            if !self.eat_op(",")? {
                break;
            }
        }
        self.expect_op(close)?;
        Ok(items)
    }
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Op(o) => format!("`{o}`"),
        Tok::Newline | Tok::Eof => "end of line".into(),
        Tok::Indent => "indent".into(),
        Tok::Dedent => "dedent".into(),
        other => format!("{other:?}"),
    }
}
