//! A request encoded once and sent many times.
//!
//! A step whose request never changes (no per-request value in its method, target, headers
//! or body, no cookie to add) is the load test's common case, and wrk's whole design: it
//! writes one fixed buffer. Validating and encoding the same request again for every send
//! cost ~280 user instructions per keep-alive request (callgrind, `encode::validate` and
//! `encode::write_head`), a tenth of what wrk spends on a whole request.
//! [`Connection::send_prepared`](crate::Connection::send_prepared) writes these bytes as they
//! are: the same bytes [`Connection::send`](crate::Connection::send) would have written for the
//! request they were prepared from.

use crate::conn::COALESCE_BODY;
use crate::{encode, Request, RequestBody};

/// A request's bytes on the wire (head and body), validated and encoded once.
#[derive(Debug, Clone)]
pub struct PreparedRequest {
    bytes: Box<[u8]>,
    /// The response to a HEAD request has no body, whatever its head says.
    pub(crate) head: bool,
    /// Sent with `Connection: close`.
    pub(crate) close: bool,
}

impl PreparedRequest {
    /// `req` encoded as [`Connection::send`](crate::Connection::send) encodes it; `None` when
    /// it can't be prepared: `send` would refuse it (then send it that way, to fail the same),
    /// or its body is a file, a multipart body or one `send` writes apart from the head
    /// (over 16 KiB): a prepared request leaves in one write, as `send` writes a small one.
    pub fn new(req: &Request<'_>) -> Option<Self> {
        encode::validate(req).ok()?;
        let mut bytes = Vec::new();
        match req.body {
            RequestBody::Empty => {
                encode::write_head(&mut bytes, req, encode::content_length(req, 0))
            }
            RequestBody::Bytes(body) if body.len() <= COALESCE_BODY => {
                encode::write_head(&mut bytes, req, Some(body.len() as u64));
                bytes.extend_from_slice(body);
            }
            _ => return None,
        }
        Some(PreparedRequest {
            bytes: bytes.into_boxed_slice(),
            head: req.method == "HEAD",
            close: req.close,
        })
    }

    /// The bytes sent: head and body.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}
