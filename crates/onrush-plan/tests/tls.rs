//! `http.tls`: session reuse, certificates, versions, server name; plan level merged per scenario.
use crate::common;

use std::path::Path;

use common::{err, load_env, ok};
use onrush_plan::*;

fn plan(http: &str, scenario_http: &str) -> String {
    format!(
        "target: https://127.0.0.1:8443\nhttp:\n{http}scenarios:\n  - name: a\n    load: {{ vus: 1, iterations: 1 }}\n{scenario_http}    steps: [{{ get: / }}]\n  - name: b\n    load: {{ vus: 1, iterations: 1 }}\n    steps: [{{ get: / }}]\n"
    )
}

fn dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The error's text, checked for line, field and `fix`.
fn check(text: &str, line: usize, field: &str, fix: &str) -> String {
    let e = err(text);
    let shown = e.to_string();
    assert_eq!(e.line(), Some(line), "wrong line in:\n{shown}");
    assert_eq!(e.field(), field, "wrong field in:\n{shown}");
    assert!(shown.contains(fix), "expected {fix:?} in:\n{shown}");
    assert!(shown.contains('^'), "no caret in:\n{shown}");
    shown
}

#[test]
fn defaults() {
    let d = TlsSettings::default();
    assert_eq!(d.session, TlsSessionMode::Resume);
    assert!(!d.insecure);
    assert_eq!(d.ca_file, None);
    assert!(d.identities.is_empty());
    assert!(d.ciphers.is_empty());
    assert!(d.versions.is_empty());
    assert_eq!(d.server_name, None);
    assert_eq!(HttpSettings::default().tls, d);
    assert_eq!(TlsSessionMode::Shared.as_str(), "shared");
    assert_eq!(TlsVersionSetting::V1_3.as_str(), "1.3");

    // An https target without `tls:` is fine.
    let p = ok("target: https://example.com\nscenarios: [{ name: s, load: { vus: 1, iterations: 1 }, steps: [{ get: / }] }]\n");
    assert_eq!(p.http.tls, d);
    assert_eq!(p.scenarios[0].http.tls, d);
    // An empty `tls:` too.
    let p = ok(&plan("  tls:\n", ""));
    assert_eq!(p.http.tls, d);
}

#[test]
fn all_keys() {
    let p = ok(&plan(
        "  connections: per_iteration\n  tls:\n    session: full\n    insecure: true\n    ca_file: Cargo.toml\n    client_cert: Cargo.toml\n    client_key: src/lib.rs\n    versions: [\"1.3\", \"1.2\", 1.3]\n    server_name: api.example\n",
        "",
    ));
    let t = &p.http.tls;
    assert_eq!(t.session, TlsSessionMode::Full);
    assert!(t.insecure);
    assert_eq!(
        t.ca_file.as_deref(),
        Some(dir().join("Cargo.toml").as_path())
    );
    assert_eq!(
        t.identities,
        [ClientIdentity::Pem {
            cert: dir().join("Cargo.toml"),
            key: dir().join("src/lib.rs")
        }]
    );
    assert_eq!(
        t.versions,
        [TlsVersionSetting::V1_2, TlsVersionSetting::V1_3]
    );
    assert_eq!(t.server_name.as_deref(), Some("api.example"));
    // Scenarios inherit the plan level.
    assert_eq!(&p.scenarios[1].http.tls, t);

    let p = ok(&plan("  tls: { session: shared, versions: \"1.3\" }\n", ""));
    assert_eq!(p.http.tls.session, TlsSessionMode::Shared);
    assert_eq!(p.http.tls.versions, [TlsVersionSetting::V1_3]);
    let p = ok(&plan("  tls: { versions: [1.2] }\n", ""));
    assert_eq!(p.http.tls.versions, [TlsVersionSetting::V1_2]);
    let p = ok(&plan("  tls: { insecure: \"${INSECURE:-true}\" }\n", ""));
    assert!(p.http.tls.insecure);
}

