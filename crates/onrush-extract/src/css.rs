//! CSS selectors (a practical subset of Selectors Level 4) matched over [`crate::html::Tree`].
//!
//! Supported: `*`, type, `#id`, `.class`, `[attr]`, `[attr=v]`, `[attr~=v]`, `[attr|=v]`,
//! `[attr^=v]`, `[attr$=v]`, `[attr*=v]` (with an optional ` i` flag), `:first-child`,
//! `:last-child`, `:only-child`, `:nth-child(an+b)`, `:nth-last-child(an+b)`,
//! `:first-of-type`, `:last-of-type`, `:nth-of-type(an+b)`, `:empty`, `:not(compound)`,
//! the descendant (` `), child (`>`), next-sibling (`+`) and subsequent-sibling (`~`)
//! combinators, and selector lists (`a, b`). Anything else is a compile error naming the
//! position and the supported syntax.

use std::ops::ControlFlow;

use crate::html::{decode_into, Tree};

const MAX_COMPOUNDS: usize = 32;

#[derive(Debug, Clone)]
pub struct Selector {
    alts: Vec<Complex>,
}

/// Compounds right to left: `parts[0]` is the subject; `parts[i].1` is how `parts[i + 1]`
/// relates to `parts[i]`.
#[derive(Debug, Clone)]
struct Complex {
    parts: Vec<(Compound, Comb)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Comb {
    Descendant,
    Child,
    Adjacent,
    Sibling,
}

#[derive(Debug, Clone, Default)]
struct Compound {
    tag: Option<Vec<u8>>,
    conds: Vec<Cond>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Exists,
    Eq,
    Word,
    Dash,
    Prefix,
    Suffix,
    Contains,
}

#[derive(Debug, Clone)]
enum Cond {
    Id(Vec<u8>),
    Class(Vec<u8>),
    Attr {
        name: Vec<u8>,
        op: Op,
        value: Vec<u8>,
        ci: bool,
    },
    Nth {
        a: i64,
        b: i64,
        from_end: bool,
        of_type: bool,
    },
    Empty,
    Not(Box<Compound>),
}

/// A selector syntax error: byte position in the selector, what is wrong, a hint.
#[derive(Debug, Clone)]
pub struct CssError {
    pub pos: usize,
    pub msg: String,
    pub hint: &'static str,
}

const SUPPORTED: &str = "supported: type, *, #id, .class, [attr], [attr=v] (also ~= |= ^= $= *=, \
    optional ' i'), :first-child, :last-child, :only-child, :nth-child(an+b), \
    :nth-last-child(an+b), :first-of-type, :last-of-type, :nth-of-type(an+b), :empty, \
    :not(compound), combinators ' ' > + ~ and lists 'a, b'";

struct P<'s> {
    s: &'s [u8],
    i: usize,
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c >= 0x80
}

