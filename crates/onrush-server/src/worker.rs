//! One server thread: a `current_thread` runtime, its listener's accept loop, and one task per
//! connection served by hyper's HTTP/1 connection.
//!
//! A single-threaded runtime per core is the cheapest way to serve many small requests (no
//! work-stealing, no cross-thread wake-ups); `SO_REUSEPORT` does the balancing.

use std::convert::Infallible;
use std::io;
use std::net::TcpListener as StdListener;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::routes::{self, Conn};
use crate::stats::{ConnCounter, Shared};

pub(crate) struct Worker {
    pub(crate) index: usize,
    pub(crate) listener: StdListener,
    pub(crate) shared: Arc<Shared>,
    pub(crate) stop: watch::Receiver<bool>,
    /// `Some` for HTTPS: every connection is a TLS handshake first.
    pub(crate) tls: Option<TlsAcceptor>,
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
            _ = accept_loop(&listener, index, &shared, tls) => {}
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
) {
    let mut http = http1::Builder::new();
    http.keep_alive(true)
        // No per-request timer: idle keep-alive connections of a slow load test stay open,
        // and the hot path arms no timer per request.
        .header_read_timeout(None);
    // Not `pipeline_flush(true)`: in hyper 1.x it also turns off write back-pressure, and a
    // `/bytes/4294967296` then buffered the whole 4 GiB in memory (measured; the test
    // `bytes_huge_is_streamed_in_constant_memory` guards it).
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
        let conn = Arc::new(Conn {
            shared: shared.clone(),
            counter: ConnCounter::new(index),
        });
        let service = service_fn(move |req| {
            let conn = conn.clone();
            async move { Ok::<_, Infallible>(routes::handle(req, &conn).await) }
        });
        match &tls {
            None => {
                let connection = http.serve_connection(TokioIo::new(stream), service);
                tokio::spawn(async move {
                    // Errors here are the client's doing (reset, malformed request): nothing
                    // to report.
                    let _ = connection.await;
                });
            }
            Some(acceptor) => {
                // The handshake runs in the connection's task, never in the accept loop.
                let accept = acceptor.accept(stream);
                let http = http.clone();
                let shared = shared.clone();
                tokio::spawn(async move {
                    let stream = match accept.await {
                        Ok(stream) => stream,
                        Err(_) => {
                            shared.count_handshake(index, None);
                            return;
                        }
                    };
                    let resumed =
                        stream.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
                    shared.count_handshake(index, Some(resumed));
                    let _ = http.serve_connection(TokioIo::new(stream), service).await;
                });
            }
        }
    }
}

fn is_per_connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}
