//! Node tree → [`Plan`]: structure checks, variables, templates, target, http settings, scenarios.
//!
//! Variables and `${...}` expansion are in `vars.rs`, load models in `load.rs`, steps in
//! `steps.rs`, URLs in `url.rs`.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{did_you_mean, one_of, PlanError};
use crate::template::{Func, GlobalCounter};
use crate::units::{self, UnitError};
use crate::yaml::{self, Kind, Node};
use crate::{HttpSettings, OnFailure, Plan, Scenario, Target};

mod custom;
mod distributed;
mod endpoint;
mod flow;
mod funcs;
mod http;
mod load;
mod phase;
mod request;
mod runtime;
mod scripts;
mod secrets;
mod steps;
mod thresholds;
mod tls;
mod unset;
mod url;
mod vars;
mod vars_once;

use thresholds::ScopeNames;

pub use endpoint::split_host_port;
pub(crate) use endpoint::{parse_hex, stream_target};
pub use unset::UnsetVar;
pub use url::{scheme_typo, split_url, UrlError};
pub(crate) use vars::to_template;

/// Longest string a template expansion may produce.
const MAX_EXPANDED: usize = 1 << 20;

pub(crate) const PLAN_KEYS: [&str; 11] = [
    "target",
    "distributed",
    "setup",
    "teardown",
    "vars",
    "secrets",
    "http",
    "scenarios",
    "thresholds",
    "scripts",
    "script_timeout",
];
const SCENARIO_KEYS: [&str; 8] = [
    "name",
    "load",
    "http",
    "feeders",
    "pacing",
    "on_failure",
    "steps",
    "thresholds",
];

