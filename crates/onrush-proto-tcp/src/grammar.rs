//! How a TCP step is written in a plan: `- { tcp: HOST:PORT, send: ..., until: ... }`
//! (`tcp: tls://HOST:PORT` over TLS with the scenario's `http.tls`), read into a [`TcpSpec`]
//! when the plan loads.

use std::time::Duration;

use onrush_plan::grammar::{payload_schema, CompiledStep, Mapping, StepGrammar, Value};
use onrush_plan::{PlanError, TcpPayload};
use serde_json::json;

/// A TCP step as the plan wrote it: one raw exchange, bytes sent and a reply read up to a
/// delimiter, a byte count, a length prefix, the server's silence or its close.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpSpec {
    /// `host:port` as written (resolved by the protocol when the run is prepared).
    pub host: String,
    pub port: u16,
    /// `tls://HOST:PORT`: TLS over the connection, with the scenario's `http.tls`.
    pub tls: bool,
    /// What is sent (`send:` text template, `send_hex:` bytes or `send_file:`); None sends
    /// nothing.
    pub send: Option<TcpPayload>,
    /// How the reply ends.
    pub reply: TcpReply,
    /// The longest reply kept and waited for (`max_reply`, default 64 KiB).
    pub max_reply: usize,
}

/// How a TCP step knows its reply is complete.
#[derive(Debug, Clone, PartialEq)]
pub enum TcpReply {
    /// `until: DELIMITER`: bytes up to and including the delimiter.
    Until(Vec<u8>),
    /// `read: N`: exactly N bytes.
    Bytes(usize),
    /// `length_prefix: ...`: a length field, then that many bytes; the reply (the body) is the
    /// message after the prefix.
    LengthPrefix(LengthPrefix),
    /// `idle: 200ms`: the reply starts with the first byte and ends when the server has been
    /// silent this long.
    Idle(Duration),
    /// `until_close: true`: everything until the server closes the connection.
    UntilClose,
    /// `reply: none` (or no framing key): nothing is read; the request completes when the bytes
    /// are written (fire and forget).
    None,
}

/// `length_prefix: { bytes: 4, endian: big, includes_prefix: false }` (or `length_prefix: 4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LengthPrefix {
    /// Size of the length field: 1, 2, 4 or 8.
    pub bytes: u8,
    pub little_endian: bool,
    /// The announced length counts the prefix itself (else only the message after it).
    pub includes_prefix: bool,
}

impl LengthPrefix {
    /// The whole frame's length (prefix included) announced by the prefix at the start of
    /// `buffer`: None while the prefix is incomplete, `Err(())` when the announced length is
    /// shorter than the prefix it includes. Saturates instead of overflowing: an 8-byte prefix
    /// may announce any length, and the caller compares it with `max_reply`.
    #[allow(clippy::result_unit_err)]
    pub fn frame_len(&self, buffer: &[u8]) -> Option<Result<u64, ()>> {
        let n = self.bytes as usize;
        let field = buffer.get(..n)?;
        let mut raw = [0u8; 8];
        let announced = if self.little_endian {
            raw[..n].copy_from_slice(field);
            u64::from_le_bytes(raw)
        } else {
            raw[8 - n..].copy_from_slice(field);
            u64::from_be_bytes(raw)
        };
        Some(if self.includes_prefix {
            if announced < n as u64 {
                Err(())
            } else {
                Ok(announced)
            }
        } else {
            Ok(announced.saturating_add(n as u64))
        })
    }
}

const KEYS: &[&str] = &[
    "send",
    "send_hex",
    "send_file",
    "until",
    "read",
    "length_prefix",
    "idle",
    "until_close",
    "reply",
    "max_reply",
];

/// The keys that say how a reply ends; a step has at most one.
const REPLY_KEYS: [&str; 6] = [
    "until",
    "read",
    "length_prefix",
    "idle",
    "until_close",
    "reply",
];

const EXAMPLE: &str = "e.g. `- { tcp: 127.0.0.1:7000, send: \"PING\\n\", until: \"\\n\" }` \
     (`tcp: tls://HOST:PORT` for TLS)";

/// The default and the largest reply a TCP step keeps and waits for.
const DEFAULT_MAX_REPLY: u64 = 64 * 1024;
const MAX_MAX_REPLY: u64 = 64 * 1024 * 1024;

