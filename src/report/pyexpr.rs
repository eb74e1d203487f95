//! Python literals and the little arithmetic nanoGPT's config files use (`5 * 8`, `1e-3`).
//!
//! nanoGPT's `configurator.py` runs config files with `exec` and parses `--key=value` with
//! `ast.literal_eval`, falling back to the raw string. This evaluates the subset those files
//! use: numbers, quoted strings, `True`/`False`/`None`, `+ - * / // %` and parentheses.

use crate::estimate::Literal;

/// Evaluates a Python literal expression; `None` when it is not one (a name, a call, ...).
pub(crate) fn eval(src: &str) -> Option<Literal> {
    let mut p = Parser {
        s: src.as_bytes(),
        i: 0,
        depth: 0,
    };
    let v = p.sum()?;
    p.ws();
    (p.i == p.s.len()).then_some(v)
}

/// `value` as nanoGPT's configurator reads a `--key=value` override: a literal if it parses,
/// the raw text otherwise (`--dtype=float16` is the string "float16").
pub(crate) fn override_value(value: &str) -> Literal {
    eval(value).unwrap_or_else(|| Literal::Str(value.trim().to_owned()))
}

/// Strips a trailing `# comment` that is not inside a string.
pub(crate) fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '#') => return &line[..i],
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    line
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    /// Nesting of parentheses and unary signs, bounded so hostile input cannot overflow the stack.
    depth: usize,
}

/// The deepest nesting [`eval`] accepts.
const MAX_DEPTH: usize = 64;

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, tok: &str) -> bool {
        self.ws();
        if self.s[self.i..].starts_with(tok.as_bytes()) {
            self.i += tok.len();
            true
        } else {
            false
        }
    }

    fn sum(&mut self) -> Option<Literal> {
        let mut acc = self.product()?;
        loop {
            if self.eat("+") {
                acc = arith(acc, self.product()?, '+')?;
            } else if self.eat("-") {
                acc = arith(acc, self.product()?, '-')?;
            } else {
                return Some(acc);
            }
        }
    }

    fn product(&mut self) -> Option<Literal> {
        let mut acc = self.unary()?;
        loop {
            let op = if self.eat("//") {
                'f'
            } else if self.eat("*") {
                '*'
            } else if self.eat("/") {
                '/'
            } else if self.eat("%") {
                '%'
            } else {
                return Some(acc);
            };
            acc = arith(acc, self.unary()?, op)?;
        }
    }

    fn unary(&mut self) -> Option<Literal> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        let v = self.unary_inner();
        self.depth -= 1;
        v
    }

    fn unary_inner(&mut self) -> Option<Literal> {
        if self.eat("-") {
            return arith(Literal::Int(0), self.unary()?, '-');
        }
        if self.eat("+") {
            return self.unary();
        }
        self.atom()
    }

    fn atom(&mut self) -> Option<Literal> {
        self.ws();
        if self.eat("(") {
            let v = self.sum()?;
            return self.eat(")").then_some(v);
        }
        let rest = &self.s[self.i..];
        let c = *rest.first()?;
        if c == b'\'' || c == b'"' {
            let end = rest[1..].iter().position(|&b| b == c)?;
            let text = std::str::from_utf8(&rest[1..=end]).ok()?.to_owned();
            self.i += end + 2;
            return Some(Literal::Str(text));
        }
        let len = rest
            .iter()
            .position(|b| {
                !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.') || b.is_ascii_digit())
            })
            .unwrap_or(rest.len());
        // An exponent sign belongs to the number: 1e-3.
        let mut len = len;
        if len < rest.len()
            && matches!(rest[len], b'-' | b'+')
            && len > 0
            && matches!(rest[len - 1], b'e' | b'E')
            && c.is_ascii_digit()
        {
            len += 1 + rest[len + 1..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
        }
        let word = std::str::from_utf8(&rest[..len]).ok()?;
        self.i += len;
        match word {
            "True" => Some(Literal::Bool(true)),
            "False" => Some(Literal::Bool(false)),
            "None" => Some(Literal::None),
            _ if c.is_ascii_digit() || c == b'.' => number(word),
            _ => None,
        }
    }
}

