//! The walk over the resolved JMX tree: the Test Plan and thread groups here, samplers in
//! [`http`], extractors, assertions and timers in [`post`], controllers in [`flow`], and the
//! elements that stay behind in [`other`].

mod data;
mod flow;
mod http;
mod other;
mod plan;
mod post;
mod scope;
mod script;
mod thread_group;

use std::collections::BTreeSet;

use crate::jmx::{El, Props};
use crate::report::{Entry, Report, Status};
use crate::template::{sanitize, Translated, Translator};
use crate::yaml::Y;
use crate::{DataFile, Import, Options};

pub(crate) use scope::Scope;
use thread_group::{idle_load, placeholder, scenario_y};

/// A step of the plan with the comment lines above it.
pub(crate) type Item = (Y, Vec<String>);

/// How onrush's connection defaults differ from JMeter's (said in the report and the plan).
const CONNECTIONS: &str = "connections and TLS sessions are kept per VU across iterations (`http.connections: per_vu`, `tls.session: resume`); JMeter 5 resets both at every iteration by default (httpclient.reset_state_on_thread_group_iteration=true): to measure that, set `http.connections: per_iteration` (and `tls.session: full` for new TLS handshakes)";

/// Marks a request URL until the target is chosen (see [`Conv::finish`]).
const URL_MARK: &str = "\u{1}URL:";

/// What the walk builds.
pub(crate) struct Conv<'o> {
    pub opts: &'o Options,
    pub tr: Translator,
    pub report: Report,
    /// Plan variables in order: name, value, comment lines.
    pub vars: Vec<(String, String, Vec<String>)>,
    /// Names set at run time (extractors, feeder columns, foreach items).
    pub runtime: BTreeSet<String>,
    pub data_files: Vec<DataFile>,
    /// Origins (`scheme://host:port`) of the requests, to choose the target.
    pub origins: Vec<String>,
    pub follow_redirects: bool,
    /// Comments for the plan's header.
    pub header: Vec<String>,
    /// State of the thread group being converted.
    pub scen: ScenState,
    /// What the Test Plan's own config elements gave (feeders, cookie manager): every
    /// scenario starts from it.
    pub plan_scen: ScenState,
    /// A header Manager sent `Accept-Encoding`: the plan decodes bodies as JMeter does.
    pub decompress: bool,
    /// The steps of setUp and tearDown Thread Groups: the plan's `setup:` and `teardown:`.
    pub setup_steps: Vec<Item>,
    pub teardown_steps: Vec<Item>,
    /// The scripts left as comments (`JSR223PreProcessor `sign``, their text): what a variable
    /// nothing converted sets is looked for in them.
    pub scripts: Vec<(String, String)>,
    /// The JavaScript module the converted scripts go to.
    pub js: script::Module,
}

/// What a thread group gathers besides its steps.
#[derive(Default, Clone)]
pub(crate) struct ScenState {
    pub feeders: Vec<Item>,
    pub cookie_manager: bool,
    pub clear_cookies: bool,
    pub requests: usize,
    /// Constant Throughput Timer: samples per minute and whether per thread.
    pub throughput: Option<(f64, bool, String)>,
}