#[test]
fn scenario_overrides_key_by_key() {
    let p = ok(&plan(
        "  tls:\n    session: full\n    insecure: true\n    server_name: api.example\n",
        "    http:\n      tls: { session: shared, server_name: other.example }\n",
    ));
    let a = &p.scenarios[0].http.tls;
    assert_eq!(a.session, TlsSessionMode::Shared);
    assert!(a.insecure, "kept from the plan level");
    assert_eq!(a.server_name.as_deref(), Some("other.example"));
    let b = &p.scenarios[1].http.tls;
    assert_eq!(b.session, TlsSessionMode::Full);
    assert_eq!(b.server_name.as_deref(), Some("api.example"));
    assert_eq!(p.http.tls, *b);

    // `http:` at scenario level without `tls:` keeps the plan-level TLS settings.
    let p = ok(&plan(
        "  tls: { session: full }\n",
        "    http: { timeout: 2s }\n",
    ));
    assert_eq!(p.scenarios[0].http.tls.session, TlsSessionMode::Full);
}

#[test]
fn unknown_key() {
    let s = check(
        &plan("  tls:\n    sesion: full\n", ""),
        4,
        "http.tls.sesion",
        "did you mean `session`?",
    );
    assert!(s.contains("unknown key `sesion`"), "{s}");
    check(
        &plan("", "    http:\n      tls: { verions: [\"1.3\"] }\n"),
        7,
        "scenarios[0].http.tls.verions",
        "did you mean `versions`?",
    );
    check(
        &plan("  tsl: { insecure: true }\n", ""),
        3,
        "http.tsl",
        "did you mean `tls`?",
    );
    check(
        &plan("  tls: full\n", ""),
        3,
        "http.tls",
        "expected a mapping of `session`",
    );
}

#[test]
fn bad_session_mode() {
    let s = check(
        &plan("  tls:\n    session: resum\n", ""),
        4,
        "http.tls.session",
        "did you mean `resume`?",
    );
    assert!(s.contains("unknown TLS session mode \"resum\""), "{s}");
    let s = check(
        &plan("  tls:\n    session: none\n", ""),
        4,
        "http.tls.session",
        "full: a full handshake",
    );
    assert!(s.contains("`resume`, `shared` or `full`"), "{s}");
}

#[test]
fn bad_version() {
    let s = check(
        &plan("  tls:\n    versions: [\"1.2\", \"1.1\"]\n", ""),
        4,
        "http.tls.versions[1]",
        "onrush speaks TLS 1.2 and 1.3",
    );
    assert!(s.contains("unsupported TLS version \"1.1\""), "{s}");
    check(
        &plan("  tls:\n    versions: 1.0\n", ""),
        4,
        "http.tls.versions",
        "onrush speaks TLS 1.2 and 1.3",
    );
    check(
        &plan("  tls:\n    versions: \"2.0\"\n", ""),
        4,
        "http.tls.versions",
        "onrush speaks TLS 1.2 and 1.3",
    );
    check(
        &plan("  tls:\n    versions: { a: 1 }\n", ""),
        4,
        "http.tls.versions",
        "expected a list of TLS versions",
    );
}

#[test]
fn missing_files() {
    let s = check(
        &plan("  tls:\n    ca_file: nope/ca.pem\n", ""),
        4,
        "http.tls.ca_file",
        "does not exist",
    );
    assert!(s.contains("relative to the plan file's directory"), "{s}");
    check(
        &plan("  tls:\n    ca_file: src\n", ""),
        4,
        "http.tls.ca_file",
        "is not a file",
    );
    check(
        &plan(
            "  tls:\n    client_cert: Cargo.toml\n    client_key: missing.key\n",
            "",
        ),
        5,
        "http.tls.client_key",
        "does not exist",
    );
}

#[test]
fn client_cert_needs_key() {
    let s = check(
        &plan("  tls:\n    client_cert: Cargo.toml\n", ""),
        4,
        "http.tls.client_cert",
        "add `client_key:",
    );
    assert!(
        s.contains("without `client_key`; expected both or neither"),
        "{s}"
    );
    check(
        &plan(
            "",
            "    http:\n      tls:\n        client_key: Cargo.toml\n",
        ),
        8,
        "scenarios[0].http.tls.client_key",
        "without `client_cert`",
    );
}

#[test]
fn bad_insecure_and_server_name() {
    check(
        &plan("  tls:\n    insecure: yes please\n", ""),
        4,
        "http.tls.insecure",
        "expected `true` or `false`",
    );
    check(
        &plan("  tls:\n    server_name: https://api.example:443\n", ""),
        4,
        "http.tls.server_name",
        "without scheme, port or path",
    );
    check(
        &plan("  tls:\n    server_name: \"\"\n", ""),
        4,
        "http.tls.server_name",
        "empty server name",
    );
    let p = ok(&plan("  tls:\n    server_name: \"::1\"\n", ""));
    assert_eq!(p.http.tls.server_name.as_deref(), Some("::1"));
}

