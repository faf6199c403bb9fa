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
//! - plain port: hyper-util's `auto` builder reads the first bytes; the HTTP/2 preface
//!   (`PRI * HTTP/2.0...`) means h2c with prior knowledge, anything else HTTP/1.1. It costs one
//!   short read per connection, nothing per request (measured: HTTP/1.1 keep-alive unchanged).
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
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::routes::{self, Conn};
use crate::stats::{ConnCounter, Shared};
use crate::tls::TlsInfo;
use crate::Http2Config;

pub(crate) struct Worker {
    pub(crate) index: usize,
    pub(crate) listener: StdListener,
    pub(crate) shared: Arc<Shared>,
    pub(crate) stop: watch::Receiver<bool>,
    /// `Some` for HTTPS: every connection is a TLS handshake first.
    pub(crate) tls: Option<TlsAcceptor>,
    pub(crate) http2: Http2Config,
}

/// The connection builders of one thread, shared by its connection tasks through an `Arc`
/// (one reference count per connection instead of a builder clone).
struct Protocols {
    /// TLS connections that negotiated `http/1.1` or no ALPN.
    h1: http1::Builder,
    /// TLS connections that negotiated `h2`.
    h2: http2::Builder<TokioExecutor>,
    /// The plain port: HTTP/1.1, or h2c when the connection opens with the HTTP/2 preface.
    auto: auto::Builder<TokioExecutor>,
}

/// Server settings applied to both HTTP/2 builders (hyper's own and the one inside `auto`,
/// which have the same methods but no common trait).
macro_rules! h2_settings {
    ($builder:expr, $config:expr) => {
        $builder
            .max_concurrent_streams($config.max_concurrent_streams)
            .initial_stream_window_size($config.stream_window)
            .initial_connection_window_size($config.connection_window)
            // Like HTTP/1.1's 400 KB read buffer rather than h2's 16 KiB: a test may send
            // big cookies or headers.
            .max_header_list_size(MAX_HEADER_LIST)
            // No keep-alive pings (hyper's default, said out loud): no timer per connection,
            // and an idle connection of a slow load test stays open as with HTTP/1.1.
            .keep_alive_interval(None)
    };
}

/// `SETTINGS_MAX_HEADER_LIST_SIZE` (decoded header bytes of one request).
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
        h2_settings!(h2, http2);
        let mut auto = auto::Builder::new(TokioExecutor::new());
        auto.http1().keep_alive(true).header_read_timeout(None);
        h2_settings!(auto.http2(), http2);
        Protocols { h1, h2, auto }
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
        http2,
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
        let _ = ready.send(Ok(()));
        drop(ready);
        tokio::select! {
            _ = stop.wait_for(|stopped| *stopped) => {}
            _ = accept_loop(&listener, index, &shared, tls, http2) => {}
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
    http2: Http2Config,
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
                let service = service(shared.clone(), index, None);
                tokio::spawn(async move {
                    // Errors here are the client's doing (reset, malformed request): nothing
                    // to report.
                    let _ = protocols
                        .auto
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            Some(acceptor) => {
                // The handshake runs in the connection's task, never in the accept loop.
                let accept = acceptor.accept(stream);
                let shared = shared.clone();
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
                    let service = service(shared, index, Some(info));
                    let io = TokioIo::new(stream);
                    if h2 {
                        let _ = protocols.h2.serve_connection(io, service).await;
                    } else {
                        let _ = protocols.h1.serve_connection(io, service).await;
                    }
                });
            }
        }
    }
}

/// The hyper service of one connection: every request (or HTTP/2 stream) is routed with the
/// connection's shared [`Conn`].
fn service(
    shared: Arc<Shared>,
    index: usize,
    tls: Option<TlsInfo>,
) -> impl hyper::service::Service<
    hyper::Request<hyper::body::Incoming>,
    Response = routes::Resp,
    Error = Infallible,
    Future = impl std::future::Future<Output = Result<routes::Resp, Infallible>> + Send,
> + Clone {
    let conn = Arc::new(Conn {
        shared,
        counter: ConnCounter::new(index),
        tls,
    });
    service_fn(move |req| {
        // Counted here, synchronously, not in the future: see `routes::admit`.
        let admitted = routes::admit(&req, &conn);
        let conn = conn.clone();
        async move { Ok::<_, Infallible>(routes::handle(req, &conn, admitted).await) }
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
