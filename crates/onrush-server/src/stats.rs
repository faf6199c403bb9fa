//! Request and connection counters behind `/stats` and [`crate::ServerHandle::stats`].
//!
//! Each thread bumps its own cache-line-padded shard with relaxed atomics, so counting costs no
//! cross-core traffic on the hot path; readers add the shards up. Relaxed is enough: the numbers
//! are statistics, read after the client has seen its responses.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
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
}

impl Shared {
    pub(crate) fn new(threads: usize) -> Self {
        Shared {
            shards: (0..threads.max(1)).map(|_| Shard::default()).collect(),
            started: Instant::now(),
            keys: crate::login::Keys::new(),
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

/// Per-connection view: which shard to bump and whether this connection is counted yet.
pub(crate) struct ConnCounter {
    shard: usize,
    counted: AtomicBool,
}

impl ConnCounter {
    pub(crate) fn new(shard: usize) -> Self {
        ConnCounter {
            shard,
            counted: AtomicBool::new(false),
        }
    }

    /// The shard this connection's thread bumps.
    pub(crate) fn shard(&self) -> usize {
        self.shard
    }

    /// Counts one request that is not `/stats`, and its connection if it is the first such.
    pub(crate) fn count_request(&self, shared: &Shared) {
        let shard = &shared.shards[self.shard];
        shard.requests.fetch_add(1, Relaxed);
        // Requests on one HTTP/1 connection are sequential: a plain load/store is race-free.
        if !self.counted.load(Relaxed) {
            self.counted.store(true, Relaxed);
            shard.connections.fetch_add(1, Relaxed);
        }
    }
}
