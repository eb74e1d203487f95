//! Python tokens with 1-based line and column: indentation, implicit joining inside brackets,
//! backslash continuation, comments, all string forms (prefixes, triple quotes, escapes), and
//! identifiers in NFKC form as Python reads them.
//!
//! Tokens are produced on demand, so reading can stop at train.py's configurator line without
//! looking at the training code after it.

use std::collections::VecDeque;

use unicode_normalization::UnicodeNormalization;

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// An identifier or keyword.
    Name(String),
    /// An integer literal that fits 64 bits.
    Int(i64),
    /// An integer literal beyond 64 bits (its text).
    BigInt(String),
    /// A float literal.
    Float(f64),
    /// A string literal; `special` names a prefix vramdoc does not evaluate (`f`, `b`).
    Str { text: String, special: Option<char> },
    /// An imaginary literal such as `1j`.
    Imaginary,
    /// An operator or delimiter.
    Op(&'static str),
    /// End of a logical line.
    Newline,
    /// Deeper indentation.
    Indent,
    /// Shallower indentation.
    Dedent,
    /// End of input.
    Eof,
}

/// A token with where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub(crate) tok: Tok,
    pub(crate) line: usize,
    pub(crate) col: usize,
}

/// A tokenizing error: Python would refuse the file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LexError {
    pub(crate) msg: String,
    pub(crate) line: usize,
    pub(crate) col: usize,
}

const OPS: &[&str] = &[
    "**=", "//=", ">>=", "<<=", "...", "**", "//", ">>", "<<", "<=", ">=", "==", "!=", "->", "+=",
    "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", ":=", "+", "-", "*", "/", "%", "&", "|", "^",
    "~", "<", ">", "(", ")", "[", "]", "{", "}", ",", ":", ".", ";", "=", "@",
];

/// The tokenizer over one file's text.
pub(crate) struct Lexer {
    chars: Vec<char>,
    i: usize,
    line: usize,
    col: usize,
    depth: usize,
    indents: Vec<usize>,
    at_line_start: bool,
    pending: VecDeque<Token>,
    done: bool,
}

impl Lexer {
    /// A lexer over `text` (a leading byte-order mark is skipped).
    pub(crate) fn new(text: &str) -> Self {
        Lexer {
            chars: text
                .strip_prefix('\u{feff}')
                .unwrap_or(text)
                .chars()
                .collect(),
            i: 0,
            line: 1,
            col: 1,
            depth: 0,
            indents: vec![0],
            at_line_start: true,
            pending: VecDeque::new(),
            done: false,
        }
    }

