//! Errors of a connection, classified the way the engine reports failures.
//!
//! Messages are mostly `&'static str` so that a failure storm (a target that is down, a port
//! range exhausted) does not turn into an allocation storm in the load tool; only errors that
//! name a path or an address format a `String`.

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};

use crate::TlsFailure;

/// What went wrong, coarse enough to be counted per class in the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The target refused the TCP connection (ECONNREFUSED): nothing listens on that port.
    ConnectRefused,
    /// This machine ran out of local ports (EADDRNOTAVAIL from connect, EADDRINUSE from binding
    /// a source address), or the source address to bind is not one of this host's.
    AddrNotAvailable,
    /// Opening the connection did not finish by [`ConnectOptions::deadline`]: the TCP
    /// connect, or (with [`Error::tls_failure`] [`TlsFailure::HandshakeTimeout`]) the TLS
    /// handshake.
    ///
    /// [`ConnectOptions::deadline`]: crate::ConnectOptions::deadline
    ConnectTimeout,
    /// Any other failure to open the connection.
    ConnectOther,
    /// The peer reset the connection (ECONNRESET, EPIPE, ECONNABORTED).
    Reset,
    /// The peer closed the connection (EOF) before the response ended.
    ClosedEarly,
    /// The response violates HTTP/1.1 framing: unparseable head, bad chunk, head over 64 KiB.
    BadResponse,
    /// The server sent bytes no request asked for: more after a complete response, or data on
    /// an idle keep-alive connection. The connection can no longer be trusted to pair
    /// responses with requests.
    Unsolicited,
    /// Any other I/O failure, including a request that could not be sent as given (a body file
    /// that can't be read, a target containing CR/LF).
    Io,
}

/// An error of opening a connection ([`connect_tcp`](crate::connect_tcp), the TLS connects) or
/// of a request on it (onrush-http1's `Connection::send`, onrush-http2's `H2Connection::send`).
///
/// `Display` says what happened in plain words, including the OS error when there is one.
#[derive(Debug, thiserror::Error)]
#[error("{msg}{}", IoSuffix(.io.as_ref()))]
pub struct Error {
    kind: ErrorKind,
    stale: bool,
    msg: Cow<'static, str>,
    io: Option<io::Error>,
    tls: Option<TlsFailure>,
    /// A failure class the protocol crate registered and named (QUIC's, in onrush-http3),
    /// for failures none of [`ErrorKind`] describes.
    class: Option<&'static str>,
}

/// Appends ": <os error>" to the message when there is one. The io::Error is part of the
/// message rather than `source()` so that printing with `{}` alone is already complete.
struct IoSuffix<'a>(Option<&'a io::Error>);

impl fmt::Display for IoSuffix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(e) => write!(f, ": {e}"),
            None => Ok(()),
        }
    }
}

impl Error {
    /// The class of the failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// True when the connection had already carried a request (it was reused) and the peer
    /// closed or reset it before a single byte of this response arrived: the classic race
    /// with a server's keep-alive timeout. The request may not have been processed at all,
    /// so the caller may retry it once on a fresh connection.
    pub fn is_stale_reuse(&self) -> bool {
        self.stale
    }

    /// The underlying OS error, when the failure came from one.
    pub fn io_error(&self) -> Option<&io::Error> {
        self.io.as_ref()
    }

    /// An error of `kind` with a message (for the protocol crates; static messages don't
    /// allocate).
    pub fn new(kind: ErrorKind, msg: impl Into<Cow<'static, str>>) -> Self {
        Error {
            kind,
            stale: false,
            msg: msg.into(),
            io: None,
            tls: None,
            class: None,
        }
    }

    /// A response that violates the protocol's framing ([`ErrorKind::BadResponse`]).
    pub fn bad(msg: impl Into<Cow<'static, str>>) -> Self {
        Error::new(ErrorKind::BadResponse, msg)
    }

    /// The server sent bytes no request asked for ([`ErrorKind::Unsolicited`]).
    pub fn unsolicited(msg: impl Into<Cow<'static, str>>) -> Self {
        Error::new(ErrorKind::Unsolicited, msg)
    }

    /// The peer closed the connection before the response ended ([`ErrorKind::ClosedEarly`]).
    pub fn closed_early(msg: impl Into<Cow<'static, str>>) -> Self {
        Error::new(ErrorKind::ClosedEarly, msg)
    }

