//! Step grammars of protocols that onrush-plan does not know: the plan side of the protocol seam.
//!
//! onrush-plan owns the plan document (targets, variables, load models, the flow of steps,
//! extractors, checks, thresholds). A protocol crate that is not built into onrush owns its
//! step: it implements [`StepGrammar`] (the key that starts its steps, its other keys, its
//! JSON Schema and how a step compiles), and the binary that links it passes its grammar in
//! the [`Grammars`] it loads plans with. Such a step becomes [`Step::Custom`](crate::Step):
//! onrush-plan compiles what every request step has (`name`, `timeout`, `extract`, `check`,
//! `on_failure`), the grammar the rest, into a value of its own type that its protocol finds
//! again with [`CustomStep::spec`](crate::CustomStep::spec) when the engine prepares the run.
//!
//! Errors keep the plan's standard: a [`Value`]'s and a [`Mapping`]'s errors name the file,
//! line, column and field, and unknown keys get "did you mean".

use std::any::Any;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::compile::{Ctx, Fields};
use crate::error::PlanError;
use crate::yaml::{Kind, Node};
use crate::Template;

/// The keys every request step may have, whatever its protocol: onrush-plan compiles them.
pub const COMMON_KEYS: [&str; 5] = ["name", "timeout", "extract", "check", "on_failure"];

/// The keys of onrush's own steps: a grammar may not take one as its key.
pub(crate) const RESERVED_KEYS: [&str; 15] = [
    "get", "post", "put", "patch", "delete", "head", "options", "method", "path", "think", "loop",
    "group", "if", "once", "random",
];
const RESERVED_MORE: [&str; 1] = ["script"];

/// How one protocol's steps are written in a plan.
pub trait StepGrammar: Send + Sync + 'static {
    /// The key that makes a step this protocol's (`redis` for `- { redis: HOST:PORT, ... }`):
    /// lower case, unique among the grammars and onrush's own step keys.
    fn key(&self) -> &'static str;

    /// The step's other keys (besides [`key`](Self::key) and [`COMMON_KEYS`]), for unknown-key
    /// errors and their "did you mean".
    fn keys(&self) -> &'static [&'static str];

    /// One step written out, for hints: `{ redis: 127.0.0.1:6379, command: [GET, k] }`.
    fn example(&self) -> &'static str;

    /// JSON Schema `properties` of the step's own keys (the step's key included; the common
    /// keys are added by onrush-plan), for `onrush schema`.
    fn schema(&self) -> serde_json::Value;

    /// What the step's JSON Schema definition has beside its `properties`: a `description`,
    /// rules between keys (`not`, `anyOf`, ...). Merged over the generated definition.
    fn schema_rules(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// Other keys that start a step of this protocol (`shell` beside `exec`).
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }

    /// Compiles one step (its keys already checked against [`keys`](Self::keys)).
    fn compile(&self, step: &Mapping<'_>) -> Result<CompiledStep, PlanError>;
}

pub use crate::compile::split_host_port;
pub use crate::error::{did_you_mean, one_of};

/// A top-level key of the plan that a protocol owns, read once before any scenario:
/// `thrift: { idl: [...] }`, `grpc: { protos: [...] }`. Its compiled value is what the
/// protocol's steps are compiled against ([`Mapping::section`]).
pub trait SectionGrammar: Send + Sync + 'static {
    /// The plan's top-level key (`thrift`).
    fn key(&self) -> &'static str;

    /// The section's JSON Schema (the value of its key), for `onrush schema`.
    fn schema(&self) -> serde_json::Value;

    /// Compiles the section, after `vars:` and the plan's `http:` (given: a section that
    /// talks to a server at load, as gRPC reflection does, uses its TLS settings).
    fn compile(
        &self,
        section: &Value<'_>,
        http: &crate::HttpSettings,
    ) -> Result<Arc<dyn Any + Send + Sync>, PlanError>;
}

