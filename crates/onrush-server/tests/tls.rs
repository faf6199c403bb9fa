//! The server over TLS, seen through a bare rustls client: the handshake counters, `/stats`,
//! ALPN, the generated certificate and configuration errors. (The client side of onrush, its
//! session modes and mTLS are tested in onrush-http1's `tests/tls.rs` against this server.)

use crate::common;

use std::sync::Arc;

use common::h2client::{tls_config, tls_config_versions, H2};
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
    let dir = std::env::temp_dir().join(format!(
        "onrush-server-tls-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
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

#[tokio::test]
async fn tls_endpoint_describes_the_connection() {
    let server = onrush_server::start_tls(config(), ServerTls::default()).unwrap();
    let client = client_config(&server);
    let (_, body) = get(&server, &client, "/tls").await;
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        v,
        serde_json::json!({
            "version": "TLSv1_3",
            "cipher": v["cipher"],
            "alpn": "http/1.1",
            "resumed": false,
            "client_cert_subject": null,
        })
    );
    let cipher = v["cipher"].as_str().unwrap();
    assert!(cipher.starts_with("TLS13_"), "{cipher}");
    let (_, body) = get(&server, &client, "/tls").await;
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["resumed"], true, "{v}");

    // TLS 1.2, over h2.
    let ca = server.self_signed_ca_pem().unwrap();
    let tls12 = tls_config_versions(ca, &[b"h2"], None, &[&rustls::version::TLS12]);
    let h2 = H2::tls(server.local_addr(), tls12).await;
    let v = h2.get("/tls").await.json();
    assert_eq!(v["version"], "TLSv1_2", "{v}");
    assert_eq!(v["alpn"], "h2", "{v}");
    assert!(
        v["cipher"].as_str().unwrap().starts_with("TLS_ECDHE_"),
        "{v}"
    );
    assert!(server.tls_clients().is_empty());
}

/// A CA and client certificates signed by it, as PEM files and strings.
struct ClientPki {
    ca_file: std::path::PathBuf,
    /// (chain PEM, key PEM) per client.
    clients: Vec<(String, String)>,
}

fn client_pki(dir: &std::path::Path, subjects: &[&[(rcgen::DnType, &str)]]) -> ClientPki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "onrush test client CA");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let clients = subjects
        .iter()
        .map(|subject| {
            let key = rcgen::KeyPair::generate().unwrap();
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            params.distinguished_name = rcgen::DistinguishedName::new();
            for (ty, value) in subject.iter() {
                params.distinguished_name.push(ty.clone(), *value);
            }
            params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
            let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
            (cert.pem(), key.serialize_pem())
        })
        .collect();
    std::fs::create_dir_all(dir).unwrap();
    let ca_file = dir.join("client-ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    ClientPki { ca_file, clients }
}

#[tokio::test]
async fn client_certificates_are_shown_by_tls_and_counted_per_name() {
    use rcgen::DnType::{CommonName, OrganizationName, OrganizationalUnitName};
    let dir = std::env::temp_dir().join(format!(
        "onrush-server-mtls-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let pki = client_pki(
        &dir,
        &[
            &[(OrganizationName, "onrush tests"), (CommonName, "alice")],
            &[(CommonName, "bob, the builder")],
            &[
                (OrganizationName, "No CN Ltd"),
                (OrganizationalUnitName, "qa"),
            ],
        ],
    );
    let server = onrush_server::start_tls(
        config(),
        ServerTls {
            cert_key: None,
            client_ca: Some(pki.ca_file.clone()),
        },
    )
    .unwrap();
    let ca = server.self_signed_ca_pem().unwrap();
    let identity = |i: usize| Some((pki.clients[i].0.as_str(), pki.clients[i].1.as_str()));

    // alice over h2, twice with one config: the second handshake resumes and still knows her.
    let alice = tls_config(ca, &[b"h2", b"http/1.1"], identity(0));
    for resumed in [false, true] {
        let h2 = H2::tls(server.local_addr(), alice.clone()).await;
        let v = h2.get("/tls").await.json();
        assert_eq!(v["client_cert_subject"], "CN=alice,O=onrush tests", "{v}");
        assert_eq!(v["alpn"], "h2", "{v}");
        assert_eq!(v["resumed"], resumed, "{v}");
    }
    // bob over HTTP/1.1: RFC 4514 escaping in the subject, the plain CN in tls_clients.
    let bob = tls_config(ca, &[b"http/1.1"], identity(1));
    let tcp = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(bob)
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    tls.write_all(b"GET /tls HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    tls.read_to_string(&mut response).await.unwrap();
    let v: serde_json::Value =
        serde_json::from_str(response.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(v["client_cert_subject"], "CN=bob\\, the builder", "{v}");
    assert_eq!(v["alpn"], "http/1.1", "{v}");
    // No CN: counted under the whole subject.
    let h2 = H2::tls(server.local_addr(), tls_config(ca, &[b"h2"], identity(2))).await;
    let v = h2.get("/tls").await.json();
    assert_eq!(v["client_cert_subject"], "OU=qa,O=No CN Ltd", "{v}");

    let expected = serde_json::json!({
        "alice": 2,
        "bob, the builder": 1,
        "OU=qa,O=No CN Ltd": 1,
    });
    let stats = h2.stats().await;
    assert_eq!(stats["tls_clients"], expected, "{stats}");
    assert_eq!(stats["tls_full"], 3, "{stats}");
    assert_eq!(stats["tls_resumed"], 1, "{stats}");
    let by_name = server.tls_clients();
    assert_eq!(serde_json::to_value(&by_name).unwrap(), expected);
    let _ = std::fs::remove_dir_all(&dir);
}

/// One `Connection: close` HTTP/1.1 request over TLS; the whole response, head and body.
async fn get_raw(server: &ServerHandle, config: &Arc<rustls::ClientConfig>, path: &str) -> String {
    let tcp = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(config.clone())
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap();
    tls.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut response = String::new();
    tls.read_to_string(&mut response).await.unwrap();
    response
}

#[tokio::test]
async fn with_http3_on_https_responses_advertise_it_with_alt_svc() {
    let h3 = onrush_server::start_with_options(
        config(),
        onrush_server::ServerOptions {
            tls: Some(ServerTls::default()),
            http3: true,
            ..Default::default()
        },
    )
    .unwrap();
    let port = h3.local_addr().port();
    let response = get_raw(&h3, &client_config(&h3), "/json").await;
    let alt_svc = format!("alt-svc: h3=\":{port}\"\r\n");
    assert!(response.contains(&alt_svc), "{response}");
    // Over HTTP/2 too.
    let ca = h3.self_signed_ca_pem().unwrap();
    let h2 = H2::tls(h3.local_addr(), tls_config(ca, &[b"h2"], None)).await;
    let resp = h2.get("/").await;
    assert_eq!(
        resp.header("alt-svc"),
        Some(format!("h3=\":{port}\"").as_str())
    );
    // `/stats` is not advertised on, nor counted.
    assert_eq!(h2.get("/stats").await.header("alt-svc"), None);
    // A TLS server without HTTP/3 advertises nothing.
    let plain = onrush_server::start_tls(config(), ServerTls::default()).unwrap();
    let response = get_raw(&plain, &client_config(&plain), "/json").await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        !response.to_ascii_lowercase().contains("alt-svc"),
        "{response}"
    );
}

#[test]
fn http3_without_tls_is_refused_with_the_fix() {
    let err = onrush_server::start_with_options(
        config(),
        onrush_server::ServerOptions {
            http3: true,
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("--tls"), "{err}");
}
