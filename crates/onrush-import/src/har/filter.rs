//! What of a recording is replayed: entries kept or left out (static assets, third-party hosts,
//! what the browser does on its own), and request headers cleaned of what the browser or the
//! connection manages.

use super::model::Entry;

/// A URL split into the parts the plan needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub scheme: String,
    /// Host as written (IPv6 with its brackets), lower-cased.
    pub host: String,
    pub port: Option<u16>,
    /// Path and query (`/a/b?c=d`), never empty; the fragment is dropped.
    pub path_query: String,
}

impl Url {
    pub fn parse(url: &str) -> Option<Url> {
        let (scheme, rest) = url.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return None;
        }
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..end];
        let authority = authority.rsplit_once('@').map_or(authority, |a| a.1);
        let (host, port) = if authority.starts_with('[') {
            let close = authority.find(']')?;
            let port = authority[close + 1..].strip_prefix(':');
            (&authority[..=close], port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        let port = match port {
            Some("") | None => None,
            Some(p) => Some(p.parse().ok()?),
        };
        let mut path_query = rest[end..].split('#').next().unwrap_or("").to_string();
        if !path_query.starts_with('/') {
            path_query.insert(0, '/');
        }
        if host.is_empty() {
            return None;
        }
        Some(Url {
            scheme,
            host: host.to_ascii_lowercase(),
            port,
            path_query,
        })
    }

    /// `scheme://host[:port]`, the port only when it is not the scheme's default.
    pub fn origin(&self) -> String {
        let default = if self.scheme == "https" { 443 } else { 80 };
        match self.port {
            Some(p) if p != default => format!("{}://{}:{p}", self.scheme, self.host),
            _ => format!("{}://{}", self.scheme, self.host),
        }
    }
}

/// Why an entry is not replayed.
pub fn skip_reason(
    entry: &Entry,
    url: Option<&Url>,
    keep_static: bool,
    hosts: &[String],
) -> Option<String> {
    let Some(url) = url else {
        return Some(format!(
            "not an http(s) URL ({})",
            scheme_of(&entry.request.url)
        ));
    };
    let kind = entry.resource_type.as_deref().unwrap_or("");
    if kind == "preflight"
        || entry.request.method.eq_ignore_ascii_case("OPTIONS")
            && has_header(&entry.request.headers, "access-control-request-method")
    {
        return Some("a CORS preflight: onrush sends no preflights (the browser did)".into());
    }
    if kind == "websocket" || has_header(&entry.request.headers, "upgrade") {
        return Some("a WebSocket or upgrade: write a `ws:` step by hand".into());
    }
    if let Some(cache) = &entry.from_cache {
        return Some(format!(
            "answered from the browser's {cache} cache: the browser sent nothing"
        ));
    }
    if entry.response.status == 0 {
        return Some("no response was recorded (cancelled or blocked by the browser)".into());
    }
    if !hosts.contains(&url.host) {
        return Some(format!(
            "third-party host {} (--keep-third-party or --host {} keeps it)",
            url.host, url.host
        ));
    }
    if !keep_static {
        if let Some(what) = static_kind(entry, url) {
            return Some(format!("static asset ({what}; --keep-static keeps it)"));
        }
    }
    None
}

fn scheme_of(url: &str) -> &str {
    url.split_once(':').map_or(url, |s| s.0)
}

fn has_header(headers: &[(String, String)], name: &str) -> bool {
    headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
}

const STATIC_EXTENSIONS: [&str; 22] = [
    "js", "mjs", "css", "png", "jpg", "jpeg", "gif", "svg", "ico", "webp", "avif", "bmp", "woff",
    "woff2", "ttf", "otf", "eot", "map", "mp4", "webm", "mp3", "ogg",
];

/// What makes a request a static asset: the browser's resource type, the response's MIME type
/// or the path's extension.
fn static_kind(entry: &Entry, url: &Url) -> Option<String> {
    if let Some(kind @ ("script" | "stylesheet" | "image" | "font" | "media" | "manifest")) =
        entry.resource_type.as_deref()
    {
        return Some(format!("resource type {kind}"));
    }
    let mime = entry
        .response
        .mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let static_mime = mime.starts_with("image/")
        || mime.starts_with("font/")
        || mime.starts_with("audio/")
        || mime.starts_with("video/")
        || matches!(
            mime.as_str(),
            "text/css"
                | "text/javascript"
                | "application/javascript"
                | "application/x-javascript"
                | "application/font-woff"
                | "application/x-font-woff"
                | "application/vnd.ms-fontobject"
        );
    if static_mime {
        return Some(format!("MIME type {mime}"));
    }
    let path = url.path_query.split('?').next().unwrap_or("");
    let last = path.rsplit('/').next().unwrap_or("");
    let ext = last.rsplit_once('.').map(|e| e.1.to_ascii_lowercase())?;
    STATIC_EXTENSIONS
        .contains(&ext.as_str())
        .then(|| format!("extension .{ext}"))
}

/// What becomes of a recorded request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderFate {
    Keep,
    /// Left out; the reason is for the report.
    Drop(&'static str),
}

/// Request headers the browser or the connection manages are left out: onrush sets its own
/// (Host, Content-Length), the cookie jar sends the cookies, HTTP/2 pseudo-headers are framing.
pub fn header_fate(name: &str) -> HeaderFate {
    let lower = name.to_ascii_lowercase();
    if lower.starts_with(':') {
        return HeaderFate::Drop("an HTTP/2 pseudo-header (framing, set by onrush)");
    }
    match lower.as_str() {
        "connection" | "keep-alive" | "proxy-connection" | "te" | "trailer"
        | "transfer-encoding" | "upgrade" => HeaderFate::Drop("hop-by-hop (per connection)"),
        "host" => HeaderFate::Drop("set by onrush from the URL"),
        "content-length" => HeaderFate::Drop("set by onrush from the body"),
        "cookie" => HeaderFate::Drop("the cookie jar sends the cookies the server set"),
        "accept-encoding" => HeaderFate::Drop(
            "becomes `http.decompress: true` (onrush sends its own Accept-Encoding and decodes)",
        ),
        "if-none-match" | "if-modified-since" => {
            HeaderFate::Drop("a cache validator of the browser's cache (would replay as a 304)")
        }
        _ => HeaderFate::Keep,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_origin_and_path() {
        let u = Url::parse("HTTPS://Shop.Example:443/a/b?c=d#frag").unwrap();
        assert_eq!(u.origin(), "https://shop.example");
        assert_eq!(u.path_query, "/a/b?c=d");
        let u = Url::parse("http://[::1]:8080").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path_query.as_str()),
            ("[::1]", Some(8080), "/")
        );
        assert_eq!(Url::parse("data:image/png;base64,xx"), None);
        assert_eq!(Url::parse("http://h:notaport/"), None);
    }

    #[test]
    fn browser_managed_headers_are_dropped() {
        for name in [
            ":authority",
            "Connection",
            "Host",
            "Content-Length",
            "Cookie",
            "accept-encoding",
        ] {
            assert!(matches!(header_fate(name), HeaderFate::Drop(_)), "{name}");
        }
        for name in ["User-Agent", "Content-Type", "X-CSRF-Token", "Referer"] {
            assert_eq!(header_fate(name), HeaderFate::Keep, "{name}");
        }
    }
}
