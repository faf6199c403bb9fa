//! QUIC endpoints (UDP sockets) and the client configuration of a connection.

use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use onrush_http::{Error, ErrorKind, TlsSession};
use quinn::crypto::rustls::QuicClientConfig;

use crate::H3Settings;

/// Where a connection's UDP socket comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EndpointScope {
    /// Each connection has its own endpoint (UDP socket and quinn driver task), as each TCP
    /// connection has its own socket: connections spread over source ports (as a server's or
    /// load balancer's 4-tuple hashing expects of many clients).
    PerConnection,
    /// All connections of a worker thread share one endpoint (one UDP socket per source
    /// address), demultiplexed by connection ID: the default, measured 10-20% less client CPU
    /// per request than a socket per connection, with the same cost per connection opened
    /// (README.md).
    #[default]
    PerThread,
}

thread_local! {
    /// The worker thread's endpoints for [`EndpointScope::PerThread`], by local address.
    static ENDPOINTS: RefCell<Vec<(SocketAddr, quinn::Endpoint)>> = const { RefCell::new(Vec::new()) };
}

/// The endpoint a new connection to `addr` uses, bound to `local` if given.
pub(crate) fn for_connection(
    scope: EndpointScope,
    addr: SocketAddr,
    local: Option<IpAddr>,
) -> Result<quinn::Endpoint, Error> {
    let ip = local.unwrap_or(if addr.is_ipv4() {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    } else {
        IpAddr::V6(Ipv6Addr::UNSPECIFIED)
    });
    let bind = SocketAddr::new(ip, 0);
    match scope {
        EndpointScope::PerConnection => open(bind),
        EndpointScope::PerThread => ENDPOINTS.with(|cell| {
            let mut endpoints = cell.borrow_mut();
            if let Some((_, e)) = endpoints.iter().find(|(b, _)| b.ip() == ip) {
                return Ok(e.clone());
            }
            let e = open(bind)?;
            endpoints.push((bind, e.clone()));
            Ok(e)
        }),
    }
}

/// Forgets this thread's shared endpoint `e`: its driver has stopped (the runtime it was made
/// on has ended: a previous run's worker on this thread), so the next connection opens another.
pub(crate) fn forget(e: &quinn::Endpoint) {
    let Ok(local) = e.local_addr() else { return };
    ENDPOINTS.with(|cell| {
        cell.borrow_mut()
            .retain(|(_, kept)| kept.local_addr().map_or(true, |a| a != local))
    });
}

fn open(bind: SocketAddr) -> Result<quinn::Endpoint, Error> {
    quinn::Endpoint::client(bind).map_err(|e| {
        let kind = if e.kind() == std::io::ErrorKind::AddrNotAvailable {
            ErrorKind::AddrNotAvailable
        } else {
            ErrorKind::ConnectOther
        };
        Error::new(
            kind,
            format!("could not open a UDP socket on {bind} for QUIC: {e}"),
        )
    })
}

/// The quinn client configuration of a connection: `session`'s rustls configuration (ALPN
/// `h3`), and the transport's settings.
pub(crate) fn client_config(
    session: &TlsSession,
    settings: &H3Settings,
) -> Result<quinn::ClientConfig, Error> {
    let tls = session.client_config();
    let tls = if tls.alpn_protocols == [b"h3".to_vec()] {
        tls.clone()
    } else {
        // A TLS client built for another version: the same verifier, identity and session
        // cache, offering h3 only (QUIC without an agreed ALPN is refused by rustls).
        let mut config = (**tls).clone();
        config.alpn_protocols = vec![b"h3".to_vec()];
        Arc::new(config)
    };
    let crypto = QuicClientConfig::try_from(tls).map_err(|_| {
        Error::new(
            ErrorKind::ConnectOther,
            "QUIC needs TLS 1.3 with TLS13_AES_128_GCM_SHA256: add it to http.tls.ciphers and \
             offer TLS 1.3 in http.tls.versions",
        )
    })?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport.max_idle_timeout(quinn::IdleTimeout::try_from(settings.idle_timeout).ok());
    config.transport_config(Arc::new(transport));
    Ok(config)
}
