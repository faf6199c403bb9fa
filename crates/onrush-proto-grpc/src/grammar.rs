//! How a gRPC call is written in a plan: `- { grpc: HOST:PORT, call: pkg.Service/Method,
//! message: {...} }` → a [`GrpcSpec`], against the descriptors of the top-level `grpc:` section
//! (`.proto` files or a server's reflection: `section.rs`).
//!
//! Everything the descriptors can tell is checked here, so that `onrush validate` finds it
//! before any load: an unknown service, method or field (with "did you mean" and the valid
//! names), a literal value that does not fit its field (with the field's path).

use onrush_plan::grammar::{did_you_mean, CompiledStep, Mapping, StepGrammar, Value};
use onrush_plan::PlanError;
use prost_reflect::{Kind as PKind, MessageDescriptor, MethodDescriptor};
use serde_json::json;

use crate::section::{address, Descriptors};
use crate::spec::{
    map_key, scalar_value, GrpcMessage, GrpcSpec, GrpcValue, DEFAULT_MAX_MESSAGE, MAX_MAX_MESSAGE,
};

const KEYS: &[&str] = &[
    "call",
    "message",
    "messages",
    "metadata",
    "compression",
    "max_message",
];

const EXAMPLE: &str = "e.g. `- { grpc: 127.0.0.1:50051, call: helloworld.Greeter/SayHello, \
    message: { name: \"user-${vu}\" } }` (`grpcs://HOST:PORT` for TLS)";

/// Metadata names gRPC or HTTP/2 reserve: onrush sets them itself.
fn reserved_metadata(name: &str) -> bool {
    name.starts_with("grpc-")
        || matches!(
            name,
            "content-type" | "te" | "user-agent" | "host" | "connection" | "content-length"
        )
}

/// The `grpc:` step grammar.
pub struct GrpcGrammar;

impl StepGrammar for GrpcGrammar {
    fn key(&self) -> &'static str {
        "grpc"
    }

    fn keys(&self) -> &'static [&'static str] {
        KEYS
    }

    fn example(&self) -> &'static str {
        "{ grpc: HOST:PORT, call: pkg.Service/Method, message: {...} }"
    }

    fn schema(&self) -> serde_json::Value {
        json!({
            "grpc": { "type": "string", "description": "HOST:PORT (or grpc://HOST:PORT) of a gRPC server over h2c; grpcs://HOST:PORT for TLS with `http.tls` (resolved once)", "examples": ["127.0.0.1:50051", "grpcs://localhost:443"] },
            "name": { "type": "string", "description": "Metric name. Default: `grpc package.Service/Method`" },
            "call": { "type": "string", "description": "The method: `package.Service/Method`, from the plan's `grpc.protos`", "examples": ["helloworld.Greeter/SayHello"] },
            "message": { "type": "object", "description": "The request message in its JSON form (field names as in the .proto, or their lowerCamelCase JSON names; enums by name, bytes in base64); values may hold `${...}` templates. Default: an empty message" },
            "messages": { "type": "array", "items": { "type": "object" }, "description": "A client-streaming or bidirectional method: the request messages, sent in order before the stream is half-closed" },
            "metadata": { "type": "object", "additionalProperties": { "type": ["string", "number", "boolean"] }, "description": "Request metadata (lower-case names, templated values); `grpc-*`, `content-type`, `te` are onrush's" },
            "compression": { "enum": ["gzip", "none", "identity"], "description": "`gzip`: request messages are gzip-compressed (grpc-encoding) and the server may compress its own. Default: none" },
            "max_message": { "type": ["integer", "string"], "description": "The largest response message accepted, bytes (default 4194304; larger is `resource_exhausted`)" },
        })
    }

    fn schema_rules(&self) -> serde_json::Value {
        json!({
            "description": "A gRPC call: `call` on the server `grpc`, with `message` (or a client stream's `messages`); the status is the outcome (`grpc-status` other than 0 is a failure named by its code); the response in its JSON form (an array of all messages for a server stream) is the body for extractors and checks",
            "required": ["grpc", "call"],
            "not": { "required": ["message", "messages"] }
        })
    }

    fn compile(&self, step: &Mapping<'_>) -> Result<CompiledStep, PlanError> {
        let target = step.required("grpc", "HOST:PORT")?;
        let (tls, host, port) = address(&target, EXAMPLE)?;
        let Some(descriptors) = step.section::<Descriptors>("grpc") else {
            return Err(target
                .error(
                    "a grpc step, but the plan has no `grpc: { protos: [...] }`; the services \
                     and messages come from .proto files (or a server's reflection)",
                )
                .with_hint(
                    "add at the top of the plan: `grpc: { protos: [protos/greeter.proto] }` \
                     (or `grpc: { reflection: HOST:PORT }`)",
                ));
        };
        let call_value = step.required("call", "the method, e.g. `helloworld.Greeter/SayHello`")?;
        let call = call_value.string()?;
        let method = find_method(&descriptors, &call_value, call.trim())?;
        let input = method.input();
        let messages = messages(step, &method, &input)?;
        let mut metadata = match step.get("metadata") {
            Some(h) => h.headers()?,
            None => Vec::new(),
        };
        for (name, _) in &mut metadata {
            *name = name.to_ascii_lowercase();
            if reserved_metadata(name) {
                let at = step.get("metadata").expect("present");
                return Err(at
                    .error_for_field(
                        &format!("{}.{name}", at.path()),
                        format!(
                            "`{name}` is set by onrush (gRPC reserves it); expected other metadata"
                        ),
                    )
                    .with_hint("`timeout:` sets grpc-timeout and `compression:` grpc-encoding"));
            }
        }
        let gzip = match step.get("compression") {
            None => false,
            Some(c) => match c.string()?.trim() {
                "gzip" => true,
                "none" | "identity" => false,
                other => {
                    return Err(c
                        .error(format!(
                            "unknown compression {other:?}; expected `gzip` or `none`"
                        ))
                        .with_hint("e.g. `compression: gzip`"))
                }
            },
        };
        let max_message = match step.get("max_message") {
            Some(n) => n.uint(
                1,
                MAX_MAX_MESSAGE as u64,
                "the largest message accepted from the server, bytes, e.g. `max_message: 4194304`",
            )? as usize,
            None => DEFAULT_MAX_MESSAGE,
        };
        let service = method.parent_service().full_name().to_string();
        Ok(CompiledStep {
            name: format!("grpc {service}/{}", method.name()),
            spec: Box::new(GrpcSpec {
                tls,
                host,
                port,
                path: format!("/{service}/{}", method.name()),
                method,
                messages,
                metadata,
                gzip,
                max_message,
            }),
        })
    }
}

