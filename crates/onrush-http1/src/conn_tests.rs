//! The real `Connection::send` over a scripted in-memory stream: reads delivered in whatever
//! pieces the test chooses, writes recorded, errors injected.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::*;
use crate::decode::tests::Rng;
use crate::{Discard, RequestBody};

enum Step {
    Data(Vec<u8>),
    Err(io::ErrorKind),
    /// Nothing more arrives until the client writes (a request): what follows answers it.
    AfterWrite,
}

/// Scripted stream. After the script: EOF, or never-ready when `hang` is set.
#[derive(Default)]
struct Mock {
    reads: VecDeque<Step>,
    hang: bool,
    written: Vec<u8>,
    writes: usize,
    /// Writes ever made (`writes` may be reset by a test), and their number when the last
    /// `AfterWrite` was passed.
    writes_ever: usize,
    writes_passed: usize,
    write_err: Option<io::ErrorKind>,
}

impl Mock {
    /// A well-behaved server: each of `responses` (its pieces, one read each) arrives only
    /// after the next request was written.
    fn answering<'a, R>(responses: impl IntoIterator<Item = R>) -> Self
    where
        R: IntoIterator<Item = &'a [u8]>,
    {
        let mut reads = VecDeque::new();
        for pieces in responses {
            reads.push_back(Step::AfterWrite);
            reads.extend(pieces.into_iter().map(|p| Step::Data(p.to_vec())));
        }
        Mock {
            reads,
            ..Mock::default()
        }
    }

    /// Passes an `AfterWrite` at the front if a write happened since the last one.
    fn pass_barrier(&mut self) {
        if matches!(self.reads.front(), Some(Step::AfterWrite))
            && self.writes_ever > self.writes_passed
        {
            self.reads.pop_front();
            self.writes_passed = self.writes_ever;
        }
    }
}

/// The default: one poll with a waker that does nothing (the mock never needs a wake-up).
impl crate::PendingInput for Mock {}

impl AsyncRead for Mock {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.pass_barrier();
        match this.reads.front_mut() {
            Some(Step::AfterWrite) => Poll::Pending,
            None if this.hang => Poll::Pending,
            None => Poll::Ready(Ok(())),
            Some(Step::Err(k)) => {
                let k = *k;
                this.reads.pop_front();
                Poll::Ready(Err(k.into()))
            }
            Some(Step::Data(d)) => {
                let n = d.len().min(buf.remaining());
                buf.put_slice(&d[..n]);
                d.drain(..n);
                if d.is_empty() {
                    this.reads.pop_front();
                }
                Poll::Ready(Ok(()))
            }
        }
    }
}

