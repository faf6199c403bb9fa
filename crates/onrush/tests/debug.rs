//! `--debug[=N]` (issue 37 §1): the first N exchanges of each step printed in full on stderr,
//! whatever their outcome, secrets masked; nothing without the flag.

use crate::common;
use common::*;

/// `echo` posts a body with the token in a header and in the body; `big` answers 10,000
/// bytes (more than the 4 KiB printed); `down` fails (503). 2 VUs, 3 iterations each.
const PLAN: &str = r#"
target: builtin
scenarios:
  - name: main
    load: { vus: 2, iterations: 3 }
    steps:
      - name: echo
        post: /echo?q=1
        headers: { Authorization: "Bearer ${api_token}", X-Trace: "t-${vu}" }
        body: '{"token":"${api_token}","n":1}'
      - { name: big, get: /bytes/10000 }
      - { name: down, get: /status/503 }
"#;

const SECRET: &str = "supersecret123";

/// Runs the plan with `extra` flags; (exit code, stderr).
fn run(name: &str, extra: &[&str]) -> (Option<i32>, String) {
    let dir = temp_dir(name);
    let plan = write_plan(&dir, PLAN);
    let output = onrush()
        .arg("run")
        .arg(&plan)
        .args([
            "-D",
            &format!("api_token={SECRET}"),
            "-t",
            "2",
            "-q",
            "--out",
        ])
        .arg(dir.join("out"))
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), stderr)
}

/// The printed exchanges of `step`, each as its text.
fn exchanges<'a>(stderr: &'a str, step: &str) -> Vec<&'a str> {
    let head = format!("step `{step}`, exchange ");
    stderr
        .split("── debug: ")
        .skip(1)
        .filter(|e| e.contains(&head))
        .collect()
}

#[test]
fn debug_prints_the_first_exchange_of_each_step_in_full_masked() {
    let (code, err) = run("debug-one", &["--debug"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains(SECRET), "the secret leaked:\n{err}");

    let echo = exchanges(&err, "echo");
    assert_eq!(echo.len(), 1, "one exchange per step by default:\n{err}");
    let e = echo[0];
    assert!(e.contains("> POST /echo?q=1\n"), "{e}");
    assert!(e.contains("> Authorization: ***\n"), "{e}");
    assert!(e.contains("> X-Trace: t-"), "{e}");
    // The request body as sent, the secret value masked by the plan's secrets.
    assert!(e.contains("> {\"token\":\"***\",\"n\":1}\n"), "{e}");
    // The response in full: status, headers (all of them, though no check asks), body.
    assert!(e.contains("< 200 ("), "{e}");
    assert!(e.contains("< content-type: application/json"), "{e}");
    assert!(e.contains("\"method\":\"POST\""), "{e}");
    assert!(e.contains("= ok\n"), "{e}");

    let big = exchanges(&err, "big");
    assert_eq!(big.len(), 1, "{err}");
    assert!(big[0].contains("< content-length: 10000"), "{}", big[0]);
    assert!(
        big[0].contains(&format!("< … {} more bytes", 10_000 - 4096)),
        "{}",
        big[0]
    );

    let down = exchanges(&err, "down");
    assert_eq!(down.len(), 1, "{err}");
    assert!(down[0].contains("< 503 ("), "{}", down[0]);
    assert!(down[0].contains("= failed: http_5xx"), "{}", down[0]);
}

#[test]
fn debug_n_prints_n_exchanges_per_step_and_nothing_without_the_flag() {
    let (code, err) = run("debug-n", &["--debug=4"]);
    assert_eq!(code, Some(0), "{err}");
    for step in ["echo", "big", "down"] {
        let n = exchanges(&err, step).len();
        assert_eq!(n, 4, "{step}: {n} exchanges printed:\n{err}");
    }
    // Numbered 1 to 4, whichever worker ran them.
    for i in 1..=4 {
        assert!(
            err.contains(&format!("step `echo`, exchange {i} ")),
            "{err}"
        );
    }

    let (code, err) = run("debug-off", &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("── debug"), "{err}");
}

#[test]
fn quick_takes_debug_too() {
    let server = onrush_server::start(onrush_server::ServerConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
    })
    .unwrap();
    let url = format!("http://{}/json", server.local_addr());
    let dir = temp_dir("debug-quick");
    let output = onrush()
        .args([
            "quick",
            &url,
            "-n",
            "5",
            "-c",
            "1",
            "-q",
            "--debug=2",
            "--out",
        ])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    let shown = exchanges(&err, "GET /json");
    assert_eq!(shown.len(), 2, "{err}");
    assert!(shown[0].contains("> GET /json\n"), "{}", shown[0]);
    assert!(shown[0].contains("< 200 ("), "{}", shown[0]);
}

