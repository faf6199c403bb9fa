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
use std::sync::Arc;

use crate::compile::{Ctx, Fields};
use crate::error::PlanError;
use crate::yaml::Node;

/// The keys every request step may have, whatever its protocol: onrush-plan compiles them.
pub const COMMON_KEYS: [&str; 7] = [
    "name",
    "timeout",
    "extract",
    "check",
    "on_failure",
    "before",
    "after",
];

/// The keys of onrush's own steps: a grammar may not take one as its key.
pub(crate) const RESERVED_KEYS: [&str; 6] = ["think", "loop", "group", "if", "once", "random"];
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

    /// The protocol's name, as [`CustomStep::protocol`](crate::CustomStep::protocol) holds it
    /// (default: [`key`](Self::key); `http` for the step whose keys are its methods).
    fn protocol(&self) -> &'static str {
        self.key()
    }

    /// A message and a hint for a key that is no key of any step (`GET:`, `url:`), when this
    /// protocol knows what the user meant; asked for every unknown key of its own steps and
    /// of a step that no grammar takes.
    fn explain_unknown(&self, key: &str) -> Option<(String, String)> {
        let _ = key;
        None
    }

    /// Whether this protocol's session calls a step's `before:` hook (a script function that
    /// may change the request before it is sent: `onrush_script::Engine::before`). A protocol
    /// that says `false` (the default) has its steps' `before:` refused when the plan loads.
    fn supports_before(&self) -> bool {
        false
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

/// The step grammars a plan is loaded with: every protocol's, onrush's own included
/// (`onrush_protocols::grammars()`); onrush-plan itself holds none.
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
        for key in std::iter::once(key).chain(grammar.aliases().iter().copied()) {
            if RESERVED_KEYS.contains(&key) || RESERVED_MORE.contains(&key) {
                return Err(format!("step key `{key}` is one of onrush's own step keys"));
            }
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

mod compound;
mod reading;
mod templates;

pub use compound::{headers_schema, UrlParts};
pub use templates::{split_url, template_of, TemplatePart, UrlError};
