//! `thrift: { idl: [FILE...] }` → the plan's Thrift schema, and
//! `- { thrift: HOST:PORT, call: Service.method, args: {...} }` → [`ThriftStep`]. The IDL is
//! read here, when the plan loads, so that `onrush validate` reports an IDL that does not parse
//! (at its file, line and column), an unknown service or method, and arguments that do not fit
//! their types (`thrift_args.rs`) before any load.

use std::sync::Arc;

use onrush_thrift::wire::Protocol;

use super::steps::Build;
use super::Ctx;
use crate::error::{did_you_mean, one_of, PlanError};
use crate::yaml::{Kind, Node};
use crate::{Step, ThriftStep};

pub(super) const THRIFT_KEYS: [&str; 12] = [
    "thrift",
    "name",
    "call",
    "protocol",
    "transport",
    "multiplexed",
    "args",
    "max_message",
    "timeout",
    "extract",
    "check",
    "on_failure",
];

const EXAMPLE: &str =
    "e.g. `- { thrift: 127.0.0.1:9090, call: Calculator.add, args: { num1: 1, num2: 2 } }` \
     (`thrift: tls://HOST:PORT` for TLS)";

/// The default and the largest reply accepted (a longer one is `bad_response`).
const DEFAULT_MAX_MESSAGE: u64 = 16 * 1024 * 1024;
const MAX_MAX_MESSAGE: u64 = 1024 * 1024 * 1024;

