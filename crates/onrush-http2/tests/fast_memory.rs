//! `onrush_http2::fast`: a 256 MiB download streams in flat memory (its own test binary, so
//! that no other test's allocations show in the process's RSS).

use std::future::Future;

use onrush_http::{BodySink, ConnectOptions, Request, RequestBody};
use onrush_http2::{fast, H2Settings};

fn run<F: Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tokio::task::LocalSet::new().block_on(&rt, f)
}

/// Counts body bytes without keeping them, checking the `/bytes/N` pattern (byte i is i % 256).
#[derive(Default)]
struct Count {
    bytes: u64,
    pattern_ok: bool,
}

impl BodySink for Count {
    fn data(&mut self, chunk: &[u8]) {
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

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// 256 MiB streams through with flat memory.
#[test]
fn a_big_download_streams_in_flat_memory() {
    let server = onrush_server::start(onrush_server::ServerConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
    })
    .unwrap();
    let addr = server.local_addr();
    run(async move {
        let mut conn = fast::connect_h2c(
            addr,
            &ConnectOptions::default(),
            b"127.0.0.1",
            &H2Settings::default(),
        )
        .await
        .unwrap();
        // Warm up (buffers at their working size).
        conn.send(&get(b"/bytes/8388608"), &mut Count::default())
            .await
            .unwrap();
        let before = rss_kib();
        let mut sink = Count {
            bytes: 0,
            pattern_ok: true,
        };
        let resp = conn
            .send(&get(b"/bytes/268435456"), &mut sink)
            .await
            .unwrap();
        let after = rss_kib();
        assert_eq!(resp.status, 200);
        assert_eq!(sink.bytes, 268_435_456);
        assert_eq!(resp.body_bytes, 268_435_456);
        assert!(sink.pattern_ok);
        assert!(
            after < before + 16 * 1024,
            "memory grew from {before} KiB to {after} KiB"
        );
        // The connection is still good.
        let r = conn.send(&get(b"/"), &mut Count::default()).await.unwrap();
        assert_eq!(r.status, 200);
    });
}
