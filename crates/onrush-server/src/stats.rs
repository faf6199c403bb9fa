//! Request and connection counters behind `/stats` and [`crate::ServerHandle::stats`].
//!
//! Each thread bumps its own cache-line-padded shard with relaxed atomics, so counting costs no
//! cross-core traffic on the hot path; readers add the shards up. Relaxed is enough: the numbers
//! are statistics, read after the client has seen its responses.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

use crate::tls::TlsStats;

/// What the server has done since it started.
///
/// `/stats` requests are not counted, so that a test can read the numbers without changing
/// them. The rules:
/// - `requests`: every request whose path is not `/stats`, counted when it is routed (before its
///   response is sent).
/// - `connections`: a TCP connection is counted when it carries its first request that is not
///   `/stats`. A connection that only ever carried `/stats` requests (or no request at all) is
///   not counted; one that carried `/stats` and then `/` is counted once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Requests routed, `/stats` excluded.
    pub requests: u64,
    /// Connections that carried at least one request other than `/stats`.
    pub connections: u64,
}

#[derive(Default)]
#[repr(align(128))]
pub(crate) struct Shard {
    requests: AtomicU64,
    connections: AtomicU64,
    accepted: AtomicU64,
    tls_full: AtomicU64,
    tls_resumed: AtomicU64,
    tls_failed: AtomicU64,
    tokens_issued: AtomicU64,
    tokens_ok: AtomicU64,
    tokens_bad: AtomicU64,
    sessions_ok: AtomicU64,
    sessions_bad: AtomicU64,
    h2_connections: AtomicU64,
    h2_streams: AtomicU64,
    h2_max_concurrent: AtomicU64,
    h3_connections: AtomicU64,
    h3_streams: AtomicU64,
    quic_handshakes: AtomicU64,
    quic_failed: AtomicU64,
    /// The other protocols of the plain port, by [`Event`].
    events: [AtomicU64; Event::COUNT],
    /// Client-certificate name -> handshakes that presented it. Locked once per handshake with
    /// a client certificate only (never per request), and per shard, so threads do not contend.
    tls_clients: Mutex<HashMap<String, u64>>,
}

/// What HTTP/2 traffic the server has seen since it started (the `h2_*` fields of `/stats`;
/// also [`crate::ServerHandle::h2_stats`]). `/stats` requests are not counted, as in [`Stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct H2Stats {
    /// Connections that spoke HTTP/2 (h2 over TLS or h2c), counted like
    /// [`Stats::connections`]: at their first stream that is not `/stats`. Included in
    /// [`Stats::connections`].
    pub connections: u64,
    /// Requests (streams) over HTTP/2, `/stats` excluded. Included in [`Stats::requests`].
    pub streams: u64,
    /// The most streams ever in flight at once on one connection: a stream is in flight from
    /// the moment the connection accepts it and hands it to its handler until its response
    /// body is finished (or dropped, when the client resets it). A client that multiplexes N
    /// requests on a connection shows N here, even for instant endpoints when the N requests
    /// arrive together; one that waits for each response shows 1.
    pub max_concurrent_streams: u64,
}

/// What HTTP/3 traffic the server has seen since it started (`onrush serve --tls --http3`; the
/// `h3_*` and `quic_*` fields of `/stats`; also [`crate::ServerHandle::h3_stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct H3Stats {
    /// QUIC connections that carried at least one HTTP/3 request other than `/stats`, counted
    /// as [`Stats::connections`] counts (and included in it).
    pub connections: u64,
    /// HTTP/3 requests, `/stats` excluded. Included in [`Stats::requests`].
    pub streams: u64,
    /// QUIC handshakes that completed (whether or not a request followed). Not in
    /// [`crate::TlsStats`], which counts TLS over TCP.
    pub handshakes: u64,
    /// Of [`H3Stats::handshakes`], those that resumed a TLS session (a ticket of this server
    /// offered and taken back).
    pub resumed: u64,
    /// QUIC handshakes that failed or were abandoned (a client that distrusts the certificate,
    /// offers no `h3`, or goes silent).
    pub handshakes_failed: u64,
}

