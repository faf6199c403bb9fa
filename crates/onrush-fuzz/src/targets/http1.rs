//! The HTTP/1.1 response decoder (status line, headers, chunked bodies and trailers, framing),
//! through the real `Connection::send` over an in-memory server that answers with the input.
//!
//! First byte: bit 0 the request is HEAD, bit 1 it asks `Connection: close`, the rest seeds
//! the sizes of the reads. Up to three requests are sent while the connection stays reusable
//! (the next one sees what the server sent beyond the first response).

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use onrush_http1::{Connection, ErrorKind, Request, RequestBody};

use super::mock::{Mock, Seen};

/// The default: one poll with a waker that does nothing (what waits is what the mock has).
impl onrush_http1::PendingInput for Mock {}

pub fn run(data: &[u8]) {
    exchange(data);
}

/// The outcome of each request sent: status and body bytes, or the error's kind.
fn exchange(data: &[u8]) -> Vec<Result<(u16, u64), ErrorKind>> {
    let mut outcomes = Vec::new();
    let Some((&flags, response)) = data.split_first() else {
        return outcomes;
    };
    let head = flags & 1 != 0;
    let close = flags & 2 != 0;
    let max_piece = [0, 1, 7, 100, 4096][usize::from(flags >> 2) % 5];
    let mut conn = Connection::new(Mock::new(response, u64::from(flags), max_piece, true));
    let req = Request {
        method: if head { "HEAD" } else { "GET" },
        target: b"/fuzz",
        host: b"fuzz",
        headers: b"",
        body: RequestBody::Empty,
        close,
    };
    for _ in 0..3 {
        if !conn.is_reusable() {
            break;
        }
        let mut seen = Seen::default();
        let result = {
            let send = pin!(conn.send(&req, &mut seen));
            // A piece per poll at most, so more polls than bytes with no answer is a hang.
            poll_to_end(send, response.len() + 16)
        };
        outcomes.push(
            result
                .as_ref()
                .map(|r| (r.status, r.body_bytes))
                .map_err(|e| e.kind()),
        );
        match result {
            Ok(resp) => {
                assert_eq!(seen.ends, 1, "end() once for a complete response");
                assert_eq!(seen.heads, 1, "head() once for a final response");
                assert_eq!(seen.status, resp.status);
                assert_eq!(seen.body_len, resp.body_bytes, "the sink saw body_bytes");
                assert!(!head || resp.body_bytes == 0, "a HEAD response has no body");
            }
            // A complete response followed by bytes nobody asked for: its body was complete
            // (end() was called), the exchange fails because of what came after it.
            Err(e) if e.kind() == ErrorKind::Unsolicited => assert!(seen.ends <= 1),
            Err(e) => assert_eq!(seen.ends, 0, "end() on a failed response: {e}"),
        }
    }
    outcomes
}

/// Polls `fut` with a waker that does nothing (the mock never needs one: it is ready whenever
/// it is asked again), panicking if it is still pending after `polls` polls.
pub(crate) fn poll_to_end<F: Future>(mut fut: std::pin::Pin<&mut F>, polls: usize) -> F::Output {
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..polls {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
    panic!("no answer after {polls} polls: a hang");
}

pub const DICT: &[&[u8]] = &[
    b"HTTP/1.1 ",
    b"HTTP/1.0 ",
    b"200 OK",
    b"100 Continue\r\n\r\n",
    b"101 ",
    b"204 ",
    b"304 ",
    b"\r\n",
    b"\r\n\r\n",
    b"\n",
    b": ",
    b"Content-Length: ",
    b"Transfer-Encoding: chunked",
    b"Transfer-Encoding: gzip, chunked",
    b"Connection: close",
    b"Connection: keep-alive",
    b"0\r\n\r\n",
    b"ffffffffffffffff\r\n",
    b";ext=1",
    b"Trailer: x\r\n",
    b"18446744073709551616",
    b"-1",
    b" ",
    b"\t",
    b"\x00",
    b"Content-Length: 5, 5",
    b"Keep-Alive: timeout=5",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The harness reaches the decoder: a good response is read, in any pieces, and the
    /// connection is reused for the next request (which then sees the close).
    #[test]
    fn a_good_response_is_read_whatever_the_pieces() {
        for flags in [0u8, 4, 8, 12, 16] {
            let mut data = vec![flags];
            data.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
            let out = exchange(&data);
            assert_eq!(out[0], Ok((200, 5)), "flags {flags}");
            assert_eq!(out.len(), 2, "flags {flags}: {out:?}");
            assert!(out[1].is_err());
        }
        // HEAD: no body whatever Content-Length says.
        let out = exchange(b"\x01HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(out[0], Ok((200, 0)));
    }
}
