//! The HTTP-realism primitives against hyper's server: response heads reaching the sink (and
//! a cookie jar fed from them), multipart uploads parsed by `multer`, streaming decompression
//! of gzip / deflate / br bodies compressed by flate2 and brotli, and bandwidth caps.

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::{Instant, SystemTime};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use onrush_http1::cookies::CookieJar;
use onrush_http1::{
    connect, connect_any, connect_throttled, push_header, AnyConnection, BodySink, ConnectOptions,
    Decompress, Discard, Encoding, ErrorKind, Headers, Multipart, Part, Request, RequestBody,
};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;

const MIB: usize = 1024 * 1024;

/// 10 MiB of text-like, compressible bytes.
fn plain_body() -> &'static [u8] {
    static BODY: OnceLock<Vec<u8>> = OnceLock::new();
    BODY.get_or_init(|| {
        let mut v = Vec::with_capacity(10 * MIB + 100);
        let mut i = 0u64;
        while v.len() < 10 * MIB {
            writeln!(
                v,
                "line {i}: onrush streams this body through a fixed buffer, {}",
                i.wrapping_mul(2_654_435_761) % 1000
            )
            .unwrap();
            i += 1;
        }
        v.truncate(10 * MIB);
        v
    })
}

fn compressed(kind: &str) -> Bytes {
    static CACHE: OnceLock<std::sync::Mutex<Vec<(String, Bytes)>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some((_, b)) = cache.lock().unwrap().iter().find(|(k, _)| k == kind) {
        return b.clone();
    }
    let body = plain_body();
    let level = flate2::Compression::new(6);
    let out = match kind {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), level);
            e.write_all(body).unwrap();
            e.finish().unwrap()
        }
        "deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), level);
            e.write_all(body).unwrap();
            e.finish().unwrap()
        }
        "rawdeflate" => {
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), level);
            e.write_all(body).unwrap();
            e.finish().unwrap()
        }
        "br" => {
            let mut out = Vec::new();
            {
                let mut w = brotli::CompressorWriter::new(&mut out, 64 * 1024, 5, 22);
                w.write_all(body).unwrap();
            }
            out
        }
        _ => unreachable!(),
    };
    let out = Bytes::from(out);
    cache.lock().unwrap().push((kind.to_string(), out.clone()));
    out
}

fn sha_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Routes:
/// - `/cookies`: three Set-Cookie headers (after a 103), echoes the request's Cookie header.
/// - `/enc/KIND` (`gzip`, `deflate`, `rawdeflate`, `br`): the 10 MiB body compressed.
/// - `/corrupt/KIND`, `/truncated/KIND`: the same, damaged.
/// - `/multipart`: parses a multipart/form-data body with multer, answers a summary.
/// - `/len/N`: N bytes. `/count`: the request body's length.
async fn handle(req: hyper::Request<Incoming>) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_string();
    let mut parts = path.split('/').skip(1);
    let route = parts.next().unwrap_or("");
    let arg = parts.next().unwrap_or("").to_string();
    let mut builder = hyper::Response::builder();
    let body: Bytes = match route {
        "cookies" => {
            builder = builder
                .header("Set-Cookie", "sid=abc123; Path=/; HttpOnly")
                .header("Content-Type", "text/plain")
                .header("set-cookie", "theme=dark; Max-Age=3600")
                .header("Set-Cookie", "gone=1; Max-Age=0")
                .header("Set-Cookie", "scoped=1; Path=/cookies/deep");
            let cookie = req
                .headers()
                .get("cookie")
                .map(|v| v.as_bytes().to_vec())
                .unwrap_or_default();
            Bytes::from(cookie)
        }
        "enc" | "corrupt" | "truncated" => {
            let coding = if arg == "rawdeflate" { "deflate" } else { &arg };
            builder = builder.header("Content-Encoding", coding);
            let data = compressed(&arg);
            match route {
                "enc" => data,
                "truncated" => data.slice(..data.len() / 2),
                _ => {
                    let mut v = data.to_vec();
                    // Damage the stream early and late.
                    for i in (v.len() / 3..v.len() / 3 + 64).chain(v.len() - 20..v.len() - 10) {
                        v[i] ^= 0x5a;
                    }
                    Bytes::from(v)
                }
            }
        }
        "multipart" => {
            let ct = req
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let boundary = multer::parse_boundary(&ct).unwrap();
            let mut mp = multer::Multipart::new(req.into_body().into_data_stream(), boundary);
            let mut summary = String::new();
            while let Some(field) = mp.next_field().await.unwrap() {
                let name = field.name().unwrap_or("").to_string();
                let file = field.file_name().map(str::to_string);
                let ctype = field.content_type().map(|m| m.to_string());
                let data = field.bytes().await.unwrap();
                match file {
                    Some(f) => summary.push_str(&format!(
                        "file {name} {f} {} {} {}\n",
                        ctype.unwrap_or_default(),
                        data.len(),
                        sha_hex(&data)
                    )),
                    None => summary.push_str(&format!(
                        "field {name}={}\n",
                        String::from_utf8_lossy(&data)
                    )),
                }
            }
            Bytes::from(summary)
        }
        "len" => Bytes::from(vec![b'x'; arg.parse::<usize>().unwrap()]),
        "count" => {
            let body = req.into_body().collect().await.unwrap().to_bytes();
            Bytes::from(body.len().to_string())
        }
        _ => Bytes::from_static(b"?"),
    };
    Ok(builder.body(Full::new(body)).unwrap())
}

