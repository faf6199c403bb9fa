//! A VU's turn: one poll of its future by the engine, from when the engine resumes it to when
//! it is suspended again (`Pending`) or ends.
//!
//! Within a turn nothing else runs on the worker thread: no other VU, and not tokio's driver,
//! which only looks for I/O events between polls. So what a session learned from tokio earlier
//! in the same turn (that a socket had nothing more to read, say) is still all tokio knows, and
//! need not be asked again. A session compares [`current`] with the turn it noted: equal and
//! not [`NONE`] means the VU has not been suspended since.
//!
//! The engine marks each poll of a VU with [`Turn::enter`]. Outside a marked poll (a future
//! run by anything else) [`current`] is [`NONE`], which matches no noted turn: nothing is
//! assumed.

use std::cell::Cell;

/// No turn: outside the engine's poll of a VU.
pub const NONE: u64 = 0;

thread_local! {
    static CURRENT: Cell<u64> = const { Cell::new(NONE) };
    static LAST: Cell<u64> = const { Cell::new(NONE) };
}

/// The turn of the VU being polled on this thread, or [`NONE`].
#[inline]
pub fn current() -> u64 {
    CURRENT.with(Cell::get)
}

/// A turn under way: [`current`] is its number until it is dropped, then again the turn it
/// was entered in ([`NONE`] outside any).
#[must_use = "the turn ends when this is dropped"]
pub struct Turn {
    outer: u64,
}

impl Turn {
    /// Starts a new turn (a number no turn of this thread had before); call it as the poll of
    /// a VU begins, and drop the result as it ends.
    #[inline]
    pub fn enter() -> Turn {
        let next = LAST.with(|last| {
            let next = last.get().wrapping_add(1).max(1);
            last.set(next);
            next
        });
        Turn {
            outer: CURRENT.with(|c| c.replace(next)),
        }
    }
}

/// Runs `f` with each of its polls a [`Turn`] (a VU run as a task of its own).
pub async fn in_turns<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    std::future::poll_fn(move |cx| {
        let _turn = Turn::enter();
        f.as_mut().poll(cx)
    })
    .await
}

impl Drop for Turn {
    #[inline]
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.outer));
    }
}

// Tested where the engine uses it: onrush-engine's `worker::vu_set` tests (this crate has no
// test binary of its own).
