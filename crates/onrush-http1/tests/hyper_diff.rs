//! Differential test against hyper's HTTP/1.1 server: an independent implementation frames
//! the responses (Content-Length and chunked, with trailers, many sizes) and parses our
//! requests (echo of in-memory and file bodies), many requests on one connection.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use onrush_http1::{connect, push_header, ConnectOptions, Connection, Request, RequestBody};
use tokio::net::TcpListener;

/// A response body handed to hyper in `piece`-byte frames; with `sized`, hyper sends a
/// Content-Length, otherwise it chunks (each frame a chunk), optionally with trailers.
struct Pieces {
    data: Bytes,
    piece: usize,
    sized: bool,
    trailers: bool,
}

impl Body for Pieces {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if !self.data.is_empty() {
            let n = self.piece.min(self.data.len());
            let frame = self.data.split_to(n);
            return Poll::Ready(Some(Ok(Frame::data(frame))));
        }
        if self.trailers {
            self.trailers = false;
            let mut map = hyper::HeaderMap::new();
            map.insert("x-checksum", "abc".parse().unwrap());
            map.insert("x-more", "1, 2".parse().unwrap());
            return Poll::Ready(Some(Ok(Frame::trailers(map))));
        }
        Poll::Ready(None)
    }
    fn is_end_stream(&self) -> bool {
        self.data.is_empty() && !self.trailers
    }
    fn size_hint(&self) -> SizeHint {
        if self.sized {
            SizeHint::with_exact(self.data.len() as u64)
        } else {
            SizeHint::default()
        }
    }
}

fn pattern(n: usize, seed: usize) -> Vec<u8> {
    (0..n).map(|i| (i.wrapping_mul(31) + seed) as u8).collect()
}

fn body(data: Vec<u8>, piece: usize, sized: bool, trailers: bool) -> Pieces {
    Pieces {
        data: data.into(),
        piece: piece.max(1),
        sized,
        trailers,
    }
}

/// Routes: /len/N, /chunked/N/PIECE/TRAILERS, /status/CODE, /echo, /close.
async fn handle(req: hyper::Request<Incoming>) -> Result<hyper::Response<Pieces>, Infallible> {
    let path = req.uri().path().to_string();
    let parts: Vec<&str> = path.split('/').skip(1).collect();
    let num = |i: usize| parts[i].parse::<usize>().unwrap();
    let mut resp = hyper::Response::new(body(Vec::new(), 1, true, false));
    match parts[0] {
        "len" => *resp.body_mut() = body(pattern(num(1), num(1)), 8192, true, false),
        "chunked" => {
            *resp.body_mut() = body(pattern(num(1), 7), num(2), false, num(3) == 1);
            if num(3) == 1 {
                // hyper sends only the trailers declared here (and asked for with TE).
                let declared = "x-checksum, x-more".parse().unwrap();
                resp.headers_mut().insert("trailer", declared);
            }
        }
        "status" => *resp.status_mut() = hyper::StatusCode::from_u16(num(1) as u16).unwrap(),
        "echo" => {
            let got = req.into_body().collect().await.unwrap().to_bytes();
            *resp.body_mut() = body(got.to_vec(), 1000, true, false);
        }
        "close" => {
            resp.headers_mut()
                .insert("connection", "close".parse().unwrap());
            *resp.body_mut() = body(b"bye".to_vec(), 3, true, false);
        }
        _ => *resp.status_mut() = hyper::StatusCode::NOT_FOUND,
    }
    Ok(resp)
}

async fn hyper_server() -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (s, _) = l.accept().await.unwrap();
            tokio::spawn(async move {
                let conn = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(s), service_fn(handle));
                let _ = conn.await;
            });
        }
    });
    addr
}

async fn fetch(
    conn: &mut Connection,
    method: &str,
    target: &str,
    headers: &[u8],
    body: RequestBody<'_>,
) -> (onrush_http1::Response, Vec<u8>) {
    let req = Request {
        method,
        target: target.as_bytes(),
        host: b"127.0.0.1",
        headers,
        body,
        close: false,
    };
    let mut got = Vec::new();
    let r = conn
        .send(&req, &mut got)
        .await
        .unwrap_or_else(|e| panic!("{method} {target}: {e}"));
    assert_eq!(r.body_bytes, got.len() as u64);
    (r, got)
}