pub(crate) fn convert(els: &[El], opts: &Options) -> Import {
    let mut c = Conv {
        opts,
        tr: Translator {
            rebase: rebase_dir(opts),
            ..Translator::default()
        },
        report: Report::default(),
        vars: Vec::new(),
        runtime: BTreeSet::new(),
        data_files: Vec::new(),
        origins: Vec::new(),
        follow_redirects: false,
        header: Vec::new(),
        scen: ScenState::default(),
        plan_scen: ScenState::default(),
        decompress: false,
        setup_steps: Vec::new(),
        teardown_steps: Vec::new(),
        scripts: Vec::new(),
        js: script::Module::default(),
    };
    let mut scenarios: Vec<Item> = Vec::new();
    let root = Scope::default();
    let mut loose: Vec<&El> = Vec::new();
    for el in els {
        if el.class == "TestPlan" {
            c.test_plan(el, &root, &mut scenarios);
        } else if el.class == "WorkBench" {
            c.entry(
                el,
                "",
                Status::Converted,
                "the WorkBench is not part of a run (JMeter does not run it either)",
            );
        } else {
            loose.push(el);
        }
    }
    if !loose.is_empty() {
        // A saved part of a tree (JMeter's "Save selection as"): run it as one user, once.
        let owned: Vec<El> = loose.into_iter().cloned().collect();
        c.header.push("This JMX holds no Test Plan (a saved part of a tree): its elements run as one user, once.".into());
        c.scenario_from("imported", &owned, &root, &mut scenarios, idle_load(), None);
    }
    if scenarios.is_empty() {
        c.header.push("Nothing in this JMX runs (no thread group): the plan has one scenario that only waits.".into());
        scenarios.push((
            scenario_y("nothing to run", idle_load(), vec![placeholder()]),
            Vec::new(),
        ));
    }
    c.finish(scenarios)
}

