//! The walk over the resolved JMX tree: the Test Plan and thread groups here, samplers in
//! [`http`], extractors, assertions and timers in [`post`], controllers in [`flow`], and the
//! elements that stay behind in [`other`].

mod flow;
mod http;
mod other;
mod post;
mod scope;

use std::collections::{BTreeMap, BTreeSet};

use crate::jmx::{El, Props};
use crate::report::{Entry, Report, Status};
use crate::template::{sanitize, Translated, Translator};
use crate::yaml::{self, Y};
use crate::{DataFile, Import, Options};

pub(crate) use scope::Scope;

/// A step of the plan with the comment lines above it.
pub(crate) type Item = (Y, Vec<String>);

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
        tr: Translator::default(),
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
        c.scenario_from(
            "imported",
            &owned,
            &root,
            1,
            &mut scenarios,
            idle_load(),
            None,
        );
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
        let p = std::path::Path::new(path);
        match &self.opts.plan_dir {
            Some(dir) if p.is_relative() && !path.starts_with("${") => {
                let base = std::fs::canonicalize(&self.opts.base_dir)
                    .unwrap_or_else(|_| self.opts.base_dir.clone());
                let plan = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
                if base == plan {
                    path.to_string()
                } else {
                    base.join(p).display().to_string()
                }
            }
            _ => path.to_string(),
        }
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
                "user-defined variables → `vars`".to_string()
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

    fn thread_group(&mut self, el: &El, scope: &Scope, parent: &str, scenarios: &mut Vec<Item>) {
        match el.class.as_str() {
            "ThreadGroup" => {}
            "SetupThreadGroup" | "PostThreadGroup" => {
                let which = if el.class == "SetupThreadGroup" {
                    "setUp"
                } else {
                    "tearDown"
                };
                self.entry_tree(el, parent, Status::NotConverted, &format!(
                    "a {which} Thread Group: onrush has no {which} phase yet (issue 14, a later slice); run its requests as a separate plan {}",
                    if which == "setUp" { "before this one" } else { "after this one" }
                ));
                return;
            }
            _ => {
                self.entry_tree(el, parent, Status::NotConverted, "a thread group onrush does not know (a plugin?): write its load as `load:` stages or an open model (docs/plan.md, Load models)");
                return;
            }
        }
        let mut notes: Vec<String> = Vec::new();
        let threads = self.load_number(
            el,
            parent,
            el.s("ThreadGroup.num_threads"),
            "1",
            &mut notes,
            "threads",
        );
        if threads == Y::Raw("0".into())
            || el
                .prop("ThreadGroup.main_controller")
                .is_some_and(|p| p.s("LoopController.loops").trim() == "0")
        {
            self.entry_tree(
                el,
                parent,
                Status::Converted,
                "0 threads or 0 loops: JMeter runs none of it, so it is left out",
            );
            return;
        }
        let lc = el.prop("ThreadGroup.main_controller");
        let loops_raw = lc
            .map(|p| p.s("LoopController.loops").to_string())
            .unwrap_or_else(|| "1".into());
        let forever = lc.is_some_and(|p| p.b("LoopController.continue_forever", false))
            && loops_raw.trim() == "-1"
            || loops_raw.trim() == "-1";
        let scheduler = el.b("ThreadGroup.scheduler", false);
        let duration = el.s("ThreadGroup.duration").trim().to_string();
        let delay = el.s("ThreadGroup.delay").trim().to_string();
        let ramp = el.s("ThreadGroup.ramp_time").trim().to_string();
        let mut load = Y::map();
        load.set("vus", threads);
        let use_duration = scheduler && !duration.is_empty() && duration != "0";
        if use_duration && (forever || loops_raw.trim().is_empty()) {
            match self.static_text(el, parent, &duration) {
                Ok(d) => load.set("duration", Y::s(format!("{d}s"))),
                Err(e) => {
                    notes.push(format!("duration {e}: 10m used"));
                    load.set("duration", Y::s("10m"));
                }
            }
        } else if forever {
            notes.push("JMeter loops forever (until stopped): the scenario runs for `duration: 10m`; change it".into());
            load.set("duration", Y::s("10m"));
        } else {
            let iterations = self.load_number(el, parent, &loops_raw, "1", &mut notes, "loops");
            load.set("iterations", iterations);
            if use_duration {
                notes.push(format!("JMeter also stops after the scheduler's {duration}s; onrush stops after the iterations only (a load has iterations or a duration)"));
            }
        }
        if !ramp.is_empty() && ramp != "0" {
            match self.static_text(el, parent, &ramp) {
                Ok(r) => load.set("ramp_up", Y::s(format!("{r}s"))),
                Err(e) => notes.push(format!("ramp-up {e}: left out")),
            }
        }
        if scheduler && !delay.is_empty() && delay != "0" {
            notes.push(format!(
                "the startup delay of {delay}s is not converted: the scenario starts at once"
            ));
        }
        let on_failure = match el.s("ThreadGroup.on_sample_error") {
            "startnextloop" => Some("next_iteration"),
            "stopthread" => Some("stop_vu"),
            "stoptest" | "stoptestnow" => Some("stop_test"),
            _ => None,
        };
        let new_user = !el.b("ThreadGroup.same_user_on_next_iteration", true);
        let status = if notes.is_empty() {
            Status::Converted
        } else {
            Status::Approximated
        };
        let how = if notes.is_empty() {
            "→ a scenario and its `load`".to_string()
        } else {
            notes.join("; ")
        };
        self.entry(el, parent, status, how);
        let path = join(parent, &el.name);
        self.scenario_from(
            &el.name,
            &el.children,
            scope,
            0,
            scenarios,
            load.clone(),
            on_failure,
        );
        if let Some((s, _)) = scenarios.last_mut() {
            if new_user {
                http_set(s, "cookies", Y::s("per_iteration"));
                http_set(s, "connections", Y::s("per_iteration"));
            }
            let _ = path;
        }
    }

    /// Builds one scenario from a thread group's children.
    #[allow(clippy::too_many_arguments)]
    fn scenario_from(
        &mut self,
        name: &str,
        children: &[El],
        scope: &Scope,
        _n: usize,
        scenarios: &mut Vec<Item>,
        load: Y,
        on_failure: Option<&'static str>,
    ) {
        self.scen = self.plan_scen.clone();
        let path_parent = scope.path.clone();
        let mut inner = scope.clone();
        inner.path = join(&path_parent, name);
        let mut steps = self.children(children, &inner);
        let st = std::mem::take(&mut self.scen);
        let mut comments = Vec::new();
        if !steps.iter().any(|(y, _)| *y != Y::Nothing) {
            comments.push(
                "nothing of this thread group converted (see the report): it only waits".into(),
            );
            steps.push(placeholder());
        }
        let unique = unique_name(name, scenarios);
        let mut s = scenario_y(&unique, load, steps);
        if let Y::Map(m) = &mut s {
            m.retain(|e| e.0 != "_");
        }
        if !st.feeders.is_empty() {
            insert_before(&mut s, "steps", "feeders", Y::Seq(st.feeders));
        }
        if let Some(f) = on_failure {
            insert_before(&mut s, "steps", "on_failure", Y::s(f));
        }
        if let Some((per_min, per_thread, how)) = st.throughput {
            if st.requests > 0 && per_min > 0.0 {
                let secs = 60.0 * st.requests as f64 / per_min;
                let pacing = format!("{}ms", (secs * 1000.0).round() as u64);
                let mut c = vec![format!(
                    "JMeter Constant Throughput Timer: {per_min}/min {how}"
                )];
                if !per_thread {
                    c.push("shared by all threads in JMeter: multiply this pacing by the number of VUs".into());
                }
                if let Y::Map(m) = &mut s {
                    let at = m.iter().position(|e| e.0 == "steps").unwrap_or(m.len());
                    m.insert(at, ("pacing".into(), Y::s(pacing), c));
                }
            }
        }
        if !st.cookie_manager {
            http_set(&mut s, "cookies", Y::s("off"));
            comments.push("no HTTP Cookie Manager in scope: JMeter keeps no cookies, so neither does this scenario".into());
        } else if st.clear_cookies {
            http_set(&mut s, "cookies", Y::s("per_iteration"));
        }
        scenarios.push((s, comments));
    }

    /// A load value (`vus`, `iterations`): a number, or a plan-variable template.
    fn load_number(
        &mut self,
        el: &El,
        parent: &str,
        raw: &str,
        default: &str,
        notes: &mut Vec<String>,
        what: &str,
    ) -> Y {
        let raw = raw.trim();
        if raw.is_empty() {
            return Y::Raw(default.into());
        }
        if raw.parse::<u64>().is_ok() {
            return Y::Raw(raw.into());
        }
        match self.static_text(el, parent, raw) {
            Ok(t) if !t.contains("$${") => Y::s(t),
            Ok(_) | Err(_) => {
                notes.push(format!(
                    "{what} `{raw}` cannot be computed when the plan loads: {default} used"
                ));
                Y::Raw(default.into())
            }
        }
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

    /// Chooses the target (the most used origin), makes those URLs relative, and writes the plan.
    fn finish(mut self, scenarios: Vec<Item>) -> Import {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for o in &self.origins {
            *counts.entry(o).or_default() += 1;
        }
        let target = counts
            .iter()
            .max_by_key(|(o, n)| (**n, std::cmp::Reverse(**o)))
            .map(|(o, _)| o.to_string());
        let mut plan = Y::map();
        let target_comment = match &target {
            Some(t) => vec![format!(
                "the origin of most requests; the others are absolute URLs"
            )]
            .into_iter()
            .filter(|_| counts.len() > 1)
            .map(|s: String| s.replace("{}", t))
            .collect(),
            None => vec!["no HTTP request names a server: change the target".to_string()],
        };
        let target = target.unwrap_or_else(|| "http://localhost".into());
        plan.set_c("target", Y::s(target.clone()), target_comment);
        // Variables: properties, user-defined ones, then those referenced but set by nothing
        // that converted (a script, a function): given empty, to set with -D.
        let props: Vec<(String, String)> = self
            .tr
            .properties
            .iter()
            .map(|(k, p)| (k.clone(), p.var.clone()))
            .collect();
        for (prop, var) in props {
            if !self.vars.iter().any(|v| v.0 == var) {
                let default = self.tr.properties[&prop].default.clone();
                self.vars.insert(
                    0,
                    (
                        var.clone(),
                        default,
                        vec![format!(
                            "JMeter property `{prop}` (${{__P}}): override with -D {var}=..."
                        )],
                    ),
                );
            }
        }
        let mut dropped = Vec::new();
        self.vars.retain(|v| {
            let keep = !self.runtime.contains(&v.0);
            if !keep {
                dropped.push(v.0.clone());
            }
            keep
        });
        for name in dropped {
            self.header.push(format!("`{name}` is a user-defined variable that is also set at run time: onrush keeps it as a runtime variable only (no initial value)"));
        }
        let refs: Vec<String> = self.tr.refs.iter().cloned().collect();
        for r in refs {
            let known = self.vars.iter().any(|v| v.0 == r)
                || self.runtime.contains(&r)
                || r == "vu"
                || r == "iteration";
            if !known {
                self.vars.push((r.clone(), String::new(), vec![format!("`${{{r}}}` is set by nothing that converted (a script? a plugin?): set it with -D {r}=...")]));
            }
        }
        if !self.vars.is_empty() {
            let vars = Y::Map(
                self.vars
                    .iter()
                    .map(|(k, v, c)| (k.clone(), Y::s(v.clone()), c.clone()))
                    .collect(),
            );
            plan.set("vars", vars);
        }
        let mut http = Y::map();
        let mut http_notes = Vec::new();
        if self.follow_redirects {
            http.set("redirects", Y::Raw("20".into()));
            http_notes.push("JMeter samplers follow redirects (at most 20); onrush follows them on the same origin only".to_string());
        }
        if self.decompress {
            http.set("decompress", Y::Raw("true".into()));
            http_notes.push("JMeter decodes gzip/deflate bodies; `decompress: true` does too and sends Accept-Encoding itself".to_string());
        }
        if !http.is_empty() {
            plan.set_c("http", http, http_notes);
        }
        for d in &mut self.data_files {
            for (name, value, _) in &self.vars {
                d.default_path = d.default_path.replace(&format!("${{{name}}}"), value);
            }
        }
        let mut scenarios = Y::Seq(scenarios);
        relativize(&mut scenarios, &target);
        plan.set("scenarios", scenarios);
        let mut text = String::new();
        text.push_str(&format!(
            "# Imported from {} by `onrush import jmx`.\n",
            if self.opts.source_name.is_empty() {
                "a JMeter plan"
            } else {
                &self.opts.source_name
            }
        ));
        text.push_str(
            "# What converted, what is approximated and what is not: see the import report.\n",
        );
        for h in &self.header {
            text.push_str(&format!("# {h}\n"));
        }
        text.push_str(&yaml::write(&plan));
        self.report.entries.sort_by_key(|e| order_key(&e.at));
        Import {
            yaml: text,
            report: self.report,
            data_files: self.data_files,
        }
    }
}

