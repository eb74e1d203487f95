//! Python values of the config language and their operators, with every integer path checked.
//!
//! Integers are 64-bit: a result Python would hold in a big integer is an [`OpError`] that is
//! not a Python error (`python: false`), so a statement that needs it is "cannot evaluate",
//! never a wrap-around or a panic.

use std::cmp::Ordering;
use std::iter::repeat_n;

use super::size;

/// The largest string, tuple or list (in bytes or items) an expression may build.
pub(crate) const MAX_LEN: usize = 1 << 18;

/// A value of the config language.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PyValue {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// A 64-bit integer.
    Int(i64),
    /// A float (inf and NaN allowed, as in Python).
    Float(f64),
    /// A string.
    Str(String),
    /// A tuple.
    Tuple(Vec<PyValue>),
    /// A list.
    List(Vec<PyValue>),
    /// An imported module (or a module attribute path such as `torch.cuda`).
    Module(String),
}

/// Why an operation failed; `python` is true when Python itself would raise.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpError {
    /// What went wrong.
    pub(crate) msg: String,
    /// True for a Python exception (the config would fail in nanoGPT too).
    pub(crate) python: bool,
    /// True when it follows from an error already reported (a name whose statement failed).
    pub(crate) cascade: bool,
}

impl OpError {
    /// A Python exception (`ZeroDivisionError`, `TypeError`, ...).
    pub(crate) fn python(msg: impl Into<String>) -> Self {
        OpError {
            msg: msg.into(),
            python: true,
            cascade: false,
        }
    }

    /// Beyond what vramdoc evaluates (64-bit integers, size limits, unsupported forms).
    pub(crate) fn unsupported(msg: impl Into<String>) -> Self {
        OpError {
            msg: msg.into(),
            python: false,
            cascade: false,
        }
    }

    /// The use of a name whose statement was already reported as an error.
    pub(crate) fn cascade(name: &str) -> Self {
        OpError {
            msg: format!("`{name}` was not set because of an error above"),
            python: false,
            cascade: true,
        }
    }
}

/// An operator result.
pub(crate) type OpResult = Result<PyValue, OpError>;

fn overflow() -> OpError {
    OpError::unsupported("integer result beyond 64 bits")
}

fn zero_div() -> OpError {
    OpError::python("ZeroDivisionError: division by zero")
}

