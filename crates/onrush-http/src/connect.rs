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
///
/// A connect whose handshake is already done when connect() returns (loopback, usually)
/// returns without waiting for the socket to be reported writable; one still in progress
/// waits for that, and the returned stream's connect time is the handshake's either way.
/// [`start_tcp`] is the same connect without a future for the first case.
pub async fn connect_tcp(addr: SocketAddr, opts: &ConnectOptions) -> Result<TcpStream, Error> {
    // Not `match start_tcp(..)? { .. => connecting.finish().await }`: the scrutinee would
    // live across the await, and size this future (embedded in every connect's) by ~240 B.
    let connecting = match start_tcp(addr, opts)? {
        TcpConnect::Open(stream) => return Ok(stream),
        TcpConnect::InProgress(connecting) => connecting,
    };
    connecting.finish().await
}

/// A TCP connect started by [`start_tcp`].
#[derive(Debug)]
pub enum TcpConnect {
    /// The handshake was done when connect() returned: the connection, open.
    Open(TcpStream),
    /// The handshake is still in progress: [`Connecting::finish`] waits for it.
    InProgress(Connecting),
}

/// A TCP connect whose handshake is in progress ([`TcpConnect::InProgress`]).
#[derive(Debug)]
pub struct Connecting {
    #[cfg(unix)]
    stream: TcpStream,
    #[cfg(not(unix))]
    socket: TcpSocket,
    addr: SocketAddr,
    from: Option<IpAddr>,
    deadline: Option<tokio::time::Instant>,
}

/// [`connect_tcp`] up to the point where it would wait, without a future: a caller that opens
/// a connection per request (loopback: the handshake is done at once) need not allocate the
/// future of a wait that does not happen, and boxes only [`Connecting::finish`] when it does.
/// Same options, errors and classes as [`connect_tcp`].
pub fn start_tcp(addr: SocketAddr, opts: &ConnectOptions) -> Result<TcpConnect, Error> {
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
    let deadline = opts.deadline;
    #[cfg(unix)]
    {
        let established =
            start_connect(&socket, addr).map_err(|e| Error::connect(e, addr, from))?;
        // SAFETY: the descriptor is the socket's, whose ownership `into_raw_fd` gives up; the
        // std stream is its only owner from here. It is non-blocking, as tokio requires (tokio
        // creates its sockets so).
        let std = unsafe {
            <std::net::TcpStream as std::os::fd::FromRawFd>::from_raw_fd(
                std::os::fd::IntoRawFd::into_raw_fd(socket),
            )
        };
        let stream = TcpStream::from_std(std).map_err(|e| Error::connect(e, addr, from))?;
        if !established {
            return Ok(TcpConnect::InProgress(Connecting {
                stream,
                addr,
                from,
                deadline,
            }));
        }
        // Done before the deadline unless the deadline had passed already: then it is the
        // timeout it would have been on a slower network (the TLS connects pass one that may
        // be past; the plain HTTP/1.1 connects none).
        match deadline {
            Some(at) if tokio::time::Instant::now() >= at => {
                Err(Error::connect_timeout(addr, from))
            }
            _ => Ok(TcpConnect::Open(stream)),
        }
    }
    #[cfg(not(unix))]
    Ok(TcpConnect::InProgress(Connecting {
        socket,
        addr,
        from,
        deadline,
    }))
}

impl Connecting {
    /// Waits for the handshake, until the deadline of the connect's options if it had one.
    ///
    /// Writable once the handshake is done, or write-closed (EPOLLHUP/EPOLLERR) when it
    /// failed, with the socket's error saying why: the same wait and check as tokio's own
    /// `TcpSocket::connect`. Lean on purpose (no readiness future of its own, no copies of
    /// the fields): callers embed this future in theirs.
    pub async fn finish(self) -> Result<TcpStream, Error> {
        #[cfg(unix)]
        {
            let handshake = std::future::poll_fn(|cx| self.stream.poll_write_ready(cx));
            let ready = match self.deadline {
                Some(at) => match tokio::time::timeout_at(at, handshake).await {
                    Ok(ready) => ready,
                    Err(_elapsed) => return Err(Error::connect_timeout(self.addr, self.from)),
                },
                None => handshake.await,
            };
            let result = ready.and_then(|()| match self.stream.take_error()? {
                Some(e) => Err(e),
                None => Ok(()),
            });
            match result {
                Ok(()) => Ok(self.stream),
                Err(e) => Err(Error::connect(e, self.addr, self.from)),
            }
        }
        #[cfg(not(unix))]
        {
            let connecting = self.socket.connect(self.addr);
            let result = match self.deadline {
                Some(at) => match tokio::time::timeout_at(at, connecting).await {
                    Ok(result) => result,
                    Err(_elapsed) => return Err(Error::connect_timeout(self.addr, self.from)),
                },
                None => connecting.await,
            };
            result.map_err(|e| Error::connect(e, self.addr, self.from))
        }
    }
}

