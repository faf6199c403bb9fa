//! End to end: `tcp:` steps through the protocol seam against a line server onrush did not
//! write (Python's socketserver, tests/servers/line_server.py), counts checked on its side;
//! HTTP and TCP in one scenario, a value extracted over HTTP sent over TCP; failures classified.

use crate::common;
use common::*;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

/// The Python line server, stopped (by closing its stdin) when dropped.
struct LineServer {
    child: Child,
    port: u16,
}

impl LineServer {
    fn start() -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/line_server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the line server");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the server prints its port");
        LineServer { child, port }
    }

    /// Lines the server received (its own count).
    fn received(&self) -> u64 {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.write_all(b"STATS\n").unwrap();
        let mut reply = String::new();
        BufReader::new(&mut s).read_line(&mut reply).unwrap();
        reply.trim().parse().unwrap()
    }
}

impl Drop for LineServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

#[test]
fn tcp_steps_count_check_and_extract_like_any_step() {
    let line = LineServer::start();
    let http = Server::start();
    let plan = format!(
        r#"
target: http://127.0.0.1:{http}
scenarios:
  - name: mixed
    load: {{ vus: 4, iterations: 25 }}
    steps:
      - get: /bytes/3
        extract: {{ code: {{ status: true }} }}
      - name: ping
        tcp: 127.0.0.1:{tcp}
        send: "PING ${{code}} ${{vu}}-${{iteration}}\n"
        until: "\n"
        extract: {{ pong: {{ regex: "PONG ([0-9]+)" }} }}
        check: {{ body_contains: "PONG 200 " }}
      - name: bin
        tcp: 127.0.0.1:{tcp}
        send_hex: "42 49 4e 0a"
        read: 4
        check: {{ body_size: 4 }}
      - name: echo-extracted
        tcp: 127.0.0.1:{tcp}
        send: "PING again ${{pong}}\n"
        until: "\n"
        check: {{ body_contains: "PONG again 200" }}
"#,
        http = http.port(),
        tcp = line.port
    );
    let dir = temp_dir("tcp-mixed");
    let path = write_plan(&dir, &plan);
    let out = dir.join("out");
    let s = run_expect(0, &["run", path.to_str().unwrap()], &out);
    for name in ["ping", "bin", "echo-extracted"] {
        let st = step(&s, "mixed", name);
        assert_eq!(u64_at(st, "/requests"), 100, "{name}: {st:#}");
        assert_eq!(u64_at(st, "/failures"), 0, "{name}: {st:#}");
    }
    assert_eq!(
        line.received(),
        300,
        "the server received every TCP request the summary counts"
    );
    assert_eq!(u64_at(&s, "/totals/requests"), 400);
    assert_eq!(http.stats().requests, 100);
    assert_eq!(u64_at(&s, "/totals/checks/fails"), 0, "{s:#}");
    // 3 checks and 2 extractors (an extractor without a default counts as a check) x 100.
    assert_eq!(u64_at(&s, "/totals/checks/passes"), 500);
    // per_vu: one TCP connection per VU (and one HTTP connection per VU).
    assert_eq!(u64_at(scenario(&s, "mixed"), "/connections_opened"), 8);
    let report = std::fs::read_to_string(out.join("report.html")).expect("report written");
    assert!(report.contains("echo-extracted"));
}

#[test]
fn tcp_failures_are_classified_and_the_run_goes_on() {
    let line = LineServer::start();
    // A port nothing listens on: bind, note the port, close.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let plan = format!(
        r#"
target: http://127.0.0.1:{tcp}
scenarios:
  - name: faults
    load: {{ vus: 2, iterations: 3 }}
    steps:
      - {{ name: refused, tcp: "127.0.0.1:{closed}", send: "PING\n", until: "\n" }}
      - {{ name: silent, tcp: "127.0.0.1:{tcp}", send: "SILENT\n", until: "\n", timeout: 200ms }}
      - {{ name: quit, tcp: "127.0.0.1:{tcp}", send: "QUIT\n", until: "\n" }}
      - {{ name: ok, tcp: "127.0.0.1:{tcp}", send: "PING ok\n", until: "\n", check: {{ body_contains: PONG }} }}
"#,
        tcp = line.port
    );
    let dir = temp_dir("tcp-faults");
    let path = write_plan(&dir, &plan);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    let class = |name: &str, class: &str| {
        u64_at(
            step(&s, "faults", name),
            &format!("/failures_by_class/{class}"),
        )
    };
    assert_eq!(class("refused", "connect_refused"), 6, "{s:#}");
    assert_eq!(class("silent", "timeout"), 6, "{s:#}");
    assert_eq!(class("quit", "closed_early"), 6, "{s:#}");
    assert_eq!(u64_at(step(&s, "faults", "ok"), "/failures"), 0, "{s:#}");
    assert_eq!(u64_at(step(&s, "faults", "ok"), "/requests"), 6);
}

