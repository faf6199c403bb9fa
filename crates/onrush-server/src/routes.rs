//! Request routing and the endpoint handlers.
//!
//! Every method is accepted on every endpoint (a load test may POST to `/`); request bodies the
//! endpoint does not need are read and discarded so the connection stays usable for keep-alive.
//! Bad input gets a 400 with a sentence saying what was expected, never a panic.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Incoming};
use hyper::header::{HeaderValue, CONTENT_LENGTH};
use hyper::{Method, Request, Response, StatusCode, Version};
use sha2::{Digest, Sha256};

use crate::body::{Encoding, ResponseBody};
use crate::respond::{
    bad_request, drain, header_map, hex, json, ok, query_param, text, Conn, ReqBody, Resp, HTML,
    JSON, TEXT, XML,
};
use crate::stats::Shared;
use crate::{forms, grpc, login, samples, scenario};

const OCTETS: HeaderValue = HeaderValue::from_static("application/octet-stream");

const HELLO: &[u8] = b"Hello from onrush\n";

/// Defaults of `/stall`: a 300 ms pause every second.
const STALL_EVERY_MS: u64 = 1000;
const STALL_FOR_MS: u64 = 300;

/// One HTTP/2 stream in flight on its connection (for `h2_max_concurrent_streams`). It travels
/// with the response body ([`H2Body`]), which hyper drops when the body is finished or the
/// stream is reset, and dropping it ends the stream's count; if the handler is dropped before
/// it has a response (a reset during `/delay`, the connection closing), it is dropped with it.
pub(crate) struct H2Stream(Arc<Conn>);

impl Drop for H2Stream {
    fn drop(&mut self) {
        self.0.counter.h2_stream_done();
    }
}

/// An HTTP/2 response body: the same [`ResponseBody`], carrying its stream's [`H2Stream`]
/// (`None` for `/stats`). A separate type so that HTTP/1.1 responses stay as small as before.
pub(crate) struct H2Body {
    body: ResponseBody,
    _stream: Option<H2Stream>,
}

impl Body for H2Body {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        std::pin::Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// Routes one HTTP/1.1 request; `/stats` is answered without being counted (see
/// [`crate::Stats`]). Requests on an HTTP/1.1 connection come one at a time, so counting on the
/// first poll is counting on arrival.
pub(crate) async fn handle(req: Request<Incoming>, conn: &Conn) -> Resp {
    if req.uri().path() == "/stats" {
        drain(req.into_body()).await;
        return stats(&conn.shared);
    }
    conn.counter.count_request(&conn.shared, false);
    let is_head = req.method() == Method::HEAD;
    let mut resp = route(req, conn).await;
    advertise(&mut resp, conn);
    if is_head {
        head_only(resp)
    } else {
        resp
    }
}

/// Adds `Alt-Svc: h3=":PORT"` when the server also answers HTTP/3 (a TLS connection's
/// `conn.alt_svc`), as a CDN does, so a client that upgrades (browsers, `version: auto`)
/// finds it on any response, `/stats` excepted.
fn advertise(resp: &mut Resp, conn: &Conn) {
    if let Some(alt_svc) = &conn.alt_svc {
        resp.headers_mut()
            .insert(hyper::header::ALT_SVC, alt_svc.clone());
    }
}

/// Routes one HTTP/3 request (the same endpoints as [`handle`], gRPC excepted: gRPC is
/// served on HTTP/2 only), counting it unless it is `/stats`. HTTP/3 responses carry no
/// `Alt-Svc`: the client is already there.
pub(crate) async fn handle_h3<B: ReqBody + 'static>(req: Request<B>, conn: &Conn) -> Resp {
    if req.uri().path() == "/stats" {
        drain(req.into_body()).await;
        return stats(&conn.shared);
    }
    conn.counter.count_h3_request(&conn.shared);
    let is_head = req.method() == Method::HEAD;
    let resp = route(req, conn).await;
    if is_head {
        head_only(resp)
    } else {
        resp
    }
}

/// Counts an HTTP/2 stream the moment hyper hands it over, before the stream's task first
/// runs, so every stream a client has multiplexed is in flight at once even when each handler
/// would finish in one poll (`/` under `h2load -m 10` shows 10, not 1). `None` for `/stats`,
/// which is not counted. Pass the result to [`handle_h2`].
pub(crate) fn admit_h2(req: &Request<Incoming>, conn: &Arc<Conn>) -> Option<H2Stream> {
    if req.uri().path() == "/stats" {
        return None;
    }
    conn.counter.count_request(&conn.shared, true);
    Some(H2Stream(conn.clone()))
}