const FIXTURES: &str = "tests/fixtures/tls";

fn fixture(name: &str) -> std::path::PathBuf {
    dir().join(FIXTURES).join(name)
}

/// A fresh, empty directory for one test.
fn temp_dir(test: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "onrush-plan-tls-{}-{:?}-{test}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn client_p12_opens_with_its_password() {
    // OpenSSL 3's default (PBES2, AES-256-CBC, SHA-256 MAC) and `-legacy` (RC2/3DES, SHA-1).
    for file in ["client.p12", "legacy.p12"] {
        let p = ok(&plan(
            &format!("  tls:\n    client_p12: {FIXTURES}/{file}\n    client_p12_password: onrush-fixture\n"),
            "",
        ));
        assert_eq!(
            p.http.tls.identities,
            [ClientIdentity::Pkcs12 {
                file: fixture(file),
                password: "onrush-fixture".into(),
                keys: 1
            }],
            "{file}"
        );
        assert_eq!(p.scenarios[1].http.tls, p.http.tls);
    }
    // The password from the environment, as the docs advise.
    let text = plan(
        &format!("  tls:\n    client_p12: {FIXTURES}/client.p12\n    client_p12_password: \"${{P12_PASSWORD}}\"\n"),
        "",
    );
    let p = load_env(&text, &[("P12_PASSWORD", "onrush-fixture")], &[]).unwrap();
    assert_eq!(p.http.tls.identities[0].file(), fixture("client.p12"));
    // The password never shows in debug output.
    let shown = format!("{:?}", p.http.tls);
    assert!(!shown.contains("onrush-fixture"), "{shown}");
    assert!(shown.contains("***"), "{shown}");
    // From the environment, wrong: the error is at the password's line.
    let e = load_env(&text, &[("P12_PASSWORD", "nope")], &[]).unwrap_err();
    assert_eq!(e.line(), Some(5), "{e}");
    assert_eq!(e.field(), "http.tls.client_p12_password");
}

#[test]
fn client_p12_problems_say_which_file_and_what_to_do() {
    let wrong = check(
        &plan(
            &format!("  tls:\n    client_p12: {FIXTURES}/client.p12\n    client_p12_password: \"guess\"\n"),
            "",
        ),
        5,
        "http.tls.client_p12_password",
        "wrong password",
    );
    assert!(wrong.contains("client.p12"), "{wrong}");
    assert!(wrong.contains("exported with"), "{wrong}");
    // No password at all: at the file, saying to add one.
    let s = check(
        &plan(
            &format!("  tls:\n    client_p12: {FIXTURES}/legacy.p12\n"),
            "",
        ),
        4,
        "http.tls.client_p12",
        "no password is given",
    );
    assert!(s.contains("client_p12_password"), "{s}");
    let s = check(
        &plan(
            &format!("  tls:\n    client_p12: {FIXTURES}/nokey.p12\n    client_p12_password: onrush-fixture\n"),
            "",
        ),
        4,
        "http.tls.client_p12",
        "openssl pkcs12 -export -in client.pem -inkey client.key",
    );
    assert!(s.contains("holds no private key"), "{s}");
    let s = check(
        &plan(
            &format!("  tls:\n    client_p12: {FIXTURES}/identities/alice.pem\n"),
            "",
        ),
        4,
        "http.tls.client_p12",
        "`client_cert` + `client_key`",
    );
    assert!(s.contains("is a PEM file, not PKCS#12"), "{s}");
    let s = check(
        &plan("  tls:\n    client_p12: Cargo.toml\n", ""),
        4,
        "http.tls.client_p12",
        "openssl pkcs12 -info",
    );
    assert!(s.contains("not a readable PKCS#12 file"), "{s}");
    check(
        &plan("  tls:\n    client_p12: missing.p12\n", ""),
        4,
        "http.tls.client_p12",
        "does not exist",
    );
    check(
        &plan("  tls:\n    client_p12_password: x\n", ""),
        4,
        "http.tls.client_p12_password",
        "password of the `client_p12` file",
    );
}