/// The `tcp:` step grammar.
pub struct TcpGrammar;

impl StepGrammar for TcpGrammar {
    fn key(&self) -> &'static str {
        "tcp"
    }

    fn keys(&self) -> &'static [&'static str] {
        KEYS
    }

    fn example(&self) -> &'static str {
        "{ tcp: HOST:PORT, send, until }"
    }

    fn schema(&self) -> serde_json::Value {
        let mut props = payload_schema(true);
        let own = json!({
            "tcp": { "type": "string", "description": "HOST:PORT (or tcp://HOST:PORT) of a raw TCP exchange; tls://HOST:PORT runs it over TLS with `http.tls` (resolved once)", "examples": ["127.0.0.1:7000", "tls://localhost:7443"] },
            "name": { "type": "string", "description": "Metric name. Default: `tcp ` and the target as written" },
            "until": { "type": "string", "minLength": 1, "description": "The reply ends with this delimiter (included)" },
            "read": { "type": ["integer", "string"], "description": "The reply is exactly this many bytes" },
            "length_prefix": {
                "description": "The reply is a length field, then that many bytes (the body is the message after it): the field's size (1, 2, 4 or 8; big endian, not counting itself), or `{ bytes, endian, includes_prefix }`",
                "anyOf": [
                    { "enum": [1, 2, 4, 8, "1", "2", "4", "8"] },
                    {
                        "type": "object",
                        "additionalProperties": false,
                        "required": ["bytes"],
                        "properties": {
                            "bytes": { "enum": [1, 2, 4, 8, "1", "2", "4", "8"], "description": "Size of the length field" },
                            "endian": { "enum": ["big", "little"], "description": "Byte order of the length field (default big)" },
                            "includes_prefix": { "type": ["boolean", "string"], "description": "The length counts the field itself (default false)" }
                        }
                    }
                ]
            },
            "idle": { "$ref": "#/definitions/duration", "description": "The reply ends when the server has been silent this long (after its first byte)" },
            "until_close": { "const": true, "description": "The reply is everything until the server closes the connection" },
            "reply": { "const": "none", "description": "`none`: read no reply; the request completes when its bytes are written (fire and forget)" },
            "max_reply": { "type": ["integer", "string"], "description": "The longest reply kept and waited for, bytes (default 65536)" },
        });
        if let serde_json::Value::Object(own) = own {
            props.extend(own);
        }
        serde_json::Value::Object(props)
    }

    fn schema_rules(&self) -> serde_json::Value {
        // At most one payload key and one way to end the reply: every pair of them is excluded.
        let mut exclusive = vec![
            json!({ "required": ["send", "send_hex"] }),
            json!({ "required": ["send", "send_file"] }),
            json!({ "required": ["send_hex", "send_file"] }),
        ];
        for (i, a) in REPLY_KEYS.iter().enumerate() {
            for b in &REPLY_KEYS[i + 1..] {
                exclusive.push(json!({ "required": [a, b] }));
            }
        }
        json!({
            "description": "A raw TCP exchange: connect to `tcp` (over TLS for `tls://HOST:PORT`), send `send` or `send_hex`, read a reply up to `until` or of `read` bytes; the reply is the body for extractors and checks",
            "not": { "anyOf": exclusive }
        })
    }

    fn compile(&self, step: &Mapping<'_>) -> Result<CompiledStep, PlanError> {
        let target = step.required("tcp", "HOST:PORT")?;
        let (host, port, tls) = target.stream_target(EXAMPLE)?;
        let name = format!("tcp {}", target.string()?.trim());
        let send = step.payload(true)?;
        let reply = reply(step)?;
        let max_reply = match step.get("max_reply") {
            Some(n) => n.uint(
                1,
                MAX_MAX_REPLY,
                "the longest reply in bytes, e.g. `max_reply: 65536`",
            )?,
            None => DEFAULT_MAX_REPLY,
        } as usize;
        if let TcpReply::Bytes(n) = reply {
            if n > max_reply {
                return Err(step
                    .get("read")
                    .expect("read gave Bytes")
                    .error(format!(
                        "read: {n} is more than max_reply ({max_reply} bytes)"
                    ))
                    .with_hint(format!("raise `max_reply: {n}` or read fewer bytes")));
            }
        }
        Ok(CompiledStep {
            name,
            spec: Box::new(TcpSpec {
                host,
                port,
                tls,
                send,
                reply,
                max_reply,
            }),
        })
    }
}