impl P<'_> {
    fn err<T>(&self, msg: impl Into<String>) -> Result<T, CssError> {
        Err(CssError {
            pos: self.i,
            msg: msg.into(),
            hint: SUPPORTED,
        })
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn ws(&mut self) -> bool {
        let st = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
        self.i > st
    }
    fn ident(&mut self, what: &str) -> Result<Vec<u8>, CssError> {
        let st = self.i;
        if self.peek() == Some(b'\\') {
            return self.err("CSS escapes (\\) are not supported");
        }
        while self.peek().is_some_and(is_ident_char) {
            self.i += 1;
        }
        if self.i == st {
            return match self.peek() {
                Some(c) => self.err(format!("expected {what}, found '{}'", c as char)),
                None => self.err(format!("expected {what}, found the end of the selector")),
            };
        }
        Ok(self.s[st..self.i].to_vec())
    }

    fn list(&mut self) -> Result<Vec<Complex>, CssError> {
        let mut alts = Vec::new();
        loop {
            self.ws();
            alts.push(self.complex()?);
            self.ws();
            match self.peek() {
                None => return Ok(alts),
                Some(b',') => self.i += 1,
                Some(c) => return self.err(format!("unexpected '{}'", c as char)),
            }
        }
    }

    fn complex(&mut self) -> Result<Complex, CssError> {
        let mut left_to_right = vec![(self.compound()?, Comb::Descendant)];
        loop {
            let had_ws = self.ws();
            let comb = match self.peek() {
                Some(b'>') => Comb::Child,
                Some(b'+') => Comb::Adjacent,
                Some(b'~') => Comb::Sibling,
                Some(c) if had_ws && c != b',' => {
                    left_to_right.push((self.compound()?, Comb::Descendant));
                    continue;
                }
                _ => break,
            };
            self.i += 1;
            self.ws();
            left_to_right.push((self.compound()?, comb));
            if left_to_right.len() > MAX_COMPOUNDS {
                return self.err(format!("more than {MAX_COMPOUNDS} compound selectors"));
            }
        }
        // Right to left: parts[i].1 is the combinator written before compound i, i.e. the
        // relation between parts[i] and parts[i + 1].
        left_to_right.reverse();
        Ok(Complex {
            parts: left_to_right,
        })
    }

    fn compound(&mut self) -> Result<Compound, CssError> {
        let mut c = Compound::default();
        let start = self.i;
        match self.peek() {
            Some(b'*') => self.i += 1,
            Some(ch) if is_ident_char(ch) && !ch.is_ascii_digit() => {
                c.tag = Some(self.ident("a type name")?.to_ascii_lowercase());
            }
            _ => {}
        }
        loop {
            match self.peek() {
                Some(b'#') => {
                    self.i += 1;
                    c.conds.push(Cond::Id(self.ident("an id after '#'")?));
                }
                Some(b'.') => {
                    self.i += 1;
                    c.conds
                        .push(Cond::Class(self.ident("a class name after '.'")?));
                }
                Some(b'[') => {
                    self.i += 1;
                    c.conds.push(self.attr()?);
                }
                Some(b':') => {
                    self.i += 1;
                    c.conds.push(self.pseudo()?);
                }
                _ => break,
            }
        }
        if self.i == start {
            return match self.peek() {
                Some(ch) => self.err(format!("expected a selector, found '{}'", ch as char)),
                None => self.err("expected a selector, found the end of the selector"),
            };
        }
        Ok(c)
    }

    fn attr(&mut self) -> Result<Cond, CssError> {
        self.ws();
        let name = self
            .ident("an attribute name after '['")?
            .to_ascii_lowercase();
        self.ws();
        let op = match self.peek() {
            Some(b']') => {
                self.i += 1;
                return Ok(Cond::Attr {
                    name,
                    op: Op::Exists,
                    value: Vec::new(),
                    ci: false,
                });
            }
            Some(b'=') => Op::Eq,
            Some(b'~') => Op::Word,
            Some(b'|') => Op::Dash,
            Some(b'^') => Op::Prefix,
            Some(b'$') => Op::Suffix,
            Some(b'*') => Op::Contains,
            Some(c) => {
                return self.err(format!(
                    "expected ']' or an operator (= ~= |= ^= $= *=), found '{}'",
                    c as char
                ))
            }
            None => return self.err("unclosed '[': expected ']'"),
        };
        self.i += 1;
        if op != Op::Eq {
            if self.peek() != Some(b'=') {
                return self.err("expected '=' after the attribute operator");
            }
            self.i += 1;
        }
        self.ws();
        let value = match self.peek() {
            Some(q @ (b'"' | b'\'')) => {
                self.i += 1;
                let st = self.i;
                while self.peek().is_some_and(|c| c != q) {
                    if self.peek() == Some(b'\\') {
                        return self.err("escapes in quoted attribute values are not supported");
                    }
                    self.i += 1;
                }
                if self.peek().is_none() {
                    self.i = st - 1;
                    return self.err("unterminated quoted string");
                }
                let v = self.s[st..self.i].to_vec();
                self.i += 1;
                v
            }
            _ => self.ident("an attribute value (quote it if it has spaces or punctuation)")?,
        };
        self.ws();
        let mut ci = false;
        if let Some(c @ (b'i' | b'I' | b's' | b'S')) = self.peek() {
            ci = c.eq_ignore_ascii_case(&b'i');
            self.i += 1;
            self.ws();
        }
        if self.peek() != Some(b']') {
            return self.err("expected ']' to close the attribute selector");
        }
        self.i += 1;
        Ok(Cond::Attr {
            name,
            op,
            value,
            ci,
        })
    }

    fn pseudo(&mut self) -> Result<Cond, CssError> {
        if self.peek() == Some(b':') {
            return self.err("pseudo-elements (::) select no element and are not supported");
        }
        let st = self.i;
        let name = self
            .ident("a pseudo-class name after ':'")?
            .to_ascii_lowercase();
        let nth = |a, b, from_end, of_type| {
            Ok(Cond::Nth {
                a,
                b,
                from_end,
                of_type,
            })
        };
        match &name[..] {
            b"first-child" => nth(0, 1, false, false),
            b"last-child" => nth(0, 1, true, false),
            b"first-of-type" => nth(0, 1, false, true),
            b"last-of-type" => nth(0, 1, true, true),
            b"only-child" => Ok(Cond::Not(Box::new(Compound {
                tag: None,
                conds: vec![Cond::Not(Box::new(Compound {
                    tag: None,
                    conds: vec![
                        Cond::Nth {
                            a: 0,
                            b: 1,
                            from_end: false,
                            of_type: false,
                        },
                        Cond::Nth {
                            a: 0,
                            b: 1,
                            from_end: true,
                            of_type: false,
                        },
                    ],
                }))],
            }))),
            b"empty" => Ok(Cond::Empty),
            b"nth-child" | b"nth-last-child" | b"nth-of-type" | b"nth-last-of-type" => {
                let (a, b) = self.nth_args()?;
                nth(
                    a,
                    b,
                    name.starts_with(b"nth-last"),
                    name.ends_with(b"of-type"),
                )
            }
            b"not" => {
                self.open_paren()?;
                self.ws();
                let inner = self.compound()?;
                self.ws();
                self.close_paren()?;
                Ok(Cond::Not(Box::new(inner)))
            }
            _ => {
                self.i = st;
                self.err(format!(
                    "unsupported pseudo-class ':{}'",
                    String::from_utf8_lossy(&name)
                ))
            }
        }
    }

    fn open_paren(&mut self) -> Result<(), CssError> {
        if self.peek() != Some(b'(') {
            return self.err("expected '('");
        }
        self.i += 1;
        Ok(())
    }
    fn close_paren(&mut self) -> Result<(), CssError> {
        if self.peek() != Some(b')') {
            return self.err("expected ')'");
        }
        self.i += 1;
        Ok(())
    }

    fn nth_args(&mut self) -> Result<(i64, i64), CssError> {
        self.open_paren()?;
        self.ws();
        let st = self.i;
        while self.peek().is_some_and(|c| c != b')') {
            self.i += 1;
        }
        let arg: Vec<u8> = self.s[st..self.i]
            .iter()
            .filter(|c| !c.is_ascii_whitespace())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        let bad = |p: &Self| CssError {
            pos: st,
            msg: format!(
                "bad an+b argument '{}'",
                String::from_utf8_lossy(&p.s[st..p.i])
            ),
            hint: "use odd, even, a number like 3, or an+b like 2n+1",
        };
        let num = |s: &[u8]| -> Option<i64> {
            std::str::from_utf8(s)
                .ok()?
                .parse::<i64>()
                .ok()
                .filter(|v| v.abs() < 1 << 40)
        };
        let (a, b) = match &arg[..] {
            b"odd" => (2, 1),
            b"even" => (2, 0),
            s => match s.iter().position(|&c| c == b'n') {
                None => (0, num(s).ok_or_else(|| bad(self))?),
                Some(p) => {
                    let a = match &s[..p] {
                        b"" | b"+" => 1,
                        b"-" => -1,
                        x => num(x).ok_or_else(|| bad(self))?,
                    };
                    let rest = &s[p + 1..];
                    let b = if rest.is_empty() {
                        0
                    } else if rest[0] == b'+' || rest[0] == b'-' {
                        num(rest).ok_or_else(|| bad(self))?
                    } else {
                        return Err(bad(self));
                    };
                    (a, b)
                }
            },
        };
        self.close_paren()?;
        Ok((a, b))
    }
}

