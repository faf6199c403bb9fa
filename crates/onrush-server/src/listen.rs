//! Binding one listener per thread on the same address with `SO_REUSEPORT`.
//!
//! `SO_REUSEPORT` lets the kernel spread incoming connections over the threads' listeners, so no
//! thread ever hands a socket to another. Its catch: a second process of the same user that also
//! sets it could bind the same port and silently take half the connections. A probe bind without
//! `SO_REUSEPORT` comes first, so "port in use" is reported as an error as a user expects.

use std::io;
use std::net::{SocketAddr, TcpListener, UdpSocket};

use socket2::{Domain, Protocol, Socket, Type};

/// Listen backlog: deep enough for the connection bursts a load test makes at its start.
const BACKLOG: i32 = 4096;

/// Binds `count` listeners on `addr`. Errors are the plain OS errors (`AddrInUse`, ...): the
/// callers add the address to their message. With port 0 the first listener picks the port (the kernel
/// never picks a port already shared through `SO_REUSEPORT`) and the others join it.
pub(crate) fn bind_group(addr: SocketAddr, count: usize) -> io::Result<Vec<TcpListener>> {
    let count = count.max(1);
    if addr.port() != 0 {
        probe_free(addr)?;
    }
    let first = bind_one(addr, count > 1)?;
    let bound = first.local_addr()?;
    let mut listeners = Vec::with_capacity(count);
    listeners.push(first);
    for _ in 1..count {
        listeners.push(bind_one(bound, true)?);
    }
    Ok(listeners)
}

/// Fails with `AddrInUse` when any socket already listens on `addr`: a bind without
/// `SO_REUSEPORT` conflicts with every listener, whatever options that one set.
fn probe_free(addr: SocketAddr) -> io::Result<()> {
    let probe = new_socket(addr)?;
    probe.bind(&addr.into())
}

fn bind_one(addr: SocketAddr, reuse_port: bool) -> io::Result<TcpListener> {
    let socket = new_socket(addr)?;
    if reuse_port {
        socket.set_reuse_port(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

fn new_socket(addr: SocketAddr) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    // Like every server: restart at once even while old connections sit in TIME_WAIT.
    socket.set_reuse_address(true)?;
    Ok(socket)
}

/// Binds `count` UDP sockets on `addr` (a port already chosen: the TCP listeners' port, so
/// HTTP/3 answers on the same port number as HTTPS, as `Alt-Svc: h3=":PORT"` says) for the
/// threads' QUIC endpoints. `SO_REUSEPORT` spreads clients over them by their address and port,
/// so one client socket's packets always reach the same thread, which holds its connection.
pub(crate) fn bind_udp_group(addr: SocketAddr, count: usize) -> io::Result<Vec<UdpSocket>> {
    let count = count.max(1);
    // As for TCP: "port in use" even when the other socket set SO_REUSEPORT too.
    drop(udp_socket(addr, false)?);
    (0..count).map(|_| udp_socket(addr, count > 1)).collect()
}

fn udp_socket(addr: SocketAddr, reuse_port: bool) -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if reuse_port {
        socket.set_reuse_port(true)?;
    }
    socket.bind(&addr.into())?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}
