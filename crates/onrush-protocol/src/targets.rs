//! The distinct `host:port` targets of a protocol's steps, each resolved once, when the plan is
//! prepared, and known by a slot: a session keeps its connection (or socket) per slot.

use std::net::{SocketAddr, ToSocketAddrs};

use anyhow::Context;

pub use onrush_plan::BUILTIN_HOST;

/// The address of `host:port`: the built-in server's for [`BUILTIN_HOST`] (any port written
/// is ignored), else the host resolved. `protocol` ("tcp", "WebSocket") names it in errors.
pub fn resolve_host(
    protocol: &str,
    host: &str,
    port: u16,
    builtin: Option<SocketAddr>,
) -> anyhow::Result<SocketAddr> {
    if host == BUILTIN_HOST {
        return builtin.with_context(|| {
            format!(
                "the {protocol} target `builtin` names the built-in server, which runs only \
                 when the plan says `target: builtin` (it speaks HTTP, WebSocket, TCP, gRPC and \
                 Thrift)"
            )
        });
    }
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {protocol} target host {host:?}"))?
        .next()
        .with_context(|| format!("{protocol} target host {host:?} has no address"))
}

/// Targets in the order the steps first name them.
#[derive(Debug, Default)]
pub struct Targets {
    /// `host:port` as a label (IPv6 in brackets) and its address.
    list: Vec<(String, SocketAddr)>,
    /// The built-in server's address, for steps whose host is [`BUILTIN_HOST`].
    builtin: Option<SocketAddr>,
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
    /// No targets yet; `builtin` is where [`BUILTIN_HOST`] goes (the built-in server, when the
    /// plan's target is `builtin`).
    pub fn with_builtin(builtin: Option<SocketAddr>) -> Self {
        Targets {
            list: Vec::new(),
            builtin,
        }
    }

    /// The target `host:port`, resolved the first time it is named; `protocol` ("tcp", "udp")
    /// names it in errors.
    pub fn resolve(&mut self, protocol: &str, host: &str, port: u16) -> anyhow::Result<Target> {
        self.resolve_scheme(protocol, "", host, port)
    }

    /// [`Targets::resolve`] for a target reached through `scheme` (`"tls://"`; `""` for
    /// none): a slot of its own, apart from the same `host:port` without it (a session keeps a
    /// TLS connection and a plain one apart), and the label starts with it.
    pub fn resolve_scheme(
        &mut self,
        protocol: &str,
        scheme: &str,
        host: &str,
        port: u16,
    ) -> anyhow::Result<Target> {
        let label = if host == BUILTIN_HOST {
            format!("{scheme}{BUILTIN_HOST}")
        } else if host.contains(':') {
            format!("{scheme}[{host}]:{port}")
        } else {
            format!("{scheme}{host}:{port}")
        };
        let slot = match self.list.iter().position(|(l, _)| *l == label) {
            Some(slot) => slot,
            None => {
                let addr = resolve_host(protocol, host, port, self.builtin)?;
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