#[test]
fn a_distributed_run_refuses_debug() {
    let dir = temp_dir("debug-agents");
    let plan = write_plan(&dir, PLAN);
    let output = onrush()
        .arg("run")
        .arg(&plan)
        .args(["--agents", "1", "--debug", "-D", "api_token=x"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--debug: a distributed run's requests are made by its agents"),
        "{err}"
    );
}

#[test]
fn debug_shows_a_grpc_call_and_its_reply_as_json() {
    // The built-in server's Greeter, from the shipped example's .proto; no step reads the
    // reply, so only --debug makes the session decode it.
    let protos = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/protos");
    let dir = temp_dir("debug-grpc");
    let plan = write_plan(
        &dir,
        &format!(
            r#"
target: builtin
grpc: {{ protos: ["{p}/greeter.proto"], import_paths: ["{p}"] }}
scenarios:
  - name: g
    load: {{ vus: 1, iterations: 2 }}
    steps:
      - grpc: builtin
        name: hello
        call: helloworld.Greeter/SayHello
        message: {{ name: "vu-${{vu}}" }}
        metadata: {{ authorization: "Bearer ${{api_token}}" }}
      - grpc: builtin
        name: client-stream
        call: helloworld.Greeter/SayHelloClientStream
        messages: [ {{ name: "a" }}, {{ name: "b" }} ]
"#,
            p = protos.display()
        ),
    );
    let output = onrush()
        .arg("run")
        .arg(&plan)
        .args([
            "-D",
            &format!("api_token={SECRET}"),
            "-q",
            "--debug",
            "--out",
        ])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(!err.contains(SECRET), "{err}");
    let hello = exchanges(&err, "hello");
    assert_eq!(hello.len(), 1, "{err}");
    let e = hello[0];
    assert!(
        e.contains("> gRPC builtin/helloworld.Greeter/SayHello\n"),
        "{e}"
    );
    assert!(e.contains("> authorization: ***\n"), "{e}");
    assert!(e.contains("> {\"name\":\"vu-1\"}\n"), "{e}");
    assert!(e.contains("< grpc-status: 0\n"), "{e}");
    assert!(e.contains("< {\"message\":\"Hello, vu-1!\"}\n"), "{e}");
    let stream = exchanges(&err, "client-stream");
    assert_eq!(stream.len(), 1, "{err}");
    assert!(
        stream[0].contains("> [{\"name\":\"a\"},{\"name\":\"b\"}]\n"),
        "{}",
        stream[0]
    );
}

#[test]
fn debug_shows_a_thrift_reply_as_json() {
    // No check reads the reply: only --debug makes the session decode it.
    let idl = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/idl/calculator.thrift");
    let dir = temp_dir("debug-thrift");
    let plan = write_plan(
        &dir,
        &format!(
            "target: builtin\nthrift: {{ idl: [\"{}\"] }}\nscenarios:\n  - name: c\n    load: {{ vus: 1, iterations: 2 }}\n    steps:\n      - {{ thrift: builtin, name: add, call: Calculator.add, args: {{ num1: 40, num2: 2 }} }}\n",
            idl.display()
        ),
    );
    let output = onrush()
        .arg("run")
        .arg(&plan)
        .args(["-q", "--debug", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    let add = exchanges(&err, "add");
    assert_eq!(add.len(), 1, "{err}");
    assert!(add[0].contains("< reply ("), "{}", add[0]);
    assert!(add[0].contains("<\n< 42\n= ok"), "{}", add[0]);
}
