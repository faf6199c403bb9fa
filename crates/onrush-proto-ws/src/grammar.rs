//! How a WebSocket step is written in a plan: `- { ws: connect | send | receive | ping | close,
//! ... }`, one action on the VU's socket, read into a [`WsSpec`] when the plan loads. Each
//! action takes keys of its own: the grammar's [`keys`](StepGrammar::keys) are all of them,
//! and [`compile`](StepGrammar::compile) checks the step's against its action's.

use std::time::Duration;

use onrush_plan::grammar::{
    did_you_mean, headers_schema, one_of, split_host_port, CompiledStep, Mapping, StepGrammar,
    Value,
};
use onrush_plan::{PlanError, Shared, Template};
use serde_json::json;

/// A WebSocket step as the plan wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct WsSpec {
    pub action: WsAction,
}

/// What a `ws:` step does.
#[derive(Debug, Clone, PartialEq)]
pub enum WsAction {
    /// `ws: connect`: opens the VU's socket (closing one still open).
    Connect(WsConnect),
    /// `ws: send`: sends one message; with `await`, then receives until the awaited message.
    Send {
        payload: WsPayload,
        until: Option<WsUntil>,
    },
    /// `ws: receive`: receives until the condition holds.
    Receive(WsUntil),
    /// `ws: ping`: sends a ping and waits for its pong.
    Ping,
    /// `ws: close`: sends a close frame with `code` and waits for the server's.
    Close { code: u16 },
}

/// `ws: connect, url: ws://host:port/path, headers, subprotocols, max_message, compression`.
#[derive(Debug, Clone, PartialEq)]
pub struct WsConnect {
    /// `wss://`: TLS, set up as `http.tls` says.
    pub tls: bool,
    /// As written (resolved by the protocol when the run is prepared).
    pub host: String,
    pub port: u16,
    /// Path and query, always starting with '/'.
    pub path: Template,
    pub headers: Vec<(String, Template)>,
    /// `Sec-WebSocket-Protocol` offered, in order of preference.
    pub subprotocols: Vec<String>,
    /// The longest message (and frame) accepted, bytes (`max_message`, default 1 MiB): a
    /// longer one is `bad_response`, read no further.
    pub max_message: usize,
    /// `compression: deflate` (default): permessage-deflate offered (RFC 7692), used when the
    /// server accepts it; `none`: not offered.
    pub deflate: bool,
}

/// What a `ws: send` step sends.
#[derive(Debug, Clone, PartialEq)]
pub enum WsPayload {
    /// `text:` (templates allowed): a text message.
    Text(Template),
    /// `binary_hex: "DE AD"`: a binary message.
    Binary(Vec<u8>),
}

/// When a `ws: receive` (or a send's `await:`) is done: after `count` messages, or at the first
/// message that matches `pattern`; `timeout` overrides the step's.
#[derive(Debug, Clone, PartialEq)]
pub struct WsUntil {
    pub pattern: Option<Shared<regex::bytes::Regex>>,
    pub count: u64,
    pub timeout: Option<Duration>,
}

const ACTIONS: [&str; 5] = ["connect", "send", "receive", "ping", "close"];

/// The keys of `action` besides the common ones; none for an unknown action.
fn action_keys(action: &str) -> &'static [&'static str] {
    match action {
        "connect" => &[
            "url",
            "headers",
            "subprotocols",
            "max_message",
            "compression",
            "on_failure",
        ],
        "send" => &["text", "binary_hex", "await", "on_failure"],
        "receive" => &["count", "match", "on_failure"],
        "ping" => &["on_failure"],
        "close" => &["code", "on_failure"],
        _ => &[],
    }
}

/// The keys of every action together (what a `ws:` step may have at all).
const KEYS: &[&str] = &[
    "url",
    "headers",
    "subprotocols",
    "max_message",
    "compression",
    "text",
    "binary_hex",
    "await",
    "count",
    "match",
    "code",
];

/// The keys every action has.
const COMMON: [&str; 5] = ["ws", "name", "timeout", "extract", "check"];

const EXAMPLE: &str = "e.g. `- { ws: connect, url: \"ws://127.0.0.1:8765/chat\" }`, then \
    `- { ws: send, text: \"hello\", await: { match: hello } }`";

/// The default and the largest message a socket accepts.
const DEFAULT_MAX_MESSAGE: u64 = 1024 * 1024;
const MAX_MAX_MESSAGE: u64 = 64 * 1024 * 1024;

/// What the grammar remembers of a scenario's steps: a `ws: connect` was compiled earlier (in
/// file order), which the other actions need before them.
#[derive(Default)]
struct Connected(bool);

/// The `ws:` step grammar.
pub struct WsGrammar;