/// What the login endpoints have done since the server started (the `tokens_*` and
/// `sessions_*` fields of `/stats`; also [`crate::ServerHandle::login_stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LoginStats {
    /// Tokens handed out by `/login` (any method but POST, any format; HEAD included).
    pub tokens_issued: u64,
    /// Token checks that passed (`POST /login`, `/verify`).
    pub tokens_ok: u64,
    /// Token checks that failed: missing, malformed, forged or altered token (answered 403).
    pub tokens_bad: u64,
    /// `/account` requests with a valid `session` cookie.
    pub sessions_ok: u64,
    /// `/account` requests without a valid `session` cookie (answered 401).
    pub sessions_bad: u64,
}

/// What the server's other protocols did since it started: TCP echo, WebSocket, gRPC and
/// Thrift (the fields of `/stats` of the same names; also [`crate::ServerHandle::protocol_stats`]).
/// A protocol's connections are counted when they are recognised (their first bytes, or for
/// WebSocket the handshake done), its messages as they arrive, before they are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProtocolStats {
    /// TCP echo connections (lines or length-prefixed).
    pub tcp_connections: u64,
    /// TCP messages received: lines, or length-prefixed messages.
    pub tcp_messages: u64,
    /// WebSocket connections (handshake done).
    pub ws_connections: u64,
    /// WebSocket data messages received (text and binary).
    pub ws_messages: u64,
    /// WebSocket pings received (each answered with a pong).
    pub ws_pings: u64,
    /// gRPC calls (any method, known or not).
    pub grpc_calls: u64,
    /// gRPC request messages received.
    pub grpc_messages_in: u64,
    /// gRPC reply messages sent.
    pub grpc_messages_out: u64,
    /// Thrift calls received (oneway included).
    pub thrift_calls: u64,
    /// Thrift connections (binary or compact protocol, framed or buffered transport).
    pub thrift_connections: u64,
}

/// One protocol event to count ([`ProtocolStats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    TcpConnection,
    TcpMessage,
    WsConnection,
    WsMessage,
    WsPing,
    GrpcCall,
    GrpcMessageIn,
    GrpcMessageOut,
    ThriftCall,
    ThriftConnection,
}

impl Event {
    const COUNT: usize = 10;
}

/// One login event to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LoginEvent {
    TokenIssued,
    TokenOk,
    TokenBad,
    SessionOk,
    SessionBad,
}

/// State shared by all threads of one server.
pub(crate) struct Shared {
    shards: Box<[Shard]>,
    /// The server's start: `/stall` windows are aligned to it.
    pub(crate) started: Instant,
    /// Signs and checks login tokens and session ids (random per server).
    pub(crate) keys: crate::login::Keys,
    /// QUIC handshakes that resumed a session, counted by the QUIC TLS configuration's
    /// ticketer (`tls::build`), once per resumption: not per thread.
    pub(crate) quic_resumed: std::sync::Arc<AtomicU64>,
}

impl Shared {
    pub(crate) fn new(threads: usize) -> Self {
        Shared {
            shards: (0..threads.max(1)).map(|_| Shard::default()).collect(),
            started: Instant::now(),
            keys: crate::login::Keys::new(),
            quic_resumed: Default::default(),
        }
    }

    pub(crate) fn totals(&self) -> Stats {
        let mut s = Stats::default();
        for shard in self.shards.iter() {
            s.requests += shard.requests.load(Relaxed);
            s.connections += shard.connections.load(Relaxed);
        }
        s
    }

    pub(crate) fn accepted(&self) -> u64 {
        self.shards.iter().map(|s| s.accepted.load(Relaxed)).sum()
    }

    pub(crate) fn count_accept(&self, shard: usize) {
        self.shards[shard].accepted.fetch_add(1, Relaxed);
    }