#[tokio::test]
async fn against_hyper_server_on_one_connection() {
    let addr = hyper_server().await;
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    let mut te = Vec::new();
    push_header(&mut te, b"TE", b"trailers").unwrap(); // hyper sends trailers only when asked
    let sizes = [
        0, 1, 2, 100, 4095, 16_384, 16_385, 65_536, 100_000, 1_000_003,
    ];
    let mut expected_requests = 0;
    for &n in &sizes {
        let (r, got) = fetch(
            &mut conn,
            "GET",
            &format!("/len/{n}"),
            b"",
            RequestBody::Empty,
        )
        .await;
        assert_eq!((r.status, r.keep_alive), (200, true), "/len/{n}");
        assert!(got == pattern(n, n), "/len/{n}: body differs");
        for piece in [1, 7, 1000, 16_384, 65_536] {
            if n > 100_000 && piece < 1000 {
                continue; // a million one-byte chunks: slow in the test, nothing new
            }
            let mut wire_sizes = [0u64; 2];
            for trailers in [0, 1] {
                let target = format!("/chunked/{n}/{piece}/{trailers}");
                let (r, got) = fetch(&mut conn, "GET", &target, &te, RequestBody::Empty).await;
                assert_eq!((r.status, r.keep_alive), (200, true), "{target}");
                assert!(got == pattern(n, 7), "{target}: body differs");
                wire_sizes[trailers] = r.bytes_in - r.head_bytes;
                expected_requests += 1;
            }
            // The trailers really were on the wire (and skipped). (An empty body without
            // trailers is sent by hyper with Content-Length: 0 instead.)
            if n > 0 {
                let trailer_lines = "x-checksum: abc\r\nx-more: 1, 2\r\n".len() as u64;
                assert_eq!(
                    wire_sizes[1],
                    wire_sizes[0] + trailer_lines,
                    "/chunked/{n}/{piece}"
                );
            }
        }
        // HEAD: hyper announces the length but sends no body; the next response must parse.
        let (r, got) = fetch(
            &mut conn,
            "HEAD",
            &format!("/len/{n}"),
            b"",
            RequestBody::Empty,
        )
        .await;
        assert_eq!((r.status, got.len(), r.keep_alive), (200, 0, true));
        expected_requests += 2;
    }
    for code in [204, 304, 404, 500] {
        let (r, got) = fetch(
            &mut conn,
            "GET",
            &format!("/status/{code}"),
            b"",
            RequestBody::Empty,
        )
        .await;
        assert_eq!((r.status, got.len(), r.keep_alive), (code, 0, true));
        expected_requests += 1;
    }
    // Our request framing, as parsed by hyper.
    let data = pattern(300_000, 3);
    for len in [0, 1, 5000, 16_384, 300_000] {
        let (r, got) = fetch(
            &mut conn,
            "POST",
            "/echo",
            b"",
            RequestBody::Bytes(&data[..len]),
        )
        .await;
        assert_eq!(r.status, 200);
        assert!(got == data[..len], "echo of {len} bytes differs");
        expected_requests += 1;
    }
    let (_, got) = fetch(&mut conn, "POST", "/echo", b"", RequestBody::Empty).await;
    assert!(got.is_empty());
    let path = std::env::temp_dir().join(format!(
        "onrush-http1-hyper-{}-{:?}.bin",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&path, &data).unwrap();
    let echoed = fetch(&mut conn, "PUT", "/echo", b"", RequestBody::File(&path)).await;
    std::fs::remove_file(&path).unwrap();
    assert!(echoed.1 == data, "file echo differs");
    expected_requests += 2;
    assert_eq!(conn.requests_sent(), expected_requests);

    // The server closes: not reusable.
    let (r, got) = fetch(&mut conn, "GET", "/close", b"", RequestBody::Empty).await;
    assert_eq!(
        (r.status, &got[..], r.keep_alive),
        (200, &b"bye"[..], false)
    );
    // We ask to close: hyper answers and closes.
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    let mut req = Request {
        method: "GET",
        target: b"/len/10",
        host: b"127.0.0.1",
        headers: b"",
        body: RequestBody::Empty,
        close: true,
    };
    let mut got = Vec::new();
    let r = conn.send(&req, &mut got).await.unwrap();
    assert_eq!((r.status, got.len(), r.keep_alive), (200, 10, false));
    req.close = false;
    assert!(conn.send(&req, &mut got).await.is_err());
}
