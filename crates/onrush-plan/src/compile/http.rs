//! `http:` → [`HttpSettings`]: timeout, connection scope, source addresses, close mode, TLS
//! (in `tls.rs`).

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::Ctx;
use crate::error::{did_you_mean, one_of, PlanError};
use crate::units;
use crate::yaml::Node;
use crate::{CloseMode, ConnectionScope, CookieMode, HttpSettings, HttpVersion};

const HTTP_KEYS: [&str; 12] = [
    "timeout",
    "version",
    "max_streams",
    "connections",
    "source_addresses",
    "close",
    "tls",
    "cookies",
    "decompress",
    "redirects",
    "throttle",
    "body_limit",
];

/// Most source addresses one `source_addresses` list may expand to.
pub(crate) const MAX_SOURCE_ADDRESSES: usize = 65_536;

const ADDRESS_FORMS: &str =
    "an IPv4 or IPv6 address, a range `A-B` or a CIDR block `A/N` such as `127.0.1.0/24`";

impl Ctx<'_> {
    /// `http:` settings merged over `base`. `target_ip`: the plan target's address when it is an
    /// IP literal (source addresses must be of its family).
    pub fn http(
        &self,
        node: Option<&Node>,
        path: &str,
        base: &HttpSettings,
        target_ip: Option<IpAddr>,
    ) -> Result<HttpSettings, PlanError> {
        let Some(node) = node else {
            return Ok(base.clone());
        };
        let f = self.map(node, path, &HTTP_KEYS)?;
        let mut out = base.clone();
        if let Some(t) = f.get("timeout") {
            out.timeout = self.duration(t, &f.child("timeout"))?;
            if out.timeout.is_zero() {
                return Err(self
                    .err(
                        t,
                        &f.child("timeout"),
                        "timeout is 0; expected a positive duration",
                    )
                    .with_hint("e.g. `timeout: 10s`"));
            }
        }
        if let Some(c) = f.get("connections") {
            out.connections = self.choice(
                c,
                &f.child("connections"),
                "connection scope",
                &[
                    ConnectionScope::Shared,
                    ConnectionScope::PerVu,
                    ConnectionScope::PerIteration,
                    ConnectionScope::PerRequest,
                ],
                ConnectionScope::as_str,
                "shared: one pool of connections per worker thread that all VUs draw from; per_vu keeps one connection per VU; per_iteration reconnects each iteration; per_request each request",
            )?;
        }
        if let Some(v) = f.get("version") {
            out.version = self.choice(
                v,
                &f.child("version"),
                "HTTP version",
                &[
                    HttpVersion::H1,
                    HttpVersion::H2,
                    HttpVersion::Auto,
                    HttpVersion::H3,
                ],
                HttpVersion::as_str,
                "h1: HTTP/1.1; h2: HTTP/2 (over TLS via ALPN, or h2c with prior knowledge for http://); auto: HTTP/2 if the server chooses it by ALPN, else HTTP/1.1 (http:// targets use HTTP/1.1); h3: HTTP/3 over QUIC (https:// only)",
            )?;
            // QUIC always runs TLS: a plain target cannot be reached over HTTP/3. (A step's own
            // `http://` URL is refused when HTTP compiles the step.)
            if out.version == HttpVersion::H3 && self.plain_target {
                return Err(self
                    .err(
                        v,
                        &f.child("version"),
                        "`version: h3` needs an `https://` target: HTTP/3 runs over QUIC, which \
                         always carries TLS, and the plan's `target:` is plain `http://`",
                    )
                    .with_hint(
                        "write the target as `https://host:port` (the server's HTTP/3 port), or \
                         use `version: h1`, `h2` or `auto` for a plain target",
                    ));
            }
        }
        if let Some(m) = f.get("max_streams") {
            out.max_streams = self.uint(
                m,
                &f.child("max_streams"),
                1,
                1_000_000,
                "`max_streams` is how many requests may be in flight at once on one HTTP/2 connection of the `shared` pool, e.g. `max_streams: 10`",
            )? as u32;
        }
        if let Some(c) = f.get("close") {
            out.close = self.choice(
                c,
                &f.child("close"),
                "close mode",
                &[
                    CloseMode::Auto,
                    CloseMode::Normal,
                    CloseMode::Server,
                    CloseMode::Reset,
                ],
                CloseMode::as_str,
                "auto (default): server for connections: per_request, normal otherwise; normal: onrush closes with FIN and keeps the TIME_WAIT; server: each request says `Connection: close` and the server closes first, keeping the TIME_WAIT (per_request only); reset: RST, no TIME_WAIT on either side (for connection-churn tests)",
            )?;
        }
        // `server` means every request asks the server to close, so the connection cannot live
        // longer than one request: with another scope it would silently become `per_request`.
        if out.close == CloseMode::Server && out.connections != ConnectionScope::PerRequest {
            let (node, field) = match f.get("close") {
                Some(c) => (c, f.child("close")),
                None => (f.get("connections").unwrap_or(node), f.child("connections")),
            };
            return Err(self
                .err(
                    node,
                    &field,
                    format!(
                        "`close: server` asks the server to close after every request, but \
                         `connections: {}` reuses connections",
                        out.connections.as_str()
                    ),
                )
                .with_hint(
                    "use `connections: per_request` beside `close: server`, or `close: normal` \
                     (onrush closes, and keeps the TIME_WAIT) or `close: reset`",
                ));
        }
        if let Some(a) = f.get("source_addresses") {
            out.source_addresses =
                self.source_addresses(a, &f.child("source_addresses"), target_ip)?;
        }
        if let Some(t) = f.get("tls") {
            out.tls = self.tls(t, &f.child("tls"), &base.tls)?;
        }
        if let Some(c) = f.get("cookies") {
            out.cookies = self.choice(
                c,
                &f.child("cookies"),
                "cookie mode",
                &[CookieMode::On, CookieMode::PerIteration, CookieMode::Off],
                CookieMode::as_str,
                "on keeps each VU's cookies; per_iteration empties the jar each iteration; off disables the jar",
            )?;
        }
        if let Some(d) = f.get("decompress") {
            out.decompress = self.boolean(d, &f.child("decompress"), "decompress")?;
        }
        if let Some(r) = f.get("redirects") {
            out.redirects = self.uint(
                r,
                &f.child("redirects"),
                0,
                100,
                "`redirects` is how many redirects to follow per request, e.g. `redirects: 5` (0: none)",
            )? as u32;
        }
        if let Some(t) = f.get("throttle") {
            let field = f.child("throttle");
            let text = self.string(t, &field)?;
            let rate = units::parse_bytes(text.trim().trim_end_matches("/s")).map_err(|e| {
                self.err(t, &field, e.message)
                    .with_hint("a bandwidth per connection, e.g. `throttle: 64KB/s` or `1MiB/s`")
            })?;
            if rate == 0 {
                return Err(self
                    .err(t, &field, "throttle is 0; expected a positive bandwidth")
                    .with_hint("e.g. `throttle: 64KB/s`; remove the key for no cap"));
            }
            out.throttle = Some(rate);
        }
        if out.throttle.is_some() && out.version != HttpVersion::H1 {
            let key = f
                .key("throttle")
                .or_else(|| f.key("version"))
                .unwrap_or(node);
            return Err(self
                .err(
                    key,
                    &f.child(if f.get("throttle").is_some() {
                        "throttle"
                    } else {
                        "version"
                    }),
                    format!(
                        "`throttle` works with HTTP/1.1 only; this scenario has `version: {}`",
                        out.version.as_str()
                    ),
                )
                .with_hint("remove `throttle`, or use `version: h1` for the throttled scenario"));
        }
        if let Some(b) = f.get("body_limit") {
            let field = f.child("body_limit");
            let text = self.string(b, &field)?;
            out.body_limit = units::parse_bytes(text.trim()).map_err(|e| {
                self.err(b, &field, e.message).with_hint(
                    "how much of a body extractors and checks see, e.g. `body_limit: 4MiB`",
                )
            })?;
        }
        Ok(out)
    }

    /// One of a few named values (`as_str` gives each one's name).
    pub(super) fn choice<T: Copy>(
        &self,
        node: &Node,
        path: &str,
        what: &str,
        values: &[T],
        as_str: fn(&T) -> &'static str,
        otherwise: &str,
    ) -> Result<T, PlanError> {
        let v = self.string(node, path)?;
        if let Some(found) = values.iter().find(|x| as_str(x) == v.trim()) {
            return Ok(*found);
        }
        let names: Vec<&str> = values.iter().map(as_str).collect();
        let hint = did_you_mean(v.trim(), names.iter().copied())
            .map_or_else(|| otherwise.to_string(), |s| format!("did you mean `{s}`?"));
        Err(self
            .err(
                node,
                path,
                format!("unknown {what} {v:?}; expected {}", one_of(&names)),
            )
            .with_hint(hint))
    }

    /// `source_addresses`: a list of addresses, ranges and CIDR blocks (or one of them).
    fn source_addresses(
        &self,
        node: &Node,
        path: &str,
        target_ip: Option<IpAddr>,
    ) -> Result<Vec<IpAddr>, PlanError> {
        let items = self.one_or_many(
            node,
            path,
            "source addresses",
            "e.g. `source_addresses: [\"127.0.0.2\", \"127.0.0.3\"]` or `source_addresses: \"127.0.0.2-127.0.0.254\"`",
        )?;
        let mut out: Vec<IpAddr> = Vec::new();
        let mut seen: HashSet<IpAddr> = HashSet::new();
        for (item, field) in items {
            let text = self.string(item, &field)?;
            let room = MAX_SOURCE_ADDRESSES - out.len();
            let addrs = expand(&text, room)
                .map_err(|e| self.err(item, &field, e.message).with_hint(e.hint))?;
            for a in addrs {
                if let Some(bad) = unusable(a) {
                    return Err(self
                        .err(
                            item,
                            &field,
                            format!("{a} is {bad}; expected an address of this machine"),
                        )
                        .with_hint(
                            "leave `source_addresses` out to let the operating system choose",
                        ));
                }
                if let Some(first) = out.first() {
                    if first.is_ipv4() != a.is_ipv4() {
                        return Err(self
                            .err(
                                item,
                                &field,
                                format!(
                                    "{a} is {} but {first} is {}; expected addresses of one family",
                                    family(a),
                                    family(*first)
                                ),
                            )
                            .with_hint("a connection's source and destination have the same family; use another scenario for the other family"));
                    }
                }
                if let Some(t) = target_ip {
                    if t.is_ipv4() != a.is_ipv4() {
                        return Err(self
                            .err(
                                item,
                                &field,
                                format!(
                                    "{a} is {} but the target {t} is {}; expected {} source addresses",
                                    family(a),
                                    family(t),
                                    family(t)
                                ),
                            )
                            .with_hint("a connection's source and destination have the same family"));
                    }
                }
                if !seen.insert(a) {
                    return Err(self
                        .err(
                            item,
                            &field,
                            format!("{a} is listed twice; expected each address once"),
                        )
                        .with_hint("check that ranges and CIDR blocks do not overlap"));
                }
                out.push(a);
            }
        }
        Ok(out)
    }
}