/// Routes one HTTP/2 stream (the same endpoints as [`handle`]), counted by [`admit_h2`].
pub(crate) async fn handle_h2(
    req: Request<Incoming>,
    conn: &Conn,
    stream: Option<H2Stream>,
) -> Response<H2Body> {
    debug_assert_eq!(req.version(), Version::HTTP_2);
    let resp = if stream.is_none() {
        drain(req.into_body()).await;
        stats(&conn.shared)
    } else if grpc::is_grpc(&req) {
        grpc::call(req, conn.shared.clone(), conn.counter.shard())
    } else {
        let is_head = req.method() == Method::HEAD;
        let mut resp = route(req, conn).await;
        advertise(&mut resp, conn);
        if is_head {
            head_only(resp)
        } else {
            resp
        }
    };
    resp.map(|body| H2Body {
        body,
        _stream: stream,
    })
}

async fn route<B: ReqBody + 'static>(req: Request<B>, conn: &Conn) -> Resp {
    let shared = &conn.shared;
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    let query = parts.uri.query();
    // Not `path[1..]`: the path of `CONNECT host:port` is empty and of `OPTIONS *` is "*".
    let Some(rest) = path.strip_prefix('/') else {
        drain(body).await;
        return not_found(path);
    };
    let (name, arg) = match rest.split_once('/') {
        Some((name, arg)) => (name, Some(arg)),
        None => (rest, None),
    };
    // Endpoints that read the body take it; for all others it is drained first.
    match (name, arg) {
        ("echo", None) => return echo(&parts, body).await,
        ("upload", None) => return upload(body).await,
        ("form", None) => return forms::form(&parts, body).await,
        ("login", None) if parts.method == Method::POST => {
            return login::login_post(&parts, body, conn).await
        }
        _ => drain(body).await,
    }
    match (name, arg) {
        ("", None) => ok(TEXT, ResponseBody::from_static(HELLO)),
        ("bytes", Some(n)) => {
            let chunked = query_param(query, "chunked").is_some_and(|v| v == "1" || v == "true");
            match query_param(query, "encoding") {
                None => bytes(n, chunked),
                Some(e) => encoded_bytes(n, e),
            }
        }
        ("delay", Some(ms)) => delay(ms).await,
        ("status", Some(code)) => status(code),
        ("stall", None) => stall(query, shared).await,
        ("json", None) => ok(JSON, ResponseBody::from_static(samples::JSON.as_bytes())),
        ("html", None) => ok(HTML, ResponseBody::from_static(samples::HTML.as_bytes())),
        ("xml", None) => ok(XML, ResponseBody::from_static(samples::XML.as_bytes())),
        ("login", None) => login::login_page(query, conn),
        ("verify", None) => login::verify_get(&parts, conn),
        ("account", None) => login::account(&parts, conn),
        ("redirect", Some(n)) => scenario::redirect(n, &parts),
        ("redirect-to", None) => scenario::redirect_to(&parts),
        ("cookies", None) => scenario::cookies(&parts),
        ("cookies", Some("set")) => scenario::cookies_set(&parts),
        ("cookies", Some("delete")) => scenario::cookies_delete(&parts),
        ("gzip", None) => scenario::compressed_json(Encoding::Gzip),
        ("deflate", None) => scenario::compressed_json(Encoding::Deflate),
        ("brotli", None) => scenario::compressed_json(Encoding::Brotli),
        ("basic-auth", Some(creds)) => scenario::basic_auth(creds, &parts),
        ("bearer", None) => scenario::bearer_auth(&parts),
        ("query", None) => forms::query(&parts),
        ("headers", None) => scenario::headers(&parts),
        ("tls", None) => match &conn.tls {
            Some(info) => json(&info.to_json()),
            None => bad_request(
                "/tls describes the TLS of the connection it is asked on, and this one is plain \
                 HTTP: ask over https\n"
                    .to_owned(),
            ),
        },
        ("bytes" | "delay" | "status" | "redirect" | "basic-auth", None) => bad_request(format!(
            "{path} needs an argument: /bytes/N, /delay/MS, /status/CODE, /redirect/N or \
             /basic-auth/USER/PASS\n"
        )),
        _ => not_found(path),
    }
}

fn not_found(path: &str) -> Resp {
    text(
        StatusCode::NOT_FOUND,
        format!(
            "not found: {path}\nendpoints: {}\n(`onrush serve --help` says what each answers)\n",
            crate::endpoint_paths()
        ),
    )
}

