//! `${...}` templates.
//!
//! At plan load, plan variables and environment variables are substituted; what remains are
//! per-request slots: the built-ins `${vu}` and `${iteration}`, runtime variables (set by
//! feeders, extractors and loops, see [`Vars`]) and function calls (`${uuid()}`, ...). Rendering
//! appends literal bytes and values to a caller-owned buffer: no allocation when the buffer has
//! capacity (encodings and hashes of per-request values excepted).

use std::fmt;

mod funcs;
mod parse;
pub mod script;
mod vars;

pub use funcs::{url_encode, Func, GlobalCounter, Transform};
pub use parse::{is_name, split, Arg, Piece};
pub use vars::{VarValue, Vars};

/// Per-request values a [`Template`] can refer to.
#[derive(Debug, Clone, Copy, Default)]
pub struct RenderContext<'a> {
    /// 1-based virtual-user number (`${vu}`).
    pub vu: u64,
    /// 0-based iteration number of this VU (`${iteration}`).
    pub iteration: u64,
    /// The VU's runtime variables, counters and random source; `None`: none (templates that
    /// use a runtime variable then fail to render, functions use a fixed random source).
    pub vars: Option<&'a Vars>,
}

impl<'a> RenderContext<'a> {
    pub fn new(vu: u64, iteration: u64, vars: &'a Vars) -> Self {
        RenderContext {
            vu,
            iteration,
            vars: Some(vars),
        }
    }

    fn vars(&self) -> &Vars {
        thread_local! {
            static EMPTY: &'static Vars = Box::leak(Box::default());
        }
        match self.vars {
            Some(v) => v,
            None => EMPTY.with(|e| *e),
        }
    }
}

/// A template referred to a runtime variable that has no value (and no default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unset {
    /// The variable's slot (`onrush_plan::Scenario::vars` names it).
    pub slot: usize,
}

/// Names of the built-in per-request values.
pub const BUILTINS: [&str; 2] = ["vu", "iteration"];

#[derive(Clone, PartialEq, Eq)]
enum Seg {
    /// Range into `Template::bytes`.
    Lit {
        start: u32,
        end: u32,
    },
    Vu,
    Iteration,
    /// A runtime variable.
    Var {
        slot: u32,
        name: Box<str>,
        default: Option<Box<str>>,
    },
    Func(Box<Func>),
}

/// A `${...}` template compiled once at plan load; plan vars and environment are already
/// substituted, only per-request values remain as slots.
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
    /// Fails when a runtime variable it uses has no value (`out` then holds a partial render).
    #[inline]
    pub fn render(&self, ctx: &RenderContext, out: &mut Vec<u8>) -> Result<(), Unset> {
        for seg in self.segs.iter() {
            match seg {
                Seg::Lit { start, end } => {
                    out.extend_from_slice(&self.bytes[*start as usize..*end as usize])
                }
                Seg::Vu => out.extend_from_slice(itoa::Buffer::new().format(ctx.vu).as_bytes()),
                Seg::Iteration => {
                    out.extend_from_slice(itoa::Buffer::new().format(ctx.iteration).as_bytes())
                }
                Seg::Var { slot, default, .. } => {
                    let value = ctx.vars.map(|v| v.get(*slot as usize));
                    match (value, default) {
                        (Some(VarValue::One(v)), _) => out.extend_from_slice(v),
                        (Some(VarValue::Many(list)), _) if !list.is_empty() => {
                            for (i, v) in list.iter().enumerate() {
                                if i > 0 {
                                    out.push(b',');
                                }
                                out.extend_from_slice(v);
                            }
                        }
                        (_, Some(d)) => out.extend_from_slice(d.as_bytes()),
                        _ => {
                            return Err(Unset {
                                slot: *slot as usize,
                            })
                        }
                    }
                }
                Seg::Func(f) => f.render(ctx, out)?,
            }
        }
        Ok(())
    }

    /// Renders into a new vector (convenience; the hot path uses [`Template::render`]).
    pub fn render_to_vec(&self, ctx: &RenderContext) -> Result<Vec<u8>, Unset> {
        let mut v = Vec::with_capacity(self.max_len_hint());
        self.render(ctx, &mut v)?;
        Ok(v)
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

    /// The runtime-variable slots the template reads directly.
    pub fn var_slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.segs.iter().filter_map(|s| match s {
            Seg::Var { slot, .. } => Some(*slot as usize),
            _ => None,
        })
    }

    /// The unrendered text as written in the plan file (before any substitution), for names.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// An estimate of the rendered length (literals plus 20 bytes per slot); an upper bound
    /// when the template uses only `${vu}` and `${iteration}`.
    pub fn max_len_hint(&self) -> usize {
        let slots = self
            .segs
            .iter()
            .filter(|s| !matches!(s, Seg::Lit { .. }))
            .count();
        self.bytes.len() + slots * 20
    }
}

/// Shows the compiled form: substituted literals with per-request slots.
impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for seg in self.segs.iter() {
            match seg {
                Seg::Lit { start, end } => {
                    let lit = String::from_utf8_lossy(&self.bytes[*start as usize..*end as usize]);
                    f.write_str(&lit.replace("${", "$${"))?
                }
                Seg::Vu => f.write_str("${vu}")?,
                Seg::Iteration => f.write_str("${iteration}")?,
                Seg::Var { name, default, .. } => match default {
                    Some(d) => write!(f, "${{{name}:-{d}}}")?,
                    None => write!(f, "${{{name}}}")?,
                },
                Seg::Func(func) => write!(f, "{func}")?,
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
pub struct Builder {
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

    /// Adds a runtime variable slot.
    pub fn var(&mut self, slot: usize, name: &str, default: Option<&str>) {
        self.segs.push(Seg::Var {
            slot: slot as u32,
            name: name.into(),
            default: default.map(Into::into),
        });
    }

    /// Adds a function call.
    pub fn func(&mut self, f: Func) {
        self.segs.push(Seg::Func(Box::new(f)));
    }

    pub fn finish(self, source: String) -> Template {
        Template {
            source,
            bytes: self.bytes.into_boxed_slice(),
            segs: self.segs.into_boxed_slice(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let vars = Vars::default();
        assert_eq!(
            t.render_to_vec(&RenderContext::new(12, 0, &vars)).unwrap(),
            b"/a/b12/c"
        );
    }

    #[test]
    fn runtime_variables_render_or_fail() {
        let mut b = Builder::default();
        b.literal("t=");
        b.var(0, "token", None);
        b.literal("&u=");
        b.var(1, "user", Some("anon"));
        let t = b.finish("src".into());
        let mut vars = Vars::new(2, 0, 7);
        let ctx = RenderContext::new(1, 0, &vars);
        assert_eq!(t.render_to_vec(&ctx), Err(Unset { slot: 0 }));
        vars.set(0, b"abc");
        let ctx = RenderContext::new(1, 0, &vars);
        assert_eq!(t.render_to_vec(&ctx).unwrap(), b"t=abc&u=anon");
        vars.set_value(1, VarValue::Many(vec![b"x".to_vec(), b"y".to_vec()]));
        let ctx = RenderContext::new(1, 0, &vars);
        assert_eq!(t.render_to_vec(&ctx).unwrap(), b"t=abc&u=x,y");
        assert_eq!(t.to_string(), "t=${token}&u=${user:-anon}");
        assert_eq!(t.var_slots().collect::<Vec<_>>(), vec![0, 1]);
    }
}
