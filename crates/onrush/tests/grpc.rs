//! End to end: `grpc:` steps against a gRPC server onrush did not write (Python's grpcio,
//! tests/servers/grpc_server.py, its stubs generated at test time from
//! tests/servers/grpc/echo.proto), counts checked on its side: the four kinds of call,
//! metadata, a status error, a deadline, gzip, a shared connection, TLS and mutual TLS; and
//! plan errors (a .proto that does not compile, an unknown method or field, a value that does
//! not fit) from `onrush validate`, with their file, line and column.

use crate::common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

pub(crate) fn proto() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/grpc/echo.proto")
}

/// Whether Python's grpcio is here; under CI it must be (tests/install-grpcio.sh).
pub(crate) fn have_grpcio() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import grpc, grpc_tools"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "python3 grpcio is missing: run crates/onrush-proto-grpc/tests/install-grpcio.sh"
        );
        eprintln!(
            "\n!!! SKIPPED: python3 grpcio is missing; run \
             crates/onrush-proto-grpc/tests/install-grpcio.sh !!!\n"
        );
    }
    ok
}

/// The Python gRPC server; `finish` stops it (closes its stdin) and returns its counts.
pub(crate) struct GrpcServer(PyServer);

impl GrpcServer {
    pub(crate) fn start(env: &[(&str, &Path)]) -> Self {
        let mut command = PyServer::command("grpc_server.py");
        command.envs(env.iter().copied());
        GrpcServer(PyServer::spawn(command, "gRPC server"))
    }

    pub(crate) fn finish(self) -> Value {
        self.0.finish()
    }
}

impl std::ops::Deref for GrpcServer {
    type Target = PyServer;
    fn deref(&self) -> &PyServer {
        &self.0
    }
}

pub(crate) fn count(counts: &Value, key: &str) -> u64 {
    counts.get(key).and_then(Value::as_u64).unwrap_or(0)
}

