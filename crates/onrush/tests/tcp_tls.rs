//! End to end: `tcp: tls://HOST:PORT` steps against a TLS server onrush did not write — the
//! line server (tests/servers/line_server.py) over Python's `ssl` module (OpenSSL) — with
//! certificates made here by rcgen: framing modes over TLS, mutual TLS (with and without the
//! client certificate), TLS sessions resumed per `http.tls.session` and counted on both sides
//! (the server asks OpenSSL whether each handshake resumed a session), TLS failures classified;
//! and the grammar's errors from `onrush validate`.

use crate::common;
use common::*;

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A CA, a server certificate for `localhost` and a client certificate (valid for
/// 127.0.0.1 too, which Thrift's TSSLServerSocket checks), as PEM files in `dir`.
pub(crate) struct Pki {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

pub(crate) fn pki(dir: &Path) -> Pki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "stream TLS test CA");
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    let client_key = rcgen::KeyPair::generate().unwrap();
    let mut client =
        rcgen::CertificateParams::new(vec!["client".to_string(), "127.0.0.1".to_string()]).unwrap();
    client
        .distinguished_name
        .push(rcgen::DnType::CommonName, "client");
    client.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let client = client.signed_by(&client_key, &ca, &ca_key).unwrap();
    let file = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    Pki {
        ca: file("ca.pem", ca.pem()),
        server_cert: file("server.pem", cert.pem()),
        server_key: file("server.key", key.serialize_pem()),
        client_cert: file("client.pem", client.pem()),
        client_key: file("client.key", client_key.serialize_pem()),
    }
}

/// The Python line server over TLS; `finish` closes its stdin and returns its counts.
struct TlsLineServer(PyServer);

impl TlsLineServer {
    /// Serves TLS with `pki`'s server certificate; with `mutual`, requires a client
    /// certificate signed by its CA.
    fn start(pki: &Pki, mutual: bool) -> Self {
        let mut env = vec![
            ("LINE_SERVER_CERT", pki.server_cert.as_path()),
            ("LINE_SERVER_KEY", pki.server_key.as_path()),
        ];
        if mutual {
            env.push(("LINE_SERVER_CLIENT_CA", pki.ca.as_path()));
        }
        Self::start_with(&env)
    }

    /// The line server with `env` (none: plain TCP).
    fn start_with(env: &[(&str, &Path)]) -> Self {
        let mut command = PyServer::command("line_server.py");
        command.envs(env.iter().copied());
        TlsLineServer(PyServer::spawn(command, "line server"))
    }

    fn finish(self) -> Value {
        self.0.finish()
    }
}

impl std::ops::Deref for TlsLineServer {
    type Target = PyServer;
    fn deref(&self) -> &PyServer {
        &self.0
    }
}

fn handshakes(step: &Value) -> (u64, u64) {
    (
        u64_at(step, "/handshakes/full"),
        u64_at(step, "/handshakes/resumed"),
    )
}