/// JSON Schema `properties` of the keys [`Mapping::payload`] reads (`send`, `send_hex` and,
/// with `file`, `send_file`), for a grammar's [`StepGrammar::schema`].
pub fn payload_schema(file: bool) -> serde_json::Map<String, serde_json::Value> {
    let mut props = serde_json::Map::new();
    props.insert("send".into(), serde_json::json!({ "type": ["string", "number", "boolean"], "description": "Text sent (templates allowed)" }));
    props.insert("send_hex".into(), serde_json::json!({ "type": "string", "description": "Bytes sent, as hex digit pairs (spaces allowed)", "examples": ["DE AD BE EF"] }));
    if file {
        props.insert("send_file".into(), serde_json::json!({ "type": "string", "description": "A file sent as it is, streamed from disk at each request (relative to the plan)", "examples": ["payload.bin"] }));
    }
    props
}

/// What a grammar made of one step.
pub struct CompiledStep {
    /// The protocol's own compiled step, found again by [`CustomStep::spec`](crate::CustomStep::spec).
    pub spec: Box<dyn Any + Send + Sync>,
    /// The step's metric name when it has no `name:` (e.g. `redis GET`).
    pub name: String,
}

/// The step grammars a plan is loaded with (none for onrush's built-in protocols, whose
/// grammars onrush-plan still holds).
#[derive(Clone, Default)]
pub struct Grammars {
    list: Vec<Arc<dyn StepGrammar>>,
    sections: Vec<Arc<dyn SectionGrammar>>,
}

impl Grammars {
    /// No grammar beyond onrush's own steps.
    pub fn none() -> &'static Grammars {
        static NONE: Grammars = Grammars {
            list: Vec::new(),
            sections: Vec::new(),
        };
        &NONE
    }

    /// Only `grammar` (a protocol's own tests load plans with it).
    pub fn only(grammar: impl StepGrammar) -> Grammars {
        let mut grammars = Grammars::default();
        grammars
            .add(Arc::new(grammar))
            .expect("a well-formed grammar");
        grammars
    }

    /// Adds `grammar`; refuses a key that is onrush's own or another grammar's.
    pub fn add(&mut self, grammar: Arc<dyn StepGrammar>) -> Result<(), String> {
        let key = grammar.key();
        let well_formed = !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !well_formed {
            return Err(format!(
                "step key {key:?} is not lower case (a-z, 0-9, `_`): plans write it as a key"
            ));
        }
        if RESERVED_KEYS.contains(&key) || RESERVED_MORE.contains(&key) {
            return Err(format!("step key `{key}` is one of onrush's own step keys"));
        }
        for key in std::iter::once(key).chain(grammar.aliases().iter().copied()) {
            if self.get(key).is_some() {
                return Err(format!("two protocols take the step key `{key}`"));
            }
        }
        self.list.push(grammar);
        Ok(())
    }

    /// Adds a top-level section; refuses a key that is the plan's own or another section's.
    pub fn add_section(&mut self, section: Arc<dyn SectionGrammar>) -> Result<(), String> {
        let key = section.key();
        if crate::compile::PLAN_KEYS.contains(&key) {
            return Err(format!("plan key `{key}` is one of onrush's own"));
        }
        if self.section(key).is_some() {
            return Err(format!("two protocols take the plan key `{key}`"));
        }
        self.sections.push(section);
        Ok(())
    }

    /// The section whose key is `key`.
    pub fn section(&self, key: &str) -> Option<&dyn SectionGrammar> {
        self.sections.iter().find(|s| s.key() == key).map(|s| &**s)
    }

    /// Every section, in the order added.
    pub fn sections(&self) -> impl Iterator<Item = &dyn SectionGrammar> {
        self.sections.iter().map(|s| &**s)
    }

    /// The grammar whose key is `key`.
    pub fn get(&self, key: &str) -> Option<&dyn StepGrammar> {
        self.list
            .iter()
            .find(|g| g.key() == key || g.aliases().contains(&key))
            .map(|g| &**g)
    }

    /// Every grammar, in the order added.
    pub fn iter(&self) -> impl Iterator<Item = &dyn StepGrammar> {
        self.list.iter().map(|g| &**g)
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// A mapping of the plan (a step, or a mapping inside one), its keys checked.
pub struct Mapping<'a> {
    cx: &'a Ctx<'a>,
    fields: Fields<'a>,
}