#[test]
fn identities_list() {
    let text = plan(
        &format!(
            "  tls:\n    identities:\n      - {{ cert: {FIXTURES}/identities/alice.pem, key: {FIXTURES}/identities/alice.key }}\n      - {{ p12: {FIXTURES}/identities/bob.p12, password: onrush-fixture }}\n      - {{ p12: {FIXTURES}/legacy.p12, password: \"${{PW}}\" }}\n"
        ),
        "",
    );
    let p = load_env(&text, &[("PW", "onrush-fixture")], &[]).unwrap();
    let ids = &p.http.tls.identities;
    assert_eq!(ids.len(), 3);
    assert_eq!(
        ids[0],
        ClientIdentity::Pem {
            cert: fixture("identities/alice.pem"),
            key: fixture("identities/alice.key")
        }
    );
    assert_eq!(ids[1].file(), fixture("identities/bob.p12"));
    assert!(
        matches!(&ids[2], ClientIdentity::Pkcs12 { password, keys: 1, .. } if password == "onrush-fixture")
    );
    // One mapping alone is a one-item list.
    let p = ok(&plan(
        &format!(
            "  tls:\n    identities: {{ p12: {FIXTURES}/client.p12, password: onrush-fixture }}\n"
        ),
        "",
    ));
    assert_eq!(p.http.tls.identities.len(), 1);
}

#[test]
fn bad_identities_entries() {
    let pem = format!("{FIXTURES}/identities/alice.pem");
    let s = check(
        &plan(
            &format!("  tls:\n    identities:\n      - {{ cert: {pem} }}\n"),
            "",
        ),
        5,
        "http.tls.identities[0].cert",
        "add `key: client.key`",
    );
    assert!(s.contains("`cert` without `key`"), "{s}");
    check(
        &plan(
            &format!(
                "  tls:\n    identities:\n      - {{ cert: {pem}, key: {pem}, password: x }}\n"
            ),
            "",
        ),
        5,
        "http.tls.identities[0].password",
        "PEM keys are read unencrypted",
    );
    check(
        &plan(
            &format!(
                "  tls:\n    identities:\n      - {{ p12: {FIXTURES}/client.p12, key: {pem} }}\n"
            ),
            "",
        ),
        5,
        "http.tls.identities[0].key",
        "the PKCS#12 file holds the key",
    );
    check(
        &plan(
            &format!(
                "  tls:\n    identities:\n      - {{ cert: {pem}, p12: {FIXTURES}/client.p12 }}\n"
            ),
            "",
        ),
        5,
        "http.tls.identities[0].p12",
        "`cert` and `p12` are both given",
    );
    check(
        &plan("  tls:\n    identities:\n      - { password: x }\n", ""),
        5,
        "http.tls.identities[0]",
        "no certificate given",
    );
    check(
        &plan("  tls:\n    identities:\n      - { crt: a.pem }\n", ""),
        5,
        "http.tls.identities[0].crt",
        "did you mean `cert`?",
    );
    check(
        &plan("  tls:\n    identities: []\n", ""),
        4,
        "http.tls.identities",
        "leave `identities` out",
    );
    check(
        &plan("  tls:\n    identities: a.pem\n", ""),
        4,
        "http.tls.identities",
        "expected a list of client identities",
    );
    // The second entry's wrong password is reported at that entry's password.
    check(
        &plan(
            &format!("  tls:\n    identities:\n      - {{ p12: {FIXTURES}/client.p12, password: onrush-fixture }}\n      - {{ p12: {FIXTURES}/identities/bob.p12, password: bobby }}\n"),
            "",
        ),
        6,
        "http.tls.identities[1].password",
        "wrong password",
    );
}

#[test]
fn identities_dir() {
    let p = ok(&plan(
        &format!("  tls:\n    identities_dir: {FIXTURES}/identities\n    identities_password: onrush-fixture\n"),
        "",
    ));
    // Sorted by file name: alice.pem (+ alice.key), bob.p12.
    assert_eq!(
        p.http.tls.identities,
        [
            ClientIdentity::Pem {
                cert: fixture("identities/alice.pem"),
                key: fixture("identities/alice.key")
            },
            ClientIdentity::Pkcs12 {
                file: fixture("identities/bob.p12"),
                password: "onrush-fixture".into(),
                keys: 1
            }
        ]
    );
    // A wrong password for the folder's .p12 files: at `identities_password`, naming the file.
    let s = check(
        &plan(
            &format!("  tls:\n    identities_dir: {FIXTURES}/identities\n    identities_password: nope\n"),
            "",
        ),
        5,
        "http.tls.identities_password",
        "wrong password",
    );
    assert!(s.contains("bob.p12"), "{s}");
    check(
        &plan(
            &format!("  tls:\n    identities_dir: {FIXTURES}/identities\n"),
            "",
        ),
        4,
        "http.tls.identities_dir",
        "no password is given",
    );
}

