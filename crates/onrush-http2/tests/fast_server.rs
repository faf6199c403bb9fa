//! `onrush_http2::fast` against the built-in server (h2c and TLS with ALPN h2), differentially
//! against the h2-crate client (`onrush_http2::reference::H2Connection`).

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use onrush_http::{
    BodySink, ConnectOptions, ErrorKind, Headers, Request, RequestBody, SessionMode, TlsClient,
    TlsOptions,
};
use onrush_http2::{fast, H2Settings};
use onrush_server::{Http2Config, ServerConfig, ServerHandle, ServerOptions, ServerTls};

fn run<F: Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f)
}

fn config() -> ServerConfig {
    ServerConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
    }
}

fn h2c_server() -> ServerHandle {
    onrush_server::start(config()).unwrap()
}

fn tls_server() -> ServerHandle {
    onrush_server::start_tls(config(), ServerTls::default()).unwrap()
}

/// What a sink saw.
#[derive(Debug, Default, PartialEq, Eq, Clone)]
struct Seen {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    heads: u32,
    ends: u32,
}

impl BodySink for Seen {
    fn data(&mut self, chunk: &[u8]) {
        assert!(!chunk.is_empty());
        self.body.extend_from_slice(chunk);
    }
    fn head(&mut self, status: u16, headers: &Headers<'_>) {
        self.status = status;
        self.heads += 1;
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
}

impl Seen {
    /// Headers sorted, `date` left out (it changes every second).
    fn comparable(mut self) -> Seen {
        self.headers.retain(|(n, _)| n != "date");
        self.headers.sort();
        self
    }
}

/// Counts body bytes without keeping them.
#[derive(Default)]
struct Count {
    bytes: u64,
    pattern_ok: bool,
}

impl BodySink for Count {
    fn data(&mut self, chunk: &[u8]) {
        // /bytes/N: byte i is i % 256.
        for (k, b) in chunk.iter().enumerate().step_by(4093) {
            if *b != ((self.bytes + k as u64) % 256) as u8 {
                self.pattern_ok = false;
            }
        }
        self.bytes += chunk.len() as u64;
    }
}

fn get(target: &[u8]) -> Request<'_> {
    Request {
        method: "GET",
        target,
        host: b"127.0.0.1",
        headers: b"",
        body: RequestBody::Empty,
        close: false,
    }
}

async fn fast_h2c(addr: SocketAddr) -> fast::H2Connection {
    fast::connect_h2c(
        addr,
        &ConnectOptions::default(),
        addr.to_string().as_bytes(),
        &H2Settings::default(),
    )
    .await
    .unwrap()
}

