//! HTTPS end to end: connection scope x TLS session mode give the handshakes they promise, as
//! counted by the server; mutual TLS accepted with the right identity and classified without;
//! an untrusted server classified.

mod common;
use common::*;

use std::path::{Path, PathBuf};

fn tls_server(tls: onrush_server::ServerTls) -> onrush_server::ServerHandle {
    onrush_server::start_tls(
        onrush_server::ServerConfig {
            addr: "127.0.0.1:0".parse().unwrap(),
            threads: 1,
        },
        tls,
    )
    .expect("the TLS server starts")
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs `plan` (with {port} and {dir} filled in); returns summary.json.
fn run(port: u16, dir: &Path, name: &str, plan: &str, code: i32) -> serde_json::Value {
    let text = plan
        .replace("{port}", &port.to_string())
        .replace("{dir}", &dir.display().to_string());
    let path = write(dir, &format!("{name}.yaml"), &text);
    run_expect(code, &["run", path.to_str().unwrap()], &dir.join(name))
}

const PLAN: &str = "target: https://127.0.0.1:{port}\nhttp:\n  connections: per_iteration\n  tls: { session: SESSION, ca_file: \"{dir}/ca.pem\" }\nscenarios:\n  - name: s\n    load: { vus: 10, iterations: 20, ramp_up: RAMP }\n    steps: [ { get: / } ]\n";

#[test]
fn session_modes_give_the_handshakes_they_promise() {
    // (session, ramp-up, full, resumed): `shared` starts VUs 100 ms apart so the first
    // session exists when the others connect.
    for (session, ramp, full, resumed) in [
        ("resume", "0s", 10, 190),
        ("full", "0s", 200, 0),
        ("shared", "1s", 1, 199),
    ] {
        let server = tls_server(onrush_server::ServerTls::default());
        let dir = temp_dir(&format!("tls-{session}"));
        write(&dir, "ca.pem", server.self_signed_ca_pem().unwrap());
        let plan = PLAN.replace("SESSION", session).replace("RAMP", ramp);
        let s = run(server.local_addr().port(), &dir, session, &plan, 0);
        assert_eq!(u64_at(&s, "/totals/requests"), 200);
        assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
        let stats = server.tls_stats();
        if session == "shared" {
            // One full handshake per worker thread at most (each may race to the first one).
            assert!(
                stats.full <= 2 && stats.full + stats.resumed == 200,
                "{session}: {stats:?}"
            );
        } else {
            assert_eq!(
                (stats.full, stats.resumed),
                (full, resumed),
                "{session}: server-side count"
            );
        }
        assert_eq!(
            u64_at(&s, "/totals/handshakes/full"),
            stats.full,
            "{session}: our count"
        );
        assert_eq!(
            u64_at(&s, "/totals/handshakes/resumed"),
            stats.resumed,
            "{session}: our count"
        );
    }
}

#[test]
fn mutual_tls_with_and_without_the_right_identity() {
    let dir = temp_dir("mtls");
    let ca = new_ca("onrush test client CA");
    let client_ca = write(&dir, "client-ca.pem", &ca.0.pem());
    let server = tls_server(onrush_server::ServerTls {
        cert_key: None,
        client_ca: Some(client_ca),
    });
    write(&dir, "ca.pem", server.self_signed_ca_pem().unwrap());
    let (cert, key) = client_cert(&ca, &dir);
    let port = server.local_addr().port();
    let with = format!(
        "target: https://127.0.0.1:{{port}}\nhttp: {{ tls: {{ ca_file: \"{{dir}}/ca.pem\", client_cert: \"{}\", client_key: \"{}\" }} }}\nscenarios:\n  - name: s\n    load: {{ vus: 2, iterations: 5 }}\n    steps: [ {{ get: / }} ]\n",
        cert.display(),
        key.display()
    );
    let s = run(port, &dir, "with", &with, 0);
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    let without = "target: https://127.0.0.1:{port}\nhttp: { tls: { ca_file: \"{dir}/ca.pem\" } }\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 3 }\n    steps: [ { get: / } ]\n";
    let s = run(port, &dir, "without", without, 4);
    assert_eq!(
        u64_at(
            &s,
            "/totals/failures_by_class/tls_client_certificate_required"
        ),
        3,
        "{s:#}"
    );
}

#[test]
fn an_untrusted_server_certificate_is_classified() {
    let server = tls_server(onrush_server::ServerTls::default());
    let dir = temp_dir("tls-untrusted");
    let plan = "target: https://127.0.0.1:{port}\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 4 }\n    steps: [ { get: / } ]\n";
    let s = run(server.local_addr().port(), &dir, "untrusted", plan, 4);
    assert_eq!(
        u64_at(&s, "/totals/failures_by_class/tls_certificate_unknown"),
        4,
        "{s:#}"
    );
    let insecure = plan.replace(
        "target: https://127.0.0.1:{port}\n",
        "target: https://127.0.0.1:{port}\nhttp: { tls: { insecure: true } }\n",
    );
    let s = run(server.local_addr().port(), &dir, "insecure", &insecure, 0);
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
}

fn new_ca(name: &str) -> (rcgen::Certificate, rcgen::KeyPair) {
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
    (params.self_signed(&key).unwrap(), key)
}

fn client_cert(ca: &(rcgen::Certificate, rcgen::KeyPair), dir: &Path) -> (PathBuf, PathBuf) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "vu");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &ca.0, &ca.1).unwrap();
    (
        write(dir, "client.pem", &cert.pem()),
        write(dir, "client.key", &key.serialize_pem()),
    )
}
