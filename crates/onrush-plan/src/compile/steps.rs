//! `steps:` → [`Step`]s: a protocol's step (by its grammar, custom.rs), `think`, and the flow steps (`loop`,
//! `group`, `if`, `once`, `random`, in flow.rs); metric names, check names.

use super::{to_template, Ctx, Fields, Part};
use crate::error::{did_you_mean, one_of, PlanError};
use crate::grammar::COMMON_KEYS;
use crate::units::{self, show_duration};
use crate::yaml::{Kind, Node};
use std::time::Duration;

use crate::{Check, CheckInfo, Extract, MetricKind, OnFailure, Step, StepInfo, Template};

/// Keys that start a step other than a request.
pub(super) const FLOW_KEYS: [&str; 6] = ["think", "loop", "group", "if", "once", "random"];
pub(super) const MAX_DEPTH: usize = 8;
/// The steps onrush-plan holds, for hints; [`Ctx::step_example`] adds each protocol's.
const STEP_EXAMPLE: &str = "a step is `{ think: 1s }`, `{ loop: { count: 3, steps: [...] } }`, `{ group: { name, steps } }`, `{ if: { var, equals }, then: [...] }`, `{ once: [...] }`, `{ random: [{ weight, steps }] }`";

/// What a scenario's steps declare: metric names (deduplicated, first-appearance order),
/// check names, `once` blocks.
pub(super) struct Build {
    pub infos: Vec<StepInfo>,
    pub checks: Vec<CheckInfo>,
    pub onces: usize,
}

impl Build {
    pub fn id(&mut self, name: String) -> usize {
        self.id_of(name, MetricKind::Request)
    }

    pub fn id_of(&mut self, name: String, kind: MetricKind) -> usize {
        match self.infos.iter().position(|m| m.name == name) {
            Some(i) => i,
            None => {
                self.infos.push(StepInfo { name, kind });
                self.infos.len() - 1
            }
        }
    }

    /// The id of check `name` of metric `metric` (same name on the same metric: same check).
    pub fn check(&mut self, name: String, metric: usize) -> usize {
        match self
            .checks
            .iter()
            .position(|c| c.name == name && c.metric == metric)
        {
            Some(i) => i,
            None => {
                self.checks.push(CheckInfo { name, metric });
                self.checks.len() - 1
            }
        }
    }
}

