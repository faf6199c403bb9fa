//! Why a request failed: a class per failure, named in the result files and explained by a
//! plain-language hint in the summary and the report.
//!
//! The classes are open. onrush's own are constants (`FailureClass::Timeout`); a protocol that
//! onrush does not ship registers its own by name when its crate prepares a plan
//! ([`FailureClass::register`]), and a results reader meeting a name it does not know (a file
//! written by another build) registers it too ([`FailureClass::named_or_register`]). A class
//! is a one-byte index either way: a request's failure is counted in a fixed array of
//! [`FailureClass::CAPACITY`] counters, with no lookup on the hot path.

use std::fmt;
use std::io;
use std::str::FromStr;
use std::sync::RwLock;

/// The class of a failed request. Counted per step; `as_str()` is the name used in the
/// result files, `hint()` the advice printed in the end-of-run summary.
///
/// onrush's own classes are the associated constants (`FailureClass::ConnectRefused`, ...:
/// written like the enum variants they were, so that `match` arms and paths read the same).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FailureClass(u8);

/// Declares onrush's own classes: a constant, a name and a hint each, in index order.
macro_rules! builtin_classes {
    ($( $(#[$doc:meta])* $variant:ident = $index:literal, $name:literal, $hint:expr; )*) => {
        #[allow(non_upper_case_globals)]
        impl FailureClass {
            $( $(#[$doc])* pub const $variant: FailureClass = FailureClass($index); )*
        }

        /// Name and hint of each of onrush's own classes, by index.
        const BUILTIN: &[(&str, &str)] = &[$( ($name, $hint), )*];
    };
}

builtin_classes! {
    /// The target refused the TCP connection (nothing listens there).
    ConnectRefused = 0, "connect_refused",
        "nothing listens on the target address: is the server up and the port right?";
    /// The TCP handshake did not complete in time.
    ConnectTimeout = 1, "connect_timeout",
        "the TCP handshake did not finish in time: the server's accept queue may be full \
                 (raise its listen backlog and net.core.somaxconn), a firewall may drop SYNs, or \
                 the host is unreachable";
    /// No local address/port was available for a new connection (EADDRNOTAVAIL).
    AddrNotAvailable = 2, "addr_not_available",
        "out of local ports: the client opens connections faster than TIME_WAIT frees \
                 them; widen net.ipv4.ip_local_port_range (e.g. 1024 65535), set \
                 net.ipv4.tcp_tw_reuse=1, or keep connections alive (http.connections: per_vu)";
    /// The peer reset the connection.
    Reset = 3, "reset",
        "the server reset the connection (RST): it crashed, hit its connection limit, or \
                 dropped idle keep-alive connections; check its logs and its max-connections and \
                 keep-alive settings";
    /// No (complete) response within the request timeout.
    Timeout = 4, "timeout",
        "the target did not answer within http.timeout: it is overloaded or stuck; lower \
                 the load or raise http.timeout";
    /// The connection was closed before a complete response arrived.
    ClosedEarly = 5, "closed_early",
        "the server closed the connection before a complete response: often a keep-alive \
                 connection it had just closed as idle (its keep-alive timeout is shorter than the \
                 pause between requests), or a crash mid-response";
    /// The response was not valid HTTP.
    BadResponse = 6, "bad_response",
        "the response was not valid HTTP/1.1 (status line, headers or framing): is an \
                 HTTP/1.1 server really on that port (not TLS-only, not HTTP/2-only)? Over HTTP/2: \
                 the server broke the protocol, or flooded control frames (PING, SETTINGS) \
                 without reading the answers. For tcp and udp steps: the reply was longer than \
                 max_reply, or its length prefix was malformed";
    /// Status 400..=499 (when the step has no `expect_status`).
    Http4xx = 7, "http_4xx",
        "the server rejected the request (4xx): check the step's path, method, headers, \
                 body and credentials; set expect_status if this status is intended";
    /// Status 500..=599 (when the step has no `expect_status`).
    Http5xx = 8, "http_5xx",
        "the server failed (5xx): it is overloaded or erroring; check its logs and lower \
                 the rate to find its capacity";
    /// Status not in the step's `expect_status`.
    UnexpectedStatus = 9, "unexpected_status",
        "the status was not one of the step's expect_status codes: see status codes below";
    /// Any other I/O error.
    Io = 10, "io",
        "a local I/O error, often too many open files: raise the limit (ulimit -n) or use \
                 fewer connections";
    /// TLS: the server's certificate is not signed by a trusted CA.
    TlsCertificateUnknown = 11, "tls_certificate_unknown",
        "the server's certificate is not signed by a CA onrush trusts: set \
                 http.tls.ca_file to your CA's PEM, or http.tls.insecure: true for a test system \
                 (with onrush quick: --ca-file FILE, or -k)";
    /// TLS: the server's certificate has expired (or is not yet valid).
    TlsCertificateExpired = 12, "tls_certificate_expired",
        "the server's certificate has expired (or the clocks disagree)";
    /// TLS: the server's certificate does not name the target host.
    TlsNameMismatch = 13, "tls_name_mismatch",
        "the certificate does not name the host you target: target the name it was \
                 issued for, or set http.tls.server_name";
    /// TLS: the server asked for a client certificate and none was configured.
    TlsClientCertificateRequired = 14, "tls_client_certificate_required",
        "the server wants a client certificate: set http.tls.client_cert and client_key \
                 (or client_p12, identities, identities_dir)";
    /// TLS: the server rejected the client certificate.
    TlsClientCertificateRejected = 15, "tls_client_certificate_rejected",
        "the server rejected the client certificate: is it signed by a CA the server \
                 trusts?";
    /// TLS: no common protocol version or cipher suite, or a protocol error.
    TlsProtocol = 16, "tls_protocol",
        "TLS versions or cipher suites do not match: check http.tls.versions and \
                 http.tls.ciphers; or, on a connection already up, the server (or a proxy between) \
                 sent bytes that are not valid TLS records";
    /// TLS: the TCP connection was up but the handshake did not finish in time (a server short
    /// of CPU for handshakes, or no TLS on that port); told apart from `Timeout` so that a
    /// handshake bottleneck is not mistaken for slow responses.
    TlsHandshakeTimeout = 17, "tls_handshake_timeout",
        "the TCP connection was up but the TLS handshake did not finish in time: the \
                 server is overloaded doing handshakes (full ones cost it the most CPU: \
                 http.tls.session resume or shared make fewer), or nothing speaks TLS on that \
                 port; raise http.timeout if the server is only slow";
    /// Any other TLS failure.
    TlsOther = 18, "tls_other",
        "the TLS handshake failed: check that the target really speaks TLS on this port";
    /// A check of the step failed (or an extractor without a default found nothing).
    CheckFailed = 19, "check_failed",
        "a response check failed or an extractor found nothing: see the checks table for which one; the response was not what the plan expects";
    /// The request needed a runtime variable that had no value: it was not sent.
    VariableUnset = 20, "variable_unset",
        "a request used a variable that had no value (its extractor found nothing, or it is set by a later step); give the extractor a `default:` or fix its expression";
    /// A request inside the group failed (groups only).
    GroupFailed = 21, "group_failed",
        "a request inside the group failed";
    /// The connection carried bytes nobody asked for: more after the response (a second
    /// response to one request), or bytes that arrived while the connection sat idle between
    /// requests. HTTP/1.1 has no request ids, so such bytes would be taken as the answer to
    /// the next request: the connection is dropped instead and the request fails.
    UnsolicitedResponse = 22, "unsolicited_response",
        "the server sent bytes nobody asked for on a keep-alive connection (a second \
                 response to one request, a body after a HEAD/204/304, or data while the \
                 connection was idle): it is broken or misconfigured (a proxy mixing up \
                 connections?); onrush dropped those connections rather than match the bytes \
                 to the next request";
    /// The request was still in flight when the run stopped (Ctrl-C, SIGTERM,
    /// `abort_on_fail`, `on_failure: stop_test`, or the end of `graceful_stop`): it has no
    /// outcome, and is counted so that the summary shows every request that was attempted.
    Interrupted = 23, "interrupted",
        "the request was still waiting for its response when the run stopped (Ctrl-C, \
                 SIGTERM, abort_on_fail, stop_test, or the end of graceful_stop): its latency is \
                 how long it had waited; raise load.graceful_stop to let requests finish";
    /// A templated argument rendered to a value its type cannot hold (`abc` for an i32): the
    /// request was not sent.
    BadArgument = 24, "bad_argument",
        "a templated argument rendered to a value its type cannot hold (e.g. `abc` for \
                 an i32, an enum name the IDL does not declare): fix the variable or its feeder";
}

/// The classes registered at run time (by protocols onrush does not ship, or read from files),
/// after onrush's own: index `BUILTIN.len() + i` is `REGISTERED[i]`. Names and hints are
/// leaked: at most `CAPACITY` of them live for the whole process anyway.
static REGISTERED: RwLock<Vec<(&'static str, &'static str)>> = RwLock::new(Vec::new());

fn registered() -> std::sync::RwLockReadGuard<'static, Vec<(&'static str, &'static str)>> {
    // A panic while registering leaves a consistent vector (one push): poison is no harm.
    REGISTERED.read().unwrap_or_else(|e| e.into_inner())
}

/// Why [`FailureClass::register`] refused a class.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    #[error(
        "failure class name {0:?} is not lower-case snake case (a-z, 0-9, `_`, at most 48 \
         characters, starting with a letter): results files and thresholds name it"
    )]
    BadName(String),
    #[error(
        "cannot register failure class {0:?}: all {cap} failure classes are taken (onrush's \
         own and the registered ones)",
        cap = FailureClass::CAPACITY
    )]
    Full(String),
}