impl StepGrammar for WsGrammar {
    fn key(&self) -> &'static str {
        "ws"
    }

    fn keys(&self) -> &'static [&'static str] {
        KEYS
    }

    fn example(&self) -> &'static str {
        "{ ws: connect, url: \"ws://127.0.0.1:8765/chat\" }"
    }

    /// Every key of every action; [`schema_rules`](Self::schema_rules) makes of them one shape
    /// per action.
    fn schema(&self) -> serde_json::Value {
        let until = json!({
            "match": { "type": "string", "description": "Receive until a message matches this regular expression" },
            "count": { "type": ["integer", "string"], "description": "Receive this many messages (default 1)" }
        });
        json!({
            "name": { "type": "string", "description": "Metric name. Default: `ws ACTION` (`ws connect`, `ws send`, ...)" },
            "url": { "type": "string", "pattern": "^wss?://", "description": "ws://HOST:PORT/PATH or wss:// (TLS as `http.tls` says); templates allowed in the path and query", "examples": ["ws://127.0.0.1:8765/chat?u=${vu}"] },
            "headers": headers_schema(),
            "subprotocols": { "anyOf": [{ "type": "string" }, { "type": "array", "items": { "type": "string" } }], "description": "Sec-WebSocket-Protocol offered, in order of preference" },
            "max_message": { "type": ["integer", "string"], "description": "The longest message accepted, bytes (default 1048576): a longer one is bad_response" },
            "compression": { "enum": ["deflate", "none"], "description": "deflate (default): offer permessage-deflate (RFC 7692), used when the server accepts it, as browsers do · none: do not offer it" },
            "text": { "type": ["string", "number", "boolean"], "description": "A text message (templates allowed)" },
            "binary_hex": { "type": "string", "description": "A binary message, as hex digit pairs (spaces allowed)", "examples": ["DE AD BE EF"] },
            "await": {
                "type": "object",
                "description": "After the send, receive until a message matches `match` (or `count` messages); `timeout` overrides the step's",
                "additionalProperties": false,
                "properties": {
                    "match": until["match"].clone(),
                    "count": until["count"].clone(),
                    "timeout": { "$ref": "#/definitions/duration", "description": "Overrides http.timeout for this request" }
                }
            },
            "match": until["match"].clone(),
            "count": until["count"].clone(),
            "code": { "type": ["integer", "string"], "description": "Close code: 1000 (default), 1001 or 3000..4999" }
        })
    }

    /// One shape per action, each with its own keys (onrush-plan adds the common ones to each),
    /// instead of one object of all keys.
    fn schema_rules(&self) -> serde_json::Value {
        let all = self.schema();
        let action = |name: &str, description: &str, keys: &[&str], required: &[&str]| {
            let mut props = serde_json::Map::new();
            props.insert(
                "ws".into(),
                json!({ "const": name, "description": description }),
            );
            for key in std::iter::once(&"name").chain(keys) {
                props.insert(key.to_string(), all[key].clone());
            }
            let mut required: Vec<&str> = required.to_vec();
            required.insert(0, "ws");
            json!({
                "type": "object",
                "additionalProperties": false,
                "required": required,
                "properties": props
            })
        };
        let mut send = action("send", "Send one message; with `await`, then receive until the awaited message (the latency is the round trip)", &["text", "binary_hex", "await"], &[]);
        send["oneOf"] = json!([{ "required": ["text"] }, { "required": ["binary_hex"] }]);
        json!({
            "description": "A WebSocket action on the VU's socket (one per VU, open until `ws: close`, a failure or the VU's end); the last message received is the body for extractors and checks",
            "anyOf": [
                action("connect", "Open the VU's socket (the handshake is the step's latency)", &["url", "headers", "subprotocols", "max_message", "compression"], &["url"]),
                send,
                action("receive", "Receive until a message matches `match`, or `count` messages (default 1)", &["match", "count"], &[]),
                action("ping", "Send a ping and wait for its pong", &[], &[]),
                action("close", "Send a close frame and wait for the server's", &["code"], &[])
            ],
            // Not one object of all the keys: the shapes above.
            "type": null,
            "additionalProperties": null,
            "required": null,
            "properties": null
        })
    }

    fn compile(&self, step: &Mapping<'_>) -> Result<CompiledStep, PlanError> {
        let value = step.get("ws").expect("a `ws:` step has the `ws` key");
        let text = value.string()?;
        let action = text.trim();
        let extra = match action_keys(action) {
            [] => {
                let hint = did_you_mean(action, ACTIONS.iter().copied())
                    .map(|s| format!("did you mean `ws: {s}`?"))
                    .unwrap_or_else(|| EXAMPLE.to_string());
                return Err(value
                    .error(format!(
                        "unknown WebSocket action {action:?}; expected {}",
                        one_of(&ACTIONS)
                    ))
                    .with_hint(hint));
            }
            extra => extra,
        };
        let allowed: Vec<&str> = COMMON.iter().chain(extra).copied().collect();
        for key in step.keys() {
            if allowed.contains(&key) {
                continue;
            }
            let owner = ACTIONS.iter().find(|a| action_keys(a).contains(&key));
            let e = step.unknown_key(key, &allowed);
            return Err(match owner {
                Some(a) => e.with_hint(format!(
                    "`{key}` belongs to `ws: {a}`; `ws: {action}` does not take it"
                )),
                None if e.hint().is_some() => e,
                None => e.with_hint(EXAMPLE),
            });
        }
        {
            let mut connected = step.scenario_memory::<Connected>();
            if action == "connect" {
                connected.0 = true;
            } else if !connected.0 {
                return Err(step
                    .error(format!(
                        "`ws: {action}` with no `ws: connect` before it in this scenario; the \
                         VU has no socket to use"
                    ))
                    .with_hint(
                        "open the socket first: `- { ws: connect, url: \"ws://HOST:PORT/PATH\" }`",
                    ));
            }
        }
        let (action, name) = match action {
            "connect" => (WsAction::Connect(connect(step)?), "ws connect"),
            "send" => {
                let payload = payload(step)?;
                let until = match step.get("await") {
                    Some(a) => Some(until(&a.mapping(&["match", "count", "timeout"])?, true)?),
                    None => None,
                };
                (WsAction::Send { payload, until }, "ws send")
            }
            "receive" => (WsAction::Receive(until(step, false)?), "ws receive"),
            "ping" => (WsAction::Ping, "ws ping"),
            _ => {
                let code = match step.get("code") {
                    Some(c) => close_code(&c)?,
                    None => 1000,
                };
                (WsAction::Close { code }, "ws close")
            }
        };
        Ok(CompiledStep {
            name: name.to_string(),
            spec: Box::new(WsSpec { action }),
        })
    }
}

