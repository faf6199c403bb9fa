//! Why a request failed, as a small closed set of classes with plain-language hints.

use std::fmt;
use std::io;
use std::str::FromStr;

/// The class of a failed request. Counted per step; `as_str()` is the name used in the
/// result files, `hint()` the advice printed in the end-of-run summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureClass {
    /// The target refused the TCP connection (nothing listens there).
    ConnectRefused,
    /// The TCP handshake did not complete in time.
    ConnectTimeout,
    /// No local address/port was available for a new connection (EADDRNOTAVAIL).
    AddrNotAvailable,
    /// The peer reset the connection.
    Reset,
    /// No (complete) response within the request timeout.
    Timeout,
    /// The connection was closed before a complete response arrived.
    ClosedEarly,
    /// The response was not valid HTTP.
    BadResponse,
    /// Status 400..=499 (when the step has no `expect_status`).
    Http4xx,
    /// Status 500..=599 (when the step has no `expect_status`).
    Http5xx,
    /// Status not in the step's `expect_status`.
    UnexpectedStatus,
    /// Any other I/O error.
    Io,
    /// TLS: the server's certificate is not signed by a trusted CA.
    TlsCertificateUnknown,
    /// TLS: the server's certificate has expired (or is not yet valid).
    TlsCertificateExpired,
    /// TLS: the server's certificate does not name the target host.
    TlsNameMismatch,
    /// TLS: the server asked for a client certificate and none was configured.
    TlsClientCertificateRequired,
    /// TLS: the server rejected the client certificate.
    TlsClientCertificateRejected,
    /// TLS: no common protocol version or cipher suite, or a protocol error.
    TlsProtocol,
    /// TLS: the TCP connection was up but the handshake did not finish in time (a server short
    /// of CPU for handshakes, or no TLS on that port); told apart from `Timeout` so that a
    /// handshake bottleneck is not mistaken for slow responses.
    TlsHandshakeTimeout,
    /// Any other TLS failure.
    TlsOther,
    /// A check of the step failed (or an extractor without a default found nothing).
    CheckFailed,
    /// The request needed a runtime variable that had no value: it was not sent.
    VariableUnset,
    /// A request inside the group failed (groups only).
    GroupFailed,
    /// The connection carried bytes nobody asked for: more after the response (a second
    /// response to one request), or bytes that arrived while the connection sat idle between
    /// requests. HTTP/1.1 has no request ids, so such bytes would be taken as the answer to
    /// the next request: the connection is dropped instead and the request fails.
    UnsolicitedResponse,
    /// The request was still in flight when the run stopped (Ctrl-C, SIGTERM,
    /// `abort_on_fail`, `on_failure: stop_test`, or the end of `graceful_stop`): it has no
    /// outcome, and is counted so that the summary shows every request that was attempted.
    Interrupted,
    /// UDP: no reply datagram within the step's timeout (a datagram, or its reply, was lost,
    /// or the server did not answer). Its own class: on UDP a loss is an expected event to
    /// count, not a stalled connection.
    NoReply,
    /// Thrift: the server answered with an exception the method declares (`throws`); the
    /// exception's type name is the reply's `exception` header, its fields the JSON body.
    ThriftException,
    /// Thrift: the server answered with a `TApplicationException` (unknown method, wrong
    /// arguments, an internal error of the server's handler).
    ThriftApplicationException,
    /// A templated argument rendered to a value its type cannot hold (`abc` for an i32): the
    /// request was not sent.
    BadArgument,
    /// gRPC status 1 (`cancelled`).
    Cancelled,
    /// gRPC status 2 (`unknown`).
    Unknown,
    /// gRPC status 3 (`invalid_argument`).
    InvalidArgument,
    /// gRPC status 4 (`deadline_exceeded`).
    DeadlineExceeded,
    /// gRPC status 5 (`not_found`).
    NotFound,
    /// gRPC status 6 (`already_exists`).
    AlreadyExists,
    /// gRPC status 7 (`permission_denied`).
    PermissionDenied,
    /// gRPC status 8 (`resource_exhausted`).
    ResourceExhausted,
    /// gRPC status 9 (`failed_precondition`).
    FailedPrecondition,
    /// gRPC status 10 (`aborted`).
    Aborted,
    /// gRPC status 11 (`out_of_range`).
    OutOfRange,
    /// gRPC status 12 (`unimplemented`).
    Unimplemented,
    /// gRPC status 13 (`internal`).
    Internal,
    /// gRPC status 14 (`unavailable`).
    Unavailable,
    /// gRPC status 15 (`data_loss`).
    DataLoss,
    /// gRPC status 16 (`unauthenticated`).
    Unauthenticated,
}

