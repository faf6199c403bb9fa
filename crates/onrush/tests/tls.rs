//! HTTPS end to end: connection scope x TLS session mode give the handshakes they promise, as
//! counted by the server; mutual TLS accepted with the right identity and classified without;
//! an untrusted server classified.

use crate::common;
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

/// A client certificate with common name `name`, signed by `ca`.
fn named_client(
    ca: &(rcgen::Certificate, rcgen::KeyPair),
    name: &str,
) -> (rcgen::Certificate, rcgen::KeyPair) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    (params.signed_by(&key, &ca.0, &ca.1).unwrap(), key)
}

/// Writes NAME.pem and NAME.key into `dir`.
fn write_pem(dir: &Path, name: &str, id: &(rcgen::Certificate, rcgen::KeyPair)) {
    write(dir, &format!("{name}.pem"), &id.0.pem());
    write(dir, &format!("{name}.key"), &id.1.serialize_pem());
}

/// Writes NAME.p12 (PBES2 + AES-256, as `openssl pkcs12 -export` makes) into `dir`.
fn write_p12(dir: &Path, name: &str, id: &(rcgen::Certificate, rcgen::KeyPair), password: &str) {
    let mut store = p12_keystore::KeyStore::new();
    let key = p12_keystore::PrivateKey::from_der(&id.1.serialize_der()).unwrap();
    let cert = p12_keystore::Certificate::from_der(id.0.der()).unwrap();
    store.add_entry(
        name,
        p12_keystore::KeyStoreEntry::PrivateKeyChain(p12_keystore::PrivateKeyChain::new(
            name.as_bytes(),
            key,
            [cert],
        )),
    );
    std::fs::write(
        dir.join(format!("{name}.p12")),
        store.writer(password).write().unwrap(),
    )
    .unwrap();
}

#[test]
fn identities_are_spread_over_vus() {
    let dir = temp_dir("tls-identities");
    let ca = new_ca("onrush test client CA");
    let client_ca = write(&dir, "client-ca.pem", &ca.0.pem());
    let server = tls_server(onrush_server::ServerTls {
        cert_key: None,
        client_ca: Some(client_ca),
    });
    write(&dir, "ca.pem", server.self_signed_ca_pem().unwrap());
    let ids = dir.join("ids");
    std::fs::create_dir_all(&ids).unwrap();
    write_pem(&ids, "alice", &named_client(&ca, "alice"));
    write_pem(&ids, "bob", &named_client(&ca, "bob"));
    write_p12(&ids, "carol", &named_client(&ca, "carol"), "carol's secret");
    let port = server.local_addr().port();
    let expected = |n: u64| {
        ["alice", "bob", "carol"]
            .iter()
            .map(|name| (name.to_string(), n))
            .collect::<std::collections::BTreeMap<_, _>>()
    };

    // A list, the PKCS#12 password from a -D variable. `session: full` and one connection per
    // VU: one handshake per VU, so the server sees each identity on exactly 2 of the 6 VUs.
    let list = "target: https://127.0.0.1:{port}\nvars: { p12pass: none }\nhttp:\n  tls:\n    session: full\n    ca_file: \"{dir}/ca.pem\"\n    identities:\n      - { cert: ids/alice.pem, key: ids/alice.key }\n      - { cert: ids/bob.pem, key: ids/bob.key }\n      - { p12: ids/carol.p12, password: \"${p12pass}\" }\nscenarios:\n  - name: s\n    load: { vus: 6, iterations: 3 }\n    steps: [ { get: / } ]\n";
    let text = list
        .replace("{port}", &port.to_string())
        .replace("{dir}", &dir.display().to_string());
    let path = write(&dir, "list.yaml", &text);
    let s = run_expect(
        0,
        &[
            "run",
            path.to_str().unwrap(),
            "-D",
            "p12pass=carol's secret",
        ],
        &dir.join("list"),
    );
    assert_eq!(u64_at(&s, "/totals/requests"), 18);
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    assert_eq!(u64_at(&s, "/totals/handshakes/full"), 6, "{s:#}");
    assert_eq!(server.tls_clients(), expected(2));

    // The same identities from the folder (file-name order: alice, bob, carol).
    let folder = "target: https://127.0.0.1:{port}\nhttp:\n  tls:\n    session: full\n    ca_file: \"{dir}/ca.pem\"\n    identities_dir: ids\n    identities_password: \"carol's secret\"\nscenarios:\n  - name: s\n    load: { vus: 6, iterations: 3 }\n    steps: [ { get: / } ]\n";
    let s = run(port, &dir, "folder", folder, 0);
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    assert_eq!(server.tls_clients(), expected(4));

    // An identity from a CA the server does not trust is rejected, and classified so.
    let stranger = named_client(&new_ca("some other CA"), "mallory");
    write_pem(&ids, "mallory", &stranger);
    let rejected = "target: https://127.0.0.1:{port}\nhttp:\n  tls:\n    ca_file: \"{dir}/ca.pem\"\n    identities: [ { cert: ids/mallory.pem, key: ids/mallory.key } ]\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 3 }\n    steps: [ { get: / } ]\n";
    let s = run(port, &dir, "rejected", rejected, 4);
    assert_eq!(
        u64_at(
            &s,
            "/totals/failures_by_class/tls_client_certificate_rejected"
        ),
        3,
        "{s:#}"
    );
}

