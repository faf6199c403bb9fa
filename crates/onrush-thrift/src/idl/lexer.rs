//! `.thrift` text → tokens, each with its byte span (for error positions). Comments (`//`, `#`,
//! `/* */`) are skipped; identifiers keep their dots (`shared.Struct`, `a.b.c`).

use std::ops::Range;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Ident(String),
    Int(i64),
    Double(f64),
    Str(String),
    /// One of `{ } ( ) [ ] < > , ; : = *`.
    Punct(char),
}

#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub tok: Tok,
    pub span: Range<usize>,
}

/// A lexing error: where, and what.
#[derive(Debug)]
pub(crate) struct LexError {
    pub span: Range<usize>,
    pub message: String,
}

pub(crate) fn lex(text: &str) -> Result<Vec<Token>, LexError> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'#' || (c == b'/' && bytes.get(i + 1) == Some(&b'/')) {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            let start = i;
            i += 2;
            loop {
                if i + 1 >= bytes.len() {
                    return Err(LexError {
                        span: start..start + 2,
                        message: "a `/*` comment that never ends; expected `*/`".into(),
                    });
                }
                if bytes[i] == b'*' && bytes[i + 1] == b'/' {
                    i += 2;
                    break;
                }
                i += 1;
            }
            continue;
        }
        let start = i;
        if c == b'"' || c == b'\'' {
            i += 1;
            let mut s = String::new();
            loop {
                let Some(&b) = bytes.get(i) else {
                    return Err(LexError {
                        span: start..start + 1,
                        message: format!(
                            "a string that never ends; expected a closing {}",
                            c as char
                        ),
                    });
                };
                if b == c {
                    i += 1;
                    break;
                }
                if b == b'\\' && i + 1 < bytes.len() {
                    let e = bytes[i + 1];
                    s.push(match e {
                        b'n' => '\n',
                        b't' => '\t',
                        b'r' => '\r',
                        other => other as char,
                    });
                    i += 2;
                    continue;
                }
                // Multi-byte UTF-8 characters are copied whole.
                let ch = text[i..].chars().next().expect("in bounds");
                s.push(ch);
                i += ch.len_utf8();
            }
            tokens.push(Token {
                tok: Tok::Str(s),
                span: start..i,
            });
            continue;
        }
        if c.is_ascii_digit()
            || ((c == b'-' || c == b'+')
                && bytes
                    .get(i + 1)
                    .is_some_and(|d| d.is_ascii_digit() || *d == b'.'))
        {
            i += 1;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric()
                    || bytes[i] == b'.'
                    || ((bytes[i] == b'-' || bytes[i] == b'+')
                        && matches!(bytes[i - 1], b'e' | b'E')
                        && !text[start..i].starts_with("0x")))
            {
                i += 1;
            }
            let raw = &text[start..i];
            let (sign, digits) = match raw.as_bytes()[0] {
                b'-' => (-1, &raw[1..]),
                b'+' => (1, &raw[1..]),
                _ => (1, raw),
            };
            let tok = if let Some(hex) = digits
                .strip_prefix("0x")
                .or_else(|| digits.strip_prefix("0X"))
            {
                i64::from_str_radix(hex, 16)
                    .ok()
                    .map(|v| Tok::Int(sign * v))
            } else if digits.contains(['.', 'e', 'E']) {
                raw.parse::<f64>().ok().map(Tok::Double)
            } else {
                raw.parse::<i64>().ok().map(Tok::Int)
            };
            let Some(tok) = tok else {
                return Err(LexError {
                    span: start..i,
                    message: format!("`{raw}` is not a number"),
                });
            };
            tokens.push(Token {
                tok,
                span: start..i,
            });
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'.')
            {
                i += 1;
            }
            tokens.push(Token {
                tok: Tok::Ident(text[start..i].to_string()),
                span: start..i,
            });
            continue;
        }
        if b"{}()[]<>,;:=*".contains(&c) {
            tokens.push(Token {
                tok: Tok::Punct(c as char),
                span: start..start + 1,
            });
            i += 1;
            continue;
        }
        let ch = text[i..].chars().next().expect("in bounds");
        return Err(LexError {
            span: start..start + ch.len_utf8(),
            message: format!("unexpected character {ch:?}"),
        });
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<Tok> {
        lex(text).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn tokens_comments_numbers_strings() {
        assert_eq!(
            toks("struct A { 1: required i32 x = -0x10, } // c\n# c\n/* c */ 'q\"' 1.5e3"),
            vec![
                Tok::Ident("struct".into()),
                Tok::Ident("A".into()),
                Tok::Punct('{'),
                Tok::Int(1),
                Tok::Punct(':'),
                Tok::Ident("required".into()),
                Tok::Ident("i32".into()),
                Tok::Ident("x".into()),
                Tok::Punct('='),
                Tok::Int(-16),
                Tok::Punct(','),
                Tok::Punct('}'),
                Tok::Str("q\"".into()),
                Tok::Double(1500.0),
            ]
        );
        assert_eq!(toks("shared.S"), vec![Tok::Ident("shared.S".into())]);
    }

    #[test]
    fn errors_have_spans() {
        let e = lex("struct A {\n  1: i32 x @\n}").unwrap_err();
        assert_eq!(e.span, 22..23);
        assert!(lex("/* open").is_err());
        assert!(lex("\"open").is_err());
    }
}