impl PyValue {
    /// Python's type name, for messages.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            PyValue::None => "NoneType",
            PyValue::Bool(_) => "bool",
            PyValue::Int(_) => "int",
            PyValue::Float(_) => "float",
            PyValue::Str(_) => "str",
            PyValue::Tuple(_) => "tuple",
            PyValue::List(_) => "list",
            PyValue::Module(_) => "module",
        }
    }

    /// Python truthiness.
    pub(crate) fn truthy(&self) -> bool {
        match self {
            PyValue::None => false,
            PyValue::Bool(b) => *b,
            PyValue::Int(i) => *i != 0,
            PyValue::Float(f) => *f != 0.0,
            PyValue::Str(s) => !s.is_empty(),
            PyValue::Tuple(v) | PyValue::List(v) => !v.is_empty(),
            PyValue::Module(_) => true,
        }
    }

    /// The integer of an int or bool.
    fn as_int(&self) -> Option<i64> {
        match self {
            PyValue::Int(i) => Some(*i),
            PyValue::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    /// The float of an int, bool or float.
    pub(crate) fn as_float(&self) -> Option<f64> {
        match self {
            PyValue::Float(f) => Some(*f),
            other => other.as_int().map(|i| i as f64),
        }
    }

    /// Python's `repr()`.
    pub(crate) fn repr(&self) -> String {
        match self {
            PyValue::Str(s) => repr_str(s),
            other => other.to_str(),
        }
    }

    /// Python's `str()`.
    pub(crate) fn to_str(&self) -> String {
        match self {
            PyValue::None => "None".into(),
            PyValue::Bool(true) => "True".into(),
            PyValue::Bool(false) => "False".into(),
            PyValue::Int(i) => i.to_string(),
            PyValue::Float(f) => float_repr(*f),
            PyValue::Str(s) => s.clone(),
            PyValue::Tuple(v) if v.len() == 1 => format!("({},)", v[0].repr()),
            PyValue::Tuple(v) => format!("({})", join_repr(v)),
            PyValue::List(v) => format!("[{}]", join_repr(v)),
            PyValue::Module(m) => format!("<module '{m}'>"),
        }
    }
}

fn join_repr(v: &[PyValue]) -> String {
    v.iter().map(PyValue::repr).collect::<Vec<_>>().join(", ")
}

/// Python's quoting of a string: single quotes unless the text holds one and no double quote.
fn repr_str(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// Python's `repr(float)`: shortest round-trip digits, positional between 1e-4 and 1e16.
pub(crate) fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if f == 0.0 || (-4..16).contains(&exp) {
        let s = format!("{f}");
        return if s.contains('.') { s } else { s + ".0" };
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    Shl,
    Shr,
    BitAnd,
    BitOr,
    BitXor,
}

impl BinOp {
    /// The operator for a token (`+`, `//`, ...), also for the augmented form without `=`.
    pub(crate) fn from_token(t: &str) -> Option<BinOp> {
        Some(match t {
            "+" => BinOp::Add,
            "-" => BinOp::Sub,
            "*" => BinOp::Mul,
            "/" => BinOp::Div,
            "//" => BinOp::FloorDiv,
            "%" => BinOp::Mod,
            "**" => BinOp::Pow,
            "<<" => BinOp::Shl,
            ">>" => BinOp::Shr,
            "&" => BinOp::BitAnd,
            "|" => BinOp::BitOr,
            "^" => BinOp::BitXor,
            _ => return None,
        })
    }
}

/// `a op b` with Python's semantics.
pub(crate) fn binop(op: BinOp, a: &PyValue, b: &PyValue) -> OpResult {
    if let (Some(x), Some(y)) = (a.as_int(), b.as_int()) {
        if let (PyValue::Bool(p), PyValue::Bool(q), BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor) =
            (a, b, op)
        {
            return Ok(PyValue::Bool(match op {
                BinOp::BitAnd => p & q,
                BinOp::BitOr => p | q,
                _ => p ^ q,
            }));
        }
        return int_op(op, x, y);
    }
    if let (Some(x), Some(y)) = (a.as_float(), b.as_float()) {
        return float_op(op, x, y);
    }
    match (op, a, b) {
        (BinOp::Add, PyValue::Str(x), PyValue::Str(y)) => {
            checked_len(x.len() + y.len())?;
            Ok(PyValue::Str(format!("{x}{y}")))
        }
        (BinOp::Add, PyValue::Tuple(x), PyValue::Tuple(y)) => Ok(PyValue::Tuple(concat(x, y)?)),
        (BinOp::Add, PyValue::List(x), PyValue::List(y)) => Ok(PyValue::List(concat(x, y)?)),
        (BinOp::Mul, seq, n) | (BinOp::Mul, n, seq) if n.as_int().is_some() => {
            repeat(seq, n.as_int().unwrap_or(0))
        }
        (BinOp::Mod, PyValue::Str(_), _) => Err(OpError::unsupported(
            "%-formatting of strings is not evaluated",
        )),
        _ => Err(OpError::python(format!(
            "TypeError: unsupported operand types for {op:?}: '{}' and '{}'",
            a.type_name(),
            b.type_name()
        ))),
    }
}

fn checked_len(n: usize) -> Result<(), OpError> {
    if n > MAX_LEN {
        Err(OpError::unsupported(format!(
            "result of {n} items is larger than vramdoc evaluates ({MAX_LEN})"
        )))
    } else {
        Ok(())
    }
}

fn concat(x: &[PyValue], y: &[PyValue]) -> Result<Vec<PyValue>, OpError> {
    size::of_items(x).plus(size::of_items(y)).check()?;
    Ok(x.iter().chain(y).cloned().collect())
}

/// `seq * n` for a string, tuple or list, bounded by [`MAX_LEN`] (nested items included).
fn repeat(seq: &PyValue, n: i64) -> OpResult {
    let times = usize::try_from(n.max(0)).map_err(|_| overflow())?;
    let items = match seq {
        PyValue::Str(s) => {
            checked_len(s.len().saturating_mul(times))?;
            return Ok(PyValue::Str(s.repeat(times)));
        }
        PyValue::Tuple(v) | PyValue::List(v) => v,
        other => {
            return Err(OpError::python(format!(
                "TypeError: can't multiply sequence of type '{}' by an int",
                other.type_name()
            )))
        }
    };
    size::of_items(items).times(times).check()?;
    let copies = repeat_n(items, times).flatten().cloned().collect();
    Ok(match seq {
        PyValue::Tuple(_) => PyValue::Tuple(copies),
        _ => PyValue::List(copies),
    })
}

fn int_op(op: BinOp, x: i64, y: i64) -> OpResult {
    let r = match op {
        BinOp::Add => x.checked_add(y),
        BinOp::Sub => x.checked_sub(y),
        BinOp::Mul => x.checked_mul(y),
        BinOp::Div => {
            if y == 0 {
                return Err(zero_div());
            }
            return Ok(PyValue::Float(x as f64 / y as f64));
        }
        BinOp::FloorDiv => return floor_div(x, y).map(PyValue::Int),
        BinOp::Mod => return py_mod(x, y).map(PyValue::Int),
        BinOp::Pow => return int_pow(x, y),
        BinOp::Shl => return shift_left(x, y).map(PyValue::Int),
        BinOp::Shr => {
            if y < 0 {
                return Err(OpError::python("ValueError: negative shift count"));
            }
            Some(if y >= 64 { x >> 63 } else { x >> y })
        }
        BinOp::BitAnd => Some(x & y),
        BinOp::BitOr => Some(x | y),
        BinOp::BitXor => Some(x ^ y),
    };
    r.map(PyValue::Int).ok_or_else(overflow)
}

/// Python's `//`: rounds toward negative infinity.
pub(crate) fn floor_div(x: i64, y: i64) -> Result<i64, OpError> {
    if y == 0 {
        return Err(zero_div());
    }
    let q = x.checked_div(y).ok_or_else(overflow)?;
    let r = x.checked_rem(y).unwrap_or(0);
    Ok(if r != 0 && ((r < 0) != (y < 0)) {
        q - 1
    } else {
        q
    })
}

/// Python's `%`: the result has the divisor's sign.
pub(crate) fn py_mod(x: i64, y: i64) -> Result<i64, OpError> {
    if y == 0 {
        return Err(OpError::python("ZeroDivisionError: modulo by zero"));
    }
    let r = x.checked_rem(y).unwrap_or(0); // i64::MIN % -1 is 0
    Ok(if r != 0 && ((r < 0) != (y < 0)) {
        r + y
    } else {
        r
    })
}

fn int_pow(x: i64, y: i64) -> OpResult {
    if y < 0 {
        if x == 0 {
            return Err(OpError::python(
                "ZeroDivisionError: 0 cannot be raised to a negative power",
            ));
        }
        return float_op(BinOp::Pow, x as f64, y as f64);
    }
    match (x, u32::try_from(y)) {
        (0 | 1, _) => Ok(PyValue::Int(if y == 0 { 1 } else { x })),
        (-1, _) => Ok(PyValue::Int(if y % 2 == 0 { 1 } else { -1 })),
        (_, Ok(e)) => x.checked_pow(e).map(PyValue::Int).ok_or_else(overflow),
        (_, Err(_)) => Err(overflow()),
    }
}

fn shift_left(x: i64, y: i64) -> Result<i64, OpError> {
    if y < 0 {
        return Err(OpError::python("ValueError: negative shift count"));
    }
    if x == 0 {
        return Ok(0);
    }
    if y >= 64 {
        return Err(overflow());
    }
    i64::try_from(i128::from(x) << y).map_err(|_| overflow())
}

fn float_op(op: BinOp, x: f64, y: f64) -> OpResult {
    let r = match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div | BinOp::FloorDiv | BinOp::Mod if y == 0.0 => return Err(zero_div()),
        BinOp::Div => x / y,
        BinOp::FloorDiv => (x / y).floor(),
        BinOp::Mod => {
            let r = x % y;
            if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
                r + y
            } else {
                r
            }
        }
        BinOp::Pow => return float_pow(x, y),
        _ => {
            return Err(OpError::python(
                "TypeError: bitwise operators need integers, not float",
            ))
        }
    };
    Ok(PyValue::Float(r))
}