impl Selector {
    pub fn parse(s: &str) -> Result<Selector, CssError> {
        if s.trim().is_empty() {
            return Err(CssError {
                pos: 0,
                msg: "empty selector".into(),
                hint: SUPPORTED,
            });
        }
        let mut p = P {
            s: s.as_bytes(),
            i: 0,
        };
        Ok(Selector { alts: p.list()? })
    }

    /// Calls `found` with the attribute value (decoded) or the text content of each matching
    /// element, in document order.
    pub fn each(
        &self,
        tree: &Tree<'_>,
        attribute: Option<&[u8]>,
        found: &mut dyn FnMut(&[u8]) -> ControlFlow<()>,
    ) {
        let mut buf = Vec::new();
        for n in 1..tree.nodes.len() as u32 {
            if !tree.is_element(n) || !self.alts.iter().any(|c| matches(tree, n, &c.parts)) {
                continue;
            }
            buf.clear();
            match attribute {
                Some(a) => match tree.attr_raw(n, a) {
                    Some(v) => decode_into(v, &mut buf),
                    None => continue,
                },
                None => tree.text_content(n, &mut buf),
            }
            if found(&buf).is_break() {
                return;
            }
        }
    }
}

fn matches(tree: &Tree<'_>, node: u32, parts: &[(Compound, Comb)]) -> bool {
    let Some(((compound, comb), rest)) = parts.split_first() else {
        return true;
    };
    if !matches_compound(tree, node, compound) {
        return false;
    }
    if rest.is_empty() {
        return true;
    }
    match comb {
        Comb::Child => tree
            .parent(node)
            .is_some_and(|p| tree.is_element(p) && matches(tree, p, rest)),
        Comb::Descendant => {
            let mut p = tree.parent(node);
            while let Some(a) = p {
                if !tree.is_element(a) {
                    return false;
                }
                if matches(tree, a, rest) {
                    return true;
                }
                p = tree.parent(a);
            }
            false
        }
        Comb::Adjacent => tree
            .prev_element(node)
            .is_some_and(|s| matches(tree, s, rest)),
        Comb::Sibling => {
            let mut s = tree.prev_element(node);
            while let Some(x) = s {
                if matches(tree, x, rest) {
                    return true;
                }
                s = tree.prev_element(x);
            }
            false
        }
    }
}