fn family(a: IpAddr) -> &'static str {
    if a.is_ipv4() {
        "IPv4"
    } else {
        "IPv6"
    }
}

/// Why `a` cannot be a source address, if it cannot.
fn unusable(a: IpAddr) -> Option<&'static str> {
    if a.is_unspecified() {
        Some("the unspecified address")
    } else if a.is_multicast() {
        Some("a multicast address")
    } else if a == IpAddr::V4(Ipv4Addr::BROADCAST) {
        Some("the broadcast address")
    } else {
        None
    }
}

struct AddrError {
    message: String,
    hint: String,
}

fn addr_err(message: impl Into<String>, hint: impl Into<String>) -> AddrError {
    AddrError {
        message: message.into(),
        hint: hint.into(),
    }
}

fn parse_ip(text: &str) -> Result<IpAddr, AddrError> {
    let t = text.trim();
    let inner = t
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or(t);
    inner.parse::<IpAddr>().map_err(|_| {
        let hint = if inner.contains(':') && inner.contains('.') {
            "write the address without a port".to_string()
        } else if inner.chars().any(|c| c.is_ascii_alphabetic()) && !inner.contains(':') {
            "source addresses are local IP addresses of this machine (see `ip -brief addr`); names are not resolved".to_string()
        } else {
            "e.g. `127.0.0.2`, `10.0.0.5-10.0.0.20`, `127.0.1.0/24` or `fd00::10`".to_string()
        };
        addr_err(
            format!("`{inner}` is not an IP address; expected {ADDRESS_FORMS}"),
            hint,
        )
    })
}