pub(crate) fn compile(
    source: &str,
    text: &str,
    base_dir: &Path,
    profiles: &[String],
    overrides: &[(String, String)],
    env: &dyn Fn(&str) -> Option<String>,
    grammars: &crate::Grammars,
) -> Result<Plan, PlanError> {
    let mut cx = Ctx {
        grammars,
        no_target: false,
        plain_target: false,
        source,
        text,
        base_dir,
        env,
        vars: BTreeMap::new(),
        unset: unset::UnsetMap::new(),
        runtime: Vec::new(),
        counters: RefCell::new(Vec::new()),
        globals: RefCell::new(BTreeMap::new()),
        on_failure_default: Cell::new(OnFailure::Continue),
        files: RefCell::new(std::collections::BTreeSet::new()),
        sections: Vec::new(),
        scenario_memory: RefCell::new(HashMap::new()),
        step_base: RefCell::default(),
        scripts: RefCell::new(None),
        script_vars: RefCell::new(Vec::new()),
        script_timeout: onrush_script::DEFAULT_TIMEOUT,
    };
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
            .err(
                &root,
                "",
                format!(
                    "the plan is {}; expected a mapping with `target:` and `scenarios:`",
                    root.describe()
                ),
            )
            .with_hint("a plan file starts with keys such as `target: http://127.0.0.1:8080`"));
    }
    // Profiles (`-P`) are overlays of the tree: everything below sees the merged plan.
    let root = crate::profiles::apply(source, text, root, profiles)?;
    let plan_keys: Vec<&str> = PLAN_KEYS
        .iter()
        .copied()
        .chain(grammars.sections().map(|s| s.key()))
        .collect();
    let top = cx.map(&root, "", &plan_keys)?;
    // Secrets are variables set from outside the plan, as -D values are (a -D value wins).
    let declared = cx.secrets(top.get("secrets"), overrides)?;
    let mut settings: Vec<(String, String)> = declared.clone().into_iter().collect();
    settings.extend(overrides.iter().cloned());
    (cx.vars, cx.unset) = cx.resolve_vars(top.get("vars"), &settings)?;
    let secret_names = secrets::secret_names(&declared, &cx.vars);
    cx.load_scripts(top.get("scripts"), top.get("script_timeout"))?;

    let target = match top.get("target") {
        // A plan whose steps all name their own servers needs none.
        None => Target::None,
        Some(_) => {
            let target_node = cx.required(
                &top,
                "target",
                "`target: http://host:port` or `target: builtin`",
            )?;
            let target_text = cx.string(target_node, "target")?;
            if target_text.trim() == "builtin" {
                Target::Builtin
            } else {
                Target::Url(url::parse_target(&cx, target_node, &target_text)?)
            }
        }
    };
    cx.no_target = matches!(target, Target::None);
    // Not the built-in server: a plan with `version: h3` gets it over TLS with HTTP/3 on.
    cx.plain_target = matches!(&target, Target::Url(u) if u.scheme == crate::Scheme::Http);
    let target_ip: Option<IpAddr> = match &target {
        Target::Builtin => Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        Target::Url(u) => u.host.parse().ok(),
        Target::None => None,
    };
    let http = cx.http(top.get("http"), "http", &HttpSettings::default(), target_ip)?;
    // The protocols' own top-level sections, before any step is compiled against them.
    for section in grammars.sections() {
        let key = section.key();
        if let Some(node) = top.get(key) {
            let value = crate::grammar::Value::new(&cx, node, key.to_string());
            let compiled = section.compile(&value, &http)?;
            cx.sections.push((key, compiled));
        }
    }

    let scen_node = cx.required(&top, "scenarios", "a list of scenarios")?;
    let Kind::Seq(items) = &scen_node.kind else {
        return Err(cx
            .err(
                scen_node,
                "scenarios",
                format!(
                    "expected a list of scenarios, found {}",
                    scen_node.describe()
                ),
            )
            .with_hint("write each scenario as a list item: `- name: ...`"));
    };
    if items.is_empty() {
        return Err(cx
            .err(
                scen_node,
                "scenarios",
                "the list is empty; expected at least one scenario",
            )
            .with_hint(
                "add `- { name: main, load: { vus: 1, iterations: 1 }, steps: [ { get: / } ] }`",
            ));
    }
    let base_path = match &target {
        Target::Url(u) => u.base_path.clone(),
        Target::Builtin | Target::None => String::new(),
    };
    // Setup first: what it extracts is a runtime variable of every scenario and of teardown.
    let setup = match top.get("setup") {
        Some(node) => Some(cx.phase(node, "setup", &http, &base_path, &[])?),
        None => None,
    };
    let exports: Vec<String> = setup.as_ref().map_or(Vec::new(), |s| s.vars.clone());
    let mut scenarios: Vec<Scenario> = Vec::with_capacity(items.len());
    let mut names: HashMap<String, usize> = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let path = format!("scenarios[{i}]");
        let f = cx.map(item, &path, &SCENARIO_KEYS)?;
        let name_node = cx.required(&f, "name", "a scenario name")?;
        let name = cx.string(name_node, &f.child("name"))?;
        if name.trim().is_empty() {
            return Err(cx
                .err(
                    name_node,
                    &f.child("name"),
                    "empty name; expected a scenario name",
                )
                .with_hint("e.g. `name: browse`"));
        }
        if let Some(first) = names.insert(name.clone(), i) {
            return Err(cx
                .err(
                    name_node,
                    &f.child("name"),
                    format!("duplicate scenario name {name:?}; expected names unique in the plan"),
                )
                .with_hint(format!(
                    "scenarios[{first}] is already named {name:?}; rename one of them"
                )));
        }
        let load_node = cx.required(
            &f,
            "load",
            "`load: { vus: N, iterations: N }` or `load: { rate: N/s, duration: D, max_vus: N }`",
        )?;
        let load = cx.load(load_node, &f.child("load"))?;
        let graceful_stop = cx.graceful_stop(load_node, &f.child("load"), &load)?;
        let scen_http = cx.http(f.get("http"), &f.child("http"), &http, target_ip)?;
        let steps_node = cx.required(&f, "steps", "a list of steps")?;
        let mut feeders = Vec::new();
        let mut columns = Vec::new();
        if let Some(n) = f.get("feeders") {
            for (feeder, cols) in cx.feeders(n, &f.child("feeders"))? {
                for c in &cols {
                    if !columns.contains(c) {
                        columns.push(c.clone());
                    }
                }
                feeders.push((feeder, cols));
            }
        }
        for name in &exports {
            if !columns.contains(name) {
                columns.push(name.clone());
            }
        }
        for name in cx.script_var_names() {
            if !columns.contains(&name) {
                columns.push(name);
            }
        }
        cx.runtime = cx.runtime_names(steps_node, columns)?;
        let feeders = feeders
            .into_iter()
            .map(|(mut feeder, cols)| {
                feeder.slots = cols
                    .iter()
                    .map(|c| cx.runtime.iter().position(|r| r == c).expect("collected"))
                    .collect();
                feeder
            })
            .collect();
        cx.counters = RefCell::new(Vec::new());
        cx.on_failure_default.set(match f.get("on_failure") {
            Some(o) => cx.on_failure(o, &f.child("on_failure"))?,
            None => OnFailure::Continue,
        });
        let pacing = match f.get("pacing") {
            Some(p) => {
                let d = cx.duration(p, &f.child("pacing"))?;
                if d.is_zero() {
                    return Err(cx
                        .err(p, &f.child("pacing"), "pacing is 0; expected a positive duration")
                        .with_hint("pacing is the target duration of one iteration, e.g. `pacing: 5s`; remove it for none"));
                }
                Some(d)
            }
            None => None,
        };
        let (steps, build) = cx.scenario_steps(steps_node, &f.child("steps"), &base_path)?;
        let metrics = build.infos;
        let thresholds = match f.get("thresholds") {
            Some(t) => {
                let names = ScopeNames {
                    scenarios: vec![(
                        name.as_str(),
                        metrics.iter().map(|m| m.name.as_str()).collect(),
                    )],
                    own: Some(name.as_str()),
                };
                cx.thresholds(t, &f.child("thresholds"), &names)?
            }
            None => Vec::new(),
        };
        scenarios.push(Scenario {
            name,
            load,
            graceful_stop,
            http: scen_http,
            steps,
            metrics,
            checks: build.checks,
            vars: std::mem::take(&mut cx.runtime),
            counters: cx.counters.borrow().len(),
            onces: build.onces,
            feeders,
            pacing,
            thresholds,
        });
    }
    let teardown = match top.get("teardown") {
        Some(node) => Some(cx.phase(node, "teardown", &http, &base_path, &exports)?),
        None => None,
    };
    let thresholds = match top.get("thresholds") {
        Some(t) => {
            let names = ScopeNames {
                scenarios: scenarios
                    .iter()
                    .map(|s| {
                        (
                            s.name.as_str(),
                            s.metrics.iter().map(|m| m.name.as_str()).collect(),
                        )
                    })
                    .collect(),
                own: None,
            };
            cx.thresholds(t, "thresholds", &names)?
        }
        None => Vec::new(),
    };

    let distributed = cx.distributed(top.get("distributed"))?;

    let stem = Path::new(source)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned());
    let scripts = cx.take_scripts();
    let mut plan = Plan {
        source: PathBuf::from(source),
        name: stem
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "plan".into()),
        target,
        http,
        scenarios,
        vars: cx.vars,
        unset_vars: unset_roots(&cx.unset),
        secrets: secret_names,
        thresholds,
        setup,
        teardown,
        scripts,
        files: cx.files.into_inner().into_iter().collect(),
        distributed,
    };
    plan.mask_names();
    Ok(plan)
}