/// `/bytes/N`: N pattern bytes streamed from a static buffer, with Content-Length or chunked.
fn bytes(n: &str, chunked: bool) -> Resp {
    let Ok(len) = n.parse::<u64>() else {
        return bad_request(format!(
            "bad byte count {n:?} in /bytes/N: expected a non-negative integer\n"
        ));
    };
    let mut resp = ok(OCTETS, ResponseBody::pattern(len, chunked));
    if !chunked {
        resp.headers_mut().insert(CONTENT_LENGTH, len.into());
    }
    resp
}

/// `/bytes/N?encoding=E`: N pattern bytes compressed while streaming, always chunked.
fn encoded_bytes(n: &str, encoding: &str) -> Resp {
    let Ok(len) = n.parse::<u64>() else {
        return bad_request(format!(
            "bad byte count {n:?} in /bytes/N: expected a non-negative integer\n"
        ));
    };
    let Some(encoding) = Encoding::parse(encoding) else {
        return bad_request(format!(
            "bad encoding {encoding:?} in /bytes/N?encoding=: expected gzip, deflate or br\n"
        ));
    };
    let mut resp = ok(OCTETS, ResponseBody::encoded_pattern(len, encoding));
    resp.headers_mut()
        .insert(hyper::header::CONTENT_ENCODING, encoding.header());
    resp
}

/// `/delay/MS`: answers after MS milliseconds, without blocking the thread.
async fn delay(ms: &str) -> Resp {
    let Ok(ms) = ms.parse::<u64>() else {
        return bad_request(format!(
            "bad delay {ms:?} in /delay/MS: expected milliseconds as a non-negative integer\n"
        ));
    };
    tokio::time::sleep(Duration::from_millis(ms)).await;
    text(StatusCode::OK, format!("delayed {ms} ms\n"))
}

/// `/status/CODE`: a response with that final status code (200..=599).
fn status(code: &str) -> Resp {
    let parsed = code.parse::<u16>().ok();
    let Some(status) = parsed
        .filter(|c| (200..=599).contains(c))
        .and_then(|c| StatusCode::from_u16(c).ok())
    else {
        let why = match parsed {
            Some(100..=199) => "1xx codes are informational and cannot be a final response",
            _ => "expected an integer from 200 to 599",
        };
        return bad_request(format!("bad status {code:?} in /status/CODE: {why}\n"));
    };
    if matches!(status.as_u16(), 204 | 205 | 304) {
        // These responses must not carry content (RFC 9110 15.3.5, 15.3.6, 15.4.5).
        let mut resp = Response::new(ResponseBody::empty());
        *resp.status_mut() = status;
        return resp;
    }
    let reason = status.canonical_reason().unwrap_or("");
    text(status, format!("{} {reason}\n", status.as_u16()))
}

/// `/stall?every=MS&for=MS`: emulates periodic pauses (a GC, a checkpoint). Window k covers
/// `[k*every, k*every+for)` ms after the server's start; a request arriving inside a window is
/// answered when the window ends, any other at once. Aligning to the server start (not to the
/// request) makes every client see the same pauses, as with a real stalled server.
async fn stall(query: Option<&str>, shared: &Shared) -> Resp {
    let params = param_ms(query, "every", STALL_EVERY_MS)
        .and_then(|every| Ok((every, param_ms(query, "for", STALL_FOR_MS)?)));
    let (every, pause) = match params {
        Ok(v) => v,
        Err(msg) => return bad_request(msg),
    };
    if every == 0 || pause >= every {
        return bad_request(format!(
            "bad /stall parameters every={every} for={pause}: need 0 <= for < every\n"
        ));
    }
    let (every_ns, pause_ns) = (u128::from(every) * 1_000_000, u128::from(pause) * 1_000_000);
    let since_start = shared.started.elapsed().as_nanos();
    let window_start = since_start / every_ns * every_ns;
    let waited = if since_start - window_start < pause_ns {
        let end = window_start + pause_ns;
        let deadline = shared.started + Duration::from_nanos(end as u64);
        tokio::time::sleep_until(deadline.into()).await;
        Duration::from_nanos((end - since_start) as u64)
    } else {
        Duration::ZERO
    };
    text(
        StatusCode::OK,
        format!("stalled {} ms\n", waited.as_millis()),
    )
}