async fn server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service_fn(handle))
                    .await;
            });
        }
    });
    addr
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

/// Status, Set-Cookie values, Content-Type.
type SeenHead = (u16, Vec<Vec<u8>>, Option<Vec<u8>>);

/// Records heads (status, Set-Cookie values) and hashes the body.
#[derive(Default)]
struct Recorder {
    heads: Vec<SeenHead>,
    body: Vec<u8>,
    hasher: Sha256,
    len: u64,
    keep: bool,
    ends: u32,
}

impl BodySink for Recorder {
    fn data(&mut self, chunk: &[u8]) {
        assert!(!self.heads.is_empty(), "data before head");
        self.hasher.update(chunk);
        self.len += chunk.len() as u64;
        if self.keep {
            self.body.extend_from_slice(chunk);
        }
    }
    fn head(&mut self, status: u16, headers: &Headers<'_>) {
        let cookies = headers.get_all("set-cookie").map(<[u8]>::to_vec).collect();
        let ct = headers.get("content-type").map(<[u8]>::to_vec);
        self.heads.push((status, cookies, ct));
    }
    fn end(&mut self) {
        self.ends += 1;
    }
}

#[tokio::test]
async fn heads_reach_the_sink_and_feed_a_cookie_jar() {
    let addr = server().await;
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    let mut jar = CookieJar::new();
    let mut rec = Recorder {
        keep: true,
        ..Default::default()
    };
    let resp = conn.send(&get(b"/cookies"), &mut rec).await.unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(rec.heads.len(), 1);
    let (status, cookies, ct) = &rec.heads[0];
    assert_eq!(*status, 200);
    assert_eq!(ct.as_deref(), Some(&b"text/plain"[..]));
    assert_eq!(
        cookies,
        &[
            b"sid=abc123; Path=/; HttpOnly".to_vec(),
            b"theme=dark; Max-Age=3600".to_vec(),
            b"gone=1; Max-Age=0".to_vec(),
            b"scoped=1; Path=/cookies/deep".to_vec(),
        ]
    );
    assert_eq!(rec.ends, 1);
    assert!(rec.body.is_empty(), "no Cookie sent the first time");
    let now = SystemTime::now();
    for c in cookies {
        jar.store(c, "127.0.0.1", b"/cookies", now);
    }
    assert_eq!(jar.len(), 3);

    // The next request carries them, longest path first.
    let mut headers = Vec::new();
    let mut value = Vec::new();
    assert!(jar.header_value("127.0.0.1", b"/cookies/deep/x", false, now, &mut value));
    push_header(&mut headers, b"Cookie", &value).unwrap();
    let req = Request {
        headers: &headers,
        ..get(b"/cookies/deep/x")
    };
    let mut rec = Recorder {
        keep: true,
        ..Default::default()
    };
    conn.send(&req, &mut rec).await.unwrap();
    assert_eq!(rec.body, b"scoped=1; sid=abc123; theme=dark");

    // Discard ignores heads (the default method) and costs nothing.
    let resp = conn.send(&get(b"/len/10"), &mut Discard).await.unwrap();
    assert_eq!(resp.body_bytes, 10);
}

fn multipart_parts(file: &std::path::Path) -> Vec<Part> {
    vec![
        Part::Text {
            name: "user".into(),
            value: b"alice".to_vec(),
        },
        Part::File {
            name: "upload".into(),
            file_name: "data.bin".into(),
            content_type: "application/octet-stream".into(),
            path: file.to_path_buf(),
        },
        Part::Text {
            name: "note".into(),
            value: "multi word, ünïcode\r\nsecond line".as_bytes().to_vec(),
        },
    ]
}