/// Appends a new class to the registered ones, unless every slot is taken.
fn push_class(
    extra: &mut Vec<(&'static str, &'static str)>,
    name: &str,
    hint: &str,
) -> Result<FailureClass, RegisterError> {
    let index = BUILTIN.len() + extra.len();
    if index >= FailureClass::CAPACITY {
        return Err(RegisterError::Full(name.to_string()));
    }
    let name: &'static str = Box::leak(name.to_string().into_boxed_str());
    let hint: &'static str = Box::leak(hint.to_string().into_boxed_str());
    extra.push((name, hint));
    Ok(FailureClass(index as u8))
}

impl FailureClass {
    /// How many classes a process can know: onrush's own and registered ones. Per-step
    /// counters are arrays of this size.
    pub const CAPACITY: usize = 128;

    /// How many of onrush's own classes there are (the first indexes).
    pub const BUILTIN_COUNT: usize = BUILTIN.len();

    /// Every class known now (onrush's own, then the registered ones), in index order.
    pub fn all() -> impl Iterator<Item = FailureClass> {
        (0..FailureClass::count()).map(|i| FailureClass(i as u8))
    }

    /// How many classes are known now.
    pub fn count() -> usize {
        BUILTIN.len() + registered().len()
    }

    /// The class called `name`, if one is known.
    pub fn named(name: &str) -> Option<FailureClass> {
        if let Some(i) = BUILTIN.iter().position(|(n, _)| *n == name) {
            return Some(FailureClass(i as u8));
        }
        let extra = registered();
        extra
            .iter()
            .position(|(n, _)| *n == name)
            .map(|i| FailureClass((BUILTIN.len() + i) as u8))
    }

