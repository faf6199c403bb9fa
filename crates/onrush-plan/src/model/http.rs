//! The `http:` settings: timeout, HTTP version, how connections are reused and closed, source
//! addresses, cookies, decompression, redirects, throttling and how much of a body is kept.

use std::net::IpAddr;
use std::time::Duration;

use crate::TlsSettings;

/// `http:` settings (plan level, merged per scenario).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    /// Per-request timeout; default 30s.
    pub timeout: Duration,
    pub connections: ConnectionScope,
    /// `version`: the HTTP version spoken (default `h1`).
    pub version: HttpVersion,
    /// `max_streams`: with HTTP/2 and `connections: shared`, how many requests (streams) may be
    /// in flight at once on one connection before the pool opens another (default 100; the
    /// server's own limit applies too).
    pub max_streams: u32,
    /// `source_addresses`: local addresses that new connections bind to, ranges and CIDR blocks
    /// expanded, in the order written (at most 65,536; all of one family). Empty (default): the
    /// operating system picks the source address. Several addresses multiply the ephemeral ports
    /// available towards one target (each source address has its own port range).
    pub source_addresses: Vec<IpAddr>,
    /// `close`: how onrush closes connections it is done with, as written (`auto` when not);
    /// [`HttpSettings::close_mode`] says what it means for this scope.
    pub close: CloseMode,
    /// `tls`: how `https://` connections are set up (ignored for `http://`).
    pub tls: TlsSettings,
    /// `cookies`: the per-VU cookie jar (RFC 6265).
    pub cookies: CookieMode,
    /// `decompress: true`: send `Accept-Encoding: gzip, deflate, br` and decode responses as
    /// they stream (act like a browser). Default false: bodies are counted as sent.
    pub decompress: bool,
    /// `redirects`: how many redirects to follow per request; 0 (default): none, a 3xx is the
    /// response.
    pub redirects: u32,
    /// `throttle`: a bandwidth cap per connection in bytes/s, both directions (slow clients).
    pub throttle: Option<u64>,
    /// `body_limit`: how much of a response body is kept for extractors and body checks
    /// (default 1 MiB); bodies of steps without them are streamed and discarded.
    pub body_limit: u64,
}

impl HttpSettings {
    /// The close mode in effect: `auto` resolved by the connection scope (`server` for
    /// `per_request`, where a client that will not reuse the connection says so, as Go's and
    /// JMeter's HTTP clients do; `normal` for the scopes that reuse connections).
    pub fn close_mode(&self) -> CloseMode {
        match (self.close, self.connections) {
            (CloseMode::Auto, ConnectionScope::PerRequest) => CloseMode::Server,
            (CloseMode::Auto, _) => CloseMode::Normal,
            (mode, _) => mode,
        }
    }
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            timeout: Duration::from_secs(30),
            connections: ConnectionScope::PerVu,
            version: HttpVersion::H1,
            max_streams: 100,
            source_addresses: Vec::new(),
            close: CloseMode::Auto,
            tls: TlsSettings::default(),
            cookies: CookieMode::On,
            decompress: false,
            redirects: 0,
            throttle: None,
            body_limit: 1 << 20,
        }
    }
}

/// `http.version`: which HTTP version requests use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpVersion {
    /// `h1` (default): HTTP/1.1.
    #[default]
    H1,
    /// `h2`: HTTP/2 — over TLS the server must choose `h2` by ALPN; for `http://` targets h2c
    /// with prior knowledge.
    H2,
    /// `auto`: over TLS, offer `h2` and `http/1.1` by ALPN and speak what the server chooses
    /// (as browsers do); `http://` targets use HTTP/1.1.
    Auto,
    /// `h3`: HTTP/3 over QUIC (UDP, TLS 1.3 inside, ALPN `h3`); `https://` targets only.
    H3,
}

impl HttpVersion {
    pub fn as_str(&self) -> &'static str {
        match self {
            HttpVersion::H1 => "h1",
            HttpVersion::H2 => "h2",
            HttpVersion::Auto => "auto",
            HttpVersion::H3 => "h3",
        }
    }
}

/// `http.cookies`: the per-VU cookie jar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CookieMode {
    /// `on` (default): each VU keeps its cookies across iterations, like one browser.
    #[default]
    On,
    /// `per_iteration`: the jar is emptied when an iteration starts (a new browser each time).
    PerIteration,
    /// `off`: no cookie handling; `Cookie` headers only as written in the plan.
    Off,
}

impl CookieMode {
    pub fn as_str(&self) -> &'static str {
        match self {
            CookieMode::On => "on",
            CookieMode::PerIteration => "per_iteration",
            CookieMode::Off => "off",
        }
    }
}

/// `http.close`: how a connection onrush is done with is closed, and so which side keeps its
/// TIME_WAIT (the side that closes first keeps the connection's tuple for 60 s on Linux).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CloseMode {
    /// `auto` (default): `server` for `connections: per_request`, `normal` for every other
    /// scope (see [`HttpSettings::close_mode`]).
    #[default]
    Auto,
    /// `normal`: onrush closes with FIN when it is done with the connection, and so keeps the
    /// TIME_WAIT on its own ephemeral ports (a browser tab closing, a pool evicting).
    Normal,
    /// `server`: each request says `Connection: close`, so the server closes after its
    /// response and keeps the TIME_WAIT, as k6's `noConnectionReuse` (Go), JMeter without
    /// keep-alive and `wrk -H 'Connection: close'` do. Only with `connections: per_request`.
    Server,
    /// `reset`: close with `SO_LINGER` 0, which sends a reset (RST) and skips TIME_WAIT on the
    /// client, so ports are free again at once. The server sees resets, and data still in
    /// flight can be lost: only for connection-churn tests.
    Reset,
}

impl CloseMode {
    pub fn as_str(&self) -> &'static str {
        match self {
            CloseMode::Auto => "auto",
            CloseMode::Normal => "normal",
            CloseMode::Server => "server",
            CloseMode::Reset => "reset",
        }
    }
}

/// How long a connection lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConnectionScope {
    /// `shared`: one pool of connections per worker thread (per target) that every VU of the
    /// scenario draws from: an HTTP/1.1 connection serves one request at a time and goes back
    /// to the pool; an HTTP/2 connection carries up to `max_streams` requests at once.
    Shared,
    /// `per_vu` (default): each VU keeps its connection alive across iterations.
    #[default]
    PerVu,
    /// `per_iteration`: a new connection for each iteration.
    PerIteration,
    /// `per_request`: a new connection for each request.
    PerRequest,
}

impl ConnectionScope {
    pub fn as_str(&self) -> &'static str {
        match self {
            ConnectionScope::Shared => "shared",
            ConnectionScope::PerVu => "per_vu",
            ConnectionScope::PerIteration => "per_iteration",
            ConnectionScope::PerRequest => "per_request",
        }
    }
}
