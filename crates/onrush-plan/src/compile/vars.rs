//! Plan variables (`vars:`, `-D` overrides, environment) and `${...}` expansion of plan strings.

use std::collections::BTreeMap;

use super::unset::{self, UnsetMap, UnsetVar};
use super::{Ctx, Part, MAX_EXPANDED};
use crate::error::{did_you_mean, PlanError};
use crate::template::{self, Builder, Piece, Template, BUILTINS};
use crate::yaml::{Kind, Node};

impl Ctx<'_> {
    /// Expands `${...}` in a scalar. Per-request values are returned as slots.
    pub fn expand(&self, node: &Node, path: &str) -> Result<Vec<Part>, PlanError> {
        let Some(s) = node.as_scalar() else {
            return Err(self.err(
                node,
                path,
                format!("expected a text value, found {}", node.describe()),
            ));
        };
        let pieces = template::split(&s.text).map_err(|e| {
            self.err_at(self.inner_span(node, &s.text[e.offset..]), path, e.message)
                .with_hint(e.hint)
        })?;
        self.expand_pieces(node, path, &s.text, &pieces)
    }

    /// Expands already split pieces of `text` (the node's text, for error positions).
    pub(super) fn expand_pieces(
        &self,
        node: &Node,
        path: &str,
        text: &str,
        pieces: &[Piece],
    ) -> Result<Vec<Part>, PlanError> {
        let mut parts: Vec<Part> = Vec::new();
        let mut total = 0usize;
        for p in pieces {
            let lit = match p {
                Piece::Lit(l) => l.clone(),
                Piece::Ref {
                    name,
                    default,
                    offset,
                    len,
                } => {
                    if let Some(b) = BUILTINS.iter().find(|b| **b == name) {
                        parts.push(Part::Slot(b));
                        continue;
                    }
                    if let Some(slot) = self.runtime.iter().position(|r| r == name) {
                        parts.push(Part::Var {
                            slot,
                            name: name.clone(),
                            default: default.clone(),
                        });
                        continue;
                    }
                    let reference = &text[*offset..*offset + *len];
                    lookup(&self.vars, self.env, name, default.as_deref()).ok_or_else(|| {
                        let known: Vec<&str> = self
                            .vars
                            .keys()
                            .map(String::as_str)
                            .chain(self.runtime.iter().map(String::as_str))
                            .chain(BUILTINS)
                            .collect();
                        self.unknown_var(node, path, name, reference, &known)
                    })?
                }
                Piece::Call {
                    name,
                    args,
                    offset,
                    len,
                } => {
                    let reference = &text[*offset..*offset + *len];
                    match self.call(node, path, text, name, args, reference)? {
                        Part::Lit(l) => l,
                        other => {
                            parts.push(other);
                            continue;
                        }
                    }
                }
            };
            total += lit.len();
            if total > MAX_EXPANDED {
                return Err(self.err(node, path, format!("the value expands to more than {MAX_EXPANDED} bytes; expected a shorter value")));
            }
            match parts.last_mut() {
                Some(Part::Lit(prev)) => prev.push_str(&lit),
                _ => parts.push(Part::Lit(lit)),
            }
        }
        Ok(parts)
    }

    /// Variable, then environment, then default (used also when the environment value is empty).
    /// `known`: the names to suggest from.
    fn unknown_var(
        &self,
        node: &Node,
        path: &str,
        name: &str,
        reference: &str,
        known: &[&str],
    ) -> PlanError {
        let hint = match did_you_mean(name, known.iter().copied()) {
            Some(s) => format!("did you mean `${{{s}}}`?"),
            None => format!("define it under `vars:`, pass `-D {name}=VALUE`, export the environment variable {name}, or give a default: `${{{name}:-VALUE}}`"),
        };
        self.err_at(self.inner_span(node, reference), path, format!("unknown variable `{reference}`: no plan variable and no environment variable `{name}`; expected a defined variable")).with_hint(hint)
    }

    /// The span of `needle` inside the node's source text (falls back to the whole node).
    pub fn inner_span(&self, node: &Node, needle: &str) -> std::ops::Range<usize> {
        let raw = self.text.get(node.span.clone()).unwrap_or("");
        let probe: String = needle.chars().take_while(|c| *c != '\n').take(40).collect();
        match (!probe.is_empty()).then(|| raw.find(&probe)).flatten() {
            Some(i) => {
                let start = node.span.start + i;
                let len = needle
                    .find('}')
                    .map_or(probe.len(), |j| j + 1)
                    .min(raw.len() - i);
                start..start + len
            }
            None => node.span.clone(),
        }
    }

    /// A text value with variables substituted; `${vu}`/`${iteration}` are not allowed here,
    /// nor variables marked `${unset(...)}` that were given no value.
    pub fn string(&self, node: &Node, path: &str) -> Result<String, PlanError> {
        if node.is_null() {
            return Err(self.err(node, path, "missing value; expected a text value"));
        }
        self.refuse_unset(node, path)?;
        let mut out = String::new();
        for part in self.expand(node, path)? {
            let shown = match part {
                Part::Lit(l) => {
                    out.push_str(&l);
                    continue;
                }
                Part::Slot(name) => format!("${{{name}"),
                Part::Var { name, .. } => format!("${{{name}"),
                Part::Func(f) => f.to_string().chars().take(8).collect(),
            };
            let s = &node.as_scalar().expect("expanded").text;
            let at = s.find(&shown).unwrap_or(0);
            let end = s[at..].find('}').map_or(s.len(), |i| at + i + 1);
            let msg = format!("`{}` is a per-request value; expected it only in a request's path, headers, body or checks", &s[at..end]);
            return Err(self
                .err_at(self.inner_span(node, &s[at..]), path, msg)
                .with_hint(
                "this field is read once when the plan loads; use a plan variable (`vars:`) here",
            ));
        }
        Ok(out)
    }

    /// A per-request template (request path, header values, body).
    pub fn template(&self, node: &Node, path: &str) -> Result<Template, PlanError> {
        let parts = self.expand(node, path)?;
        Ok(to_template(
            parts,
            node.as_scalar().map_or("", |s| s.text.as_str()),
        ))
    }

    /// `vars:` with `-D` overrides applied and `${...}` in values resolved; with the variables
    /// marked `${unset(...)}` that got no value (they are empty in the values).
    pub(super) fn resolve_vars(
        &self,
        node: Option<&Node>,
        overrides: &[(String, String)],
    ) -> Result<(BTreeMap<String, String>, UnsetMap), PlanError> {
        let mut raw: BTreeMap<String, &Node> = BTreeMap::new();
        if let Some(node) = node {
            let entries: &[(Node, Node)] = match &node.kind {
                Kind::Map(e) => e,
                _ if node.is_null() => &[],
                _ => {
                    return Err(self
                        .err(
                            node,
                            "vars",
                            format!(
                                "expected a mapping of names to values, found {}",
                                node.describe()
                            ),
                        )
                        .with_hint("e.g. `vars: { vus: 10, user: alice }`"))
                }
            };
            for (k, v) in entries {
                let name = &k.as_scalar().expect("keys are scalars").text;
                let field = format!("vars.{name}");
                if !template::is_name(name) {
                    return Err(self.err(k, &field, format!("`{name}` is not a valid variable name; expected letters, digits and `_`, not starting with a digit")));
                }
                if BUILTINS.contains(&name.as_str()) {
                    return Err(self.err(k, &field, format!("`{name}` is a built-in per-request value; expected another variable name")).with_hint(format!("`${{{name}}}` is always available in request paths, headers and bodies")));
                }
                if !matches!(v.kind, Kind::Scalar(_)) {
                    return Err(self.err(
                        v,
                        &field,
                        format!("expected a text, number or boolean, found {}", v.describe()),
                    ));
                }
                raw.insert(name.clone(), v);
            }
        }
        let mut done: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in overrides {
            if !template::is_name(name) || BUILTINS.contains(&name.as_str()) {
                return Err(PlanError::plain(self.source, &format!("-D {name}"), format!("`{name}` is not a valid variable name; expected letters, digits and `_`, not `vu` or `iteration`")));
            }
            done.insert(name.clone(), value.clone());
        }
        let names: Vec<String> = raw.keys().cloned().collect();
        let mut unset = UnsetMap::new();
        for name in names {
            let mut stack = Vec::new();
            self.resolve_var(&name, &raw, &mut done, &mut unset, &mut stack)?;
        }
        Ok((done, unset))
    }

    pub(super) fn resolve_var(
        &self,
        name: &str,
        raw: &BTreeMap<String, &Node>,
        done: &mut BTreeMap<String, String>,
        unset: &mut UnsetMap,
        stack: &mut Vec<String>,
    ) -> Result<(), PlanError> {
        if done.contains_key(name) {
            return Ok(());
        }
        let node = raw[name];
        let field = format!("vars.{name}");
        if stack.iter().any(|s| s == name) || stack.len() > 32 {
            stack.push(name.to_string());
            return Err(self.err(
                node,
                &field,
                format!(
                    "variables refer to each other in a cycle ({}); expected values that end",
                    stack.join(" → ")
                ),
            ));
        }
        stack.push(name.to_string());
        let text = &node.as_scalar().expect("checked scalar").text;
        let pieces = template::split(text).map_err(|e| {
            self.err_at(self.inner_span(node, &text[e.offset..]), &field, e.message)
                .with_hint(e.hint)
        })?;
        if let Some(reason) = unset::marker(&pieces) {
            // Not given with -D (that would be in `done` already): the environment, or none.
            let value = (self.env)(name).unwrap_or_default();
            if value.is_empty() {
                let var = UnsetVar {
                    name: name.to_string(),
                    reason,
                };
                unset.insert(name.to_string(), var);
            }
            stack.pop();
            done.insert(name.to_string(), value);
            return Ok(());
        }
        let mut out = String::new();
        for p in pieces {
            match p {
                Piece::Lit(l) => out.push_str(&l),
                call @ Piece::Call { .. } => {
                    let value =
                        self.call_once(node, &field, text, &call, raw, done, unset, stack)?;
                    out.push_str(&value);
                    if out.len() > MAX_EXPANDED {
                        return Err(self.err(node, &field, format!("the value expands to more than {MAX_EXPANDED} bytes; expected a shorter value")));
                    }
                }
                Piece::Ref {
                    name: r,
                    default,
                    offset,
                    len,
                } => {
                    let reference = &text[offset..offset + len];
                    if BUILTINS.contains(&r.as_str()) {
                        return Err(self.err_at(self.inner_span(node, reference), &field, format!("`{reference}` is a per-request value; expected it only in a request's path, headers or body")).with_hint("use it directly in the request, e.g. `get: /users/${vu}`"));
                    }
                    if raw.contains_key(&r) {
                        self.resolve_var(&r, raw, done, unset, stack)?;
                    }
                    if let Some(root) = unset.get(&r).cloned() {
                        unset.insert(name.to_string(), root);
                    }
                    let found =
                        lookup(done, self.env, &r, default.as_deref()).ok_or_else(|| {
                            let known: Vec<&str> = raw.keys().map(String::as_str).collect();
                            self.unknown_var(node, &field, &r, reference, &known)
                        })?;
                    out.push_str(&found);
                    if out.len() > MAX_EXPANDED {
                        return Err(self.err(node, &field, format!("the value expands to more than {MAX_EXPANDED} bytes; expected a shorter value")));
                    }
                }
            }
        }
        stack.pop();
        done.insert(name.to_string(), out);
        Ok(())
    }
}

/// Plan variable, then environment, then default (also used when the environment value is empty).
fn lookup(
    vars: &BTreeMap<String, String>,
    env: &dyn Fn(&str) -> Option<String>,
    name: &str,
    default: Option<&str>,
) -> Option<String> {
    if let Some(v) = vars.get(name) {
        return Some(v.clone());
    }
    match (env(name), default) {
        (Some(v), Some(d)) if v.is_empty() => Some(d.to_string()),
        (Some(v), _) => Some(v),
        (None, d) => d.map(str::to_string),
    }
}

pub(crate) fn to_template(parts: Vec<Part>, source: &str) -> Template {
    let mut b = Builder::default();
    for p in parts {
        match p {
            Part::Lit(l) => b.literal(&l),
            Part::Slot(s) => {
                b.builtin(s);
            }
            Part::Var {
                slot,
                name,
                default,
            } => b.var(slot, &name, default.as_deref()),
            Part::Func(f) => b.func(f),
        }
    }
    b.finish(source.to_string())
}