fn decoded<'b>(raw: &'b [u8], scratch: &'b mut Vec<u8>) -> &'b [u8] {
    if memchr::memchr(b'&', raw).is_none() {
        return raw;
    }
    scratch.clear();
    decode_into(raw, scratch);
    scratch
}

fn matches_compound(tree: &Tree<'_>, node: u32, c: &Compound) -> bool {
    if let Some(tag) = &c.tag {
        match tree.element_name(node) {
            Some(n) if n.eq_ignore_ascii_case(tag) => {}
            _ => return false,
        }
    }
    let mut scratch = Vec::new();
    c.conds.iter().all(|cond| match cond {
        Cond::Id(id) => tree
            .attr_raw(node, b"id")
            .is_some_and(|v| decoded(v, &mut scratch) == &id[..]),
        Cond::Class(cls) => tree.attr_raw(node, b"class").is_some_and(|v| {
            decoded(v, &mut scratch)
                .split(|c| c.is_ascii_whitespace())
                .any(|w| w == &cls[..])
        }),
        Cond::Attr {
            name,
            op,
            value,
            ci,
        } => {
            let Some(raw) = tree.attr_raw(node, name) else {
                return false;
            };
            let v = decoded(raw, &mut scratch);
            let eq = |a: &[u8], b: &[u8]| {
                if *ci {
                    a.eq_ignore_ascii_case(b)
                } else {
                    a == b
                }
            };
            let value = &value[..];
            match op {
                Op::Exists => true,
                Op::Eq => eq(v, value),
                Op::Word => {
                    !value.is_empty() && v.split(|c| c.is_ascii_whitespace()).any(|w| eq(w, value))
                }
                Op::Dash => {
                    eq(v, value)
                        || (v.len() > value.len()
                            && eq(&v[..value.len()], value)
                            && v[value.len()] == b'-')
                }
                Op::Prefix => {
                    !value.is_empty() && v.len() >= value.len() && eq(&v[..value.len()], value)
                }
                Op::Suffix => {
                    !value.is_empty()
                        && v.len() >= value.len()
                        && eq(&v[v.len() - value.len()..], value)
                }
                Op::Contains => {
                    !value.is_empty()
                        && if *ci {
                            v.to_ascii_lowercase()
                                .windows(value.len())
                                .any(|w| w.eq_ignore_ascii_case(value))
                        } else {
                            memchr::memmem::find(v, value).is_some()
                        }
                }
            }
        }
        Cond::Nth {
            a,
            b,
            from_end,
            of_type,
        } => {
            let name = tree.element_name(node).unwrap_or(b"");
            let same = |s: u32| {
                !*of_type
                    || tree
                        .element_name(s)
                        .is_some_and(|n| n.eq_ignore_ascii_case(name))
            };
            let mut k: i64 = 1;
            let mut s = if *from_end {
                tree.next_element(node)
            } else {
                tree.prev_element(node)
            };
            while let Some(x) = s {
                if same(x) {
                    k += 1;
                }
                s = if *from_end {
                    tree.next_element(x)
                } else {
                    tree.prev_element(x)
                };
            }
            if *a == 0 {
                k == *b
            } else {
                let d = k - b;
                d % a == 0 && d / a >= 0
            }
        }
        Cond::Empty => {
            let n = &tree.nodes[node as usize];
            n.end == node + 1
        }
        Cond::Not(inner) => !matches_compound(tree, node, inner),
    })
}
