//! Node tree → [`Plan`]: structure checks, variables, templates, target, http settings, scenarios.
//!
//! Load models are in `load.rs`, steps in `steps.rs`, URLs in `url.rs`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{did_you_mean, one_of, PlanError};
use crate::template::{self, Builder, Piece, Template, BUILTINS};
use crate::units::{self, UnitError};
use crate::yaml::{self, Kind, Node};
use crate::{ConnectionScope, HttpSettings, Plan, Scenario, Target};

mod load;
mod steps;
mod url;

/// Longest string a template expansion may produce.
const MAX_EXPANDED: usize = 1 << 20;

const PLAN_KEYS: [&str; 4] = ["target", "vars", "http", "scenarios"];
const HTTP_KEYS: [&str; 2] = ["timeout", "connections"];
const SCENARIO_KEYS: [&str; 4] = ["name", "load", "http", "steps"];

pub(crate) fn compile(
    source: &str,
    text: &str,
    base_dir: &Path,
    overrides: &[(String, String)],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Plan, PlanError> {
    let mut cx = Ctx { source, text, base_dir, env, vars: BTreeMap::new() };
    let root = match yaml::parse(text) {
        Ok(Some(root)) if !root.is_null() => root,
        Ok(_) => {
            return Err(PlanError::at(source, text, 0..0, "", "the plan is empty; expected a mapping with `target:` and `scenarios:`")
                .with_hint("start from: target: http://127.0.0.1:8080, then scenarios: a list of { name, load, steps }"))
        }
        Err(e) => return Err(PlanError::at(source, text, e.offset..e.offset + 1, "", e.message).with_opt_hint(e.hint)),
    };
    if !matches!(root.kind, Kind::Map(_)) {
        return Err(cx
            .err(&root, "", format!("the plan is {}; expected a mapping with `target:` and `scenarios:`", root.describe()))
            .with_hint("a plan file starts with keys such as `target: http://127.0.0.1:8080`"));
    }
    let top = cx.map(&root, "", &PLAN_KEYS)?;
    cx.vars = cx.resolve_vars(top.get("vars"), overrides)?;

    let target_node = cx.required(&top, "target", "`target: http://host:port` or `target: builtin`")?;
    let target_text = cx.string(target_node, "target")?;
    let target = if target_text.trim() == "builtin" {
        Target::Builtin
    } else {
        Target::Url(url::parse_target(&cx, target_node, &target_text)?)
    };
    let http = cx.http(top.get("http"), "http", HttpSettings::default())?;

    let scen_node = cx.required(&top, "scenarios", "a list of scenarios")?;
    let Kind::Seq(items) = &scen_node.kind else {
        return Err(cx
            .err(scen_node, "scenarios", format!("expected a list of scenarios, found {}", scen_node.describe()))
            .with_hint("write each scenario as a list item: `- name: ...`"));
    };
    if items.is_empty() {
        return Err(cx
            .err(scen_node, "scenarios", "the list is empty; expected at least one scenario")
            .with_hint("add `- { name: main, load: { vus: 1, iterations: 1 }, steps: [ { get: / } ] }`"));
    }
    let base_path = match &target {
        Target::Url(u) => u.base_path.clone(),
        Target::Builtin => String::new(),
    };
    let mut scenarios: Vec<Scenario> = Vec::with_capacity(items.len());
    let mut names: HashMap<String, usize> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("scenarios[{i}]");
        let f = cx.map(item, &path, &SCENARIO_KEYS)?;
        let name_node = cx.required(&f, "name", "a scenario name")?;
        let name = cx.string(name_node, &f.child("name"))?;
        if name.trim().is_empty() {
            return Err(cx.err(name_node, &f.child("name"), "empty name; expected a scenario name").with_hint("e.g. `name: browse`"));
        }
        if let Some(first) = names.insert(name.clone(), i) {
            return Err(cx
                .err(name_node, &f.child("name"), format!("duplicate scenario name {name:?}; expected names unique in the plan"))
                .with_hint(format!("scenarios[{first}] is already named {name:?}; rename one of them")));
        }
        let load_node = cx.required(&f, "load", "`load: { vus: N, iterations: N }` or `load: { rate: N/s, duration: D, max_vus: N }`")?;
        let load = cx.load(load_node, &f.child("load"))?;
        let scen_http = cx.http(f.get("http"), &f.child("http"), http)?;
        let steps_node = cx.required(&f, "steps", "a list of steps")?;
        let (steps, metrics) = cx.scenario_steps(steps_node, &f.child("steps"), &base_path)?;
        scenarios.push(Scenario { name, load, http: scen_http, steps, metrics });
    }

    let stem = Path::new(source).file_stem().map(|s| s.to_string_lossy().into_owned());
    Ok(Plan {
        source: PathBuf::from(source),
        name: stem.filter(|s| !s.is_empty()).unwrap_or_else(|| "plan".into()),
        target,
        http,
        scenarios,
        vars: cx.vars,
    })
}

