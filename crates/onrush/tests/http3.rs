//! HTTP/3 end to end: `onrush run` with `http: { version: h3 }` against an HTTP/3 server onrush
//! did not write (Python's aioquic, crates/onrush-http3/tests/servers/h3_server.py, installed by
//! crates/onrush-http3/tests/install-aioquic.sh), verified by the server's own counts of
//! connections and requests; checks and extractors over QUIC streams; a server that does not
//! speak h3 gives a classified failure, not a hang; `version: h3` with an http:// target is a
//! plan error; `quick --http3`. Under CI=true a missing aioquic fails; elsewhere the tests are
//! skipped with a message.

use crate::common::py_server::PyServer;
use crate::common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The aioquic server with a certificate for 127.0.0.1 signed by a CA written to `dir/ca.pem`,
/// offering ALPN `alpn`; None (skipped) without aioquic outside CI.
fn h3_server(dir: &Path, alpn: &str) -> Option<PyServer> {
    let ok = Command::new("python3")
        .args(["-c", "import aioquic"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "aioquic is missing: run crates/onrush-http3/tests/install-aioquic.sh"
        );
        eprintln!(
            "SKIPPED: python3 aioquic is missing (crates/onrush-http3/tests/install-aioquic.sh)"
        );
        return None;
    }
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "onrush http3 test CA");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.join("server.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("server.key"), key.serialize_pem()).unwrap();
    let mut command = Command::new("python3");
    command
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../onrush-http3/tests/servers/h3_server.py"
        ))
        .arg(dir.join("server.pem"))
        .arg(dir.join("server.key"))
        .arg(alpn);
    Some(PyServer::spawn(command, "aioquic HTTP/3 server"))
}