impl AsyncWrite for Mock {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Some(k) = this.write_err {
            return Poll::Ready(Err(k.into()));
        }
        this.writes += 1;
        this.writes_ever += 1;
        this.written.extend_from_slice(b);
        Poll::Ready(Ok(b.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

fn get(method: &str) -> Request<'_> {
    Request {
        method,
        target: b"/x",
        host: b"h",
        headers: b"",
        body: RequestBody::Empty,
        close: false,
    }
}

const OK2: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// A random response: its wire bytes, status and body.
fn random_response(rng: &mut Rng) -> (Vec<u8>, u16, Vec<u8>) {
    let len = if rng.below(3) == 0 {
        rng.below(40_000)
    } else {
        rng.below(300)
    };
    let mut body: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
    let mut wire = Vec::new();
    if rng.below(5) == 0 {
        wire.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    let status = match rng.below(4) {
        0 => {
            wire.extend_from_slice(b"HTTP/1.1 204 No Content\r\nX: y\r\n\r\n");
            body.clear();
            204
        }
        1 => {
            wire.extend_from_slice(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
            for piece in body.chunks(1 + rng.below(5000)) {
                wire.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                wire.extend_from_slice(piece);
                wire.extend_from_slice(b"\r\n");
            }
            wire.extend_from_slice(b"0\r\nT: 1\r\n\r\n");
            200
        }
        _ => {
            let head = format!("HTTP/1.1 201 Created\r\nContent-Length: {len}\r\n\r\n");
            wire.extend_from_slice(head.as_bytes());
            wire.extend_from_slice(&body);
            201
        }
    };
    (wire, status, body)
}

#[tokio::test]
async fn many_responses_in_random_pieces_on_one_connection() {
    for seed in 0..20 {
        let mut rng = Rng::new(seed);
        let responses: Vec<_> = (0..30).map(|_| random_response(&mut rng)).collect();
        let mut script = Vec::new();
        for (wire, _, _) in &responses {
            let mut pieces = Vec::new();
            let mut rest = &wire[..];
            while !rest.is_empty() {
                let n = match rng.below(4) {
                    0 => 1,
                    1 => rng.below(20),
                    _ => rng.below(30_000),
                }
                .clamp(1, rest.len());
                pieces.push(&rest[..n]);
                rest = &rest[n..];
            }
            script.push(pieces);
        }
        let mut conn = Connection::new(Mock::answering(script));
        for (i, (wire, status, body)) in responses.iter().enumerate() {
            let mut got = Vec::new();
            let r = conn.send(&get("GET"), &mut got).await.unwrap();
            assert_eq!(
                (r.status, &got, r.keep_alive),
                (*status, body, true),
                "seed {seed} #{i}"
            );
            assert_eq!(r.bytes_in, wire.len() as u64);
            assert_eq!(r.body_bytes, body.len() as u64);
            assert!(
                [READ_BUF, READ_BUF * 4, READ_BUF * 16, BULK_READ_BUF].contains(&conn.rbuf.len()),
                "the buffer only grows fourfold, up to the bulk size"
            );
        }
        assert_eq!(conn.requests_sent(), 30);
        // The script is over: the server "closed" the idle connection.
        let e = conn.send(&get("GET"), &mut Discard).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ClosedEarly);
        assert!(e.is_stale_reuse());
    }
}

#[tokio::test]
async fn byte_by_byte_with_head_request() {
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
    let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\n\r\n";
    let mut conn = Connection::new(Mock::answering([
        head.chunks(1),
        chunked.chunks(1),
        OK2.chunks(1),
    ]));
    let r = conn.send(&get("HEAD"), &mut Discard).await.unwrap();
    assert_eq!((r.status, r.body_bytes, r.keep_alive), (200, 0, true));
    let mut body = Vec::new();
    conn.send(&get("GET"), &mut body).await.unwrap();
    assert_eq!(body, b"abc");
    body.clear();
    conn.send(&get("GET"), &mut body).await.unwrap();
    assert_eq!(body, b"ok");
    assert_eq!(
        conn.io.written.len(),
        3 * b"GET /x HTTP/1.1\r\nHost: h\r\n\r\n".len() + 1
    );
}

const NOT_FOUND: &[u8] = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";

#[tokio::test]
async fn a_second_response_in_the_same_read_is_unsolicited() {
    // Two responses to one request arrive together: the second answers nothing, and the
    // request's own answer can't be trusted either.
    let mut both = OK2.to_vec();
    both.extend_from_slice(NOT_FOUND);
    let mut conn = Connection::new(Mock::answering([[&both[..]], [OK2]]));
    let e = conn.send(&get("GET"), &mut Discard).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsolicited, "{e}");
    assert!(!e.is_stale_reuse());
    assert!(
        e.to_string().contains("after the end of the response"),
        "{e}"
    );
    assert!(!conn.is_reusable(), "the connection is dropped");
    assert!(conn.send(&get("GET"), &mut Discard).await.is_err());
}

#[tokio::test]
async fn bytes_arriving_while_idle_are_unsolicited_and_no_request_is_sent() {
    // The duplicate arrives after the first response was read, before the next request.
    let mut m = Mock::answering([[OK2]]);
    m.reads.push_back(Step::Data(NOT_FOUND.to_vec()));
    m.reads.push_back(Step::AfterWrite);
    m.reads.push_back(Step::Data(OK2.to_vec()));
    let mut conn = Connection::new(m);
    conn.send(&get("GET"), &mut Discard).await.unwrap();
    let sent = conn.io.written.len();
    let e = conn.send(&get("GET"), &mut Discard).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsolicited, "{e}");
    assert!(!e.is_stale_reuse(), "not retried: the server misbehaved");
    assert!(e.to_string().contains("idle keep-alive connection"), "{e}");
    assert_eq!(conn.io.written.len(), sent, "the request was not sent");
    assert!(!conn.is_reusable());
}

/// A server that answers as it accepts, before the request was written: on a connection
/// opened for the request (`for_request`) that is the request's response, and the request is
/// still sent; on one opened ahead (`new`: a warm-up's) the bytes are looked for first and
/// answer no request, as on a kept-alive connection.
#[tokio::test]
async fn bytes_waiting_before_a_connections_first_request_answer_it_only_when_opened_for_it() {
    const UNAVAILABLE: &[u8] =
        b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
    let server = || Mock {
        reads: [Step::Data(UNAVAILABLE.to_vec())].into(),
        ..Mock::default()
    };
    let mut conn = Connection::for_request(server(), Buffers::default());
    let resp = conn.send(&get("GET"), &mut Discard).await.unwrap();
    assert_eq!(resp.status, 503);
    assert!(!resp.keep_alive);
    assert!(
        conn.io.written.starts_with(b"GET /x HTTP/1.1\r\n"),
        "the request was sent"
    );

    let mut conn = Connection::new(server());
    let e = conn.send(&get("GET"), &mut Discard).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsolicited, "{e}");
    assert!(conn.io.written.is_empty(), "the request was not sent");

