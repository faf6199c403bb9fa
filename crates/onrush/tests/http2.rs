//! HTTP/2 end to end, verified by the server's own counts: ALPN h2 over TLS and h2c multiplex
//! many streams on few connections with `connections: shared`; `auto` falls back to HTTP/1.1;
//! the same steps, checks, bodies and handshake accounting work over both versions; the
//! `shared` pool serves HTTP/1.1 too.

use crate::common;
use common::*;

use std::path::{Path, PathBuf};

fn server(tls: bool, threads: usize) -> onrush_server::ServerHandle {
    let config = onrush_server::ServerConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        threads,
    };
    if tls {
        onrush_server::start_tls(config, onrush_server::ServerTls::default())
    } else {
        onrush_server::start(config)
    }
    .expect("the server starts")
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `plan` ({port} and {dir} filled in) with `-t threads`; returns summary.json.
fn run(
    server: &onrush_server::ServerHandle,
    name: &str,
    plan: &str,
    threads: &str,
) -> serde_json::Value {
    let dir = temp_dir(name);
    if let Some(ca) = server.self_signed_ca_pem() {
        write(&dir, "ca.pem", ca);
    }
    let text = plan
        .replace("{port}", &server.local_addr().port().to_string())
        .replace("{dir}", &dir.display().to_string());
    let path = write(&dir, "plan.yaml", &text);
    run_expect(
        0,
        &["run", path.to_str().unwrap(), "-t", threads],
        &dir.join("out"),
    )
}

#[test]
fn h2_over_tls_multiplexes_many_streams_on_few_connections() {
    let server = server(true, 1);
    // 50 VUs, 10 streams per connection, one worker: 5 connections, as h2load -c5 -m10.
    // /delay/20 keeps streams in flight long enough to overlap.
    let plan = r#"target: https://127.0.0.1:{port}
http: { version: h2, connections: shared, max_streams: 10, tls: { ca_file: "{dir}/ca.pem" } }
scenarios:
  - name: s
    load: { vus: 50, iterations: 10 }
    steps:
      - { name: slow, get: /delay/20, check: [{ status: 200 }] }
      - { name: json, get: /json, extract: { token: { jsonpath: "$.token" } } }
      - { name: echo, post: /echo, body: "token=${token}", check: [{ body_contains: "\"body_length\":" }] }
"#;
    let s = run(&server, "h2-tls", plan, "1");
    assert_eq!(u64_at(&s, "/totals/requests"), 1500, "{s:#}");
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    let h2 = server.h2_stats();
    assert_eq!(
        h2.streams, 1500,
        "every request was an HTTP/2 stream: {h2:?}"
    );
    assert_eq!(h2.connections, 5, "50 VUs / 10 streams: {h2:?}");
    assert!(
        h2.max_concurrent_streams >= 8,
        "streams overlap on a connection: {h2:?}"
    );
    // Handshakes: one full per connection, counted by both sides.
    let tls = server.tls_stats();
    assert_eq!(tls.full + tls.resumed, 5, "{tls:?}");
    assert_eq!(u64_at(&s, "/totals/handshakes/full"), tls.full);
    assert_eq!(u64_at(&s, "/totals/connections_opened"), 5, "{s:#}");
    // Wire bytes are attributed to responses: they add up to something real.
    assert!(u64_at(&s, "/totals/bytes_in") > 1500 * 20, "{s:#}");
}

#[test]
fn h2c_prior_knowledge_and_per_vu_connections() {
    let server = server(false, 1);
    let plan = r#"target: http://127.0.0.1:{port}
http: { version: h2 }
scenarios:
  - name: s
    load: { vus: 4, iterations: 25 }
    steps:
      - { get: "/bytes/300000", check: [{ body_size: 300000 }] }
      - { get: /status/503, expect_status: [503] }
"#;
    let s = run(&server, "h2c", plan, "2");
    assert_eq!(u64_at(&s, "/totals/requests"), 200);
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    let h2 = server.h2_stats();
    // per_vu: each VU keeps its own connection; a VU sends one request at a time.
    assert_eq!((h2.connections, h2.streams), (4, 200), "{h2:?}");
    assert_eq!(h2.max_concurrent_streams, 1, "{h2:?}");
    assert!(u64_at(&s, "/totals/bytes_in") >= 100 * 300_000);
}