    /// Registers a class of a protocol onrush does not ship (`redis_wrongtype`), with the
    /// hint the summary and the report print for it. Registering a known name returns the
    /// known class (its hint unchanged), so a protocol may register at every plan it prepares.
    pub fn register(name: &str, hint: &str) -> Result<FailureClass, RegisterError> {
        let valid = !name.is_empty()
            && name.len() <= 48
            && name.as_bytes()[0].is_ascii_lowercase()
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid {
            return Err(RegisterError::BadName(name.to_string()));
        }
        if let Some(known) = FailureClass::named(name) {
            return Ok(known);
        }
        let mut extra = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
        // Another thread may have registered it between the look-up and the lock.
        if let Some(i) = extra.iter().position(|(n, _)| *n == name) {
            return Ok(FailureClass((BUILTIN.len() + i) as u8));
        }
        push_class(&mut extra, name, hint)
    }

    /// The class called `name`, registered without a hint if this process does not know it
    /// (a results file written by a build with more protocols). `None` only for a name that
    /// cannot be a class, or when every slot is taken.
    pub fn named_or_register(name: &str) -> Option<FailureClass> {
        FailureClass::named(name).or_else(|| FailureClass::register(name, "").ok())
    }

    /// Dense index of the class, for per-class counter arrays of [`FailureClass::CAPACITY`].
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The name used in the result files (`connect_refused`, `http_5xx`, ...).
    pub fn as_str(&self) -> &'static str {
        self.entry().0
    }

    /// Plain-language advice for this class (empty for a class read from a file that this
    /// build's protocols do not register).
    pub fn hint(&self) -> &'static str {
        self.entry().1
    }

    /// Whether this is one of onrush's own classes (not registered at run time).
    pub fn is_builtin(&self) -> bool {
        self.index() < BUILTIN.len()
    }

    fn entry(&self) -> (&'static str, &'static str) {
        match BUILTIN.get(self.index()) {
            Some(&entry) => entry,
            // A class value exists only once registered: the index is in the vector.
            None => registered()[self.index() - BUILTIN.len()],
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

impl fmt::Debug for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FailureClass({})", self.as_str())
    }
}