    // From the second request on, a connection opened for its first is looked at as any.
    let mut m = Mock::answering([[OK2]]);
    m.reads.push_back(Step::Data(NOT_FOUND.to_vec()));
    let mut conn = Connection::for_request(m, Buffers::default());
    conn.send(&get("GET"), &mut Discard).await.unwrap();
    let e = conn.send(&get("GET"), &mut Discard).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsolicited, "{e}");
}

#[tokio::test]
async fn blank_lines_between_responses_are_skipped() {
    let mut ok_crlf = OK2.to_vec();
    ok_crlf.extend_from_slice(b"\r\n");
    // After the response in the same read; then alone while idle.
    let mut m = Mock::answering([[&ok_crlf[..]]]);
    m.reads.push_back(Step::Data(b"\r\n\r\n".to_vec()));
    m.reads.push_back(Step::AfterWrite);
    m.reads.push_back(Step::Data(OK2.to_vec()));
    let mut conn = Connection::new(m);
    let mut body = Vec::new();
    conn.send(&get("GET"), &mut body).await.unwrap();
    conn.send(&get("GET"), &mut body).await.unwrap();
    assert_eq!(body, b"okok");
    assert!(conn.is_reusable());
}

#[tokio::test]
async fn a_408_on_an_idle_connection_is_the_server_closing_it() {
    let mut m = Mock::answering([[OK2]]);
    m.reads.push_back(Step::Data(
        b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n".to_vec(),
    ));
    let mut conn = Connection::new(m);
    conn.send(&get("GET"), &mut Discard).await.unwrap();
    let sent = conn.io.written.len();
    let e = conn.send(&get("GET"), &mut Discard).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ClosedEarly, "{e}");
    assert!(
        e.is_stale_reuse(),
        "retried on a new connection like any idle close"
    );
    assert_eq!(conn.io.written.len(), sent);
}

#[tokio::test]
async fn big_heads_grow_the_buffer_once_and_too_big_fails() {
    let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..40 {
        head.extend_from_slice(format!("X-{i}: {}\r\n", "v".repeat(1000)).as_bytes());
    }
    head.extend_from_slice(b"Content-Length: 2\r\n\r\nok");
    let (a, b) = head.split_at(10_000);
    let mut conn = Connection::new(Mock::answering([vec![a, b], vec![OK2]]));
    let r = conn.send(&get("GET"), &mut Discard).await.unwrap();
    assert_eq!((r.status, r.body_bytes), (200, 2));
    assert_eq!(conn.rbuf.len(), MAX_HEAD_BYTES);
    conn.send(&get("GET"), &mut Discard).await.unwrap();

    let mut huge = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..60 {
        huge.extend_from_slice(format!("X-{i}: {}\r\n", "v".repeat(1200)).as_bytes());
    }
    let mut conn = Connection::new(Mock::answering([huge.chunks(5000)]));
    let e = conn.send(&get("GET"), &mut Discard).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadResponse, "{e}");
    assert!(!conn.is_reusable());
    assert!(conn.send(&get("GET"), &mut Discard).await.is_err());
}

