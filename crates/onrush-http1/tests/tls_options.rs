//! TLS client options checked from the server's side of a small rustls test server: PKCS#12
//! identities (made by `openssl pkcs12 -export`, modern and `-legacy`, and by the PKCS#12
//! library's writer) accepted by an mTLS server, their errors; several identities spread over
//! VUs (which certificate the server saw on each connection, and that `shared` sessions never
//! cross identities); the cipher suite the server negotiated; handshake and connect deadlines.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use onrush_http1::{
    connect_tls, ClientIdentity, ConnectOptions, Discard, Error, ErrorKind, Request, RequestBody,
    SessionMode, TlsClient, TlsFailure, TlsOptions, TlsSession, TlsVersion,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const PASSWORD: &str = "s3cret pass";

/// A fresh directory for this test's files.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "onrush-http1-tls-options-{}-{:?}-{test}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
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

/// A certificate signed by `ca` with its key: a client's (`client: true`) or a server's for
/// localhost and 127.0.0.1 (ECDSA P-256, rcgen's default).
struct Leaf {
    cert: rcgen::Certificate,
    key: rcgen::KeyPair,
}

fn leaf(ca: &Ca, name: &str, client: bool) -> Leaf {
    let key = rcgen::KeyPair::generate().unwrap();
    let names = if client {
        Vec::new()
    } else {
        vec!["localhost".to_string(), "127.0.0.1".to_string()]
    };
    let mut params = rcgen::CertificateParams::new(names).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.extended_key_usages = vec![if client {
        rcgen::ExtendedKeyUsagePurpose::ClientAuth
    } else {
        rcgen::ExtendedKeyUsagePurpose::ServerAuth
    }];
    let cert = params.signed_by(&key, &ca.cert, &ca.key).unwrap();
    Leaf { cert, key }
}

impl Leaf {
    fn der(&self) -> Vec<u8> {
        self.cert.der().to_vec()
    }

    /// Writes NAME.pem and NAME.key.
    fn write_pem(&self, dir: &Path, name: &str) -> (PathBuf, PathBuf) {
        (
            write(dir, &format!("{name}.pem"), self.cert.pem()),
            write(dir, &format!("{name}.key"), self.key.serialize_pem()),
        )
    }

    /// A PKCS#12 file made by the PKCS#12 library's writer (PBES2 + AES-256, SHA-256 MAC).
    fn write_p12(&self, dir: &Path, name: &str, password: &str) -> PathBuf {
        let mut store = p12_keystore::KeyStore::new();
        let key = p12_keystore::PrivateKey::from_der(&self.key.serialize_der()).unwrap();
        let cert = p12_keystore::Certificate::from_der(self.cert.der()).unwrap();
        store.add_entry(
            name,
            p12_keystore::KeyStoreEntry::PrivateKeyChain(p12_keystore::PrivateKeyChain::new(
                name.as_bytes(),
                key,
                [cert],
            )),
        );
        let bytes = store.writer(password).write().unwrap();
        write(dir, &format!("{name}.p12"), bytes)
    }
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Whether the openssl tool is there (under CI=true it must be: tests/install-openssl.sh).
fn have_openssl() -> bool {
    let found = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            !in_ci(),
            "openssl is missing, so PKCS#12 files made by OpenSSL cannot be tested; CI must \
             run crates/onrush-http1/tests/install-openssl.sh (Debian/Ubuntu: apt-get install \
             -y openssl)"
        );
        let _ = writeln!(
            std::io::stderr(),
            "\n{bar}\n!!! SKIPPED: PKCS#12 files made by `openssl pkcs12 -export`: openssl is \
             not installed.\n!!! Run crates/onrush-http1/tests/install-openssl.sh. Under \
             CI=true this is a failure.\n{bar}\n",
            bar = "!".repeat(88)
        );
    }
    found
}

/// `openssl pkcs12 -export` of a PEM pair, with `extra` flags (e.g. `-legacy`).
fn openssl_p12(cert: &Path, key: &Path, out: &Path, password: &str, extra: &[&str]) {
    let status = Command::new("openssl")
        .args(["pkcs12", "-export", "-in"])
        .arg(cert)
        .arg("-inkey")
        .arg(key)
        .arg("-out")
        .arg(out)
        .arg("-passout")
        .arg(format!("pass:{password}"))
        .args(extra)
        .status()
        .unwrap();
    assert!(status.success(), "openssl pkcs12 -export {extra:?} failed");
}

