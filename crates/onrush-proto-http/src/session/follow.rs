//! A request's hops: the request, its redirects followed, and what each response leaves
//! behind. A child of the session module, so it sees the session's fields.

use crate::request::Body;
use onrush_http1::{self as http1, AnyConnection, Request, RequestBody};
use onrush_plan::{CloseMode, HttpVersion, RenderContext};
use onrush_protocol::{FailureClass, RequestRecord};

use super::HttpSession;
use crate::classify::classify;
use crate::connect::HttpConn;
use crate::redirect::{is_redirect, remove_header, same_origin_target};
use crate::step::HttpStep;

impl HttpSession {
    /// The request with its redirects: the final response, bytes of every hop counted.
    ///
    /// Each hop is one request/response on the step's connection (connecting when needed),
    /// written here rather than in a function of its own: that was one more `async fn` to
    /// enter, resume and leave on every request (~110 instructions, callgrind).
    ///
    /// `first`: the first hop's response when `execute`'s short path got it already (a
    /// redirect to follow), not yet passed to [`HttpSession::took`].
    pub(super) async fn follow(
        &mut self,
        step: &HttpStep,
        mut ahead: Ahead<'_>,
        record: &mut RequestRecord,
        opened: &mut bool,
        mut first: Option<http1::Response>,
    ) -> Result<http1::Response, FailureClass> {
        let slot = step.target_slot;
        // A `before:` hook may have changed the method (owned here: `self` is borrowed below).
        let changed = self.parts.method.take();
        let mut method = changed.as_deref().unwrap_or(step.plan.method.as_str());
        let mut with_body = true;
        let mut hops = 0;
        loop {
            let response = if let Some(response) = first.take() {
                response
            } else {
                self.add_cookies(step);
                // A reused keep-alive connection may have been closed by the server while idle;
                // that race is not the target's fault, so it is retried once on a fresh one.
                let mut attempt = 0;
                loop {
                    if self.connections[slot].is_none() {
                        let conn = self.open_slot(step, record, opened).await?;
                        self.connections[slot] = Some(conn);
                    }
                    let conn = self.connections[slot].as_mut().expect("connected above");
                    // The request to encode, built only on the paths that encode one (a prepared
                    // request is sent as it is).
                    macro_rules! request {
                        () => {
                            Request {
                                method,
                                target: &self.parts.path,
                                host: &step.target.host_header,
                                headers: &self.parts.headers,
                                body: if !with_body {
                                    RequestBody::Empty
                                } else {
                                    match (&step.plan.body, ahead) {
                                        (Body::None, _) => RequestBody::Empty,
                                        (Body::Inline(_) | Body::Form(_), _) => {
                                            RequestBody::Bytes(&self.parts.body)
                                        }
                                        (Body::File(path), _) => RequestBody::File(path),
                                        (Body::Multipart(_), Ahead::Multipart(m)) => {
                                            RequestBody::Multipart(m)
                                        }
                                        (Body::Multipart(_), _) => RequestBody::Empty,
                                    }
                                },
                                // `close: server` (the default for `per_request`): the server
                                // closes first and keeps the TIME_WAIT, so this host's connect()
                                // never searches its port range past its own TIME_WAIT sockets
                                // (measured: ~65 µs of system time each). HTTP/2 has no such
                                // header; its encoder ignores this.
                                close: self.close == CloseMode::Server,
                            }
                        };
                    }
                    self.sink.get_mut().reset(step);
                    // A prepared request is only ever HTTP/1.1's (`HttpStep::prepare`).
                    let sent = match (conn, ahead, step.decompress) {
                        // A plain connection's own future, not `AnyConnection`'s around it: the
                        // common case, a layer less (~40 instructions a request).
                        (HttpConn::H1(AnyConnection::Plain(c)), Ahead::Request(p), false) => {
                            c.send_prepared(p, self.sink.get_mut()).await
                        }
                        (HttpConn::H1(AnyConnection::Plain(c)), Ahead::Request(p), true) => {
                            c.send_prepared(p, &mut self.sink).await
                        }
                        (HttpConn::H1(c), Ahead::Request(p), true) => {
                            c.send_prepared(p, &mut self.sink).await
                        }
                        (HttpConn::H1(c), Ahead::Request(p), false) => {
                            c.send_prepared(p, self.sink.get_mut()).await
                        }
                        (HttpConn::H1(c), _, true) => c.send(&request!(), &mut self.sink).await,
                        (HttpConn::H1(c), _, false) => {
                            c.send(&request!(), self.sink.get_mut()).await
                        }
                        (HttpConn::H2 { conn, .. }, _, true) => {
                            conn.send(&request!(), &mut self.sink).await
                        }
                        (HttpConn::H2 { conn, .. }, _, false) => {
                            conn.send(&request!(), self.sink.get_mut()).await
                        }
                        // HTTP/3's send (quinn's streams, h3's frames) is a large future:
                        // boxed, so that it does not size every VU's request future (an
                        // allocation per HTTP/3 request, beside QUIC's own per-packet work).
                        (HttpConn::H3 { conn, .. }, _, true) => {
                            Box::pin(conn.send(&request!(), &mut self.sink)).await
                        }
                        (HttpConn::H3 { conn, .. }, _, false) => {
                            Box::pin(conn.send(&request!(), self.sink.get_mut())).await
                        }
                    };
                    match sent {
                        Ok(response) => {
                            if step.decompress && self.sink.error().is_some() {
                                self.connections[slot] = None;
                                return Err(FailureClass::BadResponse);
                            }
                            break response;
                        }
                        Err(e) => {
                            // A failed stream on a live connection leaves it to the others.
                            let dead_lease = match &mut self.connections[slot] {
                                Some(HttpConn::H2 {
                                    conn,
                                    lease: Some(lease),
                                }) => (e.is_stale_reuse() || !conn.is_open()).then_some(lease),
                                Some(HttpConn::H3 {
                                    conn,
                                    lease: Some(lease),
                                }) => (e.is_stale_reuse() || !conn.is_open()).then_some(lease),
                                _ => None,
                            };
                            if let Some(lease) = dead_lease {
                                lease.entry.mark_dead();
                            }
                            self.connections[slot] = None;
                            if attempt == 0 && e.is_stale_reuse() {
                                attempt += 1;
                                continue;
                            }
                            return Err(classify(&e));
                        }
                    }
                }
            };
            let last = !is_redirect(response.status) || hops >= step.redirects;
            self.took(step, &response, record, last);
            if last {
                return Ok(response);
            }
            let Some(location) = self.sink.get_ref().header("location") else {
                return Ok(response);
            };
            let Some(next) = same_origin_target(location, &step.target, &self.parts.path) else {
                // Another origin: onrush resolves targets when the plan loads, so the chain
                // stops here and the 3xx is the response.
                return Ok(response);
            };
            hops += 1;
            if let Ahead::Request(_) = ahead {
                ahead = Ahead::Nothing;
                // The next hop is sent the ordinary way: from the step's headers and body, which
                // were not rendered for the prepared request. Constant, they can't fail.
                let _ = self.parts.render(step, &RenderContext::default());
            }
            self.parts.path = next;
            if response.status == 303 || (matches!(response.status, 301 | 302) && method == "POST")
            {
                method = "GET";
                with_body = false;
                // The body's headers no longer apply.
                remove_header(&mut self.parts.headers, b"content-type");
            }
        }
    }
    /// What every hop's response leaves behind: its first byte's time (the first hop's, for
    /// the TTFB `execute` works out), its bytes, the
    /// connection given up when the server will not keep it (except the `last` one when the
    /// server is to close first: `execute` waits for that close once the latency is taken),
    /// and its cookies.
    pub(super) fn took(
        &mut self,
        step: &HttpStep,
        response: &http1::Response,
        record: &mut RequestRecord,
        last: bool,
    ) {
        if self.first_byte_at.is_none() {
            self.first_byte_at = Some(response.first_byte_at);
        }
        let slot = step.target_slot;
        let over_h3 = matches!(self.connections[slot], Some(HttpConn::H3 { .. }));
        if over_h3 {
            crate::alt_svc::count_h3_request();
        } else if self.version == HttpVersion::Auto && step.target.tls {
            self.note_alt_svc(slot);
        }
        record.bytes_in += response.bytes_in;
        record.bytes_out += response.bytes_out;
        let keep_for_close = last && self.close == CloseMode::Server;
        if !response.keep_alive && !keep_for_close {
            self.connections[step.target_slot] = None;
        }
        self.store_cookies(step);
    }

    /// `version: auto` over TLS, a response not over HTTP/3: what its `Alt-Svc` says. When it
    /// newly advertises HTTP/3, the connection it came on is given up, so that the slot's next
    /// request opens QUIC (a kept-alive connection would otherwise keep a VU on TCP for
    /// good).
    fn note_alt_svc(&mut self, slot: usize) {
        let Some(value) = self.sink.get_ref().header("alt-svc") else {
            return;
        };
        let now = std::time::Instant::now();
        let was = self.alt[slot].h3_port(now);
        self.alt[slot] = self.alt[slot].update(value, now);
        if was.is_none() && self.alt[slot].h3_port(now).is_some() {
            self.connections[slot] = None;
        }
    }
}

/// What of a request was made before its exchange: its multipart body laid out, or the whole
/// request encoded (`HttpStep::prepare`; never both: a multipart step is not prepared).
#[derive(Clone, Copy)]
pub(super) enum Ahead<'a> {
    Nothing,
    Multipart(&'a http1::Multipart),
    Request(&'a http1::PreparedRequest),
}