/// One value of the plan with its place in the file, for typed reading and precise errors.
pub struct Value<'a> {
    cx: &'a Ctx<'a>,
    node: &'a Node,
    path: String,
}

impl<'a> Mapping<'a> {
    pub(crate) fn new(cx: &'a Ctx<'a>, fields: Fields<'a>) -> Self {
        Mapping { cx, fields }
    }

    /// The checked entries, for onrush-plan's own compilers of the common keys.
    pub(crate) fn fields(&self) -> &Fields<'a> {
        &self.fields
    }

    /// The value of `key`, if the mapping has it.
    pub fn get(&self, key: &str) -> Option<Value<'a>> {
        self.fields.get(key).map(|node| Value {
            cx: self.cx,
            node,
            path: self.fields.child(key),
        })
    }

    /// The value of `key`; an error at the mapping when it is missing or empty. `expected`
    /// says what it holds (`HOST:PORT`).
    pub fn required(&self, key: &str, expected: &str) -> Result<Value<'a>, PlanError> {
        let node = self.cx.required(&self.fields, key, expected)?;
        Ok(Value {
            cx: self.cx,
            node,
            path: self.fields.child(key),
        })
    }

    /// At most one of `keys` is present (`command` or `pipeline`): which, if any. Two of them
    /// are an error: "`a` and `b` are both given; expected one {per}" (`per`: "command per
    /// step"), with `hint`.
    pub fn at_most_one(
        &self,
        keys: &[&'static str],
        per: &str,
        hint: &str,
    ) -> Result<Option<&'static str>, PlanError> {
        self.cx.at_most_one(&self.fields, keys, per, hint)
    }

    /// The compiled top-level section `key` (`thrift`) when the plan has one and it is a `T`.
    pub fn section<T: Any + Send + Sync>(&self, key: &str) -> Option<Arc<T>> {
        self.cx.section(key)?.clone().downcast::<T>().ok()
    }

    /// The mapping as one value (an error at the whole step, or a step read as the value of
    /// a key it lacks).
    pub fn as_value(&self) -> Value<'a> {
        Value {
            cx: self.cx,
            node: self.fields.node(),
            path: self.fields.path().to_string(),
        }
    }

    /// What a stream or datagram step sends: `send:` (a text template), `send_hex:` (bytes)
    /// or, when `file` allows it, `send_file:` (a file streamed); at most one of them.
    pub fn payload(&self, file: bool) -> Result<Option<crate::TcpPayload>, PlanError> {
        self.cx.payload(&self.fields, file)
    }

    /// An error about the mapping as a whole (a key that must be there is not).
    pub fn error(&self, message: impl Into<String>) -> PlanError {
        self.cx.err(self.fields.node(), self.fields.path(), message)
    }
}

impl<'a> Value<'a> {
    pub(crate) fn new(cx: &'a Ctx<'a>, node: &'a Node, path: String) -> Self {
        Value { cx, node, path }
    }

    /// The field path (`scenarios[0].steps[2].command[1]`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// An error at this value.
    pub fn error(&self, message: impl Into<String>) -> PlanError {
        self.cx.err(self.node, &self.path, message)
    }

    /// An error at this value that names another field (a step's missing `args:`, reported
    /// at the step).
    pub fn error_for_field(&self, field: &str, message: impl Into<String>) -> PlanError {
        self.cx.err(self.node, field, message)
    }

    /// The plan file's name, as errors show it.
    pub fn source(&self) -> &str {
        self.cx.source_name()
    }

    /// Records `path` as a file the plan needs (an IDL's includes): a distributed run sends
    /// it to its agents.
    pub fn needs_file(&self, path: PathBuf) {
        self.cx.needs_file(path);
    }

    /// A text value with the plan's variables expanded; a per-request `${...}` is an error.
    pub fn string(&self) -> Result<String, PlanError> {
        self.cx.string(self.node, &self.path)
    }

