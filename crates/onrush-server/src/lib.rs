//! The built-in target server that onrush load tests, self-benchmarks and demos hit
//! (`onrush serve`, `target: builtin`).
//!
//! It exists so that onrush can be tried, tested and benchmarked without any other software:
//! it must be fast enough never to be the bottleneck when onrush measures itself, and it must
//! offer the awkward behaviours a load-testing client has to cope with (huge and chunked bodies,
//! delays, arbitrary status codes, periodic stalls). Endpoints: `/`,
//! `/bytes/N[?chunked=1|?encoding=gzip|deflate|br]`, `/delay/MS`, `/status/CODE`, `/echo`,
//! `/upload`, `/json`, `/html`, `/xml`, `/stall?every=MS&for=MS` and `/stats`; for the scenario
//! features of a client (extractors, checks, cookies, forms, decompression, redirects, auth):
//! `/login` (a fresh, server-verifiable token per request), `/verify`, `/account`,
//! `/redirect/N`, `/redirect-to`, `/cookies`, `/cookies/set`, `/cookies/delete`, `/gzip`,
//! `/deflate`, `/brotli`, `/basic-auth/USER/PASS`, `/bearer`, `/form`, `/query`, `/headers`
//! and `/tls`. The crate README describes each.
//!
//! Design: `threads` OS threads, each running its own tokio `current_thread` runtime and
//! accepting on its own listener, all bound to the same address with `SO_REUSEPORT` so the
//! kernel spreads connections over the threads without any cross-thread hand-off. HTTP/1.1 and
//! HTTP/2 are served by hyper: on the plain port a connection that opens with the HTTP/2
//! preface is served as h2c (prior knowledge), any other as HTTP/1.1 (keep-alive,
//! `Connection: close`, HEAD and chunked handled by hyper). [`start_tls`] serves the same over
//! TLS (rustls), HTTP/2 or HTTP/1.1 as ALPN negotiates, with a generated certificate if none is
//! given, session resumption, optional mTLS, and handshake counters ([`ServerHandle::tls_stats`]).
//! HTTP/2 settings (concurrent streams, windows) are in [`Http2Config`]; what HTTP/2 clients did
//! is in [`ServerHandle::h2_stats`] (e.g. how many streams one connection multiplexed).
//!
//! ```no_run
//! let server = onrush_server::start(onrush_server::ServerConfig {
//!     addr: "127.0.0.1:0".parse().unwrap(),
//!     threads: 1,
//! })?;
//! println!("listening on http://{}", server.local_addr());
//! // ... run a load test against it ...
//! println!("{:?}", server.stats());
//! server.shutdown();
//! # Ok::<(), std::io::Error>(())
//! ```

mod behave;
mod body;
mod echo;
mod endpoints;
mod forms;
mod grpc;
mod h3;
mod listen;
mod login;
mod respond;
mod routes;
pub mod samples;
mod scenario;
mod sniff;
mod stats;
mod thrift;
mod tls;
mod worker;
mod ws;

use std::io;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::watch;

pub use endpoints::{endpoint_paths, endpoints_help, Endpoint, ENDPOINTS};
pub use forms::{MAX_TEXT_FIELD, MAX_URLENCODED_FORM};
pub use login::{LOGIN_DEFAULT_USER, MAX_USER_LEN, SESSION_COOKIE, TOKEN_PREFIX};
pub use samples::{CSRF_TOKEN, JSON_TOKEN, JSON_USER_ID, JSON_USER_NAME, XML_ORDER_ID};
pub use scenario::AUTH_REALM;
pub use stats::{H2Stats, H3Stats, LoginStats, ProtocolStats, Stats};
pub use tls::{ServerTls, TlsStats};

use stats::Shared;

/// How to run the server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on; port 0 picks a free port (see [`ServerHandle::local_addr`]).
    pub addr: SocketAddr,
    /// Number of OS threads, each with its own runtime and listener. 0 means one per
    /// available core.
    pub threads: usize,
}

