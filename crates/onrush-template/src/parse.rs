//! Template source text → pieces: literals, `${name}` / `${NAME:-default}` references and
//! `${function(arg, ...)}` calls. `$${` is a literal `${`.
//!
//! Function arguments are numbers, quoted strings (`"..."` or `'...'`, themselves templates, with
//! `\\` and `\"` escapes) or bare variable names.

/// One piece of a template's source text. Offsets are byte offsets into the whole text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Lit(String),
    Ref {
        name: String,
        /// `${NAME:-default}`
        default: Option<String>,
        /// Byte offset of the `$`, and length of the whole `${...}`.
        offset: usize,
        len: usize,
    },
    Call {
        name: String,
        args: Vec<Arg>,
        offset: usize,
        len: usize,
    },
}

/// A function argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// An integer or decimal number as written.
    Num(String),
    /// A quoted string: its pieces (it is a template itself).
    Str(Vec<Piece>),
    /// A bare name: a variable reference.
    Name { name: String, offset: usize },
}

/// A template syntax problem at a byte offset of the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PieceError {
    pub offset: usize,
    pub message: String,
    pub hint: &'static str,
}

/// Splits `text` into pieces.
pub fn split(text: &str) -> Result<Vec<Piece>, PieceError> {
    let mut p = Parser { text, pos: 0 };
    let pieces = p.pieces(None, 0)?;
    Ok(pieces)
}

/// Deepest nesting of calls inside string arguments.
const MAX_DEPTH: usize = 8;

struct Parser<'t> {
    text: &'t str,
    pos: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn err(&self, offset: usize, message: impl Into<String>, hint: &'static str) -> PieceError {
        PieceError {
            offset,
            message: message.into(),
            hint,
        }
    }

    /// Pieces until the end of the text, or until the closing `quote` of a string argument.
    fn pieces(&mut self, quote: Option<char>, depth: usize) -> Result<Vec<Piece>, PieceError> {
        let start = self.pos;
        let mut pieces = Vec::new();
        let mut lit = String::new();
        loop {
            let Some(c) = self.rest().chars().next() else {
                if quote.is_some() {
                    return Err(self.err(
                        start.saturating_sub(1),
                        "a quoted argument is not closed; expected a closing quote",
                        "close the string with the same quote it starts with",
                    ));
                }
                break;
            };
            if Some(c) == quote {
                self.pos += 1;
                break;
            }
            if quote.is_some() && c == '\\' {
                let mut chars = self.rest()[1..].chars();
                match chars.next() {
                    Some(e @ ('\\' | '"' | '\'')) => {
                        lit.push(e);
                        self.pos += 2;
                    }
                    _ => {
                        lit.push('\\');
                        self.pos += 1;
                    }
                }
                continue;
            }
            if self.rest().starts_with("$${") {
                lit.push_str("${");
                self.pos += 3;
                continue;
            }
            if self.rest().starts_with("${") {
                if !lit.is_empty() {
                    pieces.push(Piece::Lit(std::mem::take(&mut lit)));
                }
                pieces.push(self.reference(depth)?);
                continue;
            }
            lit.push(c);
            self.pos += c.len_utf8();
        }
        if !lit.is_empty() {
            pieces.push(Piece::Lit(lit));
        }
        Ok(pieces)
    }

    /// `${...}` at `self.pos`.
    fn reference(&mut self, depth: usize) -> Result<Piece, PieceError> {
        let offset = self.pos;
        let Some(close) = self.rest().find('}') else {
            return Err(self.err(
                offset,
                "`${` is not closed; expected `${name}`",
                "close it with `}`, or write `$${` for a literal `${`",
            ));
        };
        self.pos += 2;
        let name_len = self
            .rest()
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(self.rest().len());
        let name = self.rest()[..name_len].to_string();
        let after = &self.rest()[name_len..];
        if is_name(&name) && after.starts_with('}') {
            self.pos += name_len + 1;
            return Ok(Piece::Ref {
                name,
                default: None,
                offset,
                len: self.pos - offset,
            });
        }
        if is_name(&name) && after.starts_with(":-") {
            let end = offset + close;
            let default = self.text[self.pos + name_len + 2..end].to_string();
            self.pos = end + 1;
            return Ok(Piece::Ref {
                name,
                default: Some(default),
                offset,
                len: self.pos - offset,
            });
        }
        if is_name(&name) && after.trim_start().starts_with('(') {
            if depth >= MAX_DEPTH {
                return Err(self.err(
                    offset,
                    format!("function calls are nested more than {MAX_DEPTH} deep"),
                    "use fewer nested calls",
                ));
            }
            self.pos += name_len;
            self.skip_space();
            self.pos += 1; // (
            let args = self.args(offset, depth)?;
            self.skip_space();
            if !self.rest().starts_with('}') {
                return Err(self.err(
                    offset,
                    format!("`${{{name}(...)` is not closed; expected `}}` after the arguments"),
                    "a function call is written `${name(arg, ...)}`",
                ));
            }
            self.pos += 1;
            return Ok(Piece::Call {
                name,
                args,
                offset,
                len: self.pos - offset,
            });
        }
        let inner = &self.text[offset + 2..offset + close];
        let message = if inner.is_empty() {
            "empty `${}`; expected `${name}` or `${NAME:-default}`".to_string()
        } else {
            format!("`${{{inner}}}` is not a variable reference; expected `${{name}}`, `${{NAME:-default}}` or a function call `${{name(args)}}` (names use letters, digits and `_`)")
        };
        Err(self.err(offset, message, "write `$${` for a literal `${`"))
    }

    fn skip_space(&mut self) {
        let n = self.rest().len() - self.rest().trim_start().len();
        self.pos += n;
    }

    /// Arguments after `(`, up to and including `)`.
    fn args(&mut self, call: usize, depth: usize) -> Result<Vec<Arg>, PieceError> {
        let mut args = Vec::new();
        self.skip_space();
        if self.rest().starts_with(')') {
            self.pos += 1;
            return Ok(args);
        }
        loop {
            self.skip_space();
            let at = self.pos;
            let Some(c) = self.rest().chars().next() else {
                return Err(self.err(
                    call,
                    "the function call is not closed; expected `)`",
                    "a function call is written `${name(arg, ...)}`",
                ));
            };
            let arg = match c {
                '"' | '\'' => {
                    self.pos += 1;
                    Arg::Str(self.pieces(Some(c), depth + 1)?)
                }
                '-' | '0'..='9' => {
                    let len = self.rest()[1..]
                        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                        .map_or(self.rest().len(), |i| i + 1);
                    let n = self.rest()[..len].to_string();
                    self.pos += len;
                    Arg::Num(n)
                }
                c if c.is_ascii_alphabetic() || c == '_' => {
                    let len = self
                        .rest()
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(self.rest().len());
                    let name = self.rest()[..len].to_string();
                    self.pos += len;
                    Arg::Name { name, offset: at }
                }
                _ => {
                    return Err(self.err(
                        at,
                        format!("unexpected {c:?} in the arguments; expected a number, a quoted string or a variable name"),
                        "e.g. `${random_int(1, 100)}`, `${base64(\"${user}:${password}\")}`, `${urlencode(token)}`",
                    ))
                }
            };
            args.push(arg);
            self.skip_space();
            match self.rest().chars().next() {
                Some(',') => self.pos += 1,
                Some(')') => {
                    self.pos += 1;
                    return Ok(args);
                }
                _ => {
                    return Err(self.err(
                        self.pos,
                        "expected `,` or `)` after an argument",
                        "separate arguments with commas and close the call with `)`",
                    ))
                }
            }
        }
    }
}

