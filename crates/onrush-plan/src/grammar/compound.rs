//! Readers for steps with more shape than keys and values: sub-commands whose keys differ
//! (`ws: connect | send | ...`), a step's memory across its scenario, URLs whose path holds
//! per-request values, headers, regular expressions, hex bytes.

use super::{Mapping, Value};
use crate::error::PlanError;
use crate::Template;

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
