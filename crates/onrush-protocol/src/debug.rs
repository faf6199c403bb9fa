//! `--debug`: the first exchanges of each step printed in full.
//!
//! A process-wide switch rather than a field of every session: it is read when a session is
//! made (a protocol's sessions are created lazily, deep in the dispatch), and off it costs a
//! session nothing per request. While it is on, a session that supports it keeps every
//! response header and the body up to its step's limit (not only what checks need), and shows
//! what it sent as a [`RequestView`].

use std::sync::atomic::{AtomicBool, Ordering};

static ON: AtomicBool = AtomicBool::new(false);

/// Turns the capture for `--debug` on or off, for sessions made from now on.
pub fn set(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// Whether sessions made now should keep whole exchanges for `--debug`.
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// What a session sent for its last request, as `--debug` prints it.
#[derive(Default)]
pub struct RequestView<'a> {
    /// The method (`GET`), or empty for protocols without one.
    pub method: &'a str,
    /// What was addressed: an HTTP request's path and query.
    pub target: &'a [u8],
    /// Headers as `Name: value\r\n` lines, as the session rendered them (the connection adds
    /// `Host`, `Content-Length` and the like when it writes them).
    pub headers: &'a [u8],
    /// The body, as rendered (a file or multipart body is not: `body_note` says so).
    pub body: &'a [u8],
    /// Why `body` is not what was sent, when it is not.
    pub body_note: Option<&'static str>,
}
