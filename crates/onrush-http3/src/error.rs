//! quinn's and h3's errors as onrush-http [`Error`]s: kinds as over TCP where one fits (reset,
//! closed early, TLS failures by alert), and QUIC's own classes ([`crate::classes`]) named on
//! the error where none does.

use std::net::SocketAddr;
use std::time::Duration;

use onrush_http::{Error, ErrorKind, TlsFailure};
use quinn::{ConnectionError, TransportErrorCode};

use crate::classes;

/// Where a request was when QUIC or HTTP/3 failed: before its stream was opened, a failure of
/// the connection means a reused connection had gone away (retry on a new one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    Handshake,
    Opening,
    Exchanging,
}

/// quinn refused to start a connection.
pub(crate) fn connect_error(e: quinn::ConnectError, addr: SocketAddr, name: &str) -> Error {
    match e {
        quinn::ConnectError::InvalidServerName(_) => Error::new(
            ErrorKind::ConnectOther,
            format!("{name:?} is not a valid TLS server name"),
        )
        .with_tls_failure(TlsFailure::Other),
        e => Error::new(
            ErrorKind::ConnectOther,
            format!("could not start a QUIC connection to {addr}: {e}"),
        ),
    }
}

/// The QUIC handshake was still running at the deadline.
pub(crate) fn handshake_timeout(addr: SocketAddr, took: Duration) -> Error {
    Error::new(
        ErrorKind::ConnectTimeout,
        format!(
            "the QUIC handshake with {addr} did not finish in time ({} ms after it began): \
             nothing answers QUIC on that UDP port, or the server is too busy",
            took.as_millis()
        ),
    )
    .with_class(classes::HANDSHAKE_TIMEOUT)
}

/// A QUIC connection's failure.
pub(crate) fn connection_error(e: ConnectionError, stage: Stage, addr: SocketAddr) -> Error {
    let during = match stage {
        Stage::Handshake => "during the QUIC handshake",
        Stage::Opening | Stage::Exchanging => "on the QUIC connection",
    };
    let err = match &e {
        ConnectionError::VersionMismatch => Error::new(
            ErrorKind::ConnectOther,
            format!("{addr} speaks no QUIC version onrush does (version negotiation failed)"),
        )
        .with_class(classes::VERSION_NEGOTIATION),
        ConnectionError::TimedOut if stage == Stage::Handshake => Error::new(
            ErrorKind::ConnectTimeout,
            format!(
                "the QUIC handshake with {addr} got no answer within the idle timeout: nothing \
                 answers QUIC on that UDP port, or UDP is blocked"
            ),
        )
        .with_class(classes::HANDSHAKE_TIMEOUT),
        ConnectionError::TimedOut => Error::new(
            ErrorKind::ClosedEarly,
            format!("no packet from {addr} for the QUIC idle timeout"),
        )
        .with_class(classes::IDLE_TIMEOUT),
        ConnectionError::Reset => Error::new(
            ErrorKind::Reset,
            format!("{addr} answered with a QUIC stateless reset {during}"),
        )
        .with_class(classes::STATELESS_RESET),
        ConnectionError::TransportError(t) => {
            transport_close(u64::from(t.code), &t.reason, addr, during, "onrush")
        }
        ConnectionError::ConnectionClosed(c) => transport_close(
            u64::from(c.error_code),
            &String::from_utf8_lossy(&c.reason),
            addr,
            during,
            "the server",
        ),
        ConnectionError::ApplicationClosed(c) => {
            let code = c.error_code.into_inner();
            Error::new(
                ErrorKind::ClosedEarly,
                format!(
                    "the server closed the HTTP/3 connection {during} ({}{})",
                    h3::error::Code::from(code),
                    reason_suffix(&String::from_utf8_lossy(&c.reason))
                ),
            )
            .with_class(classes::h3_code(code))
        }
        ConnectionError::LocallyClosed => {
            Error::closed_early("the QUIC connection was closed by onrush")
        }
        ConnectionError::CidsExhausted => Error::new(
            ErrorKind::ConnectOther,
            "quinn ran out of QUIC connection IDs",
        ),
    };
    // A reused connection that went away before this request's stream opened: retry once.
    if stage == Stage::Opening {
        err.into_stale()
    } else {
        err
    }
}

fn reason_suffix(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    }
}

/// A QUIC CONNECTION_CLOSE with transport error `code`, sent by `by` (`onrush` when quinn
/// detected the error, `the server`).
fn transport_close(code: u64, reason: &str, addr: SocketAddr, during: &str, by: &str) -> Error {
    // 0x100 to 0x1ff: a TLS alert (RFC 9001 §4.8).
    if (0x100..=0x1ff).contains(&code) {
        let alert = (code - 0x100) as u8;
        // no_application_protocol (RFC 9001 §8.1), or handshake_failure saying so (aioquic).
        if alert == 120 || (alert == 40 && reason.contains("ALPN")) {
            return Error::new(
                ErrorKind::ConnectOther,
                format!(
                    "{addr} does not offer HTTP/3: its QUIC handshake ended with TLS alert \
                     no_application_protocol (no ALPN h3 in common){}",
                    reason_suffix(reason)
                ),
            )
            .with_class(classes::NO_H3);
        }
        let failure = tls_failure(alert, reason);
        return Error::new(
            ErrorKind::ConnectOther,
            format!(
                "TLS inside QUIC with {addr} failed ({failure:?}, alert {alert} sent by {by}{}: {})",
                reason_suffix(reason),
                failure.hint()
            ),
        )
        .with_tls_failure(failure);
    }
    let name = format!("transport error code {code:#x}");
    if code == u64::from(TransportErrorCode::CONNECTION_REFUSED) {
        return Error::new(
            ErrorKind::ConnectRefused,
            format!(
                "{addr} refused the QUIC connection {during} (CONNECTION_REFUSED){}",
                reason_suffix(reason)
            ),
        )
        .with_class(classes::REFUSED);
    }
    Error::new(
        ErrorKind::BadResponse,
        format!(
            "QUIC transport error {during} with {addr}, closed by {by} ({name}{})",
            reason_suffix(reason)
        ),
    )
    .with_class(classes::TRANSPORT_ERROR)
}

