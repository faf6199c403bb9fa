//! What stream and datagram steps share, whatever their protocol: where they send
//! (`HOST:PORT`, `tcp://` or `tls://HOST:PORT`) and what (`send:`, `send_hex:`, `send_file:`).
//! Protocol grammars read them through `grammar::Value::stream_target` and
//! `grammar::Mapping::payload`.

use super::{Ctx, Fields};
use crate::error::PlanError;
use crate::{TcpPayload, BUILTIN_HOST};

impl Ctx<'_> {
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
pub fn split_host_port(text: &str) -> Option<(String, u16)> {
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
pub(crate) fn parse_hex(text: &str) -> Result<Vec<u8>, usize> {
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
