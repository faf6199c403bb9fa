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
}

/// State shared by all threads of one server.
pub(crate) struct Shared {
    shards: Box<[Shard]>,
    /// The server's start: `/stall` windows are aligned to it.
    pub(crate) started: Instant,
}

impl Shared {
    pub(crate) fn new(threads: usize) -> Self {
        Shared {
            shards: (0..threads.max(1)).map(|_| Shard::default()).collect(),
            started: Instant::now(),
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
