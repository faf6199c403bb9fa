//! The built-in server's HTTP/3 (`onrush serve --tls --http3`) and `http: { version: auto }`:
//! `quick --http3` and a plan with `version: auto` against `onrush serve --tls --http3`, whose
//! own count at Ctrl-C equals what the client sent; `auto` first goes over TCP, then, on the
//! server's `Alt-Svc`, over HTTP/3 (the server's `h2_streams` and `h3_streams` say which); and
//! against a server onrush did not write (Python's ssl, tests/servers/alt_svc_server.py) that
//! advertises a silent UDP port, `auto` falls back to TCP, counted, with no failed request.

use crate::common::py_server::PyServer;
use crate::common::*;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// `onrush serve --tls --http3` on a free port, its CA written to `dir/ca.pem`.
struct Serve {
    child: Child,
    port: u16,
}

impl Serve {
    fn start(dir: &Path) -> Serve {
        // A port free for TCP now; UDP is checked by the server itself, which fails (and the
        // test with it) if that port is taken.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let ca = dir.join("ca.pem");
        let _ = std::fs::remove_file(&ca);
        let child = onrush()
            .args(["serve", "--tls", "--http3", "--threads", "2", "--addr"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("--ca-out")
            .arg(&ca)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut serve = Serve { child, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !ca.exists() {
            if let Ok(Some(status)) = serve.child.try_wait() {
                panic!("onrush serve exited: {status}: {}", serve.stderr());
            }
            assert!(Instant::now() < deadline, "onrush serve did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        serve
    }

    fn stderr(&mut self) -> String {
        let mut err = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = pipe.read_to_string(&mut err);
        }
        err
    }

    /// Ctrl-C (SIGINT to the server this test started) and what it says as it stops.
    fn stop(mut self) -> String {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: kill(2) on the pid of our own child process, which has not been waited for.
        unsafe { libc::kill(pid, libc::SIGINT) };
        let err = self.stderr();
        let _ = self.child.wait();
        err
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The numbers of `stopped after N requests on M connections`.
fn stopped_counts(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("stopped after"))
        .unwrap_or_else(|| panic!("no stop line in {stderr}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    (words[2].parse().unwrap(), words[5].parse().unwrap())
}

/// `onrush run PLAN` with its summary table on stdout; the exit code must be 0.
fn run_table(plan: &Path, out: &Path) -> String {
    let output = onrush()
        .args(["run", plan.to_str().unwrap(), "-t", "1", "--out"])
        .arg(out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn serve_http3_answers_quick_and_auto_upgrades_on_its_alt_svc() {
    let dir = temp_dir("h3-serve");
    let serve = Serve::start(&dir);
    let ca = dir.join("ca.pem");

    // quick --http3: 30 requests on 3 QUIC connections.
    let url = format!("https://127.0.0.1:{}/", serve.port);
    let output = onrush()
        .args(["quick", &url, "--http3", "-c", "3", "-n", "30", "--ca-file"])
        .arg(&ca)
        .args(["--quiet", "--out"])
        .arg(dir.join("quick"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let s = summary(&dir.join("quick"));
    assert_eq!(u64_at(&s, "/totals/requests"), 30, "{s:#}");
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");

    // version: auto: each VU's first request goes over TCP (HTTP/2 by ALPN), whose response
    // advertises h3; the other 9 of its 10 over HTTP/3.
    let plan = write_plan(
        &dir,
        &format!(
            r#"target: https://127.0.0.1:{port}
http: {{ version: auto, tls: {{ ca_file: "{ca}" }} }}
scenarios:
  - name: s
    load: {{ vus: 3, iterations: 5 }}
    steps:
      - {{ name: hello, get: /, check: [{{ body_contains: "Hello from onrush" }}] }}
      - {{ name: json, get: /json, check: [{{ status: 200 }}] }}
"#,
            port = serve.port,
            ca = ca.display()
        ),
    );
    let table = run_table(&plan, &dir.join("auto"));
    assert!(
        table.contains(
            "HTTP/3: 27 requests; version auto: 3 connections upgraded by Alt-Svc, 0 QUIC \
             handshakes failed and fell back to TCP"
        ),
        "{table}"
    );
    let s = summary(&dir.join("auto"));
    assert_eq!(u64_at(&s, "/totals/requests"), 30, "{s:#}");
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    // One TCP connection and one QUIC connection per VU.
    assert_eq!(u64_at(&s, "/totals/connections_opened"), 6, "{s:#}");

    // The server's own count: 30 + 30 requests; 3 QUIC connections of quick, 3 TCP and 3
    // QUIC of the plan.
    let stderr = serve.stop();
    assert_eq!(stopped_counts(&stderr), (60, 9), "{stderr}");
}

#[test]
fn auto_falls_back_to_tcp_when_the_advertised_quic_port_is_silent() {
    let dir = temp_dir("h3-fallback");
    // A UDP port that is bound and never answers: a QUIC handshake to it times out.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_port = silent.local_addr().unwrap().port();
    certificate(&dir);
    let mut command = PyServer::command("alt_svc_server.py");
    command
        .arg(dir.join("server.pem"))
        .arg(dir.join("server.key"))
        .arg(udp_port.to_string());
    let server = PyServer::spawn(command, "HTTPS server advertising h3");
    let plan = write_plan(
        &dir,
        &format!(
            r#"target: https://127.0.0.1:{port}
http: {{ version: auto, tls: {{ ca_file: "{ca}" }} }}
scenarios:
  - name: s
    load: {{ vus: 2, iterations: 4 }}
    steps:
      - {{ get: /, timeout: 2s, check: [{{ body_contains: "over tcp" }}] }}
"#,
            port = server.port,
            ca = dir.join("ca.pem").display()
        ),
    );
    let started = Instant::now();
    let table = run_table(&plan, &dir.join("out"));
    // Each VU tries QUIC once (half its 2 s timeout), then stays on TCP.
    assert!(started.elapsed() < Duration::from_secs(15), "{table}");
    assert!(
        table.contains(
            "HTTP/3: 0 requests; version auto: 0 connections upgraded by Alt-Svc, 2 QUIC \
             handshakes failed and fell back to TCP"
        ),
        "{table}"
    );
    let s = summary(&dir.join("out"));
    assert_eq!(u64_at(&s, "/totals/requests"), 8, "{s:#}");
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    let counts = server.finish();
    assert_eq!(counts["requests"], 8, "{counts}");
    // Per VU: the first connection, given up on the advertisement, and the fallback's.
    assert_eq!(counts["connections"], 4, "{counts}");
    drop(silent);
}

/// A CA (`dir/ca.pem`) and a certificate for 127.0.0.1 signed by it (`server.pem`,
/// `server.key`).
fn certificate(dir: &Path) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "onrush alt-svc test CA");
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
}

#[test]
fn a_builtin_plan_with_version_h3_gets_the_server_with_http3_on() {
    let dir = temp_dir("h3-builtin");
    // A mixed plan: the h3 scenario turns the built-in server's HTTPS and HTTP/3 on, and the
    // builtin target is https:// for the auto scenario too (which then upgrades on Alt-Svc).
    let plan = write_plan(
        &dir,
        r#"target: builtin
scenarios:
  - name: quic
    http: { version: h3 }
    load: { vus: 2, iterations: 5 }
    steps:
      - { get: /json, check: [{ status: 200 }] }
      - { post: /echo, body: "over quic", check: [{ body_contains: "\"body_length\":9" }] }
  - name: browser
    http: { version: auto }
    load: { vus: 1, iterations: 4 }
    steps: [ { get: / } ]
"#,
    );
    let out = dir.join("out");
    let table = run_table(&plan, &out);
    // 20 requests of `quic`, 3 of `browser`'s 4 (its first goes over TCP).
    assert!(
        table.contains("HTTP/3: 23 requests; version auto: 1 connections upgraded by Alt-Svc"),
        "{table}"
    );
    let s = summary(&out);
    assert_eq!(u64_at(&s, "/totals/requests"), 24, "{s:#}");
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    let server: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("builtin_server.json")).unwrap())
            .unwrap();
    assert_eq!(server["h3_streams"], 23, "{server}");
    assert_eq!(server["requests"], 24, "{server}");
    assert_eq!(server["h3_connections"], 3, "{server}");
    assert_eq!(server["quic_handshakes"], 3, "{server}");
}