/// A `/stall` parameter in milliseconds; the error is the 400 message.
fn param_ms(query: Option<&str>, name: &str, default: u64) -> Result<u64, String> {
    match query_param(query, name) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| {
            format!(
                "bad /stall parameter {name}={v:?}: expected milliseconds as a non-negative integer\n"
            )
        }),
    }
}

/// `/echo`: describes the request as JSON; the body is hashed while streaming, never buffered.
async fn echo(parts: &hyper::http::request::Parts, body: impl ReqBody) -> Resp {
    let headers = header_map(parts);
    let (length, sha256) = match consume(body).await {
        Ok(digest) => digest,
        Err(msg) => return bad_request(msg),
    };
    let doc = serde_json::json!({
        "method": parts.method.as_str(),
        "path": parts.uri.path(),
        "query": parts.uri.query().unwrap_or(""),
        "headers": headers,
        "body_length": length,
        "body_sha256": sha256,
    });
    json(&doc)
}

/// `/upload`: consumes the body (Content-Length or chunked) and reports its length and hash.
async fn upload(body: impl ReqBody) -> Resp {
    match consume(body).await {
        Ok((length, sha256)) => json(&serde_json::json!({ "length": length, "sha256": sha256 })),
        Err(msg) => bad_request(msg),
    }
}

fn stats(shared: &Shared) -> Resp {
    json(&stats_json(shared))
}

/// The document `/stats` answers (also [`crate::ServerHandle::stats_json`]).
pub(crate) fn stats_json(shared: &Shared) -> serde_json::Value {
    let s = shared.totals();
    let tls = shared.tls();
    let login = shared.login();
    let h2 = shared.h2();
    let h3 = shared.h3();
    let p = shared.protocols();
    serde_json::json!({
        "tcp_connections": p.tcp_connections,
        "tcp_messages": p.tcp_messages,
        "ws_connections": p.ws_connections,
        "ws_messages": p.ws_messages,
        "ws_pings": p.ws_pings,
        "grpc_calls": p.grpc_calls,
        "grpc_messages_in": p.grpc_messages_in,
        "grpc_messages_out": p.grpc_messages_out,
        "thrift_connections": p.thrift_connections,
        "thrift_calls": p.thrift_calls,
        "requests": s.requests,
        "connections": s.connections,
        "accepted": shared.accepted(),
        "tls_full": tls.full,
        "tls_resumed": tls.resumed,
        "tls_failed": tls.failed,
        "tokens_issued": login.tokens_issued,
        "tokens_ok": login.tokens_ok,
        "tokens_bad": login.tokens_bad,
        "sessions_ok": login.sessions_ok,
        "sessions_bad": login.sessions_bad,
        "h2_connections": h2.connections,
        "h2_streams": h2.streams,
        "h2_max_concurrent_streams": h2.max_concurrent_streams,
        "h3_connections": h3.connections,
        "h3_streams": h3.streams,
        "quic_handshakes": h3.handshakes,
        "quic_failed": h3.handshakes_failed,
        "quic_resumed": h3.resumed,
        "tls_clients": shared.tls_clients(),
        "uptime_ms": shared.started.elapsed().as_millis() as u64,
    })
}

/// Reads the whole body frame by frame, hashing as it goes: memory stays constant whatever the
/// upload size. The error is the 400 message (the client will rarely read it: its body broke).
async fn consume(mut body: impl ReqBody) -> Result<(u64, String), String> {
    let mut hasher = Sha256::new();
    let mut length = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("cannot read request body: {e}\n"))?;
        if let Ok(data) = frame.into_data() {
            length += data.len() as u64;
            hasher.update(&data);
        }
    }
    Ok((length, hex(&hasher.finalize())))
}

/// A HEAD response: the GET response's headers (with its length when known), no content.
fn head_only(resp: Resp) -> Resp {
    let (mut parts, body) = resp.into_parts();
    if let Some(len) = body.size_hint().exact() {
        if !parts.headers.contains_key(CONTENT_LENGTH) && parts.status != StatusCode::NO_CONTENT {
            parts.headers.insert(CONTENT_LENGTH, len.into());
        }
    }
    Response::from_parts(parts, ResponseBody::empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_validation() {
        assert_eq!(status("418").status(), StatusCode::IM_A_TEAPOT);
        assert_eq!(status("204").body().size_hint().exact(), Some(0));
        for bad in ["100", "199", "600", "abc", "", "-1", "99999"] {
            assert_eq!(status(bad).status(), StatusCode::BAD_REQUEST, "{bad}");
        }
    }
}
