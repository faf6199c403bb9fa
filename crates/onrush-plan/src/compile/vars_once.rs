//! Function calls in `vars:` values, evaluated once when the plan loads: `run_id: "${uuid()}"`
//! is one UUID for the whole run, `started: "${now_ms()}"` the load time. This is what a value
//! computed in one place means (and what JMeter does with a function in a User Defined
//! Variable); a value that should change per request is written where the request is built.
//!
//! Each process that loads the plan computes its own: the agents of a distributed run differ
//! unless the value is given with `-D`.

use std::collections::BTreeMap;

use super::unset::{self, UnsetMap};
use super::{to_template, Ctx, Part};
use crate::error::PlanError;
use crate::template::{Arg, Func, Piece, RenderContext, Vars};
use crate::yaml::Node;

impl Ctx<'_> {
    /// The value of the call `call` (a piece of the text of `vars.NAME`) computed now. The
    /// variables its arguments use are resolved first (`done`, `unset`: see `resolve_var`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn call_once(
        &self,
        node: &Node,
        field: &str,
        text: &str,
        call: &Piece,
        raw: &BTreeMap<String, &Node>,
        done: &mut BTreeMap<String, String>,
        unset: &mut UnsetMap,
        stack: &mut Vec<String>,
    ) -> Result<String, PlanError> {
        let Piece::Call {
            name,
            args,
            offset,
            len,
        } = call
        else {
            unreachable!("call_once is given calls only");
        };
        let reference = &text[*offset..*offset + *len];
        let mut used = Vec::new();
        unset::referenced(std::slice::from_ref(call), &mut used);
        for r in &used {
            if raw.contains_key(r) {
                self.resolve_var(r, raw, done, unset, stack)?;
            }
            if let Some(root) = unset.get(r) {
                return Err(self
                    .err_at(self.inner_span(node, reference), field, format!("`{reference}` uses `${{{r}}}`, which has no value; expected values known when the plan loads"))
                    .with_hint(format!("pass -D {}=VALUE", root.name)));
            }
        }
        // The arguments with the values of the variables resolved so far written in: `call`
        // itself reads only the environment and its own literals.
        let args: Vec<Arg> = args.iter().map(|a| inline(a, done)).collect();
        let per_request = || {
            self.err_at(self.inner_span(node, reference), field, format!("`{reference}` changes per request; expected a value `vars:` can compute once at load"))
                .with_hint("call it where the value is used, e.g. in a request's path, headers or body (a counter counts per use)")
        };
        let func = match self.call(node, field, text, name, &args, reference)? {
            Part::Lit(value) => return Ok(value),
            Part::Func(Func::Counter { .. } | Func::GlobalCounter(_)) => return Err(per_request()),
            Part::Func(f) => f,
            Part::Slot(_) | Part::Var { .. } => return Err(per_request()),
        };
        let vars = Vars::new(0, 0, seed());
        let mut out = Vec::new();
        to_template(vec![Part::Func(func)], reference)
            .render(&RenderContext::new(0, 0, &vars), &mut out)
            .map_err(|_| per_request())?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }
}

/// `arg` with references to resolved variables replaced by their values.
fn inline(arg: &Arg, done: &BTreeMap<String, String>) -> Arg {
    match arg {
        Arg::Num(_) => arg.clone(),
        Arg::Name { name, .. } => match done.get(name) {
            Some(value) => Arg::Str(vec![Piece::Lit(value.clone())]),
            None => arg.clone(),
        },
        Arg::Str(pieces) => Arg::Str(
            pieces
                .iter()
                .map(|p| match p {
                    Piece::Ref { name, .. } if done.contains_key(name) => {
                        Piece::Lit(done[name].clone())
                    }
                    Piece::Call {
                        name,
                        args,
                        offset,
                        len,
                    } => Piece::Call {
                        name: name.clone(),
                        args: args.iter().map(|a| inline(a, done)).collect(),
                        offset: *offset,
                        len: *len,
                    },
                    other => other.clone(),
                })
                .collect(),
        ),
    }
}

/// A seed that differs between runs (the clock and the process), for `uuid()` and the random
/// functions.
fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}
