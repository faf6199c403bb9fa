//! The server over TLS, seen through a bare rustls client: the handshake counters, `/stats`,
//! ALPN, the generated certificate and configuration errors. (The client side of onrush, its
//! session modes and mTLS are tested in onrush-http1's `tests/tls.rs` against this server.)

use std::sync::Arc;

use onrush_server::{ServerConfig, ServerHandle, ServerTls, TlsStats};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn config() -> ServerConfig {
    ServerConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
    }
}

fn client_config(server: &ServerHandle) -> Arc<rustls::ClientConfig> {
    let pem = server.self_signed_ca_pem().expect("a generated CA");
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// One `Connection: close` request over a new TLS connection; returns the ALPN protocol and
/// the body.
async fn get(
    server: &ServerHandle,
    config: &Arc<rustls::ClientConfig>,
    path: &str,
) -> (Vec<u8>, String) {
    let tcp = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(config.clone())
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    let alpn = tls.get_ref().1.alpn_protocol().unwrap_or_default().to_vec();
    tls.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut response = String::new();
    tls.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let body = response.split_once("\r\n\r\n").unwrap().1.to_string();
    (alpn, body)
}

#[tokio::test]
async fn serves_https_and_counts_handshakes() {
    let server = onrush_server::start_tls(config(), ServerTls::default()).unwrap();
    let client = client_config(&server);
    let (alpn, body) = get(&server, &client, "/").await;
    assert_eq!(alpn, b"http/1.1");
    assert!(!body.is_empty());
    // The second connection resumes with a ticket from the first.
    let (_, body) = get(&server, &client, "/stats").await;
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["tls_full"], 1, "{v}");
    assert_eq!(v["tls_resumed"], 1, "{v}");
    assert_eq!(v["tls_failed"], 0, "{v}");
    assert_eq!(v["requests"], 1, "{v}");
    assert_eq!(
        server.tls_stats(),
        TlsStats {
            full: 1,
            resumed: 1,
            failed: 0
        }
    );
}

#[tokio::test]
async fn a_client_that_is_not_tls_is_a_failed_handshake() {
    let server = onrush_server::start_tls(config(), ServerTls::default()).unwrap();
    let mut tcp = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut rest = Vec::new();
    let _ = tcp.read_to_end(&mut rest).await;
    for _ in 0..500 {
        if server.tls_stats().failed == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(server.tls_stats().failed, 1);
    assert_eq!(server.stats().requests, 0);
}

#[test]
fn plain_server_has_no_tls() {
    let server = onrush_server::start(config()).unwrap();
    assert_eq!(server.tls_stats(), TlsStats::default());
    assert!(server.self_signed_ca_pem().is_none());
}

#[test]
fn given_certificate_files_are_used_and_errors_name_them() {
    let dir = std::env::temp_dir().join(format!("onrush-server-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = (dir.join("missing.pem"), dir.join("missing.key"));
    let e = onrush_server::start_tls(
        config(),
        ServerTls {
            cert_key: Some(missing),
            client_ca: None,
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("missing.pem"), "{e}");

    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let cert_path = dir.join("cert.pem");
    let key_path = dir.join("cert.key");
    std::fs::write(&cert_path, cert.pem()).unwrap();
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    let server = onrush_server::start_tls(
        config(),
        ServerTls {
            cert_key: Some((cert_path.clone(), key_path.clone())),
            client_ca: None,
        },
    )
    .unwrap();
    assert!(server.self_signed_ca_pem().is_none());
    drop(server);
    let server = onrush_server::start_tls(
        config(),
        ServerTls {
            cert_key: Some((cert_path, key_path.clone())),
            client_ca: Some(key_path),
        },
    );
    // A key file is no CA file: named in the error.
    let e = server.unwrap_err();
    assert!(e.to_string().contains("cert.key"), "{e}");
}