/// How the reply ends: `until:`, `read:`, `length_prefix:`, `idle:`, `until_close: true`
/// or `reply: none`, at most one; none of them reads no reply (fire and forget).
fn reply(step: &Mapping<'_>) -> Result<TcpReply, PlanError> {
    let Some(key) = step.at_most_one(
        &REPLY_KEYS,
        "way to end the reply",
        "keep one of `until:` (a delimiter), `read:` (a byte count), `length_prefix:`, \
         `idle:`, `until_close: true` or `reply: none`",
    )?
    else {
        return Ok(TcpReply::None);
    };
    let value = step.get(key).expect("present");
    match key {
        "read" => {
            let n = value.uint(
                1,
                MAX_MAX_REPLY,
                "the reply's length in bytes, e.g. `read: 4`",
            )?;
            Ok(TcpReply::Bytes(n as usize))
        }
        "until" => {
            let delimiter = value.string()?;
            if delimiter.is_empty() {
                return Err(value
                    .error("empty delimiter; expected at least one byte")
                    .with_hint(
                        "e.g. `until: \"\\n\"` (in double quotes, so that \\n is a newline)",
                    ));
            }
            Ok(TcpReply::Until(delimiter.into_bytes()))
        }
        "length_prefix" => Ok(TcpReply::LengthPrefix(length_prefix(&value)?)),
        "idle" => {
            let d = value.duration()?;
            if d.is_zero() {
                return Err(value
                    .error("idle is 0; expected a positive duration")
                    .with_hint(
                        "the reply ends when the server is silent this long, e.g. `idle: 200ms`",
                    ));
            }
            Ok(TcpReply::Idle(d))
        }
        "until_close" => {
            if !value.boolean()? {
                return Err(value.error("until_close: false frames no reply").with_hint(
                    "write `until_close: true` to read until the server closes, or \
                         `reply: none` to read nothing",
                ));
            }
            Ok(TcpReply::UntilClose)
        }
        _ => {
            let text = value.string()?;
            if text.trim() != "none" {
                return Err(value
                    .error(format!("expected `none`, found {text:?}"))
                    .with_hint(
                        "`reply: none` sends without reading a reply; to read one, use \
                         `until:`, `read:`, `length_prefix:`, `idle:` or `until_close: true`",
                    ));
            }
            Ok(TcpReply::None)
        }
    }
}

/// `length_prefix: 4` (4 bytes, big endian, not counting itself) or
/// `length_prefix: { bytes: 4, endian: little, includes_prefix: true }`.
fn length_prefix(value: &Value<'_>) -> Result<LengthPrefix, PlanError> {
    const HINT: &str = "the prefix's size in bytes, 1, 2, 4 or 8, e.g. `length_prefix: 4` \
         or `length_prefix: { bytes: 2, endian: little, includes_prefix: true }`";
    let bytes = |value: &Value<'_>| -> Result<u8, PlanError> {
        let n = value.uint(1, 8, HINT)?;
        if !matches!(n, 1 | 2 | 4 | 8) {
            return Err(value
                .error(format!("{n} bytes; expected 1, 2, 4 or 8"))
                .with_hint(HINT));
        }
        Ok(n as u8)
    };
    if !value.is_mapping() && !value.is_list() {
        return Ok(LengthPrefix {
            bytes: bytes(value)?,
            little_endian: false,
            includes_prefix: false,
        });
    }
    let f = value.mapping(&["bytes", "endian", "includes_prefix"])?;
    let size = bytes(&f.required("bytes", "the prefix's size in bytes: 1, 2, 4 or 8")?)?;
    let little_endian = match f.get("endian") {
        None => false,
        Some(e) => match e.string()?.trim() {
            "big" => false,
            "little" => true,
            other => {
                return Err(e
                    .error(format!("expected `big` or `little`, found {other:?}"))
                    .with_hint(
                        "`big` (network order, the default) or `little`, e.g. `endian: little`",
                    ))
            }
        },
    };
    let includes_prefix = match f.get("includes_prefix") {
        None => false,
        Some(b) => b.boolean()?,
    };
    Ok(LengthPrefix {
        bytes: size,
        little_endian,
        includes_prefix,
    })
}
