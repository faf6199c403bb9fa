//! End to end: the examples that run against `target: builtin` as written (only shortened with
//! `-D duration=...`), their counts checked on the built-in server's side
//! (`builtin_server.json`, the server's `/stats` at the end of the load) against onrush's
//! summary; and a TCP client that is not onrush's, on the built-in server's one port.

use crate::common;
use common::*;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};

use serde_json::Value;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// Runs an example for `duration`, checks it passed, returns (summary, the server's stats).
fn run_example(name: &str, duration: &str) -> (Value, Value) {
    let dir = temp_dir(&format!("builtin-{name}"));
    let out = dir.join("out");
    let path = example(name);
    let summary = run_expect(
        0,
        &[
            "run",
            path.to_str().unwrap(),
            "-D",
            &format!("duration={duration}"),
        ],
        &out,
    );
    let text = std::fs::read_to_string(out.join("builtin_server.json"))
        .expect("a builtin run writes builtin_server.json");
    (summary, serde_json::from_str(&text).unwrap())
}

fn requests(summary: &Value, scenario: &str, step_name: &str) -> u64 {
    u64_at(step(summary, scenario, step_name), "/requests")
}

#[test]
fn tcp_example_counts_match_the_builtin_servers() {
    let (summary, server) = run_example("tcp.yaml", "1s");
    let lines =
        requests(&summary, "lines", "line-echo") + requests(&summary, "lines", "line-delayed");
    let frames = requests(&summary, "frames", "frame-echo");
    assert!(lines > 0 && frames > 0, "{summary:#}");
    assert_eq!(u64_at(&summary, "/totals/failures"), 0, "{summary:#}");
    assert_eq!(
        u64_at(&server, "/tcp_messages"),
        lines + frames,
        "{server:#}"
    );
    // One connection per VU: 4 line VUs and 4 frame VUs.
    assert_eq!(u64_at(&server, "/tcp_connections"), 8, "{server:#}");
    assert_eq!(u64_at(&server, "/requests"), 0, "no HTTP: {server:#}");
}

#[test]
fn websocket_example_counts_match_the_builtin_servers() {
    let (summary, server) = run_example("websocket.yaml", "1s");
    let sc = "chat";
    let connects = requests(&summary, sc, "connect");
    let sends = ["text", "binary", "ask-stream"]
        .iter()
        .map(|s| requests(&summary, sc, s))
        .sum::<u64>();
    assert!(connects > 0, "{summary:#}");
    assert_eq!(u64_at(&summary, "/totals/failures"), 0, "{summary:#}");
    assert_eq!(u64_at(&server, "/ws_connections"), connects, "{server:#}");
    // Every send step's message is one data message at the server.
    assert_eq!(u64_at(&server, "/ws_messages"), sends, "{server:#}");
    assert_eq!(
        u64_at(&server, "/ws_pings"),
        requests(&summary, sc, "ping"),
        "{server:#}"
    );
}

/// The built-in server's one port, with clients onrush did not write (std's sockets): lines,
/// length-prefixed frames, the behaviours, and HTTP still on the same port.
#[test]
fn one_port_tells_lines_frames_and_http_apart() {
    let server = Server::start();
    let addr = ("127.0.0.1", server.port());

    let mut lines = TcpStream::connect(addr).unwrap();
    lines
        .write_all(b"hello\r\n/stream/2 x\n/delay/20 later\n/delay/x y\n")
        .unwrap();
    let mut reader = BufReader::new(lines.try_clone().unwrap());
    let mut got = Vec::new();
    for _ in 0..5 {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        got.push(line);
    }
    assert_eq!(got[..4], ["hello\r\n", "x\n", "x\n", "later\n"]);
    assert!(
        got[4].starts_with("ERR bad command \"/delay/x y\""),
        "{got:?}"
    );
    lines.write_all(b"/close\n").unwrap();
    let mut rest = Vec::new();
    reader.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "closed without an answer: {rest:?}");

    let mut frames = TcpStream::connect(addr).unwrap();
    frames
        .write_all(&[0, 0, 0, 3, b'a', b'b', b'c', 0, 0, 0, 0])
        .unwrap();
    let mut reply = [0u8; 11];
    frames.read_exact(&mut reply).unwrap();
    assert_eq!(reply, [0, 0, 0, 3, b'a', b'b', b'c', 0, 0, 0, 0]);

    let mut http = TcpStream::connect(addr).unwrap();
    http.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut resp = String::new();
    http.read_to_string(&mut resp).unwrap();
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    assert!(resp.ends_with("Hello from onrush\n"), "{resp}");

    let p = server.0.as_ref().unwrap().protocol_stats();
    // Lines: hello, stream, delay, bad delay, close; frames: "abc" and the empty one.
    assert_eq!((p.tcp_connections, p.tcp_messages), (2, 7), "{p:?}");
    assert_eq!(server.stats().requests, 1);
}

