//! End to end, against Python's grpcio (tests/servers/grpc_server.py): a plan that takes its
//! gRPC descriptors from the server's reflection (grpcio-reflection, which serves v1alpha:
//! onrush falls back to it from v1), with no `.proto` file, runs its calls and the server
//! counts them; the errors of such a plan (an unknown method, a server without reflection, no
//! server) from `validate` and `run`, before any load; and `connections: shared` with
//! `max_streams`: 50 VUs on 5 connections of 10 calls, seen from the server.

use crate::common;
use crate::grpc::{count, have_grpcio, proto, GrpcServer};
use common::*;

use std::path::Path;
use std::process::Command;

/// Whether grpcio-reflection is here too; under CI it must be (install-grpcio.sh).
fn have_reflection() -> bool {
    if !have_grpcio() {
        return false;
    }
    let ok = Command::new("python3")
        .args(["-c", "import grpc_reflection"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "python3 grpcio-reflection is missing: run crates/onrush-proto-grpc/tests/install-grpcio.sh"
        );
        eprintln!(
            "\n!!! SKIPPED: python3 grpcio-reflection is missing; run \
             crates/onrush-proto-grpc/tests/install-grpcio.sh !!!\n"
        );
    }
    ok
}

/// A plan whose descriptors come from `reflection`, with `steps`.
fn plan(reflection: &str, load: &str, steps: &str) -> String {
    format!(
        "target: http://127.0.0.1:9\ngrpc: {{ reflection: \"{reflection}\" }}\nscenarios:\n  - name: s\n    load: {load}\n    steps:\n{steps}"
    )
}

/// `onrush ARGS` on the plan `text`: its exit code and output.
fn onrush_on(name: &str, command: &str, plan_text: &str) -> (i32, String) {
    let dir = temp_dir(name);
    let path = write_plan(&dir, plan_text);
    let output = onrush()
        .args([command, path.to_str().unwrap()])
        .args(if command == "run" {
            vec![
                "--quiet".to_string(),
                "--out".to_string(),
                dir.join("out").display().to_string(),
            ]
        } else {
            Vec::new()
        })
        .output()
        .unwrap();
    (output.status.code().unwrap_or(-1), text(&output))
}

#[test]
fn a_plan_without_protos_calls_the_methods_the_server_reflects() {
    if !have_reflection() {
        return;
    }
    // `first_only`: each file without its imports (timestamp.proto is asked for by name).
    let server = GrpcServer::start(&[("GRPC_REFLECTION", Path::new("first_only"))]);
    let steps = "      - grpc: 127.0.0.1:{port}\n        name: unary\n        call: onrush.test.Echo/Unary\n        message: { text: \"r${vu}\", at: { seconds: 5 } }\n        check: [ { jsonpath: \"$.text\", equals: \"echo r${vu}\" } ]\n";
    let text = plan(
        &format!("127.0.0.1:{}", server.port),
        "{ vus: 2, iterations: 5 }",
        &steps.replace("{port}", &server.port.to_string()),
    );
    let (code, out) = onrush_on("grpc-refl-validate", "validate", &text);
    assert_eq!(code, 0, "{out}");
    let dir = temp_dir("grpc-refl-run");
    let path = write_plan(&dir, &text);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    let unary = step(&s, "s", "unary");
    assert_eq!(u64_at(unary, "/requests"), 10, "{unary:#}");
    assert_eq!(u64_at(unary, "/failures"), 0, "{unary:#}");
    assert_eq!(u64_at(&s, "/totals/checks/fails"), 0, "{s:#}");
    let counts = server.finish();
    assert_eq!(count(&counts, "Unary"), 10, "{counts}");
    // The server held timestamp.proto back: onrush asked for it by name (file_by_filename).
    assert!(
        count(&counts, "reflection_imports_held_back") > 0,
        "{counts}"
    );

    // grpcio-reflection as it comes (each file with its imports) validates too.
    let server = GrpcServer::start(&[("GRPC_REFLECTION", Path::new("on"))]);
    let text = plan(
        &format!("grpc://127.0.0.1:{}", server.port),
        "{ vus: 1, iterations: 1 }",
        "      - { grpc: 127.0.0.1:1, call: onrush.test.Echo/ServerStream, message: { count: 2 } }\n",
    );
    let (code, out) = onrush_on("grpc-refl-validate-on", "validate", &text);
    assert_eq!(code, 0, "{out}");
    drop(server);
}