#[test]
fn grpc_calls_of_every_kind_agree_with_the_servers_counts() {
    if !have_grpcio() {
        return;
    }
    let server = GrpcServer::start(&[]);
    let long = "a".repeat(20_000);
    let plan = format!(
        r#"
target: http://127.0.0.1:9
grpc: {{ protos: ["{proto}"] }}
vars: {{ long: "{long}" }}
scenarios:
  - name: calls
    load: {{ vus: 3, iterations: 4 }}
    steps:
      - grpc: 127.0.0.1:{port}
        name: unary
        call: onrush.test.Echo/Unary
        message: {{ text: "user-${{vu}}", n: 41, tags: [a, b], attrs: {{ k: v }}, mood: LOUD,
                   inner: {{ flag: true, ids: [1, 2] }}, raw: aGk= }}
        metadata: {{ authorization: "Bearer secret", x-user: "u${{vu}}" }}
        timeout: 2s
        extract: {{ greeting: {{ jsonpath: "$.text" }} }}
        check: [ {{ jsonpath: "$.text", equals: "echo user-${{vu}}" }},
                 {{ jsonpath: "$.user", equals: "u${{vu}}" }},
                 {{ jsonpath: "$.n", equals: "42" }},
                 {{ header: grpc-status, equals: "0" }} ]
      - grpc: grpc://127.0.0.1:{port}
        name: server-stream
        call: onrush.test.Echo.ServerStream
        message: {{ text: "${{greeting}}", count: 5 }}
        check: [ {{ header: onrush-grpc-messages, equals: "5" }},
                 {{ jsonpath: "$[4].text", equals: "echo user-${{vu}} 4" }} ]
      - grpc: 127.0.0.1:{port}
        name: client-stream
        call: onrush.test.Echo/ClientStream
        messages: [ {{ n: 1 }}, {{ n: 2 }}, {{ n: "${{vu}}" }} ]
        check: [ {{ jsonpath: "$.count", equals: "3" }} ]
      - grpc: 127.0.0.1:{port}
        name: bidi
        call: onrush.test.Echo/Bidi
        messages: [ {{ text: a }}, {{ text: b }} ]
        check: [ {{ header: onrush-grpc-messages, equals: "2" }}, {{ jsonpath: "$[1].text", equals: "echo b" }} ]
      - grpc: 127.0.0.1:{port}
        name: not-found
        call: onrush.test.Echo/Fail
        message: {{ code: 5, message: "no such user" }}
      - grpc: 127.0.0.1:{port}
        name: slow
        call: onrush.test.Echo/Slow
        message: {{ millis: 800 }}
        timeout: 150ms
      - grpc: 127.0.0.1:{port}
        name: gzip
        call: onrush.test.Echo/Unary
        message: {{ text: "${{long}}" }}
        compression: gzip
  - name: shared
    http: {{ connections: shared }}
    load: {{ vus: 4, iterations: 8 }}
    steps:
      - {{ grpc: "127.0.0.1:{port}", call: onrush.test.Echo/Unary, message: {{ text: s }} }}
"#,
        proto = proto().display(),
        port = server.port
    );
    let dir = temp_dir("grpc-calls");
    let path = write_plan(&dir, &plan);
    let s = run_expect(
        0,
        &["run", path.to_str().unwrap(), "-t", "2"],
        &dir.join("out"),
    );
    for name in ["unary", "server-stream", "client-stream", "bidi", "gzip"] {
        let st = step(&s, "calls", name);
        assert_eq!(u64_at(st, "/requests"), 12, "{name}: {st:#}");
        assert_eq!(u64_at(st, "/failures"), 0, "{name}: {st:#}");
        assert!(u64_at(st, "/bytes_out") > 0, "{name}: {st:#}");
        assert!(u64_at(st, "/bytes_in") > 0, "{name}: {st:#}");
    }
    let nf = step(&s, "calls", "not-found");
    assert_eq!(u64_at(nf, "/failures_by_class/not_found"), 12, "{nf:#}");
    let slow = step(&s, "calls", "slow");
    assert_eq!(
        u64_at(slow, "/failures_by_class/deadline_exceeded"),
        12,
        "{slow:#}"
    );
    // 20,000 equal bytes went out gzip-compressed, 12 times.
    let gzip = step(&s, "calls", "gzip");
    assert!(u64_at(gzip, "/bytes_out") < 12 * 2_000, "{gzip:#}");
    assert_eq!(u64_at(&s, "/totals/checks/fails"), 0, "{s:#}");
    // One HTTP/2 connection per VU, every call a stream on it; the shared scenario's 4 VUs
    // share their worker's connection.
    let opened = u64_at(scenario(&s, "calls"), "/connections_opened");
    assert_eq!(opened, 3, "{s:#}");
    let shared = scenario(&s, "shared");
    // At most one per worker thread (VUs that start together wait for the one being opened).
    assert!(
        u64_at(shared, "/connections_opened") <= 2,
        "shared: {shared:#}"
    );
    assert_eq!(
        u64_at(
            step(&s, "shared", "grpc onrush.test.Echo/Unary"),
            "/failures"
        ),
        0
    );

    let counts = server.finish();
    // unary and gzip: 24 calls, +32 from `shared`.
    assert_eq!(count(&counts, "Unary"), 24 + 32, "{counts}");
    for method in ["ServerStream", "ClientStream", "Bidi", "Fail"] {
        assert_eq!(count(&counts, method), 12, "{method}: {counts}");
    }
    assert_eq!(count(&counts, "Slow"), 12, "{counts}");
    // Per iteration: unary 1, stream 1, client stream 3, bidi 2, fail 1, slow 1, gzip 1.
    assert_eq!(count(&counts, "messages_in"), 12 * 10 + 32, "{counts}");
    assert_eq!(count(&counts, "messages_out"), 12 * (5 + 2), "{counts}");
    assert_eq!(count(&counts, "authorized"), 12, "{counts}");
    // Every call carried a deadline (grpc-timeout: the step's, or http.timeout).
    assert_eq!(count(&counts, "with_deadline"), 12 * 7 + 32, "{counts}");
    assert_eq!(count(&counts, "inner_flag"), 12, "{counts}");
    assert_eq!(count(&counts, "tags"), 24, "{counts}");
    assert_eq!(count(&counts, "attrs"), 12, "{counts}");
    assert_eq!(count(&counts, "loud"), 12, "{counts}");
    assert_eq!(count(&counts, "raw_bytes"), 24, "{counts}");
    assert!(count(&counts, "text_bytes") >= 12 * 20_000, "{counts}");
}