fn plan(dir: &Path, port: u16, text: &str) -> PathBuf {
    let path = dir.join("plan.yaml");
    let text = text
        .replace("{port}", &port.to_string())
        .replace("{dir}", &dir.display().to_string());
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn h3_requests_checks_and_extractors_match_the_servers_counts() {
    let dir = temp_dir("h3-run");
    let Some(server) = h3_server(&dir, "h3") else {
        return;
    };
    // 4 VUs x 10 iterations x 3 steps, one connection per VU (per_vu, the default).
    let path = plan(
        &dir,
        server.port,
        r#"target: https://127.0.0.1:{port}
http: { version: h3, tls: { ca_file: "{dir}/ca.pem" } }
scenarios:
  - name: s
    load: { vus: 4, iterations: 10 }
    steps:
      - { name: hello, get: /hello, check: [{ status: 200 }, { body_contains: "over h3" }, { header: x-served-by, equals: aioquic }] }
      - { name: token, get: /token, extract: { token: { jsonpath: "$.token" } } }
      - { name: echo, post: /echo, body: "token=${token}", check: [{ body_contains: "token=t-" }] }
"#,
    );
    let s = run_expect(
        0,
        &["run", path.to_str().unwrap(), "-t", "2"],
        &dir.join("out"),
    );
    let counts = server.finish();
    assert_eq!(u64_at(&s, "/totals/requests"), 120, "{s:#}");
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    assert_eq!(
        counts["requests"], 120,
        "the server saw every request: {counts}"
    );
    // One QUIC connection per VU, counted by both sides.
    assert_eq!(counts["connections"], 4, "{counts}");
    assert_eq!(u64_at(&s, "/totals/connections_opened"), 4, "{s:#}");
    let per_connection: Vec<u64> = counts["per_connection"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(
        per_connection,
        vec![30; 4],
        "30 requests per VU's connection"
    );
    // QUIC handshakes are counted as TLS handshakes are.
    let handshakes =
        u64_at(&s, "/totals/handshakes/full") + u64_at(&s, "/totals/handshakes/resumed");
    assert_eq!(handshakes, 4, "{s:#}");
    // Every UDP byte is attributed to some response: at least the bodies.
    assert!(u64_at(&s, "/totals/bytes_in") > 120 * 10, "{s:#}");
}

#[test]
fn h3_shared_connections_carry_max_streams_each_and_per_iteration_reconnects() {
    let dir = temp_dir("h3-scopes");
    let Some(server) = h3_server(&dir, "h3") else {
        return;
    };
    let path = plan(
        &dir,
        server.port,
        r#"target: https://127.0.0.1:{port}
http: { version: h3, tls: { ca_file: "{dir}/ca.pem" } }
scenarios:
  - name: shared
    http: { connections: shared, max_streams: 5 }
    load: { vus: 10, iterations: 5 }
    steps: [ { get: /hello } ]
  - name: per_iteration
    http: { connections: per_iteration }
    load: { vus: 2, iterations: 3 }
    steps: [ { get: /hello }, { get: /hello } ]
"#,
    );
    let s = run_expect(
        0,
        &["run", path.to_str().unwrap(), "-t", "1"],
        &dir.join("out"),
    );
    let counts = server.finish();
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    assert_eq!(counts["requests"], 50 + 12, "{counts}");
    // shared: 10 VUs, 5 streams per connection, one worker: 2 connections; per_iteration:
    // 2 VUs x 3 iterations: 6.
    assert_eq!(counts["connections"], 2 + 6, "{counts}");
    assert_eq!(u64_at(&s, "/totals/connections_opened"), 8, "{s:#}");
}

#[test]
fn a_server_without_h3_is_a_classified_failure_not_a_hang() {
    let dir = temp_dir("h3-no-alpn");
    let Some(server) = h3_server(&dir, "hq-interop") else {
        return;
    };
    let path = plan(
        &dir,
        server.port,
        r#"target: https://127.0.0.1:{port}
http: { version: h3, timeout: 10s, tls: { ca_file: "{dir}/ca.pem" } }
scenarios:
  - name: s
    load: { vus: 2, iterations: 3 }
    steps: [ { get: /hello } ]
"#,
    );
    let started = std::time::Instant::now();
    let out = dir.join("out");
    let output = onrush()
        .args(["run", path.to_str().unwrap(), "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(8),
        "failed fast, not at the timeout"
    );
    let s = summary(&out);
    assert_eq!(
        u64_at(&s, "/totals/failures_by_class/quic_no_h3"),
        6,
        "{s:#}\n{}",
        text(&output)
    );
    assert_eq!(server.finish()["requests"], 0);
}

#[test]
fn h3_with_a_plain_target_is_a_plan_error_with_its_line_and_fix() {
    let dir = temp_dir("h3-plain");
    let path = dir.join("plan.yaml");
    std::fs::write(
        &path,
        "target: http://127.0.0.1:9\nhttp:\n  version: h3\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps: [ { get: / } ]\n",
    )
    .unwrap();
    let output = onrush()
        .args(["run", path.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    let t = text(&output);
    assert_eq!(output.status.code(), Some(2), "{t}");
    assert!(t.contains("plan.yaml:3"), "file:line: {t}");
    assert!(t.contains("https://"), "the fix: {t}");
    // A step's own http:// URL under `version: h3` is refused when HTTP compiles it.
    std::fs::write(
        &path,
        "target: https://127.0.0.1:9\nhttp: { version: h3, tls: { insecure: true } }\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps: [ { get: / }, { get: \"http://127.0.0.1:10/x\" } ]\n",
    )
    .unwrap();
    let output = onrush()
        .args(["run", path.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    let t = text(&output);
    assert_eq!(output.status.code(), Some(2), "{t}");
    assert!(
        t.contains("plain http://") && t.contains("version: h3") && t.contains("https://"),
        "{t}"
    );
    // quick --http3 refuses a plain URL the same way.
    let output = onrush()
        .args(["quick", "http://127.0.0.1:9/", "--http3", "-n", "1"])
        .output()
        .unwrap();
    let t = text(&output);
    assert_ne!(output.status.code(), Some(0), "{t}");
    assert!(t.contains("--http3") && t.contains("https://"), "{t}");
}

#[test]
fn quick_http3_loads_an_h3_server() {
    let dir = temp_dir("h3-quick");
    let Some(server) = h3_server(&dir, "h3") else {
        return;
    };
    let url = format!("https://127.0.0.1:{}/hello", server.port);
    let ca = dir.join("ca.pem");
    let out = dir.join("out");
    let output = onrush()
        .args(["quick", &url, "--http3", "-c", "3", "-n", "30", "--ca-file"])
        .arg(&ca)
        .args(["--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let s = summary(&out);
    assert_eq!(u64_at(&s, "/totals/requests"), 30, "{s:#}");
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    let counts = server.finish();
    assert_eq!(
        (counts["requests"].as_u64(), counts["connections"].as_u64()),
        (Some(30), Some(3)),
        "{counts}"
    );
}