pub(crate) struct Ctx<'a> {
    /// The step grammars of protocols onrush-plan does not hold (`Step::Custom`).
    grammars: &'a crate::Grammars,
    /// The plan has no `target:`: a step must give a full URL.
    pub(crate) no_target: bool,
    /// The plan's `target:` is plain `http://`: `version: h3` cannot reach it.
    pub(crate) plain_target: bool,
    source: &'a str,
    text: &'a str,
    base_dir: &'a Path,
    env: &'a dyn Fn(&str) -> Option<String>,
    /// Final plan variables.
    vars: BTreeMap<String, String>,
    /// The variables marked `${unset(...)}` that got no value (see `unset.rs`).
    unset: unset::UnsetMap,
    /// The runtime variables of the scenario being compiled (slot = index).
    runtime: Vec<String>,
    /// Per-VU counters (`${counter(name)}`) of the scenario being compiled, by name.
    counters: RefCell<Vec<String>>,
    /// Global counters (`${global_counter(name)}`) of the plan, by name.
    globals: RefCell<BTreeMap<String, GlobalCounter>>,
    /// The scenario's `on_failure`, for steps without their own.
    on_failure_default: Cell<OnFailure>,
    /// Every file the plan refers to, as resolved ([`Plan::files`]).
    pub(super) files: RefCell<std::collections::BTreeSet<PathBuf>>,
    /// The protocols' top-level sections, compiled (`SectionGrammar`).
    sections: Vec<(
        &'static str,
        std::sync::Arc<dyn std::any::Any + Send + Sync>,
    )>,
    /// What grammars remember across the steps of the scenario being compiled, one value per
    /// type (`grammar::Mapping::scenario_memory`); emptied when a scenario's steps start.
    pub(crate) scenario_memory: RefCell<HashMap<std::any::TypeId, Box<dyn std::any::Any>>>,
    /// The base path of the target the step being compiled sends to (`/api` of
    /// `target: http://host/api`), for [`Mapping::target_base`](crate::grammar::Mapping::target_base).
    pub(crate) step_base: RefCell<String>,
    /// The plan's JavaScript while it compiles (`scripts.rs`): made at `scripts:`, or at the
    /// first inline `js:`/`script:`.
    scripts: RefCell<Option<onrush_script::ScriptsBuilder>>,
    /// The names the scripts assign through `vars` (runtime variables of every scenario).
    script_vars: RefCell<Vec<String>>,
    script_timeout: std::time::Duration,
}

