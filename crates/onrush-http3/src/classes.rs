//! QUIC's and HTTP/3's failure classes, in the group `QUIC` (the report's heading for them):
//! what fails over QUIC that has no TCP counterpart, and the HTTP/3 error codes a server resets
//! a stream or closes a connection with (RFC 9114 §8.1), one class each. They are this crate's:
//! registered by name on first use, or when onrush-proto-http registers HTTP (so that a
//! results file naming them reads back); an [`Error`](onrush_http::Error) names its class
//! ([`Error::class_name`](onrush_http::Error::class_name)).

use std::sync::OnceLock;

use onrush_protocol::FailureClass;

/// The group the report shows these classes under.
pub const GROUP: &str = "QUIC";

/// The QUIC handshake did not finish by the request's deadline.
pub const HANDSHAKE_TIMEOUT: &str = "quic_handshake_timeout";
/// No packet from the server for the idle timeout.
pub const IDLE_TIMEOUT: &str = "quic_idle_timeout";
/// The server answered with a stateless reset.
pub const STATELESS_RESET: &str = "quic_stateless_reset";
/// No QUIC version in common.
pub const VERSION_NEGOTIATION: &str = "quic_version_negotiation";
/// The server refused the connection (CONNECTION_REFUSED).
pub const REFUSED: &str = "quic_refused";
/// A QUIC transport error, either side's.
pub const TRANSPORT_ERROR: &str = "quic_transport_error";
/// The server does not offer HTTP/3 (ALPN `h3`).
pub const NO_H3: &str = "quic_no_h3";

/// The QUIC classes: name and hint.
const QUIC: [(&str, &str); 7] = [
    (HANDSHAKE_TIMEOUT, "the QUIC handshake did not finish in time: nothing answers QUIC on that UDP port (is the server's HTTP/3 enabled, and UDP not blocked by a firewall?), or the server is too busy to answer"),
    (IDLE_TIMEOUT, "no packet from the server for the QUIC idle timeout: the server or the path went silent (UDP dropped, the server stalled)"),
    (STATELESS_RESET, "the server answered with a QUIC stateless reset: it no longer knows the connection (it restarted, or a load balancer sent the packets to another instance)"),
    (VERSION_NEGOTIATION, "the server speaks no QUIC version onrush does (onrush speaks QUIC v1, RFC 9000)"),
    (REFUSED, "the server refused the QUIC connection (CONNECTION_REFUSED): it is at its connection limit or shedding load"),
    (TRANSPORT_ERROR, "a QUIC transport error (a protocol violation by one side, or flow-control limits exceeded): the message says which"),
    (NO_H3, "the server does not offer HTTP/3 on that port (its QUIC/TLS handshake had no ALPN h3): check the port, or use http.version: h2 or h1"),
];

/// HTTP/3 error codes 0x100 to 0x110: the class's name and hint.
const H3_CODES: [(&str, &str); 17] = [
    ("h3_no_error", "the server ended the stream or connection without error (H3_NO_ERROR) before the response was complete"),
    ("h3_general_protocol_error", "the server saw an HTTP/3 protocol violation (H3_GENERAL_PROTOCOL_ERROR)"),
    ("h3_internal_error", "the server failed internally (H3_INTERNAL_ERROR): check its logs"),
    ("h3_stream_creation_error", "the server refused a stream onrush created (H3_STREAM_CREATION_ERROR)"),
    ("h3_closed_critical_stream", "a stream HTTP/3 needs was closed (H3_CLOSED_CRITICAL_STREAM)"),
    ("h3_frame_unexpected", "a frame came where it is not allowed (H3_FRAME_UNEXPECTED)"),
    ("h3_frame_error", "a frame was malformed (H3_FRAME_ERROR)"),
    ("h3_excessive_load", "the server found the load excessive (H3_EXCESSIVE_LOAD): lower the rate, or max_streams"),
    ("h3_id_error", "a stream or push ID was used wrongly (H3_ID_ERROR)"),
    ("h3_settings_error", "a SETTINGS frame was rejected (H3_SETTINGS_ERROR)"),
    ("h3_missing_settings", "no SETTINGS frame at the start of the control stream (H3_MISSING_SETTINGS)"),
    ("h3_request_rejected", "the server rejected the request without processing it (H3_REQUEST_REJECTED): it is overloaded; a retry may succeed"),
    ("h3_request_cancelled", "the server cancelled the request (H3_REQUEST_CANCELLED)"),
    ("h3_request_incomplete", "the server saw the request stream end before the request was complete (H3_REQUEST_INCOMPLETE)"),
    ("h3_message_error", "the server found the request malformed (H3_MESSAGE_ERROR): check the step's headers"),
    ("h3_connect_error", "a CONNECT request's connection was reset or closed (H3_CONNECT_ERROR)"),
    ("h3_version_fallback", "the server asked for the request over HTTP/1.1 (H3_VERSION_FALLBACK): use http.version: h1 or auto"),
];

/// Any other HTTP/3 or QPACK error code.
pub const H3_OTHER: &str = "h3_other_error";
const H3_OTHER_HINT: &str = "the server reset the stream or closed the connection with an HTTP/3 or QPACK error code outside RFC 9114's list: the message gives the code";

static CLASSES: OnceLock<Vec<FailureClass>> = OnceLock::new();

/// Every class of this crate, registered on first use: QUIC's, then H3 codes 0x100 to 0x110,
/// then `h3_other_error`.
pub fn registered() -> &'static [FailureClass] {
    CLASSES.get_or_init(|| {
        QUIC.iter()
            .chain(H3_CODES.iter())
            .chain([(H3_OTHER, H3_OTHER_HINT)].iter())
            .map(|(name, hint)| {
                FailureClass::register_in(GROUP, name, hint)
                    .expect("QUIC's classes fit beside onrush's own")
            })
            .collect()
    })
}

/// The class name of HTTP/3 error code `code`.
pub fn h3_code(code: u64) -> &'static str {
    match code {
        0x100..=0x110 => H3_CODES[(code - 0x100) as usize].0,
        _ => H3_OTHER,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_registered_in_the_quic_group_by_name() {
        let all = registered();
        assert_eq!(all.len(), 25);
        assert!(all.iter().all(|c| c.group() == GROUP));
        assert_eq!(
            FailureClass::named("quic_idle_timeout"),
            Some(all[1]),
            "a results file naming it finds it"
        );
        assert_eq!(h3_code(0x10b), "h3_request_rejected");
        assert_eq!(h3_code(0x110), "h3_version_fallback");
        assert_eq!(h3_code(0x200), H3_OTHER);
        assert!(FailureClass::named(h3_code(0x107))
            .unwrap()
            .hint()
            .contains("EXCESSIVE_LOAD"));
    }
}
