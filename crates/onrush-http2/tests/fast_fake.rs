//! `onrush_http2::fast` against a hand-made fake server, for what the built-in server never
//! sends: CONTINUATION, padding, PING, SETTINGS changes mid-connection, RST_STREAM, GOAWAY with
//! a last stream id, Huffman-coded and dynamically indexed headers, trailers, 1xx, and
//! malformed frames.

use std::future::Future;
use std::time::Duration;

use onrush_http::{BodySink, ErrorKind, Headers, Request, RequestBody};
use onrush_http2::{fast, H2Settings};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn run<F: Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f)
}

#[derive(Debug, Default)]
struct Seen {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    ends: u32,
    trailers: Vec<(String, String)>,
}

impl BodySink for Seen {
    fn data(&mut self, chunk: &[u8]) {
        self.body.extend_from_slice(chunk);
    }
    fn head(&mut self, status: u16, headers: &Headers<'_>) {
        self.status = status;
        self.headers = headers
            .iter()
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect();
    }
    fn end(&mut self) {
        self.ends += 1;
    }
    fn trailers(&mut self, headers: &Headers<'_>) {
        assert_eq!(self.ends, 0, "trailers come before the end");
        self.trailers = headers
            .iter()
            .map(|(n, v)| {
                (
                    String::from_utf8_lossy(n).into_owned(),
                    String::from_utf8_lossy(v).into_owned(),
                )
            })
            .collect();
    }
}

fn req(method: &'static str, body: &'static [u8]) -> Request<'static> {
    Request {
        method,
        target: b"/",
        host: b"fake",
        headers: b"",
        body: if body.is_empty() {
            RequestBody::Empty
        } else {
            RequestBody::Bytes(body)
        },
        close: false,
    }
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

struct Frame {
    typ: u8,
    flags: u8,
    id: u32,
    payload: Vec<u8>,
}

struct Fake {
    s: TcpStream,
}

