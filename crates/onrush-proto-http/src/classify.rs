//! Failure classes of an HTTP request: from the status (or the plan's `expect_status`) and from
//! the client's errors.

use onrush_http1::{self as http1, ErrorKind, TlsFailure};
use onrush_protocol::{failure_examples, FailureClass};

/// The failure class of a response's status: `expect_status` when given, else 4xx and 5xx.
pub(crate) fn status_failure(status: u16, expected: &Option<Vec<u16>>) -> Option<FailureClass> {
    match expected {
        Some(list) if list.contains(&status) => None,
        Some(_) => Some(FailureClass::UnexpectedStatus),
        None if status >= 500 => Some(FailureClass::Http5xx),
        None if status >= 400 => Some(FailureClass::Http4xx),
        None => None,
    }
}

/// The failure class of a client error (connect, TLS, framing, I/O); the error's message is
/// kept as this worker's example of its class (the parse reason of a `bad_response`).
pub fn classify(error: &http1::Error) -> FailureClass {
    let class = class_of(error);
    failure_examples::note(class, || error.to_string());
    class
}

fn class_of(error: &http1::Error) -> FailureClass {
    if let Some(tls) = error.tls_failure() {
        return match tls {
            TlsFailure::CertificateUnknown => FailureClass::TlsCertificateUnknown,
            TlsFailure::CertificateExpired => FailureClass::TlsCertificateExpired,
            TlsFailure::NameMismatch => FailureClass::TlsNameMismatch,
            TlsFailure::ClientCertificateRequired => FailureClass::TlsClientCertificateRequired,
            TlsFailure::ClientCertificateRejected => FailureClass::TlsClientCertificateRejected,
            TlsFailure::Protocol | TlsFailure::NotTls => FailureClass::TlsProtocol,
            TlsFailure::HandshakeTimeout => FailureClass::TlsHandshakeTimeout,
            TlsFailure::Other => FailureClass::TlsOther,
        };
    }
    // A class the transport's crate registered (QUIC's): more precise than the kind.
    if let Some(class) = error.class_name().and_then(FailureClass::named) {
        return class;
    }
    match error.kind() {
        ErrorKind::ConnectRefused => FailureClass::ConnectRefused,
        ErrorKind::ConnectTimeout => FailureClass::ConnectTimeout,
        ErrorKind::AddrNotAvailable => FailureClass::AddrNotAvailable,
        ErrorKind::Reset => FailureClass::Reset,
        ErrorKind::ClosedEarly => FailureClass::ClosedEarly,
        ErrorKind::BadResponse => FailureClass::BadResponse,
        ErrorKind::Unsolicited => FailureClass::UnsolicitedResponse,
        ErrorKind::ConnectOther | ErrorKind::Io => FailureClass::Io,
    }
}
