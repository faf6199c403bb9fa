//! How a grammar reads the plan: [`Mapping`]'s and [`Value`]'s typed readers (text, templates,
//! numbers, durations, targets, payloads, files, lists, nested mappings, sections), each with
//! the plan's errors (file, line, column, field, hint).

use std::any::Any;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{Mapping, Value};
use crate::compile::{Ctx, Fields};
use crate::error::PlanError;
use crate::yaml::{Kind, Node};
use crate::Template;

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
