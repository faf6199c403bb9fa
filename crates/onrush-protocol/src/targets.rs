//! The distinct `host:port` targets of a protocol's steps, each resolved once, when the plan is
//! prepared, and known by a slot: a session keeps its connection (or socket) per slot.

use std::net::{SocketAddr, ToSocketAddrs};

use anyhow::Context;

/// Targets in the order the steps first name them.
#[derive(Debug, Default)]
pub struct Targets {
    /// `host:port` as a label (IPv6 in brackets) and its address.
    list: Vec<(String, SocketAddr)>,
}

/// One step's target: its slot, address and label.
#[derive(Debug, Clone)]
pub struct Target {
    pub slot: usize,
    pub addr: SocketAddr,
    /// `host:port` as written (IPv6 in brackets), shown to `url` extractors.
    pub label: String,
}

impl Targets {
    /// The target `host:port`, resolved the first time it is named; `protocol` ("tcp", "udp")
    /// names it in errors.
    pub fn resolve(&mut self, protocol: &str, host: &str, port: u16) -> anyhow::Result<Target> {
        let label = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let slot = match self.list.iter().position(|(l, _)| *l == label) {
            Some(slot) => slot,
            None => {
                let addr = (host, port)
                    .to_socket_addrs()
                    .with_context(|| format!("cannot resolve {protocol} target host {host:?}"))?
                    .next()
                    .with_context(|| format!("{protocol} target host {host:?} has no address"))?;
                self.list.push((label.clone(), addr));
                self.list.len() - 1
            }
        };
        Ok(Target {
            slot,
            addr: self.list[slot].1,
            label,
        })
    }

    /// The addresses, in slot order.
    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.list.iter().map(|(_, a)| *a).collect()
    }

    /// How many distinct targets there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when no step named a target.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}
