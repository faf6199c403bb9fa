//! `- { ws: connect | send | receive | ping | close, ... }` → [`WsStep`]: one action on the VU's
//! WebSocket.

use super::endpoint::{parse_hex, split_host_port};
use super::steps::Build;
use super::{to_template, Ctx, Fields, Part};
use crate::error::{did_you_mean, one_of, PlanError};
use crate::yaml::{Kind, Node};
use crate::{Step, WsAction, WsConnect, WsPayload, WsStep, WsUntil};

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

/// The keys every action has.
const COMMON: [&str; 5] = ["ws", "name", "timeout", "extract", "check"];

const EXAMPLE: &str = "e.g. `- { ws: connect, url: \"ws://127.0.0.1:8765/chat\" }`, then \
    `- { ws: send, text: \"hello\", await: { match: hello } }`";

/// The default and the largest message a socket accepts.
const DEFAULT_MAX_MESSAGE: u64 = 1024 * 1024;
const MAX_MAX_MESSAGE: u64 = 64 * 1024 * 1024;

impl Ctx<'_> {
    pub(super) fn ws(&self, node: &Node, path: &str, m: &mut Build) -> Result<Step, PlanError> {
        let Kind::Map(entries) = &node.kind else {
            unreachable!("the step dispatcher found a `ws` key");
        };
        let (_, value) = entries
            .iter()
            .find(|(k, _)| k.as_scalar().is_some_and(|s| s.text == "ws"))
            .expect("the step dispatcher found a `ws` key");
        let field = format!("{path}.ws");
        let text = self.string(value, &field)?;
        let action = text.trim();
        let extra = match action_keys(action) {
            [] => {
                let hint = did_you_mean(action, ACTIONS.iter().copied())
                    .map(|s| format!("did you mean `ws: {s}`?"))
                    .unwrap_or_else(|| EXAMPLE.to_string());
                return Err(self
                    .err(
                        value,
                        &field,
                        format!(
                            "unknown WebSocket action {action:?}; expected {}",
                            one_of(&ACTIONS)
                        ),
                    )
                    .with_hint(hint));
            }
            extra => extra,
        };
        let allowed: Vec<&str> = COMMON.iter().chain(extra).copied().collect();
        for (k, _) in entries {
            let key = k.as_scalar().map_or("", |s| s.text.as_str());
            if allowed.contains(&key) {
                continue;
            }
            let owner = ACTIONS.iter().find(|a| action_keys(a).contains(&key));
            let e = self.unknown_key(k, &format!("{path}.{key}"), key, &allowed);
            return Err(match owner {
                Some(a) => e.with_hint(format!(
                    "`{key}` belongs to `ws: {a}`; `ws: {action}` does not take it"
                )),
                None if e.to_string().contains("hint:") => e,
                None => e.with_hint(EXAMPLE),
            });
        }
        let f = self.map(node, path, &allowed)?;
        if action != "connect" && !m.ws_connected {
            return Err(self
                .err(
                    node,
                    path,
                    format!(
                        "`ws: {action}` with no `ws: connect` before it in this scenario; the \
                         VU has no socket to use"
                    ),
                )
                .with_hint(
                    "open the socket first: `- { ws: connect, url: \"ws://HOST:PORT/PATH\" }`",
                ));
        }
        let (action, default_name) = match action {
            "connect" => {
                m.ws_connected = true;
                (WsAction::Connect(self.ws_connect(&f)?), "ws connect")
            }
            "send" => {
                let payload = self.ws_payload(&f, node)?;
                let until = match f.get("await") {
                    Some(a) => {
                        let af = self.map(a, &f.child("await"), &["match", "count", "timeout"])?;
                        Some(self.ws_until(&af, Some(a))?)
                    }
                    None => None,
                };
                (WsAction::Send { payload, until }, "ws send")
            }
            "receive" => (WsAction::Receive(self.ws_until(&f, None)?), "ws receive"),
            "ping" => (WsAction::Ping, "ws ping"),
            _ => {
                let code = match f.get("code") {
                    Some(c) => self.ws_close_code(c, &f.child("code"))?,
                    None => 1000,
                };
                (WsAction::Close { code }, "ws close")
            }
        };
        let name = match f.get("name") {
            Some(n) => self.string(n, &f.child("name"))?,
            None => default_name.to_string(),
        };
        let timeout = self.step_timeout(&f)?;
        let metric = m.id(name);
        let (extract, checks, on_failure) = self.step_outcome(&f, metric, m)?;
        Ok(Step::Ws(WsStep {
            metric,
            action,
            timeout,
            extract,
            checks,
            on_failure,
        }))
    }

    fn ws_connect(&self, f: &Fields) -> Result<WsConnect, PlanError> {
        let url_node = self.required(f, "url", "the socket's URL, e.g. `ws://HOST:PORT/PATH`")?;
        let (tls, host, port, path) = self.ws_url(url_node, &f.child("url"))?;
        let headers = match f.get("headers") {
            Some(h) => self.headers(h, &f.child("headers"))?,
            None => Vec::new(),
        };
        let subprotocols = match f.get("subprotocols") {
            Some(s) => self
                .one_or_many(
                    s,
                    &f.child("subprotocols"),
                    "subprotocols",
                    "e.g. `subprotocols: [chat.v1, chat.v2]` or `subprotocols: chat.v1`",
                )?
                .into_iter()
                .map(|(n, p)| {
                    let name = self.string(n, &p)?;
                    let token =
                        |c: char| c.is_ascii_graphic() && !"()<>@,;:\\\"/[]?={}".contains(c);
                    if name.is_empty() || !name.chars().all(token) {
                        return Err(self
                            .err(n, &p, format!("{name:?} is not a valid subprotocol name"))
                            .with_hint("a subprotocol is a token such as `chat.v1`"));
                    }
                    Ok(name)
                })
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        let max_message = match f.get("max_message") {
            Some(n) => self.uint(
                n,
                &f.child("max_message"),
                1,
                MAX_MAX_MESSAGE,
                "the longest message accepted, bytes, e.g. `max_message: 1048576`",
            )?,
            None => DEFAULT_MAX_MESSAGE,
        } as usize;
        let deflate = match f.get("compression") {
            Some(c) => {
                let field = f.child("compression");
                let text = self.string(c, &field)?;
                match text.trim() {
                    "deflate" => true,
                    "none" => false,
                    other => {
                        let hint = did_you_mean(other, ["deflate", "none"])
                            .map(|s| format!("did you mean `compression: {s}`?"))
                            .unwrap_or_else(|| {
                                "`compression: deflate` offers permessage-deflate (the \
                                 default), `compression: none` does not"
                                    .to_string()
                            });
                        return Err(self
                            .err(
                                c,
                                &field,
                                format!(
                                    "unknown compression {other:?}; expected {}",
                                    one_of(&["deflate", "none"])
                                ),
                            )
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
    fn ws_url(
        &self,
        node: &Node,
        field: &str,
    ) -> Result<(bool, String, u16, crate::Template), PlanError> {
        let mut parts = self.expand(node, field)?;
        let raw = node.as_scalar().map_or("", |s| s.text.as_str()).to_string();
        let first = match parts.first() {
            Some(Part::Lit(l)) => l.clone(),
            _ => String::new(),
        };
        let (tls, rest) = if let Some(rest) = first.strip_prefix("ws://") {
            (false, rest)
        } else if let Some(rest) = first.strip_prefix("wss://") {
            (true, rest)
        } else {
            let scheme = first.split_once("://").map_or("", |(s, _)| s);
            let hint = match scheme {
                "http" => {
                    "a WebSocket URL starts with ws:// (wss:// for TLS), e.g. \
                           `url: ws://127.0.0.1:8765/chat`"
                }
                "https" => "for TLS write wss://, e.g. `url: wss://example.com/chat`",
                _ => "e.g. `url: ws://127.0.0.1:8765/chat` (or wss:// for TLS)",
            };
            return Err(self
                .err(
                    node,
                    field,
                    format!("expected a ws:// or wss:// URL, found {raw:?}"),
                )
                .with_hint(hint));
        };
        let (authority, path_start) = match rest.find(['/', '?']) {
            Some(at) => (&rest[..at], &rest[at..]),
            None if parts.len() > 1 => {
                return Err(self
                    .err(
                        node,
                        field,
                        "the host and port hold a per-request value; expected them fixed when \
                         the plan loads",
                    )
                    .with_hint(
                        "the host is resolved once: use a plan variable (`vars:`) there, and \
                         per-request values in the path or query only",
                    ))
            }
            None => (rest, ""),
        };
        let default_port = if tls { 443 } else { 80 };
        let (host, port) = if authority.starts_with('[') && authority.ends_with(']') {
            (authority[1..authority.len() - 1].to_string(), default_port)
        } else if authority.contains(':') {
            split_host_port(authority).ok_or_else(|| {
                self.err(
                    node,
                    field,
                    format!("expected HOST:PORT after the scheme, found {authority:?}"),
                )
                .with_hint(EXAMPLE)
            })?
        } else {
            (authority.to_string(), default_port)
        };
        if host.is_empty() || host.contains(['@', ' ']) {
            return Err(self
                .err(node, field, format!("no usable host in {raw:?}"))
                .with_hint(EXAMPLE));
        }
        let mut path = String::new();
        if !path_start.starts_with('/') {
            path.push('/');
        }
        path.push_str(path_start);
        parts[0] = Part::Lit(path);
        Ok((tls, host, port, to_template(parts, &raw)))
    }

    /// `text:` or `binary_hex:`, exactly one.
    fn ws_payload(&self, f: &Fields, node: &Node) -> Result<WsPayload, PlanError> {
        let key = self.exactly_one(
            f,
            node,
            &["text", "binary_hex"],
            "message",
            "message per send",
            "send text with `text: \"hello ${vu}\"` or bytes with `binary_hex: \"DE AD BE EF\"`",
        )?;
        let value = f.get(key).expect("present");
        let field = f.child(key);
        if key == "text" {
            return Ok(WsPayload::Text(self.template(value, &field)?));
        }
        let text = self.string(value, &field)?;
        let bytes = parse_hex(&text).map_err(|at| {
            self.err(
                value,
                &field,
                format!("not hexadecimal at character {}: {text:?}", at + 1),
            )
            .with_hint("write pairs of hex digits, spaces allowed: `binary_hex: \"DE AD be ef\"`")
        })?;
        Ok(WsPayload::Binary(bytes))
    }

    /// `match:` and/or `count:` (default: one message), and `timeout:` inside `await:`.
    fn ws_until(&self, f: &Fields, inside_await: Option<&Node>) -> Result<WsUntil, PlanError> {
        let pattern = match f.get("match") {
            Some(r) => Some(self.regex(r, &f.child("match"))?),
            None => None,
        };
        let count = match f.get("count") {
            Some(c) => self.uint(
                c,
                &f.child("count"),
                1,
                1_000_000,
                "how many messages to receive, e.g. `count: 3`",
            )?,
            None => 1,
        };
        if pattern.is_some() && f.get("count").is_some() {
            let c = f.key("count").expect("present");
            return Err(self
                .err(
                    c,
                    &f.child("count"),
                    "`match` and `count` are both given; expected one",
                )
                .with_hint(
                    "`match: REGEX` receives until a message matches, `count: N` receives N \
                     messages",
                ));
        }
        let timeout = match inside_await {
            Some(_) => self.step_timeout(f)?,
            None => None,
        };
        Ok(WsUntil {
            pattern,
            count,
            timeout,
        })
    }

    /// A close code a client may send: 1000, or 3000..=4999 (RFC 6455 §7.4).
    fn ws_close_code(&self, node: &Node, field: &str) -> Result<u16, PlanError> {
        let code = self.uint(
            node,
            field,
            1000,
            4999,
            "a close code: 1000 (normal) or 3000..4999 (applications), e.g. `code: 1000`",
        )? as u16;
        if !(code == 1000 || code == 1001 || (3000..=4999).contains(&code)) {
            return Err(self
                .err(
                    node,
                    field,
                    format!("close code {code} is reserved; expected 1000, 1001 or 3000..4999"),
                )
                .with_hint("e.g. `code: 1000` (normal closure) or `code: 4000` (your own)"));
        }
        Ok(code)
    }
}
