//! Where requests go: a target resolved once per plan (address, `Host` header, TLS name).

use std::net::SocketAddr;

/// A resolved place to send requests: socket address and `Host` header value.
#[derive(Debug)]
pub struct HttpTarget {
    pub addr: SocketAddr,
    pub host_header: Vec<u8>,
    /// `https://`: connections are TLS, verified against `server_name`.
    pub tls: bool,
    pub server_name: String,
}

/// The distinct targets of a plan; a VU keeps one connection slot per target.
#[derive(Default)]
pub struct Targets {
    pub(crate) list: Vec<(String, std::sync::Arc<HttpTarget>)>,
}

impl Targets {
    /// The slot of `url`'s origin, resolving its host the first time it is seen.
    pub fn slot_for_url(&mut self, url: &onrush_plan::TargetUrl) -> anyhow::Result<usize> {
        use anyhow::Context;
        use std::net::ToSocketAddrs;
        let key = format!("{}:{}", url.host, url.port);
        if let Some(i) = self.list.iter().position(|(k, _)| *k == key) {
            return Ok(i);
        }
        let addr = (url.host.as_str(), url.port)
            .to_socket_addrs()
            .with_context(|| format!("cannot resolve target host {:?}", url.host))?
            .next()
            .with_context(|| format!("target host {:?} has no address", url.host))?;
        let tls = url.scheme == onrush_plan::Scheme::Https;
        let host_header = if url.port == url.scheme.default_port() {
            url.host.clone()
        } else if url.host.contains(':') {
            format!("[{}]:{}", url.host, url.port)
        } else {
            key.clone()
        };
        let slot = self.slot_for_addr(key, addr, host_header);
        let target = std::sync::Arc::get_mut(&mut self.list[slot].1).expect("just created");
        target.tls = tls;
        target.server_name = url.host.clone();
        Ok(slot)
    }

    /// A new slot for a plain-HTTP target at `addr` (the built-in server).
    pub fn slot_for_addr(&mut self, key: String, addr: SocketAddr, host_header: String) -> usize {
        self.list.push((
            key,
            std::sync::Arc::new(HttpTarget {
                addr,
                host_header: host_header.into_bytes(),
                tls: false,
                server_name: addr.ip().to_string(),
            }),
        ));
        self.list.len() - 1
    }

    /// How many distinct targets there are.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether there is no target.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The addresses of the targets, in slot order.
    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.list.iter().map(|(_, t)| t.addr).collect()
    }

    /// Whether any target is `https://`.
    pub fn any_tls(&self) -> bool {
        self.list.iter().any(|(_, t)| t.tls)
    }
}