#[test]
fn tcp_over_tls_frames_replies_and_counts_like_the_python_ssl_server() {
    let dir = temp_dir("tcp-tls");
    let pki = pki(&dir);
    let server = TlsLineServer::start(&pki, false);
    let plan = format!(
        r#"
target: http://127.0.0.1:9
scenarios:
  - name: framing
    http: {{ tls: {{ ca_file: "{ca}" }} }}
    load: {{ vus: 2, iterations: 5 }}
    steps:
      - name: ping
        tcp: tls://localhost:{port}
        send: "PING ${{vu}}-${{iteration}}\n"
        until: "\n"
        check: {{ body_contains: "PONG ${{vu}}-${{iteration}}" }}
      - name: prefixed
        tcp: tls://localhost:{port}
        send: "LP tls\n"
        length_prefix: 4
        check: {{ body_contains: "PONG tls" }}
      - name: to-close
        tcp: tls://localhost:{port}
        send: "CLOSE ${{vu}}\n"
        until_close: true
        check: {{ body_contains: "BYE " }}
  - name: untrusted
    load: {{ vus: 1, iterations: 2 }}
    steps:
      - {{ name: ping, tcp: "tls://localhost:{port}", send: "PING\n", until: "\n" }}
"#,
        ca = pki.ca.display(),
        port = server.port
    );
    let path = write_plan(&dir, &plan);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    for name in ["ping", "prefixed", "to-close"] {
        let st = step(&s, "framing", name);
        assert_eq!(u64_at(st, "/requests"), 10, "{name}: {st:#}");
        assert_eq!(u64_at(st, "/failures"), 0, "{name}: {st:#}");
    }
    assert_eq!(u64_at(scenario(&s, "framing"), "/checks/fails"), 0, "{s:#}");
    // `until_close` ends each iteration's connection: the next iteration's `ping` opens one,
    // full for each VU's first, resumed (`session: resume`, the default) after it.
    let ping = step(&s, "framing", "ping");
    assert_eq!(handshakes(ping), (2, 8), "{ping:#}");
    assert_eq!(
        u64_at(scenario(&s, "framing"), "/connections_opened"),
        10,
        "{s:#}"
    );
    let untrusted = step(&s, "untrusted", "ping");
    assert_eq!(
        u64_at(untrusted, "/failures_by_class/tls_certificate_unknown"),
        2,
        "no ca_file: the test CA is not trusted: {untrusted:#}"
    );
    let counts = server.finish();
    assert_eq!(u64_at(&counts, "/lines"), 30, "{counts}");
    assert_eq!(u64_at(&counts, "/full"), 2, "{counts}");
    assert_eq!(u64_at(&counts, "/resumed"), 8, "{counts}");
    assert_eq!(u64_at(&counts, "/failed"), 2, "{counts}");
}