#[test]
fn an_open_model_connects_its_warm_up_vus_grpc_connections_before_the_first_call() {
    // 100 arrivals in 1 s; `warm_up: 10` opens 10 VUs' HTTP/2 connections (TCP and preface)
    // before the schedule starts, so no call pays a connect (a step's `connect_ms.count` is
    // the calls that opened one), while the scenario counts the 10 connections. Without the
    // warm-up the first calls connect. No timing asserted.
    if !have_grpcio() {
        return;
    }
    let plan = |server: &GrpcServer, warm_up: &str| {
        format!(
            r#"
target: http://127.0.0.1:9
grpc: {{ protos: ["{proto}"] }}
scenarios:
  - name: open
    load: {{ rate: 100/s, duration: 1s, max_vus: 20, warm_up: {warm_up} }}
    steps:
      - {{ grpc: "127.0.0.1:{port}", call: onrush.test.Echo/Unary, message: {{ text: w }} }}
"#,
            proto = proto().display(),
            port = server.port
        )
    };
    let run = |warm_up: &str| {
        let server = GrpcServer::start(&[]);
        let dir = temp_dir(&format!("grpc-warm-up-{warm_up}"));
        let path = write_plan(&dir, &plan(&server, warm_up));
        let s = run_expect(
            0,
            &["run", path.to_str().unwrap(), "-t", "1"],
            &dir.join("out"),
        );
        (s, server.finish())
    };

    let (s, counts) = run("10");
    let open = scenario(&s, "open");
    let call = step(&s, "open", "grpc onrush.test.Echo/Unary");
    let iterations = u64_at(open, "/iterations");
    assert_eq!(
        iterations + u64_at(open, "/dropped_iterations"),
        100,
        "{s:#}"
    );
    assert_eq!(u64_at(call, "/failures"), 0, "{call:#}");
    assert_eq!(u64_at(open, "/connections_opened"), 10, "{open:#}");
    assert_eq!(
        u64_at(call, "/connect_ms/count"),
        0,
        "no call connected: {call:#}"
    );
    assert_eq!(count(&counts, "Unary"), iterations, "{counts}");

    let (s, counts) = run("false");
    let open = scenario(&s, "open");
    let call = step(&s, "open", "grpc onrush.test.Echo/Unary");
    assert!(u64_at(call, "/connect_ms/count") >= 1, "{call:#}");
    assert_eq!(
        u64_at(call, "/connect_ms/count"),
        u64_at(open, "/connections_opened"),
        "{s:#}"
    );
    assert_eq!(
        count(&counts, "Unary"),
        u64_at(open, "/iterations"),
        "{counts}"
    );
}

/// A CA, a server certificate for `localhost` and a client certificate, as PEM files.
pub(crate) fn pki(dir: &Path) -> (PathBuf, PathBuf, PathBuf, PathBuf, PathBuf) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "grpc test CA");
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
    let mut client = rcgen::CertificateParams::new(vec!["client".to_string()]).unwrap();
    client.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let client = client.signed_by(&client_key, &ca, &ca_key).unwrap();
    let file = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    (
        file("ca.pem", ca.pem()),
        file("server.pem", cert.pem()),
        file("server.key", key.serialize_pem()),
        file("client.pem", client.pem()),
        file("client.key", client_key.serialize_pem()),
    )
}

#[test]
fn grpcs_uses_the_plans_tls_settings_with_a_client_certificate() {
    if !have_grpcio() {
        return;
    }
    let dir = temp_dir("grpcs");
    let (ca, cert, key, client_cert, client_key) = pki(&dir);
    let server = GrpcServer::start(&[
        ("GRPC_SERVER_CERT", &cert),
        ("GRPC_SERVER_KEY", &key),
        ("GRPC_CLIENT_CA", &ca),
    ]);
    let call = format!(
        "      - {{ grpc: \"grpcs://localhost:{port}\", name: hello, call: onrush.test.Echo/Unary, message: {{ text: tls }}, check: {{ jsonpath: \"$.text\", equals: \"echo tls\" }} }}\n",
        port = server.port
    );
    let plan = format!(
        "target: http://127.0.0.1:9\ngrpc: {{ protos: [\"{proto}\"] }}\nscenarios:\n  - name: mtls\n    http: {{ tls: {{ ca_file: \"{ca}\", client_cert: \"{cc}\", client_key: \"{ck}\" }} }}\n    load: {{ vus: 2, iterations: 6 }}\n    steps:\n{call}  - name: untrusted\n    load: {{ vus: 1, iterations: 2 }}\n    steps:\n{call}",
        proto = proto().display(),
        ca = ca.display(),
        cc = client_cert.display(),
        ck = client_key.display(),
    );
    let path = write_plan(&dir, &plan);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    let hello = step(&s, "mtls", "hello");
    assert_eq!(u64_at(hello, "/requests"), 12, "{hello:#}");
    assert_eq!(u64_at(hello, "/failures"), 0, "{hello:#}");
    assert_eq!(
        u64_at(hello, "/handshakes/full") + u64_at(hello, "/handshakes/resumed"),
        2,
        "one TLS connection per VU: {hello:#}"
    );
    let untrusted = step(&s, "untrusted", "hello");
    assert_eq!(
        u64_at(untrusted, "/failures_by_class/tls_certificate_unknown"),
        2,
        "{untrusted:#}"
    );
    let counts = server.finish();
    assert_eq!(count(&counts, "Unary"), 12, "{counts}");
}

