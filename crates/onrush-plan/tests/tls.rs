//! `http.tls`: session reuse, certificates, versions, server name; plan level merged per scenario.
mod common;

use std::path::Path;

use common::{err, ok};
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
    assert_eq!(d.client_cert, None);
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
        t.client_cert,
        Some((dir().join("Cargo.toml"), dir().join("src/lib.rs")))
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