/// HTTP/2 settings, for h2 over TLS and h2c alike ([`start_with_options`]; [`start`] and
/// [`start_tls`] use the defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http2Config {
    /// `SETTINGS_MAX_CONCURRENT_STREAMS`: streams one client may have open on a connection at
    /// once. Default 1000, so a load test multiplexing hundreds of requests per connection is
    /// limited by itself, not by the server (h2's own default is 200 in hyper).
    pub max_concurrent_streams: u32,
    /// `SETTINGS_INITIAL_WINDOW_SIZE`: request-body bytes a client may send on one stream before
    /// the server reads them. Default 2 MiB: an upload is not throttled by round trips (the
    /// protocol's 64 KiB default allows ~64 KiB per round trip), and the server reads promptly,
    /// so little of it is ever buffered.
    pub stream_window: u32,
    /// The connection-level window, shared by all streams of a connection; bounds what one
    /// connection can make the server buffer. Default 4 MiB.
    pub connection_window: u32,
}

impl Http2Config {
    /// The largest flow-control window HTTP/2 allows (RFC 9113 6.9.1).
    pub const MAX_WINDOW: u32 = (1 << 31) - 1;

    /// `InvalidInput` unless `max_concurrent_streams >= 1` and both windows are within
    /// 65535 (the protocol's initial window) ..= [`Http2Config::MAX_WINDOW`].
    pub fn validate(&self) -> io::Result<()> {
        let window_ok = |w: u32| (65_535..=Self::MAX_WINDOW).contains(&w);
        let problem = if self.max_concurrent_streams == 0 {
            "HTTP/2 max_concurrent_streams must be at least 1".to_owned()
        } else if !window_ok(self.stream_window) || !window_ok(self.connection_window) {
            format!(
                "HTTP/2 windows must be from 65535 to {} bytes (stream {}, connection {})",
                Self::MAX_WINDOW,
                self.stream_window,
                self.connection_window
            )
        } else {
            return Ok(());
        };
        Err(io::Error::new(io::ErrorKind::InvalidInput, problem))
    }
}

impl Default for Http2Config {
    fn default() -> Self {
        Http2Config {
            max_concurrent_streams: 1000,
            stream_window: 2 << 20,
            connection_window: 4 << 20,
        }
    }
}

/// Everything [`start_with_options`] takes besides the [`ServerConfig`]. New settings come here
/// (with defaults), so `ServerConfig { addr, threads }` stays as it is for its many users.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerOptions {
    /// `Some`: serve HTTPS (see [`start_tls`]); `None`: plain HTTP/1.1 and h2c.
    pub tls: Option<ServerTls>,
    pub http2: Http2Config,
    /// Also answer HTTP/3 (QUIC) on the same port number over UDP, and advertise it with
    /// `Alt-Svc: h3=":PORT"` on the HTTP/1.1 and HTTP/2 responses. Needs `tls`. A QUIC
    /// connection may have as many request streams open at once as HTTP/2's
    /// `max_concurrent_streams`.
    pub http3: bool,
}

/// A running server. Dropping it shuts the server down, like [`ServerHandle::shutdown`]: a
/// server nobody can stop any more would outlive tests and leak ports.
pub struct ServerHandle {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    threads: Vec<JoinHandle<()>>,
    /// PEM of the CA generated for a TLS server started without a certificate.
    ca_pem: Option<String>,
}

impl ServerHandle {
    /// The address actually bound (the real port when the config asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The same numbers as `GET /stats` (see [`Stats`] for what is counted).
    pub fn stats(&self) -> Stats {
        self.shared.totals()
    }

    /// TLS handshakes since start (all zero for a plain HTTP server); also the `tls_full`,
    /// `tls_resumed` and `tls_failed` fields of `/stats`.
    pub fn tls_stats(&self) -> TlsStats {
        self.shared.tls()
    }