fn float_pow(x: f64, y: f64) -> OpResult {
    if x == 0.0 && y < 0.0 {
        return Err(OpError::python(
            "ZeroDivisionError: 0.0 cannot be raised to a negative power",
        ));
    }
    if x < 0.0 && y.fract() != 0.0 && y.is_finite() {
        return Err(OpError::unsupported(
            "a negative number to a fractional power is complex",
        ));
    }
    let r = x.powf(y);
    if r.is_infinite() && x.is_finite() && y.is_finite() {
        return Err(OpError::python("OverflowError: result too large"));
    }
    Ok(PyValue::Float(r))
}

/// Unary `-`, `+` or `~`.
pub(crate) fn unary(op: char, v: &PyValue) -> OpResult {
    match (op, v) {
        ('-', PyValue::Float(f)) => Ok(PyValue::Float(-f)),
        ('+', PyValue::Float(f)) => Ok(PyValue::Float(*f)),
        (_, other) if other.as_int().is_some() => {
            let i = other.as_int().unwrap_or(0);
            match op {
                '-' => i.checked_neg().map(PyValue::Int).ok_or_else(overflow),
                '+' => Ok(PyValue::Int(i)),
                _ => Ok(PyValue::Int(!i)),
            }
        }
        _ => Err(OpError::python(format!(
            "TypeError: bad operand type for unary {op}: '{}'",
            v.type_name()
        ))),
    }
}