/// Sort key for `[FILE:]line:col`: the main file first, then in position order.
fn order_key(at: &str) -> (bool, String, u32, u32) {
    let mut parts = at.rsplitn(3, ':');
    let col = parts.next().and_then(|c| c.parse().ok()).unwrap_or(0);
    let line = parts.next().and_then(|c| c.parse().ok()).unwrap_or(0);
    let file = parts.next().unwrap_or("").to_string();
    (!file.is_empty(), file, line, col)
}

pub(crate) fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent} / {name}")
    }
}

fn idle_load() -> Y {
    let mut load = Y::map();
    load.set("vus", Y::Raw("1".into()));
    load.set("iterations", Y::Raw("1".into()));
    load
}

/// Whether `items` hold a step (not only comments).
pub(crate) fn has_steps(items: &[Item]) -> bool {
    items.iter().any(|i| i.0 != Y::Nothing)
}

fn placeholder() -> Item {
    let mut think = Y::map();
    think.set("think", Y::s("1ms"));
    (think, Vec::new())
}

fn scenario_y(name: &str, load: Y, steps: Vec<Item>) -> Y {
    let mut s = Y::map();
    s.set("name", Y::s(name));
    s.set("load", load);
    s.set("steps", Y::Seq(steps));
    s
}

fn unique_name(name: &str, scenarios: &[Item]) -> String {
    let base = if name.trim().is_empty() {
        "scenario"
    } else {
        name.trim()
    };
    let base = base.replace("${", "$${");
    let taken = |n: &str| {
        scenarios
            .iter()
            .any(|(s, _)| s.get("name") == Some(&Y::s(n)))
    };
    if !taken(&base) {
        return base;
    }
    (2..)
        .map(|i| format!("{base} {i}"))
        .find(|n| !taken(n))
        .expect("a free name")
}

fn insert_before(map: &mut Y, before: &str, key: &str, value: Y) {
    if let Y::Map(m) = map {
        let at = m.iter().position(|e| e.0 == before).unwrap_or(m.len());
        m.insert(at, (key.to_string(), value, Vec::new()));
    }
}

/// Sets `http.KEY` of a scenario.
fn http_set(s: &mut Y, key: &str, value: Y) {
    if s.get("http").is_none() {
        insert_before(s, "steps", "http", Y::map());
    }
    if let Some(h) = s.get_mut("http") {
        h.set(key, value);
    }
}

/// Request URLs on the target's origin become paths; the others stay absolute.
fn relativize(y: &mut Y, target: &str) {
    match y {
        Y::Str(s) => {
            if let Some(url) = s.strip_prefix(URL_MARK) {
                let rel = url.strip_prefix(target).filter(|r| r.starts_with('/'));
                *s = match rel {
                    Some(r) => r.to_string(),
                    None => url.to_string(),
                };
            }
        }
        Y::Map(m) => m.iter_mut().for_each(|e| relativize(&mut e.1, target)),
        Y::Seq(items) => items.iter_mut().for_each(|e| relativize(&mut e.0, target)),
        _ => {}
    }
}
