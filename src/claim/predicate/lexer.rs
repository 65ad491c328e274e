//! Tokens of the predicate language, produced one at a time as the parser asks.

use super::{CmpOp, ParseError};

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Ident(String),
    Int(i64),
    Str(String),
    Regex(String),
    /// `(` `)` `.` `,` `||` `&&` `!`
    Punct(&'static str),
    Cmp(CmpOp),
    Eof,
}

impl Tok {
    /// How an error message names the token.
    pub(super) fn describe(&self) -> String {
        match self {
            Tok::Ident(name) => format!("identifier '{name}'"),
            Tok::Int(v) => format!("integer {v}"),
            Tok::Cmp(op) => format!("'{}'", op.as_str()),
            Tok::Punct(p) => format!("'{p}'"),
            Tok::Str(_) => "string literal".into(),
            Tok::Regex(_) => "regex literal".into(),
            Tok::Eof => "end of input".into(),
        }
    }
}

/// Every operator and punctuation token, each before any token that is a prefix of it.
const OPERATORS: [&str; 13] = [
    "||", "&&", "==", "!=", ">=", "<=", ">", "<", "!", "(", ")", ".", ",",
];

pub(super) struct Lexer<'a> {
    pub(super) src: &'a str,
    pub(super) pos: usize,
}

impl<'a> Lexer<'a> {
    fn peek(&self) -> Option<char> {
        self.src.get(self.pos..)?.chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn fail<T>(&self, offset: usize, message: impl Into<String>) -> Result<T, ParseError> {
        Err(ParseError::new(self.src, offset, message))
    }

    /// The next token and the byte offset where it starts.
    pub(super) fn next_token(&mut self) -> Result<(Tok, usize), ParseError> {
        let rest = self.src.get(self.pos..).unwrap_or_default();
        let rest = rest.trim_start_matches([' ', '\t', '\n', '\r']);
        let start = self.src.len() - rest.len();
        self.pos = start;
        if let Some(op) = OPERATORS.into_iter().find(|op| rest.starts_with(op)) {
            self.pos += op.len();
            return Ok((CmpOp::from_name(op).map_or(Tok::Punct(op), Tok::Cmp), start));
        }
        let Some(c) = self.bump() else {
            return Ok((Tok::Eof, start));
        };
        let kind = match c {
            '|' | '&' | '=' => {
                return self.fail(start, format!("unexpected '{c}' (did you mean '{c}{c}'?)"))
            }
            '"' => Tok::Str(self.string(start)?),
            '/' => Tok::Regex(self.regex(start)?),
            '0'..='9' => {
                while matches!(self.peek(), Some(c) if c.is_ascii_digit()) {
                    self.bump();
                }
                let Ok(value) = self.src[start..self.pos].parse() else {
                    let msg = format!("integer literal out of range (maximum is {})", i64::MAX);
                    return self.fail(start, msg);
                };
                Tok::Int(value)
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric() || c == '_') {
                    self.bump();
                }
                Tok::Ident(self.src[start..self.pos].to_string())
            }
            other => return self.fail(start, format!("unexpected character {other:?}")),
        };
        Ok((kind, start))
    }

    /// The rest of a string literal opened at `start`, escapes decoded.
    fn string(&mut self, start: usize) -> Result<String, ParseError> {
        let mut out = String::new();
        loop {
            let at = self.pos;
            let c = match self.bump() {
                Some('"') => return Ok(out),
                Some('\\') => match self.bump() {
                    Some('"') => '"',
                    Some('\\') => '\\',
                    Some('n') => '\n',
                    Some('t') => '\t',
                    Some(other) => {
                        let e = other.escape_debug();
                        let msg = format!("invalid escape '\\{e}' in string literal");
                        return self.fail(at, msg + r#" (allowed: \" \\ \n \t)"#);
                    }
                    None => break,
                },
                Some(c) if c.is_control() => {
                    let msg = format!("raw control character {c:?} in string literal");
                    return self.fail(at, msg + " (use an escape)");
                }
                Some(c) => c,
                None => break,
            };
            out.push(c);
        }
        self.fail(start, "unterminated string literal")
    }

    /// The rest of a `/regex/` literal opened at `start`: `\/` becomes `/`, every other
    /// backslash is kept because it is regex syntax.
    fn regex(&mut self, start: usize) -> Result<String, ParseError> {
        let mut out = String::new();
        let mut escaped = false;
        loop {
            let (at, after_backslash) = (self.pos, std::mem::take(&mut escaped));
            match self.bump() {
                None => return self.fail(start, "unterminated regex literal"),
                Some(c) if c.is_control() => {
                    return self.fail(at, format!("raw control character {c:?} in regex literal"));
                }
                Some('/') if after_backslash => out.push('/'),
                Some(c) if after_backslash => out.extend(['\\', c]),
                Some('\\') => escaped = true,
                Some('/') if out.is_empty() => return self.fail(start, "empty regex literal"),
                Some('/') => return Ok(out),
                Some(c) => out.push(c),
            }
        }
    }
}