/// The request messages: `message:` (one), or `messages:` (a list) for a method that streams
/// its requests.
fn messages(
    step: &Mapping<'_>,
    method: &MethodDescriptor,
    input: &MessageDescriptor,
) -> Result<Vec<GrpcMessage>, PlanError> {
    if method.is_client_streaming() {
        return match (step.get("messages"), step.get("message")) {
            (Some(list), None) => {
                if !list.is_list() {
                    return Err(list
                        .error(format!(
                            "expected a list of messages, found {}",
                            list.describe()
                        ))
                        .with_hint("e.g. `messages: [ { n: 1 }, { n: 2 } ]`"));
                }
                list.list()?
                    .iter()
                    .map(|item| message(item, input))
                    .collect()
            }
            (None, Some(one)) => Ok(vec![message(&one, input)?]),
            (None, None) => Ok(Vec::new()),
            (Some(list), Some(_)) => Err(list
                .error("both `message` and `messages`; expected one of them")
                .with_hint("`messages:` is the list of a client stream; `message:` sends one")),
        };
    }
    if let Some(list) = step.get("messages") {
        return Err(list
            .error(format!(
                "`{}` takes one request message; `messages:` is for methods that stream their \
                 requests",
                method.full_name()
            ))
            .with_hint("write `message: { ... }`"));
    }
    Ok(match step.get("message") {
        Some(one) => vec![message(&one, input)?],
        None => vec![GrpcMessage {
            descriptor: input.clone(),
            fields: Vec::new(),
        }],
    })
}

/// `pkg.Service/Method` (or `pkg.Service.Method`) in the pool.
fn find_method(
    descriptors: &Descriptors,
    at: &Value<'_>,
    call: &str,
) -> Result<MethodDescriptor, PlanError> {
    let split = call.split_once('/').or_else(|| call.rsplit_once('.'));
    let Some((service_name, method_name)) = split else {
        return Err(at
            .error(format!("expected SERVICE/METHOD, found {call:?}"))
            .with_hint(
                "e.g. `call: helloworld.Greeter/SayHello` (the package, the service, the method)",
            ));
    };
    let pool = &descriptors.pool;
    let services: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
    let Some(service) = pool.get_service_by_name(service_name.trim_start_matches('.')) else {
        let hint = match did_you_mean(service_name, services.iter().map(String::as_str)) {
            Some(s) => format!("did you mean `{s}`? services: {}", services.join(", ")),
            None if services.is_empty() => format!("{} hold no service", descriptors.origin),
            None => format!("services: {}", services.join(", ")),
        };
        return Err(at
            .error(format!(
                "unknown service `{service_name}` in {}",
                descriptors.origin
            ))
            .with_hint(hint));
    };
    let methods: Vec<String> = service.methods().map(|m| m.name().to_string()).collect();
    let found = service.methods().find(|m| m.name() == method_name);
    match found {
        Some(m) => Ok(m),
        None => {
            let hint = match did_you_mean(method_name, methods.iter().map(String::as_str)) {
                Some(s) => format!(
                    "did you mean `{service_name}/{s}`? methods: {}",
                    methods.join(", ")
                ),
                None => format!("methods of {service_name}: {}", methods.join(", ")),
            };
            Err(at
                .error(format!(
                    "service `{service_name}` has no method `{method_name}`"
                ))
                .with_hint(hint))
        }
    }
}

