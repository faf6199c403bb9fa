//! A cookie jar per virtual user, after RFC 6265 §5.2-5.4: [`CookieJar::store`] takes each
//! `Set-Cookie` value of a response, [`CookieJar::header_value`] writes the `Cookie` header
//! value of a request.
//!
//! The cookies are kept in one `Vec` already in the RFC's sending order (longer paths first,
//! then earlier creation), so writing a `Cookie` header allocates nothing; an empty jar costs
//! one length check. Not implemented: a public suffix list (a `Domain` of a single label, such
//! as `com` or `localhost`, is refused unless it is the request host itself, which makes the
//! cookie host-only; multi-label public suffixes such as `co.uk` are accepted), and the
//! `SameSite`, `Partitioned` and `__Host-`/`__Secure-` prefix rules of RFC 6265bis.
//!
//! ```
//! use std::time::SystemTime;
//! use onrush_http::cookies::CookieJar;
//! let mut jar = CookieJar::new();
//! let now = SystemTime::now();
//! jar.store(b"SID=31d4d96e407aad42; Path=/; Secure; HttpOnly", "example.com", b"/login", now);
//! jar.store(b"lang=en-US; Path=/; Domain=example.com", "example.com", b"/login", now);
//! let mut value = Vec::new();
//! assert!(jar.header_value("www.example.com", b"/", true, now, &mut value));
//! assert_eq!(value, b"lang=en-US"); // SID is host-only
//! ```

use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Most cookies kept per domain (RFC 6265 §6.1 asks for at least 50); the oldest goes first.
const PER_DOMAIN: usize = 50;
/// Most cookies kept in one jar (RFC 6265 §6.1 asks for at least 3000).
const TOTAL: usize = 3000;
/// Longest name + value accepted (RFC 6265 §6.1 asks for at least 4096 bytes per cookie).
const MAX_COOKIE: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Cookie {
    name: Vec<u8>,
    value: Vec<u8>,
    /// Lower case, no leading dot: the request host for a host-only cookie.
    domain: String,
    host_only: bool,
    path: Vec<u8>,
    /// None: a session cookie (kept until `clear`).
    expires: Option<SystemTime>,
    secure: bool,
    http_only: bool,
    /// Creation order (kept when a cookie is replaced).
    created: u64,
}

impl Cookie {
    fn expired(&self, now: SystemTime) -> bool {
        self.expires.is_some_and(|t| t <= now)
    }
}

/// One virtual user's cookies (RFC 6265). Create one per VU; `clear` it when the VU starts a
/// new session.
#[derive(Debug, Clone, Default)]
pub struct CookieJar {
    /// Sorted by (path length descending, creation ascending): the sending order.
    cookies: Vec<Cookie>,
    next_created: u64,
}

impl CookieJar {
    /// An empty jar (no allocation until the first cookie).
    pub fn new() -> Self {
        Self::default()
    }

    /// How many cookies the jar holds (expired ones not yet evicted included).
    pub fn len(&self) -> usize {
        self.cookies.len()
    }

    /// Whether the jar holds no cookie.
    pub fn is_empty(&self) -> bool {
        self.cookies.is_empty()
    }

    /// Forgets every cookie.
    pub fn clear(&mut self) {
        self.cookies.clear();
    }

