//! gRPC in the plan: `- { grpc: HOST:PORT, call: pkg.Service/Method, message: {...} }` →
//! [`GrpcStep`], against the descriptors of the top-level `grpc:` section (`.proto` files or
//! a server's reflection: `grpc_section.rs`).
//!
//! Everything the descriptors can tell is checked here, so that `onrush validate` finds it
//! before any load: an unknown
//! service, method or field (with "did you mean" and the valid names), a literal value that
//! does not fit its field (with the field's path).

use prost_reflect::{Kind as PKind, MessageDescriptor};

use super::grpc_section::Descriptors;
use super::steps::Build;
use super::Ctx;
use crate::error::{did_you_mean, PlanError};
use crate::grpc::{
    map_key, scalar_value, GrpcMessage, GrpcStep, GrpcValue, DEFAULT_MAX_MESSAGE, MAX_MAX_MESSAGE,
};
use crate::yaml::{Kind, Node};
use crate::Step;

pub(super) const GRPC_KEYS: [&str; 12] = [
    "grpc",
    "name",
    "call",
    "message",
    "messages",
    "metadata",
    "timeout",
    "compression",
    "max_message",
    "extract",
    "check",
    "on_failure",
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

impl Ctx<'_> {
    pub(super) fn grpc(&self, node: &Node, path: &str, m: &mut Build) -> Result<Step, PlanError> {
        let f = self.map(node, path, &GRPC_KEYS)?;
        let target_node = f.get("grpc").expect("the dispatcher found `grpc`");
        let field = f.child("grpc");
        let text = self.string(target_node, &field)?;
        let (tls, host, port) = self.grpc_address(target_node, &field, &text, EXAMPLE)?;
        let Some(descriptors) = &self.grpc else {
            return Err(self
                .err(
                    target_node,
                    &field,
                    "a grpc step, but the plan has no `grpc: { protos: [...] }`; the services \
                     and messages come from .proto files (or a server's reflection)",
                )
                .with_hint(
                    "add at the top of the plan: `grpc: { protos: [protos/greeter.proto] }` \
                     (or `grpc: { reflection: HOST:PORT }`)",
                ));
        };
        let call_node =
            self.required(&f, "call", "the method, e.g. `helloworld.Greeter/SayHello`")?;
        let call_field = f.child("call");
        let call = self.string(call_node, &call_field)?;
        let method = self.grpc_method(descriptors, call_node, &call_field, call.trim())?;
        let input = method.input();
        let messages = if method.is_client_streaming() {
            match (f.get("messages"), f.get("message")) {
                (Some(list), None) => {
                    let Kind::Seq(items) = &list.kind else {
                        return Err(self
                            .err(
                                list,
                                &f.child("messages"),
                                format!("expected a list of messages, found {}", list.describe()),
                            )
                            .with_hint("e.g. `messages: [ { n: 1 }, { n: 2 } ]`"));
                    };
                    let mut out = Vec::with_capacity(items.len());
                    for (i, item) in items.iter().enumerate() {
                        out.push(self.grpc_message(
                            item,
                            &format!("{}[{i}]", f.child("messages")),
                            &input,
                        )?);
                    }
                    out
                }
                (None, Some(one)) => vec![self.grpc_message(one, &f.child("message"), &input)?],
                (None, None) => Vec::new(),
                (Some(list), Some(_)) => {
                    return Err(self
                        .err(
                            list,
                            &f.child("messages"),
                            "both `message` and `messages`; expected one of them",
                        )
                        .with_hint(
                            "`messages:` is the list of a client stream; `message:` sends one",
                        ))
                }
            }
        } else {
            if let Some(list) = f.get("messages") {
                return Err(self
                    .err(
                        list,
                        &f.child("messages"),
                        format!(
                            "`{}` takes one request message; `messages:` is for methods that \
                             stream their requests",
                            method.full_name()
                        ),
                    )
                    .with_hint("write `message: { ... }`"));
            }
            match f.get("message") {
                Some(one) => vec![self.grpc_message(one, &f.child("message"), &input)?],
                None => vec![GrpcMessage {
                    descriptor: input.clone(),
                    fields: Vec::new(),
                }],
            }
        };
        let mut metadata = match f.get("metadata") {
            Some(h) => self.headers(h, &f.child("metadata"))?,
            None => Vec::new(),
        };
        for (name, _) in &mut metadata {
            *name = name.to_ascii_lowercase();
            if reserved_metadata(name) {
                let n = f.get("metadata").expect("present");
                return Err(self
                    .err(
                        n,
                        &format!("{}.{name}", f.child("metadata")),
                        format!(
                            "`{name}` is set by onrush (gRPC reserves it); expected other metadata"
                        ),
                    )
                    .with_hint("`timeout:` sets grpc-timeout and `compression:` grpc-encoding"));
            }
        }
        let gzip = match f.get("compression") {
            None => false,
            Some(c) => {
                let t = self.string(c, &f.child("compression"))?;
                match t.trim() {
                    "gzip" => true,
                    "none" | "identity" => false,
                    other => {
                        return Err(self
                            .err(
                                c,
                                &f.child("compression"),
                                format!("unknown compression {other:?}; expected `gzip` or `none`"),
                            )
                            .with_hint("e.g. `compression: gzip`"))
                    }
                }
            }
        };
        let max_message = match f.get("max_message") {
            Some(n) => self.uint(
                n,
                &f.child("max_message"),
                1,
                MAX_MAX_MESSAGE as u64,
                "the largest message accepted from the server, bytes, e.g. `max_message: 4194304`",
            )? as usize,
            None => DEFAULT_MAX_MESSAGE,
        };
        let name = match f.get("name") {
            Some(n) => self.string(n, &f.child("name"))?,
            None => format!(
                "grpc {}/{}",
                method.parent_service().full_name(),
                method.name()
            ),
        };
        let timeout = self.step_timeout(&f)?;
        let metric = m.id(name);
        let (extract, checks, on_failure) = self.step_outcome(&f, metric, m)?;
        Ok(Step::Grpc(GrpcStep {
            metric,
            tls,
            host,
            port,
            path: format!("/{}/{}", method.parent_service().full_name(), method.name()),
            method,
            messages,
            metadata,
            timeout,
            gzip,
            max_message,
            extract,
            checks,
            on_failure,
        }))
    }

    /// `pkg.Service/Method` (or `pkg.Service.Method`) in the pool.
    fn grpc_method(
        &self,
        descriptors: &Descriptors,
        node: &Node,
        field: &str,
        call: &str,
    ) -> Result<prost_reflect::MethodDescriptor, PlanError> {
        let split = call.split_once('/').or_else(|| call.rsplit_once('.'));
        let Some((service_name, method_name)) = split else {
            return Err(self
                .err(node, field, format!("expected SERVICE/METHOD, found {call:?}"))
                .with_hint("e.g. `call: helloworld.Greeter/SayHello` (the package, the service, the method)"));
        };
        let pool = &descriptors.pool;
        let services: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        let Some(service) = pool.get_service_by_name(service_name.trim_start_matches('.')) else {
            let hint = match did_you_mean(service_name, services.iter().map(String::as_str)) {
                Some(s) => format!("did you mean `{s}`? services: {}", services.join(", ")),
                None if services.is_empty() => format!("{} hold no service", descriptors.origin),
                None => format!("services: {}", services.join(", ")),
            };
            return Err(self
                .err(
                    node,
                    field,
                    format!("unknown service `{service_name}` in {}", descriptors.origin),
                )
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
                Err(self
                    .err(
                        node,
                        field,
                        format!("service `{service_name}` has no method `{method_name}`"),
                    )
                    .with_hint(hint))
            }
        }
    }

    /// A request message written in YAML, checked against its type.
    fn grpc_message(
        &self,
        node: &Node,
        path: &str,
        desc: &MessageDescriptor,
    ) -> Result<GrpcMessage, PlanError> {
        let entries: &[(Node, Node)] = match &node.kind {
            Kind::Map(e) => e,
            _ if node.is_null() => &[],
            _ => {
                return Err(self
                    .err(
                        node,
                        path,
                        format!(
                            "expected a mapping of the fields of {}, found {}",
                            desc.full_name(),
                            node.describe()
                        ),
                    )
                    .with_hint(format!(
                        "fields of {}: {}",
                        desc.full_name(),
                        field_names(desc)
                    )))
            }
        };
        let mut fields = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let key = &k.as_scalar().expect("keys are scalars").text;
            let field_path = format!("{path}.{key}");
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
                return Err(self
                    .err(
                        k,
                        &field_path,
                        format!("message {} has no field `{key}`", desc.full_name()),
                    )
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
                let Kind::Map(pairs) = &v.kind else {
                    return Err(self
                        .err(
                            v,
                            &field_path,
                            format!(
                                "`{key}` is a map; expected a mapping, found {}",
                                v.describe()
                            ),
                        )
                        .with_hint(format!("e.g. `{key}: {{ k: v }}`")));
                };
                let mut out = Vec::with_capacity(pairs.len());
                for (mk, mv) in pairs {
                    let text = &mk.as_scalar().expect("keys are scalars").text;
                    let item_path = format!("{field_path}.{text}");
                    let mkey = map_key(&key_kind, text)
                        .map_err(|e| self.err(mk, &item_path, format!("map key: {e}")))?;
                    out.push((mkey, self.grpc_single(mv, &item_path, &value_kind)?));
                }
                GrpcValue::Map(out)
            } else if field.is_list() {
                let Kind::Seq(items) = &v.kind else {
                    return Err(self
                        .err(
                            v,
                            &field_path,
                            format!(
                                "`{key}` is repeated; expected a list, found {}",
                                v.describe()
                            ),
                        )
                        .with_hint(format!("e.g. `{key}: [a, b]`")));
                };
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    out.push(self.grpc_single(
                        item,
                        &format!("{field_path}[{i}]"),
                        &field.kind(),
                    )?);
                }
                GrpcValue::List(out)
            } else {
                self.grpc_single(v, &field_path, &field.kind())?
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
    fn grpc_single(&self, node: &Node, path: &str, kind: &PKind) -> Result<GrpcValue, PlanError> {
        if let PKind::Message(m) = kind {
            return Ok(GrpcValue::Message(self.grpc_message(node, path, m)?));
        }
        if node.as_scalar().is_none() {
            return Err(self
                .err(
                    node,
                    path,
                    format!(
                        "expected a single {} value, found {}",
                        kind_name(kind),
                        node.describe()
                    ),
                )
                .with_hint("only message fields take a mapping, and repeated fields a list"));
        }
        let template = self.template(node, path)?;
        match template.constant_bytes() {
            Some(bytes) => {
                let text = String::from_utf8_lossy(bytes);
                scalar_value(kind, &text).map(GrpcValue::Fixed).map_err(|e| {
                    self.err(node, path, format!("{e}; the field is {}", kind_name(kind)))
                        .with_hint("write the value as the protobuf JSON mapping does (bytes in base64, enums by name)")
                })
            }
            None => Ok(GrpcValue::Template(template, kind.clone())),
        }
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
