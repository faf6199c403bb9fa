//! How Thrift is written in a plan: the top-level `thrift: { idl: [FILE...] }` ([`IdlSection`],
//! read once when the plan loads) and `- { thrift: HOST:PORT, call: Service.method, args: {...} }`
//! ([`ThriftGrammar`] → a [`ThriftSpec`]). The IDL is read when the plan loads, so that
//! `onrush validate` reports an IDL that does not parse (at its file, line and column), an
//! unknown service or method, and arguments that do not fit their types (`grammar_args.rs`)
//! before any load.

use std::any::Any;
use std::sync::Arc;

use onrush_plan::grammar::{
    did_you_mean, one_of, CompiledStep, Mapping, SectionGrammar, StepGrammar, Value,
};
use onrush_plan::{HttpSettings, PlanError, Template};
use onrush_thrift::wire::Protocol;
use serde_json::json;

use crate::grammar_args::args;

/// A Thrift call as the plan wrote it, its arguments typed against the plan's IDL.
#[derive(Debug, Clone, PartialEq)]
pub struct ThriftSpec {
    /// `host:port` as written (resolved by the protocol when the run is prepared).
    pub host: String,
    pub port: u16,
    /// `tls://HOST:PORT`: TLS over the connection (Thrift's TSSLSocket), with `http.tls`.
    pub tls: bool,
    /// Every type and service of the plan's IDL files (shared by all steps).
    pub schema: Arc<onrush_thrift::Schema>,
    /// Index into `schema.services`, and of the method in that service's `functions`.
    pub service: usize,
    pub function: usize,
    /// The message name on the wire: `method`, or `Service:method` when multiplexed.
    pub message_name: String,
    pub protocol: Protocol,
    /// `transport: framed` (a 4-byte length before each message) or `buffered` (none).
    pub framed: bool,
    /// The argument struct, constants encoded as they are, `${...}` leaves rendered per call.
    pub args: Vec<onrush_thrift::value::FieldValue<Template>>,
    /// The longest reply accepted, bytes (`max_message`, default 16 MiB): longer is
    /// `bad_response`, read no further.
    pub max_message: usize,
}

impl ThriftSpec {
    /// The called method as the IDL declares it.
    pub fn function(&self) -> &onrush_thrift::Function {
        &self.schema.services[self.service].functions[self.function]
    }
}

const KEYS: &[&str] = &[
    "call",
    "protocol",
    "transport",
    "multiplexed",
    "args",
    "max_message",
];

const EXAMPLE: &str =
    "e.g. `- { thrift: 127.0.0.1:9090, call: Calculator.add, args: { num1: 1, num2: 2 } }` \
     (`thrift: tls://HOST:PORT` for TLS)";

/// The default and the largest reply accepted (a longer one is `bad_response`).
const DEFAULT_MAX_MESSAGE: u64 = 16 * 1024 * 1024;
const MAX_MAX_MESSAGE: u64 = 1024 * 1024 * 1024;

/// The plan's top-level `thrift:` section: its IDL files, read into one schema.
pub struct IdlSection;

impl SectionGrammar for IdlSection {
    fn key(&self) -> &'static str {
        "thrift"
    }

    fn schema(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "description": "Apache Thrift: the IDL files the plan's `thrift:` steps call, read when the plan loads",
            "additionalProperties": false,
            "required": ["idl"],
            "properties": {
                "idl": {
                    "description": "A `.thrift` file or a list of them, relative to the plan (their includes are read too)",
                    "anyOf": [
                        { "type": "string" },
                        { "type": "array", "minItems": 1, "items": { "type": "string" } }
                    ],
                    "examples": [["idl/calculator.thrift"]]
                }
            }
        })
    }

    /// `idl:` one file or a list, relative to the plan.
    fn compile(
        &self,
        section: &Value<'_>,
        _http: &HttpSettings,
    ) -> Result<Arc<dyn Any + Send + Sync>, PlanError> {
        let f = section.mapping(&["idl"])?;
        let idl = f.required("idl", "the `.thrift` file(s) the plan's thrift steps call")?;
        let items = if idl.is_list() {
            idl.list()?
        } else {
            vec![idl]
        };
        let paths = items
            .iter()
            .map(|item| item.file("a Thrift IDL"))
            .collect::<Result<Vec<_>, _>>()?;
        let schema = onrush_thrift::load(&paths).map_err(|e| {
            let source = e.path.display().to_string();
            let err = if e.text.is_empty() {
                PlanError::plain(&source, "", e.message.clone())
            } else {
                PlanError::at(&source, &e.text, e.span.clone(), "", e.message.clone())
            };
            err.with_hint(format!(
                "the IDL named by `thrift.idl` in {} must be valid Apache Thrift",
                section.source()
            ))
        })?;
        for file in &schema.files {
            section.needs_file(file.clone());
        }
        Ok(Arc::new(schema))
    }
}

/// The `thrift:` step grammar.
pub struct ThriftGrammar;

