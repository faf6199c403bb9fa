//! `${...}` templates.
//!
//! At plan load, plan variables and environment variables are substituted; only the per-request
//! values `${vu}` and `${iteration}` remain, as slots. Rendering appends literal bytes and
//! formatted numbers to a caller-owned buffer: no allocation when the buffer has capacity.

use std::fmt;

/// Per-request values a [`Template`] can refer to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RenderContext {
    /// 1-based virtual-user number (`${vu}`).
    pub vu: u64,
    /// 0-based iteration number of this VU (`${iteration}`).
    pub iteration: u64,
}

/// Names of the built-in per-request values.
pub(crate) const BUILTINS: [&str; 2] = ["vu", "iteration"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seg {
    /// Range into `Template::bytes`.
    Lit {
        start: u32,
        end: u32,
    },
    Vu,
    Iteration,
}

/// A `${...}` template compiled once at plan load; plan vars and environment are already
/// substituted, only per-request values (vu, iteration) remain as slots.
#[derive(Clone, PartialEq, Eq)]
pub struct Template {
    source: String,
    /// All literal parts, concatenated.
    bytes: Box<[u8]>,
    segs: Box<[Seg]>,
}

impl Template {
    /// A template without slots that renders to `text`.
    pub fn constant(text: &str) -> Template {
        let mut b = Builder::default();
        b.literal(text);
        b.finish(text.to_string())
    }

    /// Appends the rendered template to `out`. Does not allocate when `out` has the capacity.
    #[inline]
    pub fn render(&self, ctx: &RenderContext, out: &mut Vec<u8>) {
        for seg in self.segs.iter() {
            match *seg {
                Seg::Lit { start, end } => {
                    out.extend_from_slice(&self.bytes[start as usize..end as usize])
                }
                Seg::Vu => out.extend_from_slice(itoa::Buffer::new().format(ctx.vu).as_bytes()),
                Seg::Iteration => {
                    out.extend_from_slice(itoa::Buffer::new().format(ctx.iteration).as_bytes())
                }
            }
        }
    }

    /// Renders into a new vector (convenience; the hot path uses [`Template::render`]).
    pub fn render_to_vec(&self, ctx: &RenderContext) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.max_len_hint());
        self.render(ctx, &mut v);
        v
    }

    /// True when the template has no per-request slot: every render gives the same bytes.
    pub fn is_constant(&self) -> bool {
        self.segs.iter().all(|s| matches!(s, Seg::Lit { .. }))
    }

    /// The rendered bytes of a constant template.
    pub fn constant_bytes(&self) -> Option<&[u8]> {
        self.is_constant().then_some(&self.bytes[..])
    }

    /// True when the template uses `${vu}`.
    pub fn uses_vu(&self) -> bool {
        self.segs.contains(&Seg::Vu)
    }

    /// True when the template uses `${iteration}`.
    pub fn uses_iteration(&self) -> bool {
        self.segs.contains(&Seg::Iteration)
    }

    /// The unrendered text as written in the plan file (before any substitution), for names.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// An upper bound of the rendered length (literals plus 20 digits per slot).
    pub fn max_len_hint(&self) -> usize {
        let slots = self
            .segs
            .iter()
            .filter(|s| !matches!(s, Seg::Lit { .. }))
            .count();
        self.bytes.len() + slots * 20
    }
}

/// Shows the compiled form: substituted literals with `${vu}` / `${iteration}` slots.
impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for seg in self.segs.iter() {
            match *seg {
                Seg::Lit { start, end } => {
                    let lit = String::from_utf8_lossy(&self.bytes[start as usize..end as usize]);
                    f.write_str(&lit.replace("${", "$${"))?
                }
                Seg::Vu => f.write_str("${vu}")?,
                Seg::Iteration => f.write_str("${iteration}")?,
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Template({:?} => \"{}\")", self.source, self)
    }
}

/// Builds a [`Template`] from literal parts and slots.
#[derive(Default)]
pub(crate) struct Builder {
    bytes: Vec<u8>,
    segs: Vec<Seg>,
}