impl FailureClass {
    /// Number of classes; `index()` is below this.
    pub const COUNT: usize = 44;

    /// Every class, in index order.
    pub const ALL: [FailureClass; FailureClass::COUNT] = [
        FailureClass::ConnectRefused,
        FailureClass::ConnectTimeout,
        FailureClass::AddrNotAvailable,
        FailureClass::Reset,
        FailureClass::Timeout,
        FailureClass::ClosedEarly,
        FailureClass::BadResponse,
        FailureClass::Http4xx,
        FailureClass::Http5xx,
        FailureClass::UnexpectedStatus,
        FailureClass::Io,
        FailureClass::TlsCertificateUnknown,
        FailureClass::TlsCertificateExpired,
        FailureClass::TlsNameMismatch,
        FailureClass::TlsClientCertificateRequired,
        FailureClass::TlsClientCertificateRejected,
        FailureClass::TlsProtocol,
        FailureClass::TlsHandshakeTimeout,
        FailureClass::TlsOther,
        FailureClass::CheckFailed,
        FailureClass::VariableUnset,
        FailureClass::GroupFailed,
        FailureClass::UnsolicitedResponse,
        FailureClass::Interrupted,
        FailureClass::NoReply,
        FailureClass::ThriftException,
        FailureClass::ThriftApplicationException,
        FailureClass::BadArgument,
        FailureClass::Cancelled,
        FailureClass::Unknown,
        FailureClass::InvalidArgument,
        FailureClass::DeadlineExceeded,
        FailureClass::NotFound,
        FailureClass::AlreadyExists,
        FailureClass::PermissionDenied,
        FailureClass::ResourceExhausted,
        FailureClass::FailedPrecondition,
        FailureClass::Aborted,
        FailureClass::OutOfRange,
        FailureClass::Unimplemented,
        FailureClass::Internal,
        FailureClass::Unavailable,
        FailureClass::DataLoss,
        FailureClass::Unauthenticated,
    ];

    /// The class of gRPC status `code` (1..=16; a code gRPC does not define is `unknown`, as
    /// gRPC clients read it). 0 is OK and has no class: `None`.
    pub fn grpc(code: u32) -> Option<FailureClass> {
        const FIRST: usize = FailureClass::Cancelled as usize;
        match code {
            0 => None,
            1..=16 => Some(FailureClass::ALL[FIRST + code as usize - 1]),
            _ => Some(FailureClass::Unknown),
        }
    }