/// `onrush validate` on a plan with `steps`, and the proto file `proto_text` (if any) beside
/// it: its exit code and output.
fn validate(name: &str, proto_text: Option<&str>, steps: &str) -> (i32, String) {
    let dir = temp_dir(name);
    let proto_path = match proto_text {
        Some(text) => {
            std::fs::write(dir.join("bad.proto"), text).unwrap();
            "bad.proto".to_string()
        }
        None => proto().display().to_string(),
    };
    let plan = format!(
        "target: http://127.0.0.1:9\ngrpc: {{ protos: [\"{proto_path}\"] }}\nscenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n{steps}"
    );
    let path = write_plan(&dir, &plan);
    let output = onrush()
        .args(["validate", path.to_str().unwrap()])
        .output()
        .unwrap();
    (output.status.code().unwrap_or(-1), text(&output))
}

#[test]
fn grpc_plan_errors_name_the_file_line_column_and_the_fix() {
    // A .proto that does not compile: its own file, line and column.
    let (code, out) = validate(
        "grpc-bad-proto",
        Some("syntax = \"proto3\";\nmessage A {\n  strin name = 1;\n}\n"),
        "      - { grpc: 127.0.0.1:1, call: A/B }\n",
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("bad.proto:3:"), "{out}");
    assert!(out.contains("strin"), "the snippet shows the line: {out}");

    // An unknown method: the plan's line, did you mean, the valid names.
    let (code, out) = validate(
        "grpc-bad-method",
        None,
        "      - grpc: 127.0.0.1:1\n        call: onrush.test.Echo/Unray\n",
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains(":8:15"), "{out}");
    assert!(
        out.contains("did you mean `onrush.test.Echo/Unary`"),
        "{out}"
    );
    assert!(out.contains("ServerStream"), "{out}");

    let (code, out) = validate(
        "grpc-bad-service",
        None,
        "      - { grpc: 127.0.0.1:1, call: onrush.test.Eho/Unary }\n",
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("did you mean `onrush.test.Echo`"), "{out}");

    // An unknown field, nested: its path and the valid names.
    let (code, out) = validate(
        "grpc-bad-field",
        None,
        "      - grpc: 127.0.0.1:1\n        call: onrush.test.Echo/Unary\n        message: { inner: { flags: true } }\n",
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("message.inner.flags"), "{out}");
    assert!(out.contains("did you mean `flag`"), "{out}");

    // A value that does not fit its type.
    let (code, out) = validate(
        "grpc-bad-value",
        None,
        "      - grpc: 127.0.0.1:1\n        call: onrush.test.Echo/Unary\n        message: { n: many, mood: SAD }\n",
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("message.n"), "{out}");
    assert!(out.contains("int32"), "{out}");

    // `messages:` on a method that takes one message.
    let (code, out) = validate(
        "grpc-bad-messages",
        None,
        "      - grpc: 127.0.0.1:1\n        call: onrush.test.Echo/Unary\n        messages: [ {} ]\n",
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("takes one request message"), "{out}");

    // A good plan validates.
    let (code, out) = validate(
        "grpc-good",
        None,
        "      - grpc: 127.0.0.1:1\n        call: onrush.test.Echo/Bidi\n        messages: [ { text: \"${vu}\" } ]\n",
    );
    assert_eq!(code, 0, "{out}");
}
