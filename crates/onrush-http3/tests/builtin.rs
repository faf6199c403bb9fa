//! onrush's built-in server with HTTP/3 on (`onrush serve --tls --http3`), seen by two clients:
//! onrush-http3's own and Python aioquic's (tests/servers/h3_client.py, a QUIC stack onrush did
//! not write). Both get the server's answers, and the server's counts equal what they sent.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use onrush_http::{Request, RequestBody, SessionMode, TlsClient, TlsOptions};
use onrush_http3::{connect, H3Settings};
use onrush_server::{ServerConfig, ServerHandle, ServerOptions, ServerTls};

use super::{get, options, runtime};

/// The built-in server over TLS with HTTP/3, `threads` threads, its CA written to `dir/ca.pem`.
fn start(dir: &Path, threads: usize) -> ServerHandle {
    let server = onrush_server::start_with_options(
        ServerConfig {
            addr: "127.0.0.1:0".parse().unwrap(),
            threads,
        },
        ServerOptions {
            tls: Some(ServerTls::default()),
            http3: true,
            ..ServerOptions::default()
        },
    )
    .unwrap();
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("ca.pem"), server.self_signed_ca_pem().unwrap()).unwrap();
    server
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "onrush-http3-builtin-{name}-{}",
        std::process::id()
    ))
}

fn aioquic() -> bool {
    let present = Command::new("python3")
        .args(["-c", "import aioquic"])
        .status()
        .is_ok_and(|s| s.success());
    if !present {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "aioquic is missing: run crates/onrush-http3/tests/install-aioquic.sh"
        );
        eprintln!(
            "SKIPPED: python3 aioquic is missing (crates/onrush-http3/tests/install-aioquic.sh)"
        );
    }
    present
}

