//! The connection over real loopback TCP against canned responses.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{fnv_of, get, listener, Reader, OK2};
use onrush_http1::{connect, push_header, ConnectOptions, Discard, ErrorKind, RequestBody};
use tokio::io::AsyncWriteExt;

#[tokio::test]
async fn keep_alive_reuses_one_connection_for_1000_requests() {
    let (l, addr) = listener().await;
    let accepted = Arc::new(AtomicUsize::new(0));
    let acc = accepted.clone();
    let server = tokio::spawn(async move {
        loop {
            let (s, _) = l.accept().await.unwrap();
            acc.fetch_add(1, Ordering::SeqCst);
            let mut r = Reader::new(s);
            let mut first = true;
            while let Some(req) = r.request().await.unwrap() {
                if first {
                    assert_eq!(
                        req.head_str(),
                        format!("GET /bytes/2?x=1 HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: onrush/test\r\n\r\n")
                    );
                    first = false;
                }
                r.write(OK2).await.unwrap();
            }
        }
    });
    let host = addr.to_string();
    let mut headers = Vec::new();
    push_header(&mut headers, b"User-Agent", b"onrush/test").unwrap();
    let mut req = get(b"/bytes/2?x=1", host.as_bytes());
    req.headers = &headers;
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    for i in 0..1000 {
        assert_eq!(conn.requests_sent(), i);
        let mut body = Vec::new();
        let r = conn.send(&req, &mut body).await.unwrap();
        assert_eq!((r.status, &body[..], r.keep_alive), (200, &b"ok"[..], true));
        assert_eq!(r.bytes_in, OK2.len() as u64);
        assert!(r.first_byte_at <= onrush_http::Moment::now());
    }
    assert_eq!(conn.requests_sent(), 1000);
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    server.abort();
}

#[tokio::test]
async fn connection_close_and_close_delimited_bodies() {
    let (l, addr) = listener().await;
    let server = tokio::spawn(async move {
        // 1: we ask for close; the server answers with a length and closes.
        let (s, _) = l.accept().await.unwrap();
        let mut r = Reader::new(s);
        let req = r.request().await.unwrap().unwrap();
        assert_eq!(req.header("connection").as_deref(), Some("close"));
        r.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
            .await
            .unwrap();
        drop(r);
        // 2: a body without length: it ends when the server closes.
        let (s, _) = l.accept().await.unwrap();
        let mut r = Reader::new(s);
        r.request().await.unwrap().unwrap();
        r.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n")
            .await
            .unwrap();
        for _ in 0..30 {
            r.write(&[b'z'; 10_000]).await.unwrap();
        }
        r.stream.shutdown().await.unwrap();
    });
    let host = addr.to_string();
    let mut req = get(b"/", host.as_bytes());
    req.close = true;
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    let r = conn.send(&req, &mut Discard).await.unwrap();
    assert_eq!((r.status, r.body_bytes, r.keep_alive), (200, 2, false));
    assert!(!conn.is_reusable());

    req.close = false;
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    let r = conn.send(&req, &mut Discard).await.unwrap();
    assert_eq!(
        (r.status, r.body_bytes, r.keep_alive),
        (200, 300_000, false)
    );
    server.await.unwrap();
}

#[tokio::test]
async fn stale_keep_alive_connection_is_reported_and_a_retry_works() {
    let (l, addr) = listener().await;
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel();
    let server = tokio::spawn(async move {
        // Answers one request, then closes the idle connection (a keep-alive timeout).
        let (s, _) = l.accept().await.unwrap();
        let mut r = Reader::new(s);
        r.request().await.unwrap().unwrap();
        r.write(OK2).await.unwrap();
        drop(r);
        closed_tx.send(()).unwrap();
        // The retry, on a fresh connection.
        let (s, _) = l.accept().await.unwrap();
        let mut r = Reader::new(s);
        r.request().await.unwrap().unwrap();
        r.write(OK2).await.unwrap();
    });
    let host = addr.to_string();
    let req = get(b"/", host.as_bytes());
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    assert!(conn.send(&req, &mut Discard).await.unwrap().keep_alive);
    closed_rx.await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await; // let the FIN arrive
    let e = conn.send(&req, &mut Discard).await.unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::ClosedEarly | ErrorKind::Reset),
        "{e}"
    );
    assert!(e.is_stale_reuse(), "{e}");
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    assert_eq!(conn.send(&req, &mut Discard).await.unwrap().status, 200);
    server.await.unwrap();
}

#[tokio::test]
async fn reset_by_peer_on_a_fresh_connection_is_not_stale() {
    let (l, addr) = listener().await;
    let server = tokio::spawn(async move {
        let (s, _) = l.accept().await.unwrap();
        s.set_zero_linger().unwrap(); // close with RST
        let mut r = Reader::new(s);
        r.request().await.unwrap().unwrap();
        r.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    });
    let host = addr.to_string();
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    let e = conn
        .send(&get(b"/", host.as_bytes()), &mut Discard)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Reset, "{e}");
    assert!(!e.is_stale_reuse());
    assert!(e.to_string().contains("reset"), "{e}");
    server.await.unwrap();
}

