//! The session cache of `session: shared`: every VU's connections draw TLS 1.3 tickets from one
//! store, as one client process's connections would.
//!
//! Why not rustls's `ClientSessionMemoryCache`: it keeps at most 8 TLS 1.3 tickets per server,
//! and a ticket is used once. With dozens of VUs reconnecting at once, the 8 tickets run out
//! and connections fall back to full handshakes — measured: 10 VUs x 20 iterations with
//! `per_iteration` made 20 full handshakes instead of ~1. Here each server keeps up to
//! [`TICKETS_PER_SERVER`] tickets (a few hundred bytes each), the freshest used first.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;
use rustls::NamedGroup;

/// TLS 1.3 tickets kept per server: enough for thousands of VUs reconnecting together.
pub(crate) const TICKETS_PER_SERVER: usize = 4096;

/// Servers remembered; the oldest-inserted is forgotten beyond this.
const SERVERS: usize = 256;

#[derive(Default)]
struct ServerData {
    kx_hint: Option<NamedGroup>,
    tls12: Option<Tls12ClientSessionValue>,
    tls13: VecDeque<Tls13ClientSessionValue>,
}

/// A [`ClientSessionStore`] for many connections at once (see the module documentation).
#[derive(Default)]
pub(crate) struct SharedSessionStore {
    servers: Mutex<HashMap<ServerName<'static>, ServerData>>,
}

impl std::fmt::Debug for SharedSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedSessionStore").finish_non_exhaustive()
    }
}

impl SharedSessionStore {
    fn with<R>(&self, name: ServerName<'static>, f: impl FnOnce(&mut ServerData) -> R) -> R {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        if !servers.contains_key(&name) && servers.len() >= SERVERS {
            // A plan talks to a few servers; forgetting an arbitrary one only costs a full
            // handshake.
            if let Some(k) = servers.keys().next().cloned() {
                servers.remove(&k);
            }
        }
        f(servers.entry(name).or_default())
    }

    fn get<R>(&self, name: &ServerName<'_>, f: impl FnOnce(&mut ServerData) -> R) -> Option<R> {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        servers.get_mut(&name.to_owned()).map(f)
    }
}

impl ClientSessionStore for SharedSessionStore {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.with(server_name, |d| d.kx_hint = Some(group));
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.get(server_name, |d| d.kx_hint).flatten()
    }

    fn set_tls12_session(&self, server_name: ServerName<'static>, value: Tls12ClientSessionValue) {
        self.with(server_name, |d| d.tls12 = Some(value));
    }

    fn tls12_session(&self, server_name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        self.get(server_name, |d| d.tls12.clone()).flatten()
    }

    fn remove_tls12_session(&self, server_name: &ServerName<'static>) {
        self.get(server_name, |d| d.tls12 = None);
    }

    fn insert_tls13_ticket(
        &self,
        server_name: ServerName<'static>,
        value: Tls13ClientSessionValue,
    ) {
        self.with(server_name, |d| {
            if d.tls13.len() >= TICKETS_PER_SERVER {
                d.tls13.pop_front();
            }
            d.tls13.push_back(value);
        });
    }

    fn take_tls13_ticket(
        &self,
        server_name: &ServerName<'static>,
    ) -> Option<Tls13ClientSessionValue> {
        self.get(server_name, |d| d.tls13.pop_back()).flatten()
    }
}
