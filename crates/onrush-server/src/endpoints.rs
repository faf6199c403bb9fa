//! The HTTP endpoints of the built-in server, written once: the 404 body lists them,
//! `onrush serve --help` and docs/server.md describe them, and a test asks each one.

/// One endpoint: how it is asked (`/bytes/N`), and what it answers.
pub struct Endpoint {
    pub path: &'static str,
    pub what: &'static str,
}

const fn e(path: &'static str, what: &'static str) -> Endpoint {
    Endpoint { path, what }
}

/// Every HTTP endpoint, in the order the help lists them (any method unless it says).
pub const ENDPOINTS: &[Endpoint] = &[
    e("/", "`Hello from onrush` as text"),
    e("/bytes/N", "N bytes with Content-Length; `?chunked=1` chunked; `?encoding=gzip|deflate|br` compressed while streaming"),
    e("/delay/MS", "200 after MS milliseconds"),
    e("/status/CODE", "status CODE (200..599) with its reason as text"),
    e("/echo", "the request (method, path, query, headers, body length and SHA-256) as JSON; the body is hashed while streaming"),
    e("/upload", "the body's length and SHA-256 as JSON (Content-Length or chunked)"),
    e("/json", "a sample JSON document (a token, a user, items)"),
    e("/html", "a sample HTML page (a CSRF token in a form, links)"),
    e("/xml", "a sample XML document (an order)"),
    e("/stall", "`?every=MS&for=MS`: requests arriving in a pause window wait for its end (a GC, a checkpoint)"),
    e("/stats", "requests and connections counted so far, per protocol, as JSON (not counted itself)"),
    e("/login", "GET: a page with a fresh token (`?format=json|xml` too); POST: a session cookie for a valid token"),
    e("/verify", "`?token=T` (or `X-CSRF-Token`, `Authorization: Bearer`): 200 for a token this server issued, else 403"),
    e("/account", "200 `{user, session}` with a session cookie from /login, else 401"),
    e("/redirect/N", "302 to /redirect/N-1, /redirect/0 is 200; `?absolute=1` for absolute URLs"),
    e("/redirect-to", "`?url=U&status=S`: a redirect (301, 302, 303, 307, 308) to U"),
    e("/cookies", "the request's cookies as JSON"),
    e("/cookies/set", "`?name=value&...`: sets each cookie"),
    e("/cookies/delete", "`?name&...`: expires each cookie"),
    e("/gzip", "a JSON document, gzip-encoded"),
    e("/deflate", "a JSON document, deflate-encoded"),
    e("/brotli", "a JSON document, brotli-encoded"),
    e("/basic-auth/USER/PASS", "200 with `Authorization: Basic` of USER:PASS, else 401 with a challenge"),
    e("/bearer", "200 with `Authorization: Bearer T`, else 401 with a challenge"),
    e("/form", "a URL-encoded or multipart body's fields and files as JSON"),
    e("/query", "the decoded query parameters as JSON"),
    e("/headers", "the request headers as JSON"),
    e("/tls", "the TLS of the connection (version, cipher, ALPN, resumed, client certificate) as JSON; 400 on plain"),
    e("/ws/echo", "WebSocket: echoes text and binary messages, answers pings"),
];

/// The endpoints one line each, aligned, for `onrush serve --help`.
pub fn endpoints_help() -> String {
    let width = ENDPOINTS.iter().map(|e| e.path.len()).max().unwrap_or(0);
    ENDPOINTS
        .iter()
        .map(|e| format!("  {:width$}  {}\n", e.path, e.what))
        .collect()
}

/// The endpoints on one line, for a 404's body.
pub fn endpoint_paths() -> String {
    ENDPOINTS
        .iter()
        .map(|e| e.path)
        .collect::<Vec<_>>()
        .join(" ")
}
