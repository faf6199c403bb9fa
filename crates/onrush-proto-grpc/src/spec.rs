//! The compiled form of a `grpc:` step: its method (from the plan's `.proto` files, compiled
//! when the plan loads, or a server's reflection) and its request messages as typed templates.
//!
//! A request message is kept as a tree that follows the message's descriptor: every field was
//! checked against the `.proto` when the plan loaded (names, nesting, literal values), so at
//! run time only the `${...}` values are rendered and converted to their field's type
//! ([`scalar_value`]): a rendered value that does not fit (`"abc"` for an `int32`) fails that
//! request, never the plan.

use std::time::Duration;

use onrush_plan::{Template, TlsSettings};
use prost_reflect::{FieldDescriptor, Kind, MapKey, MessageDescriptor, MethodDescriptor, Value};

/// `grpc: { reflection: HOST:PORT }`: the server the plan takes its gRPC descriptors from,
/// by server reflection, when it loads.
#[derive(Debug, Clone, PartialEq)]
pub struct ReflectionSource {
    /// `grpcs://`: TLS with the plan's `http.tls`, ALPN `h2`; otherwise h2c.
    pub tls: bool,
    /// The host as written (the TLS server name and the `:authority`).
    pub host: String,
    pub port: u16,
    /// The plan's top-level `http.tls`.
    pub tls_settings: TlsSettings,
    /// The plan's top-level `http.timeout`: the whole fetch, connecting included.
    pub timeout: Duration,
}

impl std::fmt::Display for ReflectionSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.tls { "grpcs" } else { "grpc" };
        write!(f, "{scheme}://{}:{}", self.host, self.port)
    }
}

/// The default and the largest gRPC message (either way) a step accepts, in bytes: gRPC's
/// own default receive limit is 4 MiB.
pub const DEFAULT_MAX_MESSAGE: usize = 4 << 20;
pub const MAX_MAX_MESSAGE: usize = 1 << 30;

/// `- { grpc: HOST:PORT, call: pkg.Service/Method, message: {...} }` as the plan wrote it:
/// one gRPC call (its timeout, extractors and checks are the step's `CustomStep`'s).
#[derive(Debug, Clone, PartialEq)]
pub struct GrpcSpec {
    /// `grpcs://`: TLS (with `http.tls`), ALPN `h2`; otherwise h2c with prior knowledge.
    pub tls: bool,
    /// The host as written (resolved by the protocol when the run is prepared; the TLS server
    /// name and the `:authority`).
    pub host: String,
    pub port: u16,
    pub method: MethodDescriptor,
    /// `/package.Service/Method`, the request's `:path`.
    pub path: String,
    /// The request messages: exactly one unless the method streams its requests.
    pub messages: Vec<GrpcMessage>,
    /// `metadata:` (lower-case names; templated values).
    pub metadata: Vec<(String, Template)>,
    /// `compression: gzip`: request messages are gzip-compressed, and the server is told it
    /// may compress its own.
    pub gzip: bool,
    /// The largest message accepted from the server (longer is a `bad_response` failure).
    pub max_message: usize,
}

/// A request message: its type and the fields the plan sets, in plan order.
#[derive(Debug, Clone, PartialEq)]
pub struct GrpcMessage {
    pub descriptor: MessageDescriptor,
    pub fields: Vec<(FieldDescriptor, GrpcValue)>,
}

/// One value of a request message.
#[derive(Debug, Clone, PartialEq)]
pub enum GrpcValue {
    /// Checked and converted when the plan loaded.
    Fixed(Value),
    /// Rendered per request, then converted to `kind` ([`scalar_value`]).
    Template(Template, Kind),
    Message(GrpcMessage),
    List(Vec<GrpcValue>),
    Map(Vec<(MapKey, GrpcValue)>),
}

/// `text` as a value of a scalar (or enum) field of type `kind`, as the protobuf JSON mapping
/// reads it: numbers in decimal, `true`/`false`, enum values by name or number, bytes in
/// base64 (standard or URL-safe, padding optional).
pub fn scalar_value(kind: &Kind, text: &str) -> Result<Value, String> {
    fn num<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
        text.trim()
            .parse()
            .map_err(|_| format!("{text:?} is not {what}"))
    }
    Ok(match kind {
        Kind::Double => Value::F64(num(text, "a number")?),
        Kind::Float => Value::F32(num(text, "a number")?),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            Value::I32(num(text, "a whole number in the int32 range")?)
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            Value::I64(num(text, "a whole number in the int64 range")?)
        }
        Kind::Uint32 | Kind::Fixed32 => {
            Value::U32(num(text, "a whole number in the uint32 range")?)
        }
        Kind::Uint64 | Kind::Fixed64 => {
            Value::U64(num(text, "a whole number in the uint64 range")?)
        }
        Kind::Bool => match text.trim() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => return Err(format!("{text:?} is not `true` or `false`")),
        },
        Kind::String => Value::String(text.to_string()),
        Kind::Bytes => {
            use base64::Engine;
            let t = text.trim().trim_end_matches('=');
            let decoded = base64::engine::general_purpose::STANDARD_NO_PAD
                .decode(t)
                .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(t))
                .map_err(|_| {
                    format!("{text:?} is not base64 (bytes fields are written in base64)")
                })?;
            Value::Bytes(decoded.into())
        }
        Kind::Enum(e) => {
            if let Some(v) = e.get_value_by_name(text.trim()) {
                Value::EnumNumber(v.number())
            } else if let Ok(n) = text.trim().parse::<i32>() {
                Value::EnumNumber(n)
            } else {
                let names: Vec<String> = e.values().map(|v| v.name().to_string()).collect();
                return Err(format!(
                    "{text:?} is not a value of enum {}; expected one of {}",
                    e.full_name(),
                    names.join(", ")
                ));
            }
        }
        Kind::Message(m) => {
            return Err(format!(
                "{text:?} is a single value; field of message type {} expects a mapping",
                m.full_name()
            ))
        }
    })
}

/// `text` as a key of a map field whose keys are of type `kind`.
pub fn map_key(kind: &Kind, text: &str) -> Result<MapKey, String> {
    Ok(match scalar_value(kind, text)? {
        Value::I32(v) => MapKey::I32(v),
        Value::I64(v) => MapKey::I64(v),
        Value::U32(v) => MapKey::U32(v),
        Value::U64(v) => MapKey::U64(v),
        Value::Bool(v) => MapKey::Bool(v),
        Value::String(v) => MapKey::String(v),
        _ => return Err(format!("{kind:?} is not a valid map key type")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_follow_the_json_mapping() {
        assert_eq!(scalar_value(&Kind::Int32, " 42"), Ok(Value::I32(42)));
        assert!(scalar_value(&Kind::Int32, "4000000000").is_err());
        assert_eq!(scalar_value(&Kind::Uint64, "7"), Ok(Value::U64(7)));
        assert_eq!(scalar_value(&Kind::Bool, "true"), Ok(Value::Bool(true)));
        assert!(scalar_value(&Kind::Bool, "yes")
            .unwrap_err()
            .contains("true"));
        assert_eq!(
            scalar_value(&Kind::Bytes, "aGk="),
            Ok(Value::Bytes(b"hi".to_vec().into()))
        );
        assert_eq!(
            scalar_value(&Kind::String, "a b"),
            Ok(Value::String("a b".into()))
        );
        assert_eq!(map_key(&Kind::Int64, "-3"), Ok(MapKey::I64(-3)));
    }
}
