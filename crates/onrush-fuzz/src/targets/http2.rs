//! The HTTP/2 client (frame decoder, flow control, HPACK through HEADERS/CONTINUATION, stream
//! states), through the public `handshake` and `send` over an in-memory server whose whole
//! output is the input after the first byte. The input is cut where its frame headers say
//! frames end, each frame its own read with the client's turn between reads (a server
//! answers what it was sent); the first byte picks whether frames are cut further (into
//! 1-byte or random pieces) or sent two at a time, and seeds the random sizes.
//!
//! Everything runs in a `LocalSet` polled by hand with a waker that does nothing: the mock is
//! always ready and the client has no timers, so a future still pending once the mock has
//! closed and every task has had its turns is a hang.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::pin;

use http::uri::Scheme;
use onrush_http::{Request, RequestBody};
use onrush_http2::{handshake, H2Settings};
use tokio::task::LocalSet;

use super::http1::poll_to_end;
use super::mock::{Mock, Seen};
use crate::mutate::Rng;

pub fn run(data: &[u8]) {
    exchange(data);
}

/// The reads the server's output arrives in.
fn pieces(data: &[u8], flags: u8) -> VecDeque<Vec<u8>> {
    let mut frames = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let len = if rest.len() >= 3 {
            9 + (usize::from(rest[0]) << 16 | usize::from(rest[1]) << 8 | usize::from(rest[2]))
        } else {
            rest.len()
        };
        let (frame, tail) = rest.split_at(len.min(rest.len()));
        frames.push(frame);
        rest = tail;
    }
    let mut rng = Rng::new(u64::from(flags));
    let mut out = VecDeque::new();
    match flags % 4 {
        0 => out.extend(frames.iter().map(|f| f.to_vec())),
        1 => out.extend(frames.chunks(2).map(|two| two.concat())),
        cut => {
            let max = if cut == 2 {
                1
            } else {
                1 + usize::from(flags >> 2)
            };
            for mut f in frames {
                while !f.is_empty() {
                    let n = (1 + rng.below(max)).min(f.len());
                    out.push_back(f[..n].to_vec());
                    f = &f[n..];
                }
            }
        }
    }
    out
}

/// How many requests got a response (status and body bytes of the first).
fn exchange(data: &[u8]) -> Vec<(u16, u64)> {
    let outcomes = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let Some((&flags, frames)) = data.split_first() else {
        return Vec::new();
    };
    let (mock, control) = Mock::frames(pieces(frames, flags));
    let local = LocalSet::new();
    let record = outcomes.clone();
    let exchange = async move {
        let settings = H2Settings::default();
        let conn = match handshake(mock, Scheme::HTTP, b"fuzz", &settings).await {
            Ok(c) => c,
            Err(_) => return,
        };
        // Two requests, the second with a body (flow control, a second stream).
        for body in [&b""[..], &b"fuzz body"[..]] {
            let req = Request {
                method: if body.is_empty() { "GET" } else { "POST" },
                target: b"/fuzz",
                host: b"fuzz",
                headers: b"",
                body: if body.is_empty() {
                    RequestBody::Empty
                } else {
                    RequestBody::Bytes(body)
                },
                close: false,
            };
            let mut seen = Seen::default();
            let mut handle = conn.clone();
            match handle.send(&req, &mut seen).await {
                Ok(resp) => {
                    record.borrow_mut().push((resp.status, resp.body_bytes));
                    assert_eq!(seen.ends, 1, "end() once for a complete response");
                    assert_eq!(seen.status, resp.status);
                    assert_eq!(seen.body_len, resp.body_bytes, "the sink saw body_bytes");
                }
                Err(e) => {
                    assert_eq!(seen.ends, 0, "end() on a failed response: {e}");
                    break;
                }
            }
        }
    };
    let mut run = pin!(local.run_until(exchange));
    // The mock hands out one piece per poll (a poll runs the request, then the driver): a few
    // polls per byte bound any run that ends. Once the mock is drained and the client waits
    // (for the silent server), the server closes; the client must then finish.
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    for _ in 0..4 * frames.len() + 64 {
        if control.borrow().drained {
            break;
        }
        control.borrow_mut().grant();
        if run.as_mut().poll(&mut cx).is_ready() {
            return outcomes.take();
        }
    }
    // Let the client finish what it does with the last piece, then close.
    for _ in 0..16 {
        if run.as_mut().poll(&mut cx).is_ready() {
            return outcomes.take();
        }
    }
    control.borrow_mut().close();
    poll_to_end(run, 64);
    outcomes.take()
}