/// Python's ordering of two values (`<`), or a `TypeError`.
pub(crate) fn compare(a: &PyValue, b: &PyValue) -> Result<Ordering, OpError> {
    match (a, b) {
        (PyValue::Str(x), PyValue::Str(y)) => Ok(x.cmp(y)),
        (PyValue::Tuple(x), PyValue::Tuple(y)) | (PyValue::List(x), PyValue::List(y)) => {
            for (p, q) in x.iter().zip(y) {
                if !equal(p, q) {
                    return compare(p, q);
                }
            }
            Ok(x.len().cmp(&y.len()))
        }
        _ => match (a.as_int(), b.as_int(), a.as_float(), b.as_float()) {
            (Some(x), Some(y), _, _) => Ok(x.cmp(&y)),
            (_, _, Some(x), Some(y)) => Ok(x.partial_cmp(&y).unwrap_or(Ordering::Equal)),
            _ => Err(OpError::python(format!(
                "TypeError: '<' not supported between '{}' and '{}'",
                a.type_name(),
                b.type_name()
            ))),
        },
    }
}

/// Python's `==`.
pub(crate) fn equal(a: &PyValue, b: &PyValue) -> bool {
    match (a, b) {
        (PyValue::Tuple(x), PyValue::Tuple(y)) | (PyValue::List(x), PyValue::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(p, q))
        }
        _ => match (a.as_int(), b.as_int(), a.as_float(), b.as_float()) {
            (Some(x), Some(y), _, _) => x == y,
            (_, _, Some(x), Some(y)) => x == y,
            _ => a == b,
        },
    }
}

/// Python's `a in b`.
pub(crate) fn contains(b: &PyValue, a: &PyValue) -> Result<bool, OpError> {
    match (b, a) {
        (PyValue::Str(hay), PyValue::Str(needle)) => Ok(hay.contains(needle.as_str())),
        (PyValue::Tuple(v) | PyValue::List(v), x) => Ok(v.iter().any(|y| equal(x, y))),
        _ => Err(OpError::python(format!(
            "TypeError: argument of type '{}' is not a container",
            b.type_name()
        ))),
    }
}