    fn peek_char(&self, k: usize) -> Option<char> {
        self.chars.get(self.i + k).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.get(self.i).copied()?;
        self.i += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn err<T>(&self, msg: impl Into<String>, line: usize, col: usize) -> Result<T, LexError> {
        Err(LexError {
            msg: msg.into(),
            line,
            col,
        })
    }

    fn token(&self, tok: Tok, line: usize, col: usize) -> Token {
        Token { tok, line, col }
    }

    /// The next token.
    pub(crate) fn next_token(&mut self) -> Result<Token, LexError> {
        if let Some(t) = self.pending.pop_front() {
            return Ok(t);
        }
        if self.done {
            return Ok(self.token(Tok::Eof, self.line, self.col));
        }
        if self.at_line_start && self.depth == 0 {
            self.at_line_start = false;
            if let Some(t) = self.indentation()? {
                return Ok(t);
            }
        }
        self.skip_blanks()?;
        let (line, col) = (self.line, self.col);
        let Some(c) = self.peek_char(0) else {
            return Ok(self.end_of_input());
        };
        if c == '\n' {
            self.bump();
            if self.depth > 0 {
                return self.next_token();
            }
            self.at_line_start = true;
            return Ok(self.token(Tok::Newline, line, col));
        }
        if c.is_ascii_digit() || (c == '.' && self.peek_char(1).is_some_and(|d| d.is_ascii_digit()))
        {
            return self.number(line, col);
        }
        if c == '_' || c.is_alphabetic() {
            return self.name_or_string(line, col);
        }
        if c == '\'' || c == '"' {
            return self.string(None, false, line, col);
        }
        self.operator(line, col)
    }

    /// At the end: a last Newline, the Dedents back to column 0, then Eof.
    fn end_of_input(&mut self) -> Token {
        self.done = true;
        let (line, col) = (self.line, self.col);
        self.pending.push_back(self.token(Tok::Newline, line, col));
        while self.indents.len() > 1 {
            self.indents.pop();
            self.pending.push_back(self.token(Tok::Dedent, line, col));
        }
        self.pending.push_back(self.token(Tok::Eof, line, col));
        self.pending.pop_front().unwrap_or(Token {
            tok: Tok::Eof,
            line,
            col,
        })
    }

    /// Measures a line's indentation (skipping blank and comment lines) and emits Indent/Dedent.
    fn indentation(&mut self) -> Result<Option<Token>, LexError> {
        loop {
            let mut width = 0;
            while let Some(c) = self.peek_char(0) {
                match c {
                    ' ' => width += 1,
                    '\t' => width = (width / 8 + 1) * 8,
                    '\x0c' => width = 0,
                    _ => break,
                }
                self.bump();
            }
            match self.peek_char(0) {
                Some('#') => {
                    while self.peek_char(0).is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                Some('\r') if self.peek_char(1) == Some('\n') => {
                    self.bump();
                }
                Some('\\') if matches!(self.peek_char(1), Some('\n' | '\r')) => return Ok(None),
                Some('\n') => {}
                None => return Ok(None),
                Some(_) => return self.indent_to(width),
            }
            self.bump();
        }
    }

    fn indent_to(&mut self, width: usize) -> Result<Option<Token>, LexError> {
        let (line, col) = (self.line, self.col);
        let top = *self.indents.last().unwrap_or(&0);
        if width > top {
            self.indents.push(width);
            return Ok(Some(self.token(Tok::Indent, line, col)));
        }
        while width < *self.indents.last().unwrap_or(&0) {
            self.indents.pop();
            self.pending.push_back(self.token(Tok::Dedent, line, col));
        }
        if width != *self.indents.last().unwrap_or(&0) {
            return self.err(
                "IndentationError: unindent does not match any outer indentation level",
                line,
                col,
            );
        }
        Ok(self.pending.pop_front())
    }

    /// Spaces, comments and backslash continuations within a line.
    fn skip_blanks(&mut self) -> Result<(), LexError> {
        loop {
            match self.peek_char(0) {
                Some(' ' | '\t' | '\x0c' | '\r') => {
                    self.bump();
                }
                Some('#') => {
                    while self.peek_char(0).is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                Some('\\') => {
                    let (line, col) = (self.line, self.col);
                    self.bump();
                    if self.peek_char(0) == Some('\r') {
                        self.bump();
                    }
                    if self.bump() != Some('\n') {
                        return self.err(
                            "SyntaxError: unexpected character after line continuation character",
                            line,
                            col,
                        );
                    }
                }
                Some('\n') if self.depth > 0 => {
                    self.bump();
                }
                _ => return Ok(()),
            }
        }
    }

    fn operator(&mut self, line: usize, col: usize) -> Result<Token, LexError> {
        let Some(op) = OPS.iter().find(|op| {
            op.chars()
                .enumerate()
                .all(|(k, c)| self.peek_char(k) == Some(c))
        }) else {
            let c = self.peek_char(0).unwrap_or(' ');
            return self.err(format!("SyntaxError: invalid character {c:?}"), line, col);
        };
        for _ in 0..op.len() {
            self.bump();
        }
        match *op {
            "(" | "[" | "{" => self.depth += 1,
            ")" | "]" | "}" => {
                if self.depth == 0 {
                    return self.err(format!("SyntaxError: unmatched '{op}'"), line, col);
                }
                self.depth -= 1;
            }
            _ => {}
        }
        Ok(self.token(Tok::Op(op), line, col))
    }

    fn name_or_string(&mut self, line: usize, col: usize) -> Result<Token, LexError> {
        let start = self.i;
        while self
            .peek_char(0)
            .is_some_and(|c| c == '_' || c.is_alphanumeric())
        {
            self.bump();
        }
        let word: String = self.chars[start..self.i].iter().collect();
        if matches!(self.peek_char(0), Some('\'' | '"')) {
            let lower = word.to_ascii_lowercase();
            if lower.len() <= 2 && lower.chars().all(|c| "rbuf".contains(c)) {
                let raw = lower.contains('r');
                let special = lower.chars().find(|c| matches!(c, 'b' | 'f'));
                return self.string(special, raw, line, col);
            }
        }
        // Python reads identifiers in NFKC form: `ｎ_layer` is `n_layer`.
        let word = if word.is_ascii() {
            word
        } else {
            word.nfkc().collect()
        };
        Ok(self.token(Tok::Name(word), line, col))
    }

    fn string(
        &mut self,
        special: Option<char>,
        raw: bool,
        line: usize,
        col: usize,
    ) -> Result<Token, LexError> {
        let q = self.bump().unwrap_or('\'');
        let triple = self.peek_char(0) == Some(q) && self.peek_char(1) == Some(q);
        if triple {
            self.bump();
            self.bump();
        }
        let mut text = String::new();
        loop {
            let Some(c) = self.bump() else {
                return self.err("SyntaxError: unterminated string literal", line, col);
            };
            if c == q && (!triple || (self.peek_char(0) == Some(q) && self.peek_char(1) == Some(q)))
            {
                if triple {
                    self.bump();
                    self.bump();
                }
                return Ok(self.token(Tok::Str { text, special }, line, col));
            }
            match c {
                '\n' if !triple => {
                    return self.err("SyntaxError: unterminated string literal", line, col)
                }
                '\\' if raw => {
                    text.push('\\');
                    if let Some(n) = self.bump() {
                        text.push(n);
                    }
                }
                '\\' => self.escape(&mut text, line, col)?,
                c => text.push(c),
            }
        }
    }

    fn escape(&mut self, text: &mut String, line: usize, col: usize) -> Result<(), LexError> {
        let Some(c) = self.bump() else {
            return self.err("SyntaxError: unterminated string literal", line, col);
        };
        let hex = |lx: &mut Self, n: usize| -> Option<char> {
            let digits: String = (0..n).filter_map(|_| lx.bump()).collect();
            u32::from_str_radix(&digits, 16)
                .ok()
                .and_then(char::from_u32)
        };
        let decoded = match c {
            '\n' => return Ok(()),
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            '0' => '\0',
            'a' => '\x07',
            'b' => '\x08',
            'f' => '\x0c',
            'v' => '\x0b',
            '\\' | '\'' | '"' => c,
            'x' | 'u' | 'U' => {
                let n = match c {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                match hex(self, n) {
                    Some(d) => d,
                    None => return self.err("SyntaxError: bad escape in string", line, col),
                }
            }
            other => {
                text.push('\\');
                other
            }
        };
        text.push(decoded);
        Ok(())
    }

    fn number(&mut self, line: usize, col: usize) -> Result<Token, LexError> {
        let start = self.i;
        let radix = match (
            self.peek_char(0),
            self.peek_char(1).map(|c| c.to_ascii_lowercase()),
        ) {
            (Some('0'), Some('x')) => 16,
            (Some('0'), Some('o')) => 8,
            (Some('0'), Some('b')) => 2,
            _ => 10,
        };
        if radix != 10 {
            self.bump();
            self.bump();
            let digits = self.take_while(|c| c.is_ascii_hexdigit() || c == '_');
            return match i64::from_str_radix(&digits.replace('_', ""), radix) {
                Ok(v) => Ok(self.token(Tok::Int(v), line, col)),
                Err(_) if !digits.is_empty() => {
                    let text: String = self.chars[start..self.i].iter().collect();
                    Ok(self.token(Tok::BigInt(text), line, col))
                }
                Err(_) => self.err("SyntaxError: invalid number literal", line, col),
            };
        }
        let mut is_float = false;
        self.take_while(|c| c.is_ascii_digit() || c == '_');
        if self.peek_char(0) == Some('.') {
            is_float = true;
            self.bump();
            self.take_while(|c| c.is_ascii_digit() || c == '_');
        }
        if matches!(self.peek_char(0), Some('e' | 'E')) {
            let sign = usize::from(matches!(self.peek_char(1), Some('+' | '-')));
            if self.peek_char(1 + sign).is_some_and(|c| c.is_ascii_digit()) {
                is_float = true;
                for _ in 0..=sign {
                    self.bump();
                }
                self.take_while(|c| c.is_ascii_digit() || c == '_');
            }
        }
        let text: String = self.chars[start..self.i].iter().collect();
        if matches!(self.peek_char(0), Some('j' | 'J')) {
            self.bump();
            return Ok(self.token(Tok::Imaginary, line, col));
        }
        let clean = text.replace('_', "");
        if is_float {
            return match clean.parse::<f64>() {
                Ok(f) => Ok(self.token(Tok::Float(f), line, col)),
                Err(_) => self.err(format!("SyntaxError: invalid number {text}"), line, col),
            };
        }
        Ok(match clean.parse::<i64>() {
            Ok(v) => self.token(Tok::Int(v), line, col),
            Err(_) => self.token(Tok::BigInt(text), line, col),
        })
    }

    fn take_while(&mut self, f: impl Fn(char) -> bool) -> String {
        let start = self.i;
        while self.peek_char(0).is_some_and(&f) {
            self.bump();
        }
        self.chars[start..self.i].iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<Tok> {
        let mut lx = Lexer::new(src);
        let mut out = Vec::new();
        loop {
            let t = lx.next_token().expect("token").tok;
            if t == Tok::Eof {
                return out;
            }
            out.push(t);
        }
    }

    #[test]
    fn joins_lines_and_tracks_indentation() {
        use Tok::*;
        let t = toks("\u{feff}x = (1 +\n  2)\ny = 3 \\\n + 4\nif x:\n    z = 1\n");
        assert_eq!(t.iter().filter(|t| **t == Newline).count(), 5, "{t:?}");
        assert!(t.contains(&Indent) && t.contains(&Dedent));
        assert_eq!(t[0], Name("x".into()));
        let t = toks("'''doc\nstring''' ; r'\\d' ; b'x' ; 'a\\tb' ; 0x1F ; 1_000 ; 1e-3 ; 99999999999999999999");
        assert!(t.contains(&Str {
            text: "doc\nstring".into(),
            special: None
        }));
        assert!(t.contains(&Str {
            text: "\\d".into(),
            special: None
        }));
        assert!(t.contains(&Str {
            text: "x".into(),
            special: Some('b')
        }));
        assert!(t.contains(&Str {
            text: "a\tb".into(),
            special: None
        }));
        assert!(t.contains(&Int(31)) && t.contains(&Int(1000)) && t.contains(&Float(1e-3)));
        assert!(t.contains(&BigInt("99999999999999999999".into())));
    }

    #[test]
    fn errors_carry_a_position() {
        let mut lx = Lexer::new("x = 'abc\n");
        lx.next_token().unwrap();
        lx.next_token().unwrap();
        let e = lx.next_token().unwrap_err();
        assert_eq!((e.line, e.col), (1, 5));
        let mut lx = Lexer::new("if x:\n    a = 1\n  b = 2\n");
        let e = std::iter::from_fn(|| Some(lx.next_token()))
            .find_map(Result::err)
            .unwrap();
        assert_eq!(e.line, 3);
    }
}