impl Ctx<'_> {
    /// The plan's top-level `thrift:` mapping: `idl:` one file or a list, relative to the plan.
    pub(super) fn thrift_idl(
        &self,
        node: Option<&Node>,
    ) -> Result<Option<Arc<onrush_thrift::Schema>>, PlanError> {
        let Some(node) = node else {
            return Ok(None);
        };
        let f = self.map(node, "thrift", &["idl"])?;
        let idl = self.required(
            &f,
            "idl",
            "the `.thrift` file(s) the plan's thrift steps call",
        )?;
        let items: Vec<&Node> = match &idl.kind {
            Kind::Seq(items) => items.iter().collect(),
            _ => vec![idl],
        };
        let mut paths = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let field = match &idl.kind {
                Kind::Seq(_) => format!("thrift.idl[{i}]"),
                _ => "thrift.idl".to_string(),
            };
            paths.push(self.plan_file(item, &field, "a Thrift IDL")?);
        }
        let schema = onrush_thrift::load(&paths).map_err(|e| {
            let source = e.path.display().to_string();
            let err = if e.text.is_empty() {
                PlanError::plain(&source, "", e.message.clone())
            } else {
                PlanError::at(&source, &e.text, e.span.clone(), "", e.message.clone())
            };
            err.with_hint(format!(
                "the IDL named by `thrift.idl` in {} must be valid Apache Thrift",
                self.source
            ))
        })?;
        for file in &schema.files {
            self.files.borrow_mut().insert(file.clone());
        }
        Ok(Some(Arc::new(schema)))
    }

    pub(super) fn thrift(&self, node: &Node, path: &str, m: &mut Build) -> Result<Step, PlanError> {
        let f = self.map(node, path, &THRIFT_KEYS)?;
        let (host, port, tls, _) = self.stream_endpoint(&f, "thrift", EXAMPLE)?;
        let call_node = self.required(&f, "call", "the method to call, `Service.method`")?;
        let call_field = f.child("call");
        let Some(schema) = self.thrift.clone() else {
            return Err(self
                .err(
                    f.get("thrift").expect("present"),
                    &f.child("thrift"),
                    "a thrift step, but the plan names no IDL",
                )
                .with_hint("add at the top of the plan: `thrift: { idl: [service.thrift] }`"));
        };
        let call = self.string(call_node, &call_field)?;
        let (service, function) = self.thrift_call(&schema, call_node, &call_field, call.trim())?;
        let svc = &schema.services[service];
        let func = &svc.functions[function];
        let name = match f.get("name") {
            Some(n) => self.string(n, &f.child("name"))?,
            None => format!("{}.{}", svc.name, func.name),
        };
        let protocol = match self.thrift_choice(&f, "protocol", &["binary", "compact"])? {
            Some("compact") => Protocol::Compact,
            _ => Protocol::Binary,
        };
        let framed = !matches!(
            self.thrift_choice(&f, "transport", &["framed", "buffered"])?,
            Some("buffered")
        );
        let message_name = match f.get("multiplexed") {
            None => func.name.clone(),
            Some(n) => {
                let field = f.child("multiplexed");
                let text = self.string(n, &field)?;
                match text.trim() {
                    "false" => func.name.clone(),
                    "true" => format!("{}:{}", svc.name, func.name),
                    other if !other.is_empty() && !other.contains(':') => {
                        format!("{other}:{}", func.name)
                    }
                    _ => {
                        return Err(self
                            .err(n, &field, format!("expected true, false or a service name, found {text:?}"))
                            .with_hint("`multiplexed: true` sends `Service:method`; `multiplexed: Name` registers under another name"))
                    }
                }
            }
        };
        let args = self.thrift_args(&schema, f.get("args"), &f.child("args"), node, svc, func)?;
        let max_message = match f.get("max_message") {
            Some(n) => self.uint(
                n,
                &f.child("max_message"),
                16,
                MAX_MAX_MESSAGE,
                "the longest reply in bytes, e.g. `max_message: 1048576`",
            )?,
            None => DEFAULT_MAX_MESSAGE,
        } as usize;
        let timeout = self.step_timeout(&f)?;
        let metric = m.id(name);
        let (extract, checks, on_failure) = self.step_outcome(&f, metric, m)?;
        if func.oneway && (!extract.is_empty() || !checks.is_empty()) {
            let key = if f.get("extract").is_some() {
                "extract"
            } else {
                "check"
            };
            return Err(self
                .err(
                    f.get(key).expect("present"),
                    &f.child(key),
                    format!(
                        "{}.{} is oneway: it has no reply to {key}",
                        svc.name, func.name
                    ),
                )
                .with_hint(format!("remove `{key}:` from this step")));
        }
        Ok(Step::Thrift(ThriftStep {
            metric,
            host,
            port,
            tls,
            service,
            function,
            message_name,
            protocol,
            framed,
            args,
            max_message,
            timeout,
            extract,
            checks,
            on_failure,
            schema,
        }))
    }

    /// `Service.method` → indices; unknown names are errors with the valid ones.
    fn thrift_call(
        &self,
        schema: &onrush_thrift::Schema,
        node: &Node,
        field: &str,
        call: &str,
    ) -> Result<(usize, usize), PlanError> {
        let services: Vec<&str> = schema.services.iter().map(|s| s.name.as_str()).collect();
        let Some((service, method)) = call.split_once(['.', ':']) else {
            let example = schema
                .services
                .first()
                .and_then(|s| {
                    s.functions
                        .first()
                        .map(|f| format!("{}.{}", s.name, f.name))
                })
                .unwrap_or_else(|| "Service.method".into());
            return Err(self
                .err(
                    node,
                    field,
                    format!("expected `Service.method`, found {call:?}"),
                )
                .with_hint(format!("e.g. `call: {example}`")));
        };
        let Some(si) = schema.services.iter().position(|s| s.name == service) else {
            let hint = match did_you_mean(service, services.iter().copied()) {
                Some(s) => format!(
                    "did you mean `{s}`? The IDL's services: {}",
                    one_of(&services)
                ),
                None => format!("the IDL's services: {}", one_of(&services)),
            };
            return Err(self
                .err(node, field, format!("unknown service `{service}`"))
                .with_hint(hint));
        };
        let svc = &schema.services[si];
        let Some(fi) = svc.functions.iter().position(|f| f.name == method) else {
            let methods: Vec<&str> = svc.functions.iter().map(|f| f.name.as_str()).collect();
            let hint = match did_you_mean(method, methods.iter().copied()) {
                Some(m) => format!(
                    "did you mean `{m}`? {service}'s methods: {}",
                    one_of(&methods)
                ),
                None => format!("{service}'s methods: {}", one_of(&methods)),
            };
            return Err(self
                .err(
                    node,
                    field,
                    format!("service `{service}` has no method `{method}`"),
                )
                .with_hint(hint));
        };
        Ok((si, fi))
    }

    /// `key: one-of-choices`, or None when absent.
    fn thrift_choice<'c>(
        &self,
        f: &super::Fields,
        key: &str,
        choices: &[&'c str],
    ) -> Result<Option<&'c str>, PlanError> {
        let Some(node) = f.get(key) else {
            return Ok(None);
        };
        let field = f.child(key);
        let text = self.string(node, &field)?;
        match choices.iter().find(|c| **c == text.trim()) {
            Some(c) => Ok(Some(c)),
            None => Err(self
                .err(
                    node,
                    &field,
                    format!("expected {}, found {text:?}", one_of(choices)),
                )
                .with_hint(format!("e.g. `{key}: {}`", choices[0]))),
        }
    }
}
