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

/// Steps per iteration of examples/thrift.yaml; the last, `zip`, is oneway.
const THRIFT_EXAMPLE_STEPS: &[&str] = &[
    "Calculator.ping",
    "Calculator.add",
    "subtract",
    "divide-by-zero",
    "Calculator.summarize",
    "Calculator.getStruct",
    "Calculator.zip",
];

#[test]
fn thrift_example_counts_match_the_builtin_servers() {
    let (summary, server) = run_example("thrift.yaml", "1s");
    let sc = "calculator";
    let calls: u64 = THRIFT_EXAMPLE_STEPS
        .iter()
        .map(|s| requests(&summary, sc, s))
        .sum();
    let thrown = requests(&summary, sc, "divide-by-zero");
    assert!(thrown > 0, "{summary:#}");
    // The only failures are the expected declared exceptions, one per divide-by-zero call.
    assert_eq!(u64_at(&summary, "/totals/failures"), thrown, "{summary:#}");
    let divide = step(&summary, sc, "divide-by-zero");
    assert_eq!(
        u64_at(divide, "/failures_by_class/thrift_exception"),
        thrown,
        "{divide:#}"
    );
    // Every answered call reached the server; a oneway `zip` is done for onrush once written,
    // so the last one of each of the 4 VUs may still be in the server's socket when the run
    // takes its counts.
    let at_server = u64_at(&server, "/thrift_calls");
    assert!(
        (calls - 4..=calls).contains(&at_server),
        "server {at_server}, onrush {calls}: {server:#}"
    );
    assert_eq!(u64_at(&server, "/thrift_connections"), 4, "{server:#}");
    assert_eq!(u64_at(&server, "/requests"), 0, "no HTTP: {server:#}");
}

/// onrush's Thrift client against the built-in server in every protocol × transport, plain and
/// multiplexed: one scenario (so one connection) per combination, as a server's transport is
/// the connection's. The oneway call is not the last, so the counts agree to the call. (An op
/// outside the enum, answered with an application exception, cannot be sent by onrush, which
/// checks enums against the IDL: Apache's Python client sends it below.)
#[test]
fn thrift_every_protocol_and_transport_against_builtin() {
    let dir = temp_dir("builtin-thrift-combos");
    let idl = example("idl/calculator.thrift");
    let mut plan = format!(
        "target: builtin\nthrift: {{ idl: [\"{}\"] }}\nscenarios:\n",
        idl.display()
    );
    let mut combos = Vec::new();
    for protocol in ["binary", "compact"] {
        for transport in ["framed", "buffered"] {
            for multiplexed in [false, true] {
                let name = format!("{protocol}-{transport}-{multiplexed}");
                let t = format!(
                    "thrift: builtin, protocol: {protocol}, transport: {transport}, multiplexed: {multiplexed}"
                );
                plan.push_str(&format!(
                    r#"  - name: {name}
    load: {{ vus: 1, iterations: 5 }}
    steps:
      - {{ {t}, name: ping, call: Calculator.ping }}
      - {{ {t}, name: add, call: Calculator.add, args: {{ num1: 40, num2: 2 }}, check: [ {{ jsonpath: "$", equals: 42 }} ] }}
      - {{ {t}, name: calc, call: Calculator.calculate, args: {{ logid: "${{iteration}}", w: {{ num1: 6, num2: "${{iteration}}", op: MULTIPLY }} }},
          extract: {{ product: {{ jsonpath: "$" }} }} }}
      - {{ {t}, name: divide, call: Calculator.calculate, args: {{ logid: 1, w: {{ num1: 1, num2: 0, op: DIVIDE }} }},
          check: [ {{ header: exception, equals: InvalidOperation }}, {{ jsonpath: "$.why", equals: "Cannot divide by 0" }} ] }}
      - {{ {t}, name: zip, call: Calculator.zip, args: {{ n: 1 }} }}
      - {{ {t}, name: summarize, call: Calculator.summarize,
          args: {{ works: [ {{ num1: 1, num2: 2, op: ADD }}, {{ num1: 3, num2: 4, op: MULTIPLY, comment: big }} ], weights: {{ a: 1, b: 2 }}, flag: true }},
          check: [ {{ jsonpath: "$.values[1]", equals: 12 }}, {{ jsonpath: "$.counts.MULTIPLY", equals: 1 }}, {{ jsonpath: "$.ratio", equals: 1.5 }} ] }}
      - {{ {t}, name: get, call: Calculator.getStruct, args: {{ key: "${{iteration}}" }},
          check: [ {{ jsonpath: "$.value", equals: "${{product}}" }} ] }}
"#
                ));
                combos.push(name);
            }
        }
    }
    let path = write_plan(&dir, &plan);
    let output = onrush()
        .args(["run", path.to_str().unwrap(), "--quiet", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let s = summary(&dir.join("out"));
    let server: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("out/builtin_server.json")).unwrap(),
    )
    .unwrap();
    let mut calls = 0;
    for sc in &combos {
        for name in ["ping", "add", "calc", "zip", "summarize", "get"] {
            let st = step(&s, sc, name);
            assert_eq!(
                u64_at(st, "/requests"),
                5,
                "{sc}/{name}: {st:#}\n{}",
                text(&output)
            );
            assert_eq!(u64_at(st, "/failures"), 0, "{sc}/{name}: {st:#}");
        }
        let divide = step(&s, sc, "divide");
        assert_eq!(
            u64_at(divide, "/failures_by_class/thrift_exception"),
            5,
            "{divide:#}"
        );
        calls += 7 * 5;
    }
    assert_eq!(u64_at(&s, "/totals/checks/fails"), 0, "{:#}", s["checks"]);
    assert_eq!(u64_at(&server, "/thrift_calls"), calls, "{server:#}");
    assert_eq!(u64_at(&server, "/thrift_connections"), 8, "{server:#}");
}

