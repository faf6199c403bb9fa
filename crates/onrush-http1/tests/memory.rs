//! Large bodies in constant memory: a counting global allocator measures the peak of live heap
//! bytes while a 100 MiB response and a 32 MiB file upload go through one connection.
//! Also: a kept-alive request in steady state makes no allocation at all.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{Read, Write};

use common::{fnv_of, get, listener, Reader, OK2};
use onrush_http1::{connect, ConnectOptions, Discard, RequestBody};

struct Counting;

// Per thread, so that tests running in parallel don't blur each other's figures (each test
// runs its client and canned server on its own current_thread runtime). Const-initialised:
// accessing them does not allocate.
thread_local! {
    /// Live heap bytes allocated minus freed by this thread.
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// Highest LIVE since the last reset.
    static PEAK: Cell<isize> = const { Cell::new(0) };
    /// Allocation calls made by this thread.
    static CALLS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is passed on to the system allocator unchanged; only counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        CALLS.with(|c| c.set(c.get() + 1));
        let live = LIVE.with(|l| {
            l.set(l.get() + layout.size() as isize);
            l.get()
        });
        PEAK.with(|p| p.set(p.get().max(live)));
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.with(|l| l.set(l.get() - layout.size() as isize));
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const MIB: usize = 1024 * 1024;
/// Allowed growth of the heap while a large body passes: buffers are 16-64 KiB, so 1 MiB is
/// generous and still 100x smaller than the body.
const BUDGET: usize = MIB;

/// Runs `f` and returns (its result, peak live heap bytes above the live bytes at the start).
async fn peak_during<T>(f: impl std::future::Future<Output = T>) -> (T, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let out = f.await;
    (out, (PEAK.with(Cell::get) - base) as usize)
}

#[tokio::test]
async fn hundred_mib_bodies_and_file_upload_in_constant_memory() {
    const BODY: usize = 100 * MIB;
    const FILE: usize = 32 * MIB;
    let path = std::env::temp_dir().join(format!(
        "onrush-http1-mem-{}-{:?}.bin",
        std::process::id(),
        std::thread::current().id()
    ));
    {
        let block: Vec<u8> = (0..MIB).map(|i| (i % 253) as u8).collect();
        let mut all = Vec::with_capacity(FILE);
        for _ in 0..FILE / MIB {
            all.extend_from_slice(&block);
        }
        std::fs::write(&path, &all).unwrap();
        assert_eq!(all.len(), FILE);
    }
    let file_hash = fnv_of(&std::fs::read(&path).unwrap());

    let (l, addr) = listener().await;
    let server = tokio::spawn(async move {
        let (s, _) = l.accept().await.unwrap();
        let mut r = Reader::new(s);
        let block = vec![b'x'; 64 * 1024];
        // 1: 100 MiB with Content-Length.
        r.request().await.unwrap().unwrap();
        r.write(format!("HTTP/1.1 200 OK\r\nContent-Length: {BODY}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        for _ in 0..BODY / block.len() {
            r.write(&block).await.unwrap();
        }
        // 2: 100 MiB chunked, in 64 KiB chunks.
        r.request().await.unwrap().unwrap();
        r.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            .await
            .unwrap();
        let mut framed = b"10000\r\n".to_vec();
        framed.extend_from_slice(&block);
        framed.extend_from_slice(b"\r\n");
        for _ in 0..BODY / block.len() {
            r.write(&framed).await.unwrap();
        }
        r.write(b"0\r\n\r\n").await.unwrap();
        // 3: the upload.
        let req = r.request().await.unwrap().unwrap();
        r.write(OK2).await.unwrap();
        (req.body_len, req.body_hash)
    });

    let host = addr.to_string();
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    let req = get(b"/big", host.as_bytes());
    // No warm-up: the first measured request includes the growth of the connection's buffers.
    for _ in 0..2 {
        let (r, peak) = peak_during(conn.send(&req, &mut Discard)).await;
        let r = r.unwrap();
        assert_eq!((r.status, r.body_bytes), (200, BODY as u64));
        eprintln!("peak heap growth while receiving {BODY} bytes: {peak} bytes");
        assert!(
            peak < BUDGET,
            "heap grew by {peak} bytes while receiving {BODY} bytes"
        );
    }
    let mut up = req;
    up.method = "POST";
    up.body = RequestBody::File(&path);
    let (r, peak) = peak_during(conn.send(&up, &mut Discard)).await;
    std::fs::remove_file(&path).unwrap();
    r.unwrap();
    eprintln!("peak heap growth while uploading {FILE} bytes: {peak} bytes");
    assert!(
        peak < BUDGET,
        "heap grew by {peak} bytes while uploading {FILE} bytes"
    );
    assert_eq!(server.await.unwrap(), (FILE as u64, file_hash));
}

/// A keep-alive server on its own thread (so its allocations are not counted on the client's
/// thread): answers every request head with a fixed 2-byte response.
fn blocking_server() -> std::net::SocketAddr {
    blocking_server_with(OK2.to_vec())
}

/// [`blocking_server`] answering with `response`.
fn blocking_server_with(response: Vec<u8>) -> std::net::SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_nodelay(true).unwrap();
        let mut buf = [0u8; 4096];
        let mut have = 0;
        loop {
            let n = s.read(&mut buf[have..]).unwrap();
            if n == 0 {
                return;
            }
            have += n;
            while let Some(i) = buf[..have].windows(4).position(|w| w == b"\r\n\r\n") {
                s.write_all(&response).unwrap();
                buf.copy_within(i + 4..have, 0);
                have -= i + 4;
            }
        }
    });
    addr
}

