//! JMeter's scoping: config elements, timers, assertions, extractors and pre/post-processors
//! apply to every sampler of their parent controller and below. [`Scope`] carries what is in
//! force; [`Conv::configs`] adds a controller's own elements to it.

use super::{Conv, Item};
use crate::jmx::{El, Props};
use crate::report::Status;
use crate::yaml::Y;

/// What applies to the samplers of a controller.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scope {
    /// The names of the parents, ` / `-joined.
    pub path: String,
    /// Header Manager headers, outer first (a later one with the same name wins).
    pub headers: Vec<(String, String)>,
    /// HTTP Request Defaults.
    pub defaults: Defaults,
    /// Authorization Manager entries: URL prefix, user, password, mechanism.
    pub auth: Vec<(String, String, String, String)>,
    /// Think-time steps, run before each sampler.
    pub timers: Vec<Y>,
    /// Extractors: variable name and its `extract:` value.
    pub extract: Vec<(String, Y)>,
    /// `check:` items.
    pub checks: Vec<Y>,
    pub on_failure: Option<&'static str>,
    /// TCP Sampler Config properties, outer first.
    pub tcp: Vec<crate::jmx::Prop>,
    /// A request timeout (Sample Timeout).
    pub timeout: Option<String>,
    /// Comments for the steps list (scripts that did not convert).
    pub comments: Vec<String>,
    /// Converted JSR223/BeanShell pre-processors, post-processors and assertions, outer first.
    pub pre_scripts: Vec<super::script::Applied>,
    pub post_scripts: Vec<super::script::Applied>,
    pub assert_scripts: Vec<super::script::Applied>,
}

/// HTTP Request Defaults in force.
#[derive(Debug, Clone, Default)]
pub(crate) struct Defaults {
    pub protocol: String,
    pub domain: String,
    pub port: String,
    pub path: String,
    pub encoding: String,
    pub args: Vec<crate::jmx::Prop>,
    pub connect_timeout: String,
    pub response_timeout: String,
}

/// How an element takes part in the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    ThreadGroup,
    Sampler,
    Controller,
    /// Config elements, timers, assertions, pre/post-processors, listeners: apply to a scope.
    Scoped,
    Unknown,
}

pub(crate) fn kind(el: &El) -> Kind {
    let c = el.class.as_str();
    let short = c.rsplit('.').next().unwrap_or(c);
    match c {
        "ThreadGroup" | "SetupThreadGroup" | "PostThreadGroup" => return Kind::ThreadGroup,
        "TestAction" | "DebugSampler" => return Kind::Sampler,
        "TestFragmentController" | "WorkBench" | "RunTime" => return Kind::Controller,
        "ConfigTestElement"
        | "Arguments"
        | "ResultCollector"
        | "Summariser"
        | "ResultAction"
        | "SampleTimeout"
        | "URLRewritingModifier"
        | "AnchorModifier"
        | "UserParameters"
        | "RegExUserParameters"
        | "ParamModifier"
        | "UserParameterModifier"
        | "ProxyControl"
        | "HttpMirrorControl"
        | "MailerResultCollector"
        | "ResultSaver"
        | "DebugPostProcessor" => return Kind::Scoped,
        _ => {}
    }
    let has = |s: &str| short.contains(s);
    if has("ThreadGroup") {
        Kind::ThreadGroup
    } else if has("Sampler") || has("Sampler2") {
        Kind::Sampler
    } else if has("Controller") || has("Control") {
        Kind::Controller
    } else if [
        "Config",
        "Manager",
        "DataSet",
        "Timer",
        "Assertion",
        "Extractor",
        "PostProcessor",
        "PreProcessor",
        "Listener",
        "Collector",
        "Visualizer",
        "Modifier",
        "DataSource",
    ]
    .iter()
    .any(|s| has(s))
    {
        Kind::Scoped
    } else {
        Kind::Unknown
    }
}