    /// A per-request template (`k:${vu}`), rendered by the protocol for each request.
    pub fn template(&self) -> Result<Template, PlanError> {
        if !matches!(self.node.kind, Kind::Scalar(_)) {
            return Err(self.error(format!(
                "expected a text value, found {}",
                self.node.describe()
            )));
        }
        self.cx.template(self.node, &self.path)
    }

    /// A whole number in `min..=max`; `what` explains the value in the hint.
    pub fn uint(&self, min: u64, max: u64, what: &str) -> Result<u64, PlanError> {
        self.cx.uint(self.node, &self.path, min, max, what)
    }

    /// `true` or `false`.
    pub fn boolean(&self) -> Result<bool, PlanError> {
        let key = self
            .path
            .rsplit('.')
            .next()
            .unwrap_or(&self.path)
            .to_string();
        self.cx.boolean(self.node, &self.path, &key)
    }

    /// A duration (`500ms`, `2s`).
    pub fn duration(&self) -> Result<Duration, PlanError> {
        self.cx.duration(self.node, &self.path)
    }

    /// `HOST:PORT` (the host `builtin` allowed, with port 0 meaning the built-in server's).
    pub fn host_port(&self, example: &str) -> Result<(String, u16), PlanError> {
        let text = self.string()?;
        crate::compile::split_host_port(text.trim()).ok_or_else(|| {
            self.error(format!("expected HOST:PORT, found {text:?}"))
                .with_hint(example)
        })
    }

    /// `HOST:PORT`, `tcp://HOST:PORT` or `tls://HOST:PORT`, as `tcp:` and `thrift:` steps take
    /// their server: the host, the port, and whether TLS runs over the connection.
    pub fn stream_target(&self, example: &str) -> Result<(String, u16, bool), PlanError> {
        let text = self.string()?;
        crate::compile::stream_target(&text)
            .map_err(|message| self.error(message).with_hint(example))
    }

    /// A file named relative to the plan, which must exist; a distributed run sends it to
    /// its agents.
    pub fn file(&self, what: &str) -> Result<PathBuf, PlanError> {
        self.cx.plan_file(self.node, &self.path, what)
    }

    /// A directory named relative to the plan, which must exist (an exec step's `cwd:`).
    pub fn directory(&self, what: &str) -> Result<PathBuf, PlanError> {
        let rel = self.string()?;
        let dir = self.cx.base_dir().join(rel.trim());
        if !dir.is_dir() {
            return Err(self
                .error(format!(
                    "{} is not a directory; expected {what}",
                    dir.display()
                ))
                .with_hint(format!(
                    "paths are relative to the plan file's directory ({})",
                    self.cx.base_dir().display()
                )));
        }
        Ok(dir)
    }

    /// A size in bytes (`1MiB`, `64k`, `1500`).
    pub fn bytes(&self) -> Result<u64, PlanError> {
        let text = self.string()?;
        crate::units::parse_bytes(&text).map_err(|e| self.error(e.message).with_hint(e.hint))
    }