impl Conv<'_> {
    /// Records what became of `el`, whose parents are `parent` (a ` / `-joined path).
    pub fn entry(&mut self, el: &El, parent: &str, status: Status, note: impl Into<String>) {
        self.report.entries.push(Entry {
            path: join(parent, &el.name),
            testclass: el.class.clone(),
            at: el.pos(),
            status,
            note: note.into(),
        });
    }

    /// Records `el` and everything under it as not converted because of `why`.
    pub fn entry_tree(&mut self, el: &El, parent: &str, status: Status, why: &str) {
        self.entry(el, parent, status, why);
        let path = join(parent, &el.name);
        let inner = format!("inside `{}`, which is not converted", el.name);
        for child in &el.children {
            self.entry_tree(child, &path, Status::NotConverted, &inner);
        }
    }

    /// Rewrites a JMeter text and reports the functions it could not convert on `el`.
    pub fn text(&mut self, el: &El, parent: &str, text: &str) -> Translated {
        let t = self.tr.translate(text);
        if !t.unconverted.is_empty() || !t.approximated.is_empty() {
            let (status, notes) = if t.unconverted.is_empty() {
                (Status::Approximated, t.approximated.clone())
            } else {
                (Status::NotConverted, t.unconverted.clone())
            };
            self.report.entries.push(Entry {
                path: join(parent, &format!("{} (function)", el.name)),
                testclass: el.class.clone(),
                at: el.pos(),
                status,
                note: notes.join("; "),
            });
        }
        t
    }

    /// A text used where only plan variables may appear (names of files, hosts, load values):
    /// `Err` names what changes at run time.
    pub fn static_text(&mut self, el: &El, parent: &str, text: &str) -> Result<String, String> {
        let t = self.text(el, parent, text);
        if t.per_request {
            return Err(format!("`{text}` changes per request"));
        }
        match t.vars.iter().find(|v| self.runtime.contains(*v)) {
            Some(v) => Err(format!(
                "`{text}` uses `${{{v}}}`, which is set at run time"
            )),
            None => Ok(t.text),
        }
    }

    /// A text whose variables are all plan variables or properties defined so far (so that its
    /// value is known when the plan loads, e.g. a duration); `Err` says what is not.
    pub fn plan_text(&mut self, el: &El, parent: &str, text: &str) -> Result<String, String> {
        let t = self.static_text(el, parent, text)?;
        let tr = self.tr.translate(text);
        let props: Vec<&str> = self
            .tr
            .properties
            .values()
            .map(|p| p.var.as_str())
            .collect();
        match tr
            .vars
            .iter()
            .find(|v| !props.contains(&v.as_str()) && !self.vars.iter().any(|p| &p.0 == *v))
        {
            Some(v) => Err(format!(
                "`{text}` uses `${{{v}}}`, which no user-defined variable or property sets"
            )),
            None => Ok(t),
        }
    }

    /// A data file's path as the plan names it: as in the JMX, or rebased when the plan is not
    /// written beside the JMX.
    pub fn data_path(&self, path: &str) -> String {
        self.tr.rebased(path)
    }

    /// A text that names a file or directory (read when the plan loads). A property without a
    /// default in it is one the plan cannot guess: JMeter's `1` names no file, so the plan
    /// marks it `${unset(...)}` and `onrush validate` asks for `-D` (see `finish`).
    pub fn path_text(&mut self, el: &El, parent: &str, text: &str) -> Result<String, String> {
        let path = self.static_text(el, parent, text)?;
        let vars = self.tr.translate(text).vars;
        self.tr.mark_path_properties(&vars);
        Ok(path)
    }

    /// Adds (or replaces) a plan variable.
    pub fn var(&mut self, name: &str, value: String, comments: Vec<String>) {
        match self.vars.iter_mut().find(|v| v.0 == name) {
            Some(v) => {
                v.1 = value;
                v.2.extend(comments);
            }
            None => self.vars.push((name.to_string(), value, comments)),
        }
    }

    /// User-defined variables (an `Arguments` element or property) → plan variables.
    pub fn arguments(&mut self, el: &El, parent: &str, args: &[crate::jmx::Prop]) {
        for arg in args {
            let name = arg.s("Argument.name");
            let name = if name.is_empty() {
                arg.name.as_str()
            } else {
                name
            };
            if name.trim().is_empty() {
                continue;
            }
            let var = sanitize(name);
            let raw = arg.s("Argument.value");
            // `threads = ${__P(threads,10)}`: the property *is* the variable.
            let t = self.text(el, parent, raw);
            if t.text == format!("${{{var}}}") {
                if let Some(p) = self.tr.properties.values().find(|p| p.var == var) {
                    let default = p.default.clone();
                    self.var(
                        &var,
                        default,
                        vec![format!(
                            "JMeter: {name} = {raw} (override with -D {var}=...)"
                        )],
                    );
                    continue;
                }
            }
            // JMeter computes a User Defined Variable once, when the test starts; so does the
            // plan (`vars:` values are computed at load), except for what differs per thread
            // or per use there (`${__threadNum}`, counters): those are used in its place.
            if ["${vu}", "${iteration}", "counter("]
                .iter()
                .any(|per_use| t.text.contains(per_use))
            {
                self.tr
                    .replacements
                    .insert(name.trim().to_string(), t.text.clone());
                self.report.entries.push(Entry {
                    path: join(parent, &format!("{} ({name})", el.name)),
                    testclass: el.class.clone(),
                    at: el.pos(),
                    status: Status::Approximated,
                    note: format!("`{name} = {raw}` differs per thread or per use: written where `${{{name}}}` is used ({}), computed there at each use", t.text),
                });
                continue;
            }
            let comment = if var != name {
                vec![format!("JMeter variable `{name}`")]
            } else {
                Vec::new()
            };
            self.var(&var, t.text, comment);
        }
    }

    fn test_plan(&mut self, el: &El, root: &Scope, scenarios: &mut Vec<Item>) {
        if let Some(udv) = el.prop("TestPlan.user_defined_variables") {
            if let Some(list) = udv.prop("Arguments.arguments") {
                let list = list.children.clone();
                self.arguments(el, "", &list);
            }
        }
        let mut note = String::new();
        if el.b("TestPlan.serialize_threadgroups", false) {
            note = "JMeter runs its thread groups one after the other (\"Run Thread Groups consecutively\"); onrush runs scenarios at the same time: run them as separate plans to keep the order".into();
            self.header.push(note.clone());
        }
        let status = if note.is_empty() {
            Status::Converted
        } else {
            Status::Approximated
        };
        self.entry(
            el,
            "",
            status,
            if note.is_empty() {
                format!("user-defined variables → `vars`; {CONNECTIONS}")
            } else {
                note
            },
        );
        let path = join("", &el.name);
        let mut scope = self.configs(&el.children, root, &path);
        scope.path = path.clone();
        self.plan_scen = std::mem::take(&mut self.scen);
        let mut n = 0;
        for child in &el.children {
            if !child.enabled {
                self.disabled(child, &path);
                continue;
            }
            match scope::kind(child) {
                scope::Kind::ThreadGroup => {
                    n += 1;
                    self.thread_group(child, &scope, &path, scenarios);
                }
                scope::Kind::Scoped => {}
                _ if child.class == "TestFragmentController" => self.entry(
                    child,
                    &path,
                    Status::Converted,
                    "a Test Fragment runs only where a Module or Include controller points at it",
                ),
                _ => self.entry_tree(
                    child,
                    &path,
                    Status::NotConverted,
                    "outside any thread group: JMeter does not run it either",
                ),
            }
        }
        if n == 0 && scenarios.is_empty() {
            self.header.push(
                "The Test Plan has no thread group: the plan has one scenario that only waits."
                    .into(),
            );
            scenarios.push((
                scenario_y("no thread group", idle_load(), vec![placeholder()]),
                Vec::new(),
            ));
        }
    }

    pub fn disabled(&mut self, el: &El, parent: &str) {
        self.entry(
            el,
            parent,
            Status::Converted,
            "disabled in the JMX: left out (JMeter does not run it either)",
        );
    }

    /// Walks the children of a controller: their config elements first (they apply to the whole
    /// scope, wherever they stand), then samplers and controllers in order.
    pub fn children(&mut self, els: &[El], parent: &Scope) -> Vec<Item> {
        let path = parent.path.clone();
        let scope = self.configs(els, parent, &path);
        let mut out = Vec::new();
        if !scope.comments.is_empty() {
            out.push(scope::comment_item(scope.comments.clone()));
        }
        for el in els {
            if !el.enabled {
                self.disabled(el, &path);
                continue;
            }
            match scope::kind(el) {
                scope::Kind::Scoped => {}
                scope::Kind::Sampler => out.extend(self.sampler(el, &scope)),
                scope::Kind::Controller => out.extend(self.controller(el, &scope)),
                scope::Kind::ThreadGroup => self.entry_tree(
                    el,
                    &path,
                    Status::NotConverted,
                    "a thread group inside a thread group: JMeter does not run it",
                ),
                scope::Kind::Unknown => out.extend(self.unknown(el, &scope)),
            }
        }
        out
    }

    /// A sampler: its own children (config, timers, assertions, extractors) apply to it only.
    pub fn sampler(&mut self, el: &El, parent: &Scope) -> Vec<Item> {
        let path = join(&parent.path, &el.name);
        let mut scope = self.configs(&el.children, parent, &path);
        scope.path = parent.path.clone();
        for child in &el.children {
            if !child.enabled {
                self.disabled(child, &path);
            } else if scope::kind(child) != scope::Kind::Scoped {
                self.entry_tree(child, &path, Status::NotConverted, "a sampler's child that is not a config element, timer, assertion or extractor: JMeter ignores it");
            }
        }
        let mut items = match el.class.as_str() {
            "HTTPSamplerProxy" | "HTTPSampler" | "HTTPSampler2" => self.http(el, &scope),
            "TCPSampler" => self.tcp(el, &scope),
            "kg.apc.jmeter.samplers.HTTPRawSampler" => self.raw_http(el, &scope),
            "TestAction" => self.flow_action(el, &scope),
            _ => self.other_sampler(el, &scope),
        };
        if !scope.comments.is_empty() {
            items.push(scope::comment_item(scope.comments.clone()));
        }
        items
    }
}

/// Where the JMX's relative file paths are rebased: its folder, when the plan is written
/// elsewhere (JMeter resolves them against the JMX).
fn rebase_dir(opts: &Options) -> Option<std::path::PathBuf> {
    let dir = opts.plan_dir.as_ref()?;
    let base = std::fs::canonicalize(&opts.base_dir).unwrap_or_else(|_| opts.base_dir.clone());
    let plan = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
    (base != plan).then_some(base)
}

pub(crate) fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent} / {name}")
    }
}

/// Whether `items` hold a step (not only comments).
pub(crate) fn has_steps(items: &[Item]) -> bool {
    items.iter().any(|i| i.0 != Y::Nothing)
}