impl Fake {
    async fn accept(l: &TcpListener, settings: &[(u16, u32)]) -> Fake {
        let (mut s, _) = l.accept().await.unwrap();
        let mut preface = [0u8; 24];
        s.read_exact(&mut preface).await.unwrap();
        assert_eq!(&preface, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        let mut f = Fake { s };
        let mut p = Vec::new();
        for (k, v) in settings {
            p.extend_from_slice(&k.to_be_bytes());
            p.extend_from_slice(&v.to_be_bytes());
        }
        f.send(4, 0, 0, &p).await;
        f
    }

    async fn send(&mut self, typ: u8, flags: u8, id: u32, payload: &[u8]) {
        let l = payload.len() as u32;
        let mut b = vec![(l >> 16) as u8, (l >> 8) as u8, l as u8, typ, flags];
        b.extend_from_slice(&id.to_be_bytes());
        b.extend_from_slice(payload);
        self.s.write_all(&b).await.unwrap();
    }

    async fn frame(&mut self) -> Option<Frame> {
        let mut h = [0u8; 9];
        self.s.read_exact(&mut h).await.ok()?;
        let len = (h[0] as usize) << 16 | (h[1] as usize) << 8 | h[2] as usize;
        let mut payload = vec![0; len];
        self.s.read_exact(&mut payload).await.ok()?;
        Some(Frame {
            typ: h[3],
            flags: h[4],
            id: u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff,
            payload,
        })
    }

    /// The next frame of type `typ` (others, e.g. SETTINGS ACK and WINDOW_UPDATE, skipped).
    async fn next(&mut self, typ: u8) -> Frame {
        loop {
            let f = self.frame().await.expect("connection closed");
            if f.typ == typ {
                return f;
            }
        }
    }
}

/// A listener and a connected client (after the fake's SETTINGS); the fake runs `script`.
async fn pair<F, Fut>(settings: &'static [(u16, u32)], script: F) -> fast::H2Connection
where
    F: FnOnce(Fake) -> Fut + 'static,
    Fut: Future<Output = ()> + 'static,
{
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::task::spawn_local(async move {
        let fake = Fake::accept(&l, settings).await;
        script(fake).await;
    });
    let tcp = TcpStream::connect(addr).await.unwrap();
    fast::handshake(
        tcp,
        http::uri::Scheme::HTTP,
        b"fake",
        &H2Settings::default(),
    )
    .await
    .unwrap()
}

/// RFC 7541 C.6.1 and C.6.2: Huffman-coded literals, then fields indexed from the dynamic table.
const C61: &str = "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3";
const C62: &str = "4883 640e ffc1 c0bf";

#[test]
fn continuation_padding_ping_interim_trailers_huffman_and_dynamic_table() {
    run(async {
        let mut conn = pair(&[(3, 100)], |mut f| async move {
            let h = f.next(1).await;
            assert_eq!(h.id, 1);
            assert_eq!(h.flags & 0x5, 0x5, "END_HEADERS | END_STREAM on a GET");
            f.send(6, 0, 0, b"pingpong").await; // PING
            f.send(2, 0, 1, &[0, 0, 0, 0, 16]).await; // PRIORITY: ignored
            f.send(0x42, 0, 0, b"whatever").await; // unknown type: ignored
            f.send(1, 0x4, 1, &[0x08, 3, b'1', b'0', b'3']).await; // 103, skipped
            let block = hex(C61);
            let mut first = vec![3];
            first.extend_from_slice(&block[..10]);
            first.extend_from_slice(&[0, 0, 0]);
            f.send(1, 0x8, 1, &first).await; // HEADERS, PADDED, no END_HEADERS
            f.send(9, 0, 1, &block[10..20]).await; // CONTINUATION
            f.send(9, 0x4, 1, &block[20..]).await; // CONTINUATION, END_HEADERS
            f.send(0, 0x8, 1, b"\x02hello\0\0").await; // DATA, PADDED
            f.send(0, 0, 1, b"world").await;
            let trailer = [&[0x00, 9][..], b"x-trailer", &[1], b"1"].concat();
            f.send(1, 0x5, 1, &trailer).await; // trailers: END_HEADERS | END_STREAM
            let ack = f.next(6).await;
            assert_eq!((ack.flags, &ack.payload[..]), (1, &b"pingpong"[..]));
            let h = f.next(1).await;
            assert_eq!(h.id, 3);
            f.send(1, 0x5, 3, &hex(C62)).await;
            // Stay open until the client is done.
            while f.frame().await.is_some() {}
        })
        .await;
        let mut seen = Seen::default();
        let r = conn.send(&req("GET", b""), &mut seen).await.unwrap();
        assert_eq!(r.status, 302);
        assert_eq!(seen.status, 302);
        assert_eq!(seen.body, b"helloworld");
        assert_eq!(r.body_bytes, 10);
        assert_eq!(seen.ends, 1);
        let expect = [
            ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
            ("location", "https://www.example.com"),
        ];
        let expect: Vec<(String, String)> = expect
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(seen.headers, expect);
        assert_eq!(seen.trailers, [("x-trailer".to_string(), "1".to_string())]);
        let mut seen = Seen::default();
        let r = conn.send(&req("GET", b""), &mut seen).await.unwrap();
        assert_eq!(r.status, 307);
        assert_eq!(seen.headers, expect);
        assert!(seen.body.is_empty());
        assert!(seen.trailers.is_empty(), "no trailer block, no trailers");
    });
}

#[test]
fn settings_changes_mid_connection_drive_the_send_window() {
    run(async {
        // INITIAL_WINDOW_SIZE 10: 10 bytes, then +40 by SETTINGS, then +50 by WINDOW_UPDATE.
        let mut conn = pair(&[(4, 10)], |mut f| async move {
            let h = f.next(1).await;
            assert_eq!(h.flags & 0x1, 0, "a body follows");
            let d = f.next(0).await;
            assert_eq!(d.payload.len(), 10);
            f.send(4, 0, 0, &[0, 4, 0, 0, 0, 50]).await;
            let ack = f.next(4).await;
            assert_eq!(ack.flags, 1);
            let d = f.next(0).await;
            assert_eq!((d.payload.len(), d.flags & 1), (40, 0));
            f.send(8, 0, 1, &50u32.to_be_bytes()).await;
            let d = f.next(0).await;
            assert_eq!((d.payload.len(), d.flags & 1), (50, 1));
            f.send(1, 0x5, 1, &[0x88]).await;
            while f.frame().await.is_some() {}
        })
        .await;
        let body: &'static [u8] = &[b'x'; 100];
        let r = conn
            .send(&req("POST", body), &mut Seen::default())
            .await
            .unwrap();
        assert_eq!(r.status, 200);
    });
}

#[test]
fn rst_stream_and_goaway_with_a_last_stream_id() {
    run(async {
        let conn = pair(&[], |mut f| async move {
            let h = f.next(1).await;
            f.send(3, 0, h.id, &2u32.to_be_bytes()).await; // INTERNAL_ERROR
            let h = f.next(1).await;
            f.send(3, 0, h.id, &7u32.to_be_bytes()).await; // REFUSED_STREAM
            let a = f.next(1).await;
            let b = f.next(1).await;
            assert_eq!((a.id, b.id), (5, 7));
            let mut goaway = 5u32.to_be_bytes().to_vec();
            goaway.extend_from_slice(&0u32.to_be_bytes());
            f.send(7, 0, 0, &goaway).await;
            f.send(1, 0x5, 5, &[0x88]).await;
            while f.frame().await.is_some() {}
        })
        .await;
        let mut c = conn.clone();
        let e = c
            .send(&req("GET", b""), &mut Seen::default())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Reset);
        assert!(!e.is_stale_reuse());
        let e = c
            .send(&req("GET", b""), &mut Seen::default())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Reset);
        assert!(e.is_stale_reuse(), "REFUSED_STREAM is safe to retry");
        let mut c1 = conn.clone();
        let mut c2 = conn.clone();
        let one = tokio::task::spawn_local(async move {
            c1.send(&req("GET", b""), &mut Seen::default()).await
        });
        tokio::task::yield_now().await;
        let two = tokio::task::spawn_local(async move {
            c2.send(&req("GET", b""), &mut Seen::default()).await
        });
        assert_eq!(one.await.unwrap().unwrap().status, 200);
        let e = two.await.unwrap().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ClosedEarly);
        assert!(e.is_stale_reuse(), "{e}");
        assert!(!c.is_open());
        let e = c
            .send(&req("GET", b""), &mut Seen::default())
            .await
            .unwrap_err();
        assert!(e.is_stale_reuse());
    });
}