#[test]
fn a_bad_tcp_step_is_a_plan_error_with_its_line() {
    let dir = temp_dir("tcp-bad");
    let path = write_plan(
        &dir,
        "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - { tcp: localhost, send: x }\n",
    );
    let output = onrush()
        .args(["validate", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let mut err = String::new();
    output.stderr.as_slice().read_to_string(&mut err).unwrap();
    assert!(err.contains(":6:"), "{err}");
    assert!(err.contains("expected HOST:PORT"), "{err}");
}

impl LineServer {
    /// Waits (up to 5 s) for the server to have received `n` lines: fire-and-forget steps
    /// finish when their bytes are written, before the server has read them.
    fn wait_received(&self, n: u64) -> u64 {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let got = self.received();
            if got >= n || std::time::Instant::now() > deadline {
                return got;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

#[test]
fn tcp_replies_framed_by_length_prefix_idle_close_or_none() {
    let line = LineServer::start();
    let plan = format!(
        r#"
target: http://127.0.0.1:{tcp}
scenarios:
  - name: framing
    load: {{ vus: 3, iterations: 10 }}
    steps:
      - name: prefixed
        tcp: 127.0.0.1:{tcp}
        send: "LP ${{vu}}\n"
        length_prefix: 4
        # Anchored: the body is the message, without its prefix.
        extract: {{ n: {{ regex: "^PONG ([0-9]+)$" }} }}
      - name: prefixed-little
        tcp: 127.0.0.1:{tcp}
        send: "LPLE\n"
        length_prefix: {{ bytes: 2, endian: little, includes_prefix: true }}
        check: [{{ body_size: 6 }}, {{ body_contains: LITTLE }}]
      - name: fire
        tcp: 127.0.0.1:{tcp}
        send: "FIRE\n"
        reply: none
      - name: silence
        tcp: 127.0.0.1:{tcp}
        send: "CHUNKS\n"
        idle: 300ms
        check: {{ body_contains: "part1 part2" }}
      - name: to-close
        tcp: 127.0.0.1:{tcp}
        send: "CLOSE ${{n}}\n"
        until_close: true
        check: {{ body_contains: "BYE " }}
"#,
        tcp = line.port
    );
    let dir = temp_dir("tcp-framing");
    let path = write_plan(&dir, &plan);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    for name in ["prefixed", "prefixed-little", "fire", "silence", "to-close"] {
        let st = step(&s, "framing", name);
        assert_eq!(u64_at(st, "/requests"), 30, "{name}: {st:#}");
        assert_eq!(u64_at(st, "/failures"), 0, "{name}: {st:#}");
    }
    assert_eq!(u64_at(&s, "/totals/checks/fails"), 0, "{s:#}");
    // 4 checks (body_size and body_contains count one each) and 1 extractor, x 30.
    assert_eq!(u64_at(&s, "/totals/checks/passes"), 150, "{s:#}");
    assert_eq!(
        line.wait_received(150),
        150,
        "the server received every request, fire-and-forget ones included"
    );
    // until_close ends each iteration's connection: one per iteration.
    assert_eq!(
        u64_at(scenario(&s, "framing"), "/connections_opened"),
        30,
        "{s:#}"
    );
}

#[test]
fn a_misbehaving_server_is_a_classified_failure() {
    let line = LineServer::start();
    let plan = format!(
        r#"
target: http://127.0.0.1:{tcp}
scenarios:
  - name: bad
    load: {{ vus: 2, iterations: 3 }}
    steps:
      - {{ name: huge-prefix, tcp: "127.0.0.1:{tcp}", send: "LPHUGE\n", length_prefix: 4 }}
      - {{ name: cut, tcp: "127.0.0.1:{tcp}", send: "LPCUT\n", length_prefix: 4 }}
      - {{ name: too-long, tcp: "127.0.0.1:{tcp}", send: "BIG\n", until_close: true, max_reply: 10 }}
      - {{ name: never, tcp: "127.0.0.1:{tcp}", send: "SILENT\n", idle: 50ms, timeout: 200ms }}
      - {{ name: ok, tcp: "127.0.0.1:{tcp}", send: "LP ok\n", length_prefix: 4, check: {{ body_contains: PONG }} }}
"#,
        tcp = line.port
    );
    let dir = temp_dir("tcp-bad-server");
    let path = write_plan(&dir, &plan);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    let class = |name: &str, class: &str| {
        u64_at(
            step(&s, "bad", name),
            &format!("/failures_by_class/{class}"),
        )
    };
    assert_eq!(class("huge-prefix", "bad_response"), 6, "{s:#}");
    assert_eq!(class("cut", "closed_early"), 6, "{s:#}");
    assert_eq!(class("too-long", "bad_response"), 6, "{s:#}");
    assert_eq!(class("never", "timeout"), 6, "{s:#}");
    assert_eq!(u64_at(step(&s, "bad", "ok"), "/failures"), 0, "{s:#}");
    assert_eq!(line.received(), 30);
}

#[test]
fn tcp_send_file_streams_the_file_relative_to_the_plan() {
    let line = LineServer::start();
    let dir = temp_dir("tcp-send-file");
    // 1 MB after the header line: far more than one chunk, and a sum the server computes too.
    let body: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    let sum: u64 = body.iter().map(|b| *b as u64).sum();
    let mut payload = b"SINK 1000000\n".to_vec();
    payload.extend_from_slice(&body);
    std::fs::write(dir.join("payload.bin"), &payload).unwrap();
    let plan = format!(
        r#"
target: http://127.0.0.1:{tcp}
scenarios:
  - name: upload
    load: {{ vus: 2, iterations: 5 }}
    steps:
      - name: file
        tcp: 127.0.0.1:{tcp}
        send_file: payload.bin
        until: "\n"
        check: {{ body_contains: "GOT 1000000 {sum}\n" }}
"#,
        tcp = line.port
    );
    let path = write_plan(&dir, &plan);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    let st = step(&s, "upload", "file");
    assert_eq!(u64_at(st, "/requests"), 10, "{st:#}");
    assert_eq!(u64_at(st, "/failures"), 0, "{st:#}");
    assert_eq!(u64_at(&s, "/totals/checks/passes"), 10, "{s:#}");
    assert_eq!(line.received(), 10, "the server read every file whole");
}