/// What the test server saw of one TLS connection.
#[derive(Debug, Clone)]
struct Seen {
    suite: rustls::CipherSuite,
    version: rustls::ProtocolVersion,
    /// The client's leaf certificate, DER.
    client_cert: Option<Vec<u8>>,
    resumed: bool,
    /// The key-exchange group of the handshake: none for a resumed TLS 1.2 session, which
    /// skips the key exchange.
    kx: Option<rustls::NamedGroup>,
}

/// A rustls server that records every handshake and answers each request with 200.
struct TestServer {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl TestServer {
    async fn start(config: rustls::ServerConfig) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let record = seen.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let record = record.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let conn = tls.get_ref().1;
                    record.lock().unwrap().push(Seen {
                        suite: conn.negotiated_cipher_suite().unwrap().suite(),
                        version: conn.protocol_version().unwrap(),
                        client_cert: conn
                            .peer_certificates()
                            .and_then(|c| c.first())
                            .map(|c| c.to_vec()),
                        resumed: conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
                        kx: conn.negotiated_key_exchange_group().map(|g| g.name()),
                    });
                    let mut buf = vec![0u8; 4096];
                    let mut pending = Vec::new();
                    loop {
                        let n = match tls.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => n,
                        };
                        pending.extend_from_slice(&buf[..n]);
                        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                            pending.drain(..end + 4);
                            let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                            if tls.write_all(ok).await.is_err() || tls.flush().await.is_err() {
                                return;
                            }
                        }
                    }
                });
            }
        });
        TestServer { addr, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// A server config with `server`'s certificate, requiring client certificates signed by
/// `client_ca` when given.
fn server_config(server: &Leaf, client_ca: Option<&Ca>) -> rustls::ServerConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .unwrap();
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.cert.der().clone()).unwrap();
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    builder
        .with_single_cert(
            vec![CertificateDer::from(server.der())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server.key.serialize_der())),
        )
        .unwrap()
}

/// A server CA and an mTLS server trusting `client_ca`; returns the server and the CA file
/// the client trusts.
async fn mtls_server(dir: &Path, client_ca: Option<&Ca>) -> (TestServer, PathBuf) {
    let server_ca = new_ca("onrush test server CA");
    let server_leaf = leaf(&server_ca, "localhost", false);
    let ca_file = write(dir, "server-ca.pem", server_ca.cert.pem());
    (
        TestServer::start(server_config(&server_leaf, client_ca)).await,
        ca_file,
    )
}

/// One GET on a new connection (with a generous deadline, so the deadline path is exercised
/// on success too); the response is read to its end (TLS 1.3 tickets arrive with it).
async fn get_once(addr: SocketAddr, session: &TlsSession) -> Result<u16, Error> {
    let opts = ConnectOptions {
        deadline: Some(tokio::time::Instant::now() + Duration::from_secs(10)),
        ..ConnectOptions::default()
    };
    let (mut conn, _, _) = connect_tls(addr, &opts, session, "localhost").await?;
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
        .await?;
    Ok(resp.status)
}