    /// Stores the cookie of one `Set-Cookie` header value received in the response to a
    /// request for `request_host` (the host name or IP address, without port) and
    /// `request_path` (the request target's path; a query is ignored), at `now`.
    ///
    /// RFC 6265 §5.2-5.3: a value without `=` or with an empty name is ignored; `Expires`
    /// (cookie-date syntax of §5.1.1) and `Max-Age` (which wins) set the expiry, and one in the
    /// past deletes the stored cookie of the same name, domain and path; `Domain` makes a
    /// domain cookie when it domain-matches the host (else the cookie is ignored; a single
    /// label other than the host is ignored too; on an IP host the cookie stays host-only);
    /// `Path` not starting with `/` gives the default path (the request path up to its last
    /// `/`); `Secure`; `HttpOnly` (stored, no effect on sending: this client is HTTP). A cookie
    /// with the same name, domain and path is replaced, keeping its creation time. Names or
    /// values with control characters (which could break the request head) are ignored.
    pub fn store(
        &mut self,
        set_cookie_value: &[u8],
        request_host: &str,
        request_path: &[u8],
        now: SystemTime,
    ) {
        let Some(mut cookie) = parse(set_cookie_value, now) else {
            return;
        };
        let host = canonical_host(request_host);
        let ip_host = is_ip(&host);
        match cookie.domain.is_empty() {
            true => {
                cookie.host_only = true;
                cookie.domain = host;
            }
            false => {
                let single_label = !cookie.domain.contains('.');
                if cookie.domain == host && (single_label || ip_host) {
                    cookie.host_only = true;
                } else if single_label || ip_host || !domain_match(&host, &cookie.domain) {
                    return;
                } else {
                    cookie.host_only = false;
                }
            }
        }
        if cookie.path.is_empty() {
            cookie.path = default_path(request_path).to_vec();
        }
        let expired = cookie.expired(now);
        if let Some(i) = self.cookies.iter().position(|c| {
            c.name == cookie.name && c.domain == cookie.domain && c.path == cookie.path
        }) {
            if expired {
                self.cookies.remove(i);
            } else {
                // Same path, same creation time: the position in the order does not change.
                cookie.created = self.cookies[i].created;
                self.cookies[i] = cookie;
            }
            return;
        }
        if expired {
            return;
        }
        cookie.created = self.next_created;
        self.next_created += 1;
        self.evict(&cookie.domain, now);
        let at = self.cookies.partition_point(|c| {
            c.path.len() > cookie.path.len()
                || c.path.len() == cookie.path.len() && c.created < cookie.created
        });
        self.cookies.insert(at, cookie);
    }

    /// Makes room for one more cookie of `domain`: drops expired cookies when a limit is
    /// reached, then the oldest of the domain, or of the jar.
    fn evict(&mut self, domain: &str, now: SystemTime) {
        let per_domain = self.cookies.iter().filter(|c| c.domain == domain).count();
        if per_domain < PER_DOMAIN && self.cookies.len() < TOTAL {
            return;
        }
        self.cookies.retain(|c| !c.expired(now));
        let per_domain = self.cookies.iter().filter(|c| c.domain == domain).count();
        if per_domain >= PER_DOMAIN {
            let oldest = self
                .cookies
                .iter()
                .enumerate()
                .filter(|(_, c)| c.domain == domain)
                .min_by_key(|(_, c)| c.created)
                .map(|(i, _)| i);
            if let Some(i) = oldest {
                self.cookies.remove(i);
            }
        }
        if self.cookies.len() >= TOTAL {
            let oldest = self
                .cookies
                .iter()
                .enumerate()
                .min_by_key(|(_, c)| c.created)
                .map(|(i, _)| i);
            if let Some(i) = oldest {
                self.cookies.remove(i);
            }
        }
    }

    /// Appends the `Cookie` header value for a request to `host` (without port) and `path` (the
    /// target; a query is ignored) to `out` — `a=1; b=2`, in RFC 6265 §5.4 order (longer paths
    /// first, then earlier creation) — and returns whether any cookie was written (if not,
    /// send no `Cookie` header). `secure`: the request goes over TLS (Secure cookies are only
    /// sent then). Expired cookies are skipped. Allocates nothing beyond `out`'s growth.
    pub fn header_value(
        &self,
        host: &str,
        path: &[u8],
        secure: bool,
        now: SystemTime,
        out: &mut Vec<u8>,
    ) -> bool {
        if self.cookies.is_empty() {
            return false;
        }
        let host = host.strip_suffix('.').unwrap_or(host);
        let path = request_path(path);
        let mut any = false;
        for c in &self.cookies {
            let host_ok = if c.host_only {
                host.eq_ignore_ascii_case(&c.domain)
            } else {
                domain_match_ci(host, &c.domain)
            };
            if !host_ok || (c.secure && !secure) || !path_match(path, &c.path) || c.expired(now) {
                continue;
            }
            if any {
                out.extend_from_slice(b"; ");
            }
            out.extend_from_slice(&c.name);
            out.push(b'=');
            out.extend_from_slice(&c.value);
            any = true;
        }
        any
    }