/// The variables marked `${unset(...)}` themselves (not those unset through them), by name.
fn unset_roots(unset: &unset::UnsetMap) -> Vec<UnsetVar> {
    unset
        .iter()
        .filter(|(name, root)| **name == root.name)
        .map(|(_, root)| root.clone())
        .collect()
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
        self.entries
            .iter()
            .find(|(k, _)| k.as_scalar().is_some_and(|s| s.text == key))
    }
    pub fn child(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }
    /// The mapping's node (for errors about the mapping as a whole).
    pub fn node(&self) -> &'n Node {
        self.node
    }
    /// The mapping's field path.
    pub fn path(&self) -> &str {
        &self.path
    }
    pub fn keys(&self) -> impl Iterator<Item = &'n str> {
        self.entries
            .iter()
            .filter_map(|(k, _)| k.as_scalar().map(|s| s.text.as_str()))
    }
}

/// A `${...}` expansion: literal text and per-request slots.
pub enum Part {
    Lit(String),
    /// A built-in (`vu`, `iteration`).
    Slot(&'static str),
    /// A runtime variable.
    Var {
        slot: usize,
        name: String,
        default: Option<String>,
    },
    Func(Func),
}

impl<'a> Ctx<'a> {
    /// The plan file's name, as errors show it.
    pub(crate) fn source_name(&self) -> &str {
        self.source
    }

    /// Records `path` as a file the plan needs (a distributed run sends it to its agents).
    pub(crate) fn needs_file(&self, path: PathBuf) {
        self.files.borrow_mut().insert(path);
    }

    /// The compiled top-level section `key` of a protocol, if the plan has it.
    pub(crate) fn section(
        &self,
        key: &str,
    ) -> Option<&std::sync::Arc<dyn std::any::Any + Send + Sync>> {
        self.sections
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }

    pub fn err(&self, node: &Node, field: &str, message: impl Into<String>) -> PlanError {
        PlanError::at(self.source, self.text, node.span.clone(), field, message)
    }

    pub fn err_at(
        &self,
        span: std::ops::Range<usize>,
        field: &str,
        message: impl Into<String>,
    ) -> PlanError {
        PlanError::at(self.source, self.text, span, field, message)
    }

    pub fn base_dir(&self) -> &Path {
        self.base_dir
    }

