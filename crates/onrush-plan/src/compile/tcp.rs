//! `- { tcp: HOST:PORT, send: ..., until: ... }` → [`TcpStep`]: one raw TCP exchange;
//! `tcp: tls://HOST:PORT` runs it over TLS (`http.tls`), as Thrift steps may (`stream_target`).

use super::steps::Build;
use super::{Ctx, Fields};
use crate::error::PlanError;
use crate::yaml::Node;
use crate::{LengthPrefix, Step, TcpPayload, TcpReply, TcpStep, BUILTIN_HOST};

pub(super) const TCP_KEYS: [&str; 16] = [
    "tcp",
    "name",
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
    "timeout",
    "extract",
    "check",
    "on_failure",
];

const EXAMPLE: &str = "e.g. `- { tcp: 127.0.0.1:7000, send: \"PING\\n\", until: \"\\n\" }` \
     (`tcp: tls://HOST:PORT` for TLS)";

/// The default and the largest reply a TCP step keeps and waits for.
const DEFAULT_MAX_REPLY: u64 = 64 * 1024;
const MAX_MAX_REPLY: u64 = 64 * 1024 * 1024;

impl Ctx<'_> {
    pub(super) fn tcp(&self, node: &Node, path: &str, m: &mut Build) -> Result<Step, PlanError> {
        let f = self.map(node, path, &TCP_KEYS)?;
        let (host, port, tls, name) = self.stream_endpoint(&f, "tcp", EXAMPLE)?;
        let send = self.payload(&f, true)?;
        let reply = self.tcp_reply(&f)?;
        let max_reply = match f.get("max_reply") {
            Some(n) => self.uint(
                n,
                &f.child("max_reply"),
                1,
                MAX_MAX_REPLY,
                "the longest reply in bytes, e.g. `max_reply: 65536`",
            )?,
            None => DEFAULT_MAX_REPLY,
        } as usize;
        if let TcpReply::Bytes(n) = reply {
            if n > max_reply {
                let node = f.get("read").expect("read gave Bytes");
                return Err(self
                    .err(
                        node,
                        &f.child("read"),
                        format!("read: {n} is more than max_reply ({max_reply} bytes)"),
                    )
                    .with_hint(format!("raise `max_reply: {n}` or read fewer bytes")));
            }
        }
        let timeout = self.step_timeout(&f)?;
        let metric = m.id(name);
        let (extract, checks, on_failure) = self.step_outcome(&f, metric, m)?;
        Ok(Step::Tcp(TcpStep {
            metric,
            host,
            port,
            tls,
            send,
            reply,
            max_reply,
            timeout,
            extract,
            checks,
            on_failure,
        }))
    }

    /// `send:` (a text template), `send_hex:` (bytes) or, when `file` allows it,
    /// `send_file:` (a file streamed at each request), at most one. Shared with UDP steps.
    pub(crate) fn payload(&self, f: &Fields, file: bool) -> Result<Option<TcpPayload>, PlanError> {
        let (keys, hint): (&[&str], _) = if file {
            (
                &["send", "send_hex", "send_file"],
                "keep `send:` for text, `send_hex:` for bytes or `send_file:` for a file",
            )
        } else {
            (
                &["send", "send_hex"],
                "keep `send:` for text or `send_hex:` for bytes",
            )
        };
        let Some(key) = self.at_most_one(f, keys, "payload per step", hint)? else {
            return Ok(None);
        };
        let node = f.get(key).expect("present");
        let field = f.child(key);
        if key == "send" {
            return Ok(Some(TcpPayload::Text(self.template(node, &field)?)));
        }
        if key == "send_file" {
            return Ok(Some(TcpPayload::File(self.plan_file(
                node,
                &field,
                "the payload",
            )?)));
        }
        let text = self.string(node, &field)?;
        let bytes = parse_hex(&text).map_err(|at| {
            self.err(
                node,
                &field,
                format!("not hexadecimal at character {}: {text:?}", at + 1),
            )
            .with_hint("write pairs of hex digits, spaces allowed: `send_hex: \"DE AD be ef\"`")
        })?;
        Ok(Some(TcpPayload::Bytes(bytes)))
    }

    /// How the reply ends: `until:`, `read:`, `length_prefix:`, `idle:`, `until_close: true`
    /// or `reply: none`, at most one; none of them reads no reply (fire and forget).
    fn tcp_reply(&self, f: &Fields) -> Result<TcpReply, PlanError> {
        let Some(key) = self.at_most_one(
            f,
            &REPLY_KEYS,
            "way to end the reply",
            "keep one of `until:` (a delimiter), `read:` (a byte count), `length_prefix:`, \
             `idle:`, `until_close: true` or `reply: none`",
        )?
        else {
            return Ok(TcpReply::None);
        };
        let node = f.get(key).expect("present");
        let field = f.child(key);
        match key {
            "read" => {
                let n = self.uint(
                    node,
                    &field,
                    1,
                    MAX_MAX_REPLY,
                    "the reply's length in bytes, e.g. `read: 4`",
                )?;
                Ok(TcpReply::Bytes(n as usize))
            }
            "until" => {
                let delimiter = self.string(node, &field)?;
                if delimiter.is_empty() {
                    return Err(self
                        .err(node, &field, "empty delimiter; expected at least one byte")
                        .with_hint(
                            "e.g. `until: \"\\n\"` (in double quotes, so that \\n is a newline)",
                        ));
                }
                Ok(TcpReply::Until(delimiter.into_bytes()))
            }
            "length_prefix" => Ok(TcpReply::LengthPrefix(self.length_prefix(node, &field)?)),
            "idle" => {
                let d = self.duration(node, &field)?;
                if d.is_zero() {
                    return Err(self
                        .err(node, &field, "idle is 0; expected a positive duration")
                        .with_hint(
                            "the reply ends when the server is silent this long, e.g. `idle: 200ms`",
                        ));
                }
                Ok(TcpReply::Idle(d))
            }
            "until_close" => {
                if !self.boolean(node, &field, "until_close")? {
                    return Err(self
                        .err(node, &field, "until_close: false frames no reply")
                        .with_hint(
                            "write `until_close: true` to read until the server closes, or \
                             `reply: none` to read nothing",
                        ));
                }
                Ok(TcpReply::UntilClose)
            }
            _ => {
                let text = self.string(node, &field)?;
                if text.trim() != "none" {
                    return Err(self
                        .err(node, &field, format!("expected `none`, found {text:?}"))
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
    fn length_prefix(&self, node: &Node, field: &str) -> Result<LengthPrefix, PlanError> {
        const HINT: &str = "the prefix's size in bytes, 1, 2, 4 or 8, e.g. `length_prefix: 4` \
             or `length_prefix: { bytes: 2, endian: little, includes_prefix: true }`";
        let bytes = |node: &Node, field: &str| -> Result<u8, PlanError> {
            let n = self.uint(node, field, 1, 8, HINT)?;
            if !matches!(n, 1 | 2 | 4 | 8) {
                return Err(self
                    .err(node, field, format!("{n} bytes; expected 1, 2, 4 or 8"))
                    .with_hint(HINT));
            }
            Ok(n as u8)
        };
        if node.as_scalar().is_some() {
            return Ok(LengthPrefix {
                bytes: bytes(node, field)?,
                little_endian: false,
                includes_prefix: false,
            });
        }
        let f = self.map(node, field, &["bytes", "endian", "includes_prefix"])?;
        let size = bytes(
            self.required(&f, "bytes", "the prefix's size in bytes: 1, 2, 4 or 8")?,
            &f.child("bytes"),
        )?;
        let little_endian = match f.get("endian") {
            None => false,
            Some(e) => {
                let text = self.string(e, &f.child("endian"))?;
                match text.trim() {
                    "big" => false,
                    "little" => true,
                    other => {
                        return Err(self
                            .err(
                                e,
                                &f.child("endian"),
                                format!("expected `big` or `little`, found {other:?}"),
                            )
                            .with_hint(
                                "`big` (network order, the default) or `little`, e.g. \
                                 `endian: little`",
                            ))
                    }
                }
            }
        };
        let includes_prefix = match f.get("includes_prefix") {
            None => false,
            Some(b) => self.boolean(b, &f.child("includes_prefix"), "includes_prefix")?,
        };
        Ok(LengthPrefix {
            bytes: size,
            little_endian,
            includes_prefix,
        })
    }
}

/// The keys that say how a reply ends; a step has at most one.
const REPLY_KEYS: [&str; 6] = [
    "until",
    "read",
    "length_prefix",
    "idle",
    "until_close",
    "reply",
];

impl Ctx<'_> {
    /// The target of a stream step's `key` (`tcp`, `thrift`): `HOST:PORT` or `tcp://HOST:PORT`
    /// (plain TCP), `tls://HOST:PORT` (TLS with the scenario's `http.tls`); and the default
    /// metric name, `KEY TARGET` as written, or `name:`.
    pub(super) fn stream_endpoint(
        &self,
        f: &Fields,
        key: &str,
        example: &str,
    ) -> Result<(String, u16, bool, String), PlanError> {
        let node = f.get(key).expect("present");
        let field = f.child(key);
        let addr = self.string(node, &field)?;
        let (host, port, tls) = stream_target(&addr)
            .map_err(|message| self.err(node, &field, message).with_hint(example))?;
        let name = match f.get("name") {
            Some(n) => self.string(n, &f.child("name"))?,
            None => format!("{key} {}", addr.trim()),
        };
        Ok((host, port, tls, name))
    }
}

/// `HOST:PORT`, `tcp://HOST:PORT` or `tls://HOST:PORT` (a trailing `/` allowed after a
/// scheme): the host, the port, and whether TLS runs over the connection. The error is the
/// plan error's message (the caller adds the example).
pub(crate) fn stream_target(text: &str) -> Result<(String, u16, bool), String> {
    let trimmed = text.trim();
    let (tls, rest) = match trimmed.split_once("://") {
        None => (false, trimmed),
        Some(("tcp", rest)) => (false, rest.strip_suffix('/').unwrap_or(rest)),
        Some(("tls", rest)) => (true, rest.strip_suffix('/').unwrap_or(rest)),
        Some((scheme, _)) => {
            return Err(format!(
                "unknown scheme `{scheme}://` in {text:?}: expected `tls://HOST:PORT` for TLS, \
                 or `HOST:PORT` (also written `tcp://HOST:PORT`) for plain TCP"
            ))
        }
    };
    let (host, port) = split_host_port(rest).ok_or_else(|| {
        let form = if trimmed.contains("://") {
            "tls://HOST:PORT or tcp://HOST:PORT"
        } else {
            "HOST:PORT, tls://HOST:PORT or tcp://HOST:PORT"
        };
        format!("expected {form}, found {text:?}")
    })?;
    if tls && host == BUILTIN_HOST {
        return Err(format!(
            "{text:?}: the built-in server speaks TCP and Thrift in plain text only; write \
             `{BUILTIN_HOST}` without `tls://`, or a TLS server's HOST:PORT"
        ));
    }
    Ok((host, port, tls))
}

/// `host:port` or `[v6]:port`, or `builtin` alone (the built-in server: its port is known only
/// when it runs, so the port is 0 here and the protocol's prepare puts the real address).
pub(crate) fn split_host_port(text: &str) -> Option<(String, u16)> {
    if text.trim() == BUILTIN_HOST {
        return Some((BUILTIN_HOST.to_owned(), 0));
    }
    let (host, port) = text.trim().rsplit_once(':')?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() || host.contains('/') {
        return None;
    }
    Some((host.to_string(), port.parse().ok().filter(|p| *p != 0)?))
}

/// Hex digit pairs, whitespace ignored; the error is the index of the bad character.
pub(super) fn parse_hex(text: &str) -> Result<Vec<u8>, usize> {
    let mut out = Vec::new();
    let mut high: Option<u8> = None;
    let mut last = 0;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            continue;
        }
        last = i;
        let digit = c.to_digit(16).ok_or(i)? as u8;
        match high.take() {
            Some(h) => out.push(h << 4 | digit),
            None => high = Some(digit),
        }
    }
    if high.is_some() {
        return Err(last);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port() {
        assert_eq!(
            split_host_port("127.0.0.1:7000"),
            Some(("127.0.0.1".into(), 7000))
        );
        assert_eq!(split_host_port("[::1]:7"), Some(("::1".into(), 7)));
        assert_eq!(split_host_port("localhost"), None);
        assert_eq!(split_host_port("tcp://a:1"), None);
        assert_eq!(split_host_port("a:0"), None);
        assert_eq!(split_host_port("builtin"), Some(("builtin".into(), 0)));
    }

    #[test]
    fn stream_targets_plain_or_tls() {
        let ok = |text: &str| stream_target(text).unwrap();
        assert_eq!(ok("127.0.0.1:7000"), ("127.0.0.1".into(), 7000, false));
        assert_eq!(ok("tcp://localhost:7"), ("localhost".into(), 7, false));
        assert_eq!(ok("tls://localhost:7/"), ("localhost".into(), 7, true));
        assert_eq!(ok(" tls://[::1]:443 "), ("::1".into(), 443, true));
        assert_eq!(ok("builtin"), ("builtin".into(), 0, false));
        assert_eq!(ok("tcp://builtin"), ("builtin".into(), 0, false));
        let err = |text: &str| stream_target(text).unwrap_err();
        assert!(
            err("tcps://a:1").contains("unknown scheme `tcps://`"),
            "{}",
            err("tcps://a:1")
        );
        assert!(err("ssl://a:1").contains("`tls://HOST:PORT` for TLS"));
        assert!(err("tls://a").contains("expected tls://HOST:PORT or tcp://HOST:PORT"));
        assert!(err("tls://a:0").contains("found \"tls://a:0\""));
        assert!(err("a:b").contains("expected HOST:PORT, tls://HOST:PORT"));
        assert!(err("tls://builtin").contains("plain text only"));
        assert!(err("tls://a:1/x").contains("expected tls://HOST:PORT"));
    }

    #[test]
    fn hex() {
        assert_eq!(parse_hex("DE ad\nbe EF"), Ok(vec![0xde, 0xad, 0xbe, 0xef]));
        assert_eq!(parse_hex("0g"), Err(1));
        assert_eq!(parse_hex("abc"), Err(2));
        assert_eq!(parse_hex(""), Ok(vec![]));
    }
}