#[test]
fn a_wrong_p12_password_stops_the_plan_before_it_runs() {
    let dir = temp_dir("tls-p12-password");
    let ca = new_ca("onrush test client CA");
    write_p12(&dir, "client", &named_client(&ca, "vu"), "right");
    let plan = write(
        &dir,
        "plan.yaml",
        "target: https://127.0.0.1:1\nhttp:\n  tls:\n    client_p12: client.p12\n    client_p12_password: wrong\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps: [ { get: / } ]\n",
    );
    let out = onrush()
        .args(["validate", plan.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("plan.yaml:5:26"), "file:line:col: {err}");
    assert!(err.contains("client.p12: wrong password"), "{err}");
}

#[test]
fn ciphers_reach_the_handshake() {
    // The built-in server's generated certificate is ECDSA: an ECDSA suite works, an RSA-only
    // choice has no suite in common with it.
    let server = tls_server(onrush_server::ServerTls::default());
    let dir = temp_dir("tls-ciphers");
    write(&dir, "ca.pem", server.self_signed_ca_pem().unwrap());
    let plan = "target: https://127.0.0.1:{port}\nhttp:\n  tls: { ca_file: \"{dir}/ca.pem\", ciphers: [CIPHER] }\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 2 }\n    steps: [ { get: / } ]\n";
    let port = server.local_addr().port();
    for (cipher, code) in [
        ("ECDHE-ECDSA-AES128-GCM-SHA256", 0),
        ("TLS13_CHACHA20_POLY1305_SHA256", 0),
        ("ECDHE-RSA-AES128-GCM-SHA256", 4),
    ] {
        let s = run(port, &dir, cipher, &plan.replace("CIPHER", cipher), code);
        if code == 0 {
            assert_eq!(u64_at(&s, "/totals/failures"), 0, "{cipher}: {s:#}");
        } else {
            assert_eq!(
                u64_at(&s, "/totals/failures_by_class/tls_protocol"),
                2,
                "{cipher}: {s:#}"
            );
        }
    }
}

#[test]
fn the_plans_cipher_names_are_the_suites_rustls_offers() {
    let plan: Vec<&str> = onrush_plan::TLS_CIPHER_SUITES.iter().map(|s| s.0).collect();
    assert_eq!(plan, onrush_http1::cipher_suite_names());
}

#[test]
fn the_plans_kx_group_names_are_the_groups_rustls_offers() {
    let plan: Vec<&str> = onrush_plan::TLS_KX_GROUPS.iter().map(|g| g.0).collect();
    assert_eq!(plan, onrush_http1::kx_group_names());
}

#[test]
fn a_server_that_never_finishes_the_handshake_is_a_handshake_timeout() {
    // Accepts TCP connections and never says a word: the TCP connect succeeds, the TLS
    // handshake cannot.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().take(8) {
            held.push(conn);
        }
        std::thread::sleep(std::time::Duration::from_secs(30));
    });
    let dir = temp_dir("tls-handshake-timeout");
    let plan = "target: https://127.0.0.1:{port}\nhttp: { timeout: 300ms, connections: per_request, tls: { insecure: true } }\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 3 }\n    steps: [ { get: / } ]\n";
    let s = run(port, &dir, "stalled", plan, 4);
    assert_eq!(
        u64_at(&s, "/totals/failures_by_class/tls_handshake_timeout"),
        3,
        "{s:#}"
    );
}

