//! A 256 MiB `/bytes/N` download over HTTP/2 (TLS, ALPN h2) is streamed: the process (client
//! and server) must not grow by anything like the body size while it runs, and every byte must
//! arrive. Alone in its own test binary so no other test's allocations disturb the measurement.

mod common;

use std::time::Instant;

use common::h2client::{tls_config, H2};
use onrush_server::{ServerConfig, ServerTls};

#[tokio::test]
async fn a_256_mib_download_over_h2_streams_in_constant_memory() {
    let server = onrush_server::start_tls(
        ServerConfig {
            addr: "127.0.0.1:0".parse().unwrap(),
            threads: 1,
        },
        ServerTls::default(),
    )
    .unwrap();
    let ca = server.self_signed_ca_pem().unwrap();
    let h2 = H2::tls(server.local_addr(), tls_config(ca, &[b"h2"], None)).await;
    // Warm up (TLS buffers, the first stream's allocations) before taking the baseline.
    assert_eq!(h2.get("/bytes/1000000").await.body.len(), 1_000_000);

    let size: u64 = 256 << 20;
    let before = common::rss_kib();
    let mut peak = before;
    let started = Instant::now();
    let mut send = h2.sender().ready().await.unwrap();
    let (response, _) = send
        .send_request(h2.request_for("GET", &format!("/bytes/{size}")), true)
        .unwrap();
    let (parts, mut body) = response.await.unwrap().into_parts();
    assert_eq!(parts.status, 200);
    assert_eq!(
        parts.headers["content-length"].to_str().unwrap(),
        size.to_string()
    );
    let mut received = 0u64;
    let mut pattern_ok = true;
    let mut next_sample = 0u64;
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        body.flow_control().release_capacity(chunk.len()).unwrap();
        pattern_ok &= chunk
            .iter()
            .enumerate()
            .all(|(i, &b)| b == (received + i as u64) as u8);
        received += chunk.len() as u64;
        if received >= next_sample {
            peak = peak.max(common::rss_kib());
            next_sample += 8 << 20;
        }
    }
    let took = started.elapsed();
    peak = peak.max(common::rss_kib());
    assert_eq!(received, size);
    assert!(pattern_ok, "a byte differs from the /bytes pattern");
    let grown_mib = peak.saturating_sub(before) / 1024;
    eprintln!(
        "256 MiB over h2+TLS in {took:?} ({:.0} MiB/s), RSS grew by {grown_mib} MiB at most",
        256.0 / took.as_secs_f64()
    );
    assert!(
        grown_mib < 40,
        "RSS grew by {grown_mib} MiB during a 256 MiB download"
    );
    let s = server.h2_stats();
    assert_eq!((s.connections, s.streams), (1, 2));
}