/// Starts a non-blocking connect of `socket` to `addr`: `Ok(true)` when the handshake is
/// already done, `Ok(false)` while it is still in progress, or the connect's error (refused,
/// out of local ports, ...).
///
/// connect() on a non-blocking TCP socket returns EINPROGRESS even on loopback, where the
/// handshake is usually over by the time it returns: the SYN-ACK arrived while connect() held
/// the socket and was processed as it let go. A second connect() tells, without waiting for
/// writability (an event loop turn, a task wake-up) and `getsockopt(SO_ERROR)`: Linux answers
/// 0 when the socket is established (EISCONN on the BSDs and later calls), EALREADY while the
/// SYN is unanswered, and the pending error (ECONNREFUSED, ...) when the handshake failed. One
/// syscall instead of the `getsockopt`, and the task does not park.
///
/// Across a real network the answer is always "in progress" (a round trip is far longer than
/// a system call), so the second connect() would be a system call for nothing: after
/// [`PROBE_MISSES`] in a row on this thread it is only made every [`PROBE_EVERY`]th connect.
#[cfg(unix)]
fn start_connect(socket: &TcpSocket, addr: SocketAddr) -> std::io::Result<bool> {
    let sock = socket2::SockRef::from(socket);
    let to = socket2::SockAddr::from(addr);
    match sock.connect(&to) {
        Ok(()) => return Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    let misses = PROBE_MISSED.get();
    if misses >= PROBE_MISSES && !misses.is_multiple_of(PROBE_EVERY) {
        PROBE_MISSED.set(misses.checked_add(1).unwrap_or(PROBE_MISSES));
        return Ok(false);
    }
    let answer = match sock.connect(&to) {
        Ok(()) => Ok(true),
        Err(e) => match e.raw_os_error() {
            Some(libc::EISCONN) => Ok(true),
            Some(libc::EALREADY | libc::EINPROGRESS | libc::EINTR) => Ok(false),
            _ => Err(e),
        },
    };
    let next = match answer {
        Ok(false) => misses.checked_add(1).unwrap_or(PROBE_MISSES),
        _ => 0,
    };
    // Unchanged on loopback (0: every probe finds the connect done): `LocalKey::set` is not
    // a plain store (~17 instructions a connection, callgrind), `get` is.
    if next != misses {
        PROBE_MISSED.set(next);
    }
    answer
}

/// After this many connects in a row whose second connect() found the handshake still in
/// progress, [`start_connect`] makes it only every [`PROBE_EVERY`]th time.
#[cfg(unix)]
const PROBE_MISSES: u8 = 8;
#[cfg(unix)]
const PROBE_EVERY: u8 = 32;

#[cfg(unix)]
thread_local! {
    /// Connects in a row on this thread (capped, cycling from [`PROBE_MISSES`]) that
    /// [`start_connect`] found, or assumed, still in progress.
    static PROBE_MISSED: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A listener on loopback whose accept queue is full: it never accepts, so a further
    /// connect's SYN is dropped (Linux, `tcp_abort_on_overflow=0`, the default) and the connect
    /// stays in progress. `None` when this host answers anyway.
    async fn full_listener() -> Option<(socket2::Socket, SocketAddr, Vec<TcpStream>)> {
        let socket =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        socket
            .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
            .unwrap();
        socket.listen(1).unwrap();
        let addr = socket.local_addr().unwrap().as_socket().unwrap();
        let mut filler = Vec::new();
        let mut dropped = false;
        for _ in 0..4 {
            match tokio::time::timeout(Duration::from_millis(200), TcpStream::connect(addr)).await {
                Ok(Ok(s)) => filler.push(s),
                _ => dropped = true,
            }
        }
        if !dropped {
            eprintln!("a full accept queue still answers on this host: nothing to observe");
            return None;
        }
        Some((socket, addr, filler))
    }

    #[tokio::test]
    async fn a_loopback_connect_is_open_at_once_with_its_options() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let opts = ConnectOptions {
            local_addr: Some("127.0.0.2".parse().unwrap()),
            linger_reset: true,
            ..ConnectOptions::default()
        };
        let mut stream = connect_tcp(addr, &opts).await.unwrap();
        assert!(stream.nodelay().unwrap());
        assert_eq!(
            socket2::SockRef::from(&stream).linger().unwrap(),
            Some(Duration::ZERO)
        );
        assert_eq!(
            stream.local_addr().unwrap().ip(),
            "127.0.0.2".parse::<IpAddr>().unwrap()
        );
        assert_eq!(stream.peer_addr().unwrap(), addr);
        let (mut server, seen) = listener.accept().await.unwrap();
        assert_eq!(seen, stream.local_addr().unwrap());
        stream.write_all(b"ping").await.unwrap();
        let mut buf = [0; 4];
        server.read_exact(&mut buf).await.unwrap();
        server.write_all(b"pong").await.unwrap();
        stream.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"pong");

        let plain = connect_tcp(addr, &ConnectOptions::default()).await.unwrap();
        assert!(plain.nodelay().unwrap());
        assert_eq!(socket2::SockRef::from(&plain).linger().unwrap(), None);
    }

    #[tokio::test]
    async fn a_refused_connect_is_refused_with_or_without_a_deadline() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        for deadline in [
            None,
            Some(tokio::time::Instant::now() + Duration::from_secs(5)),
        ] {
            let opts = ConnectOptions {
                deadline,
                ..ConnectOptions::default()
            };
            let e = connect_tcp(addr, &opts).await.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ConnectRefused, "{e}");
            assert_eq!(
                e.io_error().and_then(|e| e.raw_os_error()),
                Some(libc::ECONNREFUSED),
                "{e}"
            );
        }
    }

    #[tokio::test]
    async fn an_unanswered_connect_times_out_at_the_deadline() {
        let Some((_listener, addr, _filler)) = full_listener().await else {
            return;
        };
        let started = Instant::now();
        let opts = ConnectOptions {
            deadline: Some(tokio::time::Instant::now() + Duration::from_millis(300)),
            ..ConnectOptions::default()
        };
        let e = connect_tcp(addr, &opts).await.unwrap_err();
        let took = started.elapsed();
        assert_eq!(e.kind(), ErrorKind::ConnectTimeout, "{e}");
        assert!(
            (Duration::from_millis(280)..Duration::from_secs(3)).contains(&took),
            "took {took:?}"
        );
    }

    #[tokio::test]
    async fn a_connect_done_only_after_a_past_deadline_is_a_timeout() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let opts = ConnectOptions {
            deadline: Some(tokio::time::Instant::now()),
            ..ConnectOptions::default()
        };
        let e = connect_tcp(listener.local_addr().unwrap(), &opts)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ConnectTimeout, "{e}");
    }

    /// After [`PROBE_MISSES`] connects in a row still in progress after the second
    /// connect(), the probe is made only every [`PROBE_EVERY`]th time; a connect then takes
    /// the usual wait and still opens. One found done starts the count over.
    #[tokio::test]
    async fn the_second_connect_backs_off_after_misses_and_resumes() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let socket = || TcpSocket::new_v4().unwrap();
        PROBE_MISSED.set(PROBE_MISSES + 1);
        assert!(!start_connect(&socket(), addr).unwrap(), "not probed");
        assert_eq!(PROBE_MISSED.get(), PROBE_MISSES + 2);
        // Not probed, so waited for: open all the same.
        PROBE_MISSED.set(PROBE_MISSES + 1);
        connect_tcp(addr, &ConnectOptions::default()).await.unwrap();
        // The probe's turn: done at once on loopback, and the count starts over.
        PROBE_MISSED.set(PROBE_EVERY);
        assert!(start_connect(&socket(), addr).unwrap(), "probed: open");
        assert_eq!(PROBE_MISSED.get(), 0);
        // The count cycles instead of stopping at its cap.
        PROBE_MISSED.set(u8::MAX);
        assert!(!start_connect(&socket(), addr).unwrap());
        assert_eq!(PROBE_MISSED.get(), PROBE_MISSES);
    }

    /// Every connect's future (TLS, HTTP/2, the throttled ones, the session's boxed ones)
    /// embeds this one: it is the wait's state and little more (measured: 352 B, of which
    /// `Connecting::finish` 304; 544 B with `start_tcp`'s result held across the await).
    #[test]
    fn the_connect_future_stays_small() {
        let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
        let opts = ConnectOptions::default();
        let size = std::mem::size_of_val(&connect_tcp(addr, &opts));
        println!("connect_tcp future: {size} B");
        assert!(size <= 400, "{size} B");
    }

    /// A handshake that is not done when connect() returns: the connect waits for it, and
    /// returns once the server has answered (here: the SYN retransmitted after ~1 s, once the
    /// accept queue has room), an open stream.
    #[tokio::test]
    async fn a_connect_still_in_progress_waits_for_the_handshake() {
        let Some((listener, addr, _filler)) = full_listener().await else {
            return;
        };
        let started = Instant::now();
        let connecting = tokio::spawn(async move {
            let r = connect_tcp(addr, &ConnectOptions::default()).await;
            (r, started.elapsed())
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(!connecting.is_finished(), "open while the SYN was dropped");
        // Room in the queue: accept what is waiting.
        listener.set_nonblocking(true).unwrap();
        let mut accepted = Vec::new();
        while let Ok((s, _)) = listener.accept() {
            accepted.push(s);
        }
        let (result, took) = tokio::time::timeout(Duration::from_secs(10), connecting)
            .await
            .expect("the retransmitted SYN was answered")
            .unwrap();
        let mut stream = result.unwrap();
        assert!(took >= Duration::from_millis(200), "took {took:?}");
        stream.write_all(b"x").await.unwrap();
    }
}