#[test]
fn per_iteration_h2_counts_handshakes_like_http1() {
    let server = server(true, 1);
    let plan = r#"target: https://127.0.0.1:{port}
http: { version: h2, connections: per_iteration, tls: { session: SESSION, ca_file: "{dir}/ca.pem" } }
scenarios:
  - name: s
    load: { vus: 10, iterations: 20 }
    steps: [ { get: / } ]
"#;
    for (session, full, resumed) in [("resume", 10, 190), ("full", 200, 0)] {
        let before = server.tls_stats();
        let s = run(
            &server,
            &format!("h2-{session}"),
            &plan.replace("SESSION", session),
            "1",
        );
        assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
        let after = server.tls_stats();
        assert_eq!(
            (after.full - before.full, after.resumed - before.resumed),
            (full, resumed),
            "{session}: server-side count"
        );
        assert_eq!(u64_at(&s, "/totals/handshakes/full"), full);
        assert_eq!(u64_at(&s, "/totals/handshakes/resumed"), resumed);
    }
    assert_eq!(server.h2_stats().connections, 400);
}

#[test]
fn auto_speaks_h2_when_offered_and_h1_over_plain_http() {
    let tls = server(true, 1);
    let plan = r#"target: https://127.0.0.1:{port}
http: { version: auto, connections: shared, tls: { ca_file: "{dir}/ca.pem" } }
scenarios:
  - name: s
    load: { vus: 20, iterations: 10 }
    steps: [ { get: / } ]
"#;
    let s = run(&tls, "auto-tls", plan, "1");
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    let h2 = tls.h2_stats();
    // VUs that start together wait for the first connection instead of each opening one.
    assert_eq!((h2.connections, h2.streams), (1, 200), "{h2:?}");

    let plain = server(false, 1);
    let plan = "target: http://127.0.0.1:{port}\nhttp: { version: auto }\nscenarios:\n  - name: s\n    load: { vus: 2, iterations: 5 }\n    steps: [ { get: / } ]\n";
    let s = run(&plain, "auto-plain", plan, "1");
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    assert_eq!(plain.h2_stats().streams, 0);
    assert_eq!(plain.stats().requests, 10);
}

#[test]
fn shared_http1_pool_reuses_connections_across_vus() {
    let server = server(false, 1);
    // 30 VUs on one worker; their requests are in flight together at most 30 at a time, so
    // the pool never holds more than 30 connections, and reuses them across iterations and VUs.
    let plan = r#"target: http://127.0.0.1:{port}
http: { connections: shared }
scenarios:
  - name: s
    load: { vus: 30, iterations: 20, ramp_up: 300ms }
    steps: [ { get: /delay/2 }, { think: 1ms }, { get: / } ]
"#;
    let s = run(&server, "shared-h1", plan, "1");
    assert_eq!(u64_at(&s, "/totals/requests"), 1200);
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    let conns = server.stats().connections;
    assert!(
        conns <= 30,
        "the pool never exceeds the requests in flight: {conns}"
    );
    assert_eq!(u64_at(&s, "/totals/connections_opened"), conns);
}

#[test]
fn throttle_with_h2_is_a_plan_error() {
    let dir = temp_dir("h2-throttle");
    let path = write(
        &dir,
        "plan.yaml",
        "target: http://127.0.0.1:1\nhttp: { version: h2, throttle: 64KB/s }\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps: [ { get: / } ]\n",
    );
    let out = onrush()
        .args(["validate", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let msg = text(&out);
    assert!(msg.contains("plan.yaml:2:"), "{msg}");
    assert!(
        msg.contains("throttle") && msg.contains("HTTP/1.1 only"),
        "{msg}"
    );
}
