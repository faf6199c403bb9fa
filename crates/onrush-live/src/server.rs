//! The live page's HTTP server: a blocking listener on its own thread, a short-lived thread per
//! connection (at most [`MAX_CONNECTIONS`] at once), one request per connection. The page polls
//! once a second, so nothing here is on the load's path: the workers never wait for it.
//!
//! Routes (docs/live.md):
//! - `GET /`: the live page (the report of the results so far, kept current by its script);
//!   once the run has ended, the final `report.html`.
//! - `GET /api/status`: the run's state and figures so far, JSON.
//! - `GET /api/seconds?from=T`: the charts' series of seconds `T..`, JSON.
//! - `POST /api/stop`, `/api/pause`, `/api/resume`, `/api/scenarios/NAME/load` with
//!   `{"rate": "200/s"}` or `{"vus": 20}`.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::Shared;

/// Connections served at once; more get a 503 at once.
pub const MAX_CONNECTIONS: usize = 32;
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_HEAD: usize = 16 * 1024;
const MAX_BODY: usize = 16 * 1024;

pub(crate) fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let in_flight = Arc::new(AtomicUsize::new(0));
    for conn in listener.incoming() {
        if shared.closing() {
            return;
        }
        let Ok(mut stream) = conn else {
            // E.g. out of file descriptors: do not spin.
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        if in_flight.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            in_flight.fetch_sub(1, Ordering::AcqRel);
            let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
            let _ = respond(
                &mut stream,
                503,
                "text/plain",
                b"too many connections\n",
                &[],
            );
            continue;
        }
        let (shared, mine) = (shared.clone(), in_flight.clone());
        let spawned = std::thread::Builder::new()
            .name("onrush-live-conn".into())
            .spawn(move || {
                let _ = handle(stream, &shared);
                mine.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            in_flight.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// A request as the routes need it.
pub(crate) struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    pub body: &'a [u8],
    /// The caller may steer: on a loopback address any caller (but a page of another origin),
    /// elsewhere only one with the run's token.
    pub may_control: bool,
    /// The request came from a page of another origin (a browser says so in `Origin`).
    pub foreign_origin: bool,
}

/// A response: status, content type, body, extra headers.
pub(crate) struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    pub headers: Vec<(&'static str, String)>,
}

impl Response {
    pub fn json(status: u16, body: String) -> Response {
        Response {
            status,
            content_type: "application/json",
            body: body.into_bytes(),
            headers: Vec::new(),
        }
    }

    pub fn html(body: String) -> Response {
        Response {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body: body.into_bytes(),
            headers: Vec::new(),
        }
    }

    /// `{"error": message}` with `status`.
    pub fn error(status: u16, message: &str) -> Response {
        Response::json(status, serde_json::json!({ "error": message }).to_string())
    }
}

fn handle(mut s: TcpStream, shared: &Shared) -> io::Result<()> {
    s.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    s.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    let Some(mut buf) = onrush_export::read_request_head(&mut s, MAX_HEAD, deadline)? else {
        return Ok(());
    };
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let (Ok(httparse::Status::Complete(head_len)), Some(method), Some(target)) =
        (req.parse(&buf), req.method, req.path)
    else {
        return respond(&mut s, 400, "text/plain", b"bad request\n", &[]);
    };
    let header = |name: &str| {
        req.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .and_then(|h| std::str::from_utf8(h.value).ok())
    };
    let length: usize = header("content-length")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    if length > MAX_BODY {
        return respond(&mut s, 413, "text/plain", b"body too large\n", &[]);
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let host = header("host").unwrap_or("");
    // A browser sends `Origin` with a POST; a page of another site must not steer the run
    // (a request it makes needs no preflight when it has no body or a form's).
    let foreign_origin = header("origin").is_some_and(|o| {
        let o = o.strip_prefix("http://").unwrap_or(o);
        o != host
    });
    let token_ok = shared.token.as_deref().is_none_or(|t| {
        header("authorization").and_then(|a| a.strip_prefix("Bearer ")) == Some(t)
            || query_param(query, "token") == Some(t)
    });
    let (method, path, query) = (method.to_string(), path.to_string(), query.to_string());
    // The body follows the head.
    while buf.len() < head_len + length {
        if Instant::now() >= deadline {
            return respond(&mut s, 408, "text/plain", b"request too slow\n", &[]);
        }
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body_end = buf.len().min(head_len + length);
    let request = Request {
        method: &method,
        path: &path,
        query: &query,
        body: &buf[head_len..body_end],
        may_control: token_ok && !foreign_origin,
        foreign_origin,
    };
    let r = crate::routes::route(shared, &request);
    let extra: Vec<(&str, &str)> = r.headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    respond(&mut s, r.status, r.content_type, &r.body, &extra)
}

/// The value of `name` in a query string (no percent-decoding: tokens and numbers only).
pub(crate) fn query_param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn respond(
    s: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
    extra: &[(&str, &str)],
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n",
        reason(status),
        body.len()
    );
    for (k, v) in extra {
        head.push_str(k);
        head.push_str(": ");
        head.push_str(v);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    s.flush()
}
