//! The `http:` settings: timeout, version, connection reuse and closing, source addresses,
//! cookies, decompression, redirects, throttling and body limit (TLS is in tls.rs).

use serde_json::{json, Map, Value};

use super::values::{flag, templated_range, TEMPLATE};

/// `http` and `source_address`.
pub(super) fn definitions() -> Map<String, Value> {
    let mut defs = Map::new();
    defs.insert("http".into(), json!({
        "type": "object",
        "description": "HTTP settings (plan level; a scenario's `http` merges over them)",
        "additionalProperties": false,
        "properties": {
            "timeout": { "$ref": "#/definitions/duration", "description": "Request timeout (default 30s)" },
            "connections": {
                "enum": ["shared", "per_vu", "per_iteration", "per_request"],
                "description": "Connection reuse: shared (one pool per worker thread that all VUs draw from; with HTTP/2 up to max_streams requests share a connection), per_vu (default: each VU keeps its connection), per_iteration (new connection each iteration), per_request (new connection each request)"
            },
            "version": {
                "enum": ["h1", "h2", "auto", "h3"],
                "description": "HTTP version: h1 (default: HTTP/1.1), h2 (HTTP/2: over TLS by ALPN, h2c with prior knowledge for http://), auto (over TLS, HTTP/2 if the server chooses it by ALPN, else HTTP/1.1), h3 (HTTP/3 over QUIC; https:// targets only)"
            },
            "max_streams": {
                "type": "integer", "minimum": 1,
                "description": "HTTP/2 with connections: shared — requests in flight at once on one connection before the pool opens another (default 100)"
            },
            "source_addresses": {
                "description": "Local addresses new connections bind to, to get more ephemeral ports towards one target: addresses, ranges `127.0.0.2-127.0.0.254` and CIDR blocks `127.0.1.0/24` (at most 65,536 in all, one family)",
                "anyOf": [
                    { "$ref": "#/definitions/source_address" },
                    { "type": "array", "items": { "$ref": "#/definitions/source_address" } }
                ],
                "examples": [["127.0.0.2", "127.0.0.3"], "127.0.0.2-127.0.0.254", "127.0.1.0/24"]
            },
            "close": {
                "enum": ["auto", "normal", "server", "reset"],
                "description": "How connections are closed: auto (default: server for connections: per_request, normal otherwise), normal (onrush closes with FIN and keeps the TIME_WAIT), server (each request says Connection: close, the server closes first and keeps the TIME_WAIT; per_request only), reset (SO_LINGER 0: RST, no TIME_WAIT on either side; the server sees resets and data in flight can be lost; for connection-churn tests)"
            },
            "tls": { "$ref": "#/definitions/tls" },
            "cookies": {
                "enum": ["on", "per_iteration", "off"],
                "description": "Cookie jar: on (default: each VU has its own jar (RFC 6265), kept across its iterations, like one browser per VU), per_iteration (emptied when an iteration starts: a new browser each time), off (only the `Cookie` headers the plan writes)"
            },
            "decompress": flag("true: send `Accept-Encoding: gzip, deflate, br` and decode gzip, deflate and br responses as they stream, so extractors and checks see the decoded body (`bytes in` still counts what crossed the wire). Default false"),
            "redirects": templated_range(0, 100, "How many redirects (301/302/303/307/308) to follow per request on the same origin (default 0: none). The whole chain is one sample of the step; a redirect to another origin ends the chain"),
            "throttle": {
                "description": "Bandwidth cap per connection, both directions, to emulate slow clients. Units: `B`, `KB`, `MB` (1000-based), `KiB`, `MiB`",
                "anyOf": [
                    { "type": "integer", "minimum": 1 },
                    { "type": "string", "pattern": format!(r"^\s*[0-9_]*\.?[0-9]+\s*(B|b|KB|kB|kb|K|k|MB|mb|M|GB|gb|G|KiB|MiB|GiB)?\s*(/s)?\s*$|{TEMPLATE}") }
                ],
                "examples": ["64KB/s", "56KB/s", "1MiB/s"]
            },
            "body_limit": {
                "$ref": "#/definitions/byte_size",
                "description": "How much of a body extractors and body checks (`body_contains`, `body_matches`, `jsonpath`) see (default 1 MiB); other bodies are streamed and thrown away, `body_size` and body hashes are computed while streaming",
                "examples": ["1MiB", "4MiB"]
            }
        }
    }));
    defs.insert(
        "source_address".into(),
        json!({
            "type": "string",
            "description": "An IPv4 or IPv6 address, a range `A-B` or a CIDR block `A/N`",
            "examples": ["127.0.0.2", "127.0.0.2-127.0.0.254", "127.0.1.0/24", "fd00::10"]
        }),
    );
    defs
}