    pub(crate) fn tls(&self) -> TlsStats {
        let mut s = TlsStats::default();
        for shard in self.shards.iter() {
            s.full += shard.tls_full.load(Relaxed);
            s.resumed += shard.tls_resumed.load(Relaxed);
            s.failed += shard.tls_failed.load(Relaxed);
        }
        s
    }

    pub(crate) fn h2(&self) -> H2Stats {
        let mut s = H2Stats::default();
        for shard in self.shards.iter() {
            s.connections += shard.h2_connections.load(Relaxed);
            s.streams += shard.h2_streams.load(Relaxed);
            s.max_concurrent_streams = s
                .max_concurrent_streams
                .max(shard.h2_max_concurrent.load(Relaxed));
        }
        s
    }

    pub(crate) fn h3(&self) -> H3Stats {
        let mut s = H3Stats::default();
        for shard in self.shards.iter() {
            s.connections += shard.h3_connections.load(Relaxed);
            s.streams += shard.h3_streams.load(Relaxed);
            s.handshakes += shard.quic_handshakes.load(Relaxed);
            s.handshakes_failed += shard.quic_failed.load(Relaxed);
        }
        s.resumed = self.quic_resumed.load(Relaxed);
        s
    }

    /// Counts a QUIC handshake: completed (`true`) or failed.
    pub(crate) fn count_quic_handshake(&self, shard: usize, done: bool) {
        let shard = &self.shards[shard];
        match done {
            true => &shard.quic_handshakes,
            false => &shard.quic_failed,
        }
        .fetch_add(1, Relaxed);
    }

    /// Handshakes that presented a client certificate, by its name (see
    /// [`crate::ServerHandle::tls_clients`]).
    pub(crate) fn tls_clients(&self) -> BTreeMap<String, u64> {
        let mut all = BTreeMap::new();
        for shard in self.shards.iter() {
            let map = shard.tls_clients.lock().unwrap_or_else(|e| e.into_inner());
            for (name, n) in map.iter() {
                *all.entry(name.clone()).or_insert(0) += n;
            }
        }
        all
    }

    /// Counts a handshake whose client presented a certificate named `name`.
    pub(crate) fn count_client(&self, shard: usize, name: &str) {
        let mut map = self.shards[shard]
            .tls_clients
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match map.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                map.insert(name.to_owned(), 1);
            }
        }
    }

    /// Counts a finished TLS handshake: `Some(resumed)`, or `None` when it failed.
    pub(crate) fn count_handshake(&self, shard: usize, outcome: Option<bool>) {
        let shard = &self.shards[shard];
        match outcome {
            Some(false) => &shard.tls_full,
            Some(true) => &shard.tls_resumed,
            None => &shard.tls_failed,
        }
        .fetch_add(1, Relaxed);
    }
}

impl Shared {
    pub(crate) fn count(&self, shard: usize, event: Event) {
        self.shards[shard].events[event as usize].fetch_add(1, Relaxed);
    }

    pub(crate) fn protocols(&self) -> ProtocolStats {
        let n = |e: Event| -> u64 {
            self.shards
                .iter()
                .map(|s| s.events[e as usize].load(Relaxed))
                .sum()
        };
        ProtocolStats {
            tcp_connections: n(Event::TcpConnection),
            tcp_messages: n(Event::TcpMessage),
            ws_connections: n(Event::WsConnection),
            ws_messages: n(Event::WsMessage),
            ws_pings: n(Event::WsPing),
            grpc_calls: n(Event::GrpcCall),
            grpc_messages_in: n(Event::GrpcMessageIn),
            grpc_messages_out: n(Event::GrpcMessageOut),
            thrift_calls: n(Event::ThriftCall),
            thrift_connections: n(Event::ThriftConnection),
        }
    }