#[test]
fn steady_state_requests_do_not_allocate() {
    let addr = blocking_server();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let host = addr.to_string();
        let mut headers = Vec::new();
        onrush_http1::push_header(&mut headers, b"User-Agent", b"onrush/test").unwrap();
        let mut req = get(b"/bytes/2?x=1", host.as_bytes());
        req.headers = &headers;
        let body = b"{\"small\": \"json body\"}";
        let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
        for _ in 0..10 {
            conn.send(&req, &mut Discard).await.unwrap(); // warm-up
        }
        let before = CALLS.with(Cell::get);
        for i in 0..1000 {
            req.method = if i % 2 == 0 { "GET" } else { "POST" };
            req.body = if i % 2 == 0 {
                RequestBody::Empty
            } else {
                RequestBody::Bytes(body)
            };
            let r = conn.send(&req, &mut Discard).await.unwrap();
            assert!(r.keep_alive);
        }
        let calls = CALLS.with(Cell::get) - before;
        assert_eq!(calls, 0, "{calls} allocations in 1000 kept-alive requests");
    });
}

/// Decompression in constant memory: 64 MiB bodies compressed with gzip and brotli pass through
/// a `Decompress` sink with a bounded heap (32 KiB output buffer, the inflater's 32 KiB window;
/// brotli's window, 4 MiB at lgwin 22), a 32 MiB multipart upload likewise; and kept-alive gzip
/// responses through a reused `Decompress` allocate nothing at all.
#[tokio::test]
async fn decompression_and_multipart_in_constant_memory() {
    use onrush_http1::{Decompress, Multipart, Part};
    const PLAIN: usize = 64 * MIB;
    let zeros = vec![0u8; MIB];
    let gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        for _ in 0..PLAIN / MIB {
            e.write_all(&zeros).unwrap();
        }
        e.finish().unwrap()
    };
    let br = {
        let mut out = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut out, 64 * 1024, 1, 22);
            for _ in 0..PLAIN / MIB {
                w.write_all(&zeros).unwrap();
            }
        }
        out
    };
    let small_gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b"a small gzip body, a small gzip body")
            .unwrap();
        e.finish().unwrap()
    };
    const FILE: usize = 32 * MIB;
    let path = std::env::temp_dir().join(format!(
        "onrush-http1-mem-mp-{}-{:?}.bin",
        std::process::id(),
        std::thread::current().id()
    ));
    {
        let mut f = std::fs::File::create(&path).unwrap();
        let block: Vec<u8> = (0..MIB).map(|i| (i % 251) as u8).collect();
        for _ in 0..FILE / MIB {
            f.write_all(&block).unwrap();
        }
    }
    let m = Multipart::new(vec![
        Part::Text {
            name: "t".into(),
            value: b"v".to_vec(),
        },
        Part::File {
            name: "f".into(),
            file_name: "big.bin".into(),
            content_type: "application/octet-stream".into(),
            path: path.clone(),
        },
    ])
    .unwrap();
    let mp_len = m.content_length();

    let responses: Vec<Vec<u8>> = [("gzip", &gz), ("br", &br)]
        .iter()
        .map(|(enc, body)| {
            let mut r = format!(
                "HTTP/1.1 200 OK\r\nContent-Encoding: {enc}\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .into_bytes();
            r.extend_from_slice(body);
            r
        })
        .collect();
    let mut small = format!(
        "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
        small_gz.len()
    )
    .into_bytes();
    small.extend_from_slice(&small_gz);

    let (l, addr) = listener().await;
    let server = tokio::spawn(async move {
        let (s, _) = l.accept().await.unwrap();
        let mut r = Reader::new(s);
        for resp in &responses {
            r.request().await.unwrap().unwrap();
            r.write(resp).await.unwrap();
        }
        let up = r.request().await.unwrap().unwrap();
        r.write(OK2).await.unwrap();
        up.body_len
    });

    let host = addr.to_string();
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    let req = get(b"/z", host.as_bytes());
    let mut sink = Decompress::new(Discard);
    for budget in [BUDGET, 5 * MIB] {
        let (r, peak) = peak_during(conn.send(&req, &mut sink)).await;
        r.unwrap();
        assert_eq!(sink.error(), None);
        assert_eq!(sink.decoded_bytes(), PLAIN as u64);
        eprintln!(
            "peak heap growth decoding {PLAIN} bytes of {:?}: {peak} bytes",
            sink.encoding()
        );
        assert!(
            peak < budget,
            "{:?}: heap grew by {peak} bytes",
            sink.encoding()
        );
    }
    let mut up = req;
    up.method = "POST";
    up.body = RequestBody::Multipart(&m);
    let (r, peak) = peak_during(conn.send(&up, &mut Discard)).await;
    r.unwrap();
    eprintln!("peak heap growth uploading a {mp_len}-byte multipart body: {peak} bytes");
    assert!(peak < BUDGET, "heap grew by {peak} bytes");

    drop(conn);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(server.await.unwrap(), mp_len);

    // Steady state: a server on another thread, so that only the client's allocations count.
    let addr = blocking_server_with(small);
    let mut conn = connect(addr, &ConnectOptions::default()).await.unwrap();
    for _ in 0..5 {
        conn.send(&req, &mut sink).await.unwrap(); // warm-up
    }
    let before = CALLS.with(Cell::get);
    for _ in 0..200 {
        conn.send(&req, &mut sink).await.unwrap();
        assert_eq!(sink.decoded_bytes(), 36);
    }
    let calls = CALLS.with(Cell::get) - before;
    assert_eq!(calls, 0, "{calls} allocations in 200 gzip responses");
}