/// A variable name: a letter or `_`, then letters, digits, `_`.
pub fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_pieces() {
        let p = split("a${x}b${Y:-d:e}$${z}$").unwrap();
        assert_eq!(
            p,
            vec![
                Piece::Lit("a".into()),
                Piece::Ref {
                    name: "x".into(),
                    default: None,
                    offset: 1,
                    len: 4
                },
                Piece::Lit("b".into()),
                Piece::Ref {
                    name: "Y".into(),
                    default: Some("d:e".into()),
                    offset: 6,
                    len: 9
                },
                Piece::Lit("${z}$".into()),
            ]
        );
        assert!(split("${").is_err());
        assert!(split("${}").is_err());
        assert!(split("${a b}").is_err());
    }

    #[test]
    fn calls_with_nested_strings() {
        let p = split(r#"x${base64("${user}:${pass}")}y${random_int(1, -5)}${uuid()}"#).unwrap();
        assert_eq!(p.len(), 5);
        let Piece::Call { name, args, .. } = &p[1] else {
            panic!("{p:?}")
        };
        assert_eq!(name, "base64");
        let Arg::Str(inner) = &args[0] else { panic!() };
        assert_eq!(inner.len(), 3);
        assert!(matches!(&inner[1], Piece::Lit(l) if l == ":"));
        let Piece::Call { args, .. } = &p[3] else {
            panic!()
        };
        assert_eq!(args, &[Arg::Num("1".into()), Arg::Num("-5".into())]);
        let Piece::Call { args, len, .. } = &p[4] else {
            panic!()
        };
        assert!(args.is_empty());
        assert_eq!(*len, "${uuid()}".len());
        // A `}` inside a quoted argument does not close the reference.
        let p = split(r#"${choice("a}", 'b\'c', name)}"#).unwrap();
        let Piece::Call { args, .. } = &p[0] else {
            panic!()
        };
        assert_eq!(args.len(), 3);
        assert_eq!(args[1], Arg::Str(vec![Piece::Lit("b'c".into())]));
        assert!(matches!(&args[2], Arg::Name { name, .. } if name == "name"));
    }

    #[test]
    fn call_errors() {
        for bad in [
            "${f(}",
            "${f(1 2)}",
            "${f(\"open)}",
            "${f(1)",
            "${f(#)}",
            "${f(1))}",
        ] {
            assert!(split(bad).is_err(), "{bad}");
        }
    }
}