pub const DICT: &[&[u8]] = &[
    // Frame headers (length 0): DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE,
    // PING, GOAWAY, WINDOW_UPDATE, CONTINUATION, on stream 0 or 1, with common flags.
    b"\x00\x00\x00\x00\x00\x00\x00\x00\x01",
    b"\x00\x00\x00\x00\x01\x00\x00\x00\x01",
    b"\x00\x00\x00\x01\x04\x00\x00\x00\x01",
    b"\x00\x00\x00\x01\x05\x00\x00\x00\x01",
    b"\x00\x00\x00\x01\x08\x00\x00\x00\x01",
    b"\x00\x00\x00\x01\x20\x00\x00\x00\x01",
    b"\x00\x00\x05\x02\x00\x00\x00\x00\x01",
    b"\x00\x00\x04\x03\x00\x00\x00\x00\x01",
    b"\x00\x00\x00\x04\x00\x00\x00\x00\x00",
    b"\x00\x00\x00\x04\x01\x00\x00\x00\x00",
    b"\x00\x00\x06\x04\x00\x00\x00\x00\x00",
    b"\x00\x00\x04\x05\x04\x00\x00\x00\x01",
    b"\x00\x00\x08\x06\x00\x00\x00\x00\x00",
    b"\x00\x00\x08\x07\x00\x00\x00\x00\x00",
    b"\x00\x00\x04\x08\x00\x00\x00\x00\x00",
    b"\x00\x00\x04\x08\x00\x00\x00\x00\x01",
    b"\x00\x00\x00\x09\x04\x00\x00\x00\x01",
    b"\x00\x00\x00\x09\x00\x00\x00\x00\x01",
    // Settings: HEADER_TABLE_SIZE, MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE,
    // MAX_FRAME_SIZE, with extreme values.
    b"\x00\x01\xff\xff\xff\xff",
    b"\x00\x03\x00\x00\x00\x00",
    b"\x00\x04\x7f\xff\xff\xff",
    b"\x00\x04\x80\x00\x00\x00",
    b"\x00\x05\x00\xff\xff\xff",
    b"\x00\x05\x00\x00\x00\x00",
    // HPACK: :status 200 (indexed), 404, a literal with incremental indexing, a size update.
    b"\x88",
    b"\x8d",
    b"\x40\x01a\x01b",
    b"\x3f\xe1\x1f",
    b"\x0f\x0d\x02\x31\x30",
    b"\x7f\xff\xff\xff\x0f",
    b"\xff\xff\xff\xff\x0f",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(typ: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
        f.extend_from_slice(&[typ, flags]);
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    /// The harness reaches the frame decoder: both requests are answered, in any pieces
    /// (not two frames a read: then stream 1's answer comes before its request).
    #[test]
    fn a_good_server_answers_both_requests_whatever_the_pieces() {
        let mut server = frame(4, 0, 0, b"");
        server.extend(frame(4, 1, 0, b""));
        server.extend(frame(1, 4, 1, b"\x88"));
        server.extend(frame(0, 1, 1, b"hi"));
        server.extend(frame(1, 4, 3, b"\x8d"));
        server.extend(frame(0, 1, 3, b"hello"));
        for flags in [0u8, 2, 3, 7, 255] {
            let mut data = vec![flags];
            data.extend_from_slice(&server);
            assert_eq!(exchange(&data), [(200, 2), (404, 5)], "flags {flags}");
        }
    }
}