    /// `rel` resolved against the plan's directory, and remembered as a file the plan needs
    /// (a distributed run sends these to its agents).
    pub fn plan_path(&self, rel: &str) -> PathBuf {
        let path = self.base_dir.join(rel);
        self.files.borrow_mut().insert(path.clone());
        path
    }

    /// Checks that `node` is a mapping (null counts as empty) whose keys are all in `allowed`.
    pub fn map<'n>(
        &self,
        node: &'n Node,
        path: &str,
        allowed: &[&str],
    ) -> Result<Fields<'n>, PlanError> {
        let entries: &[(Node, Node)] = match &node.kind {
            Kind::Map(e) => e,
            _ if node.is_null() => &[],
            _ => {
                let what = if path.is_empty() {
                    "the plan".to_string()
                } else {
                    format!("`{}`", last_segment(path))
                };
                return Err(self
                    .err(
                        node,
                        path,
                        format!(
                            "expected a mapping of {}, found {}",
                            one_of(allowed),
                            node.describe()
                        ),
                    )
                    .with_hint(format!("{what} takes keys such as `{}: ...`", allowed[0])));
            }
        };
        let fields = Fields {
            node,
            entries,
            path: path.to_string(),
        };
        for (k, _) in entries {
            let key = &k.as_scalar().expect("keys are scalars").text;
            if !allowed.contains(&key.as_str()) {
                return Err(self.unknown_key(k, &fields.child(key), key, allowed));
            }
        }
        Ok(fields)
    }

    pub fn unknown_key(
        &self,
        key_node: &Node,
        field: &str,
        key: &str,
        allowed: &[&str],
    ) -> PlanError {
        let hint =
            did_you_mean(key, allowed.iter().copied()).map(|s| format!("did you mean `{s}`?"));
        self.err(
            key_node,
            field,
            format!("unknown key `{key}`; expected {}", one_of(allowed)),
        )
        .with_opt_hint(hint)
    }

    /// The value of a required key; errors at the mapping when it is missing or empty.
    pub fn required<'n>(
        &self,
        f: &Fields<'n>,
        key: &str,
        expected: &str,
    ) -> Result<&'n Node, PlanError> {
        match f.get(key) {
            Some(v) if !v.is_null() => Ok(v),
            Some(v) => Err(self.err(
                v,
                &f.child(key),
                format!("missing value; expected {expected}"),
            )),
            None => {
                let at = if f.path.is_empty() {
                    "the plan"
                } else {
                    "this mapping"
                };
                Err(self
                    .err(
                        f.node,
                        &f.path,
                        format!("missing key `{key}`; expected {expected}"),
                    )
                    .with_hint(format!("add `{key}:` to {at}")))
            }
        }
    }

    /// A whole number in `min..=max`. `what` explains the value for the hint.
    pub fn uint(
        &self,
        node: &Node,
        path: &str,
        min: u64,
        max: u64,
        hint: &str,
    ) -> Result<u64, PlanError> {
        let text = self.string(node, path)?;
        let raw = &node.as_scalar().expect("string() checked").text;
        let from = if *raw != text {
            format!(" (from {raw:?})")
        } else {
            String::new()
        };
        let expected = if min == 0 {
            "a whole number"
        } else {
            "a positive whole number"
        };
        let t = text.trim().replace('_', "");
        let v: u64 = match t.parse() {
            Ok(v) => v,
            Err(_) if t.parse::<f64>().is_ok_and(|f| f.fract() != 0.0 && f > 0.0) => {
                return Err(self
                    .err(
                        node,
                        path,
                        format!("expected {expected}, found {text}{from}"),
                    )
                    .with_hint(hint.to_string()))
            }
            Err(_) => {
                return Err(self
                    .err(
                        node,
                        path,
                        format!(
                            "expected {expected}, found {:?}{from}",
                            yaml::truncate(&text, 60)
                        ),
                    )
                    .with_hint(hint.to_string()))
            }
        };
        if v < min {
            return Err(self
                .err(
                    node,
                    path,
                    format!("{v}{from} is too small; expected at least {min}"),
                )
                .with_hint(hint.to_string()));
        }
        if v > max {
            return Err(self
                .err(
                    node,
                    path,
                    format!("{v}{from} is too large; expected at most {max}"),
                )
                .with_hint(hint.to_string()));
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

    /// `true` / `false`; `key` names the setting in the hint.
    pub(crate) fn boolean(&self, node: &Node, path: &str, key: &str) -> Result<bool, PlanError> {
        let text = self.string(node, path)?;
        match text.trim() {
            "true" | "True" | "TRUE" => Ok(true),
            "false" | "False" | "FALSE" => Ok(false),
            other => Err(self
                .err(
                    node,
                    path,
                    format!("expected `true` or `false`, found {other:?}"),
                )
                .with_hint(format!("e.g. `{key}: true`"))),
        }
    }

    /// Which of `keys` the mapping `f` has: none (`Ok(None)`) or one. Two or more is an error
    /// at the second one in file order: "`a` and `b` are both given; expected one {per}".
    pub(crate) fn at_most_one<'k>(
        &self,
        f: &Fields,
        keys: &[&'k str],
        per: &str,
        hint: &str,
    ) -> Result<Option<&'k str>, PlanError> {
        let mut given: Vec<(&'k str, &Node)> = keys
            .iter()
            .filter_map(|k| f.key(k).map(|node| (*k, node)))
            .collect();
        given.sort_by_key(|(_, node)| node.span.start);
        match given.as_slice() {
            [] => Ok(None),
            [(one, _)] => Ok(Some(one)),
            [(a, _), (b, second), ..] => Err(self
                .err(
                    second,
                    &f.child(b),
                    format!("`{a}` and `{b}` are both given; expected one {per}"),
                )
                .with_hint(hint.to_string())),
        }
    }

    /// Like [`Ctx::at_most_one`], but one of `keys` is required: "no {what} given; expected
    /// one of ..." at `node` otherwise.
    pub(crate) fn exactly_one<'k>(
        &self,
        f: &Fields,
        node: &Node,
        keys: &[&'k str],
        what: &str,
        per: &str,
        example: &str,
    ) -> Result<&'k str, PlanError> {
        self.at_most_one(f, keys, per, example)?.ok_or_else(|| {
            self.err(
                node,
                &f.path,
                format!("no {what} given; expected one of {}", one_of(keys)),
            )
            .with_hint(example.to_string())
        })
    }

    /// A list of mappings, or one mapping standing for a one-item list: the items with their
    /// field paths. `what` names the items in the error ("checks", "feeders").
    pub(crate) fn maps_or_one<'n>(
        &self,
        node: &'n Node,
        path: &str,
        what: &str,
        example: &str,
    ) -> Result<Vec<(&'n Node, String)>, PlanError> {
        match &node.kind {
            Kind::Seq(items) => Ok(items
                .iter()
                .enumerate()
                .map(|(i, n)| (n, format!("{path}[{i}]")))
                .collect()),
            Kind::Map(_) => Ok(vec![(node, path.to_string())]),
            _ => Err(self
                .err(
                    node,
                    path,
                    format!("expected a list of {what}, found {}", node.describe()),
                )
                .with_hint(example.to_string())),
        }
    }

    /// A list, or one scalar standing for a one-item list: its items with their field paths.
    /// `what` names the items in the error ("source addresses"), `hint` shows both forms.
    pub(crate) fn one_or_many<'n>(
        &self,
        node: &'n Node,
        path: &str,
        what: &str,
        hint: &str,
    ) -> Result<Vec<(&'n Node, String)>, PlanError> {
        match &node.kind {
            Kind::Seq(items) => Ok(items
                .iter()
                .enumerate()
                .map(|(i, n)| (n, format!("{path}[{i}]")))
                .collect()),
            Kind::Scalar(_) if !node.is_null() => Ok(vec![(node, path.to_string())]),
            _ => Err(self
                .err(
                    node,
                    path,
                    format!("expected a list of {what}, found {}", node.describe()),
                )
                .with_hint(hint)),
        }
    }
}

fn last_segment(path: &str) -> &str {
    let seg = path.rsplit('.').next().unwrap_or(path);
    seg.split('[').next().unwrap_or(seg)
}
