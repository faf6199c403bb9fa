//! Where requests go: the plan's `target:` (a URL, the built-in server, or none) and the
//! built-in server's host name in the steps that name their own server.

/// The host that names the built-in target server in a `tcp:`, `thrift:`, `grpc:` or `ws:`
/// step (`tcp: builtin`, `url: ws://builtin/ws/echo`): its one port serves every protocol it
/// speaks and is known only when it runs, so such a step's port is 0 in the plan.
pub const BUILTIN_HOST: &str = "builtin";

/// Where requests go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `target: builtin`: the engine starts its built-in server on 127.0.0.1 with a free port.
    Builtin,
    Url(TargetUrl),
    /// No `target:`: every step names its own server (`tcp:`, `grpc:`, a full URL, a
    /// protocol's own key such as `redis:`); an HTTP step with a bare path is a plan error.
    None,
}

/// `http://host:port[/base]`
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TargetUrl {
    pub scheme: Scheme,
    /// Host name or IP address; IPv6 without brackets.
    pub host: String,
    pub port: u16,
    /// `""` or e.g. `"/api"` (no trailing slash).
    pub base_path: String,
}

impl TargetUrl {
    /// `host:port` as written in a `Host:` header (IPv6 in brackets; port omitted when default).
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == self.scheme.default_port() {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

impl std::fmt::Display for TargetUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        write!(
            f,
            "{}://{host}:{}{}",
            self.scheme.as_str(),
            self.port,
            self.base_path
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    Http,
    /// TLS, set up as `http.tls` says ([`TlsSettings`](crate::TlsSettings)).
    Https,
}

impl Scheme {
    pub fn as_str(&self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
    pub fn default_port(&self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}
