//! One server thread: a `current_thread` runtime, its listener's accept loop, and one task per
//! connection served by hyper: HTTP/1.1, or HTTP/2 with one more task per stream.
//!
//! A single-threaded runtime per core is the cheapest way to serve many small requests (no
//! work-stealing, no cross-thread wake-ups); `SO_REUSEPORT` does the balancing. HTTP/2 streams
//! are spawned with `tokio::spawn` (hyper's `TokioExecutor`): on a `current_thread` runtime that
//! keeps them on this thread, with no `LocalSet` layer in between, so a connection's tasks
//! never run in parallel (which the per-connection counters rely on).
//!
//! Which protocol a connection speaks:
//! - plain port: the first bytes are peeked at (`MSG_PEEK`, nothing consumed, [`crate::sniff`]);
//!   the HTTP/2 preface (`PRI * HTTP/2.0...`) means h2c with prior knowledge (gRPC too), an
//!   HTTP/1.1 request line HTTP/1.1 (`GET /ws/...` WebSocket), a first byte 0 a length-prefixed
//!   echo or Thrift framed, a Thrift message header Thrift buffered, any other line a line echo.
//!   An HTTP socket then goes to hyper's HTTP/1.1 or HTTP/2 connection as it is, unwrapped. Not
//!   hyper-util's `auto` builder: it consumes the bytes and wraps the socket in a rewinding
//!   reader, and cost 384 instructions per keep-alive request (4.6%, callgrind); the peek costs
//!   one `recvfrom` per connection and nothing per request.
//!   A TLS ClientHello (an `https://` client on the plain port) is answered with a 400 and
//!   closed, as a plain web server would, so the client can say "not TLS" at once instead of
//!   waiting for a handshake that never comes.
//! - TLS: ALPN decides, `h2` -> HTTP/2, `http/1.1` or no ALPN -> HTTP/1.1 (the same builder and
//!   path as before HTTP/2 existed).

use std::convert::Infallible;
use std::io;
use std::net::TcpListener as StdListener;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::echo::{self, Framing};
use crate::respond::Conn;
use crate::routes;
use crate::sniff::{self, Wire};
use crate::stats::{ConnCounter, Shared};
use crate::thrift::{self, Calculator, Transport};
use crate::tls::TlsInfo;
use crate::{h3, ws, Http2Config};

pub(crate) struct Worker {
    pub(crate) index: usize,
    pub(crate) listener: StdListener,
    pub(crate) shared: Arc<Shared>,
    pub(crate) stop: watch::Receiver<bool>,
    /// `Some` for HTTPS: every connection is a TLS handshake first.
    pub(crate) tls: Option<TlsAcceptor>,
    /// `Some` when HTTP/3 is on: quinn's configuration and this thread's UDP socket.
    pub(crate) quic: Option<(quinn::ServerConfig, std::net::UdpSocket)>,
    /// `Alt-Svc` for this server's HTTP/1.1 and HTTP/2 responses when HTTP/3 is on.
    pub(crate) alt_svc: Option<hyper::header::HeaderValue>,
    pub(crate) http2: Http2Config,
    /// The Thrift service, read from its IDL once per server.
    pub(crate) thrift: Arc<Calculator>,
}

/// The connection builders of one thread, shared by its connection tasks through an `Arc`
/// (one reference count per connection instead of a builder clone).
struct Protocols {
    /// HTTP/1.1: plain connections without the preface, TLS with ALPN `http/1.1` or none.
    h1: http1::Builder,
    /// HTTP/2: plain connections that open with the preface (h2c), TLS with ALPN `h2`.
    h2: http2::Builder<TokioExecutor>,
}

/// `SETTINGS_MAX_HEADER_LIST_SIZE` (decoded header bytes of one request): like HTTP/1.1's
/// 400 KB read buffer rather than hyper's 16 KiB, as a test may send big cookies or headers.
const MAX_HEADER_LIST: u32 = 256 * 1024;

impl Protocols {
    fn new(http2: Http2Config) -> Protocols {
        let mut h1 = http1::Builder::new();
        h1.keep_alive(true)
            // No per-request timer: idle keep-alive connections of a slow load test stay
            // open, and the hot path arms no timer per request.
            .header_read_timeout(None);
        // Not `pipeline_flush(true)`: in hyper 1.x it also turns off write back-pressure, and
        // a `/bytes/4294967296` then buffered the whole 4 GiB in memory (measured; the test
        // `bytes_huge_is_streamed_in_constant_memory` guards it).
        let mut h2 = http2::Builder::new(TokioExecutor::new());
        h2.max_concurrent_streams(http2.max_concurrent_streams)
            .initial_stream_window_size(http2.stream_window)
            .initial_connection_window_size(http2.connection_window)
            .max_header_list_size(MAX_HEADER_LIST)
            // No keep-alive pings (hyper's default, said out loud): no timer per connection,
            // and an idle connection of a slow load test stays open as with HTTP/1.1.
            .keep_alive_interval(None);
        Protocols { h1, h2 }
    }

    /// Spawns the task that serves one connection to its end, as HTTP/2 or HTTP/1.1. Its own
    /// task, whose future is hyper's connection itself, rather than awaited inside the task
    /// that peeked or did the TLS handshake: nested in that task's state machine, an HTTP/1.1
    /// connection cost ~170 more instructions per request (callgrind; inlining).
    fn spawn_connection<I>(&self, io: I, conn: Arc<Conn>, h2: bool)
    where
        I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    {
        if h2 {
            // Counted when hyper accepts the stream, not when its task first runs (see
            // `routes::admit_h2`).
            let service = service_fn(move |req| {
                let stream = routes::admit_h2(&req, &conn);
                let conn = conn.clone();
                async move { Ok::<_, Infallible>(routes::handle_h2(req, &conn, stream).await) }
            });
            let connection = self.h2.serve_connection(io, service);
            // Errors are the client's doing (reset, malformed request): nothing to report.
            tokio::spawn(async move {
                let _ = connection.await;
            });
        } else {
            // The future is built with no call before it, so it is constructed in place:
            // counting in the closure instead cost a copy of the ~2 KB future, ~300
            // instructions per request (callgrind).
            let service = service_fn(move |req| {
                let conn = conn.clone();
                async move { Ok::<_, Infallible>(routes::handle(req, &conn).await) }
            });
            let connection = self.h1.serve_connection(io, service);
            tokio::spawn(async move {
                let _ = connection.await;
            });
        }
    }
}

