//! Plain HTTP/1.1 connections with a bandwidth cap: the cap itself ([`Throttled`], a token
//! bucket per direction) is onrush-http's, beneath either protocol and beneath TLS.

use std::net::SocketAddr;

use tokio::net::TcpStream;

use crate::{connect_tcp, ConnectOptions, Connection, Error, Throttled};

/// A plain connection with a bandwidth cap, as [`connect_throttled`] returns it.
pub type ThrottledConnection = Connection<Throttled<TcpStream>>;

/// Opens a TCP connection as [`crate::connect`] does, capped to `opts.throttle` bytes per second
/// in each direction. `opts.throttle` must be `Some` (else `ConnectOther`: use `connect`).
pub async fn connect_throttled(
    addr: SocketAddr,
    opts: &ConnectOptions,
) -> Result<ThrottledConnection, Error> {
    let rate = onrush_http::required_rate(opts)?;
    let tcp = connect_tcp(addr, opts).await?;
    Ok(Connection::new(Throttled::new(tcp, rate)))
}
