//! The syntax tree of the config language: expressions and statements with positions.

use super::value::{BinOp, PyValue};

/// An expression with the 1-based line and column where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PyExpr {
    pub(crate) kind: PyExprKind,
    pub(crate) line: usize,
    pub(crate) col: usize,
}

/// Comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
    Is,
    IsNot,
}

/// The kinds of expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PyExprKind {
    /// A literal.
    Const(PyValue),
    /// An integer literal beyond 64 bits.
    BigInt(String),
    /// A form that parses but is not evaluated (f-strings, bytes, `1j`), with the reason.
    Opaque(String),
    /// A name.
    Name(String),
    /// `-x`, `+x`, `~x`.
    Unary(char, Box<PyExpr>),
    /// `not x`.
    Not(Box<PyExpr>),
    /// `a op b op c ...` at one precedence level, left to right: the first operand and each
    /// operator with its right operand. A flat list, so a chain of thousands of operands costs
    /// no recursion to build, evaluate or drop (`a ** b` is a chain of one; its right side nests).
    Bin(Box<PyExpr>, Vec<(BinOp, PyExpr)>),
    /// `a and b and c` (true) or `a or b or c` (false): two or more operands, flat.
    Logic(bool, Vec<PyExpr>),
    /// `a < b <= c`.
    Compare(Box<PyExpr>, Vec<(CmpOp, PyExpr)>),
    /// `a if cond else b`: (cond, a, b).
    IfElse(Box<PyExpr>, Box<PyExpr>, Box<PyExpr>),
    /// `x.name(args)[i]...`: a primary and its trailers in order, flat like [`PyExprKind::Bin`].
    Postfix(Box<PyExpr>, Vec<Trailer>),
    /// `(a, b)`.
    Tuple(Vec<PyExpr>),
    /// `[a, b]`.
    List(Vec<PyExpr>),
}

/// What follows a primary: `.name`, `(args, key=value)` or `[i]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Trailer {
    /// `.name`.
    Attr(String),
    /// `(args, key=value)`.
    Call(Vec<PyExpr>, Vec<(String, PyExpr)>),
    /// `[i]`.
    Index(PyExpr),
}

/// An assignment target.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AssignTarget {
    /// A name.
    Name(String, usize, usize),
    /// `a, b` or `(a, b)` or `[a, b]`.
    Tuple(Vec<AssignTarget>),
    /// An attribute, subscript or starred target (not evaluated), as written.
    Other(String),
}

/// A statement with the line and column where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stmt {
    pub(crate) kind: StmtKind,
    pub(crate) line: usize,
    pub(crate) col: usize,
}

/// The kinds of statement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StmtKind {
    /// `a = b = value`.
    Assign(Vec<AssignTarget>, PyExpr),
    /// `a += value`.
    AugAssign(AssignTarget, BinOp, PyExpr),
    /// `a: T = value` (the value is optional).
    AnnAssign(AssignTarget, Option<PyExpr>),
    /// An expression on its own (a docstring, a call).
    Expr(PyExpr),
    /// `if`/`elif` branches and the `else` block.
    If(Vec<(PyExpr, Vec<Stmt>)>, Vec<Stmt>),
    /// `import a.b as c`, `from a import b`: (bound name, module path).
    Import(Vec<(String, String)>),
    /// `del a, b`.
    Del(Vec<String>),
    /// `pass`, `global`, `nonlocal`.
    Pass,
    /// Something not evaluated: `def`, `class`, `for`, `while`, `with`, `try`, or a line using a
    /// form outside the language. `binds` are the names it assigns where it runs.
    Skip {
        /// Why it is skipped.
        why: String,
        /// Names the statement assigns in the module's scope.
        binds: Vec<String>,
    },
}

impl StmtKind {
    /// Every name this statement may bind in the module's scope (for undecidable branches).
    pub(crate) fn bound_names(&self, out: &mut Vec<String>) {
        fn target(t: &AssignTarget, out: &mut Vec<String>) {
            match t {
                AssignTarget::Name(n, ..) => out.push(n.clone()),
                AssignTarget::Tuple(ts) => ts.iter().for_each(|t| target(t, out)),
                AssignTarget::Other(_) => {}
            }
        }
        match self {
            StmtKind::Assign(ts, _) => ts.iter().for_each(|t| target(t, out)),
            StmtKind::AugAssign(t, ..) | StmtKind::AnnAssign(t, Some(_)) => target(t, out),
            StmtKind::If(branches, orelse) => {
                for s in branches.iter().flat_map(|(_, b)| b).chain(orelse) {
                    s.kind.bound_names(out);
                }
            }
            StmtKind::Import(names) => out.extend(names.iter().map(|(n, _)| n.clone())),
            StmtKind::Skip { binds, .. } => out.extend(binds.iter().cloned()),
            StmtKind::AnnAssign(_, None)
            | StmtKind::Expr(_)
            | StmtKind::Del(_)
            | StmtKind::Pass => {}
        }
    }
}
