//! `steps:` → [`Step`]s: requests (one method key), `think`, and the flow steps (`loop`,
//! `group`, `if`, `once`, `random`, in flow.rs); metric names, check names.

use super::url::split_url;
use super::{to_template, Ctx, Fields, Part};
use crate::error::{did_you_mean, one_of, PlanError};
use crate::units::{self, show_duration};
use crate::yaml::{Kind, Node};
use std::time::Duration;

use crate::{
    Check, CheckInfo, Extract, MetricKind, OnFailure, RequestStep, Step, StepInfo, Template,
};

const METHODS: [&str; 7] = ["get", "post", "put", "patch", "delete", "head", "options"];
pub(super) const REQUEST_KEYS: [&str; 23] = [
    "get",
    "post",
    "put",
    "patch",
    "delete",
    "head",
    "options",
    // Any other method: `{ method: PURGE, path: /cache/1 }`.
    "method",
    "path",
    "name",
    "headers",
    "body",
    "body_file",
    "body_template",
    "form",
    "multipart",
    "query",
    "auth",
    "timeout",
    "expect_status",
    "extract",
    "check",
    "on_failure",
];
/// Keys that start a step other than a request.
pub(super) const FLOW_KEYS: [&str; 6] = ["think", "loop", "group", "if", "once", "random"];
pub(super) const MAX_DEPTH: usize = 8;
/// The steps onrush-plan holds, for hints; [`Ctx::step_example`] adds each protocol's.
const STEP_EXAMPLE: &str = "a step is `{ get: /path }` (or post, put, patch, delete, head, options), `{ think: 1s }`, `{ loop: { count: 3, steps: [...] } }`, `{ group: { name, steps } }`, `{ if: { var, equals }, then: [...] }`, `{ once: [...] }`, `{ random: [{ weight, steps }] }`";

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
        if !self.grammars.is_empty() {
            let keys: Vec<String> = entries.iter().map(|(k, _)| key_text(k)).collect();
            if let Some(grammar) = self.custom_grammar(&keys) {
                return self.custom(grammar, node, path, m);
            }
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
        for (k, _) in entries {
            let key = key_text(k);
            if !REQUEST_KEYS.contains(&key.as_str()) {
                let field = format!("{path}.{key}");
                let lower = key.to_ascii_lowercase();
                if METHODS.contains(&lower.as_str()) {
                    return Err(self
                        .err(
                            k,
                            &field,
                            format!("unknown key `{key}`; method keys are lower case"),
                        )
                        .with_hint(format!("write `{lower}:`")));
                }
                if matches!(lower.as_str(), "url" | "uri")
                    || strsim::damerau_levenshtein(&lower, "method") <= 2
                {
                    return Err(self
                        .err(k, &field, format!("unknown key `{key}`; expected the method as the key: {}", one_of(&METHODS)))
                        .with_hint("write the method and the path together, e.g. `- { post: /echo, body: \"...\" }`, or `- { method: PURGE, path: /cache/1 }` for another method"));
                }
                let all: Vec<&str> = REQUEST_KEYS
                    .iter()
                    .chain(FLOW_KEYS.iter())
                    .copied()
                    .chain(self.grammars.iter().map(|g| g.key()))
                    .collect();
                let first = entries
                    .first()
                    .is_some_and(|(first, _)| std::ptr::eq(first, k));
                if first && did_you_mean(&key, all.iter().copied()).is_none() {
                    // The step's first key names no step kind this build knows and is no typo
                    // of one: most likely a protocol of a binary built with it.
                    return Err(self
                        .err(k, &field, format!("unknown step `{key}`; expected a step key: {}", one_of(&all)))
                        .with_hint(format!("a request step starts with its protocol's key (`get:`, `tcp:`, `grpc:` ...); `{key}:` is no step of this build of onrush: a protocol onrush does not ship runs in a binary built with it (docs/extending.md)")));
                }
                return Err(self.unknown_key(k, &field, &key, &all));
            }
        }
        let f = self.map(node, path, &REQUEST_KEYS)?;
        let methods: Vec<&str> = f.keys().filter(|k| METHODS.contains(k)).collect();
        if f.get("method").is_some() || f.get("path").is_some() {
            return self.any_method(&f, node, path, &methods, base, m);
        }
        match methods.as_slice() {
            [] => Err(self.err(node, path, format!("the step has no method key; expected one of {}, or `think` / `loop`", one_of(&METHODS))).with_hint(self.step_example())),
            [key] => Ok(Step::Request(self.request(
                &f,
                key,
                &key.to_ascii_uppercase(),
                base,
                m,
            )?)),
            [first, second, ..] => Err(self
                .err(f.key(second).expect("present"), &f.child(second), format!("a second method key (`{first}` and `{second}`); expected exactly one per step"))
                .with_hint("make each request its own step: `- { get: /a }` then `- { post: /b }`")),
        }
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

    /// `{ method: TOKEN, path: ... }`: a request with any method (JMeter and k6 allow any token:
    /// PURGE, PROPFIND, a house verb), sent exactly as written.
    fn any_method(
        &self,
        f: &Fields,
        node: &Node,
        path: &str,
        method_keys: &[&str],
        base: &str,
        m: &mut Build,
    ) -> Result<Step, PlanError> {
        let example = "write `- { method: PURGE, path: /cache/1 }`, or `- { get: /x }` for a method with its own key";
        if let Some(key) = method_keys.first() {
            return Err(self
                .err(
                    f.key(key).expect("present"),
                    &f.child(key),
                    format!(
                        "`{key}:` beside `method:`/`path:`; expected one way to give the method"
                    ),
                )
                .with_hint(example));
        }
        let Some(method_node) = f.get("method") else {
            return Err(self
                .err(node, path, "`path:` without `method:`; expected the method")
                .with_hint(example));
        };
        let method = self.string(method_node, &f.child("method"))?;
        if method.is_empty() || !method.bytes().all(is_tchar) {
            return Err(self
                .err(
                    method_node,
                    &f.child("method"),
                    format!("`{method}` is not an HTTP method; expected a token of letters, digits and !#$%&'*+-.^_`|~"),
                )
                .with_hint("e.g. `method: PURGE`"));
        }
        if f.get("path").is_none() {
            return Err(self
                .err(node, path, format!("`method: {method}` without `path:`; expected the path or URL to send it to"))
                .with_hint(example));
        }
        Ok(Step::Request(self.request(f, "path", &method, base, m)?))
    }

    /// A request step whose path (or URL) is under `key`, sent with `method`.
    fn request(
        &self,
        f: &Fields,
        key: &str,
        method: &str,
        base: &str,
        m: &mut Build,
    ) -> Result<RequestStep, PlanError> {
        let path_field = f.child(key);
        let node = f.get(key).expect("present");
        if node.is_null() {
            return Err(self
                .err(
                    node,
                    &path_field,
                    "missing value; expected a path such as `/` or a URL",
                )
                .with_hint(format!("e.g. `{key}: /`")));
        }
        let raw = node.as_scalar().map_or(String::new(), |s| s.text.clone());
        let (target, path) = self.request_path(node, &path_field, &raw, base)?;

        let name = match f.get("name") {
            Some(n) => {
                let name = self.string(n, &f.child("name"))?;
                if name.trim().is_empty() {
                    return Err(self
                        .err(n, &f.child("name"), "empty name; expected a metric name")
                        .with_hint("remove `name:` to get the default `METHOD /path`"));
                }
                name
            }
            None => format!("{method} {raw}"),
        };

        let headers = match f.get("headers") {
            Some(h) => self.headers(h, &f.child("headers"))?,
            None => Vec::new(),
        };

        let body = self.request_body(f)?;
        let mut headers = headers;
        if let Some(a) = f.get("auth") {
            if headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
            {
                return Err(self
                    .err(
                        a,
                        &f.child("auth"),
                        "`auth` and an `Authorization` header are both given; expected one of them",
                    )
                    .with_hint("remove the Authorization header, `auth:` writes it"));
            }
            headers.push(("Authorization".to_string(), self.auth(a, &f.child("auth"))?));
        }
        let query = match f.get("query") {
            Some(q) => self.pairs(q, &f.child("query"), "query parameter")?,
            None => Vec::new(),
        };

        let timeout = self.step_timeout(f)?;
        let expect_status = match f.get("expect_status") {
            Some(s) => Some(self.statuses(s, &f.child("expect_status"))?),
            None => None,
        };
        let metric = m.id(name);
        let (extract, checks, on_failure) = self.step_outcome(f, metric, m)?;
        Ok(RequestStep {
            metric,
            method: method.to_string(),
            target,
            path,
            headers,
            body,
            timeout,
            expect_status,
            query,
            extract,
            checks,
            on_failure,
        })
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

    /// The path template of a request, and its own target when the step gives an absolute URL.
    fn request_path(
        &self,
        node: &Node,
        field: &str,
        raw: &str,
        base: &str,
    ) -> Result<(Option<crate::TargetUrl>, Template), PlanError> {
        let mut parts = self.expand(node, field)?;
        let lead = match parts.first() {
            Some(Part::Lit(l)) => l.clone(),
            _ => String::new(),
        };
        let mut target = None;
        if lead.contains("://") {
            let after = lead.find("://").map_or(0, |i| i + 3);
            let end = lead[after..].find(['/', '?', '#']).map(|i| after + i);
            let end = match end {
                Some(e) => e,
                None if parts.len() > 1 => {
                    return Err(self.err(node, field, "the host of a step URL uses `${vu}` or `${iteration}`; expected a fixed host").with_hint("only the path, query, headers and body can change per request"));
                }
                None => lead.len(),
            };
            let (url, _) = split_url(&lead[..end])
                .map_err(|e| self.err(node, field, e.message).with_hint(e.hint))?;
            target = Some(url);
            let rest = &lead[end..];
            let rest = if rest.is_empty() || rest.starts_with('?') {
                format!("/{rest}")
            } else {
                rest.to_string()
            };
            parts[0] = Part::Lit(rest);
        } else if self.no_target {
            return Err(self
                .err(
                    node,
                    field,
                    format!(
                        "{:?} is a path, and the plan has no `target:` to send it to; expected a full URL",
                        raw.trim()
                    ),
                )
                .with_hint("add `target: http://host:port` at the top of the plan, or write the step's URL in full: `get: http://host:port/path`"));
        } else if matches!(parts.first(), Some(Part::Var { .. } | Part::Func(_))) {
            // The path starts with a runtime variable (`get: "${next_page}"`): its value must
            // be a path; the target's base path still goes in front.
            if !base.is_empty() {
                parts.insert(0, Part::Lit(base.to_string()));
            }
        } else if !lead.starts_with('/') {
            let shown = raw.trim();
            let hint = if shown.contains('.') && !shown.contains(' ') {
                format!("write `/{shown}` for a path, or a full URL `http://{shown}`")
            } else {
                format!("write `/{}`", shown.trim_start_matches('/'))
            };
            return Err(self.err(node, field, format!("the path {shown:?} does not start with `/`; expected `/path` or `http://host:port/path`")).with_hint(hint));
        } else if !base.is_empty() {
            parts[0] = Part::Lit(format!("{base}{lead}"));
        }
        for p in &parts {
            if let Part::Lit(l) = p {
                if let Some(c) = l
                    .chars()
                    .find(|c| c.is_whitespace() || c.is_control() || !c.is_ascii())
                {
                    return Err(self
                        .err(node, field, format!("the path contains {c:?}; expected a URL path without spaces or non-ASCII characters"))
                        .with_hint("percent-encode it, e.g. a space as `%20`"));
                }
                if l.contains('#') {
                    return Err(self
                        .err(
                            node,
                            field,
                            "the path contains a fragment (`#`); expected a path and query",
                        )
                        .with_hint("fragments are never sent to servers; remove the `#...` part"));
                }
            }
        }
        Ok((target, to_template(parts, raw)))
    }

    fn statuses(&self, node: &Node, path: &str) -> Result<Vec<u16>, PlanError> {
        let hint = "HTTP status codes are 100..599, e.g. `expect_status: [200, 201]`";
        match &node.kind {
            Kind::Seq(items) if items.is_empty() => Err(self
                .err(
                    node,
                    path,
                    "the list is empty; expected at least one status code",
                )
                .with_hint(hint)),
            Kind::Seq(items) => items
                .iter()
                .enumerate()
                .map(|(i, s)| Ok(self.uint(s, &format!("{path}[{i}]"), 100, 599, hint)? as u16))
                .collect(),
            Kind::Scalar(_) => Ok(vec![self.uint(node, path, 100, 599, hint)? as u16]),
            Kind::Map(_) => Err(self
                .err(
                    node,
                    path,
                    "expected a status code or a list of them, found a mapping",
                )
                .with_hint(hint)),
        }
    }
}

/// RFC 9110 `tchar`: what a method token may hold.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}
