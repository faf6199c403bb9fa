//! `version: auto`'s upgrade to HTTP/3, as browsers do it: a response over TLS that carries
//! `Alt-Svc: h3=":PORT"` (RFC 7838, RFC 9114 §3.1.1) for the same host makes the VU's next
//! connections to that origin QUIC connections, for the advertisement's `ma=` seconds (24 h by
//! default). A QUIC handshake that fails falls back to TCP at once, for the same request, and
//! HTTP/3 is not tried again on that origin by this VU for [`BROKEN_FOR`] (as Chrome marks an
//! alternative service broken for 5 minutes at first).
//!
//! What is counted, process-wide ([`counts`]): requests answered over HTTP/3 (by any
//! `version`), connections opened over HTTP/3 because of an advertisement, and fallbacks to TCP.
//! One relaxed atomic add per HTTP/3 request or upgrade, none on HTTP/1.1 or HTTP/2 requests.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// How long an origin whose advertised HTTP/3 failed its handshake is left on TCP.
pub const BROKEN_FOR: Duration = Duration::from_secs(300);

/// `ma=`'s default (RFC 7838 §3.1): 24 hours.
const DEFAULT_MAX_AGE: Duration = Duration::from_secs(86_400);

/// What a VU knows of one target slot's alternative services.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum AltSvc {
    /// Nothing advertised (or `clear`, or expired).
    #[default]
    None,
    /// HTTP/3 advertised on UDP `port` of the same host, until `until`.
    H3 { port: u16, until: Instant },
    /// HTTP/3 was advertised but its handshake failed: TCP only until `until`.
    Broken { until: Instant },
}

impl AltSvc {
    /// The port to speak HTTP/3 to now, if any.
    pub(crate) fn h3_port(&self, now: Instant) -> Option<u16> {
        match *self {
            AltSvc::H3 { port, until } if now < until => Some(port),
            _ => None,
        }
    }

    /// The state after a response carrying `header` (an `Alt-Svc` value) at `now`. An
    /// origin marked broken stays so until its time is up; an advertisement for another host,
    /// or of protocols other than `h3`, changes nothing.
    pub(crate) fn update(self, header: &[u8], now: Instant) -> AltSvc {
        if let AltSvc::Broken { until } = self {
            if now < until {
                return self;
            }
        }
        match parse(header) {
            Some(Advert::Clear) => AltSvc::None,
            Some(Advert::H3 { port, max_age }) => AltSvc::H3 {
                port,
                until: now + max_age,
            },
            None => self,
        }
    }
}

/// What one `Alt-Svc` header value says about HTTP/3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Advert {
    Clear,
    H3 { port: u16, max_age: Duration },
}

/// The first `h3` alternative of the same host in an `Alt-Svc` value (`h3=":443"; ma=3600,
/// h3-29=":443"`), or `clear`. Alternatives on another host (`h3="alt.example:443"`) are
/// skipped: the connection would go to an address the plan did not resolve. Draft versions
/// (`h3-29`) are skipped: quinn's h3 speaks RFC 9114 only.
pub(crate) fn parse(value: &[u8]) -> Option<Advert> {
    let value = std::str::from_utf8(value).ok()?.trim();
    if value.eq_ignore_ascii_case("clear") {
        return Some(Advert::Clear);
    }
    for entry in value.split(',') {
        let mut parts = entry.split(';');
        let Some((proto, authority)) = parts.next().and_then(|p| p.trim().split_once('=')) else {
            continue;
        };
        if proto.trim() != "h3" {
            continue;
        }
        let authority = authority.trim().trim_matches('"');
        let Some((host, port)) = authority.rsplit_once(':') else {
            continue;
        };
        let Ok(port) = port.parse::<u16>() else {
            continue;
        };
        if !host.is_empty() || port == 0 {
            continue;
        }
        let mut max_age = DEFAULT_MAX_AGE;
        for param in parts {
            if let Some((name, v)) = param.trim().split_once('=') {
                if name.trim().eq_ignore_ascii_case("ma") {
                    if let Ok(secs) = v.trim().trim_matches('"').parse::<u64>() {
                        max_age = Duration::from_secs(secs);
                    }
                }
            }
        }
        return Some(Advert::H3 { port, max_age });
    }
    None
}

static H3_REQUESTS: AtomicU64 = AtomicU64::new(0);
static UPGRADED: AtomicU64 = AtomicU64::new(0);
static FALLBACKS: AtomicU64 = AtomicU64::new(0);

/// How many requests went over HTTP/3 in this process, and what `version: auto` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VersionCounts {
    /// Responses received over HTTP/3 (every hop of a redirect counts), whatever the
    /// scenario's `version`.
    pub h3_requests: u64,
    /// QUIC connections `version: auto` opened because the origin advertised `h3`.
    pub upgraded: u64,
    /// Advertised HTTP/3 whose QUIC handshake failed, the request then sent over TCP.
    pub fallbacks: u64,
}

/// The counts since the process started (a run reads them before and after).
pub fn counts() -> VersionCounts {
    VersionCounts {
        h3_requests: H3_REQUESTS.load(Relaxed),
        upgraded: UPGRADED.load(Relaxed),
        fallbacks: FALLBACKS.load(Relaxed),
    }
}

pub(crate) fn count_h3_request() {
    H3_REQUESTS.fetch_add(1, Relaxed);
}

pub(crate) fn count_upgrade() {
    UPGRADED.fetch_add(1, Relaxed);
}

pub(crate) fn count_fallback() {
    FALLBACKS.fetch_add(1, Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_h3_of_the_same_host_with_its_max_age() {
        assert_eq!(
            parse(br#"h3=":8443"; ma=3600, h3-29=":8443""#),
            Some(Advert::H3 {
                port: 8443,
                max_age: Duration::from_secs(3600)
            })
        );
        assert_eq!(
            parse(br#"h3-29=":1", h3=":443""#),
            Some(Advert::H3 {
                port: 443,
                max_age: DEFAULT_MAX_AGE
            })
        );
        assert_eq!(parse(b"clear"), Some(Advert::Clear));
        // Another host, HTTP/2 only, no port, garbage: nothing to use.
        assert_eq!(parse(br#"h3="alt.example.com:443""#), None);
        assert_eq!(parse(br#"h2=":443""#), None);
        assert_eq!(parse(br#"h3="""#), None);
        assert_eq!(parse(b"\xff"), None);
    }

    #[test]
    fn an_advertisement_expires_and_a_broken_origin_waits() {
        let now = Instant::now();
        let state = AltSvc::None.update(br#"h3=":9000"; ma=10"#, now);
        assert_eq!(state.h3_port(now), Some(9000));
        assert_eq!(state.h3_port(now + Duration::from_secs(11)), None);
        assert_eq!(state.update(b"clear", now), AltSvc::None);
        let broken = AltSvc::Broken {
            until: now + BROKEN_FOR,
        };
        assert_eq!(broken.update(br#"h3=":9000""#, now), broken);
        let later = now + BROKEN_FOR;
        assert_eq!(
            broken.update(br#"h3=":9000""#, later).h3_port(later),
            Some(9000)
        );
    }
}
