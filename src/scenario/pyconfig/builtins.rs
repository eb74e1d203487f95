//! The builtins a config may call: `int float bool str min max abs round len`.

use std::cmp::Ordering;

use super::value::{self, float_to_int, OpError, PyValue};

/// Calls builtin `name` with evaluated arguments.
pub(crate) fn call(name: &str, args: &[PyValue]) -> Result<PyValue, OpError> {
    match (name, args) {
        ("int", []) => Ok(PyValue::Int(0)),
        ("int", [x]) => to_int(x),
        ("float", []) => Ok(PyValue::Float(0.0)),
        ("float", [x]) => to_float(x),
        ("bool", []) => Ok(PyValue::Bool(false)),
        ("bool", [x]) => Ok(PyValue::Bool(x.truthy())),
        ("str", []) => Ok(PyValue::Str(String::new())),
        ("str", [x]) => Ok(PyValue::Str(x.to_str())),
        ("abs", [x]) => abs(x),
        ("len", [x]) => len(x),
        ("round", [x]) => round(x),
        ("round", [x, n]) => round_to(x, n),
        ("min" | "max", [_, _, ..]) => extreme(name, args),
        ("min" | "max", [PyValue::Tuple(v) | PyValue::List(v)]) => extreme(name, v),
        ("min" | "max", [PyValue::Str(s)]) => {
            let chars: Vec<PyValue> = s.chars().map(|c| PyValue::Str(c.to_string())).collect();
            extreme(name, &chars)
        }
        _ => Err(OpError::python(format!(
            "TypeError: {name}() does not take {} argument(s) of these types",
            args.len()
        ))),
    }
}

fn to_int(x: &PyValue) -> Result<PyValue, OpError> {
    match x {
        PyValue::Int(i) => Ok(PyValue::Int(*i)),
        PyValue::Bool(b) => Ok(PyValue::Int(i64::from(*b))),
        PyValue::Float(f) => float_to_int(*f).map(PyValue::Int),
        PyValue::Str(s) => {
            let t = s.trim().replace('_', "");
            let digits = t.trim_start_matches(['+', '-']);
            if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
                return Err(OpError::python(format!(
                    "ValueError: invalid literal for int(): {}",
                    x.repr()
                )));
            }
            t.parse::<i64>()
                .map(PyValue::Int)
                .map_err(|_| OpError::unsupported("integer beyond 64 bits"))
        }
        other => Err(OpError::python(format!(
            "TypeError: int() argument must be a string or a number, not '{}'",
            other.type_name()
        ))),
    }
}

fn to_float(x: &PyValue) -> Result<PyValue, OpError> {
    if let Some(f) = x.as_float() {
        return Ok(PyValue::Float(f));
    }
    match x {
        PyValue::Str(s) => {
            let t = s.trim().to_ascii_lowercase().replace('_', "");
            let special = match t.trim_start_matches(['+', '-']) {
                "inf" | "infinity" => Some(f64::INFINITY),
                "nan" => Some(f64::NAN),
                _ => None,
            };
            let parsed = match special {
                Some(v) if t.starts_with('-') => Some(-v),
                Some(v) => Some(v),
                None if t.chars().any(|c| c.is_ascii_digit()) => t.parse::<f64>().ok(),
                None => None,
            };
            parsed.map(PyValue::Float).ok_or_else(|| {
                OpError::python(format!(
                    "ValueError: could not convert string to float: {}",
                    x.repr()
                ))
            })
        }
        other => Err(OpError::python(format!(
            "TypeError: float() argument must be a string or a number, not '{}'",
            other.type_name()
        ))),
    }
}

fn abs(x: &PyValue) -> Result<PyValue, OpError> {
    match x {
        PyValue::Float(f) => Ok(PyValue::Float(f.abs())),
        PyValue::Bool(b) => Ok(PyValue::Int(i64::from(*b))),
        PyValue::Int(i) => i
            .checked_abs()
            .map(PyValue::Int)
            .ok_or_else(|| OpError::unsupported("integer result beyond 64 bits")),
        other => Err(OpError::python(format!(
            "TypeError: bad operand type for abs(): '{}'",
            other.type_name()
        ))),
    }
}

