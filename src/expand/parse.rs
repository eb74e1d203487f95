//! Finding `{{ ... }}` expressions in a guide body, outside code, and parsing them.
//!
//! Grammar (whitespace allowed between tokens):
//! ```text
//! expr   := (call | path) ( "|" filter )?
//! call   := name "(" ( arg ( "," arg )* )? ")"
//! arg    := ( name "=" )? ( path | "string" | number )
//! path   := segment ( "." segment )*        segment := [A-Za-z0-9_-]+
//! ```

use std::ops::Range;

use pulldown_cmark::{Event, Tag};

use super::fields::Field;

/// One expression found in a body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FoundExpr {
    /// Byte range of `{{ ... }}` in the body.
    pub(crate) span: Range<usize>,
    /// True when the expression is alone on its line (a block: table or chart).
    pub(crate) block: bool,
    /// The parsed expression, or why it does not parse.
    pub(crate) expr: Result<Expr, String>,
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Expr {
    /// A value or a function call.
    pub(crate) kind: ExprKind,
    /// The filter after `|`, if any.
    pub(crate) filter: Option<String>,
}

/// What an expression computes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ExprKind {
    /// A dotted path into the guide's data, resolved to the field it reads.
    Value(Field),
    /// A function with its arguments.
    Call { name: String, args: Vec<Arg> },
}

/// One argument of a call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Arg {
    /// `name=` for named arguments.
    pub(crate) name: Option<String>,
    /// The value.
    pub(crate) value: ArgValue,
}

/// An argument's value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ArgValue {
    /// A dotted path (a variant id, when it is one name).
    Path(Vec<String>),
    /// A dotted path into the guide's data (`percent`'s arguments), resolved to its field.
    Field(Field),
    /// A quoted string.
    Str(String),
    /// A number.
    Num(f64),
}

/// Byte ranges of code (fenced, indented and inline) in a Markdown body.
pub(crate) fn code_ranges(body: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    for (event, range) in crate::markdown::parser(body).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) | Event::Code(_) => ranges.push(range),
            _ => {}
        }
    }
    ranges
}

/// Every `{{ ... }}` outside code, in order.
#[cfg(test)]
pub(crate) fn find(body: &str) -> Vec<FoundExpr> {
    if !body.contains("{{") {
        return Vec::new();
    }
    find_outside(body, &code_ranges(body))
}

/// Every `{{ ... }}` outside the ranges `code` ([`code_ranges`] of `body`), in order.
pub(crate) fn find_outside(body: &str, code: &[Range<usize>]) -> Vec<FoundExpr> {
    let mut found = Vec::new();
    let mut from = 0;
    // Code ranges come in document order and do not overlap: one cursor walks them.
    let mut next_code = 0;
    while let Some(rel) = body[from..].find("{{") {
        let start = from + rel;
        while code.get(next_code).is_some_and(|r| r.end <= start) {
            next_code += 1;
        }
        if let Some(r) = code.get(next_code).filter(|r| r.contains(&start)) {
            from = r.end.max(start + 2);
            continue;
        }
        let Some(end_rel) = body[start + 2..].find("}}") else {
            found.push(FoundExpr {
                span: start..body.len(),
                block: false,
                expr: Err("`{{` is never closed by `}}`".into()),
            });
            break;
        };
        let end = start + 2 + end_rel + 2;
        let inner = &body[start + 2..end - 2];
        // Alone on its line; both scans stop at the first other character, so a long line of
        // expressions is not rescanned for each one.
        let blank = |c: char| c != '\n' && c.is_whitespace();
        let block = body[..start]
            .chars()
            .rev()
            .find(|c| !blank(*c))
            .is_none_or(|c| c == '\n')
            && body[end..]
                .chars()
                .find(|c| !blank(*c))
                .is_none_or(|c| c == '\n');
        found.push(FoundExpr {
            span: start..end,
            block,
            expr: parse(inner),
        });
        from = end;
    }
    found
}

/// Parses the text between `{{` and `}}`, each path into the guide's data resolved to its field
/// (an unknown one is an error naming it): the value and `percent`'s numbers.
pub(crate) fn parse(inner: &str) -> Result<Expr, String> {
    let mut expr = parse_syntax(inner)?;
    match &mut expr.kind {
        ExprKind::Value(_) => {}
        ExprKind::Call { name, args } if name == "percent" => {
            for arg in args.iter_mut().filter(|a| a.name.is_none()) {
                if let ArgValue::Path(path) = &arg.value {
                    arg.value = ArgValue::Field(Field::resolve(path)?);
                }
            }
        }
        ExprKind::Call { .. } => {}
    }
    Ok(expr)
}