#[test]
fn a_dropped_send_resets_its_stream() {
    run(async {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut conn = pair(&[], |mut f| async move {
            let h = f.next(1).await;
            let rst = f.next(3).await;
            assert_eq!(rst.id, h.id);
            assert_eq!(rst.payload, 8u32.to_be_bytes(), "CANCEL");
            // Late frames for the cancelled stream are ignored; the next stream works.
            f.send(1, 0x4, 1, &[0x88]).await;
            f.send(0, 0x1, 1, b"late").await;
            let h = f.next(1).await;
            assert_eq!(h.id, 3);
            f.send(1, 0x4, 3, &[0x88]).await;
            f.send(0, 0x1, 3, b"ok").await;
            let _ = tx.send(());
            while f.frame().await.is_some() {}
        })
        .await;
        let timed = tokio::time::timeout(
            Duration::from_millis(50),
            conn.send(&req("GET", b""), &mut Seen::default()),
        )
        .await;
        assert!(timed.is_err());
        let mut seen = Seen::default();
        let r = conn.send(&req("GET", b""), &mut seen).await.unwrap();
        assert_eq!((r.status, &seen.body[..]), (200, &b"ok"[..]));
        rx.await.unwrap();
    });
}

/// Malformed input is a classified error (BadResponse), never a panic; the client says GOAWAY.
#[test]
fn malformed_frames_are_protocol_errors() {
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("push promise", frame(5, 0x4, 1, &[0, 0, 0, 2, 0x88])),
        ("short ping", frame(6, 0, 0, b"1234567")),
        ("bad hpack", frame(1, 0x5, 1, &[0x80])),
        ("bad huffman", frame(1, 0x5, 1, &[0x00, 0x81, 0xff, 0x00])),
        ("data on stream 0", frame(0, 0, 0, b"x")),
        ("headers on an idle stream", frame(1, 0x5, 9, &[0x88])),
        ("window update 0", frame(8, 0, 0, &[0, 0, 0, 0])),
        ("bad settings length", frame(4, 0, 0, &[0, 1, 0])),
        (
            "max frame size too small",
            frame(4, 0, 0, &[0, 5, 0, 0, 0, 1]),
        ),
        ("padding too long", frame(0, 0x8, 1, &[9, b'a'])),
        ("interrupted header block", {
            let mut f = frame(1, 0x0, 1, &[0x88]);
            f.extend(frame(6, 0, 0, b"pingpong"));
            f
        }),
        ("oversized frame", {
            let mut f = vec![0x10, 0, 0, 0, 0, 0, 0, 0, 1];
            f.extend(vec![0; 0x100000]);
            f
        }),
    ];
    for (what, bytes) in cases {
        run(async move {
            let mut conn = pair(&[], move |mut f| async move {
                let _ = f.next(1).await;
                f.s.write_all(&bytes).await.unwrap();
                let goaway = f.next(7).await;
                assert_ne!(&goaway.payload[4..8], &[0, 0, 0, 0], "an error code");
                while f.frame().await.is_some() {}
            })
            .await;
            let e = conn
                .send(&req("GET", b""), &mut Seen::default())
                .await
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::BadResponse, "{what}: {e}");
            assert!(!conn.is_open());
        });
    }
}

