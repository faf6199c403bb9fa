//! Opening a connection for a request step: plain or TLS, HTTP/1.1 or HTTP/2, as the scenario's
//! `http.version` and the target's scheme say, and the server's ALPN choice allows.

use std::time::Duration;

use onrush_http1::{self as http1, AnyConnection, ConnectOptions, HandshakeKind, TlsSession};
use onrush_http2::{H2Connection, H2Settings};
use onrush_http3::{H3Connection, H3Settings};
use onrush_plan::HttpVersion;
use onrush_protocol::FailureClass;

use crate::classify::classify;
use crate::pool::Lease;
use crate::target::HttpTarget;

/// A connection of either HTTP version.
pub enum HttpConn {
    H1(AnyConnection),
    /// A handle on an HTTP/2 connection; `lease` holds a stream slot of a shared pool's
    /// connection, given back when the handle is dropped.
    H2 {
        conn: H2Connection,
        lease: Option<Lease>,
    },
    /// A handle on an HTTP/3 connection; `lease` as for HTTP/2.
    H3 {
        conn: H3Connection,
        lease: Option<Lease>,
    },
}

/// A connection just opened, with its TLS handshake's kind and duration.
pub struct Opened {
    pub conn: HttpConn,
    pub handshake: Option<(HandshakeKind, Duration)>,
}

/// ALPN protocol ids offered for each version (empty: HTTP/1.1 only).
pub fn alpn_for(version: HttpVersion) -> Vec<Vec<u8>> {
    match version {
        HttpVersion::H1 => Vec::new(),
        HttpVersion::H2 => vec![b"h2".to_vec()],
        HttpVersion::Auto => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        HttpVersion::H3 => vec![b"h3".to_vec()],
    }
}

/// Opens a connection to `target` speaking `version`.
///
/// Over TLS with `h2` or `auto`, the server's ALPN choice decides: `h2` → HTTP/2; anything
/// else → HTTP/1.1 for `auto`, and a `tls_protocol` failure for `h2` (the server does not
/// speak HTTP/2 on this port). Plain `http://` with `h2` is HTTP/2 with prior knowledge (h2c).
///
/// `buffers`: a previous plain HTTP/1.1 connection's, for a new plain one to reuse.
pub async fn open(
    target: &HttpTarget,
    options: &ConnectOptions,
    tls: Option<&TlsSession>,
    version: HttpVersion,
    h2: &H2Settings,
    buffers: Option<http1::Buffers>,
) -> Result<Opened, FailureClass> {
    let host = &target.host_header;
    match (target.tls, tls, version) {
        (true, Some(session), HttpVersion::H3) => {
            // Boxed, as the TLS handshake below: QUIC's set-up future is kilobytes.
            let (conn, kind, took) = Box::pin(onrush_http3::connect(
                target.addr,
                options,
                session,
                &target.server_name,
                host,
                &H3Settings::default(),
            ))
            .await
            .map_err(|e| classify(&e))?;
            Ok(Opened {
                conn: HttpConn::H3 { conn, lease: None },
                handshake: Some((kind, took)),
            })
        }
        // Refused when the plan loads (onrush-plan, HttpPlan::compile): QUIC always runs TLS.
        (_, _, HttpVersion::H3) => Err(FailureClass::TlsProtocol),
        (false, _, HttpVersion::H2) => {
            // Boxed, as the TLS handshake below: HTTP/2 and TLS set-up futures are kilobytes,
            // and inline they would size every plain HTTP/1.1 connect too (issue 17).
            let conn = Box::pin(onrush_http2::connect_h2c(target.addr, options, host, h2))
                .await
                .map_err(|e| classify(&e))?;
            Ok(Opened {
                conn: HttpConn::H2 { conn, lease: None },
                handshake: None,
            })
        }
        (true, Some(session), HttpVersion::H2 | HttpVersion::Auto)
            if options.throttle.is_none() =>
        {
            let (stream, kind, took) = Box::pin(http1::connect_tls_stream(
                target.addr,
                options,
                session,
                &target.server_name,
            ))
            .await
            .map_err(|e| classify(&e))?;
            let handshake = Some((kind, took));
            if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
                let conn = Box::pin(onrush_http2::handshake(
                    stream,
                    http::uri::Scheme::HTTPS,
                    host,
                    h2,
                ))
                .await
                .map_err(|e| classify(&e))?;
                Ok(Opened {
                    conn: HttpConn::H2 { conn, lease: None },
                    handshake,
                })
            } else if version == HttpVersion::Auto {
                Ok(Opened {
                    conn: HttpConn::H1(AnyConnection::Tls(Box::new(http1::Connection::new(
                        stream,
                    )))),
                    handshake,
                })
            } else {
                warn_no_h2_once(target);
                Err(FailureClass::TlsProtocol)
            }
        }
        (is_tls, session, _) => {
            let tls = match (is_tls, session) {
                (true, Some(session)) => Some((session, target.server_name.as_str())),
                _ => None,
            };
            let (conn, handshake) = http1::connect_any_with(target.addr, options, tls, buffers)
                .await
                .map_err(|e| classify(&e))?;
            Ok(Opened {
                conn: HttpConn::H1(conn),
                handshake,
            })
        }
    }
}

/// [`open`] for a plain `http://` target spoken as HTTP/1.1 (`version` other than `h2`): the
/// same connection, through a future of its own. [`open`]'s carries the TLS and HTTP/2 set-up
/// paths' locals (a TLS stream is kilobytes), so boxing it costs an allocation too large for
/// the allocator's per-thread cache; this one is small enough (see the test below).
pub async fn open_plain(
    target: &HttpTarget,
    options: &ConnectOptions,
    buffers: Option<http1::Buffers>,
) -> Result<Opened, FailureClass> {
    let (conn, _) = http1::connect_any_with(target.addr, options, None, buffers)
        .await
        .map_err(|e| classify(&e))?;
    Ok(Opened {
        conn: HttpConn::H1(conn),
        handshake: None,
    })
}

/// `version: h2` against a TLS server that did not choose `h2` by ALPN: every connection fails
/// the same way, so say it once, in words, with the fix.
fn warn_no_h2_once(target: &HttpTarget) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!(
            "warning: {} did not choose HTTP/2 (ALPN h2) in the TLS handshake, so requests with \
             http.version: h2 fail as tls_protocol. Use version: auto to fall back to HTTP/1.1, \
             or h1.",
            target.server_name
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size of what `f` returns, without calling it (a future's type cannot be named).
    fn returned<A, B, C, R>(_: fn(A, B, C) -> R) -> usize {
        std::mem::size_of::<R>()
    }

    /// glibc serves allocations up to 1,032 bytes from its per-thread cache (tcache); a
    /// larger one takes its general path, ~600 more instructions to allocate and free. The
    /// session boxes this future once per new connection.
    #[test]
    fn a_plain_connect_is_small_enough_for_the_allocators_cache() {
        let size = returned::<&'static HttpTarget, &'static ConnectOptions, _, _>(open_plain);
        println!("open_plain future: {size} B");
        assert!(size <= 768, "{size} B");
    }
}