/// Apache Thrift's own Python library as the client (code generated from the IDL the server
/// serves), checking every answer: binary/framed and compact/buffered plain, binary/buffered and
/// compact/framed multiplexed; the server's counts agree with the client's.
#[test]
fn apache_thrift_python_client_against_builtin() {
    let Some(generated) =
        crate::thrift::generated_from("builtin-client", &example("idl/calculator.thrift"))
    else {
        return;
    };
    let server = Server::start();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/servers/thrift_client.py"
    );
    let combos = [
        ("binary", "framed", "plain"),
        ("compact", "buffered", "plain"),
        ("binary", "buffered", "multiplexed"),
        ("compact", "framed", "multiplexed"),
    ];
    let mut calls = 0;
    for (protocol, transport, mode) in combos {
        let output = std::process::Command::new("python3")
            .arg(script)
            .args([&server.port().to_string(), protocol, transport, mode, "20"])
            .env("PYTHONPATH", &generated)
            .output()
            .unwrap();
        let what = format!("{protocol}/{transport}/{mode}: {}", text(&output));
        assert!(output.status.success(), "{what}");
        let counts: Value = serde_json::from_slice(&output.stdout).expect(&what);
        calls += u64_at(&counts, "/calls");
    }
    assert_eq!(calls, 4 * (20 * 8 + 1));
    let p = server.0.as_ref().unwrap().protocol_stats();
    assert_eq!((p.thrift_connections, p.thrift_calls), (4, calls), "{p:?}");
}

/// Bad input after a Thrift-looking prefix, on the socket: the server closes that connection
/// (no answer, no panic) and goes on serving others; an oversized frame is refused on its
/// length alone, before its bytes are sent.
#[test]
fn thrift_bad_input_closes_only_that_connection() {
    let server = Server::start();
    let addr = ("127.0.0.1", server.port());
    let closed = |bytes: &[u8]| {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        s.write_all(bytes).unwrap();
        let mut rest = Vec::new();
        // Read to the end: the server's close (a reset when our bytes are left unread).
        let _ = s.read_to_end(&mut rest);
        rest
    };
    // Framed binary: a method name announced as 2^31-16 bytes inside a 12-byte frame.
    let garbage = [
        0, 0, 0, 12, 0x80, 1, 0, 1, 0x7f, 0xff, 0xff, 0xf0, 1, 2, 3, 4,
    ];
    assert!(closed(&garbage).is_empty());
    // Buffered compact: an unknown compact type in the argument struct.
    assert!(closed(&[0x82, 0x21, 1, 1, b'x', 0x1e]).is_empty());
    // A frame of 16 MiB - 1 (the first byte 0, so sniffed as Thrift framed): over the 1 MiB
    // limit, closed after its header, without waiting for (or buffering) the rest.
    assert!(closed(&[0, 0xff, 0xff, 0xff, 0x80, 1, 0, 1]).is_empty());

    // The server still serves Thrift and HTTP.
    let mut ping = vec![0, 0, 0, 17, 0x80, 1, 0, 1, 0, 0, 0, 4];
    ping.extend_from_slice(b"ping");
    ping.extend_from_slice(&[0, 0, 0, 9, 0]);
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&ping).unwrap();
    let mut reply = [0u8; 21];
    s.read_exact(&mut reply).unwrap();
    assert_eq!(&reply[4..8], &[0x80, 1, 0, 2], "a REPLY: {reply:?}");
    assert_eq!(
        &reply[16..],
        &[0, 0, 0, 9, 0],
        "seqid 9, empty struct: {reply:?}"
    );
    let p = server.0.as_ref().unwrap().protocol_stats();
    assert_eq!((p.thrift_connections, p.thrift_calls), (4, 1), "{p:?}");
}

/// `onrush serve --help` says what every HTTP endpoint answers (a new user should not have to
/// provoke a 404 to find them), `-h` where to look, and docs/server.md lists each one.
#[test]
fn serve_help_and_the_docs_list_every_endpoint() {
    let long = onrush().args(["serve", "--help"]).output().unwrap();
    assert!(long.status.success());
    let long = String::from_utf8(long.stdout).unwrap();
    let short = onrush().args(["serve", "-h"]).output().unwrap();
    let short = String::from_utf8(short.stdout).unwrap();
    assert!(short.contains("onrush serve --help"), "{short}");
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/server.md"))
            .unwrap();
    for endpoint in onrush_server::ENDPOINTS {
        let line = format!("{}  ", endpoint.path);
        assert!(long.contains(&line), "{} in:\n{long}", endpoint.path);
        assert!(
            docs.contains(&format!("| `{}` |", endpoint.path)),
            "docs/server.md lacks {}",
            endpoint.path
        );
    }
}
