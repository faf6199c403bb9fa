//! `http://host:port[/base]` for `target:` and absolute step URLs.

use super::Ctx;
use crate::error::PlanError;
use crate::yaml::Node;
use crate::{Scheme, TargetUrl};

/// What is wrong with a URL, and the fix.
#[derive(Debug, Clone)]
pub struct UrlError {
    pub message: String,
    pub hint: String,
}

fn bad(message: impl Into<String>, hint: impl Into<String>) -> UrlError {
    UrlError {
        message: message.into(),
        hint: hint.into(),
    }
}

/// `url` with its mistyped scheme separator mended (`http//host`, `http:/host`, `https:host`
/// become `http://host`, ...), or None when it does not start with such a scheme.
pub fn scheme_typo(url: &str) -> Option<String> {
    let lower = url.to_ascii_lowercase();
    let scheme = ["https", "http"]
        .into_iter()
        .find(|s| lower.starts_with(s))?;
    let sep = &url[scheme.len()..];
    let host = [":/", "//", ":", "/"]
        .into_iter()
        .find_map(|p| sep.strip_prefix(p))?
        .trim_start_matches('/');
    (!sep.starts_with("://") && !host.is_empty()).then(|| format!("{scheme}://{host}"))
}

/// Splits `scheme://authority` off `url`; returns the target and the rest (path, query...).
pub fn split_url(url: &str) -> Result<(TargetUrl, &str), UrlError> {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    let (scheme, rest) = if lower.starts_with("http://") {
        (Scheme::Http, &url[7..])
    } else if lower.starts_with("https://") {
        (Scheme::Https, &url[8..])
    } else if let Some(i) = url.find("://") {
        return Err(bad(
            format!(
                "unsupported scheme `{}`; expected `http://` or `https://`",
                &url[..i]
            ),
            "onrush speaks HTTP: write e.g. `http://127.0.0.1:8080`",
        ));
    } else if let Some(fixed) = scheme_typo(url) {
        return Err(bad(
            format!(
                "{url:?} is not a URL: its scheme lacks `://`; expected `http://host:port[/base]`"
            ),
            format!("write `{fixed}`"),
        ));
    } else {
        return Err(bad(
            format!("{url:?} is not a URL; expected `http://host:port[/base]`"),
            format!(
                "write the scheme too, e.g. `http://{}`",
                url.trim_start_matches('/')
            ),
        ));
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if authority.contains('@') {
        return Err(bad(
            "user info (`user@`) in the URL is not supported; expected `host:port`",
            "send credentials in a header: `headers: { Authorization: ... }`",
        ));
    }
    let (host, port_text) = if let Some(v6) = authority.strip_prefix('[') {
        let Some(close) = v6.find(']') else {
            return Err(bad(
                "`[` of an IPv6 address is not closed; expected `[::1]:8080`",
                "",
            ));
        };
        let after = &v6[close + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => {
                return Err(bad(
                    format!("unexpected {after:?} after the IPv6 address; expected `:port`"),
                    "",
                ))
            }
        };
        (&v6[..close], port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(bad(
            "the URL has no host; expected `http://host:port`",
            "e.g. `http://127.0.0.1:8080`",
        ));
    }
    let host_ok = if authority.starts_with('[') {
        host.chars()
            .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
    } else {
        host.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_')
    };
    if !host_ok {
        return Err(bad(format!("{host:?} is not a host name or IP address; expected e.g. `localhost` or `127.0.0.1`"), ""));
    }
    let port = match port_text {
        None => scheme.default_port(),
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => {
                return Err(bad(
                    format!("port {p:?} is not a port number; expected 1..65535"),
                    "e.g. `http://127.0.0.1:8080`",
                ))
            }
        },
    };
    Ok((
        TargetUrl {
            scheme,
            host: host.to_ascii_lowercase(),
            port,
            base_path: String::new(),
        },
        tail,
    ))
}

/// `target:` URL: `http://host:port[/base]` with no query.
pub(crate) fn parse_target(cx: &Ctx, node: &Node, text: &str) -> Result<TargetUrl, PlanError> {
    let text = text.trim();
    let (mut url, tail) = split_url(text).map_err(|e| {
        let hint = if e.hint.is_empty() {
            "write `target: http://host:port`, or `target: builtin` for the built-in server".into()
        } else {
            e.hint
        };
        cx.err(node, "target", e.message).with_hint(hint)
    })?;
    if tail.contains(['?', '#']) {
        return Err(cx
            .err(
                node,
                "target",
                format!("{text:?} has a query or fragment; expected `http://host:port[/base]`"),
            )
            .with_hint("put query strings in the step paths, e.g. `get: /search?q=x`"));
    }
    if let Some(bad) = tail
        .chars()
        .find(|c| c.is_whitespace() || c.is_control() || !c.is_ascii())
    {
        return Err(cx
            .err(
                node,
                "target",
                format!("the base path contains {bad:?}; expected a URL path"),
            )
            .with_hint("percent-encode it, e.g. a space as %20"));
    }
    url.base_path = tail.trim_end_matches('/').to_string();
    Ok(url)
}