    /// Dense index in `0..COUNT` (the position in [`FailureClass::ALL`]).
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }

    /// snake_case name used in `summary.json` and `intervals.jsonl`.
    pub fn as_str(&self) -> &'static str {
        match self {
            FailureClass::ConnectRefused => "connect_refused",
            FailureClass::ConnectTimeout => "connect_timeout",
            FailureClass::AddrNotAvailable => "addr_not_available",
            FailureClass::Reset => "reset",
            FailureClass::Timeout => "timeout",
            FailureClass::ClosedEarly => "closed_early",
            FailureClass::BadResponse => "bad_response",
            FailureClass::Http4xx => "http_4xx",
            FailureClass::Http5xx => "http_5xx",
            FailureClass::UnexpectedStatus => "unexpected_status",
            FailureClass::Io => "io",
            FailureClass::TlsCertificateUnknown => "tls_certificate_unknown",
            FailureClass::TlsCertificateExpired => "tls_certificate_expired",
            FailureClass::TlsNameMismatch => "tls_name_mismatch",
            FailureClass::TlsClientCertificateRequired => "tls_client_certificate_required",
            FailureClass::TlsClientCertificateRejected => "tls_client_certificate_rejected",
            FailureClass::TlsProtocol => "tls_protocol",
            FailureClass::TlsHandshakeTimeout => "tls_handshake_timeout",
            FailureClass::TlsOther => "tls_other",
            FailureClass::CheckFailed => "check_failed",
            FailureClass::VariableUnset => "variable_unset",
            FailureClass::GroupFailed => "group_failed",
            FailureClass::UnsolicitedResponse => "unsolicited_response",
            FailureClass::Interrupted => "interrupted",
            FailureClass::NoReply => "no_reply",
            FailureClass::ThriftException => "thrift_exception",
            FailureClass::ThriftApplicationException => "thrift_application_exception",
            FailureClass::BadArgument => "bad_argument",
            FailureClass::Cancelled => "cancelled",
            FailureClass::Unknown => "unknown",
            FailureClass::InvalidArgument => "invalid_argument",
            FailureClass::DeadlineExceeded => "deadline_exceeded",
            FailureClass::NotFound => "not_found",
            FailureClass::AlreadyExists => "already_exists",
            FailureClass::PermissionDenied => "permission_denied",
            FailureClass::ResourceExhausted => "resource_exhausted",
            FailureClass::FailedPrecondition => "failed_precondition",
            FailureClass::Aborted => "aborted",
            FailureClass::OutOfRange => "out_of_range",
            FailureClass::Unimplemented => "unimplemented",
            FailureClass::Internal => "internal",
            FailureClass::Unavailable => "unavailable",
            FailureClass::DataLoss => "data_loss",
            FailureClass::Unauthenticated => "unauthenticated",
        }
    }

    /// A plain-language explanation with the usual fixes.
    pub fn hint(&self) -> &'static str {
        match self {
            FailureClass::ConnectRefused => {
                "nothing listens on the target address: is the server up and the port right?"
            }
            FailureClass::ConnectTimeout => {
                "the TCP handshake did not finish in time: the server's accept queue may be full \
                 (raise its listen backlog and net.core.somaxconn), a firewall may drop SYNs, or \
                 the host is unreachable"
            }
            FailureClass::AddrNotAvailable => {
                "out of local ports: the client opens connections faster than TIME_WAIT frees \
                 them; widen net.ipv4.ip_local_port_range (e.g. 1024 65535), set \
                 net.ipv4.tcp_tw_reuse=1, or keep connections alive (http.connections: per_vu)"
            }
            FailureClass::Reset => {
                "the server reset the connection (RST): it crashed, hit its connection limit, or \
                 dropped idle keep-alive connections; check its logs and its max-connections and \
                 keep-alive settings"
            }
            FailureClass::Timeout => {
                "the target did not answer within http.timeout: it is overloaded or stuck; lower \
                 the load or raise http.timeout"
            }
            FailureClass::ClosedEarly => {
                "the server closed the connection before a complete response: often a keep-alive \
                 connection it had just closed as idle (its keep-alive timeout is shorter than the \
                 pause between requests), or a crash mid-response"
            }
            FailureClass::BadResponse => {
                "the response was not valid HTTP/1.1 (status line, headers or framing): is an \
                 HTTP/1.1 server really on that port (not TLS-only, not HTTP/2-only)? Over HTTP/2: \
                 the server broke the protocol, or flooded control frames (PING, SETTINGS) \
                 without reading the answers. For tcp and udp steps: the reply was longer than \
                 max_reply, or its length prefix was malformed"
            }
            FailureClass::Http4xx => {
                "the server rejected the request (4xx): check the step's path, method, headers, \
                 body and credentials; set expect_status if this status is intended"
            }
            FailureClass::Http5xx => {
                "the server failed (5xx): it is overloaded or erroring; check its logs and lower \
                 the rate to find its capacity"
            }
            FailureClass::UnexpectedStatus => {
                "the status was not one of the step's expect_status codes: see status codes below"
            }
            FailureClass::Io => {
                "a local I/O error, often too many open files: raise the limit (ulimit -n) or use \
                 fewer connections"
            }
            FailureClass::TlsCertificateUnknown => {
                "the server's certificate is not signed by a CA onrush trusts: set \
                 http.tls.ca_file to your CA's PEM, or http.tls.insecure: true for a test system \
                 (with onrush quick: --ca-file FILE, or -k)"
            }
            FailureClass::TlsCertificateExpired => {
                "the server's certificate has expired (or the clocks disagree)"
            }
            FailureClass::TlsNameMismatch => {
                "the certificate does not name the host you target: target the name it was \
                 issued for, or set http.tls.server_name"
            }
            FailureClass::TlsClientCertificateRequired => {
                "the server wants a client certificate: set http.tls.client_cert and client_key \
                 (or client_p12, identities, identities_dir)"
            }
            FailureClass::TlsClientCertificateRejected => {
                "the server rejected the client certificate: is it signed by a CA the server \
                 trusts?"
            }
            FailureClass::TlsProtocol => {
                "TLS versions or cipher suites do not match: check http.tls.versions and \
                 http.tls.ciphers; or, on a connection already up, the server (or a proxy between) \
                 sent bytes that are not valid TLS records"
            }
            FailureClass::TlsHandshakeTimeout => {
                "the TCP connection was up but the TLS handshake did not finish in time: the \
                 server is overloaded doing handshakes (full ones cost it the most CPU: \
                 http.tls.session resume or shared make fewer), or nothing speaks TLS on that \
                 port; raise http.timeout if the server is only slow"
            }
            FailureClass::TlsOther => {
                "the TLS handshake failed: check that the target really speaks TLS on this port"
            }
            FailureClass::CheckFailed => {
                "a response check failed or an extractor found nothing: see the checks table for which one; the response was not what the plan expects"
            }
            FailureClass::VariableUnset => {
                "a request used a variable that had no value (its extractor found nothing, or it is set by a later step); give the extractor a `default:` or fix its expression"
            }
            FailureClass::GroupFailed => "a request inside the group failed",
            FailureClass::UnsolicitedResponse => {
                "the server sent bytes nobody asked for on a keep-alive connection (a second \
                 response to one request, a body after a HEAD/204/304, or data while the \
                 connection was idle): it is broken or misconfigured (a proxy mixing up \
                 connections?); onrush dropped those connections rather than match the bytes \
                 to the next request"
            }
            FailureClass::Interrupted => {
                "the request was still waiting for its response when the run stopped (Ctrl-C, \
                 SIGTERM, abort_on_fail, stop_test, or the end of graceful_stop): its latency is \
                 how long it had waited; raise load.graceful_stop to let requests finish"
            }
            FailureClass::NoReply => {
                "no reply datagram came within the step's timeout: the request or its reply was \
                 lost (a full socket buffer on either side, a lossy network), or the server does \
                 not answer this request; raise the timeout if replies are only slow"
            }
            FailureClass::ThriftException => {
                "the Thrift server threw an exception the method declares: the service refused \
                 the call (its `exception` header names the type, the body holds its fields); \
                 check the arguments, or expect it with `on_failure: continue`"
            }
            FailureClass::ThriftApplicationException => {
                "the Thrift server answered with a TApplicationException: an unknown method \
                 (is `call:` right, and `multiplexed:` as the server expects?), arguments it \
                 could not read, or its handler failed; the body holds its message"
            }
            FailureClass::BadArgument => {
                "a templated argument rendered to a value its type cannot hold (e.g. `abc` for \
                 an i32, an enum name the IDL does not declare): fix the variable or its feeder"
            }
            FailureClass::Cancelled => "the server cancelled the call (CANCELLED)",
            FailureClass::Unknown => "the server failed with an unknown error (UNKNOWN): often an exception in its handler; check its logs",
            FailureClass::InvalidArgument => "the server rejected the request message (INVALID_ARGUMENT): check the step's message",
            FailureClass::DeadlineExceeded => "no answer within the call's deadline (DEADLINE_EXCEEDED, the step's timeout, sent as grpc-timeout): the server is slow or overloaded; raise the timeout or lower the load",
            FailureClass::NotFound => "the server found no such entity (NOT_FOUND): check the message's ids",
            FailureClass::AlreadyExists => "the entity already exists (ALREADY_EXISTS): use unique values (e.g. ${uuid()})",
            FailureClass::PermissionDenied => "the caller may not do this (PERMISSION_DENIED): check the metadata's credentials",
            FailureClass::ResourceExhausted => "the server ran out of a resource or rate-limited the call (RESOURCE_EXHAUSTED), or a message exceeded its size limit",
            FailureClass::FailedPrecondition => "the system is not in a state for this call (FAILED_PRECONDITION)",
            FailureClass::Aborted => "the call was aborted, often by a concurrency conflict (ABORTED)",
            FailureClass::OutOfRange => "a value was out of range (OUT_OF_RANGE)",
            FailureClass::Unimplemented => "the server does not implement this method (UNIMPLEMENTED): do its .proto and the plan's match?",
            FailureClass::Internal => "the server failed internally (INTERNAL): check its logs",
            FailureClass::Unavailable => "the service is unavailable (UNAVAILABLE): overloaded, shutting down or restarting; a retry may succeed",
            FailureClass::DataLoss => "unrecoverable data loss or corruption (DATA_LOSS)",
            FailureClass::Unauthenticated => "the call has no valid credentials (UNAUTHENTICATED): check the metadata (authorization)",
        }
    }

    /// The class for a response status when the step has no `expect_status`:
    /// 4xx and 5xx are failures, anything else is not.
    pub fn for_status(status: u16) -> Option<FailureClass> {
        match status {
            400..=499 => Some(FailureClass::Http4xx),
            500..=599 => Some(FailureClass::Http5xx),
            _ => None,
        }
    }

    /// The class of an I/O error; `connecting` tells whether it happened while opening the
    /// connection (a time-out there is `ConnectTimeout`, not `Timeout`).
    pub fn from_io_error(e: &io::Error, connecting: bool) -> FailureClass {
        use io::ErrorKind as K;
        match e.kind() {
            K::ConnectionRefused => FailureClass::ConnectRefused,
            K::AddrNotAvailable => FailureClass::AddrNotAvailable,
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => FailureClass::Reset,
            K::TimedOut | K::WouldBlock if connecting => FailureClass::ConnectTimeout,
            K::TimedOut => FailureClass::Timeout,
            K::UnexpectedEof => FailureClass::ClosedEarly,
            K::InvalidData => FailureClass::BadResponse,
            _ => FailureClass::Io,
        }
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error of [`FailureClass::from_str`]: the name is not one of the classes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown failure class {0:?}")]
pub struct UnknownFailureClass(pub String);

impl FromStr for FailureClass {
    type Err = UnknownFailureClass;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FailureClass::ALL
            .iter()
            .copied()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownFailureClass(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_indexes_are_dense() {
        for (i, c) in FailureClass::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
            assert_eq!(c.as_str().parse::<FailureClass>().unwrap(), *c);
            assert!(!c.hint().is_empty());
        }
        assert!("nope".parse::<FailureClass>().is_err());
        assert_eq!(FailureClass::ALL.len(), FailureClass::COUNT);
    }

    #[test]
    fn tls_class_names_round_trip() {
        let names = [
            (
                "tls_certificate_unknown",
                FailureClass::TlsCertificateUnknown,
            ),
            (
                "tls_certificate_expired",
                FailureClass::TlsCertificateExpired,
            ),
            ("tls_name_mismatch", FailureClass::TlsNameMismatch),
            (
                "tls_client_certificate_required",
                FailureClass::TlsClientCertificateRequired,
            ),
            (
                "tls_client_certificate_rejected",
                FailureClass::TlsClientCertificateRejected,
            ),
            ("tls_protocol", FailureClass::TlsProtocol),
            ("tls_handshake_timeout", FailureClass::TlsHandshakeTimeout),
            ("tls_other", FailureClass::TlsOther),
        ];
        for (name, class) in names {
            assert_eq!(name.parse::<FailureClass>().unwrap(), class);
            assert_eq!(class.to_string(), name);
            assert_eq!(FailureClass::ALL[class.index()], class);
            assert!(!class.hint().is_empty());
        }
        assert!(FailureClass::TlsCertificateUnknown
            .hint()
            .contains("http.tls.ca_file"));
    }

    #[test]
    fn io_errors_map_to_classes() {
        let e = io::Error::from(io::ErrorKind::AddrNotAvailable);
        assert_eq!(
            FailureClass::from_io_error(&e, true),
            FailureClass::AddrNotAvailable
        );
        let e = io::Error::from(io::ErrorKind::TimedOut);
        assert_eq!(
            FailureClass::from_io_error(&e, true),
            FailureClass::ConnectTimeout
        );
        assert_eq!(
            FailureClass::from_io_error(&e, false),
            FailureClass::Timeout
        );
        assert_eq!(FailureClass::for_status(503), Some(FailureClass::Http5xx));
        assert_eq!(FailureClass::for_status(302), None);
    }

    #[test]
    fn grpc_codes_name_their_class() {
        assert_eq!(FailureClass::grpc(0), None);
        assert_eq!(FailureClass::grpc(1), Some(FailureClass::Cancelled));
        assert_eq!(FailureClass::grpc(4), Some(FailureClass::DeadlineExceeded));
        assert_eq!(FailureClass::grpc(5).unwrap().as_str(), "not_found");
        assert_eq!(FailureClass::grpc(14).unwrap().as_str(), "unavailable");
        assert_eq!(FailureClass::grpc(16), Some(FailureClass::Unauthenticated));
        assert_eq!(FailureClass::grpc(99), Some(FailureClass::Unknown));
    }
}