/// A request message written in YAML, checked against its type.
fn message(value: &Value<'_>, desc: &MessageDescriptor) -> Result<GrpcMessage, PlanError> {
    let entries = if value.is_mapping() {
        value.entries()?
    } else if value.is_null() {
        Vec::new()
    } else {
        return Err(value
            .error(format!(
                "expected a mapping of the fields of {}, found {}",
                desc.full_name(),
                value.describe()
            ))
            .with_hint(format!(
                "fields of {}: {}",
                desc.full_name(),
                field_names(desc)
            )));
    };
    let mut fields = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        let key = k.written().unwrap_or("");
        let field = desc
            .get_field_by_name(key)
            .or_else(|| desc.get_field_by_json_name(key));
        let Some(field) = field else {
            let names: Vec<String> = desc.fields().map(|f| f.name().to_string()).collect();
            let hint = match did_you_mean(key, names.iter().map(String::as_str)) {
                Some(s) => format!(
                    "did you mean `{s}`? fields of {}: {}",
                    desc.full_name(),
                    field_names(desc)
                ),
                None => format!("fields of {}: {}", desc.full_name(), field_names(desc)),
            };
            return Err(k
                .error(format!("message {} has no field `{key}`", desc.full_name()))
                .with_hint(hint));
        };
        if v.is_null() {
            continue;
        }
        let value = if field.is_map() {
            let PKind::Message(entry) = field.kind() else {
                unreachable!("a map field's kind is its entry message")
            };
            let key_kind = entry.map_entry_key_field().kind();
            let value_kind = entry.map_entry_value_field().kind();
            if !v.is_mapping() {
                return Err(v
                    .error(format!(
                        "`{key}` is a map; expected a mapping, found {}",
                        v.describe()
                    ))
                    .with_hint(format!("e.g. `{key}: {{ k: v }}`")));
            }
            let mut out = Vec::new();
            for (mk, mv) in v.entries()? {
                let text = mk.written().unwrap_or("");
                let mkey =
                    map_key(&key_kind, text).map_err(|e| mk.error(format!("map key: {e}")))?;
                out.push((mkey, single(&mv, &value_kind)?));
            }
            GrpcValue::Map(out)
        } else if field.is_list() {
            if !v.is_list() {
                return Err(v
                    .error(format!(
                        "`{key}` is repeated; expected a list, found {}",
                        v.describe()
                    ))
                    .with_hint(format!("e.g. `{key}: [a, b]`")));
            }
            let kind = field.kind();
            GrpcValue::List(
                v.list()?
                    .iter()
                    .map(|item| single(item, &kind))
                    .collect::<Result<_, _>>()?,
            )
        } else {
            single(&v, &field.kind())?
        };
        fields.push((field, value));
    }
    Ok(GrpcMessage {
        descriptor: desc.clone(),
        fields,
    })
}

/// One value of type `kind`: a nested message, a literal (converted now) or a template
/// (converted per request).
fn single(value: &Value<'_>, kind: &PKind) -> Result<GrpcValue, PlanError> {
    if let PKind::Message(m) = kind {
        return Ok(GrpcValue::Message(message(value, m)?));
    }
    if value.is_list() || value.is_mapping() {
        return Err(value
            .error(format!(
                "expected a single {} value, found {}",
                kind_name(kind),
                value.describe()
            ))
            .with_hint("only message fields take a mapping, and repeated fields a list"));
    }
    let template = value.template()?;
    match template.constant_bytes() {
        Some(bytes) => {
            let text = String::from_utf8_lossy(bytes);
            scalar_value(kind, &text).map(GrpcValue::Fixed).map_err(|e| {
                value
                    .error(format!("{e}; the field is {}", kind_name(kind)))
                    .with_hint("write the value as the protobuf JSON mapping does (bytes in base64, enums by name)")
            })
        }
        None => Ok(GrpcValue::Template(template, kind.clone())),
    }
}

/// The fields of a message, for hints.
fn field_names(desc: &MessageDescriptor) -> String {
    let names: Vec<String> = desc.fields().map(|f| f.name().to_string()).collect();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// A protobuf type as the `.proto` writes it.
fn kind_name(kind: &PKind) -> String {
    match kind {
        PKind::Message(m) => format!("message {}", m.full_name()),
        PKind::Enum(e) => format!("enum {}", e.full_name()),
        other => format!("{other:?}").to_ascii_lowercase(),
    }
}