    /// An I/O error while connecting to `addr`, from source address `from` if one was bound.
    pub(crate) fn connect(e: io::Error, addr: SocketAddr, from: Option<IpAddr>) -> Self {
        let msg = match (e.kind(), from) {
            (io::ErrorKind::ConnectionRefused, _) => (
                ErrorKind::ConnectRefused,
                format!("connection refused connecting to {addr}"),
            ),
            // With a bound source address, connect() picks the port and fails with
            // EADDRNOTAVAIL when none is left for this 4-tuple (EADDRINUSE on kernels without
            // IP_BIND_ADDRESS_NO_PORT, where bind() picked a port the 4-tuple can't use).
            (io::ErrorKind::AddrNotAvailable | io::ErrorKind::AddrInUse, Some(ip)) => (
                ErrorKind::AddrNotAvailable,
                format!("out of local ports for source address {ip} connecting to {addr}"),
            ),
            (io::ErrorKind::AddrNotAvailable, None) => (
                ErrorKind::AddrNotAvailable,
                format!("no local address available (out of local ports?) connecting to {addr}"),
            ),
            // The server (or a middlebox between) answered the handshake with a reset: the
            // server's doing, not a local I/O error such as too many open files.
            (
                io::ErrorKind::ConnectionReset
                | io::ErrorKind::ConnectionAborted
                | io::ErrorKind::BrokenPipe,
                _,
            ) => (
                ErrorKind::Reset,
                format!("connection reset by the peer while connecting to {addr}"),
            ),
            (_, Some(ip)) => (
                ErrorKind::ConnectOther,
                format!("could not connect from {ip} to {addr}"),
            ),
            (_, None) => (
                ErrorKind::ConnectOther,
                format!("could not connect to {addr}"),
            ),
        };
        Error {
            kind: msg.0,
            stale: false,
            msg: Cow::Owned(msg.1),
            io: Some(e),
            tls: None,
            class: None,
        }
    }

    /// The TCP connect to `addr` was still running at the deadline.
    pub(crate) fn connect_timeout(addr: SocketAddr, from: Option<IpAddr>) -> Self {
        let msg = match from {
            Some(ip) => format!("connecting from {ip} to {addr} did not finish in time (the TCP handshake got no answer: the server's accept queue is full, a firewall drops SYNs, or the host is unreachable)"),
            None => format!("connecting to {addr} did not finish in time (the TCP handshake got no answer: the server's accept queue is full, a firewall drops SYNs, or the host is unreachable)"),
        };
        Error::new(ErrorKind::ConnectTimeout, msg)
    }

    /// An I/O error while binding source address `ip` (port 0) before connecting to `addr`.
    pub(crate) fn bind(e: io::Error, ip: IpAddr, addr: SocketAddr) -> Self {
        let (kind, msg) = match e.kind() {
            // Without IP_BIND_ADDRESS_NO_PORT (kernel < 4.2) bind() reserves a port per source
            // address and says EADDRINUSE when the range is used up.
            io::ErrorKind::AddrInUse => (
                ErrorKind::AddrNotAvailable,
                format!("out of local ports for source address {ip} connecting to {addr}"),
            ),
            io::ErrorKind::AddrNotAvailable => (
                ErrorKind::AddrNotAvailable,
                format!(
                    "source address {ip} is not an address of this host (binding it to connect \
                     to {addr})"
                ),
            ),
            _ => (
                ErrorKind::ConnectOther,
                format!("could not bind source address {ip} to connect to {addr}"),
            ),
        };
        Error {
            kind,
            stale: false,
            msg: Cow::Owned(msg),
            io: Some(e),
            tls: None,
            class: None,
        }
    }

    /// An I/O error on an open connection; `op` says what we were doing. Resets and broken
    /// pipes are classified as [`ErrorKind::Reset`], an unexpected EOF as
    /// [`ErrorKind::ClosedEarly`], a TLS alert inside as [`Error::tls_failure`] says.
    pub fn io(e: io::Error, op: IoOp) -> Self {
        let (kind, msg) = match e.kind() {
            // A file problem is never the server's fault, whatever its io kind.
            _ if op == IoOp::ReadingFile => (ErrorKind::Io, file_message(e.kind())),
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionAborted => (ErrorKind::Reset, reset_message(op)),
            io::ErrorKind::UnexpectedEof => (ErrorKind::ClosedEarly, closed_message(op)),
            _ => (ErrorKind::Io, io_message(op)),
        };
        // Only on this error path: a TLS alert or failure surfacing on an open connection
        // (with TLS 1.3, a server refusing the client certificate says so after the handshake).
        let tls = TlsFailure::from_io(&e);
        Error {
            kind,
            stale: false,
            msg: Cow::Borrowed(msg),
            io: Some(e),
            tls,
            class: None,
        }
    }