/// One entry: an address, a range `A-B` or a CIDR block `A/N`, expanded; at most `room` addresses.
fn expand(text: &str, room: usize) -> Result<Vec<IpAddr>, AddrError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(addr_err(
            format!("empty source address; expected {ADDRESS_FORMS}"),
            "e.g. `127.0.0.2`",
        ));
    }
    let too_many = |n: u128| {
        addr_err(
            format!("`{t}` makes more than {MAX_SOURCE_ADDRESSES} source addresses in all ({n} here); expected at most {MAX_SOURCE_ADDRESSES}"),
            "each source address adds a range of ephemeral ports (~28,000 by default); a few dozen addresses are usually plenty",
        )
    };
    if let Some((addr, len)) = t.split_once('/') {
        let base = parse_ip(addr)?;
        let bits: u32 = if base.is_ipv4() { 32 } else { 128 };
        let len: u32 = len
            .trim()
            .parse()
            .ok()
            .filter(|l| *l <= bits)
            .ok_or_else(|| {
                addr_err(
                    format!(
                        "`{t}` has a bad prefix length `/{}`; expected `/0` to `/{bits}`",
                        len.trim()
                    ),
                    "e.g. `127.0.1.0/24` for 127.0.1.1 to 127.0.1.254",
                )
            })?;
        let host_bits = bits - len;
        let start = to_u128(base);
        let mask: u128 = if host_bits >= 128 {
            u128::MAX
        } else {
            (1u128 << host_bits) - 1
        };
        if start & mask != 0 {
            let network = from_u128(start & !mask, base.is_ipv4());
            return Err(addr_err(
                format!("`{t}` has host bits set; expected the network address of the block"),
                format!("write `{network}/{len}`"),
            ));
        }
        if host_bits > 64 {
            return Err(too_many(u128::MAX));
        }
        let size = 1u128 << host_bits;
        // IPv4 blocks larger than /31 leave out the network and broadcast addresses.
        let (first, count) = if base.is_ipv4() && host_bits >= 2 {
            (start + 1, size - 2)
        } else {
            (start, size)
        };
        if count > room as u128 {
            return Err(too_many(count));
        }
        return Ok((0..count)
            .map(|i| from_u128(first + i, base.is_ipv4()))
            .collect());
    }
    if let Some((a, b)) = t.split_once('-') {
        let (a, b) = (parse_ip(a)?, parse_ip(b)?);
        if a.is_ipv4() != b.is_ipv4() {
            return Err(addr_err(
                format!(
                    "`{t}` goes from an {} to an {} address; expected both ends of one family",
                    family(a),
                    family(b)
                ),
                "e.g. `127.0.0.2-127.0.0.254`",
            ));
        }
        let (x, y) = (to_u128(a), to_u128(b));
        if x > y {
            return Err(addr_err(
                format!("the range `{t}` ends before it starts; expected FIRST-LAST"),
                format!("write `{b}-{a}`"),
            ));
        }
        let count = y - x + 1;
        if count > room as u128 {
            return Err(too_many(count));
        }
        return Ok((x..=y).map(|v| from_u128(v, a.is_ipv4())).collect());
    }
    let a = parse_ip(t)?;
    if room == 0 {
        return Err(too_many(1));
    }
    Ok(vec![a])
}