    /// The value's text as written in the file (before variables are substituted), for
    /// default names and emptiness checks; `None` for a list, a mapping or null.
    pub fn written(&self) -> Option<&'a str> {
        if self.node.is_null() {
            return None;
        }
        self.node.as_scalar().map(|s| s.text.as_str())
    }

    /// A list's items, or this one value standing for a one-item list (`expect_exit: 0` or
    /// `[0, 1]`); `what` names the items in the error.
    pub fn one_or_many(&self, what: &str, hint: &str) -> Result<Vec<Value<'a>>, PlanError> {
        Ok(self
            .cx
            .one_or_many(self.node, &self.path, what, hint)?
            .into_iter()
            .map(|(node, path)| Value {
                cx: self.cx,
                node,
                path,
            })
            .collect())
    }

    /// The entries of a mapping whose keys are the user's own (`env: { LANG: C }`): each key
    /// (its text is [`written`](Self::written)) and its value, both with the entry's path.
    pub fn entries(&self) -> Result<Vec<(Value<'a>, Value<'a>)>, PlanError> {
        match &self.node.kind {
            Kind::Map(entries) => Ok(entries
                .iter()
                .map(|(k, v)| {
                    let name = k.as_scalar().map_or("", |s| s.text.as_str());
                    let path = format!("{}.{name}", self.path);
                    let key = Value {
                        cx: self.cx,
                        node: k,
                        path: path.clone(),
                    };
                    let value = Value {
                        cx: self.cx,
                        node: v,
                        path,
                    };
                    (key, value)
                })
                .collect()),
            _ => Err(self.error(format!(
                "expected a mapping, found {}",
                self.node.describe()
            ))),
        }
    }

    /// What the value is, for messages: "a list", "a mapping", "null", "the text \"x\"".
    pub fn describe(&self) -> String {
        self.node.describe()
    }

    /// Whether the value is null or absent-valued (`key:` with nothing after it).
    pub fn is_null(&self) -> bool {
        self.node.is_null()
    }

    /// A path named relative to the plan (which need not exist), recorded as a file the plan
    /// needs: a distributed run sends it to its agents.
    pub fn plan_path(&self) -> Result<PathBuf, PlanError> {
        let rel = self.string()?;
        Ok(self.cx.plan_path(rel.trim()))
    }

    /// The plan file's directory, which relative paths start from.
    pub fn base_dir(&self) -> &std::path::Path {
        self.cx.base_dir()
    }

    /// The items of a list (`[SET, k, v]`), each a value of its own.
    pub fn list(&self) -> Result<Vec<Value<'a>>, PlanError> {
        match &self.node.kind {
            Kind::Seq(items) => Ok(items
                .iter()
                .enumerate()
                .map(|(i, node)| Value {
                    cx: self.cx,
                    node,
                    path: format!("{}[{i}]", self.path),
                })
                .collect()),
            _ => Err(self.error(format!("expected a list, found {}", self.node.describe()))),
        }
    }

    /// A mapping whose keys are all in `allowed`.
    pub fn mapping(&self, allowed: &[&str]) -> Result<Mapping<'a>, PlanError> {
        let fields = self.cx.map(self.node, &self.path, allowed)?;
        Ok(Mapping::new(self.cx, fields))
    }

    /// Whether the value is a list.
    pub fn is_list(&self) -> bool {
        matches!(self.node.kind, Kind::Seq(_))
    }

    /// Whether the value is a mapping.
    pub fn is_mapping(&self) -> bool {
        matches!(self.node.kind, Kind::Map(_))
    }
}

// --- For grammars whose steps have sub-commands or URLs (WebSocket) ---

/// A URL split where its path starts (see [`Value::url_parts`]).
pub struct UrlParts {
    /// The text before the path: the scheme and the authority (`ws://host:8080`), the plan's
    /// variables expanded. Empty when the URL starts with a per-request value.
    pub head: String,
    /// A per-request value (`${vu}`, a runtime variable, a function) comes before the path
    /// starts: the head is not all of the scheme and the authority, which are then not known
    /// when the plan loads.
    pub head_per_request: bool,
    /// The path and query (`/chat?u=${vu}`), always starting with `/` (`/` when the URL has
    /// none), rendered per request.
    pub target: Template,
}

/// JSON Schema of the headers [`Value::headers`] reads (name → templated value), as the HTTP
/// request step's `headers:` has them, for a grammar's [`StepGrammar::schema`].
pub fn headers_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "description": "Request headers: name → value (values may use `${vu}`, `${iteration}`)",
        "additionalProperties": {
            "type": ["string", "number", "boolean"],
            "description": "Text rendered per request: plan variables plus `${vu}` (1-based VU number) and `${iteration}` (0-based, per VU)"
        }
    })
}