/// Runs the aioquic client against `port` (bounded: its every request waits at most 20 s).
fn aioquic_client(dir: &Path, port: u16, gets: usize) -> serde_json::Value {
    let out = Command::new("timeout")
        .args(["60", "python3"])
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/servers/h3_client.py"
        ))
        .args(["127.0.0.1", &port.to_string()])
        .arg(dir.join("ca.pem"))
        .arg(gets.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "aioquic client: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_builtin_server_answers_http3_to_onrush_and_to_aioquic_and_counts_both() {
    if !aioquic() {
        return;
    }
    let dir = temp_dir("two-clients");
    let server = start(&dir, 2);
    let port = server.local_addr().port();
    let host = format!("127.0.0.1:{port}");

    // onrush's client: 12 GETs at once on one connection, an echo of 150,000 bytes, /tls.
    let client = TlsClient::new(&TlsOptions {
        ca_file: Some(dir.join("ca.pem")),
        alpn: vec![b"h3".to_vec()],
        ..Default::default()
    })
    .unwrap();
    let session = client.session(SessionMode::Resume, 1);
    let onrush_sent = runtime().block_on(async {
        let (conn, _, _) = connect(
            server.local_addr(),
            &options(),
            &session,
            "127.0.0.1",
            host.as_bytes(),
            &H3Settings::default(),
        )
        .await
        .unwrap();
        let mut tasks = Vec::new();
        for _ in 0..12 {
            let mut conn = conn.clone();
            let host = host.clone();
            tasks.push(tokio::spawn(async move {
                let mut body = Vec::new();
                let r = conn.send(&get(b"/", host.as_bytes()), &mut body).await;
                (r.unwrap().status, body)
            }));
        }
        for t in tasks {
            let (status, body) = tokio::time::timeout(Duration::from_secs(20), t)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(
                (status, body.as_slice()),
                (200, &b"Hello from onrush\n"[..])
            );
        }
        let mut conn = conn;
        let payload = vec![b'e'; 150_000];
        let mut echoed = Vec::new();
        let r = conn
            .send(
                &Request {
                    method: "POST",
                    target: b"/echo",
                    host: host.as_bytes(),
                    headers: b"content-type: application/octet-stream\r\n",
                    body: RequestBody::Bytes(&payload),
                    close: false,
                },
                &mut echoed,
            )
            .await
            .unwrap();
        assert_eq!(r.status, 200);
        let echo: serde_json::Value = serde_json::from_slice(&echoed).unwrap();
        assert_eq!(echo["body_length"], 150_000, "{echo}");
        assert_eq!(echo["method"], "POST");
        let mut tls = Vec::new();
        let r = conn
            .send(&get(b"/tls", host.as_bytes()), &mut tls)
            .await
            .unwrap();
        assert_eq!(r.status, 200);
        let tls: serde_json::Value = serde_json::from_slice(&tls).unwrap();
        assert_eq!(
            (&tls["alpn"], &tls["version"]),
            (&"h3".into(), &"TLSv1_3".into())
        );
        14u64
    });

    // aioquic's client: 25 GETs at once, an upload, /bytes/300000 and /tls on one connection.
    let theirs = aioquic_client(&dir, port, 25);
    let statuses = theirs["statuses"].as_array().unwrap();
    assert!(statuses.iter().all(|s| s == 200), "{theirs}");
    assert_eq!(theirs["hello"], 25, "{theirs}");
    assert_eq!(theirs["upload"]["length"], 100_000, "{theirs}");
    assert_eq!(theirs["bytes"], 300_000, "{theirs}");
    assert_eq!(theirs["tls"]["alpn"], "h3", "{theirs}");
    // HTTP/3 responses do not advertise HTTP/3 again.
    assert_eq!(theirs["alt_svc"], serde_json::json!([]), "{theirs}");
    let aioquic_sent = theirs["requests"].as_u64().unwrap();

    let h3 = server.h3_stats();
    assert_eq!(h3.streams, onrush_sent + aioquic_sent, "{h3:?}");
    assert_eq!(h3.connections, 2, "{h3:?}");
    assert_eq!(h3.handshakes, 2, "{h3:?}");
    assert_eq!(h3.handshakes_failed, 0, "{h3:?}");
    let all = server.stats();
    assert_eq!(all.requests, onrush_sent + aioquic_sent, "{all:?}");
    assert_eq!(all.connections, 2, "{all:?}");
    let json = server.stats_json();
    assert_eq!(json["h3_streams"], onrush_sent + aioquic_sent, "{json}");
    assert_eq!(json["quic_handshakes"], 2, "{json}");
    // No TCP handshake happened: QUIC's are counted apart.
    assert_eq!(json["tls_full"], 0, "{json}");
    server.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_client_that_distrusts_the_certificate_is_a_failed_quic_handshake() {
    let dir = temp_dir("distrust");
    let server = start(&dir, 1);
    // The client trusts another CA.
    let other = super::certificates("builtin-distrust");
    let client = TlsClient::new(&TlsOptions {
        ca_file: Some(other.join("ca.pem")),
        alpn: vec![b"h3".to_vec()],
        ..Default::default()
    })
    .unwrap();
    let session = client.session(SessionMode::Resume, 1);
    let host = format!("127.0.0.1:{}", server.local_addr().port());
    let err = runtime()
        .block_on(connect(
            server.local_addr(),
            &options(),
            &session,
            "127.0.0.1",
            host.as_bytes(),
            &H3Settings::default(),
        ))
        .unwrap_err();
    assert!(err.tls_failure().is_some(), "{err}");
    // The server sees the client's alert shortly after.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while server.h3_stats().handshakes_failed == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let h3 = server.h3_stats();
    assert_eq!((h3.handshakes, h3.handshakes_failed), (0, 1), "{h3:?}");
    server.shutdown();
}

#[test]
fn a_resumed_quic_handshake_is_counted_by_the_server() {
    let dir = temp_dir("resume");
    let server = start(&dir, 1);
    let client = TlsClient::new(&TlsOptions {
        ca_file: Some(dir.join("ca.pem")),
        alpn: vec![b"h3".to_vec()],
        ..Default::default()
    })
    .unwrap();
    // One VU's session, three connections one after another: the first full, the next two
    // resumed with the tickets the previous ones received (a request on each first, so that
    // its tickets have arrived).
    let session = client.session(SessionMode::Resume, 1);
    let host = format!("127.0.0.1:{}", server.local_addr().port());
    runtime().block_on(async {
        for _ in 0..3 {
            let (mut conn, _, _) = connect(
                server.local_addr(),
                &options(),
                &session,
                "127.0.0.1",
                host.as_bytes(),
                &H3Settings::default(),
            )
            .await
            .unwrap();
            let mut body = Vec::new();
            let r = conn.send(&get(b"/", host.as_bytes()), &mut body).await;
            assert_eq!(r.unwrap().status, 200);
        }
    });
    // A session of its own that never resumes: `Full` keeps no tickets.
    let full = client.session(SessionMode::Full, 2);
    runtime().block_on(async {
        let (mut conn, _, _) = connect(
            server.local_addr(),
            &options(),
            &full,
            "127.0.0.1",
            host.as_bytes(),
            &H3Settings::default(),
        )
        .await
        .unwrap();
        let mut body = Vec::new();
        let r = conn.send(&get(b"/", host.as_bytes()), &mut body).await;
        assert_eq!(r.unwrap().status, 200);
    });
    let h3 = server.h3_stats();
    assert_eq!((h3.handshakes, h3.resumed), (4, 2), "{h3:?}");
    assert_eq!(server.stats_json()["quic_resumed"], 2);
    server.shutdown();
}
