//! Opening TCP connections, the transport beneath both HTTP versions (and beneath TLS).
//!
//! Here rather than in onrush-http1 because HTTP/2 with prior knowledge (h2c) and every TLS
//! connection start from the same socket, with the same options and the same failure classes
//! (refused, out of local ports, a SYN that got no answer in time).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tokio::net::{TcpSocket, TcpStream};

use crate::{Error, ErrorKind};

/// Options for opening a connection: [`connect_tcp`] here, `onrush_http1::connect` and the
/// TLS connects.
///
/// `ConnectOptions::default()` is a plain connect with TCP_NODELAY: the socket, one setsockopt,
/// the connect; the other options cost one syscall each, and only when set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectOptions {
    /// Set TCP_NODELAY, so that a request leaves at once instead of waiting for the ACK of the
    /// previous segment (Nagle): the default, as every load tool does.
    pub nodelay: bool,
    /// Bind the socket to this source address before connecting (`None`: the kernel chooses).
    ///
    /// Each (source address, target address, target port) triple has its own range of local
    /// ports, so spreading connections over several source addresses multiplies the
    /// connections a client can open, and the new connections per second it can sustain
    /// while closed ones sit in TIME_WAIT. On loopback every address of 127.0.0.0/8 is local:
    /// 127.0.0.2..127.0.0.254 can be used without configuring anything (Gatling calls these
    /// `localAddresses`). For a remote target the addresses must be configured on an interface.
    ///
    /// On Linux the socket gets `IP_BIND_ADDRESS_NO_PORT` before `bind`, so the port is only
    /// chosen at `connect`, from the full 4-tuple: without it `bind` reserves a port for the
    /// source address alone, and the range runs out as if all targets were one.
    pub local_addr: Option<IpAddr>,
    /// Set SO_LINGER to {on, 0 s}: dropping the connection sends RST instead of FIN, so it
    /// leaves no TIME_WAIT on the client and its port is free at once (`http.close: reset` in a
    /// plan). The server sees the reset (ECONNRESET on its next read, if any); a response
    /// already read is complete, so only the orderly goodbye is skipped. Closing never blocks:
    /// a zero linger aborts immediately.
    pub linger_reset: bool,
    /// Cap this connection's bandwidth to this many bytes per second in each direction (a
    /// slow client: a mobile link, a modem). `None` (the default): no cap and no cost.
    ///
    /// A capped connection has another type, so it is opened with onrush-http1's
    /// `connect_throttled`, `connect_tls_throttled` or `connect_any` (which picks by this
    /// field), or [`crate::connect_tls_throttled_stream`]; onrush-http1's `connect` and
    /// `connect_tls` and [`crate::connect_tls_stream`] refuse a `Some` (kind `ConnectOther`) rather than
    /// ignore it.
    pub throttle: Option<u64>,
    /// When opening the connection must be done by: the TCP connect, and the TLS handshake for
    /// [`crate::connect_tls_stream`]. A TCP connect still running then fails as
    /// [`ErrorKind::ConnectTimeout`]; a TLS handshake as `ConnectTimeout` with
    /// [`crate::TlsFailure::HandshakeTimeout`]. So a request's own deadline, passed here, tells
    /// *which* phase was too slow (a SYN queue overflowing vs. a server starved of CPU for
    /// handshakes), where a timeout around the whole request could not. `None` (the default):
    /// no limit here, no timer armed.
    pub deadline: Option<tokio::time::Instant>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            nodelay: true,
            local_addr: None,
            linger_reset: false,
            throttle: None,
            deadline: None,
        }
    }
}

/// For the connect functions whose stream type has no bandwidth cap: an error when
/// `opts.throttle` is set, naming `use_instead`, rather than silently ignoring the cap.
pub fn refuse_throttle(opts: &ConnectOptions, use_instead: &str) -> Result<(), Error> {
    match opts.throttle {
        None => Ok(()),
        Some(_) => Err(Error::new(
            ErrorKind::ConnectOther,
            format!(
                "ConnectOptions::throttle is set: open the connection with {use_instead} or \
                 connect_any"
            ),
        )),
    }
}

/// Opens a TCP connection to `addr`: the socket, for a protocol (HTTP/1.1, HTTP/2 with prior
/// knowledge) or a transport (TLS) to run over. The caller measures connect time.
///
/// Errors: [`ErrorKind::ConnectRefused`]; [`ErrorKind::AddrNotAvailable`] when this machine is
/// out of local ports (EADDRNOTAVAIL from connect, EADDRINUSE or EADDRNOTAVAIL from binding
/// `opts.local_addr`; the message says which, and names the source address) or
/// `opts.local_addr` is not an address of this host; [`ErrorKind::ConnectTimeout`] at
/// `opts.deadline`; else [`ErrorKind::ConnectOther`]. `opts.throttle` is not applied here.
pub async fn connect_tcp(addr: SocketAddr, opts: &ConnectOptions) -> Result<TcpStream, Error> {
    let from = opts.local_addr;
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(|e| Error::connect(e, addr, from))?;
    if opts.nodelay {
        socket
            .set_nodelay(true)
            .map_err(|e| Error::connect(e, addr, from))?;
    }
    if opts.linger_reset {
        // Through socket2 because tokio deprecates its set_linger: a *non-zero* linger blocks
        // the thread in close(). A zero linger never blocks: close() sends RST and returns.
        socket2::SockRef::from(&socket)
            .set_linger(Some(Duration::ZERO))
            .map_err(|e| Error::connect(e, addr, from))?;
    }
    if let Some(ip) = from {
        bind_source(&socket, ip, addr)?;
    }
    let connecting = socket.connect(addr);
    let result = match opts.deadline {
        Some(at) => match tokio::time::timeout_at(at, connecting).await {
            Ok(result) => result,
            Err(_elapsed) => return Err(Error::connect_timeout(addr, from)),
        },
        None => connecting.await,
    };
    result.map_err(|e| Error::connect(e, addr, from))
}

/// Binds `socket` to source address `ip`, port chosen later by connect().
fn bind_source(socket: &TcpSocket, ip: IpAddr, addr: SocketAddr) -> Result<(), Error> {
    if ip.is_ipv4() != addr.is_ipv4() {
        return Err(Error::new(
            ErrorKind::ConnectOther,
            format!("source address {ip} and target {addr} are not of the same IP version"),
        ));
    }
    // Best effort: a kernel older than 4.2 refuses the option (ENOPROTOOPT), and bind() then
    // reserves a port per source address, which still works, only with fewer connections.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let _ = set_bind_address_no_port(socket);
    socket
        .bind(SocketAddr::new(ip, 0))
        .map_err(|e| Error::bind(e, ip, addr))
}

/// `IP_BIND_ADDRESS_NO_PORT` (Linux >= 4.2): bind() to port 0 records the address only, and
/// connect() picks a port that makes the 4-tuple unique. Applies to IPv6 sockets as well (the
/// kernel handles SOL_IP options on them).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn set_bind_address_no_port(socket: &TcpSocket) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let one: libc::c_int = 1;
    // SAFETY: setsockopt on a file descriptor we own, with a pointer to a live c_int and its size.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