impl Conv<'_> {
    /// `parent` plus the scoped elements among `els` (children of the element at `path`).
    pub fn configs(&mut self, els: &[El], parent: &Scope, path: &str) -> Scope {
        let mut scope = parent.clone();
        scope.comments.clear();
        for el in els.iter().filter(|e| e.enabled && kind(e) == Kind::Scoped) {
            match el.class.as_str() {
                "HeaderManager" => self.headers(el, path, &mut scope),
                "ConfigTestElement" => self.defaults(el, path, &mut scope),
                "AuthManager" => self.auth(el, path, &mut scope),
                "CookieManager" => self.cookies(el, path),
                "CSVDataSet" => self.csv(el, path),
                "CounterConfig" => self.counter(el, path),
                "RandomVariableConfig" => self.random_variable(el, path),
                "Arguments" => {
                    let list = el
                        .prop("Arguments.arguments")
                        .map(|p| p.children.clone())
                        .unwrap_or_default();
                    self.arguments(el, path, &list);
                    self.entry(
                        el,
                        path,
                        Status::Converted,
                        "→ plan `vars` (JMeter's user-defined variables are global too)",
                    );
                }
                "ResultAction" => {
                    let (f, how) = match el.s("OnError.action") {
                        "1" => (Some("stop_vu"), "stop the thread → `on_failure: stop_vu`"),
                        "2" | "3" => (Some("stop_test"), "stop the test → `on_failure: stop_test`"),
                        "4" | "5" => (
                            Some("next_iteration"),
                            "start next loop → `on_failure: next_iteration`",
                        ),
                        _ => (None, "continue (the default)"),
                    };
                    if f.is_some() {
                        scope.on_failure = f;
                    }
                    self.entry(el, path, Status::Converted, how);
                }
                "SampleTimeout" => {
                    let ms = el.s("InterruptTimer.timeout").trim();
                    if ms.parse::<u64>().is_ok_and(|m| m > 0) {
                        scope.timeout = Some(format!("{ms}ms"));
                        self.entry(el, path, Status::Converted, "→ the requests' `timeout`");
                    } else {
                        self.entry(el, path, Status::NotConverted, format!("timeout `{ms}` is not a number of milliseconds; set `timeout:` by hand"));
                    }
                }
                _ => {
                    if is_script(el) && self.script_scoped(el, path, &mut scope) {
                        continue;
                    }
                    if !self.post(el, path, &mut scope) && !self.timer(el, path, &mut scope) {
                        self.scoped_other(el, path, &mut scope);
                    }
                }
            }
        }
        scope
    }

    fn headers(&mut self, el: &El, path: &str, scope: &mut Scope) {
        let list = el
            .prop("HeaderManager.headers")
            .map(|p| p.children.clone())
            .unwrap_or_default();
        let mut skipped = Vec::new();
        for h in &list {
            let name = h.s("Header.name").trim().to_string();
            if name.is_empty() {
                continue;
            }
            if name.eq_ignore_ascii_case("accept-encoding") {
                self.decompress = true;
                skipped.push(format!("{name} (→ `http.decompress: true`)"));
                continue;
            }
            if name.eq_ignore_ascii_case("content-length")
                || name.eq_ignore_ascii_case("transfer-encoding")
            {
                skipped.push(name);
                continue;
            }
            let value = self.text(el, path, h.s("Header.value")).text;
            scope
                .headers
                .retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
            scope.headers.push((name, value));
        }
        if skipped.is_empty() {
            self.entry(el, path, Status::Converted, "→ the requests' `headers`");
        } else {
            self.entry(
                el,
                path,
                Status::Approximated,
                format!(
                    "→ `headers`; {} left out: onrush sets it",
                    skipped.join(", ")
                ),
            );
        }
    }

    fn defaults(&mut self, el: &El, path: &str, scope: &mut Scope) {
        if el.props.iter().any(|p| p.name.starts_with("TCPSampler.")) {
            let set: Vec<_> = el
                .props
                .iter()
                .filter(|p| !p.value.trim().is_empty())
                .cloned()
                .collect();
            scope.tcp.extend(set);
            self.entry(
                el,
                path,
                Status::Converted,
                "TCP Sampler Config → applied to each TCP sampler in scope",
            );
            return;
        }
        let d = &mut scope.defaults;
        let set = |field: &mut String, value: &str| {
            if !value.trim().is_empty() {
                *field = value.trim().to_string();
            }
        };
        set(&mut d.protocol, el.s("HTTPSampler.protocol"));
        set(&mut d.domain, el.s("HTTPSampler.domain"));
        set(&mut d.port, el.s("HTTPSampler.port"));
        set(&mut d.path, el.s("HTTPSampler.path"));
        set(&mut d.encoding, el.s("HTTPSampler.contentEncoding"));
        set(&mut d.connect_timeout, el.s("HTTPSampler.connect_timeout"));
        set(
            &mut d.response_timeout,
            el.s("HTTPSampler.response_timeout"),
        );
        if let Some(args) = el
            .prop("HTTPsampler.Arguments")
            .and_then(|a| a.prop("Arguments.arguments"))
        {
            d.args.extend(args.children.iter().cloned());
        }
        let mut notes = Vec::new();
        if el.b("HTTPSampler.image_parser", false) {
            notes.push("embedded resources (images, scripts) are not downloaded: add steps for the ones that matter");
        }
        if el.s("HTTPSampler.proxyHost").trim() != "" {
            notes.push("the proxy is not converted: onrush connects directly");
        }
        if notes.is_empty() {
            self.entry(
                el,
                path,
                Status::Converted,
                "HTTP Request Defaults → applied to each request in scope",
            );
        } else {
            self.entry(el, path, Status::Approximated, notes.join("; "));
        }
    }

    fn auth(&mut self, el: &El, path: &str, scope: &mut Scope) {
        let list = el
            .prop("AuthManager.auth_list")
            .map(|p| p.children.clone())
            .unwrap_or_default();
        let mut others = Vec::new();
        for a in &list {
            let mech = a.s("Authorization.mechanism").trim().to_ascii_uppercase();
            let mech = if mech.is_empty() {
                "BASIC".to_string()
            } else {
                mech
            };
            if mech != "BASIC" && mech != "BASIC_DIGEST" {
                others.push(mech.clone());
            }
            let user = self.text(el, path, a.s("Authorization.username")).text;
            let pass = self.text(el, path, a.s("Authorization.password")).text;
            scope.auth.push((
                a.s("Authorization.url").trim().to_string(),
                user,
                pass,
                mech,
            ));
        }
        if others.is_empty() {
            self.entry(el, path, Status::Converted, "→ `auth: { basic: ... }` on the requests whose URL starts with an entry's URL (sent pre-emptively, as JMeter's HttpClient4 does)");
        } else {
            self.entry(el, path, Status::NotConverted, format!("{} authentication is not available in onrush (only Basic and Bearer): those entries are left out", others.join(", ")));
        }
    }

    fn cookies(&mut self, el: &El, path: &str) {
        self.scen.cookie_manager = true;
        let clear = el.b("CookieManager.clearEachIteration", false);
        self.scen.clear_cookies |= clear;
        let user_cookies = el
            .prop("CookieManager.cookies")
            .is_some_and(|c| !c.children.is_empty());
        let how = if clear {
            "→ `http.cookies: per_iteration` (cleared each iteration)"
        } else {
            "→ onrush's per-VU cookie jar (`http.cookies: on`, the default)"
        };
        if user_cookies {
            self.entry(el, path, Status::Approximated, format!("{how}; its user-defined cookies are not converted: send them with a `Cookie` header"));
        } else {
            self.entry(el, path, Status::Converted, how);
        }
    }

    /// Script elements and the rest: reported; script text kept as comments.
    fn scoped_other(&mut self, el: &El, path: &str, scope: &mut Scope) {
        let c = el.class.as_str();
        let (status, note): (Status, String) = match c {
            "ResultCollector" | "Summariser" | "MailerResultCollector" => (
                Status::Converted,
                "listener dropped: onrush records every result in its results directory (summary.json, intervals, the HTML report; `onrush report`)".into(),
            ),
            "BackendListener" => (
                Status::Approximated,
                "backend listener dropped: stream live metrics with `onrush run --influx URL` (InfluxDB) or `--metrics-addr` (Prometheus)".into(),
            ),
            "ResultSaver" => (Status::NotConverted, "onrush does not save response bodies to files; extract what you need or check it with `body_sha256`".into()),
            "CacheManager" => (Status::Approximated, "onrush has no HTTP cache: every request is sent (JMeter could answer some from its cache)".into()),
            "DNSCacheManager" => (Status::Approximated, "onrush resolves host names once, when the plan loads".into()),
            "KeystoreConfig" => (Status::NotConverted, "client certificates: set `http.tls.client_p12` or `identities` (docs/plan.md, Client identities)".into()),
            "DebugPostProcessor" => (Status::Converted, "a debugging aid: dropped".into()),
            "SyncTimer" => (Status::NotConverted, "onrush has no rendezvous point: use an open model (`rate:`) to send bursts".into()),
            _ if is_script(el) => {
                let why = if el.s_any(&["script", "BeanShellSampler.query", "filename", "classname"]).trim().is_empty() {
                    super::script::EMPTY
                } else if c.ends_with("Timer") {
                    "script timers are not converted: a `think:` step gives a fixed or random pause"
                } else if c.ends_with("Listener") {
                    "script listeners are not converted: onrush records every sample in its results"
                } else {
                    "only JSR223/BeanShell pre-/post-processors, assertions and samplers convert"
                };
                self.script_not_converted(el, path, why, &mut scope.comments);
                return;
            }
            _ => (Status::NotConverted, "onrush has no equivalent for this element (or does not know it): left out".into()),
        };
        self.entry(el, path, status, note);
    }
}