#[tokio::test]
async fn multipart_upload_parsed_by_multer() {
    let dir = std::env::temp_dir().join(format!(
        "onrush-http1-mp-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("data.bin");
    let data: Vec<u8> = (0..5_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&file, &data).unwrap();
    let m = Multipart::new(multipart_parts(&file)).unwrap();
    assert!(m
        .content_type()
        .starts_with("multipart/form-data; boundary=onrush-"));
    assert!(m.content_length() > 5_000_000);

    let addr = server().await;
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    let expected = format!(
        "field user=alice\nfile upload data.bin application/octet-stream 5000000 {}\n\
         field note=multi word, ünïcode\r\nsecond line\n",
        sha_hex(&data)
    );
    // The same Multipart for several requests on one connection.
    for _ in 0..3 {
        let req = Request {
            method: "POST",
            body: RequestBody::Multipart(&m),
            ..get(b"/multipart")
        };
        let mut rec = Recorder {
            keep: true,
            ..Default::default()
        };
        let resp = conn.send(&req, &mut rec).await.unwrap();
        assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&rec.body));
        assert_eq!(String::from_utf8(rec.body).unwrap(), expected);
        let head_len = resp.bytes_out - m.content_length();
        assert!(head_len < 300, "head {head_len} bytes");
    }

    // A file that changed size since the Multipart was built: an error, nothing sent.
    std::fs::write(&file, &data[..4_000_000]).unwrap();
    let req = Request {
        method: "POST",
        body: RequestBody::Multipart(&m),
        ..get(b"/multipart")
    };
    let e = conn.send(&req, &mut Discard).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(e.to_string().contains("changed size"), "{e}");
    // Rebuilt, it works again (on a new connection: the failed one is not reused).
    let m = Multipart::new(multipart_parts(&file)).unwrap();
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    let req = Request {
        method: "POST",
        body: RequestBody::Multipart(&m),
        ..get(b"/multipart")
    };
    let mut rec = Recorder {
        keep: true,
        ..Default::default()
    };
    conn.send(&req, &mut rec).await.unwrap();
    assert!(String::from_utf8(rec.body)
        .unwrap()
        .contains(&format!("4000000 {}", sha_hex(&data[..4_000_000]))));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn multipart_layout_and_boundary_checks() {
    let m = Multipart::with_boundary(
        vec![
            Part::Text {
                name: "a\"b".into(),
                value: b"1".to_vec(),
            },
            Part::Text {
                name: "c".into(),
                value: Vec::new(),
            },
        ],
        "XyZ",
    )
    .unwrap();
    assert_eq!(m.boundary(), "XyZ");
    assert_eq!(m.content_type(), "multipart/form-data; boundary=XyZ");
    let body = "--XyZ\r\nContent-Disposition: form-data; name=\"a%22b\"\r\n\r\n1\r\n\
                --XyZ\r\nContent-Disposition: form-data; name=\"c\"\r\n\r\n\r\n--XyZ--\r\n";
    assert_eq!(m.content_length(), body.len() as u64);
    // A boundary that appears in a field is refused; an invalid one too.
    let clash = vec![Part::Text {
        name: "x".into(),
        value: b"..XyZ..".to_vec(),
    }];
    assert!(Multipart::with_boundary(clash.clone(), "XyZ").is_err());
    assert!(Multipart::with_boundary(clash.clone(), "bad boundary").is_err());
    assert!(Multipart::with_boundary(clash.clone(), "").is_err());
    // Random boundaries differ and avoid the text.
    let a = Multipart::new(clash.clone()).unwrap();
    let b = Multipart::new(clash).unwrap();
    assert_ne!(a.boundary(), b.boundary());
    assert_eq!(a.boundary().len(), "onrush-".len() + 32);
    // A missing file and a bad content type are errors at build time.
    let e = Multipart::new(vec![Part::File {
        name: "f".into(),
        file_name: "f".into(),
        content_type: "text/plain".into(),
        path: "/nonexistent/onrush/file".into(),
    }])
    .unwrap_err();
    assert!(e.to_string().contains("/nonexistent/onrush/file"), "{e}");
    let e = Multipart::new(vec![Part::File {
        name: "f".into(),
        file_name: "f".into(),
        content_type: "text/plain\r\nX: y".into(),
        path: "/".into(),
    }])
    .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
}

#[tokio::test]
async fn decompression_round_trips_10_mib_in_each_encoding() {
    let addr = server().await;
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    let want = sha_hex(plain_body());
    // One Decompress reused for every response, as a VU would.
    let mut sink = Decompress::new(Recorder::default());
    for (kind, encoding) in [
        ("gzip", Encoding::Gzip),
        ("deflate", Encoding::Deflate),
        ("rawdeflate", Encoding::Deflate),
        ("br", Encoding::Brotli),
        ("gzip", Encoding::Gzip),
    ] {
        *sink.get_mut() = Recorder::default();
        let target = format!("/enc/{kind}");
        let resp = conn.send(&get(target.as_bytes()), &mut sink).await.unwrap();
        assert_eq!(resp.status, 200);
        assert_eq!(sink.error(), None, "{kind}");
        assert_eq!(sink.encoding(), encoding, "{kind}");
        assert_eq!(sink.decoded_bytes(), (10 * MIB) as u64, "{kind}");
        assert_eq!(sink.encoded_bytes(), resp.body_bytes, "{kind}");
        assert!(
            resp.body_bytes < (3 * MIB) as u64,
            "{kind}: compressed to {}",
            resp.body_bytes
        );
        let rec = sink.get_mut();
        assert_eq!(rec.len, (10 * MIB) as u64);
        assert_eq!(rec.ends, 1);
        assert_eq!(
            hex(&std::mem::take(&mut rec.hasher).finalize()),
            want,
            "{kind}"
        );
    }
    // Identity passes through.
    *sink.get_mut() = Recorder::default();
    let resp = conn.send(&get(b"/len/1000"), &mut sink).await.unwrap();
    assert_eq!(
        (
            sink.encoding(),
            sink.error(),
            sink.decoded_bytes(),
            resp.body_bytes
        ),
        (Encoding::Identity, None, 1000, 1000)
    );
}

#[tokio::test]
async fn corrupt_and_truncated_bodies_are_reported() {
    let addr = server().await;
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    let mut sink = Decompress::new(Discard);
    for kind in ["gzip", "deflate", "rawdeflate", "br"] {
        for route in ["corrupt", "truncated"] {
            let target = format!("/{route}/{kind}");
            let resp = conn.send(&get(target.as_bytes()), &mut sink).await.unwrap();
            assert_eq!(resp.status, 200);
            let e = sink.error().unwrap_or_else(|| panic!("{target}: no error"));
            assert!(
                e.contains("corrupt") || e.contains("truncated"),
                "{target}: {e}"
            );
            if route == "truncated" {
                assert!(sink.decoded_bytes() < (10 * MIB) as u64, "{target}");
            }
            // The connection is still fine: the framing was intact.
            assert!(conn.is_reusable());
        }
    }
    // The error is cleared by the next response.
    conn.send(&get(b"/enc/gzip"), &mut sink).await.unwrap();
    assert_eq!(sink.error(), None);
}

#[tokio::test]
async fn throttled_download_and_upload() {
    let addr = server().await;
    let opts = ConnectOptions {
        throttle: Some(500_000),
        ..Default::default()
    };
    // connect refuses a throttle rather than ignore it.
    let e = connect(addr, &opts).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectOther);

    let mut conn = connect_throttled(addr, &opts).await.unwrap();
    let started = Instant::now();
    let resp = conn
        .send(&get(b"/len/1000000"), &mut Discard)
        .await
        .unwrap();
    let took = started.elapsed().as_secs_f64();
    assert_eq!(resp.body_bytes, 1_000_000);
    assert!(
        (1.6..3.0).contains(&took),
        "1 MB at 500 KB/s took {took:.2} s"
    );

    let opts = ConnectOptions {
        throttle: Some(200_000),
        ..Default::default()
    };
    let (mut conn, handshake) = connect_any(addr, &opts, None).await.unwrap();
    assert!(handshake.is_none());
    assert!(matches!(conn, AnyConnection::Throttled(_)));
    let upload = vec![b'u'; 400_000];
    let req = Request {
        method: "POST",
        body: RequestBody::Bytes(&upload),
        ..get(b"/count")
    };
    let mut rec = Recorder {
        keep: true,
        ..Default::default()
    };
    let started = Instant::now();
    conn.send(&req, &mut rec).await.unwrap();
    let took = started.elapsed().as_secs_f64();
    assert_eq!(rec.body, b"400000");
    assert!(
        (1.6..3.0).contains(&took),
        "400 KB at 200 KB/s took {took:.2} s"
    );
    assert!(conn.is_reusable());
    assert_eq!(conn.requests_sent(), 1);

    // Without a throttle connect_any gives the plain, unwrapped connection.
    let (conn, _) = connect_any(addr, &ConnectOptions::default(), None)
        .await
        .unwrap();
    assert!(matches!(conn, AnyConnection::Plain(_)));
}