#[tokio::test]
async fn stale_reuse_is_only_reported_for_reused_connections_before_any_byte() {
    // Reset instead of EOF on the reused connection (found before the request is written).
    let mut m = Mock::answering([[OK2]]);
    m.reads.push_back(Step::Err(io::ErrorKind::ConnectionReset));
    let mut conn = Connection::new(m);
    conn.send(&get("GET"), &mut Discard).await.unwrap();
    let e = conn.send(&get("GET"), &mut Discard).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Reset);
    assert!(e.is_stale_reuse());

    // Closed after the request was written.
    let mut m = Mock::answering([[OK2]]);
    m.reads.push_back(Step::AfterWrite);
    let mut conn = Connection::new(m);
    conn.send(&get("GET"), &mut Discard).await.unwrap();
    let e = conn.send(&get("GET"), &mut Discard).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ClosedEarly);
    assert!(e.is_stale_reuse());

    // A fresh connection closed without a response is not the keep-alive race.
    let mut conn = Connection::new(Mock::answering([Vec::<&[u8]>::new()]));
    let e = conn.send(&get("GET"), &mut Discard).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ClosedEarly);
    assert!(!e.is_stale_reuse());

    // Reused, but a byte of the response arrived: the server did process the request.
    let mut conn = Connection::new(Mock::answering([[OK2], [b"HTTP/1.1 2"]]));
    conn.send(&get("GET"), &mut Discard).await.unwrap();
    let e = conn.send(&get("GET"), &mut Discard).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ClosedEarly);
    assert!(!e.is_stale_reuse());

    // Broken pipe while writing on a reused connection.
    let mut m = Mock::answering([[OK2]]);
    m.hang = true;
    let mut conn = Connection::new(m);
    conn.send(&get("GET"), &mut Discard).await.unwrap();
    conn.io.write_err = Some(io::ErrorKind::BrokenPipe);
    let e = conn.send(&get("GET"), &mut Discard).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Reset);
    assert!(e.is_stale_reuse());
}

#[tokio::test]
async fn close_and_cancel_make_the_connection_unusable() {
    let mut conn = Connection::new(Mock::answering([
        [&b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"[..]],
        [OK2],
    ]));
    let r = conn.send(&get("GET"), &mut Discard).await.unwrap();
    assert!(!r.keep_alive && !conn.is_reusable());
    let e = conn.send(&get("GET"), &mut Discard).await.unwrap_err();
    assert!(e.to_string().contains("can't carry another request"), "{e}");

    let mut m = Mock::answering([[&b"HTTP/1.1 200 OK\r\n"[..]]]);
    m.hang = true;
    let mut conn = Connection::new(m);
    let req = get("GET");
    let t = tokio::time::timeout(Duration::from_millis(20), conn.send(&req, &mut Discard)).await;
    assert!(t.is_err(), "timed out");
    assert!(
        !conn.is_reusable(),
        "a cancelled send leaves the connection in an unknown state"
    );
}

#[tokio::test]
async fn writes_are_coalesced() {
    let mut conn = Connection::new(Mock::answering([[OK2]; 4]));
    let mut req = get("POST");
    req.body = RequestBody::Bytes(b"hello");
    let r = conn.send(&req, &mut Discard).await.unwrap();
    assert_eq!(conn.io.writes, 1, "head and small body in one write");
    assert_eq!(r.bytes_out, conn.io.written.len() as u64);
    assert!(conn.io.written.ends_with(b"Content-Length: 5\r\n\r\nhello"));

    let big = vec![7u8; 100_000];
    req.body = RequestBody::Bytes(&big);
    conn.io.written.clear();
    let r = conn.send(&req, &mut Discard).await.unwrap();
    assert_eq!(r.bytes_out, conn.io.written.len() as u64);
    assert!(conn.io.written.ends_with(&big));
    assert!(
        conn.wbuf.capacity() < 4096,
        "a big in-memory body is not copied"
    );

    // A body file: the first piece rides with the head; the buffer stays bounded.
    let path = std::env::temp_dir().join(format!("onrush-http1-unit-{}", std::process::id()));
    let content: Vec<u8> = (0..150_000u32).map(|i| (i * 7) as u8).collect();
    std::fs::write(&path, &content).unwrap();
    req.body = RequestBody::File(&path);
    conn.io.written.clear();
    conn.io.writes = 0;
    let r = conn.send(&req, &mut Discard).await;
    std::fs::remove_file(&path).unwrap();
    let r = r.unwrap();
    assert_eq!(conn.io.writes, 3, "64 KiB + 64 KiB + rest");
    assert_eq!(r.bytes_out, conn.io.written.len() as u64);
    assert!(conn.io.written.ends_with(&content));
    assert!(conn.wbuf.capacity() < FILE_CHUNK + 4096);

    req.body = RequestBody::File(std::path::Path::new("/nonexistent/onrush/body"));
    let e = conn.send(&req, &mut Discard).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(e.to_string().contains("/nonexistent/onrush/body"), "{e}");
}

#[tokio::test]
async fn invalid_requests_are_not_sent() {
    let mut conn = Connection::new(Mock::answering([[OK2]]));
    let mut req = get("GET");
    req.target = b"/a\r\nX: y";
    let e = conn.send(&req, &mut Discard).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(conn.io.written.is_empty());
}

#[tokio::test]
async fn after_connection_close_it_waits_for_the_servers_end_of_stream() {
    // The response to `Connection: close`, then what a TLS server sends as it closes (here any
    // bytes), then its FIN (the script's end): read and discarded up to the end of the stream.
    let mut conn = Connection::new(Mock::answering([[
        &b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"[..],
        &b"\x15\x03\x03\x00\x02\x01\x00"[..],
    ]]));
    let mut req = get("GET");
    req.close = true;
    let r = conn.send(&req, &mut Discard).await.unwrap();
    assert!(!r.keep_alive, "we asked to close");
    conn.closed_by_server().await.unwrap();
    assert!(conn.io.reads.is_empty(), "everything read up to the end");

    // A server that ignores the request and keeps the connection open: the wait is the
    // caller's to bound.
    let mut m = Mock::answering([[OK2]]);
    m.hang = true;
    let mut conn = Connection::new(m);
    conn.send(&req, &mut Discard).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(20), conn.closed_by_server()).await;
    assert!(waited.is_err(), "still open");

    // A reset instead of a FIN is the read's error.
    let mut m = Mock::answering([[OK2]]);
    m.reads.push_back(Step::Err(io::ErrorKind::ConnectionReset));
    let mut conn = Connection::new(m);
    conn.send(&req, &mut Discard).await.unwrap();
    let e = conn.closed_by_server().await.unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::ConnectionReset);
}