    /// Why TLS failed, when the failure was a TLS one: a failed handshake in
    /// [`connect_tls_stream`](crate::connect_tls_stream) (kind [`ErrorKind::ConnectOther`]), or a TLS alert
    /// on an open connection (with TLS 1.3, a refused client certificate is reported by the
    /// server only after the handshake, so it arrives with the first response). See
    /// [`TlsFailure::hint`] for what to do about it.
    pub fn tls_failure(&self) -> Option<TlsFailure> {
        self.tls
    }

    /// A TLS handshake with `addr` failed.
    pub(crate) fn tls_handshake(e: io::Error, addr: SocketAddr) -> Self {
        let failure = TlsFailure::from_io(&e).unwrap_or(TlsFailure::Other);
        let msg = match failure {
            // The likely fix first: the reader scans the start of the line.
            TlsFailure::NotTls => format!("{} (TLS handshake with {addr})", failure.hint()),
            _ => format!(
                "TLS handshake with {addr} failed ({failure:?}: {})",
                failure.hint()
            ),
        };
        Error {
            kind: ErrorKind::ConnectOther,
            stale: false,
            msg: Cow::Owned(msg),
            io: Some(e),
            tls: Some(failure),
            class: None,
        }
    }

    /// The TLS handshake with `addr` was still running at the deadline, `took` after it began.
    pub(crate) fn tls_handshake_timeout(addr: SocketAddr, took: std::time::Duration) -> Self {
        let failure = TlsFailure::HandshakeTimeout;
        Error {
            kind: ErrorKind::ConnectTimeout,
            stale: false,
            msg: Cow::Owned(format!(
                "TLS handshake with {addr} did not finish in time ({} ms after it began: {})",
                took.as_millis(),
                failure.hint()
            )),
            io: None,
            tls: Some(failure),
            class: None,
        }
    }

    /// A server name that is neither a DNS name nor an IP address.
    pub(crate) fn tls_name(name: &str) -> Self {
        Error {
            kind: ErrorKind::ConnectOther,
            stale: false,
            msg: Cow::Owned(format!("{name:?} is not a valid TLS server name")),
            io: None,
            tls: Some(TlsFailure::Other),
            class: None,
        }
    }

    /// An error of another protocol running over onrush's transports (HTTP/2): its kind and
    /// message, with the I/O error underneath when there is one (a TLS alert in it is
    /// classified as [`Error::tls_failure`] says, as on an HTTP/1.1 connection).
    pub fn protocol(
        kind: ErrorKind,
        msg: impl Into<Cow<'static, str>>,
        io: Option<io::Error>,
    ) -> Self {
        let tls = io.as_ref().and_then(TlsFailure::from_io);
        Error {
            kind,
            stale: false,
            msg: msg.into(),
            io,
            tls,
            class: None,
        }
    }

    /// An I/O error on an open connection of another protocol (HTTP/2), classified as on an
    /// HTTP/1.1 connection: resets, early EOFs, TLS alerts.
    pub fn transport(e: io::Error) -> Self {
        Error::io(e, IoOp::Reading)
    }

    /// Marks the error as the failure of a reused connection that the peer had already given
    /// up on (see [`Error::is_stale_reuse`]): the caller may retry once on a new connection.
    pub fn into_stale(mut self) -> Self {
        self.stale = true;
        self
    }

    /// Names the failure class of this error: one its protocol crate registered with
    /// `FailureClass::register_in` (onrush-http3's `quic_idle_timeout`, ...), which the engine
    /// counts instead of the class of [`Error::kind`].
    pub fn with_class(mut self, name: &'static str) -> Self {
        self.class = Some(name);
        self
    }

    /// The failure class named by [`Error::with_class`], if any.
    pub fn class_name(&self) -> Option<&'static str> {
        self.class
    }

    /// Says why TLS failed, for a transport that runs TLS itself (QUIC) and learns it from a
    /// TLS alert code.
    pub fn with_tls_failure(mut self, failure: TlsFailure) -> Self {
        self.tls = Some(failure);
        self
    }

    /// A request that can't be sent as given (the caller's input, not the network).
    pub fn invalid_request(msg: &'static str) -> Self {
        Error::new(ErrorKind::Io, msg)
    }
}

/// What the connection was doing when an I/O error happened (see [`Error::io`]); picks the
/// (static) message, and whether the failure can be the server's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoOp {
    /// Writing the request.
    Sending,
    /// Reading the response.
    Reading,
    /// Reading a request body file from disk: never the server's fault, whatever the error.
    ReadingFile,
}