pub(crate) struct Ctx<'a> {
    source: &'a str,
    text: &'a str,
    base_dir: &'a Path,
    env: &'a dyn Fn(&str) -> Option<String>,
    /// Final plan variables.
    vars: BTreeMap<String, String>,
}

/// The entries of one mapping, already checked for unknown keys.
pub(crate) struct Fields<'n> {
    node: &'n Node,
    entries: &'n [(Node, Node)],
    path: String,
}

impl<'n> Fields<'n> {
    pub fn get(&self, key: &str) -> Option<&'n Node> {
        self.entry(key).map(|(_, v)| v)
    }
    /// The key node (for errors about the presence of a key).
    pub fn key(&self, key: &str) -> Option<&'n Node> {
        self.entry(key).map(|(k, _)| k)
    }
    fn entry(&self, key: &str) -> Option<&'n (Node, Node)> {
        self.entries.iter().find(|(k, _)| k.as_scalar().is_some_and(|s| s.text == key))
    }
    pub fn child(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }
    pub fn keys(&self) -> impl Iterator<Item = &'n str> {
        self.entries.iter().filter_map(|(k, _)| k.as_scalar().map(|s| s.text.as_str()))
    }
}

/// A `${...}` expansion: literal text and runtime slots.
pub(crate) enum Part {
    Lit(String),
    Slot(&'static str),
}

impl<'a> Ctx<'a> {
    pub fn err(&self, node: &Node, field: &str, message: impl Into<String>) -> PlanError {
        PlanError::at(self.source, self.text, node.span.clone(), field, message)
    }

    pub fn err_at(&self, span: std::ops::Range<usize>, field: &str, message: impl Into<String>) -> PlanError {
        PlanError::at(self.source, self.text, span, field, message)
    }

    pub fn base_dir(&self) -> &Path {
        self.base_dir
    }