#[test]
fn identities_dir_problems() {
    let fix = dir().join(FIXTURES);
    let d = temp_dir("empty");
    std::fs::write(d.join("notes.txt"), "not an identity").unwrap();
    let s = check(
        &plan(
            &format!("  tls:\n    identities_dir: {}\n", d.display()),
            "",
        ),
        4,
        "http.tls.identities_dir",
        "relative to the plan file's directory",
    );
    assert!(s.contains("no client identity in"), "{s}");

    // A certificate without its key (a CA certificate left in the folder, say).
    let d = temp_dir("lonely-cert");
    std::fs::copy(fix.join("identities/alice.pem"), d.join("alice.pem")).unwrap();
    std::fs::copy(fix.join("identities/alice.key"), d.join("alice.key")).unwrap();
    std::fs::copy(fix.join("identities/alice.pem"), d.join("ca.crt")).unwrap();
    let s = check(
        &plan(
            &format!("  tls:\n    identities_dir: {}\n", d.display()),
            "",
        ),
        4,
        "http.tls.identities_dir",
        "move other files (a CA certificate, say) out of the folder",
    );
    assert!(s.contains("ca.crt has no private key"), "{s}");
    assert!(s.contains("ca.key"), "{s}");

    // A key without its certificate.
    let d = temp_dir("lonely-key");
    std::fs::copy(fix.join("identities/alice.key"), d.join("bob.key")).unwrap();
    let s = check(
        &plan(
            &format!("  tls:\n    identities_dir: {}\n", d.display()),
            "",
        ),
        4,
        "http.tls.identities_dir",
        "NAME.key",
    );
    assert!(s.contains("bob.key has no certificate"), "{s}");

    check(
        &plan("  tls:\n    identities_dir: no/such/dir\n", ""),
        4,
        "http.tls.identities_dir",
        "does not exist",
    );
    check(
        &plan("  tls:\n    identities_dir: Cargo.toml\n", ""),
        4,
        "http.tls.identities_dir",
        "is not a folder",
    );
    check(
        &plan("  tls:\n    identities_password: x\n", ""),
        4,
        "http.tls.identities_password",
        "password of the .p12/.pfx files of `identities_dir`",
    );
}

#[test]
fn one_way_of_giving_identities() {
    let s = check(
        &plan(
            &format!("  tls:\n    client_cert: Cargo.toml\n    client_key: Cargo.toml\n    client_p12: {FIXTURES}/client.p12\n"),
            "",
        ),
        6,
        "http.tls.client_p12",
        "give the client identities one way",
    );
    assert!(
        s.contains("`client_cert` and `client_p12` are both given"),
        "{s}"
    );
    check(
        &plan(
            &format!("  tls:\n    identities_dir: {FIXTURES}/identities\n    identities: [{{ cert: Cargo.toml, key: Cargo.toml }}]\n"),
            "",
        ),
        5,
        "http.tls.identities",
        "are both given",
    );
    check(
        &plan(
            &format!("  tls:\n    client_p12: {FIXTURES}/client.p12\n    client_key: Cargo.toml\n"),
            "",
        ),
        5,
        "http.tls.client_key",
        "without `client_cert`",
    );
    // A scenario's identities replace the plan level's as a whole.
    let p = ok(&plan(
        "  tls:\n    client_cert: Cargo.toml\n    client_key: src/lib.rs\n",
        &format!("    http:\n      tls:\n        client_p12: {FIXTURES}/client.p12\n        client_p12_password: onrush-fixture\n"),
    ));
    assert!(matches!(
        p.scenarios[0].http.tls.identities.as_slice(),
        [ClientIdentity::Pkcs12 { .. }]
    ));
    assert!(matches!(
        p.scenarios[1].http.tls.identities.as_slice(),
        [ClientIdentity::Pem { .. }]
    ));
}