#[test]
fn quick_tests_https_with_k_or_a_ca_file_and_plans_trust_the_host_bundle() {
    let server = tls_server(onrush_server::ServerTls::default());
    let dir = temp_dir("tls-quick");
    let ca = write(&dir, "ca.pem", server.self_signed_ca_pem().unwrap());
    let url = format!("https://127.0.0.1:{}/", server.local_addr().port());
    let quick = |name: &str, extra: &[&str], code: i32| {
        let mut args = vec!["quick", url.as_str(), "-n", "6", "-c", "2"];
        args.extend_from_slice(extra);
        run_expect(code, &args, &dir.join(name))
    };
    // Not signed by a CA of the host's bundle: every request fails, and says so.
    let s = quick("plain", &[], 4);
    assert_eq!(
        u64_at(&s, "/totals/failures_by_class/tls_certificate_unknown"),
        6,
        "{s:#}"
    );
    for (name, flags) in [
        ("insecure", vec!["-k"]),
        ("ca-file", vec!["--ca-file", ca.to_str().unwrap()]),
    ] {
        let s = quick(name, &flags, 0);
        assert_eq!(u64_at(&s, "/totals/requests"), 6, "{name}: {s:#}");
        assert_eq!(u64_at(&s, "/totals/failures"), 0, "{name}: {s:#}");
    }
    // A plan without ca_file trusts the host's CA bundle: SSL_CERT_FILE names it here.
    let plan = write(
        &dir,
        "bundle.yaml",
        &format!("target: {url}\nscenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 3 }}\n    steps: [ {{ get: / }} ]\n"),
    );
    let out = dir.join("bundle");
    let output = onrush()
        .args(["run", plan.to_str().unwrap(), "--quiet", "--out"])
        .arg(&out)
        .env("SSL_CERT_FILE", &ca)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(u64_at(&summary(&out), "/totals/failures"), 0);
}

/// `onrush quick` against a server that requires a client certificate: --cert/--key (PEM) and
/// --p12 (its password from the variable --p12-password-env names) present one; without them
/// every request fails `tls_client_certificate_required`; the password is never written.
#[test]
fn quick_presents_a_client_certificate_with_cert_and_key_or_p12() {
    let dir = temp_dir("tls-quick-mtls");
    let ca = new_ca("onrush test client CA");
    let client_ca = write(&dir, "client-ca.pem", &ca.0.pem());
    let server = tls_server(onrush_server::ServerTls {
        cert_key: None,
        client_ca: Some(client_ca),
    });
    let server_ca = write(&dir, "ca.pem", server.self_signed_ca_pem().unwrap());
    let url = format!("https://127.0.0.1:{}/", server.local_addr().port());
    write_pem(&dir, "alice", &named_client(&ca, "alice"));
    let password = "p12 pass 7f3a9c";
    write_p12(&dir, "carol", &named_client(&ca, "carol"), password);
    let quick = |name: &str, extra: &[&str]| {
        let out = dir.join(name);
        let output = onrush()
            .args(["quick", &url, "-n", "4", "-c", "2", "--ca-file"])
            .arg(&server_ca)
            .args(extra)
            .args(["--quiet", "--out"])
            .arg(&out)
            .env("CAROL_P12_PASSWORD", password)
            .output()
            .unwrap();
        (output, out)
    };
    let path = |f: &str| dir.join(f).to_str().unwrap().to_string();

    let (output, out) = quick("none", &[]);
    assert_eq!(output.status.code(), Some(4), "{}", text(&output));
    assert_eq!(
        u64_at(
            &summary(&out),
            "/totals/failures_by_class/tls_client_certificate_required"
        ),
        4
    );

    let (output, out) = quick(
        "pem",
        &["--cert", &path("alice.pem"), "--key", &path("alice.key")],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(u64_at(&summary(&out), "/totals/failures"), 0);
    assert!(
        server.tls_clients().contains_key("alice"),
        "{:?}",
        server.tls_clients()
    );

    let (output, out) = quick(
        "p12",
        &[
            "--p12",
            &path("carol.p12"),
            "--p12-password-env",
            "CAROL_P12_PASSWORD",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(u64_at(&summary(&out), "/totals/failures"), 0);
    assert!(
        server.tls_clients().contains_key("carol"),
        "{:?}",
        server.tls_clients()
    );
    for entry in std::fs::read_dir(&out).unwrap() {
        let file = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(
            !String::from_utf8_lossy(&file).contains(password),
            "the p12 password was written"
        );
    }

    // Bad input: each a usage error (exit 2) that names the fix, nothing run.
    for (extra, says) in [
        (vec!["--cert", "x.pem"], "--key"),
        (
            vec!["--p12", "c.p12", "--p12-password-env", "NO_SUCH_VAR_7F3A"],
            "NO_SUCH_VAR_7F3A is not set",
        ),
        (
            vec!["--cert", "x.pem", "--key", "x.key", "--p12", "c.p12"],
            "--p12",
        ),
    ] {
        let (output, _) = quick("bad", &extra);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{extra:?}: {}",
            text(&output)
        );
        assert!(stderr.contains(says), "{extra:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let output = onrush()
        .args(["quick", "http://127.0.0.1:1/", "-n", "1", "--cert"])
        .arg(dir.join("alice.pem"))
        .arg("--key")
        .arg(dir.join("alice.key"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("https://"));
}