impl FromStr for FailureClass {
    type Err = UnknownFailureClass;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FailureClass::named(s).ok_or_else(|| UnknownFailureClass(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_indexes_are_dense() {
        for (i, c) in FailureClass::all()
            .take(FailureClass::BUILTIN_COUNT)
            .enumerate()
        {
            assert_eq!(c.index(), i);
            assert_eq!(c.as_str().parse::<FailureClass>().unwrap(), c);
            assert!(!c.hint().is_empty());
        }
        assert!("nope".parse::<FailureClass>().is_err());
        // onrush's own: transport, TLS, HTTP, checks and run events; each protocol's own
        // (gRPC's statuses, Thrift's exceptions, UDP's `no_reply`) are registered by its crate.
        assert_eq!(FailureClass::BUILTIN_COUNT, 25);
        assert!(FailureClass::all().all(|c| c.index() < FailureClass::CAPACITY));
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
            assert_eq!(FailureClass::all().nth(class.index()), Some(class));
            assert!(!class.hint().is_empty());
        }
        assert!(FailureClass::TlsCertificateUnknown
            .hint()
            .contains("http.tls.ca_file"));
    }

    #[test]
    fn a_protocol_registers_its_own_classes_by_name() {
        let wrongtype = FailureClass::register("test_wrongtype", "the key holds another type")
            .expect("a valid name registers");
        assert!(!wrongtype.is_builtin());
        assert_eq!(wrongtype.as_str(), "test_wrongtype");
        assert_eq!(wrongtype.hint(), "the key holds another type");
        assert_eq!("test_wrongtype".parse::<FailureClass>(), Ok(wrongtype));
        assert_eq!(format!("{wrongtype:?}"), "FailureClass(test_wrongtype)");
        // Registering again (another plan, another thread) gives the same class and hint.
        assert_eq!(
            FailureClass::register("test_wrongtype", "other"),
            Ok(wrongtype)
        );
        assert_eq!(wrongtype.hint(), "the key holds another type");
        // A built-in name is the built-in class.
        assert_eq!(
            FailureClass::register("timeout", "x"),
            Ok(FailureClass::Timeout)
        );
        assert!(FailureClass::all().any(|c| c == wrongtype));
        for bad in ["", "Upper", "has-dash", "9lives", &"x".repeat(49)] {
            assert!(matches!(
                FailureClass::register(bad, ""),
                Err(RegisterError::BadName(_))
            ));
        }
        // A name read from a file written by a build with more protocols.
        let read = FailureClass::named_or_register("test_from_file").unwrap();
        assert_eq!(read.as_str(), "test_from_file");
        assert_eq!(read.hint(), "");
    }

    #[test]
    fn registering_stops_at_capacity_with_a_clear_error() {
        // A registry of its own: the process's is shared by the tests of this binary.
        let mut extra = Vec::new();
        let free = FailureClass::CAPACITY - FailureClass::BUILTIN_COUNT;
        for i in 0..free {
            let class = push_class(&mut extra, &format!("fill_{i}"), "").unwrap();
            assert_eq!(class.index(), FailureClass::BUILTIN_COUNT + i);
        }
        let full = push_class(&mut extra, "one_too_many", "");
        assert_eq!(full, Err(RegisterError::Full("one_too_many".into())));
        assert!(full
            .unwrap_err()
            .to_string()
            .contains("all 128 failure classes"));
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
}