/// A Python int or float literal (underscores allowed).
fn number(word: &str) -> Option<Literal> {
    let clean: String = word.chars().filter(|&c| c != '_').collect();
    if let Ok(i) = clean.parse::<i64>() {
        return Some(Literal::Int(i));
    }
    clean
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(Literal::Float)
}

/// Python arithmetic on two numeric literals (`f` is floor division); `None` on strings,
/// overflow or division by zero.
fn arith(a: Literal, b: Literal, op: char) -> Option<Literal> {
    let num = |l: &Literal| match l {
        Literal::Int(i) => Some(*i as f64),
        Literal::Float(f) => Some(*f),
        Literal::Bool(b) => Some(f64::from(u8::from(*b))),
        Literal::Str(_) | Literal::None => None,
    };
    if let (Literal::Int(x), Literal::Int(y)) = (&a, &b) {
        let (x, y) = (*x, *y);
        return match op {
            '+' => x.checked_add(y).map(Literal::Int),
            '-' => x.checked_sub(y).map(Literal::Int),
            '*' => x.checked_mul(y).map(Literal::Int),
            'f' => (y != 0).then(|| Literal::Int(x.div_euclid(y))),
            '%' => (y != 0).then(|| Literal::Int(x.rem_euclid(y))),
            _ => (y != 0).then(|| Literal::Float(x as f64 / y as f64)),
        };
    }
    let (x, y) = (num(&a)?, num(&b)?);
    let r = match op {
        '+' => x + y,
        '-' => x - y,
        '*' => x * y,
        'f' if y != 0.0 => (x / y).floor(),
        '%' if y != 0.0 => x.rem_euclid(y),
        '/' if y != 0.0 => x / y,
        _ => return None,
    };
    r.is_finite().then_some(Literal::Float(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_arithmetic() {
        assert_eq!(eval("5 * 8"), Some(Literal::Int(40)));
        assert_eq!(eval("1e-3"), Some(Literal::Float(0.001)));
        assert_eq!(eval("3.0 / 2"), Some(Literal::Float(1.5)));
        assert_eq!(eval(" 'float16' "), Some(Literal::Str("float16".into())));
        assert_eq!(eval("\"gpt2-xl\""), Some(Literal::Str("gpt2-xl".into())));
        assert_eq!(eval("False"), Some(Literal::Bool(false)));
        assert_eq!(eval("(2 + 3) * 4 // 3"), Some(Literal::Int(6)));
        assert_eq!(eval("-1"), Some(Literal::Int(-1)));
        assert_eq!(eval("1_000"), Some(Literal::Int(1000)));
        assert_eq!(eval("'ft-' + str(time.time())"), None);
        assert_eq!(eval("5 // 0"), None);
        assert_eq!(eval("9223372036854775807 * 2"), None);
        assert_eq!(override_value("float16"), Literal::Str("float16".into()));
        assert_eq!(override_value("8"), Literal::Int(8));
    }

    #[test]
    fn hostile_input_is_rejected_not_a_crash() {
        assert_eq!(eval(&"(".repeat(100_000)), None);
        assert_eq!(eval(&"-".repeat(100_000)), None);
        assert_eq!(eval("'unterminated"), None);
        assert_eq!(eval("é = 1"), None);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(src in ".{0,40}") {
            let _ = eval(&src);
            let _ = strip_comment(&src);
        }
    }

    #[test]
    fn comments() {
        assert_eq!(strip_comment("n_layer = 6 # six"), "n_layer = 6 ");
        assert_eq!(strip_comment("x = '#not' # yes"), "x = '#not' ");
    }
}