#[test]
fn ciphers() {
    // rustls, IANA and OpenSSL names, any case; order kept; duplicates dropped.
    let p = ok(&plan(
        "  tls:\n    ciphers: [tls13_chacha20_poly1305_sha256, TLS_AES_128_GCM_SHA256, ECDHE-ECDSA-AES256-GCM-SHA384, TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]\n",
        "",
    ));
    assert_eq!(
        p.http.tls.ciphers,
        [
            "TLS13_CHACHA20_POLY1305_SHA256",
            "TLS13_AES_128_GCM_SHA256",
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
        ]
    );
    let p = ok(&plan(
        "  tls:\n    ciphers: ECDHE-RSA-CHACHA20-POLY1305\n    versions: \"1.2\"\n",
        "",
    ));
    assert_eq!(
        p.http.tls.ciphers,
        ["TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"]
    );
    // Every suite of the table loads by each of its names.
    for (rustls, iana, openssl, _) in TLS_CIPHER_SUITES {
        for name in [rustls, iana, openssl] {
            let p = ok(&plan(&format!("  tls: {{ ciphers: [\"{name}\"] }}\n"), ""));
            assert_eq!(p.http.tls.ciphers, [rustls], "{name}");
        }
    }
}

#[test]
fn kx_groups() {
    // rustls and common names, any case; order kept; duplicates dropped.
    let p = ok(&plan(
        "  tls:\n    kx_groups: [P-256, x25519, prime256v1]\n",
        "",
    ));
    assert_eq!(p.http.tls.kx_groups, ["secp256r1", "X25519"]);
    let p = ok(&plan("  tls: { kx_groups: p-384 }\n", ""));
    assert_eq!(p.http.tls.kx_groups, ["secp384r1"]);
    for (rustls, others) in TLS_KX_GROUPS {
        for name in std::iter::once(&rustls).chain(others.iter()) {
            let p = ok(&plan(
                &format!("  tls: {{ kx_groups: [\"{name}\"] }}\n"),
                "",
            ));
            assert_eq!(p.http.tls.kx_groups, [rustls], "{name}");
        }
    }
    // Not given: empty, which offers them all.
    assert!(ok(&plan("  timeout: 5s\n", ""))
        .http
        .tls
        .kx_groups
        .is_empty());
}

#[test]
fn bad_kx_groups() {
    let s = check(
        &plan("  tls:\n    kx_groups: [X25591]\n", ""),
        4,
        "http.tls.kx_groups[0]",
        "did you mean `X25519`?",
    );
    assert!(s.contains("unknown key-exchange group \"X25591\""), "{s}");
    assert!(s.contains("secp384r1"), "lists the groups: {s}");
    check(
        &plan("  tls:\n    kx_groups: []\n", ""),
        4,
        "http.tls.kx_groups",
        "leave `kx_groups` out",
    );
}

#[test]
fn bad_ciphers() {
    let s = check(
        &plan("  tls:\n    ciphers: [TLS13_AES_128_GCM_SHA265]\n", ""),
        4,
        "http.tls.ciphers[0]",
        "did you mean `TLS13_AES_128_GCM_SHA256`?",
    );
    assert!(
        s.contains("unknown cipher suite \"TLS13_AES_128_GCM_SHA265\""),
        "{s}"
    );
    assert!(
        s.contains("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"),
        "lists the suites: {s}"
    );
    let s = check(
        &plan(
            "  tls:\n    ciphers: [TLS13_AES_128_GCM_SHA256, RC4-MD5]\n",
            "",
        ),
        4,
        "http.tls.ciphers[1]",
        "onrush offers TLS13_AES_256_GCM_SHA384",
    );
    assert!(s.contains("IANA and OpenSSL names work too"), "{s}");
    check(
        &plan("  tls:\n    ciphers: []\n", ""),
        4,
        "http.tls.ciphers",
        "leave `ciphers` out",
    );
    // No suite of the versions offered: no handshake could succeed.
    let s = check(
        &plan(
            "  tls:\n    versions: \"1.2\"\n    ciphers: [TLS13_AES_128_GCM_SHA256]\n",
            "",
        ),
        5,
        "http.tls.ciphers",
        "TLS 1.3 suites are named TLS13_",
    );
    assert!(
        s.contains("none of the cipher suites belongs to TLS 1.2"),
        "{s}"
    );
    // The same when the scenario's versions meet the plan's ciphers: at the versions.
    check(
        &plan(
            "  tls:\n    ciphers: [TLS13_AES_128_GCM_SHA256]\n",
            "    http:\n      tls: { versions: \"1.2\" }\n",
        ),
        9,
        "scenarios[0].http.tls.versions",
        "none of the cipher suites belongs to TLS 1.2",
    );
}