#[tokio::test]
async fn server_closed_yet_reads_what_waits_without_waiting() {
    let mut req = get("GET");
    req.close = true;
    // The FIN is in behind the response (and a TLS close_notify before it): seen, read up to it.
    let mut conn = Connection::new(Mock::answering([[
        OK2,
        &b"\x15\x03\x03\x00\x02\x01\x00"[..],
    ]]));
    conn.send(&req, &mut Discard).await.unwrap();
    assert!(conn.server_closed_yet());
    assert!(conn.io.reads.is_empty());
    assert!(!conn.is_reusable());

    // Nothing in yet: the wait is still to be done, and nothing was consumed.
    let mut m = Mock::answering([[OK2]]);
    m.hang = true;
    let mut conn = Connection::new(m);
    conn.send(&req, &mut Discard).await.unwrap();
    assert!(!conn.server_closed_yet());

    // A reset ends the wait as the FIN does.
    let mut m = Mock::answering([[OK2]]);
    m.reads.push_back(Step::Err(io::ErrorKind::ConnectionReset));
    let mut conn = Connection::new(m);
    conn.send(&req, &mut Discard).await.unwrap();
    assert!(conn.server_closed_yet());
}

#[tokio::test]
async fn buffers_passed_to_a_new_connection_carry_none_of_the_old_ones_bytes() {
    // A large response grows the first connection's read buffer and fills it with its bytes;
    // the next connections, with those buffers, get short responses (one cut short by the
    // server's close) and must see exactly their own bytes.
    let big_body = vec![b'A'; 20_000];
    let mut big = format!(
        "HTTP/1.1 200 OK\r\nX-Old: old-header\r\nContent-Length: {}\r\n\r\n",
        big_body.len()
    )
    .into_bytes();
    big.extend_from_slice(&big_body);
    let mut first = Connection::new(Mock::answering([[&big[..]]]));
    let mut req = get("POST");
    let long_body = vec![b'B'; 600];
    req.body = RequestBody::Bytes(&long_body);
    let mut got = Vec::new();
    first.send(&req, &mut got).await.unwrap();
    assert_eq!(got, big_body);
    let grown = first.rbuf.len();
    assert!(grown > READ_BUF, "the big response grew the buffer");
    let buffers = first.into_buffers();

    let mut second = Connection::with_buffers(Mock::answering([[OK2]]), buffers);
    assert_eq!(second.rbuf.len(), grown, "the size carries over");
    assert!(second.wbuf.is_empty(), "no request bytes carried over");
    let mut got = Vec::new();
    let r = second.send(&get("GET"), &mut got).await.unwrap();
    assert_eq!(
        (r.status, &got[..], r.bytes_in),
        (200, &b"ok"[..], OK2.len() as u64)
    );
    assert_eq!(second.io.written, b"GET /x HTTP/1.1\r\nHost: h\r\n\r\n");

    // A response without a length, ended by the close: its body is its own bytes only, not
    // the stale ones further on in the buffer.
    let mut third = Connection::with_buffers(
        Mock::answering([[&b"HTTP/1.1 200 OK\r\n\r\nshort"[..]]]),
        second.into_buffers(),
    );
    let mut got = Vec::new();
    let r = third.send(&get("GET"), &mut got).await.unwrap();
    assert_eq!(
        (r.status, &got[..], r.keep_alive),
        (200, &b"short"[..], false)
    );
}

