//! `connections: shared`: one pool of connections per worker thread and scenario, per target,
//! that all the scenario's VUs on that worker draw from.
//!
//! - HTTP/1.1: a connection carries one request at a time. A VU takes an idle connection (or
//!   opens one), and gives it back after its request if it can be reused. The pool grows to
//!   the number of requests in flight at once, as a browser's or JMeter's shared pool does.
//! - HTTP/2 and HTTP/3: a connection carries up to `max_streams` requests at once. A VU joins the first
//!   connection with a free stream slot, or opens a new one. Slots are taken *before* the
//!   connection exists, so VUs that start together wait for the connection being opened
//!   instead of each opening their own: 50 VUs with `max_streams: 10` open 5 connections.
//!
//! Everything is `Rc`/`Cell` state of the worker's thread: no lock, no message.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use onrush_http1::AnyConnection;
use onrush_http2::H2Connection;
use onrush_http3::H3Connection;
use tokio::sync::OnceCell;

/// The shared pools of one scenario on one worker (one per target slot).
pub struct ConnectionPool {
    slots: RefCell<Vec<SlotPool>>,
    max_streams: u32,
}

#[derive(Default)]
struct SlotPool {
    idle: Vec<AnyConnection>,
    h2: Vec<Rc<H2Entry>>,
    /// With `version: auto`, the server chose HTTP/1.1 by ALPN once.
    speaks_h1: bool,
}

/// An HTTP/2 or HTTP/3 connection of the pool, or one being opened (a pool's entries are of
/// the scenario's one version).
pub struct H2Entry {
    conn: OnceCell<H2Connection>,
    h3: OnceCell<H3Connection>,
    /// Stream slots taken (requests in flight or about to be).
    active: Cell<u32>,
    /// Failed or closed by the server: takes no new streams.
    dead: Cell<bool>,
}

impl H2Entry {
    /// The connection, opening it with `open` if no one has yet (callers that come while it is
    /// being opened wait for it; if opening fails, the next caller tries again itself).
    pub async fn get_or_open<F, Fut, E>(&self, open: F) -> Result<H2Connection, E>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<H2Connection, E>>,
    {
        self.conn.get_or_try_init(open).await.cloned()
    }

    /// [`H2Entry::get_or_open`] for an HTTP/3 connection.
    pub async fn get_or_open_h3<F, Fut, E>(&self, open: F) -> Result<H3Connection, E>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<H3Connection, E>>,
    {
        self.h3.get_or_try_init(open).await.cloned()
    }

    /// Takes the connection out of service: no new stream joins it.
    pub fn mark_dead(&self) {
        self.dead.set(true);
    }
}

/// A stream slot on a pooled HTTP/2 connection, given back when dropped.
pub struct Lease {
    pub entry: Rc<H2Entry>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.entry.active.set(self.entry.active.get() - 1);
    }
}

impl ConnectionPool {
    pub fn new(target_slots: usize, max_streams: u32) -> Self {
        ConnectionPool {
            slots: RefCell::new((0..target_slots).map(|_| SlotPool::default()).collect()),
            max_streams: max_streams.max(1),
        }
    }

    /// An idle HTTP/1.1 connection to the target of `slot`, if there is one.
    pub fn take_idle(&self, slot: usize) -> Option<AnyConnection> {
        self.slots.borrow_mut()[slot].idle.pop()
    }

    /// Gives an HTTP/1.1 connection back after its request.
    pub fn put_idle(&self, slot: usize, conn: AnyConnection) {
        self.slots.borrow_mut()[slot].idle.push(conn);
    }

    /// A stream slot on an HTTP/2 connection to `slot`'s target with room, or on a new entry
    /// (whose connection the caller opens with [`H2Entry::get_or_open`]); dead entries nobody
    /// uses any more are dropped on the way.
    pub fn h2_lease(&self, slot: usize) -> Lease {
        let mut slots = self.slots.borrow_mut();
        let pool = &mut slots[slot];
        pool.h2.retain(|e| !(e.dead.get() && e.active.get() == 0));
        let entry = match pool
            .h2
            .iter()
            .find(|e| !e.dead.get() && e.active.get() < self.max_streams)
        {
            Some(e) => e.clone(),
            None => {
                let e = Rc::new(H2Entry {
                    conn: OnceCell::new(),
                    h3: OnceCell::new(),
                    active: Cell::new(0),
                    dead: Cell::new(false),
                });
                pool.h2.push(e.clone());
                e
            }
        };
        entry.active.set(entry.active.get() + 1);
        Lease { entry }
    }

    /// Whether the target of `slot` chose HTTP/1.1 when offered both by ALPN.
    pub fn speaks_h1(&self, slot: usize) -> bool {
        self.slots.borrow()[slot].speaks_h1
    }

    /// Remembers that the target of `slot` chose HTTP/1.1 when offered both.
    pub fn set_speaks_h1(&self, slot: usize) {
        self.slots.borrow_mut()[slot].speaks_h1 = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h2_leases_fill_a_connection_before_opening_another() {
        let pool = ConnectionPool::new(1, 3);
        let leases: Vec<Lease> = (0..7).map(|_| pool.h2_lease(0)).collect();
        // 3 + 3 + 1: three entries.
        assert_eq!(pool.slots.borrow()[0].h2.len(), 3);
        assert!(Rc::ptr_eq(&leases[0].entry, &leases[2].entry));
        assert!(!Rc::ptr_eq(&leases[2].entry, &leases[3].entry));
        drop(leases);
        // All slots free again: a new lease reuses the first entry.
        let l = pool.h2_lease(0);
        assert_eq!(l.entry.active.get(), 1);
        assert_eq!(pool.slots.borrow()[0].h2.len(), 3);
    }

    #[test]
    fn dead_entries_take_no_streams_and_are_dropped_when_unused() {
        let pool = ConnectionPool::new(1, 2);
        let a = pool.h2_lease(0);
        a.entry.mark_dead();
        let b = pool.h2_lease(0);
        assert!(!Rc::ptr_eq(&a.entry, &b.entry));
        drop(a);
        let _c = pool.h2_lease(0);
        assert_eq!(pool.slots.borrow()[0].h2.len(), 1);
    }
}
