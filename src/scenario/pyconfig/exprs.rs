//! Expressions from tokens: one function per precedence level, from conditional expressions
//! down to atoms (names, literals, brackets), with calls, attributes and subscripts.
//!
//! Left-associative chains (`a + b + c`, `a and b`, `a < b < c`, `x.a[0]()`) are read in a loop
//! into one flat node, so their length costs no stack, and are capped at [`MAX_CHAIN`];
//! what nests (brackets, unary operators, `not`, `**`, conditional expressions) is capped at
//! [`MAX_DEPTH`].

use super::ast::{CmpOp, PyExpr, PyExprKind, Trailer};
use super::lexer::Tok;
use super::parser::{
    CallArgs, PResult, Parser, SyntaxError, LIMIT_CHAIN, LIMIT_DEPTH, MAX_CHAIN, MAX_DEPTH,
};
use super::value::{BinOp, PyValue};

impl Parser {
    /// `a, b, c` (a tuple when there is a comma) or one expression.
    pub(crate) fn expr_list(&mut self) -> PResult<PyExpr> {
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
        Ok(PyExpr {
            kind: PyExprKind::Tuple(items),
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
    pub(crate) fn expr(&mut self) -> PResult<PyExpr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.depth -= 1;
            return self.too_deep();
        }
        let out = self.expr_inner();
        self.depth -= 1;
        out
    }

    fn expr_inner(&mut self) -> PResult<PyExpr> {
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
        Ok(PyExpr {
            kind: PyExprKind::IfElse(Box::new(cond), Box::new(a), Box::new(b)),
            line,
            col,
        })
    }

    fn or_test(&mut self) -> PResult<PyExpr> {
        let first = self.and_test()?;
        self.logic_chain(false, first)
    }

    fn and_test(&mut self) -> PResult<PyExpr> {
        let first = self.not_test()?;
        self.logic_chain(true, first)
    }

    /// `first and b and ...` (`and`) or `first or b or ...`, read in a loop into one flat
    /// [`PyExprKind::Logic`] (just `first` when no such operator follows).
    fn logic_chain(&mut self, and: bool, first: PyExpr) -> PResult<PyExpr> {
        let kw = if and { "and" } else { "or" };
        if !self.is_kw(kw) {
            return Ok(first);
        }
        let (line, col) = (first.line, first.col);
        let mut items = vec![first];
        while self.is_kw(kw) {
            self.chain_room(items.len() - 1)?;
            self.advance()?;
            items.push(if and {
                self.not_test()?
            } else {
                self.and_test()?
            });
        }
        Ok(PyExpr {
            kind: PyExprKind::Logic(and, items),
            line,
            col,
        })
    }

    /// An error at the current token when a chain already has [`MAX_CHAIN`] operators.
    fn chain_room(&self, operators: usize) -> PResult<()> {
        if operators < MAX_CHAIN {
            return Ok(());
        }
        self.err(format!(
            "{LIMIT_CHAIN} more than {MAX_CHAIN} operators, calls, subscripts or attributes in \
             a row, more than vramdoc evaluates: compute the value and write it, or split the \
             expression over several assignments"
        ))
    }

    /// The error for an expression nested beyond [`MAX_DEPTH`].
    pub(super) fn too_deep<T>(&self) -> PResult<T> {
        self.err(format!(
            "{LIMIT_DEPTH} (more than {MAX_DEPTH} levels of brackets, unary \
             operators, `not`, `**` or conditional expressions): write the value more simply"
        ))
    }

    fn not_test(&mut self) -> PResult<PyExpr> {
        if !self.is_kw("not") {
            return self.comparison();
        }
        let (line, col) = (self.tok.line, self.tok.col);
        self.advance()?;
        self.depth += 1;
        let inner = if self.depth > MAX_DEPTH {
            self.too_deep()
        } else {
            self.not_test()
        };
        self.depth -= 1;
        Ok(PyExpr {
            kind: PyExprKind::Not(Box::new(inner?)),
            line,
            col,
        })
    }

    fn comparison(&mut self) -> PResult<PyExpr> {
        let first = self.binary(0)?;
        let mut rest = Vec::new();
        loop {
            if self.cmp_op_ahead()? {
                self.chain_room(rest.len())?;
            }
            let Some(op) = self.cmp_op()? else { break };
            rest.push((op, self.binary(0)?));
        }
        if rest.is_empty() {
            return Ok(first);
        }
        let (line, col) = (first.line, first.col);
        Ok(PyExpr {
            kind: PyExprKind::Compare(Box::new(first), rest),
            line,
            col,
        })
    }

    /// Whether a comparison operator comes next.
    fn cmp_op_ahead(&mut self) -> PResult<bool> {
        Ok(match &self.tok.tok {
            Tok::Op("==" | "!=" | "<" | "<=" | ">" | ">=") => true,
            Tok::Name(n) if n == "in" || n == "is" => true,
            Tok::Name(n) if n == "not" => matches!(self.peek2()?, Tok::Name(m) if m == "in"),
            _ => false,
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

    /// Binary operators of precedence level `min` and above (0: `|`, then `^`, `&`, shifts,
    /// `+ -`, `* / // % @`), by precedence climbing: one frame per operand of higher precedence,
    /// and operators of one level in a row pushed onto one flat [`PyExprKind::Bin`] chain.
    fn binary(&mut self, min: usize) -> PResult<PyExpr> {
        const LEVELS: &[&[&str]] = &[
            &["|"],
            &["^"],
            &["&"],
            &["<<", ">>"],
            &["+", "-"],
            &["*", "/", "//", "%", "@"],
        ];
        let mut a = self.factor()?;
        // The level of the chain `a` is, once this loop made it one.
        let mut chain_level = None;
        while let Tok::Op(op) = self.tok.tok {
            let Some(level) = LEVELS.iter().position(|ops| ops.contains(&op)) else {
                break;
            };
            if level < min {
                break;
            }
            let Some(bin) = BinOp::from_token(op) else {
                return self.err("the `@` operator is not evaluated");
            };
            match &a.kind {
                PyExprKind::Bin(_, rest) if chain_level == Some(level) => {
                    self.chain_room(rest.len())?
                }
                _ => {}
            }
            self.advance()?;
            let b = self.binary(level + 1)?;
            match &mut a.kind {
                PyExprKind::Bin(_, rest) if chain_level == Some(level) => rest.push((bin, b)),
                _ => {
                    // Operators of a lower level than the chain's (`a * b + c`) start a new one
                    // around it: at most one per level.
                    let (line, col) = (a.line, a.col);
                    a = PyExpr {
                        kind: PyExprKind::Bin(Box::new(a), vec![(bin, b)]),
                        line,
                        col,
                    };
                    chain_level = Some(level);
                }
            }
        }
        Ok(a)
    }

    fn factor(&mut self) -> PResult<PyExpr> {
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
            self.too_deep()
        } else {
            self.factor()
        };
        self.depth -= 1;
        Ok(PyExpr {
            kind: PyExprKind::Unary(op, Box::new(inner?)),
            line,
            col,
        })
    }

    fn power(&mut self) -> PResult<PyExpr> {
        let base = self.primary()?;
        if !self.eat_op("**")? {
            return Ok(base);
        }
        self.depth += 1;
        let exp = if self.depth > MAX_DEPTH {
            self.too_deep()
        } else {
            self.factor()
        };
        self.depth -= 1;
        let (line, col) = (base.line, base.col);
        Ok(PyExpr {
            kind: PyExprKind::Bin(Box::new(base), vec![(BinOp::Pow, exp?)]),
            line,
            col,
        })
    }

    /// An atom and its trailers (`.name`, calls, subscripts), at the atom's position.
    fn primary(&mut self) -> PResult<PyExpr> {
        let base = self.atom()?;
        let mut trailers = Vec::new();
        loop {
            if self.is_op(".") || self.is_op("(") || self.is_op("[") {
                self.chain_room(trailers.len())?;
            }
            let trailer = if self.eat_op(".")? {
                Trailer::Attr(self.name()?)
            } else if self.eat_op("(")? {
                let (args, kwargs) = self.call_args()?;
                Trailer::Call(args, kwargs)
            } else if self.eat_op("[")? {
                let index = self.expr_list()?;
                if self.is_op(":") {
                    return self.err("slices are not evaluated");
                }
                self.expect_op("]")?;
                Trailer::Index(index)
            } else {
                break;
            };
            trailers.push(trailer);
        }
        if trailers.is_empty() {
            return Ok(base);
        }
        let (line, col) = (base.line, base.col);
        Ok(PyExpr {
            kind: PyExprKind::Postfix(Box::new(base), trailers),
            line,
            col,
        })
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

    fn atom(&mut self) -> PResult<PyExpr> {
        let (line, col) = (self.tok.line, self.tok.col);
        let at = |kind| PyExpr { kind, line, col };
        let t = self.advance()?;
        Ok(at(match t.tok {
            Tok::Int(i) => PyExprKind::Const(PyValue::Int(i)),
            Tok::BigInt(text) => PyExprKind::BigInt(text),
            Tok::Float(f) => PyExprKind::Const(PyValue::Float(f)),
            Tok::Imaginary => PyExprKind::Opaque("complex numbers are not evaluated".into()),
            Tok::Str { text, special } => self.strings(text, special)?,
            Tok::Name(n) => match n.as_str() {
                "True" => PyExprKind::Const(PyValue::Bool(true)),
                "False" => PyExprKind::Const(PyValue::Bool(false)),
                "None" => PyExprKind::Const(PyValue::None),
                "lambda" | "yield" | "await" => return self.err(format!("`{n}` is not evaluated")),
                "if" | "else" | "elif" | "for" | "in" | "and" | "or" | "not" | "is" | "def"
                | "class" | "import" | "from" | "return" | "pass" | "del" | "while" | "with"
                | "try" | "except" | "finally" | "raise" | "global" => {
                    return Err(SyntaxError {
                        msg: format!("SyntaxError: unexpected `{n}`"),
                        line,
                        col,
                        fatal: false,
                    })
                }
                _ => PyExprKind::Name(n),
            },
            Tok::Op("(") => return self.paren(line, col),
            Tok::Op("[") => PyExprKind::List(self.sequence("]")?),
            Tok::Op("{") => return self.err("dicts and sets are not evaluated"),
            Tok::Op("...") => return self.err("`...` is not evaluated"),
            other => {
                return Err(SyntaxError {
                    msg: format!("SyntaxError: unexpected {}", describe(&other)),
                    line,
                    col,
                    fatal: false,
                })
            }
        }))
    }

    /// Adjacent string literals concatenate (`'a' 'b'`).
    fn strings(&mut self, mut text: String, mut special: Option<char>) -> PResult<PyExprKind> {
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
            Some('f') => PyExprKind::Opaque("f-strings are not evaluated".into()),
            Some(_) => PyExprKind::Opaque("bytes literals are not evaluated".into()),
            None => PyExprKind::Const(PyValue::Str(text)),
        })
    }

    fn paren(&mut self, line: usize, col: usize) -> PResult<PyExpr> {
        if self.eat_op(")")? {
            return Ok(PyExpr {
                kind: PyExprKind::Tuple(Vec::new()),
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
        Ok(PyExpr { line, col, ..inner })
    }

    fn sequence(&mut self, close: &str) -> PResult<Vec<PyExpr>> {
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
