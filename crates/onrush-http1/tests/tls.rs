//! HTTPS against the built-in server started with TLS: trust, failure classification, session
//! modes counted by the server's handshake counters, and mTLS.

use std::net::SocketAddr;
use std::path::PathBuf;

use onrush_http1::{
    connect_tls, ConnectOptions, Discard, Error, ErrorKind, HandshakeKind, Request, RequestBody,
    SessionMode, TlsClient, TlsConnection, TlsFailure, TlsOptions, TlsSession, TlsVersion,
};
use onrush_server::{ServerConfig, ServerHandle, ServerTls, TlsStats};

/// A fresh directory for this test's PEM files.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "onrush-http1-tls-{}-{:?}-{test}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn tls_server(tls: ServerTls) -> ServerHandle {
    onrush_server::start_tls(
        ServerConfig {
            addr: "127.0.0.1:0".parse().unwrap(),
            threads: 2,
        },
        tls,
    )
    .expect("TLS server starts")
}

/// A TLS server with a generated certificate, and a CA file trusting it.
fn server_and_ca(test: &str) -> (ServerHandle, PathBuf, PathBuf) {
    let server = tls_server(ServerTls::default());
    let dir = temp_dir(test);
    let ca = write(&dir, "ca.pem", server.self_signed_ca_pem().unwrap());
    (server, ca, dir)
}

struct Ca {
    cert: rcgen::Certificate,
    key: rcgen::KeyPair,
}

fn new_ca(name: &str) -> Ca {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let cert = params.self_signed(&key).unwrap();
    Ca { cert, key }
}

/// A client certificate signed by `ca`: (cert PEM path, key PEM path).
fn client_cert(ca: &Ca, dir: &std::path::Path, name: &str) -> (PathBuf, PathBuf) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &ca.cert, &ca.key).unwrap();
    (
        write(dir, &format!("{name}.pem"), &cert.pem()),
        write(dir, &format!("{name}.key"), &key.serialize_pem()),
    )
}

async fn connect(
    addr: SocketAddr,
    session: &TlsSession,
    name: &str,
) -> Result<(TlsConnection, HandshakeKind), Error> {
    let (conn, kind, took) = connect_tls(addr, &ConnectOptions::default(), session, name).await?;
    assert!(took.as_secs() < 10);
    Ok((conn, kind))
}

/// One request on a new connection; the response is read to its end (which also reads the
/// TLS 1.3 tickets the server sends after the handshake).
async fn get_once(addr: SocketAddr, session: &TlsSession) -> Result<(u16, HandshakeKind), Error> {
    let (mut conn, kind) = connect(addr, session, "127.0.0.1").await?;
    let resp = conn
        .send(
            &Request {
                method: "GET",
                target: b"/",
                host: b"127.0.0.1",
                headers: b"",
                body: RequestBody::Empty,
                close: false,
            },
            &mut Discard,
        )
        .await?;
    Ok((resp.status, kind))
}