/// The server sees a certificate shortly after the client's handshake returns.
async fn settled(server: &TestServer, count: usize) -> Vec<Seen> {
    for _ in 0..500 {
        if server.seen().len() >= count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.seen()
}

#[tokio::test]
async fn pkcs12_identity_is_accepted_by_an_mtls_server() {
    let dir = temp_dir("p12");
    let client_ca = new_ca("onrush test client CA");
    let (server, server_ca) = mtls_server(&dir, Some(&client_ca)).await;
    let user = leaf(&client_ca, "p12 user", true);
    let mut files = vec![("library writer", user.write_p12(&dir, "writer", PASSWORD))];
    if have_openssl() {
        let (cert, key) = user.write_pem(&dir, "user");
        let modern = dir.join("openssl.p12");
        openssl_p12(&cert, &key, &modern, PASSWORD, &[]);
        let legacy = dir.join("openssl-legacy.p12");
        openssl_p12(&cert, &key, &legacy, PASSWORD, &["-legacy"]);
        // A password-less file: `-passout pass:` (OpenSSL still encrypts, with an empty one).
        let empty = dir.join("openssl-nopass.p12");
        openssl_p12(&cert, &key, &empty, "", &[]);
        files.push(("openssl pkcs12 -export", modern));
        files.push(("openssl pkcs12 -export -legacy", legacy));
        files.push(("openssl pkcs12 -export -passout pass:", empty));
    }
    for (i, (made_by, file)) in files.iter().enumerate() {
        let password = if made_by.ends_with("pass:") {
            ""
        } else {
            PASSWORD
        };
        for versions in [vec![TlsVersion::Tls13], vec![TlsVersion::Tls12]] {
            let client = TlsClient::new(&TlsOptions {
                ca_file: Some(server_ca.clone()),
                versions: versions.clone(),
                identities: vec![ClientIdentity::Pkcs12 {
                    file: file.clone(),
                    password: password.into(),
                }],
                ..TlsOptions::default()
            })
            .unwrap_or_else(|e| panic!("{made_by}: {e}"));
            assert_eq!(client.identities(), 1);
            let status = get_once(server.addr, &client.session(SessionMode::Full, 1))
                .await
                .unwrap_or_else(|e| panic!("{made_by} {versions:?}: {e}"));
            assert_eq!(status, 200, "{made_by}");
        }
        // Every connection so far presented the user's certificate.
        let seen = settled(&server, 2 * (i + 1)).await;
        assert_eq!(seen.len(), 2 * (i + 1));
        for s in &seen {
            assert_eq!(s.client_cert.as_deref(), Some(&user.der()[..]), "{made_by}");
        }
    }
}

#[test]
fn pkcs12_problems_are_clear() {
    let dir = temp_dir("p12-errors");
    let ca = new_ca("onrush test client CA");
    let user = leaf(&ca, "p12 user", true);
    let file = user.write_p12(&dir, "user", PASSWORD);
    let p12 = |file: &Path, password: &str| {
        TlsClient::new(&TlsOptions {
            insecure: true,
            identities: vec![ClientIdentity::Pkcs12 {
                file: file.to_path_buf(),
                password: password.into(),
            }],
            ..TlsOptions::default()
        })
        .map(|_| ())
        .map_err(|e| e.to_string())
    };
    assert_eq!(p12(&file, PASSWORD), Ok(()));

    let e = p12(&file, "wrong").unwrap_err();
    assert!(
        e.contains("user.p12") && e.contains("wrong password"),
        "{e}"
    );
    assert!(e.contains("client_p12_password"), "the fix: {e}");
    let e = p12(&file, "").unwrap_err();
    assert!(e.contains("no password was given"), "{e}");

    // Certificates only, no key.
    let mut store = p12_keystore::KeyStore::new();
    store.add_entry(
        "ca",
        p12_keystore::KeyStoreEntry::Certificate(
            p12_keystore::Certificate::from_der(user.cert.der()).unwrap(),
        ),
    );
    let certs_only = write(&dir, "certs.p12", store.writer(PASSWORD).write().unwrap());
    let e = p12(&certs_only, PASSWORD).unwrap_err();
    assert!(
        e.contains("certs.p12") && e.contains("no private key"),
        "{e}"
    );
    assert!(e.contains("openssl pkcs12 -export"), "the fix: {e}");

    let (pem, _) = user.write_pem(&dir, "user");
    let e = p12(&pem, PASSWORD).unwrap_err();
    assert!(
        e.contains("user.pem") && e.contains("PEM file, not PKCS#12"),
        "{e}"
    );
    let e = p12(&dir.join("missing.p12"), PASSWORD).unwrap_err();
    assert!(e.contains("missing.p12"), "{e}");
    let garbage = write(&dir, "garbage.p12", b"\x30\x03\x02\x01\x03");
    let e = p12(&garbage, PASSWORD).unwrap_err();
    assert!(e.contains("garbage.p12") && e.contains("PKCS#12"), "{e}");

    // A PEM identity whose key is not the certificate's.
    let other = leaf(&ca, "other", true);
    let (cert, _) = user.write_pem(&dir, "mismatch");
    let (_, key) = other.write_pem(&dir, "other");
    let e = TlsClient::new(&TlsOptions {
        insecure: true,
        identities: vec![ClientIdentity::Pem {
            cert: cert.clone(),
            key,
        }],
        ..TlsOptions::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("mismatch.pem"), "{e}");
    // The password never shows in debug output.
    let shown = format!(
        "{:?}",
        ClientIdentity::Pkcs12 {
            file,
            password: PASSWORD.into()
        }
    );
    assert!(!shown.contains(PASSWORD), "{shown}");
}

/// Three identities (two PEM, one PKCS#12), six VUs of `mode`, each connecting `per_vu` times:
/// which identity index each VU's session has, and the client certificate the server saw on
/// every connection, by VU.
async fn spread(mode: SessionMode, per_vu: usize) -> (Vec<Vec<u8>>, Vec<usize>, Vec<Seen>) {
    let dir = temp_dir(&format!("spread-{mode:?}"));
    let client_ca = new_ca("onrush test client CA");
    let (server, server_ca) = mtls_server(&dir, Some(&client_ca)).await;
    let users: Vec<Leaf> = (0..3)
        .map(|i| leaf(&client_ca, &format!("user {i}"), true))
        .collect();
    let (c0, k0) = users[0].write_pem(&dir, "user0");
    let (c2, k2) = users[2].write_pem(&dir, "user2");
    let client = TlsClient::new(&TlsOptions {
        ca_file: Some(server_ca),
        // `client_cert` comes first, then `identities` in order.
        client_cert: Some((c0, k0)),
        identities: vec![
            ClientIdentity::Pkcs12 {
                file: users[1].write_p12(&dir, "user1", PASSWORD),
                password: PASSWORD.into(),
            },
            ClientIdentity::Pem { cert: c2, key: k2 },
        ],
        ..TlsOptions::default()
    })
    .unwrap();
    assert_eq!(client.identities(), 3);
    let sessions: Vec<TlsSession> = (1..=6).map(|vu| client.session(mode, vu)).collect();
    let mut seen = Vec::new();
    // Iterations interleave over the VUs, as a running plan's would; one connection at a time,
    // so the server's records are in the same order.
    for _ in 0..per_vu {
        for session in &sessions {
            let before = server.seen().len();
            assert_eq!(get_once(server.addr, session).await.unwrap(), 200);
            let now = settled(&server, before + 1).await;
            seen.push(now[before].clone());
        }
    }
    (
        users.iter().map(Leaf::der).collect(),
        sessions.iter().map(TlsSession::identity).collect(),
        seen,
    )
}

#[tokio::test]
async fn identities_are_spread_over_vus() {
    let (users, picked, seen) = spread(SessionMode::Full, 1).await;
    // VU k presents identity (k - 1) mod 3.
    assert_eq!(picked, [0, 1, 2, 0, 1, 2]);
    let mut count: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
    for (vu, s) in seen.iter().enumerate() {
        let cert = s.client_cert.clone().expect("a client certificate");
        assert_eq!(cert, users[vu % 3], "VU {}", vu + 1);
        *count.entry(cert).or_default() += 1;
    }
    assert_eq!(count.len(), 3);
    assert!(count.values().all(|&n| n == 2), "{count:?}");
}

#[tokio::test]
async fn shared_sessions_never_cross_identities() {
    // With one cache for everyone, VU 2 would resume VU 1's session and the server would see
    // identity 0's certificate on VU 2's connection (resumption skips the certificate).
    let (users, _, seen) = spread(SessionMode::Shared, 3).await;
    assert_eq!(seen.len(), 18);
    for (i, s) in seen.iter().enumerate() {
        assert_eq!(
            s.client_cert.as_deref(),
            Some(&users[i % 6 % 3][..]),
            "connection {i} (VU {}, resumed: {})",
            i % 6 + 1,
            s.resumed
        );
    }
    // Sessions are shared within an identity: only the first connection of each is full.
    let full = seen.iter().filter(|s| !s.resumed).count();
    assert_eq!(full, 3, "{seen:?}");
}

#[tokio::test]
async fn the_chosen_cipher_suite_is_negotiated() {
    let dir = temp_dir("ciphers");
    let (server, server_ca) = mtls_server(&dir, None).await;
    let session = |ciphers: &[&str]| {
        TlsClient::new(&TlsOptions {
            ca_file: Some(server_ca.clone()),
            cipher_suites: ciphers.iter().map(|s| s.to_string()).collect(),
            ..TlsOptions::default()
        })
        .unwrap()
        .session(SessionMode::Full, 1)
    };
    use rustls::{CipherSuite as C, ProtocolVersion as V};
    // Without a choice onrush offers AES-128-GCM-SHA256 first (cheaper key schedule than
    // rustls' AES-256/SHA-384 first), and the server follows the client's order.
    get_once(server.addr, &session(&[])).await.unwrap();
    // A TLS 1.3 suite that is nobody's first choice; case does not matter.
    get_once(server.addr, &session(&["tls13_chacha20_poly1305_sha256"]))
        .await
        .unwrap();
    // Only TLS 1.2 suites: TLS 1.3 is not offered at all.
    get_once(
        server.addr,
        &session(&["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"]),
    )
    .await
    .unwrap();
    // Several: the server follows the client's order (rustls' default).
    get_once(
        server.addr,
        &session(&["TLS13_AES_128_GCM_SHA256", "TLS13_AES_256_GCM_SHA384"]),
    )
    .await
    .unwrap();
    let seen: Vec<(C, V)> = settled(&server, 4)
        .await
        .iter()
        .map(|s| (s.suite, s.version))
        .collect();
    assert_eq!(
        seen,
        [
            (C::TLS13_AES_128_GCM_SHA256, V::TLSv1_3),
            (C::TLS13_CHACHA20_POLY1305_SHA256, V::TLSv1_3),
            (C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, V::TLSv1_2),
            (C::TLS13_AES_128_GCM_SHA256, V::TLSv1_3),
        ]
    );

    // An RSA suite against an ECDSA certificate: no common suite, classified.
    let e = get_once(
        server.addr,
        &session(&["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]),
    )
    .await
    .unwrap_err();
    assert_eq!(e.tls_failure(), Some(TlsFailure::Protocol), "{e}");

    // Unknown names and suites of no offered version are configuration errors.
    let e = TlsClient::new(&TlsOptions {
        insecure: true,
        cipher_suites: vec!["TLS_RSA_WITH_RC4_128_MD5".into()],
        ..TlsOptions::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("TLS_RSA_WITH_RC4_128_MD5"), "{e}");
    for name in onrush_http1::cipher_suite_names() {
        assert!(e.contains(name), "lists {name}: {e}");
    }
    let e = TlsClient::new(&TlsOptions {
        insecure: true,
        versions: vec![TlsVersion::Tls12],
        cipher_suites: vec!["TLS13_AES_128_GCM_SHA256".into()],
        ..TlsOptions::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("none of the cipher suites"), "{e}");
}

#[tokio::test]
async fn the_chosen_key_exchange_group_is_negotiated_and_tls12_resumption_skips_it() {
    let dir = temp_dir("kx");
    let (server, server_ca) = mtls_server(&dir, None).await;
    let client = |groups: &[&str], versions: Vec<TlsVersion>| {
        TlsClient::new(&TlsOptions {
            ca_file: Some(server_ca.clone()),
            kx_groups: groups.iter().map(|s| s.to_string()).collect(),
            versions,
            ..TlsOptions::default()
        })
        .unwrap()
    };
    use rustls::NamedGroup as G;
    let tls13 = || vec![TlsVersion::Tls13];
    // Default: X25519; then each group alone, case insensitive; the first of several.
    for groups in [
        &[][..],
        &["secp256r1"],
        &["SECP384R1"],
        &["secp256r1", "X25519"],
    ] {
        let session = client(groups, tls13()).session(SessionMode::Full, 1);
        get_once(server.addr, &session).await.unwrap();
    }
    // Resumed sessions: TLS 1.3 resumes with a fresh key exchange (psk_dhe_ke, the only PSK
    // mode rustls offers); TLS 1.2 resumes without one.
    for versions in [tls13(), vec![TlsVersion::Tls12]] {
        let session = client(&["secp256r1"], versions).session(SessionMode::Resume, 1);
        get_once(server.addr, &session).await.unwrap();
        get_once(server.addr, &session).await.unwrap();
    }
    let seen: Vec<(Option<G>, bool)> = settled(&server, 8)
        .await
        .iter()
        .map(|s| (s.kx, s.resumed))
        .collect();
    assert_eq!(
        seen,
        [
            (Some(G::X25519), false),
            (Some(G::secp256r1), false),
            (Some(G::secp384r1), false),
            (Some(G::secp256r1), false),
            (Some(G::secp256r1), false),
            (Some(G::secp256r1), true),
            (Some(G::secp256r1), false),
            (None, true),
        ]
    );
    let e = TlsClient::new(&TlsOptions {
        insecure: true,
        kx_groups: vec!["ffdhe2048".into()],
        ..TlsOptions::default()
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("unknown key-exchange group \"ffdhe2048\""),
        "{e}"
    );
    for name in onrush_http1::kx_group_names() {
        assert!(e.contains(name), "lists {name}: {e}");
    }
}

#[test]
fn the_suites_are_those_of_rustls_ring() {
    let names = onrush_http1::cipher_suite_names();
    assert_eq!(names.len(), 9, "{names:?}");
    assert_eq!(names[0], "TLS13_AES_256_GCM_SHA384");
    assert!(names.contains(&"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"));
}

/// A listener that accepts connections and never says a word (as a plain-TCP service waiting
/// for its client to speak first would, or a server too busy to answer).
async fn silent_listener() -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    (addr, task)
}

#[tokio::test]
async fn a_handshake_past_the_deadline_is_a_handshake_timeout() {
    let (addr, _task) = silent_listener().await;
    let client = TlsClient::new(&TlsOptions {
        insecure: true,
        ..TlsOptions::default()
    })
    .unwrap();
    let session = client.session(SessionMode::Full, 1);
    for throttle in [None, Some(1_000_000)] {
        let started = std::time::Instant::now();
        let opts = ConnectOptions {
            deadline: Some(tokio::time::Instant::now() + Duration::from_millis(300)),
            throttle,
            ..ConnectOptions::default()
        };
        let e = match onrush_http1::connect_any(addr, &opts, Some((&session, "localhost"))).await {
            Ok(_) => panic!("a silent server completed a handshake"),
            Err(e) => e,
        };
        let took = started.elapsed();
        assert_eq!(e.kind(), ErrorKind::ConnectTimeout, "{e}");
        assert_eq!(e.tls_failure(), Some(TlsFailure::HandshakeTimeout), "{e}");
        assert!(
            (Duration::from_millis(280)..Duration::from_secs(3)).contains(&took),
            "took {took:?}"
        );
        let text = e.to_string();
        assert!(text.contains("did not finish in time"), "{text}");
        assert!(text.contains("http.timeout"), "the hint: {text}");
    }
    // A deadline already past: the TCP connect (or, if it wins the race, the handshake) fails
    // at once, as a timeout either way.
    let opts = ConnectOptions {
        deadline: Some(tokio::time::Instant::now()),
        ..ConnectOptions::default()
    };
    let Err(e) = connect_tls(addr, &opts, &session, "localhost").await else {
        panic!("a handshake with a silent server");
    };
    assert_eq!(e.kind(), ErrorKind::ConnectTimeout, "{e}");
    assert!(TlsFailure::HandshakeTimeout.hint().contains("http.timeout"));
}

#[tokio::test]
async fn a_connect_past_the_deadline_is_a_connect_timeout() {
    // A listener whose accept queue is full drops new SYNs (Linux: with net.ipv4.
    // tcp_abort_on_overflow=0, the default), so a connect hangs until its deadline. Fill the
    // queue of a backlog-1 listener that never accepts.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket
        .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    socket.listen(1).unwrap();
    let addr = socket.local_addr().unwrap().as_socket().unwrap();
    let mut filler = Vec::new();
    for _ in 0..4 {
        if let Ok(Ok(s)) = tokio::time::timeout(
            Duration::from_millis(200),
            tokio::net::TcpStream::connect(addr),
        )
        .await
        {
            filler.push(s);
        }
    }
    let started = std::time::Instant::now();
    let opts = ConnectOptions {
        deadline: Some(tokio::time::Instant::now() + Duration::from_millis(300)),
        ..ConnectOptions::default()
    };
    let result = onrush_http1::connect(addr, &opts).await;
    let took = started.elapsed();
    let Err(e) = result else {
        // A kernel that answers even with a full queue (tcp_abort_on_overflow=1 resets instead):
        // nothing to observe here.
        eprintln!("the connect succeeded despite a full accept queue; connect-timeout not observable on this host");
        return;
    };
    if e.kind() == ErrorKind::ConnectRefused {
        eprintln!("the kernel reset the connect (tcp_abort_on_overflow=1?); connect-timeout not observable on this host");
        return;
    }
    assert_eq!(e.kind(), ErrorKind::ConnectTimeout, "{e}");
    assert_eq!(e.tls_failure(), None, "a TCP timeout is not a TLS one: {e}");
    assert!(e.to_string().contains("did not finish in time"), "{e}");
    assert!(
        (Duration::from_millis(280)..Duration::from_secs(3)).contains(&took),
        "took {took:?}"
    );
    drop(filler);
}