/// A server that floods PING or SETTINGS frames and never reads our ACKs: the connection
/// fails as a flood (GOAWAY ENHANCE_YOUR_CALM) instead of queueing ACKs without bound (a PING
/// flood used to grow the client to ~1 GB in 2 s), and the request fails with the reason.
#[test]
fn ping_and_settings_floods_fail_the_connection_with_bounded_memory() {
    for (what, one) in [
        ("PING", frame(6, 0, 0, b"12345678")),
        ("SETTINGS", frame(4, 0, 0, &[])),
    ] {
        run(async move {
            let mut conn = pair(&[], move |mut f| async move {
                let _ = f.next(1).await;
                let burst = one.repeat(1000);
                // Never reads again; stops when the client is gone.
                while f.s.write_all(&burst).await.is_ok() {}
            })
            .await;
            let e = tokio::time::timeout(
                Duration::from_secs(10),
                conn.send(&req("GET", b""), &mut Seen::default()),
            )
            .await
            .expect("the flood ends the request")
            .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::BadResponse, "{what}: {e}");
            assert!(
                e.to_string().contains(&format!("a {what} flood")),
                "{what}: {e}"
            );
            assert!(!conn.is_open());
        });
    }
}

/// A malformed response head (no :status) fails only its stream.
#[test]
fn a_malformed_head_fails_only_its_stream() {
    run(async {
        let mut conn = pair(&[], |mut f| async move {
            let h = f.next(1).await;
            let block = [&[0x00, 1][..], b"x", &[1], b"y"].concat();
            f.send(1, 0x5, h.id, &block).await;
            let rst = f.next(3).await;
            assert_eq!(rst.payload, 1u32.to_be_bytes());
            let h = f.next(1).await;
            f.send(1, 0x5, h.id, &[0x88]).await;
            while f.frame().await.is_some() {}
        })
        .await;
        let e = conn
            .send(&req("GET", b""), &mut Seen::default())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadResponse);
        let r = conn
            .send(&req("GET", b""), &mut Seen::default())
            .await
            .unwrap();
        assert_eq!(r.status, 200);
    });
}

/// A server that is not HTTP/2 fails the handshake, not the first request.
#[test]
fn a_server_closing_before_settings_fails_the_handshake() {
    run(async {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::task::spawn_local(async move {
            let (mut s, _) = l.accept().await.unwrap();
            s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n")
                .await
                .unwrap();
        });
        let tcp = TcpStream::connect(addr).await.unwrap();
        let e = fast::handshake(
            tcp,
            http::uri::Scheme::HTTP,
            b"fake",
            &H2Settings::default(),
        )
        .await
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ConnectOther, "{e}");
    });
}

fn frame(typ: u8, flags: u8, id: u32, payload: &[u8]) -> Vec<u8> {
    let l = payload.len() as u32;
    let mut b = vec![(l >> 16) as u8, (l >> 8) as u8, l as u8, typ, flags];
    b.extend_from_slice(&id.to_be_bytes());
    b.extend_from_slice(payload);
    b
}