impl Builder {
    pub fn literal(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(s.as_bytes());
        let end = self.bytes.len() as u32;
        match self.segs.last_mut() {
            Some(Seg::Lit { end: e, .. }) if *e == start => *e = end,
            _ => self.segs.push(Seg::Lit { start, end }),
        }
    }

    /// Adds the slot of a built-in; `false` when `name` is not a built-in.
    pub fn builtin(&mut self, name: &str) -> bool {
        match name {
            "vu" => self.segs.push(Seg::Vu),
            "iteration" => self.segs.push(Seg::Iteration),
            _ => return false,
        }
        true
    }

    pub fn finish(self, source: String) -> Template {
        Template {
            source,
            bytes: self.bytes.into_boxed_slice(),
            segs: self.segs.into_boxed_slice(),
        }
    }
}

/// One piece of a template's source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    Lit(String),
    Ref {
        name: String,
        /// `${NAME:-default}`
        default: Option<String>,
        /// Byte offset of the `$` in the text, and length of the whole `${...}`.
        offset: usize,
        len: usize,
    },
}

/// A template syntax problem at a byte offset of the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PieceError {
    pub offset: usize,
    pub message: String,
    pub hint: &'static str,
}

/// Splits `text` into literals and `${...}` references. `$${` is a literal `${`.
pub(crate) fn split(text: &str) -> Result<Vec<Piece>, PieceError> {
    let mut pieces = Vec::new();
    let mut lit = String::new();
    let mut rest = text;
    let mut pos = 0usize;
    while let Some(i) = rest.find('$') {
        lit.push_str(&rest[..i]);
        let after = &rest[i..];
        if let Some(r) = after.strip_prefix("$${") {
            lit.push_str("${");
            rest = r;
            pos += i + 3;
        } else if after.starts_with("${") {
            let offset = pos + i;
            let Some(close) = after.find('}') else {
                return Err(PieceError {
                    offset,
                    message: "`${` is not closed; expected `${name}`".into(),
                    hint: "close it with `}`, or write `$${` for a literal `${`",
                });
            };
            let inner = &after[2..close];
            let (name, default) = match inner.find(":-") {
                Some(j) => (&inner[..j], Some(inner[j + 2..].to_string())),
                None => (inner, None),
            };
            if !is_name(name) {
                let message = if name.is_empty() {
                    "empty `${}`; expected `${name}` or `${NAME:-default}`".to_string()
                } else {
                    format!("`${{{inner}}}` is not a variable reference; expected `${{name}}` or `${{NAME:-default}}` (names use letters, digits and `_`)")
                };
                return Err(PieceError {
                    offset,
                    message,
                    hint: "write `$${` for a literal `${`",
                });
            }
            if !lit.is_empty() {
                pieces.push(Piece::Lit(std::mem::take(&mut lit)));
            }
            pieces.push(Piece::Ref {
                name: name.to_string(),
                default,
                offset,
                len: close + 1,
            });
            rest = &after[close + 1..];
            pos = offset + close + 1;
        } else {
            lit.push('$');
            rest = &after[1..];
            pos += i + 1;
        }
    }
    lit.push_str(rest);
    if !lit.is_empty() {
        pieces.push(Piece::Lit(lit));
    }
    Ok(pieces)
}

/// A variable name: a letter or `_`, then letters, digits, `_`.
pub(crate) fn is_name(s: &str) -> bool {
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
    fn builder_merges_literals() {
        let mut b = Builder::default();
        b.literal("/a");
        b.literal("/b");
        assert!(b.builtin("vu"));
        b.literal("/c");
        let t = b.finish("src".into());
        assert_eq!(t.segs.len(), 3);
        assert_eq!(t.to_string(), "/a/b${vu}/c");
        assert_eq!(
            t.render_to_vec(&RenderContext {
                vu: 12,
                iteration: 0
            }),
            b"/a/b12/c"
        );
    }
}
