//! End to end: `udp:` steps against a UDP server onrush did not write (Python's socketserver,
//! tests/servers/udp_server.py), counts checked on its side; lost replies are `no_reply`.

use crate::common;
use common::*;

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Python UDP server, stopped (by closing its stdin) when dropped.
struct UdpServer {
    child: Child,
    port: u16,
}

impl UdpServer {
    fn start() -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/udp_server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the UDP server");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the server prints its port");
        UdpServer { child, port }
    }

    /// Datagrams the server received (its own count), waiting up to 5 s for `n`: datagrams
    /// sent without waiting for a reply may still be on their way when the run ends.
    fn received(&self, n: u64) -> u64 {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        socket.connect(("127.0.0.1", self.port)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut buf = [0u8; 64];
        loop {
            socket.send(b"STATS").unwrap();
            let got = match socket.recv(&mut buf) {
                Ok(len) => std::str::from_utf8(&buf[..len]).unwrap().parse().unwrap(),
                Err(_) => 0,
            };
            if got >= n || Instant::now() > deadline {
                return got;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for UdpServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

#[test]
fn udp_steps_send_wait_extract_and_count_lost_replies() {
    let udp = UdpServer::start();
    // A UDP port nothing listens on: bind, note the port, close.
    let closed = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let plan = format!(
        r#"
target: http://127.0.0.1:9
scenarios:
  - name: datagrams
    load: {{ vus: 3, iterations: 10 }}
    steps:
      - name: ping
        udp: 127.0.0.1:{port}
        send: "PING ${{vu}}-${{iteration}}"
        extract: {{ it: {{ regex: "PONG [0-9]+-([0-9]+)" }} }}
        check: {{ body_contains: PONG }}
      - name: hex
        udp: 127.0.0.1:{port}
        send_hex: "50 49 4E 47 20 31"
        check: {{ body_size: 6 }}
      - {{ name: fire, udp: "127.0.0.1:{port}", send: FIRE, reply: none }}
      - {{ name: lost, udp: "127.0.0.1:{port}", send: DROP, timeout: 100ms }}
      - {{ name: too-long, udp: "127.0.0.1:{port}", send: BIG, max_reply: 100 }}
      - {{ name: refused, udp: "127.0.0.1:{closed}", send: PING, timeout: 500ms }}
"#,
        port = udp.port
    );
    let dir = temp_dir("udp");
    let path = write_plan(&dir, &plan);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    for name in ["ping", "fire"] {
        let st = step(&s, "datagrams", name);
        assert_eq!(u64_at(st, "/requests"), 30, "{name}: {st:#}");
        assert_eq!(u64_at(st, "/failures"), 0, "{name}: {st:#}");
    }
    let class = |name: &str, class: &str| {
        u64_at(
            step(&s, "datagrams", name),
            &format!("/failures_by_class/{class}"),
        )
    };
    assert_eq!(class("lost", "no_reply"), 30, "{s:#}");
    assert_eq!(class("too-long", "bad_response"), 30, "{s:#}");
    assert_eq!(class("refused", "connect_refused"), 30, "{s:#}");
    assert_eq!(
        u64_at(&s, "/totals/failures_by_class/no_reply"),
        30,
        "{s:#}"
    );
    // ping's extractor and check, hex's check: all passed.
    assert_eq!(u64_at(&s, "/totals/checks/passes"), 90, "{s:#}");
    // 30 each of ping, hex, fire, lost and too-long (the refused ones went elsewhere).
    assert_eq!(udp.received(150), 150, "the server's own count");
}