/// The server's handshake counts once `done` holds, or after 5 s.
async fn settled_tls_stats(server: &ServerHandle, done: impl Fn(&TlsStats) -> bool) -> TlsStats {
    for _ in 0..500 {
        let stats = server.tls_stats();
        if done(&stats) {
            return stats;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    server.tls_stats()
}

#[tokio::test]
async fn get_with_the_servers_ca_trusted() {
    let (server, ca, _dir) = server_and_ca("trusted");
    let client = TlsClient::new(&TlsOptions {
        ca_file: Some(ca),
        ..TlsOptions::default()
    })
    .unwrap();
    let session = client.session(SessionMode::Resume, 1);
    let (status, kind) = get_once(server.local_addr(), &session).await.unwrap();
    assert_eq!((status, kind), (200, HandshakeKind::Full));
    // By DNS name too (the generated certificate names localhost).
    let (mut conn, _) = connect(server.local_addr(), &session, "localhost")
        .await
        .unwrap();
    let resp = conn
        .send(
            &Request {
                method: "GET",
                target: b"/bytes/100000",
                host: b"localhost",
                headers: b"",
                body: RequestBody::Empty,
                close: false,
            },
            &mut Discard,
        )
        .await
        .unwrap();
    assert_eq!((resp.status, resp.body_bytes), (200, 100_000));
    assert_eq!(server.stats().requests, 2);
}

#[tokio::test]
async fn insecure_needs_no_ca() {
    let server = tls_server(ServerTls::default());
    for versions in [vec![TlsVersion::Tls12], vec![TlsVersion::Tls13], vec![]] {
        let client = TlsClient::new(&TlsOptions {
            insecure: true,
            versions,
            ..TlsOptions::default()
        })
        .unwrap();
        let (status, _) = get_once(server.local_addr(), &client.session(SessionMode::Full, 1))
            .await
            .unwrap();
        assert_eq!(status, 200);
    }
}

#[tokio::test]
async fn unknown_ca_is_classified() {
    let server = tls_server(ServerTls::default());
    let dir = temp_dir("unknown-ca");
    let other = write(&dir, "other.pem", &new_ca("some other CA").cert.pem());
    let client = TlsClient::new(&TlsOptions {
        ca_file: Some(other),
        ..TlsOptions::default()
    })
    .unwrap();
    let e = get_once(server.local_addr(), &client.session(SessionMode::Resume, 1))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectOther);
    assert_eq!(e.tls_failure(), Some(TlsFailure::CertificateUnknown), "{e}");
    assert!(e.to_string().contains("tls.ca_file"), "{e}");
    // And trusting nothing at all is the same failure.
    let client = TlsClient::new(&TlsOptions::default()).unwrap();
    let e = get_once(server.local_addr(), &client.session(SessionMode::Full, 1))
        .await
        .unwrap_err();
    assert_eq!(e.tls_failure(), Some(TlsFailure::CertificateUnknown), "{e}");
    // The server counts a failed handshake when its side gives up, which may be just after
    // the client has.
    let stats = settled_tls_stats(&server, |s| s.failed == 2).await;
    assert_eq!(stats.failed, 2, "{stats:?}");
}

#[tokio::test]
async fn wrong_server_name_is_classified() {
    let (server, ca, _dir) = server_and_ca("name");
    let client = TlsClient::new(&TlsOptions {
        ca_file: Some(ca.clone()),
        ..TlsOptions::default()
    })
    .unwrap();
    let session = client.session(SessionMode::Resume, 1);
    let e = connect(server.local_addr(), &session, "example.com")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectOther);
    assert_eq!(e.tls_failure(), Some(TlsFailure::NameMismatch), "{e}");
    // The override wins over the name passed to connect_tls.
    let client = TlsClient::new(&TlsOptions {
        ca_file: Some(ca.clone()),
        server_name: Some("example.com".into()),
        ..TlsOptions::default()
    })
    .unwrap();
    let e = get_once(server.local_addr(), &client.session(SessionMode::Full, 1))
        .await
        .unwrap_err();
    assert_eq!(e.tls_failure(), Some(TlsFailure::NameMismatch), "{e}");
    let client = TlsClient::new(&TlsOptions {
        ca_file: Some(ca),
        server_name: Some("localhost".into()),
        ..TlsOptions::default()
    })
    .unwrap();
    let (mut conn, _) = connect(
        server.local_addr(),
        &client.session(SessionMode::Full, 1),
        "example.com",
    )
    .await
    .unwrap();
    let resp = conn
        .send(
            &Request {
                method: "GET",
                target: b"/",
                host: b"localhost",
                headers: b"",
                body: RequestBody::Empty,
                close: false,
            },
            &mut Discard,
        )
        .await
        .unwrap();
    assert_eq!(resp.status, 200);
}

#[test]
fn config_errors_name_the_file() {
    let dir = temp_dir("config");
    let missing = dir.join("missing.pem");
    let e = TlsClient::new(&TlsOptions {
        ca_file: Some(missing.clone()),
        ..TlsOptions::default()
    })
    .unwrap_err();
    assert!(e.to_string().contains(&*missing.to_string_lossy()), "{e}");
    let empty = write(&dir, "empty.pem", "not a certificate\n");
    let e = TlsClient::new(&TlsOptions {
        ca_file: Some(empty.clone()),
        ..TlsOptions::default()
    })
    .unwrap_err();
    assert!(e.to_string().contains("empty.pem"), "{e}");
    let e = TlsClient::new(&TlsOptions {
        insecure: true,
        client_cert: Some((dir.join("c.pem"), dir.join("c.key"))),
        ..TlsOptions::default()
    })
    .unwrap_err();
    assert!(e.to_string().contains("c.pem"), "{e}");
}

/// `vus` sessions of `mode`, each opening `per_vu` connections in turn (one request each);
/// returns the server's count and the client's own count of (full, resumed).
async fn run_sessions(
    mode: SessionMode,
    versions: Vec<TlsVersion>,
    vus: usize,
    per_vu: usize,
) -> (TlsStats, (u64, u64)) {
    let (server, ca, _dir) = server_and_ca(&format!("{mode:?}-{versions:?}"));
    let client = TlsClient::new(&TlsOptions {
        ca_file: Some(ca),
        versions,
        ..TlsOptions::default()
    })
    .unwrap();
    let sessions: Vec<TlsSession> = (1..=vus as u64)
        .map(|vu| client.session(mode, vu))
        .collect();
    let mut seen = (0, 0);
    // Iterations interleave over the VUs, as a running plan's would.
    for _ in 0..per_vu {
        for session in &sessions {
            let (status, kind) = get_once(server.local_addr(), session).await.unwrap();
            assert_eq!(status, 200);
            match kind {
                HandshakeKind::Full => seen.0 += 1,
                HandshakeKind::Resumed => seen.1 += 1,
            }
        }
    }
    assert_eq!(server.stats().requests, (vus * per_vu) as u64);
    (server.tls_stats(), seen)
}

#[tokio::test]
async fn resume_mode_is_one_full_handshake_per_vu() {
    for versions in [vec![], vec![TlsVersion::Tls12]] {
        let (stats, seen) = run_sessions(SessionMode::Resume, versions.clone(), 10, 20).await;
        assert_eq!(
            stats,
            TlsStats {
                full: 10,
                resumed: 190,
                failed: 0
            },
            "{versions:?}"
        );
        assert_eq!(seen, (10, 190), "{versions:?}");
    }
}