/// Runs the thread until the stop signal. Reports start-up success or failure on `ready`.
pub(crate) fn run(worker: Worker, ready: mpsc::Sender<io::Result<()>>) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let Worker {
        index,
        listener,
        shared,
        mut stop,
        tls,
        quic,
        alt_svc,
        http2,
        thrift,
    } = worker;
    rt.block_on(async move {
        // Registering with the reactor needs the runtime context, hence here and not in `start`.
        let listener = match TcpListener::from_std(listener) {
            Ok(l) => l,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let endpoint = match quic.map(|(config, socket)| h3::endpoint(config, socket)) {
            Some(Err(e)) => {
                let _ = ready.send(Err(e));
                return;
            }
            Some(Ok(endpoint)) => Some(endpoint),
            None => None,
        };
        let _ = ready.send(Ok(()));
        drop(ready);
        let quic = async {
            match endpoint {
                Some(endpoint) => h3::accept_loop(endpoint, index, shared.clone()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = stop.wait_for(|stopped| *stopped) => {}
            _ = accept_loop(&listener, index, &shared, tls, alt_svc, http2, thrift) => {}
            _ = quic => {}
        }
    });
    // Dropping the runtime drops every connection task, closing their sockets: shutdown does
    // not wait for a `/delay/100000` to finish.
    drop(rt);
}

async fn accept_loop(
    listener: &TcpListener,
    index: usize,
    shared: &Arc<Shared>,
    tls: Option<TlsAcceptor>,
    alt_svc: Option<hyper::header::HeaderValue>,
    http2: Http2Config,
    calc: Arc<Calculator>,
) {
    let protocols = Arc::new(Protocols::new(http2));
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(conn) => conn,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                if !is_per_connection_error(&e) {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                continue;
            }
        };
        shared.count_accept(index);
        // Small responses must not wait for Nagle's algorithm (40 ms delayed-ACK stalls).
        let _ = stream.set_nodelay(true);
        let protocols = protocols.clone();
        match &tls {
            None => {
                let shared = shared.clone();
                let calc = calc.clone();
                tokio::spawn(async move {
                    let Ok(wire) = sniff::sniff(&stream).await else {
                        return;
                    };
                    match wire {
                        Wire::Http1 | Wire::H2 => {
                            let conn = new_conn(shared, index, None, None);
                            let h2 = wire == Wire::H2;
                            protocols.spawn_connection(TokioIo::new(stream), conn, h2);
                        }
                        Wire::WebSocket => ws::serve(stream, shared, index).await,
                        Wire::Lines => echo::serve(stream, Framing::Lines, shared, index).await,
                        Wire::LengthPrefixed => {
                            echo::serve(stream, Framing::LengthPrefixed, shared, index).await
                        }
                        Wire::ThriftFramed => {
                            thrift::serve(stream, Transport::Framed, calc, shared, index).await
                        }
                        Wire::ThriftBuffered => {
                            thrift::serve(stream, Transport::Buffered, calc, shared, index).await
                        }
                        Wire::TlsHello => refuse_tls(stream).await,
                    }
                });
            }
            Some(acceptor) => {
                // The handshake runs in the connection's task, never in the accept loop.
                let accept = acceptor.accept(stream);
                let shared = shared.clone();
                let alt_svc = alt_svc.clone();
                tokio::spawn(async move {
                    let stream = match accept.await {
                        Ok(stream) => stream,
                        Err(_) => {
                            shared.count_handshake(index, None);
                            return;
                        }
                    };
                    let info = TlsInfo::of(stream.get_ref().1);
                    shared.count_handshake(index, Some(info.resumed));
                    if let Some(name) = &info.client_name {
                        shared.count_client(index, name);
                    }
                    let h2 = info.alpn == Some("h2");
                    let conn = new_conn(shared, index, Some(info), alt_svc);
                    protocols.spawn_connection(TokioIo::new(stream), conn, h2);
                });
            }
        }
    }
}

/// What every request (or HTTP/2 stream) of one connection is routed with.
fn new_conn(
    shared: Arc<Shared>,
    index: usize,
    tls: Option<TlsInfo>,
    alt_svc: Option<hyper::header::HeaderValue>,
) -> Arc<Conn> {
    Arc::new(Conn {
        shared,
        counter: ConnCounter::new(index),
        tls,
        alt_svc,
    })
}

fn is_per_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// What the plain port answers a TLS ClientHello: an HTTP/1.1 400, then the connection closes.
const NOT_TLS: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n\
Content-Length: 50\r\nConnection: close\r\n\r\nthis port speaks plain HTTP, not TLS: use http://\n";

/// Answers a TLS client on the plain port ([`NOT_TLS`]) and closes. The ClientHello is read
/// first and the rest drained after the answer: closing with unread bytes would send a reset,
/// which could overtake the answer.
async fn refuse_tls(mut stream: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = [0u8; 4096];
    let _ = stream.read(&mut buf).await;
    if stream.write_all(NOT_TLS).await.is_err() || stream.shutdown().await.is_err() {
        return;
    }
    let drain = async { while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {} };
    let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
}