impl<'a> Mapping<'a> {
    /// The keys present, in file order (a step whose keys depend on its sub-command checks
    /// them itself: [`StepGrammar::keys`] is then the union of every sub-command's keys).
    pub fn keys(&self) -> Vec<&'a str> {
        self.fields.keys().collect()
    }

    /// The plan's unknown-key error for `key` of this mapping, at the key: "unknown key `k`;
    /// expected `a`, `b` or `c`" with "did you mean" from `allowed`, when one is close.
    pub fn unknown_key(&self, key: &str, allowed: &[&str]) -> PlanError {
        let node = self.fields.key(key).unwrap_or(self.fields.node());
        self.cx
            .unknown_key(node, &self.fields.child(key), key, allowed)
    }

    /// An error at `key` itself (its presence is the mistake: "`match` and `count` are both
    /// given"); at the mapping when it has no such key.
    pub fn key_error(&self, key: &str, message: impl Into<String>) -> PlanError {
        let node = self.fields.key(key).unwrap_or(self.fields.node());
        self.cx.err(node, &self.fields.child(key), message)
    }

    /// What the grammar remembers across the steps of the scenario being compiled, in file
    /// order (a `ws: connect` seen before a `ws: send`): one value per type `T`, created with
    /// `T::default()` at the first use in each scenario (setup and teardown are scenarios of
    /// their own). Not shared with other grammars, unless they use the same type.
    pub fn scenario_memory<T: Default + 'static>(&self) -> std::cell::RefMut<'a, T> {
        std::cell::RefMut::map(self.cx.scenario_memory.borrow_mut(), |memory| {
            memory
                .entry(std::any::TypeId::of::<T>())
                .or_insert_with(|| Box::new(T::default()))
                .downcast_mut::<T>()
                .expect("stored under its own type")
        })
    }
}

impl<'a> Value<'a> {
    /// A URL whose path and query may hold per-request values (`ws://host:port/chat?u=${vu}`),
    /// split where the path starts: after `SCHEME://`, at the first `/` or `?` of its literal
    /// start. The grammar checks the scheme and the authority ([`UrlParts::head`]) itself.
    pub fn url_parts(&self) -> Result<UrlParts, PlanError> {
        use crate::compile::{to_template, Part};
        let mut parts = self.cx.expand(self.node, &self.path)?;
        let raw = self.node.as_scalar().map_or("", |s| s.text.as_str());
        let first = match parts.first() {
            Some(Part::Lit(l)) => l.clone(),
            _ => String::new(),
        };
        let literal_start = matches!(parts.first(), Some(Part::Lit(_)));
        let after_scheme = first.find("://").map_or(0, |at| at + 3);
        let (head, rest, head_per_request) = match first[after_scheme..].find(['/', '?']) {
            Some(at) => (
                &first[..after_scheme + at],
                &first[after_scheme + at..],
                false,
            ),
            None => (first.as_str(), "", !literal_start || parts.len() > 1),
        };
        let mut path = String::new();
        if !rest.starts_with('/') {
            path.push('/');
        }
        path.push_str(rest);
        if literal_start {
            parts[0] = Part::Lit(path);
        } else {
            parts.insert(0, Part::Lit(path));
        }
        Ok(UrlParts {
            head: head.to_string(),
            head_per_request,
            target: to_template(parts, raw),
        })
    }

    /// Headers: a mapping of names (HTTP tokens) to per-request templates, as the HTTP
    /// request step's `headers:` (null is none).
    pub fn headers(&self) -> Result<Vec<(String, Template)>, PlanError> {
        self.cx.headers(self.node, &self.path)
    }

    /// A regular expression (on bytes), compiled when the plan loads.
    pub fn regex(&self) -> Result<crate::Shared<regex::bytes::Regex>, PlanError> {
        self.cx.regex(self.node, &self.path)
    }

    /// Bytes written as hex digit pairs, spaces allowed (`"DE AD be ef"`); the error says at
    /// which character (the grammar adds the hint naming its key).
    pub fn hex(&self) -> Result<Vec<u8>, PlanError> {
        let text = self.string()?;
        crate::compile::parse_hex(&text)
            .map_err(|at| self.error(format!("not hexadecimal at character {}: {text:?}", at + 1)))
    }
}