fn file_message(kind: io::ErrorKind) -> &'static str {
    match kind {
        io::ErrorKind::UnexpectedEof => {
            "the request body file ended before its announced size (did it shrink?)"
        }
        _ => "could not read the request body file",
    }
}

fn reset_message(op: IoOp) -> &'static str {
    match op {
        IoOp::Reading => "the server reset the connection while the response was being read",
        _ => "the server reset the connection while the request was being sent",
    }
}

fn closed_message(op: IoOp) -> &'static str {
    match op {
        IoOp::Reading => "the connection closed before the response ended",
        _ => "the connection closed while the request was being sent",
    }
}

fn io_message(op: IoOp) -> &'static str {
    match op {
        IoOp::Reading => "I/O error while reading the response",
        _ => "I/O error while sending the request",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_io_errors() {
        let e = Error::io(
            io::Error::from(io::ErrorKind::ConnectionReset),
            IoOp::Reading,
        );
        assert_eq!(e.kind(), ErrorKind::Reset);
        let e = Error::io(io::Error::from(io::ErrorKind::BrokenPipe), IoOp::Sending);
        assert_eq!(e.kind(), ErrorKind::Reset);
        assert!(e
            .to_string()
            .starts_with("the server reset the connection while the request"));
        let e = Error::io(io::Error::from(io::ErrorKind::UnexpectedEof), IoOp::Reading);
        assert_eq!(e.kind(), ErrorKind::ClosedEarly);
        let e = Error::io(
            io::Error::from(io::ErrorKind::PermissionDenied),
            IoOp::Reading,
        );
        assert_eq!(e.kind(), ErrorKind::Io);
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let e = Error::connect(
            io::Error::from(io::ErrorKind::ConnectionRefused),
            addr,
            None,
        );
        assert_eq!(e.kind(), ErrorKind::ConnectRefused);
        assert!(e
            .to_string()
            .starts_with("connection refused connecting to 127.0.0.1:1: "));
        let e = Error::connect(
            io::Error::from_raw_os_error(libc::EADDRNOTAVAIL),
            addr,
            None,
        );
        assert_eq!(e.kind(), ErrorKind::AddrNotAvailable);
        assert!(!e.is_stale_reuse());
    }

    #[test]
    fn a_reset_while_connecting_is_a_reset_not_a_local_io_error() {
        // It was `ConnectOther`, so classed `io` with the hint "too many open files".
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        for errno in [libc::ECONNRESET, libc::ECONNABORTED, libc::EPIPE] {
            let e = Error::connect(io::Error::from_raw_os_error(errno), addr, None);
            assert_eq!(e.kind(), ErrorKind::Reset, "errno {errno}");
            assert!(
                e.to_string()
                    .starts_with("connection reset by the peer while connecting to 127.0.0.1:1"),
                "{e}"
            );
        }
        let e = Error::connect(io::Error::from_raw_os_error(libc::EMFILE), addr, None);
        assert_eq!(e.kind(), ErrorKind::ConnectOther);
    }

    #[test]
    fn kinds_with_a_source_address() {
        let addr: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let ip: IpAddr = "127.0.0.7".parse().unwrap();
        // Out of ports at bind() (kernels without IP_BIND_ADDRESS_NO_PORT).
        let e = Error::bind(io::Error::from_raw_os_error(libc::EADDRINUSE), ip, addr);
        assert_eq!(e.kind(), ErrorKind::AddrNotAvailable);
        assert!(e.to_string().starts_with(
            "out of local ports for source address 127.0.0.7 connecting to 127.0.0.1:80: "
        ));
        // An address that isn't this host's.
        let e = Error::bind(io::Error::from_raw_os_error(libc::EADDRNOTAVAIL), ip, addr);
        assert_eq!(e.kind(), ErrorKind::AddrNotAvailable);
        assert!(e.to_string().contains("not an address of this host"), "{e}");
        let e = Error::bind(io::Error::from_raw_os_error(libc::EACCES), ip, addr);
        assert_eq!(e.kind(), ErrorKind::ConnectOther);
        // Out of ports at connect() for the 4-tuple.
        for errno in [libc::EADDRNOTAVAIL, libc::EADDRINUSE] {
            let e = Error::connect(io::Error::from_raw_os_error(errno), addr, Some(ip));
            assert_eq!(e.kind(), ErrorKind::AddrNotAvailable);
            assert!(e
                .to_string()
                .starts_with("out of local ports for source address 127.0.0.7"));
        }
        let e = Error::connect(
            io::Error::from(io::ErrorKind::ConnectionRefused),
            addr,
            Some(ip),
        );
        assert_eq!(e.kind(), ErrorKind::ConnectRefused);
    }
}