/// A step naming `builtin` when no built-in server runs is a clear error, not a hang.
#[test]
fn builtin_host_needs_the_builtin_target() {
    let dir = temp_dir("builtin-host-no-target");
    let plan = write_plan(
        &dir,
        "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - { tcp: builtin, send: \"x\\n\", until: \"\\n\" }\n",
    );
    let output = onrush()
        .args(["run", plan.to_str().unwrap(), "--quiet", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let text = text(&output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(text.contains("target: builtin"), "{text}");
}

#[test]
fn grpc_example_counts_match_the_builtin_servers() {
    let (summary, server) = run_example("grpc.yaml", "1s");
    assert_eq!(u64_at(&summary, "/totals/failures"), 0, "{summary:#}");
    let calls =
        |sc: &str, names: &[&str]| names.iter().map(|n| requests(&summary, sc, n)).sum::<u64>();
    let hello = calls("greet", &["hello"]);
    let (ss, cs, bidi) = (
        calls("streams", &["server-stream"]),
        calls("streams", &["client-stream"]),
        calls("streams", &["bidi"]),
    );
    assert!(hello > 0 && ss > 0, "{summary:#}");
    assert_eq!(
        u64_at(&server, "/grpc_calls"),
        hello + ss + cs + bidi,
        "{server:#}"
    );
    // Requests: one per unary and server-stream call, two per client-stream and bidi call.
    assert_eq!(
        u64_at(&server, "/grpc_messages_in"),
        hello + ss + 2 * cs + 2 * bidi,
        "{server:#}"
    );
    assert_eq!(
        u64_at(&server, "/grpc_messages_out"),
        hello + 3 * ss + cs + 2 * bidi,
        "{server:#}"
    );
    assert_eq!(
        u64_at(&server, "/h2_streams"),
        u64_at(&server, "/grpc_calls"),
        "{server:#}"
    );
}

#[test]
fn grpc_status_error_and_delay_asked_by_the_request() {
    let dir = temp_dir("builtin-grpc-status");
    let protos = example("protos");
    let plan = write_plan(
        &dir,
        &format!(
            r#"target: builtin
grpc: {{ protos: ["{p}/greeter.proto"], import_paths: ["{p}"] }}
scenarios:
  - name: s
    load: {{ vus: 1, iterations: 3 }}
    steps:
      - {{ grpc: builtin, name: err, call: helloworld.Greeter/SayHello, message: {{ name: x, error_code: 5 }} }}
      - {{ grpc: builtin, name: slow, call: helloworld.Greeter/SayHello, message: {{ name: x, delay_ms: 30 }},
          check: [ {{ jsonpath: "$.message", equals: "Hello, x!" }} ] }}
"#,
            p = protos.display()
        ),
    );
    let output = onrush()
        .args(["run", plan.to_str().unwrap(), "--quiet", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let s = summary(&dir.join("out"));
    let err = step(&s, "s", "err");
    assert_eq!(u64_at(err, "/failures"), 3, "{}\n{s:#}", text(&output));
    assert_eq!(u64_at(err, "/failures_by_class/not_found"), 3, "{err:#}");
    let slow = step(&s, "s", "slow");
    assert_eq!(u64_at(slow, "/failures"), 0, "{slow:#}");
    assert_eq!(u64_at(slow, "/requests"), 3, "{slow:#}");
}