fn len(x: &PyValue) -> Result<PyValue, OpError> {
    let n = match x {
        PyValue::Str(s) => s.chars().count(),
        PyValue::Tuple(v) | PyValue::List(v) => v.len(),
        other => {
            return Err(OpError::python(format!(
                "TypeError: object of type '{}' has no len()",
                other.type_name()
            )))
        }
    };
    Ok(PyValue::Int(i64::try_from(n).unwrap_or(i64::MAX)))
}

/// `round(x)`: to the nearest integer, ties to even.
fn round(x: &PyValue) -> Result<PyValue, OpError> {
    match x {
        PyValue::Float(f) => float_to_int(f.round_ties_even()).map(PyValue::Int),
        PyValue::Int(_) | PyValue::Bool(_) => to_int(x),
        other => Err(OpError::python(format!(
            "TypeError: type {} doesn't define __round__",
            other.type_name()
        ))),
    }
}

/// `round(x, n)`: a float rounded to `n` decimals (ties to even on the scaled value).
fn round_to(x: &PyValue, n: &PyValue) -> Result<PyValue, OpError> {
    let PyValue::Int(n) = n else {
        return Err(OpError::python("TypeError: ndigits must be an integer"));
    };
    match x {
        PyValue::Int(_) | PyValue::Bool(_) if *n >= 0 => to_int(x),
        PyValue::Float(f) if (0..=15).contains(n) => {
            let scale = 10f64.powi(i32::try_from(*n).unwrap_or(0));
            let r = (f * scale).round_ties_even() / scale;
            Ok(PyValue::Float(if r.is_finite() { r } else { *f }))
        }
        PyValue::Float(f) if *n > 15 => Ok(PyValue::Float(*f)),
        _ => Err(OpError::unsupported(
            "round() to negative or many digits is not evaluated",
        )),
    }
}

/// `min`/`max` of two or more values.
fn extreme(name: &str, items: &[PyValue]) -> Result<PyValue, OpError> {
    let mut best = items
        .first()
        .ok_or_else(|| OpError::python(format!("ValueError: {name}() arg is an empty sequence")))?;
    let want = if name == "min" {
        Ordering::Less
    } else {
        Ordering::Greater
    };
    for x in &items[1..] {
        if value::compare(x, best)? == want {
            best = x;
        }
    }
    Ok(best.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_follow_python() {
        assert_eq!(call("int", &[PyValue::Float(-2.9)]), Ok(PyValue::Int(-2)));
        assert_eq!(
            call("int", &[PyValue::Str(" 42 ".into())]),
            Ok(PyValue::Int(42))
        );
        assert!(
            call("int", &[PyValue::Str("4.2".into())])
                .unwrap_err()
                .python
        );
        assert!(call("int", &[PyValue::Float(f64::NAN)]).unwrap_err().python);
        assert_eq!(
            call("float", &[PyValue::Str("1e-3".into())]),
            Ok(PyValue::Float(1e-3))
        );
        assert!(
            matches!(call("float", &[PyValue::Str("-inf".into())]), Ok(PyValue::Float(f)) if f == f64::NEG_INFINITY)
        );
        assert_eq!(call("round", &[PyValue::Float(3.5)]), Ok(PyValue::Int(4)));
        assert_eq!(call("round", &[PyValue::Float(-0.5)]), Ok(PyValue::Int(0)));
        assert!(
            call("round", &[PyValue::Float(f64::INFINITY)])
                .unwrap_err()
                .python
        );
        assert_eq!(
            call("round", &[PyValue::Float(0.123), PyValue::Int(2)]),
            Ok(PyValue::Float(0.12))
        );
        assert!(call("abs", &[PyValue::Int(i64::MIN)]).is_err());
        assert!(call("max", &[PyValue::List(vec![])]).unwrap_err().python);
        assert_eq!(
            call("max", &[PyValue::Int(2), PyValue::Float(2.5)]),
            Ok(PyValue::Float(2.5))
        );
        assert_eq!(
            call("str", &[PyValue::None]),
            Ok(PyValue::Str("None".into()))
        );
    }
}