#[test]
fn reflection_errors_name_the_plans_line_and_the_server() {
    if !have_reflection() {
        return;
    }
    // An unknown method: "did you mean", from the reflected service.
    let server = GrpcServer::start(&[("GRPC_REFLECTION", Path::new("on"))]);
    let text = plan(
        &format!("127.0.0.1:{}", server.port),
        "{ vus: 1, iterations: 1 }",
        "      - grpc: 127.0.0.1:1\n        call: onrush.test.Echo/Unray\n",
    );
    let (code, out) = onrush_on("grpc-refl-bad-method", "validate", &text);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains(":8:15"), "{out}");
    assert!(
        out.contains("did you mean `onrush.test.Echo/Unary`"),
        "{out}"
    );
    let text = plan(
        &format!("127.0.0.1:{}", server.port),
        "{ vus: 1, iterations: 1 }",
        "      - { grpc: 127.0.0.1:1, call: onrush.test.Eho/Unary }\n",
    );
    let (code, out) = onrush_on("grpc-refl-bad-service", "validate", &text);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("did you mean `onrush.test.Echo`"), "{out}");
    assert!(out.contains("gave by reflection"), "{out}");
    drop(server);

    // A gRPC server without reflection: `validate` and `run` both refuse the plan, before
    // any call, at the plan's `reflection:` line, naming the server.
    let server = GrpcServer::start(&[]);
    let text = plan(
        &format!("127.0.0.1:{}", server.port),
        "{ vus: 1, iterations: 3 }",
        "      - { grpc: 127.0.0.1:1, call: onrush.test.Echo/Unary }\n",
    );
    for command in ["validate", "run"] {
        let (code, out) = onrush_on("grpc-refl-none", command, &text);
        assert_eq!(code, 2, "{command}: {out}");
        assert!(out.contains(":2:"), "{command}: {out}");
        assert!(
            out.contains("does not serve reflection"),
            "{command}: {out}"
        );
        assert!(
            out.contains(&format!("grpc://127.0.0.1:{}", server.port)),
            "{command}: {out}"
        );
    }
    let counts = server.finish();
    assert_eq!(count(&counts, "Unary"), 0, "{counts}");

    // No server at all.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let text = plan(
        &format!("127.0.0.1:{port}"),
        "{ vus: 1, iterations: 1 }",
        "      - { grpc: 127.0.0.1:1, call: onrush.test.Echo/Unary }\n",
    );
    let (code, out) = onrush_on("grpc-refl-down", "validate", &text);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(&format!(
            "cannot read the gRPC descriptors of grpc://127.0.0.1:{port}"
        )),
        "{out}"
    );
}

#[test]
fn shared_grpc_connections_carry_max_streams_calls_each() {
    if !have_grpcio() {
        return;
    }
    let server = GrpcServer::start(&[]);
    let text = format!(
        "target: http://127.0.0.1:9\ngrpc: {{ protos: [\"{proto}\"] }}\nscenarios:\n  - name: s\n    http: {{ connections: shared, max_streams: 10 }}\n    load: {{ vus: 50, iterations: 4 }}\n    steps:\n      - {{ grpc: \"127.0.0.1:{port}\", name: unary, call: onrush.test.Echo/Unary, message: {{ text: c }} }}\n",
        proto = proto().display(),
        port = server.port
    );
    let dir = temp_dir("grpc-max-streams");
    let path = write_plan(&dir, &text);
    // One worker thread: its 50 VUs share its pool.
    let s = run_expect(
        0,
        &["run", path.to_str().unwrap(), "-t", "1"],
        &dir.join("out"),
    );
    let unary = step(&s, "s", "unary");
    assert_eq!(u64_at(unary, "/requests"), 200, "{unary:#}");
    assert_eq!(u64_at(unary, "/failures"), 0, "{unary:#}");
    assert_eq!(
        u64_at(scenario(&s, "s"), "/connections_opened"),
        5,
        "50 VUs / 10 streams: {s:#}"
    );
    let counts = server.finish();
    assert_eq!(count(&counts, "Unary"), 200, "{counts}");
    assert_eq!(count(&counts, "connections"), 5, "{counts}");
}

#[test]
fn grpcs_reflection_uses_the_plans_tls_settings_with_a_client_certificate() {
    if !have_reflection() {
        return;
    }
    let dir = temp_dir("grpcs-refl");
    let (ca, cert, key, client_cert, client_key) = crate::grpc::pki(&dir);
    let server = GrpcServer::start(&[
        ("GRPC_REFLECTION", Path::new("on")),
        ("GRPC_SERVER_CERT", &cert),
        ("GRPC_SERVER_KEY", &key),
        ("GRPC_CLIENT_CA", &ca),
    ]);
    let port = server.port;
    let steps = format!(
        "      - {{ grpc: \"grpcs://localhost:{port}\", name: unary, call: onrush.test.Echo/Unary, message: {{ text: tls }}, check: {{ jsonpath: \"$.text\", equals: \"echo tls\" }} }}\n"
    );
    let trusted = format!(
        "target: http://127.0.0.1:9\nhttp: {{ tls: {{ ca_file: \"{ca}\", client_cert: \"{cc}\", client_key: \"{ck}\" }} }}\ngrpc: {{ reflection: \"grpcs://localhost:{port}\" }}\nscenarios:\n  - name: s\n    load: {{ vus: 2, iterations: 3 }}\n    steps:\n{steps}",
        ca = ca.display(),
        cc = client_cert.display(),
        ck = client_key.display(),
    );
    let (code, out) = onrush_on("grpcs-refl-validate", "validate", &trusted);
    assert_eq!(code, 0, "{out}");
    let path = write_plan(&dir, &trusted);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    let unary = step(&s, "s", "unary");
    assert_eq!(u64_at(unary, "/requests"), 6, "{unary:#}");
    assert_eq!(u64_at(unary, "/failures"), 0, "{unary:#}");
    // Without the plan's CA the reflection's TLS handshake fails: the plan's line, the server
    // and the reason, before any load.
    let untrusted = plan(
        &format!("grpcs://localhost:{port}"),
        "{ vus: 1, iterations: 1 }",
        &steps,
    );
    let (code, out) = onrush_on("grpcs-refl-untrusted", "validate", &untrusted);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("plan.yaml:2:"), "{out}");
    assert!(out.contains(&format!("grpcs://localhost:{port}")), "{out}");
    assert!(out.to_lowercase().contains("certificate"), "{out}");
    let counts = server.finish();
    assert_eq!(count(&counts, "Unary"), 6, "{counts}");
}