    /// HTTP/2 connections and streams since start, and the most streams seen in flight at once
    /// on one connection: the `h2_connections`, `h2_streams` and `h2_max_concurrent_streams`
    /// fields of `/stats` (see [`H2Stats`]).
    pub fn h2_stats(&self) -> H2Stats {
        self.shared.h2()
    }

    /// HTTP/3 connections and requests, and QUIC handshakes (completed, resumed, failed),
    /// since start: the `h3_*` and `quic_*` fields of `/stats` (all zero without [`ServerOptions::http3`]).
    pub fn h3_stats(&self) -> H3Stats {
        self.shared.h3()
    }

    /// TLS handshakes (full or resumed) that presented a client certificate, by the
    /// certificate's name: the most specific common name (CN) of its subject, or the whole
    /// subject (RFC 4514 style) when it has no CN. The `tls_clients` field of `/stats`; empty
    /// without mTLS. Lets a test check that several client identities were spread over VUs.
    pub fn tls_clients(&self) -> std::collections::BTreeMap<String, u64> {
        self.shared.tls_clients()
    }

    /// For a TLS server started without `cert_key`: the PEM of the CA that signed its generated
    /// certificate (valid for `localhost`, `127.0.0.1` and `::1`), for a client to trust (e.g.
    /// written to a file for `tls.ca_file`). `None` otherwise.
    pub fn self_signed_ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// What the other protocols of the plain port did since start: TCP echo, WebSocket, gRPC,
    /// Thrift (the `tcp_*`, `ws_*`, `grpc_*` and `thrift_*` fields of `/stats`).
    pub fn protocol_stats(&self) -> ProtocolStats {
        self.shared.protocols()
    }

    /// Everything `GET /stats` answers, as its JSON document (what `onrush run` writes to
    /// `builtin_server.json` after a run against `target: builtin`).
    pub fn stats_json(&self) -> serde_json::Value {
        routes::stats_json(&self.shared)
    }

    /// What the login endpoints did since start: the `tokens_*` and `sessions_*` fields of
    /// `/stats`.
    pub fn login_stats(&self) -> LoginStats {
        self.shared.login()
    }

    /// Whether `token` is one this server's `/login` could have issued (the check `POST /login`
    /// and `/verify` make; counts nothing). Tokens are `tok-<n>-<16 hex digits of an HMAC under
    /// a key drawn at start>`, so a token of another server or an altered one is refused.
    pub fn verify_token(&self, token: &str) -> bool {
        self.shared.keys.check_token(token).is_ok()
    }

    /// The user of a `session` cookie value this server issued, `None` for any other value (the
    /// check `/account` makes; counts nothing).
    pub fn verify_session(&self, session: &str) -> Option<String> {
        self.shared.keys.check_session(session).ok()
    }

    /// TCP connections accepted since start, counting every one, including connections that
    /// only carried `/stats` requests or no request at all (the `accepted` field of `/stats`).
    pub fn accepted_connections(&self) -> u64 {
        self.shared.accepted()
    }

    /// Stops every thread and joins it. Connections in progress (a long `/delay`, a huge
    /// `/bytes`) are dropped, not drained, so this returns within milliseconds.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        // Each worker selects on this channel next to its accept loop; when it fires the
        // worker leaves `block_on` and drops its runtime, which drops every connection task.
        let _ = self.stop.send(true);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle")
            .field("local_addr", &self.local_addr)
            .field("threads", &self.threads.len())
            .finish()
    }
}

/// Binds the listeners (an error if the address is in use), spawns the threads and returns once
/// every thread runs its accept loop. The listeners are listening before this returns, so a
/// client may connect right away.
///
/// Serves HTTP/1.1, and HTTP/2 with prior knowledge (h2c) to a connection that opens with the
/// HTTP/2 preface; default [`Http2Config`].
pub fn start(config: ServerConfig) -> io::Result<ServerHandle> {
    start_with_options(config, ServerOptions::default())
}