#[tokio::test]
async fn connection_refused() {
    let (l, addr) = listener().await;
    drop(l);
    let e = connect(addr, &ConnectOptions::default()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectRefused, "{e}");
    assert!(e.to_string().contains("refused"), "{e}");
}

#[tokio::test]
async fn file_and_bytes_bodies_arrive_with_the_right_length() {
    let (l, addr) = listener().await;
    let server = tokio::spawn(async move {
        let (s, _) = l.accept().await.unwrap();
        s.set_nodelay(true).unwrap();
        let mut r = Reader::new(s);
        let mut seen = Vec::new();
        while let Some(req) = r.request().await.unwrap() {
            seen.push((req.header("content-length"), req.body_len, req.body_hash));
            r.write(OK2).await.unwrap();
        }
        seen
    });
    let content: Vec<u8> = (0..200_003u32).map(|i| (i % 251) as u8).collect();
    let path = std::env::temp_dir().join(format!(
        "onrush-http1-it-{}-{:?}.bin",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&path, &content).unwrap();
    let host = addr.to_string();
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    let mut req = get(b"/upload", host.as_bytes());
    req.method = "POST";
    req.body = RequestBody::File(&path);
    let r = conn.send(&req, &mut Discard).await;
    std::fs::remove_file(&path).unwrap();
    let r = r.unwrap();
    let head_len =
        format!("POST /upload HTTP/1.1\r\nHost: {host}\r\nContent-Length: 200003\r\n\r\n").len();
    assert_eq!(r.bytes_out, (head_len + content.len()) as u64);
    req.body = RequestBody::Bytes(&content[..5000]);
    conn.send(&req, &mut Discard).await.unwrap();
    req.body = RequestBody::Empty;
    conn.send(&req, &mut Discard).await.unwrap();
    drop(conn);
    let seen = server.await.unwrap();
    assert_eq!(
        seen,
        vec![
            (Some("200003".into()), 200_003, fnv_of(&content)),
            (Some("5000".into()), 5000, fnv_of(&content[..5000])),
            (Some("0".into()), 0, fnv_of(b"")),
        ]
    );
}

#[tokio::test]
async fn interim_100_continue_and_a_response_in_separate_segments() {
    let (l, addr) = listener().await;
    let server = tokio::spawn(async move {
        let (s, _) = l.accept().await.unwrap();
        s.set_nodelay(true).unwrap();
        let mut r = Reader::new(s);
        let req = r.request().await.unwrap().unwrap();
        assert_eq!(req.header("expect").as_deref(), Some("100-continue"));
        for piece in [
            &b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 2"[..],
            b"01 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r",
            b"\nabc\r\n0\r\n\r\n",
        ] {
            r.write(piece).await.unwrap();
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    let host = addr.to_string();
    let mut headers = Vec::new();
    push_header(&mut headers, b"Expect", b"100-continue").unwrap();
    let mut req = get(b"/", host.as_bytes());
    req.method = "PUT";
    req.headers = &headers;
    req.body = RequestBody::Bytes(b"data");
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    let mut body = Vec::new();
    let r = conn.send(&req, &mut body).await.unwrap();
    assert_eq!(
        (r.status, &body[..], r.keep_alive),
        (201, &b"abc"[..], true)
    );
    server.await.unwrap();
}

#[tokio::test]
async fn a_body_larger_than_the_socket_takes_at_once_arrives_whole() {
    // On this one-thread runtime the server reads only while the client waits: a body far
    // larger than the socket buffers leaves in a first write the socket takes in part, then
    // the rest waiting for the server (the write path past `write_now`).
    let (l, addr) = listener().await;
    let server = tokio::spawn(async move {
        let (s, _) = l.accept().await.unwrap();
        let mut r = Reader::new(s);
        let mut seen = Vec::new();
        while let Some(req) = r.request().await.unwrap() {
            seen.push((req.head_str(), req.body_len, req.body_hash));
            r.write(OK2).await.unwrap();
        }
        seen
    });
    let content: Vec<u8> = (0..16_000_003u32).map(|i| (i % 253) as u8).collect();
    let host = addr.to_string();
    let mut req = get(b"/upload", host.as_bytes());
    req.method = "PUT";
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    for body in [&content[..], &content[..16 * 1024]] {
        req.body = RequestBody::Bytes(body);
        let r = conn.send(&req, &mut Discard).await.unwrap();
        assert_eq!(r.status, 200);
    }
    // A prepared request, many times: each arrives as its bytes.
    req.body = RequestBody::Bytes(b"abc");
    let prepared = onrush_http1::PreparedRequest::new(&req).unwrap();
    for _ in 0..100 {
        conn.send_prepared(&prepared, &mut Discard).await.unwrap();
    }
    drop(conn);
    let seen = server.await.unwrap();
    assert_eq!(seen.len(), 102);
    let head = |len: usize| {
        format!("PUT /upload HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len}\r\n\r\n")
    };
    assert_eq!(
        seen[0],
        (head(content.len()), content.len() as u64, fnv_of(&content))
    );
    assert_eq!(
        seen[1],
        (head(16 * 1024), 16 * 1024, fnv_of(&content[..16 * 1024]))
    );
    for s in &seen[2..] {
        assert_eq!(*s, (head(3), 3, fnv_of(b"abc")));
    }
}