#[test]
fn tls_sessions_per_request_are_resumed_or_full_as_the_plan_says() {
    let dir = temp_dir("tcp-tls-sessions");
    let pki = pki(&dir);
    let server = TlsLineServer::start(&pki, false);
    let steps = format!(
        "      - {{ name: a, tcp: \"tls://localhost:{port}\", send: \"PING a\\n\", until: \"\\n\" }}\n      - {{ name: b, tcp: \"tls://localhost:{port}\", send: \"PING b\\n\", until: \"\\n\" }}\n",
        port = server.port
    );
    let plan = format!(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: resume\n    http: {{ connections: per_request, tls: {{ ca_file: \"{ca}\", session: resume }} }}\n    load: {{ vus: 2, iterations: 5 }}\n    steps:\n{steps}  - name: full\n    http: {{ connections: per_request, tls: {{ ca_file: \"{ca}\", session: full, versions: \"1.3\", kx_groups: [secp256r1] }} }}\n    load: {{ vus: 1, iterations: 3 }}\n    steps:\n{steps}",
        ca = pki.ca.display()
    );
    let path = write_plan(&dir, &plan);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    let (a, b) = (step(&s, "resume", "a"), step(&s, "resume", "b"));
    assert_eq!(u64_at(a, "/requests") + u64_at(b, "/requests"), 20, "{s:#}");
    assert_eq!(u64_at(a, "/failures") + u64_at(b, "/failures"), 0, "{s:#}");
    // A new connection per request: each VU's first handshake is full, every later one resumes.
    assert_eq!(handshakes(a), (2, 8), "{a:#}");
    assert_eq!(handshakes(b), (0, 10), "{b:#}");
    assert_eq!(
        u64_at(scenario(&s, "resume"), "/connections_opened"),
        20,
        "{s:#}"
    );
    let (fa, fb) = (step(&s, "full", "a"), step(&s, "full", "b"));
    assert_eq!(handshakes(fa), (3, 0), "{fa:#}");
    assert_eq!(handshakes(fb), (3, 0), "{fb:#}");
    assert_eq!(
        u64_at(fa, "/failures") + u64_at(fb, "/failures"),
        0,
        "{s:#}"
    );
    // The TCP connect is timed apart from the handshake, for every connection.
    assert_eq!(u64_at(a, "/connect_ms/count"), 10, "{a:#}");
    assert_eq!(u64_at(a, "/handshakes/time_ms/count"), 10, "{a:#}");
    let counts = server.finish();
    assert_eq!(u64_at(&counts, "/lines"), 26, "{counts}");
    assert_eq!(u64_at(&counts, "/full"), 2 + 6, "{counts}");
    assert_eq!(u64_at(&counts, "/resumed"), 18, "{counts}");
    assert_eq!(u64_at(&counts, "/failed"), 0, "{counts}");
}

#[test]
fn mutual_tls_over_tcp_needs_the_client_certificate() {
    let dir = temp_dir("tcp-mtls");
    let pki = pki(&dir);
    let server = TlsLineServer::start(&pki, true);
    let steps = format!(
        "      - {{ name: ping, tcp: \"tls://localhost:{port}\", send: \"PING ${{vu}}\\n\", until: \"\\n\", check: {{ body_contains: PONG }} }}\n",
        port = server.port
    );
    let plan = format!(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: mtls\n    http: {{ tls: {{ ca_file: \"{ca}\", client_cert: \"{cc}\", client_key: \"{ck}\" }} }}\n    load: {{ vus: 2, iterations: 3 }}\n    steps:\n{steps}  - name: nocert\n    http: {{ tls: {{ ca_file: \"{ca}\" }} }}\n    load: {{ vus: 1, iterations: 2 }}\n    steps:\n{steps}  - name: nocert12\n    http: {{ tls: {{ ca_file: \"{ca}\", versions: \"1.2\" }} }}\n    load: {{ vus: 1, iterations: 2 }}\n    steps:\n{steps}",
        ca = pki.ca.display(),
        cc = pki.client_cert.display(),
        ck = pki.client_key.display(),
    );
    let path = write_plan(&dir, &plan);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    let ok = step(&s, "mtls", "ping");
    assert_eq!(u64_at(ok, "/requests"), 6, "{ok:#}");
    assert_eq!(u64_at(ok, "/failures"), 0, "{ok:#}");
    assert_eq!(handshakes(ok), (2, 0), "one connection per VU: {ok:#}");
    // TLS 1.3: the server refuses the missing certificate after the client's side of the
    // handshake is done; the alert arrives with the reply, and is classified as such.
    let nocert = step(&s, "nocert", "ping");
    assert_eq!(
        u64_at(nocert, "/failures_by_class/tls_client_certificate_required"),
        2,
        "{nocert:#}"
    );
    // TLS 1.2: the handshake itself fails (OpenSSL says handshake_failure).
    let nocert12 = step(&s, "nocert12", "ping");
    assert_eq!(u64_at(nocert12, "/failures"), 2, "{nocert12:#}");
    assert_eq!(
        u64_at(nocert12, "/failures_by_class/tls_protocol"),
        2,
        "{nocert12:#}"
    );
    let counts = server.finish();
    assert_eq!(u64_at(&counts, "/lines"), 6, "{counts}");
    assert_eq!(u64_at(&counts, "/full"), 2, "{counts}");
    assert_eq!(u64_at(&counts, "/failed"), 4, "{counts}");
}

#[test]
fn tls_to_a_port_that_does_not_answer_it_is_a_handshake_timeout() {
    // The plain line server reads the ClientHello as (unknown) lines and answers nothing: the
    // TCP connect succeeds, the handshake never ends.
    let server = TlsLineServer::start_with(&[]);
    let dir = temp_dir("tcp-tls-plain-port");
    let plan = format!(
        "target: http://127.0.0.1:9\nhttp: {{ tls: {{ insecure: true }} }}\nscenarios:\n  - name: s\n    load: {{ vus: 2, iterations: 2 }}\n    steps:\n      - {{ name: hello, tcp: \"tls://127.0.0.1:{port}\", send: \"PING\\n\", until: \"\\n\", timeout: 300ms }}\n      - {{ name: plain, tcp: \"127.0.0.1:{port}\", send: \"PING plain\\n\", until: \"\\n\" }}\n",
        port = server.port
    );
    let path = write_plan(&dir, &plan);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    let hello = step(&s, "s", "hello");
    assert_eq!(
        u64_at(hello, "/failures_by_class/tls_handshake_timeout"),
        4,
        "{hello:#}"
    );
    // The same host:port in plain TCP is a target of its own, unaffected.
    let plain = step(&s, "s", "plain");
    assert_eq!(u64_at(plain, "/failures"), 0, "{plain:#}");
    assert_eq!(u64_at(plain, "/requests"), 4, "{plain:#}");
    // (The server's line count is left alone: how many newlines a ClientHello holds is chance.)
    drop(server);
}

#[test]
fn a_bad_stream_target_is_a_plan_error_with_its_line_and_the_fix() {
    let dir = temp_dir("tcp-tls-bad");
    let validate = |steps: &str| {
        let path = write_plan(
            &dir,
            &format!(
                "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n{steps}"
            ),
        );
        let output = onrush()
            .args(["validate", path.to_str().unwrap()])
            .output()
            .unwrap();
        (output.status.code(), text(&output))
    };
    let (code, shown) = validate("      - { tcp: \"tcps://localhost:7443\", send: x }\n");
    assert_eq!(code, Some(2), "{shown}");
    assert!(shown.contains(":6:"), "{shown}");
    assert!(shown.contains("unknown scheme `tcps://`"), "{shown}");
    assert!(shown.contains("tls://HOST:PORT"), "{shown}");
    let (code, shown) = validate("      - { tcp: \"tls://builtin\", send: x }\n");
    assert_eq!(code, Some(2), "{shown}");
    assert!(shown.contains("plain text only"), "{shown}");
    let (code, shown) = validate("      - { udp: \"tls://localhost:53\", send: x }\n");
    assert_eq!(code, Some(2), "{shown}");
    assert!(shown.contains("DTLS is not supported"), "{shown}");
    let (code, shown) = validate(
        "      - { tcp: \"tls://localhost:7443\", send: x }\n      - { tcp: \"tcp://localhost:7000\", send: x }\n",
    );
    assert_eq!(code, Some(0), "{shown}");
    // The schema knows the forms too.
    let schema = onrush().arg("schema").output().unwrap();
    let schema = String::from_utf8_lossy(&schema.stdout);
    assert!(schema.contains("tls://localhost:7443"), "{schema}");
    assert!(schema.contains("tls://localhost:9443"), "{schema}");
}

#[test]
fn an_open_models_warm_up_opens_the_vus_tls_streams_before_the_load() {
    // `load.warm_up: 10` with `max_vus: 10`: the ten VUs connect (TCP and TLS) before the
    // schedule starts, so no step opens a connection or shakes hands, and the server saw the
    // ten handshakes. Without it, the steps open what they use. No timing asserted.
    let dir = temp_dir("tcp-tls-warm-up");
    let pki = pki(&dir);
    let run = |warm_up: &str| {
        let server = TlsLineServer::start(&pki, false);
        let plan = format!(
            "target: http://127.0.0.1:9\nscenarios:\n  - name: open\n    http: {{ tls: {{ ca_file: \"{ca}\" }} }}\n    load: {{ rate: 100/s, duration: 1s, max_vus: 10, warm_up: {warm_up} }}\n    steps:\n      - {{ name: ping, tcp: \"tls://localhost:{port}\", send: \"PING ${{iteration}}\\n\", until: \"\\n\" }}\n",
            ca = pki.ca.display(),
            port = server.port,
        );
        let run_dir = temp_dir(&format!("tcp-tls-warm-up-{warm_up}"));
        let path = write_plan(&run_dir, &plan);
        let s = run_expect(0, &["run", path.to_str().unwrap()], &run_dir.join("out"));
        (s, server.finish())
    };

    let (s, counts) = run("10");
    let t = |p: &str| u64_at(&s, &format!("/totals/{p}"));
    assert_eq!(t("iterations") + t("dropped_iterations"), 100, "{s:#}");
    assert_eq!(t("failures"), 0, "{s:#}");
    let ping = step(&s, "open", "ping");
    assert_eq!(handshakes(ping), (0, 0), "no step shook hands: {ping:#}");
    assert_eq!(u64_at(ping, "/connect_ms/count"), 0, "{ping:#}");
    assert_eq!(u64_at(scenario(&s, "open"), "/connections_opened"), 10);
    assert_eq!(
        u64_at(&counts, "/full") + u64_at(&counts, "/resumed"),
        10,
        "{counts}"
    );
    assert_eq!(u64_at(&counts, "/lines"), t("iterations"), "{counts}");

    let (s, counts) = run("false");
    let ping = step(&s, "open", "ping");
    let opened = u64_at(scenario(&s, "open"), "/connections_opened");
    assert!(opened >= 1, "{s:#}");
    assert_eq!(u64_at(ping, "/connect_ms/count"), opened, "{ping:#}");
    let (full, resumed) = handshakes(ping);
    assert_eq!(full + resumed, opened, "{ping:#}");
    assert_eq!(
        u64_at(&counts, "/full") + u64_at(&counts, "/resumed"),
        opened,
        "{counts}"
    );
}