/// [`start`], serving HTTPS: the same endpoints over TLS 1.2/1.3 (rustls), HTTP/2 or HTTP/1.1 as
/// ALPN negotiates (`h2` preferred, HTTP/1.1 when the client offers no ALPN), with session
/// resumption (tickets, and a session-ID cache for TLS 1.2). Without `tls.cert_key` a
/// certificate is generated (see [`ServerHandle::self_signed_ca_pem`]). Errors (`InvalidInput`)
/// name the certificate or key file that could not be used.
pub fn start_tls(config: ServerConfig, tls: ServerTls) -> io::Result<ServerHandle> {
    start_with_options(
        config,
        ServerOptions {
            tls: Some(tls),
            ..ServerOptions::default()
        },
    )
}

/// [`start`] or [`start_tls`] (when `options.tls` is set), with the given HTTP/2 settings.
pub fn start_with_options(
    config: ServerConfig,
    options: ServerOptions,
) -> io::Result<ServerHandle> {
    options.http2.validate()?;
    let quic_resumed = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (tls, quic, ca_pem) = match &options.tls {
        Some(tls) => {
            let built = tls::build(tls, options.http3, quic_resumed.clone())?;
            let quic = match built.quic {
                Some(quic) => Some(h3::server_config(
                    quic,
                    options.http2.max_concurrent_streams,
                )?),
                None => None,
            };
            (Some(built.acceptor), quic, built.ca_pem)
        }
        None if options.http3 => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "HTTP/3 needs TLS (QUIC is always encrypted): add --tls",
            ))
        }
        None => (None, None, None),
    };
    start_with(config, tls, quic, quic_resumed, ca_pem, options.http2)
}

fn start_with(
    config: ServerConfig,
    tls: Option<tokio_rustls::TlsAcceptor>,
    quic: Option<quinn::ServerConfig>,
    quic_resumed: Arc<std::sync::atomic::AtomicU64>,
    ca_pem: Option<String>,
    http2: Http2Config,
) -> io::Result<ServerHandle> {
    let threads = match config.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let listeners = listen::bind_group(config.addr, threads)?;
    let local_addr = listeners[0].local_addr()?;
    let udp = match &quic {
        Some(_) => Some(listen::bind_udp_group(local_addr, threads).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("UDP port {} for HTTP/3: {e}", local_addr.port()),
            )
        })?),
        None => None,
    };
    let mut udp = udp.map(Vec::into_iter);
    let alt_svc = quic.as_ref().map(|_| {
        hyper::header::HeaderValue::from_str(&format!("h3=\":{}\"", local_addr.port()))
            .expect("a port number is a valid header value")
    });
    let mut shared = Shared::new(threads);
    shared.quic_resumed = quic_resumed;
    let shared = Arc::new(shared);
    // The IDL is embedded: an error here is a build's bug, reported rather than panicking.
    let calculator = Arc::new(thrift::Calculator::load().map_err(io::Error::other)?);
    let (stop, stop_rx) = watch::channel(false);
    let (ready_tx, ready_rx) = mpsc::channel::<io::Result<()>>();

    let mut handle = ServerHandle {
        local_addr,
        shared: shared.clone(),
        stop,
        threads: Vec::with_capacity(threads),
        ca_pem,
    };
    for (index, listener) in listeners.into_iter().enumerate() {
        let ctx = worker::Worker {
            index,
            listener,
            shared: shared.clone(),
            stop: stop_rx.clone(),
            tls: tls.clone(),
            quic: quic.clone().zip(udp.as_mut().and_then(Iterator::next)),
            alt_svc: alt_svc.clone(),
            http2,
            thrift: calculator.clone(),
        };
        let ready = ready_tx.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("onrush-server-{index}"))
            .spawn(move || worker::run(ctx, ready));
        match spawned {
            Ok(t) => handle.threads.push(t),
            // Dropping the handle stops the threads already started.
            Err(e) => return Err(e),
        }
    }
    drop(ready_tx);
    for _ in 0..threads {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(io::Error::other("a server thread died while starting")),
        }
    }
    Ok(handle)
}