impl StepGrammar for ThriftGrammar {
    fn key(&self) -> &'static str {
        "thrift"
    }

    fn keys(&self) -> &'static [&'static str] {
        KEYS
    }

    fn example(&self) -> &'static str {
        "{ thrift: HOST:PORT, call: Service.method, args }"
    }

    fn schema(&self) -> serde_json::Value {
        json!({
            "thrift": { "type": "string", "description": "HOST:PORT (or tcp://HOST:PORT) of the Thrift server; tls://HOST:PORT for TLS (Thrift's TSSLSocket) with `http.tls` (resolved once)", "examples": ["127.0.0.1:9090", "tls://localhost:9443"] },
            "name": { "type": "string", "description": "Metric name. Default: `Service.method`" },
            "call": { "type": "string", "description": "The method: `Service.method` (a method of a service it extends too)", "examples": ["Calculator.add"] },
            "protocol": { "enum": ["binary", "compact"], "description": "The protocol (default binary)" },
            "transport": { "enum": ["framed", "buffered"], "description": "framed: a 4-byte length before each message (default); buffered: none" },
            "multiplexed": { "type": ["boolean", "string"], "description": "true: the message is named `Service:method` (a TMultiplexedProcessor); a string: the name the service is registered under" },
            "args": { "type": "object", "description": "The arguments by name, typed against the IDL when the plan loads: numbers, strings, enum names, lists, maps and structs as YAML/JSON; `${...}` in any scalar is rendered per call" },
            "max_message": { "type": ["integer", "string"], "description": "The longest reply accepted, bytes (default 16 MiB): longer is bad_response" },
        })
    }

    fn schema_rules(&self) -> serde_json::Value {
        json!({
            "description": "An Apache Thrift call: `call` (Service.method of the plan's IDL) with `args` to `thrift` (HOST:PORT); the reply as JSON is the body for extractors and checks, a declared exception's type the `exception` header",
            "required": ["thrift", "call"]
        })
    }

    fn compile(&self, step: &Mapping<'_>) -> Result<CompiledStep, PlanError> {
        let target = step.required("thrift", "HOST:PORT")?;
        let (host, port, tls) = target.stream_target(EXAMPLE)?;
        let call_value = step.required("call", "the method to call, `Service.method`")?;
        let Some(schema) = step.section::<onrush_thrift::Schema>("thrift") else {
            return Err(target
                .error("a thrift step, but the plan names no IDL")
                .with_hint("add at the top of the plan: `thrift: { idl: [service.thrift] }`"));
        };
        let call = call_value.string()?;
        let (service, function) = method(&schema, &call_value, call.trim())?;
        let svc = &schema.services[service];
        let func = &svc.functions[function];
        let name = format!("{}.{}", svc.name, func.name);
        let protocol = match choice(step, "protocol", &["binary", "compact"])? {
            Some("compact") => Protocol::Compact,
            _ => Protocol::Binary,
        };
        let framed = !matches!(
            choice(step, "transport", &["framed", "buffered"])?,
            Some("buffered")
        );
        let message_name = match step.get("multiplexed") {
            None => func.name.clone(),
            Some(n) => {
                let text = n.string()?;
                match text.trim() {
                    "false" => func.name.clone(),
                    "true" => format!("{}:{}", svc.name, func.name),
                    other if !other.is_empty() && !other.contains(':') => {
                        format!("{other}:{}", func.name)
                    }
                    _ => {
                        return Err(n
                            .error(format!("expected true, false or a service name, found {text:?}"))
                            .with_hint("`multiplexed: true` sends `Service:method`; `multiplexed: Name` registers under another name"))
                    }
                }
            }
        };
        let args = args(&schema, step, svc, func)?;
        let max_message = match step.get("max_message") {
            Some(n) => n.uint(
                16,
                MAX_MAX_MESSAGE,
                "the longest reply in bytes, e.g. `max_message: 1048576`",
            )?,
            None => DEFAULT_MAX_MESSAGE,
        } as usize;
        if func.oneway {
            if let Some(key) = ["extract", "check"]
                .into_iter()
                .find(|k| step.get(k).is_some())
            {
                return Err(step
                    .get(key)
                    .expect("present")
                    .error(format!(
                        "{}.{} is oneway: it has no reply to {key}",
                        svc.name, func.name
                    ))
                    .with_hint(format!("remove `{key}:` from this step")));
            }
        }
        Ok(CompiledStep {
            name,
            spec: Box::new(ThriftSpec {
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
                schema,
            }),
        })
    }
}

/// `Service.method` → indices; unknown names are errors with the valid ones.
fn method(
    schema: &onrush_thrift::Schema,
    at: &Value<'_>,
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
        return Err(at
            .error(format!("expected `Service.method`, found {call:?}"))
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
        return Err(at
            .error(format!("unknown service `{service}`"))
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
        return Err(at
            .error(format!("service `{service}` has no method `{method}`"))
            .with_hint(hint));
    };
    Ok((si, fi))
}

/// `key: one-of-choices`, or None when absent.
fn choice<'c>(
    step: &Mapping<'_>,
    key: &str,
    choices: &[&'c str],
) -> Result<Option<&'c str>, PlanError> {
    let Some(value) = step.get(key) else {
        return Ok(None);
    };
    let text = value.string()?;
    match choices.iter().find(|c| **c == text.trim()) {
        Some(c) => Ok(Some(c)),
        None => Err(value
            .error(format!("expected {}, found {text:?}", one_of(choices)))
            .with_hint(format!("e.g. `{key}: {}`", choices[0]))),
    }
}