async fn tls_stream(
    addr: SocketAddr,
) -> impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static {
    let client = TlsClient::new(&TlsOptions {
        alpn: vec![b"h2".to_vec()],
        insecure: true,
        ..TlsOptions::default()
    })
    .unwrap();
    let session = client.session(SessionMode::Full, 1);
    let (stream, _, _) =
        onrush_http::connect_tls_stream(addr, &ConnectOptions::default(), &session, "localhost")
            .await
            .unwrap();
    assert_eq!(stream.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    stream
}

/// (method, target, header lines, body)
type Case = (&'static str, &'static [u8], &'static [u8], &'static [u8]);

fn requests() -> Vec<Case> {
    // (method, target, header lines, body)
    vec![
        ("GET", b"/", b"", b""),
        ("GET", b"/bytes/1000", b"", b""),
        ("GET", b"/bytes/300000", b"", b""),
        ("GET", b"/bytes/70000?chunked=1", b"", b""),
        ("GET", b"/status/404", b"", b""),
        ("GET", b"/status/204", b"", b""),
        ("HEAD", b"/bytes/10", b"", b""),
        ("GET", b"/json", b"Accept: application/json\r\n", b""),
        (
            "GET",
            b"/headers",
            b"X-One: 1\r\nUser-Agent: onrush-test\r\nConnection: close\r\n",
            b"",
        ),
        (
            "POST",
            b"/echo?q=1",
            b"Content-Type: text/plain\r\n",
            b"hello body",
        ),
        ("POST", b"/upload", b"", b""),
        ("PUT", b"/echo", b"", b""),
        ("GET", b"/cookies/set?a=1&b=2", b"", b""),
        ("GET", b"/redirect/2", b"", b""),
        ("GET", b"/gzip", b"Accept-Encoding: gzip\r\n", b""),
        ("DELETE", b"/query?x=1&x=2&y", b"", b""),
    ]
}

/// The same requests, one at a time, through both clients over TLS: same statuses, headers
/// (but `date`), bodies.
#[test]
fn differential_against_the_h2_crate_over_tls() {
    let server = tls_server();
    let addr = server.local_addr();
    run(async move {
        let mut fast = fast::handshake(
            tls_stream(addr).await,
            http::uri::Scheme::HTTPS,
            b"localhost",
            &H2Settings::default(),
        )
        .await
        .unwrap();
        let mut h2 = onrush_http2::reference::handshake(
            tls_stream(addr).await,
            http::uri::Scheme::HTTPS,
            b"localhost",
            &H2Settings::default(),
        )
        .await
        .unwrap();
        for (method, target, headers, body) in requests() {
            let req = Request {
                method,
                target,
                host: b"localhost",
                headers,
                body: if body.is_empty() {
                    RequestBody::Empty
                } else {
                    RequestBody::Bytes(body)
                },
                close: false,
            };
            let mut a = Seen::default();
            let ra = fast.send(&req, &mut a).await.unwrap();
            let mut b = Seen::default();
            let rb = h2.send(&req, &mut b).await.unwrap();
            let what = String::from_utf8_lossy(target);
            assert_eq!((a.heads, a.ends), (1, 1), "{what}");
            assert_eq!(ra.status, rb.status, "{what}");
            assert_eq!(ra.body_bytes, rb.body_bytes, "{what}");
            assert_eq!(ra.body_bytes, a.body.len() as u64, "{what}");
            assert_eq!(ra.head_bytes, rb.head_bytes, "{what}");
            assert!(ra.bytes_in > 0 && ra.bytes_out > 0, "{what}");
            assert_eq!(a.clone().comparable(), b.clone().comparable(), "{what}");
        }
    });
}

/// h2c: the same through prior knowledge, plus 1 MiB body bytes compared.
#[test]
fn differential_against_the_h2_crate_over_h2c() {
    let server = h2c_server();
    let addr = server.local_addr();
    run(async move {
        let mut fast = fast_h2c(addr).await;
        let mut h2 = onrush_http2::reference::connect_h2c(
            addr,
            &ConnectOptions::default(),
            addr.to_string().as_bytes(),
            &H2Settings::default(),
        )
        .await
        .unwrap();
        let body = vec![7u8; 1 << 20];
        for (method, target, body) in [
            ("GET", &b"/bytes/1048576"[..], &b""[..]),
            ("POST", b"/echo", &body[..]),
            ("POST", b"/upload", &body[..]),
        ] {
            let req = Request {
                method,
                target,
                host: b"localhost",
                headers: b"",
                body: RequestBody::Bytes(body),
                close: false,
            };
            let mut a = Seen::default();
            fast.send(&req, &mut a).await.unwrap();
            let mut b = Seen::default();
            h2.send(&req, &mut b).await.unwrap();
            assert_eq!(a.comparable(), b.comparable());
        }
    });
}

/// A 20 MiB file body to /upload (and a multipart one to /form) under flow control: the
/// server's 2 MiB stream window (and then a 64 KiB one) must be honoured.
#[test]
fn a_big_file_upload_honours_flow_control() {
    for stream_window in [2 << 20, 65_535] {
        let server = onrush_server::start_with_options(
            config(),
            ServerOptions {
                tls: None,
                http3: false,
                http2: Http2Config {
                    stream_window,
                    connection_window: 1 << 20,
                    ..Http2Config::default()
                },
            },
        )
        .unwrap();
        let addr = server.local_addr();
        let dir = std::env::temp_dir().join(format!(
            "onrush-h2-fast-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("body.bin");
        let data: Vec<u8> = (0..20u32 << 20).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        run(async {
            let mut conn = fast_h2c(addr).await;
            let mut h2 = onrush_http2::reference::connect_h2c(
                addr,
                &ConnectOptions::default(),
                b"localhost",
                &H2Settings::default(),
            )
            .await
            .unwrap();
            let req = Request {
                method: "POST",
                target: b"/upload",
                host: b"localhost",
                headers: b"",
                body: RequestBody::File(&path),
                close: false,
            };
            let mut a = Seen::default();
            let resp = conn.send(&req, &mut a).await.unwrap();
            assert_eq!(resp.status, 200);
            let text = String::from_utf8_lossy(&a.body).into_owned();
            assert!(text.contains("\"length\":20971520"), "{text}");
            assert!(resp.bytes_out > 20 << 20);
            let mut b = Seen::default();
            h2.send(&req, &mut b).await.unwrap();
            assert_eq!(a.body, b.body, "same sha256 through both clients");

            let m = onrush_http::Multipart::new(vec![
                onrush_http::Part::Text {
                    name: "name".into(),
                    value: b"value".to_vec(),
                },
                onrush_http::Part::File {
                    name: "file".into(),
                    file_name: "body.bin".into(),
                    content_type: "application/octet-stream".into(),
                    path: path.clone(),
                },
            ])
            .unwrap();
            let req = Request {
                method: "POST",
                target: b"/form",
                host: b"localhost",
                headers: b"",
                body: RequestBody::Multipart(&m),
                close: false,
            };
            let mut a = Seen::default();
            conn.send(&req, &mut a).await.unwrap();
            let mut b = Seen::default();
            h2.send(&req, &mut b).await.unwrap();
            assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
            assert_eq!(a.body, b.body);
        });
        std::fs::remove_dir_all(&dir).ok();
    }
}

/// 100 concurrent streams on one connection whose server allows 10 at once: all complete,
/// never more than 10 in flight.
#[test]
fn streams_beyond_max_concurrent_wait_for_a_slot() {
    let server = onrush_server::start_with_options(
        config(),
        ServerOptions {
            tls: None,
            http3: false,
            http2: Http2Config {
                max_concurrent_streams: 10,
                ..Http2Config::default()
            },
        },
    )
    .unwrap();
    let addr = server.local_addr();
    run(async move {
        let conn = fast_h2c(addr).await;
        let mut tasks = Vec::new();
        for i in 0..100 {
            let mut c = conn.clone();
            tasks.push(tokio::task::spawn_local(async move {
                let target = if i % 3 == 0 {
                    "/delay/20"
                } else {
                    "/bytes/5000"
                };
                let mut seen = Seen::default();
                let r = c.send(&get(target.as_bytes()), &mut seen).await.unwrap();
                assert_eq!(r.status, 200);
                seen.body.len()
            }));
        }
        let mut total = 0;
        for t in tasks {
            total += t.await.unwrap();
        }
        assert!(total > 60 * 5000);
    });
    let h2 = server.h2_stats();
    assert_eq!(h2.streams, 100);
    assert_eq!(h2.connections, 1);
    assert!((2..=10).contains(&h2.max_concurrent_streams), "{:?}", h2);
}

/// A send future dropped mid-way (a timeout) resets its stream; the connection carries on.
#[test]
fn a_dropped_send_leaves_the_connection_usable() {
    let server = h2c_server();
    let addr = server.local_addr();
    run(async move {
        let mut conn = fast_h2c(addr).await;
        for _ in 0..3 {
            let mut seen = Seen::default();
            let timed = tokio::time::timeout(
                Duration::from_millis(30),
                conn.send(&get(b"/delay/2000"), &mut seen),
            )
            .await;
            assert!(timed.is_err());
            // Mid-body too: a big download abandoned after its head.
            let _ = tokio::time::timeout(
                Duration::from_millis(5),
                conn.send(&get(b"/bytes/1073741824"), &mut Count::default()),
            )
            .await;
            let mut seen = Seen::default();
            let r = conn.send(&get(b"/"), &mut seen).await.unwrap();
            assert_eq!(r.status, 200);
            assert_eq!(seen.body, b"Hello from onrush\n");
            assert!(conn.is_open());
        }
    });
}

/// The server going away makes the next send a stale error (retry on a new connection).
#[test]
fn a_closed_connection_makes_the_next_send_stale() {
    let server = h2c_server();
    let addr = server.local_addr();
    run(async move {
        let mut conn = fast_h2c(addr).await;
        conn.send(&get(b"/"), &mut Seen::default()).await.unwrap();
        server.shutdown();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!conn.is_open());
        let e = conn
            .send(&get(b"/"), &mut Seen::default())
            .await
            .unwrap_err();
        assert!(e.is_stale_reuse(), "{e}");
    });
}

/// Many handles, many requests, over TLS: every response complete, statuses right.
#[test]
fn many_concurrent_requests_over_tls() {
    let server = tls_server();
    let addr = server.local_addr();
    run(async move {
        let conn = fast::handshake(
            tls_stream(addr).await,
            http::uri::Scheme::HTTPS,
            b"localhost",
            &H2Settings::default(),
        )
        .await
        .unwrap();
        let mut tasks = Vec::new();
        for i in 0..10u32 {
            let mut c = conn.clone();
            tasks.push(tokio::task::spawn_local(async move {
                for k in 0..200u32 {
                    let target = format!("/bytes/{}", (i * 7919 + k * 31) % 40000);
                    let mut count = Count {
                        bytes: 0,
                        pattern_ok: true,
                    };
                    let r = c.send(&get(target.as_bytes()), &mut count).await.unwrap();
                    assert_eq!(r.status, 200);
                    assert_eq!(count.bytes, (i * 7919 + k * 31) as u64 % 40000);
                    assert!(count.pattern_ok);
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert_eq!(server.h2_stats().streams, 2000);
}

/// Invalid requests fail before anything is sent; the connection stays usable.
#[test]
fn invalid_requests_fail_cleanly() {
    let server = h2c_server();
    let addr = server.local_addr();
    run(async move {
        let mut conn = fast_h2c(addr).await;
        let mut req = get(b"/");
        req.headers = b"X-Bad: a\0b\r\n";
        let e = conn.send(&req, &mut Seen::default()).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io);
        assert!(!e.is_stale_reuse());
        let r = conn.send(&get(b"/"), &mut Seen::default()).await.unwrap();
        assert_eq!(r.status, 200);
    });
}