#[tokio::test]
async fn full_mode_never_resumes() {
    let (stats, seen) = run_sessions(SessionMode::Full, vec![], 10, 20).await;
    assert_eq!(
        stats,
        TlsStats {
            full: 200,
            resumed: 0,
            failed: 0
        }
    );
    assert_eq!(seen, (200, 0));
}

#[tokio::test]
async fn shared_mode_resumes_across_vus() {
    let (stats, seen) = run_sessions(SessionMode::Shared, vec![], 10, 20).await;
    assert!(stats.full <= 2, "{stats:?}");
    assert_eq!(stats.full + stats.resumed, 200, "{stats:?}");
    assert_eq!(stats.failed, 0);
    assert_eq!(seen, (stats.full, stats.resumed));
}

#[tokio::test]
async fn mtls_accepts_the_right_identity_only() {
    let dir = temp_dir("mtls");
    let ca = new_ca("onrush test client CA");
    let client_ca = write(&dir, "client-ca.pem", &ca.cert.pem());
    let server = tls_server(ServerTls {
        cert_key: None,
        client_ca: Some(client_ca),
    });
    let server_ca = write(&dir, "server-ca.pem", server.self_signed_ca_pem().unwrap());
    let good = client_cert(&ca, &dir, "vu-good");
    let stranger = client_cert(&new_ca("another CA"), &dir, "vu-stranger");
    let addr = server.local_addr();

    for versions in [vec![TlsVersion::Tls13], vec![TlsVersion::Tls12]] {
        let options = |client_cert| TlsOptions {
            ca_file: Some(server_ca.clone()),
            versions: versions.clone(),
            client_cert,
            ..TlsOptions::default()
        };
        let client = TlsClient::new(&options(Some(good.clone()))).unwrap();
        let (status, _) = get_once(addr, &client.session(SessionMode::Resume, 1))
            .await
            .unwrap();
        assert_eq!(status, 200, "{versions:?}");

        // No certificate: with TLS 1.2 the handshake fails; with TLS 1.3 the server's alert
        // arrives after the client's side of the handshake, so the first request fails. Both
        // are classified the same way.
        let client = TlsClient::new(&options(None)).unwrap();
        let e = get_once(addr, &client.session(SessionMode::Full, 1))
            .await
            .unwrap_err();
        assert_eq!(
            e.tls_failure(),
            Some(TlsFailure::ClientCertificateRequired),
            "{versions:?}: {e}"
        );

        let client = TlsClient::new(&options(Some(stranger.clone()))).unwrap();
        let e = get_once(addr, &client.session(SessionMode::Full, 1))
            .await
            .unwrap_err();
        assert_eq!(
            e.tls_failure(),
            Some(TlsFailure::ClientCertificateRejected),
            "{versions:?}: {e}"
        );
    }
    let stats = settled_tls_stats(&server, |s| s.failed == 4).await;
    assert_eq!((stats.full, stats.failed), (2, 4), "{stats:?}");
}

#[test]
fn every_failure_has_a_hint() {
    for f in [
        TlsFailure::CertificateUnknown,
        TlsFailure::CertificateExpired,
        TlsFailure::NameMismatch,
        TlsFailure::ClientCertificateRequired,
        TlsFailure::ClientCertificateRejected,
        TlsFailure::Protocol,
        TlsFailure::HandshakeTimeout,
        TlsFailure::Other,
    ] {
        assert!(f.hint().len() > 20, "{f:?}");
    }
}

#[tokio::test]
async fn throttled_tls_download() {
    let server = tls_server(ServerTls::default());
    let client = TlsClient::new(&TlsOptions {
        insecure: true,
        ..TlsOptions::default()
    })
    .unwrap();
    let session = client.session(SessionMode::Full, 1);
    let opts = ConnectOptions {
        throttle: Some(250_000),
        ..ConnectOptions::default()
    };
    // connect_tls refuses a throttle rather than ignore it.
    let e = connect_tls(server.local_addr(), &opts, &session, "127.0.0.1")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectOther);
    let (mut conn, handshake) =
        onrush_http1::connect_any(server.local_addr(), &opts, Some((&session, "127.0.0.1")))
            .await
            .unwrap();
    assert!(matches!(conn, onrush_http1::AnyConnection::ThrottledTls(_)));
    assert_eq!(handshake.unwrap().0, HandshakeKind::Full);
    let started = std::time::Instant::now();
    let resp = conn
        .send(
            &Request {
                method: "GET",
                target: b"/bytes/500000",
                host: b"127.0.0.1",
                headers: b"",
                body: RequestBody::Empty,
                close: false,
            },
            &mut Discard,
        )
        .await
        .unwrap();
    let took = started.elapsed().as_secs_f64();
    assert_eq!((resp.status, resp.body_bytes), (200, 500_000));
    // 500 kB plus TLS record overhead at 250 kB/s.
    assert!((1.6..3.0).contains(&took), "took {took:.2} s");
}