    /// The cookies as `(name, value, domain, path)`, in sending order (for tests and debugging).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8], &str, &[u8])> {
        self.cookies
            .iter()
            .map(|c| (&c.name[..], &c.value[..], &c.domain[..], &c.path[..]))
    }
}

/// §5.2: the cookie and its attributes; `domain` empty and `path` empty when not given (or
/// invalid). None: the value must be ignored.
fn parse(value: &[u8], now: SystemTime) -> Option<Cookie> {
    let mut parts = value.split(|&b| b == b';');
    let pair = parts.next().unwrap_or(b"");
    let eq = pair.iter().position(|&b| b == b'=')?;
    let name = trim(&pair[..eq]);
    let val = trim(&pair[eq + 1..]);
    let bad = |s: &[u8]| s.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f);
    if name.is_empty() || bad(name) || bad(val) || name.len() + val.len() > MAX_COOKIE {
        return None;
    }
    let mut cookie = Cookie {
        name: name.to_vec(),
        value: val.to_vec(),
        domain: String::new(),
        host_only: true,
        path: Vec::new(),
        expires: None,
        secure: false,
        http_only: false,
        created: 0,
    };
    let mut max_age: Option<SystemTime> = None;
    let mut expires: Option<SystemTime> = None;
    for av in parts {
        let (key, v) = match av.iter().position(|&b| b == b'=') {
            Some(i) => (trim(&av[..i]), trim(&av[i + 1..])),
            None => (trim(av), &b""[..]),
        };
        if key.eq_ignore_ascii_case(b"expires") {
            if let Some(t) = parse_cookie_date(v) {
                expires = Some(t);
            }
        } else if key.eq_ignore_ascii_case(b"max-age") {
            if let Some(t) = parse_max_age(v, now) {
                max_age = Some(t);
            }
        } else if key.eq_ignore_ascii_case(b"domain") {
            if !v.is_empty() {
                let v = v.strip_prefix(b".").unwrap_or(v);
                let Ok(d) = std::str::from_utf8(v) else {
                    return None; // a domain that can't be a host name matches no host
                };
                cookie.domain = canonical_host(d);
            }
        } else if key.eq_ignore_ascii_case(b"path") {
            cookie.path = if v.first() == Some(&b'/') {
                v.to_vec()
            } else {
                Vec::new()
            };
        } else if key.eq_ignore_ascii_case(b"secure") {
            cookie.secure = true;
        } else if key.eq_ignore_ascii_case(b"httponly") {
            cookie.http_only = true;
        }
    }
    cookie.expires = max_age.or(expires);
    Some(cookie)
}

/// §5.2.2: `-`? DIGIT+; zero or negative → the earliest time; too large → no expiry.
fn parse_max_age(v: &[u8], now: SystemTime) -> Option<SystemTime> {
    let (neg, digits) = match v {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, v),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if neg || digits.iter().all(|&d| d == b'0') {
        return Some(UNIX_EPOCH);
    }
    let secs = digits.iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    });
    // Beyond u64 seconds or SystemTime's range: far future.
    Some(
        secs.and_then(|s| now.checked_add(Duration::from_secs(s)))
            .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400)),
    )
}