fn connect(step: &Mapping<'_>) -> Result<WsConnect, PlanError> {
    let url = step.required("url", "the socket's URL, e.g. `ws://HOST:PORT/PATH`")?;
    let (tls, host, port, path) = ws_url(&url)?;
    let headers = match step.get("headers") {
        Some(h) => h.headers()?,
        None => Vec::new(),
    };
    let subprotocols = match step.get("subprotocols") {
        Some(s) => s
            .one_or_many(
                "subprotocols",
                "e.g. `subprotocols: [chat.v1, chat.v2]` or `subprotocols: chat.v1`",
            )?
            .into_iter()
            .map(|item| {
                let name = item.string()?;
                let token = |c: char| c.is_ascii_graphic() && !"()<>@,;:\\\"/[]?={}".contains(c);
                if name.is_empty() || !name.chars().all(token) {
                    return Err(item
                        .error(format!("{name:?} is not a valid subprotocol name"))
                        .with_hint("a subprotocol is a token such as `chat.v1`"));
                }
                Ok(name)
            })
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let max_message = match step.get("max_message") {
        Some(n) => n.uint(
            1,
            MAX_MAX_MESSAGE,
            "the longest message accepted, bytes, e.g. `max_message: 1048576`",
        )?,
        None => DEFAULT_MAX_MESSAGE,
    } as usize;
    let deflate = match step.get("compression") {
        Some(c) => {
            let text = c.string()?;
            match text.trim() {
                "deflate" => true,
                "none" => false,
                other => {
                    let hint = did_you_mean(other, ["deflate", "none"])
                        .map(|s| format!("did you mean `compression: {s}`?"))
                        .unwrap_or_else(|| {
                            "`compression: deflate` offers permessage-deflate (the default), \
                             `compression: none` does not"
                                .to_string()
                        });
                    return Err(c
                        .error(format!(
                            "unknown compression {other:?}; expected {}",
                            one_of(&["deflate", "none"])
                        ))
                        .with_hint(hint));
                }
            }
        }
        None => true,
    };
    Ok(WsConnect {
        tls,
        host,
        port,
        path,
        headers,
        subprotocols,
        max_message,
        deflate,
    })
}

/// `ws://host:port/path?query` or `wss://...`: the scheme, host and port are read when the
/// plan loads (plan variables allowed), the path and query may hold per-request values.
fn ws_url(url: &Value<'_>) -> Result<(bool, String, u16, Template), PlanError> {
    let parts = url.url_parts()?;
    let raw = url.written().unwrap_or("");
    let (tls, authority) = if let Some(rest) = parts.head.strip_prefix("ws://") {
        (false, rest)
    } else if let Some(rest) = parts.head.strip_prefix("wss://") {
        (true, rest)
    } else {
        let scheme = parts.head.split_once("://").map_or("", |(s, _)| s);
        let hint = match scheme {
            "http" => {
                "a WebSocket URL starts with ws:// (wss:// for TLS), e.g. \
                 `url: ws://127.0.0.1:8765/chat`"
            }
            "https" => "for TLS write wss://, e.g. `url: wss://example.com/chat`",
            _ => "e.g. `url: ws://127.0.0.1:8765/chat` (or wss:// for TLS)",
        };
        return Err(url
            .error(format!("expected a ws:// or wss:// URL, found {raw:?}"))
            .with_hint(hint));
    };
    if parts.head_per_request {
        return Err(url
            .error(
                "the host and port hold a per-request value; expected them fixed when the \
                 plan loads",
            )
            .with_hint(
                "the host is resolved once: use a plan variable (`vars:`) there, and \
                 per-request values in the path or query only",
            ));
    }
    let default_port = if tls { 443 } else { 80 };
    let (host, port) = if authority.starts_with('[') && authority.ends_with(']') {
        (authority[1..authority.len() - 1].to_string(), default_port)
    } else if authority.contains(':') {
        split_host_port(authority).ok_or_else(|| {
            url.error(format!(
                "expected HOST:PORT after the scheme, found {authority:?}"
            ))
            .with_hint(EXAMPLE)
        })?
    } else {
        (authority.to_string(), default_port)
    };
    if host.is_empty() || host.contains(['@', ' ']) {
        return Err(url
            .error(format!("no usable host in {raw:?}"))
            .with_hint(EXAMPLE));
    }
    Ok((tls, host, port, parts.target))
}

/// `text:` or `binary_hex:`, exactly one.
fn payload(step: &Mapping<'_>) -> Result<WsPayload, PlanError> {
    const MESSAGE_KEYS: [&str; 2] = ["text", "binary_hex"];
    const HINT: &str =
        "send text with `text: \"hello ${vu}\"` or bytes with `binary_hex: \"DE AD BE EF\"`";
    let Some(key) = step.at_most_one(&MESSAGE_KEYS, "message per send", HINT)? else {
        return Err(step
            .error(format!(
                "no message given; expected one of {}",
                one_of(&MESSAGE_KEYS)
            ))
            .with_hint(HINT));
    };
    let value = step.get(key).expect("present");
    if key == "text" {
        return Ok(WsPayload::Text(value.template()?));
    }
    let bytes = value.hex().map_err(|e| {
        e.with_hint("write pairs of hex digits, spaces allowed: `binary_hex: \"DE AD be ef\"`")
    })?;
    Ok(WsPayload::Binary(bytes))
}

/// `match:` and/or `count:` (default: one message), and `timeout:` inside `await:`.
fn until(f: &Mapping<'_>, inside_await: bool) -> Result<WsUntil, PlanError> {
    let pattern = match f.get("match") {
        Some(r) => Some(r.regex()?),
        None => None,
    };
    let count = match f.get("count") {
        Some(c) => c.uint(
            1,
            1_000_000,
            "how many messages to receive, e.g. `count: 3`",
        )?,
        None => 1,
    };
    if pattern.is_some() && f.get("count").is_some() {
        return Err(f
            .key_error("count", "`match` and `count` are both given; expected one")
            .with_hint(
                "`match: REGEX` receives until a message matches, `count: N` receives N \
                 messages",
            ));
    }
    let timeout = match f.get("timeout") {
        Some(t) if inside_await => {
            let d = t.duration()?;
            if d.is_zero() {
                return Err(t
                    .error("timeout is 0; expected a positive duration")
                    .with_hint("e.g. `timeout: 2s`"));
            }
            Some(d)
        }
        _ => None,
    };
    Ok(WsUntil {
        pattern,
        count,
        timeout,
    })
}

/// A close code a client may send: 1000, or 3000..=4999 (RFC 6455 §7.4).
fn close_code(value: &Value<'_>) -> Result<u16, PlanError> {
    let code = value.uint(
        1000,
        4999,
        "a close code: 1000 (normal) or 3000..4999 (applications), e.g. `code: 1000`",
    )? as u16;
    if !(code == 1000 || code == 1001 || (3000..=4999).contains(&code)) {
        return Err(value
            .error(format!(
                "close code {code} is reserved; expected 1000, 1001 or 3000..4999"
            ))
            .with_hint("e.g. `code: 1000` (normal closure) or `code: 4000` (your own)"));
    }
    Ok(code)
}