/// A float as a 64-bit integer, truncated (`int(x)`), or Python's error for inf and NaN.
pub(crate) fn float_to_int(f: f64) -> Result<i64, OpError> {
    if f.is_nan() {
        return Err(OpError::python(
            "ValueError: cannot convert float NaN to integer",
        ));
    }
    if f.is_infinite() {
        return Err(OpError::python(
            "OverflowError: cannot convert float infinity to integer",
        ));
    }
    let t = f.trunc();
    // 2^63 is exactly representable; anything at or beyond it does not fit.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if !(-LIMIT..LIMIT).contains(&t) {
        return Err(overflow());
    }
    Ok(t as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(op: BinOp, x: i64, y: i64) -> OpResult {
        binop(op, &PyValue::Int(x), &PyValue::Int(y))
    }

    #[test]
    fn floor_division_and_modulo_round_toward_negative_infinity() {
        assert_eq!(int(BinOp::FloorDiv, 7, -2), Ok(PyValue::Int(-4)));
        assert_eq!(int(BinOp::FloorDiv, -7, 2), Ok(PyValue::Int(-4)));
        assert_eq!(int(BinOp::Mod, -7, 2), Ok(PyValue::Int(1)));
        assert_eq!(int(BinOp::Mod, 7, -2), Ok(PyValue::Int(-1)));
        assert_eq!(int(BinOp::Mod, i64::MIN, -1), Ok(PyValue::Int(0)));
        assert!(!int(BinOp::FloorDiv, i64::MIN, -1).unwrap_err().python);
        assert!(int(BinOp::FloorDiv, 1, 0).unwrap_err().python);
        assert_eq!(
            binop(BinOp::Mod, &PyValue::Float(-7.0), &PyValue::Float(2.0)),
            Ok(PyValue::Float(1.0))
        );
    }

    #[test]
    fn powers_shifts_and_repetition_are_checked() {
        assert_eq!(int(BinOp::Pow, 2, 4), Ok(PyValue::Int(16)));
        assert_eq!(int(BinOp::Pow, 2, -1), Ok(PyValue::Float(0.5)));
        assert!(int(BinOp::Pow, 2, 64).is_err());
        assert!(int(BinOp::Pow, 3, i64::MAX).is_err());
        assert_eq!(int(BinOp::Pow, -1, i64::MAX), Ok(PyValue::Int(-1)));
        assert_eq!(int(BinOp::Shl, 1, 62), Ok(PyValue::Int(1 << 62)));
        assert!(int(BinOp::Shl, 1, 63).is_err());
        assert!(int(BinOp::Shl, 1, i64::MAX).is_err());
        assert_eq!(int(BinOp::Shr, -5, 1000), Ok(PyValue::Int(-1)));
        assert!(int(BinOp::Shr, 1, -1).unwrap_err().python);
        let s = PyValue::Str("ab".into());
        assert_eq!(
            binop(BinOp::Mul, &s, &PyValue::Int(2)),
            Ok(PyValue::Str("abab".into()))
        );
        assert!(binop(BinOp::Mul, &s, &PyValue::Int(i64::MAX)).is_err());
        assert!(unary('-', &PyValue::Int(i64::MIN)).is_err());
        assert!(float_to_int(f64::INFINITY).unwrap_err().python);
        assert!(float_to_int(f64::NAN).unwrap_err().python);
        assert!(float_to_int(9.3e18).is_err());
        assert_eq!(float_to_int(-2.7), Ok(-2));
    }

    #[test]
    fn float_repr_is_pythons() {
        assert_eq!(float_repr(0.1), "0.1");
        assert_eq!(float_repr(1.0), "1.0");
        assert_eq!(float_repr(1e-5), "1e-05");
        assert_eq!(float_repr(1e16), "1e+16");
        assert_eq!(float_repr(6e-4), "0.0006");
        assert_eq!(PyValue::Tuple(vec![PyValue::Int(1)]).to_str(), "(1,)");
        assert_eq!(PyValue::Str("it's".into()).repr(), "\"it's\"");
    }
}