impl Conv<'_> {
    /// Keeps a script that is not ported, for naming what sets a variable nothing converted
    /// sets (`finish`).
    pub(crate) fn remember_script(&mut self, el: &El) {
        let text = el.s_any(&["script", "BeanShellSampler.query", "filename", "classname"]);
        self.scripts
            .push((format!("{} `{}`", el.class, el.name), text.to_string()));
    }
}

pub(crate) fn is_script(el: &El) -> bool {
    let c = el.class.as_str();
    c.starts_with("JSR223")
        || c.starts_with("BeanShell")
        || c.starts_with("BSF")
        || c == "JavaSampler"
        || c == "JavaConfig"
        || c == "JUnitSampler"
}

/// The language and lines of a script element (inline, or the file it names), as comments.
pub(crate) fn script_text(el: &El) -> (String, Vec<String>) {
    let lang = match el.s("scriptLanguage").trim() {
        "" if el.class.starts_with("BeanShell") => "BeanShell".to_string(),
        "" if el.class.starts_with("Java") || el.class.starts_with("JUnit") => "Java".to_string(),
        "" => "script".to_string(),
        l => l.to_string(),
    };
    let class = el.s_any(&["classname", "junitSampler.classname"]);
    let file = el.s_any(&["filename", "BeanShellSampler.filename"]);
    let script = el.s_any(&["script", "BeanShellSampler.query"]);
    let mut lines = Vec::new();
    if !class.is_empty() {
        lines.push(format!("  Java class: {class}"));
    }
    if !file.is_empty() {
        lines.push(format!("  script file: {file}"));
    }
    for line in script.lines().take(200) {
        lines.push(format!("  | {line}"));
    }
    if script.lines().count() > 200 {
        lines.push("  | ... (cut at 200 lines)".into());
    }
    (lang, lines)
}

/// Item for the steps list that holds only comments.
pub(crate) fn comment_item(comments: Vec<String>) -> Item {
    (Y::Nothing, comments)
}