/// §5.1.1 cookie-date.
pub(crate) fn parse_cookie_date(v: &[u8]) -> Option<SystemTime> {
    let delimiter = |b: u8| {
        b == 0x09
            || (0x20..=0x2f).contains(&b)
            || (0x3b..=0x40).contains(&b)
            || (0x5b..=0x60).contains(&b)
            || (0x7b..=0x7e).contains(&b)
    };
    let mut time: Option<(u32, u32, u32)> = None;
    let mut day: Option<u32> = None;
    let mut month: Option<u32> = None;
    let mut year: Option<u32> = None;
    for token in v.split(|&b| delimiter(b)).filter(|t| !t.is_empty()) {
        if time.is_none() {
            if let Some(t) = parse_time(token) {
                time = Some(t);
                continue;
            }
        }
        if day.is_none() {
            if let Some(d) = leading_digits(token, 1, 2) {
                day = Some(d);
                continue;
            }
        }
        if month.is_none() && token.len() >= 3 {
            const MONTHS: [&[u8; 3]; 12] = [
                b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct",
                b"nov", b"dec",
            ];
            if let Some(i) = MONTHS
                .iter()
                .position(|m| token[..3].eq_ignore_ascii_case(&m[..]))
            {
                month = Some(i as u32 + 1);
                continue;
            }
        }
        if year.is_none() {
            if let Some(y) = leading_digits(token, 2, 4) {
                year = Some(y);
                continue;
            }
        }
    }
    let (hour, minute, second) = time?;
    let (day, month, mut year) = (day?, month?, year?);
    if (70..=99).contains(&year) {
        year += 1900;
    } else if year <= 69 {
        year += 2000;
    }
    if !(1..=31).contains(&day) || year < 1601 || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if day > days_in_month[month as usize - 1] {
        return None;
    }
    let days = days_from_civil(i64::from(year), month, day);
    let secs = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second);
    Some(if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs as u64)
    } else {
        UNIX_EPOCH
            .checked_sub(Duration::from_secs(secs.unsigned_abs()))
            .unwrap_or(UNIX_EPOCH)
    })
}

/// `min..=max` digits at the start of `token`, followed by nothing or a non-digit.
fn leading_digits(token: &[u8], min: usize, max: usize) -> Option<u32> {
    let n = token.iter().take_while(|b| b.is_ascii_digit()).count();
    if n < min || n > max {
        return None;
    }
    Some(
        token[..n]
            .iter()
            .fold(0, |acc, &d| acc * 10 + u32::from(d - b'0')),
    )
}

/// hms-time: 1*2DIGIT ":" 1*2DIGIT ":" 1*2DIGIT, then anything not a digit.
fn parse_time(token: &[u8]) -> Option<(u32, u32, u32)> {
    let mut fields = [0u32; 3];
    let mut rest = token;
    for (i, field) in fields.iter_mut().enumerate() {
        let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if !(1..=2).contains(&n) {
            return None;
        }
        *field = rest[..n]
            .iter()
            .fold(0, |acc, &d| acc * 10 + u32::from(d - b'0'));
        rest = &rest[n..];
        if i < 2 {
            rest = rest.strip_prefix(b":")?;
        }
    }
    Some((fields[0], fields[1], fields[2]))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn trim(s: &[u8]) -> &[u8] {
    s.trim_ascii()
}

fn canonical_host(host: &str) -> String {
    let host = host.strip_suffix('.').unwrap_or(host);
    host.to_ascii_lowercase()
}

fn is_ip(host: &str) -> bool {
    host.parse::<IpAddr>().is_ok()
        || host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .is_some_and(|h| h.parse::<IpAddr>().is_ok())
}

/// §5.1.3, both lower case already.
fn domain_match(host: &str, domain: &str) -> bool {
    host == domain
        || (host.len() > domain.len()
            && host.ends_with(domain)
            && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
            && !is_ip(host))
}

/// §5.1.3 with a host of any case against a lower-case domain.
fn domain_match_ci(host: &str, domain: &str) -> bool {
    if host.len() == domain.len() {
        return host.eq_ignore_ascii_case(domain);
    }
    host.len() > domain.len()
        && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
        && host[host.len() - domain.len()..].eq_ignore_ascii_case(domain)
        && !is_ip(host)
}

/// The path of a request target: up to `?` or `#`.
fn request_path(target: &[u8]) -> &[u8] {
    let end = target
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .unwrap_or(target.len());
    &target[..end]
}

/// §5.1.4 default-path.
fn default_path(target: &[u8]) -> &[u8] {
    let path = request_path(target);
    if path.first() != Some(&b'/') {
        return b"/";
    }
    match path.iter().rposition(|&b| b == b'/') {
        Some(0) | None => b"/",
        Some(i) => &path[..i],
    }
}

/// §5.1.4 path-match.
fn path_match(request: &[u8], cookie: &[u8]) -> bool {
    let request = if request.is_empty() { b"/" } else { request };
    request == cookie
        || (request.starts_with(cookie)
            && (cookie.last() == Some(&b'/') || request.get(cookie.len()) == Some(&b'/')))
}

#[cfg(test)]
#[path = "cookies_tests.rs"]
mod tests;
