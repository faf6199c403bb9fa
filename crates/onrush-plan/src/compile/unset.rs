//! `vars: { NAME: "${unset(\"why\")}" }`: a variable the plan names but cannot give a value,
//! because what set it elsewhere did not come across (a converter marks the variables a JMeter
//! script set). Its value comes from `-D NAME=...` or the environment; without one:
//!
//! - in a per-request field (a request's path, headers, body) it is empty, and the plan keeps
//!   it in [`crate::Plan::unset_vars`] so that `onrush run` warns before it starts (and
//!   `run --strict` refuses to start): requests built with an empty value are usually wrong
//!   in a way no status code explains (every request a 404, exit code 0);
//! - in a field read once at load (a directory, a file, a host, a count) the plan does not
//!   load: such a value cannot become right later, and "pass -D NAME=..." says what to do
//!   better than "./ is not a directory" would.
//!
//! A variable whose value uses an unset one (`url: "/items/${token}"`) is unset through it.

use std::collections::BTreeMap;

use super::Ctx;
use crate::error::PlanError;
use crate::template::{self, Arg, Piece};
use crate::yaml::Node;

/// The name of the marker, written as a call: `${unset("why")}`.
pub(super) const MARKER: &str = "unset";

/// A plan variable that has no value: marked `${unset("why")}` in `vars:` and given neither
/// with `-D` nor in the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsetVar {
    pub name: String,
    /// What the marker says (why the plan has no value for it); may be empty.
    pub reason: String,
}

/// The unset variables of a plan: each name → the marked variable it comes from (itself, or
/// the unset variable its value uses).
pub(super) type UnsetMap = BTreeMap<String, UnsetVar>;

/// `Some(why)` when `pieces` are exactly the marker `${unset()}` / `${unset("why")}`.
pub(super) fn marker(pieces: &[Piece]) -> Option<String> {
    let [Piece::Call { name, args, .. }] = pieces else {
        return None;
    };
    if name != MARKER {
        return None;
    }
    match args.as_slice() {
        [] => Some(String::new()),
        [Arg::Str(text)] => text
            .iter()
            .map(|p| match p {
                Piece::Lit(l) => Some(l.as_str()),
                _ => None,
            })
            .collect::<Option<String>>(),
        _ => None,
    }
}

/// The variables `pieces` refer to, in function arguments too.
pub(super) fn referenced(pieces: &[Piece], out: &mut Vec<String>) {
    for p in pieces {
        match p {
            Piece::Lit(_) => {}
            Piece::Ref { name, .. } => out.push(name.clone()),
            Piece::Call { args, .. } => {
                for a in args {
                    match a {
                        Arg::Num(_) => {}
                        Arg::Str(inner) => referenced(inner, out),
                        Arg::Name { name, .. } => out.push(name.clone()),
                    }
                }
            }
        }
    }
}

impl Ctx<'_> {
    /// Fails when the text of `node`, a value read once at load, uses an unset variable.
    pub(super) fn refuse_unset(&self, node: &Node, path: &str) -> Result<(), PlanError> {
        if self.unset.is_empty() {
            return Ok(());
        }
        let Some(text) = node.as_scalar().map(|s| s.text.as_str()) else {
            return Ok(());
        };
        let Ok(pieces) = template::split(text) else {
            return Ok(());
        };
        let mut names = Vec::new();
        referenced(&pieces, &mut names);
        let Some((name, root)) = names
            .iter()
            .filter(|n| !self.runtime.contains(n))
            .find_map(|n| self.unset.get(n).map(|root| (n, root)))
        else {
            return Ok(());
        };
        let why = if root.reason.is_empty() {
            String::new()
        } else {
            format!(" ({})", root.reason)
        };
        let through = if &root.name == name {
            String::new()
        } else {
            format!(", which uses `${{{}}}`,", root.name)
        };
        Err(self
            .err_at(
                self.inner_span(node, &format!("${{{name}}}")),
                path,
                format!(
                    "`${{{name}}}`{through} has no value{why}; expected a value known when the plan loads"
                ),
            )
            .with_hint(format!(
                "pass -D {0}=VALUE (or export {0}=VALUE): the plan marks it `${{unset(...)}}`",
                root.name
            )))
    }
}
