//! onrush's own failure classes: a constant, a name, a group and a hint each, in index order
//! (the first indexes of every process). The groups are families: the connection, TLS, HTTP
//! statuses, responses, the plan's checks and variables, and the run itself.

use super::{Entry, FailureClass};

/// The connection and its transport: connecting, resets, time-outs, local I/O.
const CONNECTION: &str = "connection";
/// The TLS handshake and records.
const TLS: &str = "TLS";
/// An HTTP status that is a failure (4xx, 5xx without `expect_status`).
const HTTP: &str = "HTTP";
/// An answer that could not be read, was not expected, or came unasked.
const RESPONSE: &str = "response";
/// The plan's checks and extractors judged the response.
const CHECKS: &str = "checks";
/// The plan's variables could not make the request: it was not sent.
const VARIABLES: &str = "variables";
/// What the run itself decided: it stopped with requests in flight, a group failed.
const RUN: &str = "run";
/// The plan's JavaScript (`scripts:`, `js:`, `script:`, hooks).
const SCRIPT: &str = "script";

/// Declares onrush's own classes: a constant, a name, a group and a hint each, in index order.
macro_rules! builtin_classes {
    ($( $(#[$doc:meta])* $variant:ident = $index:literal, $name:literal, $group:ident, $hint:expr; )*) => {
        #[allow(non_upper_case_globals)]
        impl FailureClass {
            $( $(#[$doc])* pub const $variant: FailureClass = FailureClass($index); )*
        }

        /// Name, group and hint of each of onrush's own classes, by index.
        pub(super) const BUILTIN: &[Entry] = &[$( Entry { name: $name, group: $group, hint: $hint }, )*];
    };
}

builtin_classes! {
    /// The target refused the TCP connection (nothing listens there).
    ConnectRefused = 0, "connect_refused", CONNECTION,
        "nothing listens on the target address: is the server up and the port right?";
    /// The TCP handshake did not complete in time.
    ConnectTimeout = 1, "connect_timeout", CONNECTION,
        "the TCP handshake did not finish in time: the server's accept queue may be full \
                 (raise its listen backlog and net.core.somaxconn), a firewall may drop SYNs, or \
                 the host is unreachable";
    /// No local address/port was available for a new connection (EADDRNOTAVAIL).
    AddrNotAvailable = 2, "addr_not_available", CONNECTION,
        "out of local ports: the client opens connections faster than TIME_WAIT frees \
                 them; widen net.ipv4.ip_local_port_range (e.g. 1024 65535), set \
                 net.ipv4.tcp_tw_reuse=1, or keep connections alive (http.connections: per_vu)";
    /// The peer reset the connection.
    Reset = 3, "reset", CONNECTION,
        "the server reset the connection (RST): it crashed, hit its connection limit, or \
                 dropped idle keep-alive connections; check its logs and its max-connections and \
                 keep-alive settings";
    /// No (complete) response within the request timeout.
    Timeout = 4, "timeout", CONNECTION,
        "the target did not answer within http.timeout: it is overloaded or stuck; lower \
                 the load or raise http.timeout";
    /// The connection was closed before a complete response arrived.
    ClosedEarly = 5, "closed_early", CONNECTION,
        "the server closed the connection before a complete response: often a keep-alive \
                 connection it had just closed as idle (its keep-alive timeout is shorter than the \
                 pause between requests), or a crash mid-response";
    /// The response was not valid HTTP.
    BadResponse = 6, "bad_response", RESPONSE,
        "the response was not valid HTTP/1.1 (status line, headers or framing): is an \
                 HTTP/1.1 server really on that port (not TLS-only, not HTTP/2-only)? Over HTTP/2: \
                 the server broke the protocol, or flooded control frames (PING, SETTINGS) \
                 without reading the answers. For tcp and udp steps: the reply was longer than \
                 max_reply, or its length prefix was malformed";
    /// Status 400..=499 (when the step has no `expect_status`).
    Http4xx = 7, "http_4xx", HTTP,
        "the server rejected the request (4xx): check the step's path, method, headers, \
                 body and credentials; set expect_status if this status is intended";
    /// Status 500..=599 (when the step has no `expect_status`).
    Http5xx = 8, "http_5xx", HTTP,
        "the server failed (5xx): it is overloaded or erroring; check its logs and lower \
                 the rate to find its capacity";
    /// Status not in the step's `expect_status`.
    UnexpectedStatus = 9, "unexpected_status", RESPONSE,
        "the status was not one of the step's expect_status codes: see status codes below";
    /// Any other I/O error.
    Io = 10, "io", CONNECTION,
        "a local I/O error, often too many open files: raise the limit (ulimit -n) or use \
                 fewer connections";
    /// TLS: the server's certificate is not signed by a trusted CA.
    TlsCertificateUnknown = 11, "tls_certificate_unknown", TLS,
        "the server's certificate is not signed by a CA onrush trusts: set \
                 http.tls.ca_file to your CA's PEM, or http.tls.insecure: true for a test system \
                 (with onrush quick: --ca-file FILE, or -k)";
    /// TLS: the server's certificate has expired (or is not yet valid).
    TlsCertificateExpired = 12, "tls_certificate_expired", TLS,
        "the server's certificate has expired (or the clocks disagree)";
    /// TLS: the server's certificate does not name the target host.
    TlsNameMismatch = 13, "tls_name_mismatch", TLS,
        "the certificate does not name the host you target: target the name it was \
                 issued for, or set http.tls.server_name";
    /// TLS: the server asked for a client certificate and none was configured.
    TlsClientCertificateRequired = 14, "tls_client_certificate_required", TLS,
        "the server wants a client certificate: set http.tls.client_cert and client_key \
                 (or client_p12, identities, identities_dir)";
    /// TLS: the server rejected the client certificate.
    TlsClientCertificateRejected = 15, "tls_client_certificate_rejected", TLS,
        "the server rejected the client certificate: is it signed by a CA the server \
                 trusts?";
    /// TLS: no common protocol version or cipher suite, or a protocol error.
    TlsProtocol = 16, "tls_protocol", TLS,
        "the server did not answer in TLS (is this port plain HTTP? use http://), or TLS \
                 versions or cipher suites do not match: check http.tls.versions and \
                 http.tls.ciphers; or, on a connection already up, the server (or a proxy between) \
                 sent bytes that are not valid TLS records";
    /// TLS: the TCP connection was up but the handshake did not finish in time (a server short
    /// of CPU for handshakes, or no TLS on that port); told apart from `Timeout` so that a
    /// handshake bottleneck is not mistaken for slow responses.
    TlsHandshakeTimeout = 17, "tls_handshake_timeout", TLS,
        "the TCP connection was up but the TLS handshake did not finish in time: the \
                 server is overloaded doing handshakes (full ones cost it the most CPU: \
                 http.tls.session resume or shared make fewer), or nothing speaks TLS on that \
                 port; raise http.timeout if the server is only slow";
    /// Any other TLS failure.
    TlsOther = 18, "tls_other", TLS,
        "the TLS handshake failed: check that the target really speaks TLS on this port";
    /// A check of the step failed (or an extractor without a default found nothing).
    CheckFailed = 19, "check_failed", CHECKS,
        "a response check failed or an extractor found nothing: see the checks table for which one; the response was not what the plan expects";
    /// The request needed a runtime variable that had no value: it was not sent.
    VariableUnset = 20, "variable_unset", VARIABLES,
        "a request used a variable that had no value (its extractor found nothing, or it is set by a later step); give the extractor a `default:` or fix its expression";
    /// A request inside the group failed (groups only).
    GroupFailed = 21, "group_failed", RUN,
        "a request inside the group failed";
    /// The connection carried bytes nobody asked for: more after the response (a second
    /// response to one request), or bytes that arrived while the connection sat idle between
    /// requests. HTTP/1.1 has no request ids, so such bytes would be taken as the answer to
    /// the next request: the connection is dropped instead and the request fails.
    UnsolicitedResponse = 22, "unsolicited_response", RESPONSE,
        "the server sent bytes nobody asked for on a keep-alive connection (a second \
                 response to one request, a body after a HEAD/204/304, or data while the \
                 connection was idle): it is broken or misconfigured (a proxy mixing up \
                 connections?); onrush dropped those connections rather than match the bytes \
                 to the next request";
    /// The request was still in flight when the run stopped (Ctrl-C, SIGTERM,
    /// `abort_on_fail`, `on_failure: stop_test`, or the end of `graceful_stop`): it has no
    /// outcome, and is counted so that the summary shows every request that was attempted.
    Interrupted = 23, "interrupted", RUN,
        "the request was still waiting for its response when the run stopped (Ctrl-C, \
                 SIGTERM, abort_on_fail, stop_test, or the end of graceful_stop): its latency is \
                 how long it had waited; raise load.graceful_stop to let requests finish";
    /// A templated argument rendered to a value its type cannot hold (`abc` for an i32): the
    /// request was not sent.
    BadArgument = 24, "bad_argument", VARIABLES,
        "a templated argument rendered to a value its type cannot hold (e.g. `abc` for \
                 an i32, an enum name the IDL does not declare): fix the variable or its feeder";
    /// A script function threw (a hook, a `js` check or condition, a `script:` step, a
    /// template's function): the step failed; the example names the script's file:line:col.
    ScriptError = 25, "script_error", SCRIPT,
        "a script threw an exception: the example gives its file:line:col and message; \
                 fix the script (a reply it did not expect, a variable that is not set yet)";
    /// A script function ran past `script_timeout` and was interrupted.
    ScriptTimeout = 26, "script_timeout", SCRIPT,
        "a script ran longer than script_timeout (1s by default) and was interrupted: an \
                 endless loop, or work too heavy for a request's path";
    /// A script failed the step on purpose: `ctx.fail(message)`, or an `after` hook returned
    /// `false`.
    ScriptFailed = 27, "script_failed", SCRIPT,
        "a script failed the step on purpose (ctx.fail or an after hook returning false): \
                 the example gives its message";
}