    /// Checks that `node` is a mapping (null counts as empty) whose keys are all in `allowed`.
    pub fn map<'n>(&self, node: &'n Node, path: &str, allowed: &[&str]) -> Result<Fields<'n>, PlanError> {
        let entries: &[(Node, Node)] = match &node.kind {
            Kind::Map(e) => e,
            _ if node.is_null() => &[],
            _ => {
                let what = if path.is_empty() { "the plan".to_string() } else { format!("`{}`", last_segment(path)) };
                return Err(self
                    .err(node, path, format!("expected a mapping of {}, found {}", one_of(allowed), node.describe()))
                    .with_hint(format!("{what} takes keys such as `{}: ...`", allowed[0])));
            }
        };
        let fields = Fields { node, entries, path: path.to_string() };
        for (k, _) in entries {
            let key = &k.as_scalar().expect("keys are scalars").text;
            if !allowed.contains(&key.as_str()) {
                return Err(self.unknown_key(k, &fields.child(key), key, allowed));
            }
        }
        Ok(fields)
    }

    pub fn unknown_key(&self, key_node: &Node, field: &str, key: &str, allowed: &[&str]) -> PlanError {
        let hint = did_you_mean(key, allowed.iter().copied()).map(|s| format!("did you mean `{s}`?"));
        self.err(key_node, field, format!("unknown key `{key}`; expected {}", one_of(allowed))).with_opt_hint(hint)
    }

    /// The value of a required key; errors at the mapping when it is missing or empty.
    pub fn required<'n>(&self, f: &Fields<'n>, key: &str, expected: &str) -> Result<&'n Node, PlanError> {
        match f.get(key) {
            Some(v) if !v.is_null() => Ok(v),
            Some(v) => Err(self.err(v, &f.child(key), format!("missing value; expected {expected}"))),
            None => {
                let at = if f.path.is_empty() { "the plan" } else { "this mapping" };
                Err(self.err(f.node, &f.path_or_root(), format!("missing key `{key}`; expected {expected}")).with_hint(format!("add `{key}:` to {at}")))
            }
        }
    }

    /// Expands `${...}` in a scalar. Runtime slots are returned as `Part::Slot`.
    pub fn expand(&self, node: &Node, path: &str) -> Result<Vec<Part>, PlanError> {
        let Some(s) = node.as_scalar() else {
            return Err(self.err(node, path, format!("expected a text value, found {}", node.describe())));
        };
        let pieces = template::split(&s.text).map_err(|e| {
            self.err_at(self.inner_span(node, &s.text[e.offset..]), path, e.message).with_hint(e.hint)
        })?;
        let mut parts: Vec<Part> = Vec::new();
        let mut total = 0usize;
        for p in pieces {
            let lit = match p {
                Piece::Lit(l) => l,
                Piece::Ref { name, default, offset, len } => {
                    if let Some(b) = BUILTINS.iter().find(|b| **b == name) {
                        parts.push(Part::Slot(b));
                        continue;
                    }
                    let reference = &s.text[offset..offset + len];
                    self.lookup(&name, default.as_deref()).ok_or_else(|| self.unknown_var(node, path, &name, reference))?
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
    fn lookup(&self, name: &str, default: Option<&str>) -> Option<String> {
        if let Some(v) = self.vars.get(name) {
            return Some(v.clone());
        }
        match ((self.env)(name), default) {
            (Some(v), Some(d)) if v.is_empty() => Some(d.to_string()),
            (Some(v), _) => Some(v),
            (None, d) => d.map(str::to_string),
        }
    }

    fn unknown_var(&self, node: &Node, path: &str, name: &str, reference: &str) -> PlanError {
        let known: Vec<&str> = self.vars.keys().map(String::as_str).chain(BUILTINS).collect();
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
                let len = needle.find('}').map_or(probe.len(), |j| j + 1).min(raw.len() - i);
                start..start + len
            }
            None => node.span.clone(),
        }
    }

    /// A text value with variables substituted; `${vu}`/`${iteration}` are not allowed here.
    pub fn string(&self, node: &Node, path: &str) -> Result<String, PlanError> {
        if node.is_null() {
            return Err(self.err(node, path, "missing value; expected a text value"));
        }
        let mut out = String::new();
        for part in self.expand(node, path)? {
            match part {
                Part::Lit(l) => out.push_str(&l),
                Part::Slot(name) => {
                    let s = &node.as_scalar().expect("expanded").text;
                    return Err(self
                        .err_at(self.inner_span(node, &s[s.find(&format!("${{{name}")).unwrap_or(0)..]), path, format!("`${{{name}}}` is a per-request value; expected it only in a request's path, headers or body")))
                        .with_hint("this field is read once when the plan loads; use a plan variable (`vars:`) here"));
                }
            }
        }
        Ok(out)
    }

    /// A per-request template (request path, header values, body).
    pub fn template(&self, node: &Node, path: &str) -> Result<Template, PlanError> {
        let parts = self.expand(node, path)?;
        Ok(to_template(parts, node.as_scalar().map_or("", |s| s.text.as_str())))
    }

    /// A whole number in `min..=max`. `what` explains the value for the hint.
    pub fn uint(&self, node: &Node, path: &str, min: u64, max: u64, hint: &str) -> Result<u64, PlanError> {
        let text = self.string(node, path)?;
        let raw = &node.as_scalar().expect("string() checked").text;
        let from = if *raw != text { format!(" (from {raw:?})") } else { String::new() };
        let expected = if min == 0 { "a whole number" } else { "a positive whole number" };
        let t = text.trim().replace('_', "");
        let v: u64 = match t.parse() {
            Ok(v) => v,
            Err(_) if t.parse::<f64>().is_ok_and(|f| f.fract() != 0.0 && f > 0.0) => {
                return Err(self.err(node, path, format!("expected {expected}, found {text}{from}")).with_hint(hint.to_string()))
            }
            Err(_) => return Err(self.err(node, path, format!("expected {expected}, found {:?}{from}", yaml::truncate(&text, 60))).with_hint(hint.to_string())),
        };
        if v < min {
            return Err(self.err(node, path, format!("{v}{from} is too small; expected at least {min}")).with_hint(hint.to_string()));
        }
        if v > max {
            return Err(self.err(node, path, format!("{v}{from} is too large; expected at most {max}")).with_hint(hint.to_string()));
        }
        Ok(v)
    }

    pub fn duration(&self, node: &Node, path: &str) -> Result<Duration, PlanError> {
        let text = self.string(node, path)?;
        units::parse_duration(&text).map_err(|e| self.unit_err(node, path, e))
    }

    pub fn rate(&self, node: &Node, path: &str) -> Result<f64, PlanError> {
        let text = self.string(node, path)?;
        units::parse_rate(&text).map_err(|e| self.unit_err(node, path, e))
    }

    fn unit_err(&self, node: &Node, path: &str, e: UnitError) -> PlanError {
        self.err(node, path, e.message).with_hint(e.hint)
    }

    /// `http:` settings merged over `base`.
    pub fn http(&self, node: Option<&Node>, path: &str, base: HttpSettings) -> Result<HttpSettings, PlanError> {
        let Some(node) = node else { return Ok(base) };
        let f = self.map(node, path, &HTTP_KEYS)?;
        let mut out = base;
        if let Some(t) = f.get("timeout") {
            out.timeout = self.duration(t, &f.child("timeout"))?;
            if out.timeout.is_zero() {
                return Err(self.err(t, &f.child("timeout"), "timeout is 0; expected a positive duration").with_hint("e.g. `timeout: 10s`"));
            }
        }
        if let Some(c) = f.get("connections") {
            let p = f.child("connections");
            let v = self.string(c, &p)?;
            let scopes = [ConnectionScope::PerVu, ConnectionScope::PerIteration, ConnectionScope::PerRequest];
            let names = scopes.map(|s| s.as_str());
            out.connections = match scopes.iter().find(|s| s.as_str() == v.trim()) {
                Some(s) => *s,
                None => {
                    let hint = did_you_mean(v.trim(), names).map_or_else(
                        || "per_vu keeps one connection per VU; per_iteration reconnects each iteration; per_request each request".to_string(),
                        |s| format!("did you mean `{s}`?"),
                    );
                    return Err(self.err(c, &p, format!("unknown connection scope {v:?}; expected {}", one_of(&names))).with_hint(hint));
                }
            };
        }
        Ok(out)
    }

    /// `vars:` with `-D` overrides applied and `${...}` in values resolved.
    fn resolve_vars(&self, node: Option<&Node>, overrides: &[(String, String)]) -> Result<BTreeMap<String, String>, PlanError> {
        let mut raw: BTreeMap<String, &Node> = BTreeMap::new();
        if let Some(node) = node {
            let entries: &[(Node, Node)] = match &node.kind {
                Kind::Map(e) => e,
                _ if node.is_null() => &[],
                _ => return Err(self.err(node, "vars", format!("expected a mapping of names to values, found {}", node.describe())).with_hint("e.g. `vars: { vus: 10, user: alice }`")),
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
                    return Err(self.err(v, &field, format!("expected a text, number or boolean, found {}", v.describe())));
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
        for name in names {
            let mut stack = Vec::new();
            self.resolve_var(&name, &raw, &mut done, &mut stack)?;
        }
        Ok(done)
    }

    fn resolve_var(&self, name: &str, raw: &BTreeMap<String, &Node>, done: &mut BTreeMap<String, String>, stack: &mut Vec<String>) -> Result<(), PlanError> {
        if done.contains_key(name) {
            return Ok(());
        }
        let node = raw[name];
        let field = format!("vars.{name}");
        if stack.iter().any(|s| s == name) || stack.len() > 32 {
            stack.push(name.to_string());
            return Err(self.err(node, &field, format!("variables refer to each other in a cycle ({}); expected values that end", stack.join(" → "))));
        }
        stack.push(name.to_string());
        let text = &node.as_scalar().expect("checked scalar").text;
        let pieces = template::split(text).map_err(|e| self.err_at(self.inner_span(node, &text[e.offset..]), &field, e.message).with_hint(e.hint))?;
        let mut out = String::new();
        for p in pieces {
            match p {
                Piece::Lit(l) => out.push_str(&l),
                Piece::Ref { name: r, default, offset, len } => {
                    let reference = &text[offset..offset + len];
                    if BUILTINS.contains(&r.as_str()) {
                        return Err(self.err_at(self.inner_span(node, reference), &field, format!("`{reference}` is a per-request value; expected it only in a request's path, headers or body")).with_hint("use it directly in the request, e.g. `get: /users/${vu}`"));
                    }
                    if raw.contains_key(&r) {
                        self.resolve_var(&r, raw, done, stack)?;
                    }
                    let v = Ctx { vars: std::mem::take(done), ..*self };
                    let found = v.lookup(&r, default.as_deref());
                    *done = v.vars;
                    out.push_str(&found.ok_or_else(|| self.unknown_var(node, &field, &r, reference))?);
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

impl Fields<'_> {
    fn path_or_root(&self) -> String {
        self.path.clone()
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
        }
    }
    b.finish(source.to_string())
}

fn last_segment(path: &str) -> &str {
    let seg = path.rsplit('.').next().unwrap_or(path);
    seg.split('[').next().unwrap_or(seg)
}