    pub(crate) fn login(&self) -> LoginStats {
        let mut s = LoginStats::default();
        for shard in self.shards.iter() {
            s.tokens_issued += shard.tokens_issued.load(Relaxed);
            s.tokens_ok += shard.tokens_ok.load(Relaxed);
            s.tokens_bad += shard.tokens_bad.load(Relaxed);
            s.sessions_ok += shard.sessions_ok.load(Relaxed);
            s.sessions_bad += shard.sessions_bad.load(Relaxed);
        }
        s
    }

    pub(crate) fn count_login(&self, shard: usize, event: LoginEvent) {
        let shard = &self.shards[shard];
        match event {
            LoginEvent::TokenIssued => &shard.tokens_issued,
            LoginEvent::TokenOk => &shard.tokens_ok,
            LoginEvent::TokenBad => &shard.tokens_bad,
            LoginEvent::SessionOk => &shard.sessions_ok,
            LoginEvent::SessionBad => &shard.sessions_bad,
        }
        .fetch_add(1, Relaxed);
    }
}

/// Per-connection view: which shard to bump, whether this connection is counted yet, and its
/// HTTP/2 streams in flight.
///
/// All tasks of one connection (hyper's connection task and, for HTTP/2, one task per stream)
/// run on the thread that accepted it (a `current_thread` runtime), so these atomics are never
/// contended: plain relaxed loads and stores are race-free, atomics only make the type `Sync`.
pub(crate) struct ConnCounter {
    shard: usize,
    counted: AtomicBool,
    /// HTTP/2 streams routed whose response body is not finished or dropped yet.
    h2_in_flight: AtomicU64,
}

impl ConnCounter {
    pub(crate) fn new(shard: usize) -> Self {
        ConnCounter {
            shard,
            counted: AtomicBool::new(false),
            h2_in_flight: AtomicU64::new(0),
        }
    }

    /// The shard this connection's thread bumps.
    pub(crate) fn shard(&self) -> usize {
        self.shard
    }

    /// Counts one request that is not `/stats`, and its connection if it is the first such.
    /// `h2`: the request is an HTTP/2 stream, which the caller must end with
    /// [`ConnCounter::h2_stream_done`] when its response body is finished or dropped.
    pub(crate) fn count_request(&self, shared: &Shared, h2: bool) {
        let shard = &shared.shards[self.shard];
        shard.requests.fetch_add(1, Relaxed);
        // One thread runs every task of this connection (see the type's doc): no race.
        if !self.counted.load(Relaxed) {
            self.counted.store(true, Relaxed);
            shard.connections.fetch_add(1, Relaxed);
            if h2 {
                shard.h2_connections.fetch_add(1, Relaxed);
            }
        }
        if h2 {
            shard.h2_streams.fetch_add(1, Relaxed);
            let in_flight = self.h2_in_flight.load(Relaxed) + 1;
            self.h2_in_flight.store(in_flight, Relaxed);
            // Only a new high touches the shard's maximum.
            if in_flight > shard.h2_max_concurrent.load(Relaxed) {
                shard.h2_max_concurrent.fetch_max(in_flight, Relaxed);
            }
        }
    }

    /// Counts one HTTP/3 request that is not `/stats`, and its QUIC connection if it is the
    /// first such. A QUIC connection's tasks all run on the thread whose endpoint accepted it,
    /// so the same single-thread reasoning as [`ConnCounter::count_request`] holds.
    pub(crate) fn count_h3_request(&self, shared: &Shared) {
        let shard = &shared.shards[self.shard];
        shard.requests.fetch_add(1, Relaxed);
        shard.h3_streams.fetch_add(1, Relaxed);
        if !self.counted.load(Relaxed) {
            self.counted.store(true, Relaxed);
            shard.connections.fetch_add(1, Relaxed);
            shard.h3_connections.fetch_add(1, Relaxed);
        }
    }

    /// An HTTP/2 stream counted by [`ConnCounter::count_request`] has ended.
    pub(crate) fn h2_stream_done(&self) {
        let n = self.h2_in_flight.load(Relaxed);
        self.h2_in_flight.store(n.saturating_sub(1), Relaxed);
    }
}