#[path = "prepared_tests.rs"]
mod prepared;

/// A response's end is the read that returned its last byte: for one read, the first byte's
/// clock reading itself (no second one); for a body that comes later, a reading of its own.
#[tokio::test]
async fn a_response_ends_when_its_last_byte_is_read() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 1024];
        let _ = s.read(&mut buf).await.unwrap();
        s.write_all(OK2).await.unwrap();
        let _ = s.read(&mut buf).await.unwrap();
        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        s.write_all(b"ok").await.unwrap();
    });
    let mut conn = Connection::new(TcpStream::connect(addr).await.unwrap());
    let one = conn.send(&get("GET"), &mut Discard).await.unwrap();
    assert_eq!(
        one.done_at, one.first_byte_at,
        "one read, one clock reading"
    );
    let two = conn.send(&get("GET"), &mut Discard).await.unwrap();
    assert!(
        two.done_at >= two.first_byte_at + Duration::from_millis(25),
        "the body's read, 30 ms after the head's: {:?}",
        two.done_at - two.first_byte_at
    );
    server.await.unwrap();
}

/// A `TcpStream` that counts the idle checks' looks (`read_waiting`), and says it drains on a
/// short read as `DRAINS` says.
struct Looked<const DRAINS: bool> {
    tcp: TcpStream,
    looks: std::rc::Rc<std::cell::Cell<usize>>,
}

impl<const DRAINS: bool> AsyncRead for Looked<DRAINS> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl<const DRAINS: bool> AsyncWrite for Looked<DRAINS> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

impl<const DRAINS: bool> PendingInput for Looked<DRAINS> {
    const BUFFERS_WRITES: bool = false;
    const SHORT_READ_DRAINS: bool = DRAINS;
    fn read_waiting(&mut self, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        self.looks.set(self.looks.get() + 1);
        self.tcp.read_waiting(buf)
    }
}

/// The idle check is skipped only when the caller says it was not suspended since the last
/// response and that response's last read drained the transport; every other send looks.
#[tokio::test]
async fn the_idle_check_is_skipped_only_in_the_turn_of_a_drained_response() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    async fn connection<const DRAINS: bool>(
        requests: usize,
    ) -> (
        Connection<Looked<DRAINS>>,
        std::rc::Rc<std::cell::Cell<usize>>,
    ) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            for _ in 0..requests {
                let _ = s.read(&mut buf).await.unwrap();
                s.write_all(OK2).await.unwrap();
            }
        });
        let looks = std::rc::Rc::new(std::cell::Cell::new(0));
        let tcp = TcpStream::connect(addr).await.unwrap();
        let conn = Connection::new(Looked::<DRAINS> {
            tcp,
            looks: looks.clone(),
        });
        (conn, looks)
    }

    let (mut conn, looks) = connection::<true>(4).await;
    conn.send(&get("GET"), &mut Discard).await.unwrap();
    assert_eq!(
        looks.get(),
        1,
        "a connection's first request is looked before"
    );
    conn.not_suspended_since_last_response();
    conn.send(&get("GET"), &mut Discard).await.unwrap();
    assert_eq!(looks.get(), 1, "same turn, drained: skipped");
    conn.send(&get("GET"), &mut Discard).await.unwrap();
    assert_eq!(looks.get(), 2, "not said: looked");
    tokio::task::yield_now().await;
    conn.not_suspended_since_last_response();
    conn.send(&get("GET"), &mut Discard).await.unwrap();
    assert_eq!(
        looks.get(),
        2,
        "the caller's word is taken (it is the engine's turn)"
    );

    let (mut conn, looks) = connection::<false>(2).await;
    conn.send(&get("GET"), &mut Discard).await.unwrap();
    conn.not_suspended_since_last_response();
    conn.send(&get("GET"), &mut Discard).await.unwrap();
    assert_eq!(
        looks.get(),
        2,
        "a transport that does not drain is always looked at"
    );
}