/// The TLS failure a TLS alert says (rustls sends `bad_certificate` for a name mismatch, which
/// only its reason tells apart).
fn tls_failure(alert: u8, reason: &str) -> TlsFailure {
    match alert {
        48 => TlsFailure::CertificateUnknown,
        45 => TlsFailure::CertificateExpired,
        42 if reason.contains("NotValidForName") => TlsFailure::NameMismatch,
        42 if reason.contains("UnknownIssuer") => TlsFailure::CertificateUnknown,
        42 if reason.contains("Expired") => TlsFailure::CertificateExpired,
        116 => TlsFailure::ClientCertificateRequired,
        42 | 43 | 44 | 46 => TlsFailure::ClientCertificateRejected,
        40 | 47 | 50 | 51 | 70 | 71 | 109 | 110 => TlsFailure::Protocol,
        _ => TlsFailure::Other,
    }
}

/// An h3 connection-level failure: what QUIC says when the QUIC connection is closed.
pub(crate) fn h3_connection_error(
    e: h3::error::ConnectionError,
    quic: &quinn::Connection,
    stage: Stage,
    addr: SocketAddr,
) -> Error {
    if let Some(reason) = quic.close_reason() {
        return connection_error(reason, stage, addr);
    }
    Error::new(
        ErrorKind::BadResponse,
        format!("HTTP/3 connection error: {e}"),
    )
}

/// An h3 stream failure.
pub(crate) fn stream_error(
    e: h3::error::StreamError,
    quic: &quinn::Connection,
    stage: Stage,
) -> Error {
    use h3::error::StreamError as S;
    let addr = quic.remote_address();
    match e {
        S::RemoteTerminate { code, .. } => {
            let err = Error::new(
                ErrorKind::Reset,
                format!("the server reset the HTTP/3 stream ({code})"),
            )
            .with_class(classes::h3_code(code.value()));
            // H3_REQUEST_REJECTED: the server did not process it, so trying again is safe.
            if code == h3::error::Code::H3_REQUEST_REJECTED {
                err.into_stale()
            } else {
                err
            }
        }
        S::HeaderTooBig {
            actual_size,
            max_size,
            ..
        } => Error::new(
            ErrorKind::Io,
            format!(
                "the request's header section ({actual_size} bytes) is over the server's \
                 SETTINGS_MAX_FIELD_SECTION_SIZE ({max_size})"
            ),
        ),
        e => match quic.close_reason() {
            Some(reason) => connection_error(reason, stage, addr),
            None => match e {
                S::StreamError { code, reason, .. } => Error::new(
                    ErrorKind::BadResponse,
                    format!("HTTP/3 stream error ({code}): {reason}"),
                )
                .with_class(classes::h3_code(code.value())),
                // The server's GOAWAY (h3 keeps that variant private): the connection takes no
                // new stream; before this one opened, a retry on a new connection is safe.
                e => {
                    let err = Error::closed_early(format!("HTTP/3: {e}"));
                    if stage == Stage::Opening {
                        err.into_stale()
                    } else {
                        err
                    }
                }
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr() -> SocketAddr {
        "127.0.0.1:4433".parse().unwrap()
    }

    #[test]
    fn quic_failures_name_their_classes() {
        let idle = connection_error(ConnectionError::TimedOut, Stage::Exchanging, addr());
        assert_eq!(idle.class_name(), Some(classes::IDLE_TIMEOUT));
        let hs = connection_error(ConnectionError::TimedOut, Stage::Handshake, addr());
        assert_eq!(hs.class_name(), Some(classes::HANDSHAKE_TIMEOUT));
        let reset = connection_error(ConnectionError::Reset, Stage::Opening, addr());
        assert_eq!(reset.class_name(), Some(classes::STATELESS_RESET));
        assert!(reset.is_stale_reuse());
        let vn = connection_error(ConnectionError::VersionMismatch, Stage::Handshake, addr());
        assert_eq!(vn.class_name(), Some(classes::VERSION_NEGOTIATION));
    }

    #[test]
    fn tls_alerts_inside_quic_are_tls_failures_and_no_alpn_is_no_h3() {
        let no_h3 = transport_close(0x100 + 120, "", addr(), "during", "the server");
        assert_eq!(no_h3.class_name(), Some(classes::NO_H3));
        assert!(no_h3.to_string().contains("does not offer HTTP/3"));
        let unknown_ca = transport_close(0x100 + 48, "", addr(), "during", "onrush");
        assert_eq!(
            unknown_ca.tls_failure(),
            Some(TlsFailure::CertificateUnknown)
        );
        let refused = transport_close(0x2, "busy", addr(), "during", "the server");
        assert_eq!(refused.class_name(), Some(classes::REFUSED));
        let other = transport_close(0xa, "", addr(), "during", "the server");
        assert_eq!(other.class_name(), Some(classes::TRANSPORT_ERROR));
    }
}