/// [`parse`] before the paths are resolved.
fn parse_syntax(inner: &str) -> Result<Expr, String> {
    let mut p = Cursor { s: inner, i: 0 };
    p.ws();
    let first = p
        .path()
        .ok_or_else(|| format!("expected a name in `{{{{{inner}}}}}`"))?;
    p.ws();
    let kind = if p.eat('(') {
        if first.len() != 1 {
            return Err(format!("`{}` is not a function name", first.join(".")));
        }
        let mut args = Vec::new();
        p.ws();
        if !p.eat(')') {
            loop {
                p.ws();
                args.push(p.arg()?);
                p.ws();
                if p.eat(')') {
                    break;
                }
                if !p.eat(',') {
                    return Err("expected `,` or `)` in the arguments".into());
                }
            }
        }
        ExprKind::Call {
            name: first[0].clone(),
            args,
        }
    } else {
        ExprKind::Value(Field::resolve(&first)?)
    };
    p.ws();
    let filter = if p.eat('|') {
        p.ws();
        let f = p.segment().ok_or("expected a filter name after `|`")?;
        Some(f)
    } else {
        None
    };
    p.ws();
    if p.i < p.s.len() {
        return Err(format!("unexpected `{}`", &p.s[p.i..]));
    }
    Ok(Expr { kind, filter })
}

struct Cursor<'a> {
    s: &'a str,
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<char> {
        self.s[self.i..].chars().next()
    }
    fn ws(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.i += self.peek().map_or(1, char::len_utf8);
        }
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.i += c.len_utf8();
            true
        } else {
            false
        }
    }
    fn segment(&mut self) -> Option<String> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            self.i += 1;
        }
        (self.i > start).then(|| self.s[start..self.i].to_string())
    }
    fn path(&mut self) -> Option<Vec<String>> {
        let mut segs = vec![self.segment()?];
        while self.peek() == Some('.') {
            self.i += 1;
            segs.push(self.segment()?);
        }
        Some(segs)
    }
    fn arg(&mut self) -> Result<Arg, String> {
        if let Some(q) = self.peek().filter(|c| *c == '"' || *c == '\'') {
            return Ok(Arg {
                name: None,
                value: self.string(q)?,
            });
        }
        let save = self.i;
        if self.peek().is_some_and(|c| c.is_ascii_digit() || c == '-') {
            let start = self.i;
            while self
                .peek()
                .is_some_and(|c| c.is_ascii_digit() || c == '.' || c == '-')
            {
                self.i += 1;
            }
            if let Ok(n) = self.s[start..self.i].parse::<f64>() {
                return Ok(Arg {
                    name: None,
                    value: ArgValue::Num(n),
                });
            }
            self.i = save;
        }
        let path = self.path().ok_or("expected an argument")?;
        self.ws();
        if path.len() == 1 && self.eat('=') {
            self.ws();
            let value = match self.peek() {
                Some(q @ ('"' | '\'')) => self.string(q)?,
                _ => match self.arg()?.value {
                    v @ (ArgValue::Path(_) | ArgValue::Num(_)) => v,
                    v => v,
                },
            };
            return Ok(Arg {
                name: Some(path[0].clone()),
                value,
            });
        }
        Ok(Arg {
            name: None,
            value: ArgValue::Path(path),
        })
    }
    fn string(&mut self, quote: char) -> Result<ArgValue, String> {
        self.i += 1;
        let start = self.i;
        while let Some(c) = self.peek() {
            if c == quote {
                let s = self.s[start..self.i].to_string();
                self.i += 1;
                return Ok(ArgValue::Str(s));
            }
            self.i += c.len_utf8();
        }
        Err("unclosed string".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_paths_filters_and_calls() {
        let e = parse(" bytes.logits | bytes ").unwrap();
        let logits = Field::resolve(&["bytes".into(), "logits".into()]).unwrap();
        assert_eq!(e.kind, ExprKind::Value(logits));
        assert_eq!(e.filter.as_deref(), Some("bytes"));
        let e = parse("chart(\"sweep\", over=\"batch_size\")").unwrap();
        let ExprKind::Call { name, args } = e.kind else {
            panic!()
        };
        assert_eq!(name, "chart");
        assert_eq!(args[0].value, ArgValue::Str("sweep".into()));
        assert_eq!(args[1].name.as_deref(), Some("over"));
        let e = parse("percent(bytes.logits, bytes.peak)").unwrap();
        let ExprKind::Call { args, .. } = e.kind else {
            panic!()
        };
        let peak = Field::resolve(&["bytes".into(), "peak".into()]).unwrap();
        assert_eq!(args[1].value, ArgValue::Field(peak));
        // A variant id stays a name; an unknown path is an error when parsed, naming it.
        let e = parse("options_table(variant=micro8)").unwrap();
        let ExprKind::Call { args, .. } = e.kind else {
            panic!()
        };
        assert_eq!(args[0].value, ArgValue::Path(vec!["micro8".into()]));
        assert_eq!(
            parse("bytes.logit | bytes"),
            Err("unknown name `bytes.logit`".into())
        );
        assert_eq!(
            parse("percent(bytes.peak, params.nope)"),
            Err("unknown name `params.nope`".into())
        );
        assert!(parse("bytes.logits |").is_err());
        assert!(parse("a b").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn skips_code_and_detects_blocks() {
        let body = "Inline {{ a.b }} here.\n\n{{ breakdown_table() }}\n\n`{{ not.me }}`\n\n```\n{{ nor.me }}\n```\n";
        let found = find(body);
        assert_eq!(found.len(), 2);
        assert!(!found[0].block);
        assert!(found[1].block);
        assert_eq!(&body[found[1].span.clone()], "{{ breakdown_table() }}");
    }
}