impl Ctx<'_> {
    /// Every kind of step this build knows, for a hint: onrush-plan's own, then each
    /// protocol's example, as its grammar writes it.
    fn step_example(&self) -> String {
        let mut text = STEP_EXAMPLE.to_string();
        let examples: Vec<&str> = self.grammars.iter().map(|g| g.example()).collect();
        for (i, example) in examples.iter().enumerate() {
            text.push_str(if i + 1 == examples.len() {
                " or `"
            } else {
                ", `"
            });
            text.push_str(example);
            text.push('`');
        }
        text
    }

    pub(super) fn scenario_steps(
        &self,
        node: &Node,
        path: &str,
        base_path: &str,
    ) -> Result<(Vec<Step>, Build), PlanError> {
        let mut build = Build {
            infos: Vec::new(),
            checks: Vec::new(),
            onces: 0,
        };
        // What grammars remembered of another scenario's steps (or phase's) is not this one's.
        self.scenario_memory.borrow_mut().clear();
        let steps = self.steps(node, path, base_path, &mut build, 0)?;
        Ok((steps, build))
    }

    pub(super) fn steps(
        &self,
        node: &Node,
        path: &str,
        base: &str,
        m: &mut Build,
        depth: usize,
    ) -> Result<Vec<Step>, PlanError> {
        let items = match &node.kind {
            Kind::Seq(items) if !items.is_empty() => items,
            Kind::Seq(_) => {
                return Err(self
                    .err(node, path, "the list is empty; expected at least one step")
                    .with_hint("add e.g. `- { get: / }`"))
            }
            _ if node.is_null() => {
                return Err(self
                    .err(node, path, "missing value; expected a list of steps")
                    .with_hint("add e.g. `- { get: / }`"))
            }
            _ => {
                return Err(self
                    .err(
                        node,
                        path,
                        format!("expected a list of steps, found {}", node.describe()),
                    )
                    .with_hint("write each step as a list item: `- { get: / }`"))
            }
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| self.step(item, &format!("{path}[{i}]"), base, m, depth))
            .collect()
    }

    fn step(
        &self,
        node: &Node,
        path: &str,
        base: &str,
        m: &mut Build,
        depth: usize,
    ) -> Result<Step, PlanError> {
        let Kind::Map(entries) = &node.kind else {
            let hint = match node.as_scalar() {
                Some(s) if s.text.starts_with('/') => format!("write `- {{ get: {} }}`", s.text),
                _ => self.step_example(),
            };
            return Err(self
                .err(
                    node,
                    path,
                    format!("expected a step (a mapping), found {}", node.describe()),
                )
                .with_hint(hint));
        };
        let key_text = |k: &Node| k.as_scalar().map_or(String::new(), |s| s.text.clone());
        let keys: Vec<String> = entries.iter().map(|(k, _)| key_text(k)).collect();
        if let Some(grammar) = self.custom_grammar(&keys) {
            return self.custom(grammar, node, path, base, m);
        }
        if entries.iter().any(|(k, _)| key_text(k) == "script") {
            return self.script(node, path, m);
        }
        if entries.iter().any(|(k, _)| key_text(k) == "think") {
            let f = self.only(node, path, "think")?;
            return self.think(f.get("think").expect("present"), &f.child("think"));
        }
        if let Some(flow) = entries
            .iter()
            .map(|(k, _)| key_text(k))
            .find(|k| FLOW_KEYS.contains(&k.as_str()))
        {
            if depth >= MAX_DEPTH {
                return Err(self.err(
                    node,
                    path,
                    format!("steps are nested more than {MAX_DEPTH} deep; expected fewer levels"),
                ));
            }
            return self.flow(node, path, &flow, base, m, depth);
        }
        // No step key: explain the first key that no step takes, or say what is missing.
        let step_keys: Vec<&str> = FLOW_KEYS
            .iter()
            .copied()
            .chain(
                self.grammars
                    .iter()
                    .flat_map(|g| std::iter::once(g.key()).chain(g.aliases().iter().copied())),
            )
            .collect();
        let owner = |key: &str| self.grammars.iter().find(|g| g.keys().contains(&key));
        let known = |key: &str| COMMON_KEYS.contains(&key) || owner(key).is_some();
        for (i, (k, _)) in entries.iter().enumerate() {
            let key = key_text(k);
            if known(&key) {
                continue;
            }
            let field = format!("{path}.{key}");
            if let Some((message, hint)) =
                self.grammars.iter().find_map(|g| g.explain_unknown(&key))
            {
                return Err(self.err(k, &field, message).with_hint(hint));
            }
            let all: Vec<&str> = step_keys
                .iter()
                .copied()
                .chain(self.grammars.iter().flat_map(|g| g.keys().iter().copied()))
                .chain(COMMON_KEYS)
                .collect();
            if i == 0 && did_you_mean(&key, all.iter().copied()).is_none() {
                // The step's first key names no step kind this build knows and is no typo
                // of one: most likely a protocol of a binary built with it.
                return Err(self
                    .err(k, &field, format!("unknown step `{key}`; expected a step key: {}", one_of(&step_keys)))
                    .with_hint(format!("a request step starts with its protocol's key (`get:`, `tcp:`, `grpc:` ...); `{key}:` is no step of this build of onrush: a protocol onrush does not ship runs in a binary built with it (docs/extending.md)")));
            }
            // The message lists the keys that start a step (the others belong inside one);
            // the hint is the nearest of any key, e.g. `headrs` → `headers`.
            if did_you_mean(&key, step_keys.iter().copied()).is_some() {
                return Err(self.unknown_key(k, &field, &key, &step_keys));
            }
            let near =
                did_you_mean(&key, all.iter().copied()).map(|s| format!("did you mean `{s}`?"));
            return Err(self
                .err(
                    k,
                    &field,
                    format!(
                        "unknown key `{key}`; expected a step key: {}",
                        one_of(&step_keys)
                    ),
                )
                .with_opt_hint(near));
        }
        // Every key belongs to some step, but none starts one (`{ headers: ..., body: ... }`).
        let first = entries
            .first()
            .map(|(k, _)| key_text(k))
            .unwrap_or_default();
        let what = match owner(&first) {
            Some(g) => {
                let mut keys = vec![g.key()];
                keys.extend(g.aliases());
                format!("the step has no step key (`{first}` belongs in a step of {}); expected one of {}", one_of(&keys), one_of(&step_keys))
            }
            _ => format!(
                "the step has no step key; expected one of {}",
                one_of(&step_keys)
            ),
        };
        Err(self.err(node, path, what).with_hint(self.step_example()))
    }

    /// A step mapping that may hold only `key`.
    pub(super) fn only<'n>(
        &self,
        node: &'n Node,
        path: &str,
        key: &str,
    ) -> Result<Fields<'n>, PlanError> {
        if let Kind::Map(entries) = &node.kind {
            for (k, _) in entries {
                let other = k.as_scalar().map_or("", |s| s.text.as_str());
                if other != key {
                    return Err(self
                        .err(k, &format!("{path}.{other}"), format!("unknown key `{other}` in a `{key}` step; expected only `{key}`"))
                        .with_hint(format!("a `{key}` step has only the `{key}:` key; put other keys in their own steps")));
                }
            }
        }
        self.map(node, path, &[key])
    }

    /// `script: NAME` or `script: CODE`, with an optional `name:` for its metric.
    fn script(&self, node: &Node, path: &str, m: &mut Build) -> Result<Step, PlanError> {
        let f = self.map(node, path, &["script", "name"])?;
        let n = f.get("script").expect("present");
        let (func, shown) = self.script_step(n, &f.child("script"))?;
        let name = match f.get("name") {
            Some(n) => self.string(n, &f.child("name"))?,
            None => format!("script {shown}"),
        };
        let metric = m.id_of(name, crate::MetricKind::Group);
        Ok(Step::Script { metric, func })
    }

    fn think(&self, node: &Node, path: &str) -> Result<Step, PlanError> {
        let text = self.string(node, path)?;
        let hint = |e: units::UnitError| {
            self.err(node, path, e.message).with_hint(format!(
                "{}; a think time is `500ms` or a range `1s..3s`",
                e.hint
            ))
        };
        let (min, max) = match text.split_once("..") {
            Some((a, b)) => (
                units::parse_duration(a).map_err(hint)?,
                units::parse_duration(b).map_err(hint)?,
            ),
            None => {
                let d = units::parse_duration(&text).map_err(hint)?;
                (d, d)
            }
        };
        if min > max {
            return Err(self
                .err(
                    node,
                    path,
                    format!(
                        "the range {}..{} ends before it starts; expected min..max",
                        show_duration(min),
                        show_duration(max)
                    ),
                )
                .with_hint(format!(
                    "write `{}..{}`",
                    show_duration(max),
                    show_duration(min)
                )));
        }
        Ok(Step::Think { min, max })
    }

    /// A request step's `timeout:` (of any protocol): a positive duration, or none.
    pub(super) fn step_timeout(&self, f: &Fields) -> Result<Option<Duration>, PlanError> {
        let Some(t) = f.get("timeout") else {
            return Ok(None);
        };
        let d = self.duration(t, &f.child("timeout"))?;
        if d.is_zero() {
            return Err(self
                .err(
                    t,
                    &f.child("timeout"),
                    "timeout is 0; expected a positive duration",
                )
                .with_hint("e.g. `timeout: 2s`"));
        }
        Ok(Some(d))
    }

    /// What a request step (of any protocol) does with its response: `extract:`, `check:` and
    /// `on_failure:` (default: the scenario's).
    pub(super) fn step_outcome(
        &self,
        f: &Fields,
        metric: usize,
        m: &mut Build,
    ) -> Result<(Vec<Extract>, Vec<Check>, OnFailure), PlanError> {
        let extract = match f.get("extract") {
            Some(e) => self.extract(e, &f.child("extract"), metric, m)?,
            None => Vec::new(),
        };
        let checks = match f.get("check") {
            Some(c) => self.checks(c, &f.child("check"), metric, m)?,
            None => Vec::new(),
        };
        let on_failure = match f.get("on_failure") {
            Some(o) => self.on_failure(o, &f.child("on_failure"))?,
            None => self.on_failure_default.get(),
        };
        Ok((extract, checks, on_failure))
    }

    pub(crate) fn headers(
        &self,
        node: &Node,
        path: &str,
    ) -> Result<Vec<(String, Template)>, PlanError> {
        let entries: &[(Node, Node)] = match &node.kind {
            Kind::Map(e) => e,
            _ if node.is_null() => &[],
            _ => {
                return Err(self
                    .err(
                        node,
                        path,
                        format!(
                            "expected a mapping of header names to values, found {}",
                            node.describe()
                        ),
                    )
                    .with_hint("e.g. `headers: { Accept: application/json }`"))
            }
        };
        let mut out = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let raw_name = &k.as_scalar().expect("keys are scalars").text;
            let field = format!("{path}.{raw_name}");
            let name = self.string(k, &field)?;
            let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
            if name.is_empty() || !name.chars().all(token) {
                return Err(self
                    .err(
                        k,
                        &field,
                        format!(
                            "{name:?} is not a valid header name; expected letters, digits and `-`"
                        ),
                    )
                    .with_hint("e.g. `Content-Type`"));
            }
            let lower = name.to_ascii_lowercase();
            if lower == "content-length" || lower == "transfer-encoding" {
                return Err(self
                    .err(
                        k,
                        &field,
                        format!("`{name}` is set by onrush from the body; expected other headers"),
                    )
                    .with_hint("remove this header"));
            }
            if v.is_null() {
                return Err(self
                    .err(v, &field, "missing value; expected the header value")
                    .with_hint(format!(
                        "e.g. `{name}: value` (an empty value is written `{name}: \"\"`)"
                    )));
            }
            let parts = self.expand(v, &field)?;
            for p in &parts {
                if let Part::Lit(l) = p {
                    if l.contains(['\r', '\n', '\0']) {
                        return Err(self.err(v, &field, "the header value contains a line break; expected one line").with_hint("header values cannot span lines; use a quoted string without `\\n`"));
                    }
                }
            }
            out.push((
                name,
                to_template(parts, &v.as_scalar().expect("expanded").text),
            ));
        }
        Ok(out)
    }
}