fn to_u128(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v) => u32::from(v) as u128,
        IpAddr::V6(v) => u128::from(v),
    }
}

fn from_u128(v: u128, v4: bool) -> IpAddr {
    if v4 {
        IpAddr::V4(Ipv4Addr::from(v as u32))
    } else {
        IpAddr::V6(Ipv6Addr::from(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(t: &str) -> Vec<String> {
        match expand(t, MAX_SOURCE_ADDRESSES) {
            Ok(v) => v.iter().map(|a| a.to_string()).collect(),
            Err(e) => panic!("{t}: {}", e.message),
        }
    }

    #[test]
    fn forms() {
        assert_eq!(ok("127.0.0.2"), ["127.0.0.2"]);
        assert_eq!(ok("[::1]"), ["::1"]);
        assert_eq!(
            ok("127.0.0.2-127.0.0.4"),
            ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
        );
        assert_eq!(ok("10.0.0.0/30"), ["10.0.0.1", "10.0.0.2"]);
        assert_eq!(ok("10.0.0.0/31"), ["10.0.0.0", "10.0.0.1"]);
        assert_eq!(ok("10.0.0.7/32"), ["10.0.0.7"]);
        assert_eq!(ok("fd00::/127"), ["fd00::", "fd00::1"]);
        assert_eq!(ok("fd00::fe-fd00::101").len(), 4);
        assert_eq!(ok("127.0.1.0/24").len(), 254);
        assert_eq!(ok("10.0.0.0/16").len(), 65_534);
        let err = |t: &str| match expand(t, MAX_SOURCE_ADDRESSES) {
            Ok(v) => panic!("{t}: expected an error, got {v:?}"),
            Err(e) => format!("{} / {}", e.message, e.hint),
        };
        assert!(err("10.0.0.0/8").contains("more than 65536"));
        assert!(err("fd00::/64").contains("more than 65536"));
        assert!(err("127.0.1.5/24").contains("write `127.0.1.0/24`"));
        assert!(err("127.0.0.9-127.0.0.2").contains("write `127.0.0.2-127.0.0.9`"));
        assert!(err("127.0.0.1-::1").contains("one family"));
        assert!(err("localhost").contains("names are not resolved"));
        assert!(err("127.0.0.1:80").contains("not an IP address"));
        assert!(err("10.0.0.0/33").contains("`/0` to `/32`"));
        assert!(expand("127.0.0.2", 0).is_err());
        assert_eq!(
            unusable("0.0.0.0".parse().unwrap()),
            Some("the unspecified address")
        );
        assert!(unusable("224.0.0.1".parse().unwrap()).is_some());
        assert!(unusable("127.0.0.2".parse().unwrap()).is_none());
    }
}
