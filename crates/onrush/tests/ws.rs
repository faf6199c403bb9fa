//! End to end: `ws:` steps through the protocol seam against a WebSocket server onrush did not
//! write (Python's `websockets`, tests/servers/ws_server.py), counts checked on its side; a
//! socket held open across an HTTP step; failures (a rejected handshake, a malformed frame, an
//! oversized message, a connection cut mid-message, a server's close, a timeout) classified
//! while the run goes on; messages longer than the read buffers, both ways.

use crate::common;
use common::*;

use serde_json::Value;

/// The Python WebSocket server; `finish` stops it (closes its stdin) and returns its counts.
struct WsServer(PyServer);

impl WsServer {
    fn start() -> Self {
        Self::start_with(&[])
    }

    /// With environment variables (`WS_SERVER_CERT` and `WS_SERVER_KEY`: wss://;
    /// `WS_DEFLATE`).
    fn start_with(env: &[(&str, &std::path::Path)]) -> Self {
        let mut command = PyServer::command("ws_server.py");
        command.envs(env.iter().copied());
        WsServer(PyServer::spawn(command, "WebSocket server"))
    }

    fn finish(self) -> Value {
        self.0.finish()
    }
}

impl std::ops::Deref for WsServer {
    type Target = PyServer;
    fn deref(&self) -> &PyServer {
        &self.0
    }
}

#[test]
fn ws_steps_count_check_and_extract_like_any_step() {
    let ws = WsServer::start();
    let http = Server::start();
    let plan = format!(
        r#"
target: http://127.0.0.1:{http}
scenarios:
  - name: chat
    load: {{ vus: 3, iterations: 4 }}
    steps:
      - ws: connect
        url: "ws://127.0.0.1:{ws}/chat?u=${{vu}}"
        headers: {{ X-Token: "${{token}}" }}
        subprotocols: [chat.v1]
        check: [{{ status: 101 }}, {{ header: sec-websocket-protocol, equals: chat.v1 }}]
      - ws: send
        name: echo
        text: "echo ${{vu}}-${{iteration}}"
        await: {{ match: "echo ([0-9]+)-", timeout: 2s }}
        extract: {{ who: {{ regex: "echo ([0-9]+)-" }} }}
        check: {{ body_contains: "echo " }}
      # Three messages come back while the VU runs an HTTP request: none is lost.
      - {{ ws: send, name: burst, text: "burst 3" }}
      - get: /bytes/3
      - {{ ws: receive, name: three, count: 3, check: {{ body_contains: "burst 3" }} }}
      - {{ ws: send, name: bin, binary_hex: "01 02 03 04", await: {{ count: 1 }}, check: {{ body_size: 4 }} }}
      - {{ ws: ping }}
      # The server pings: the pong goes out while the VU reads the socket.
      - {{ ws: send, name: server-ping, text: pingme, await: {{ match: pong }}, check: {{ body_contains: ponged }} }}
      - {{ ws: send, name: extracted, text: "echo ${{who}}-again", await: {{ match: "-again" }},
           check: {{ body_contains: "-again" }} }}
      - {{ ws: send, name: silent, text: silent, await: {{ match: never, timeout: 150ms }} }}
      - {{ ws: close, code: 4000, check: {{ body_contains: "4000" }} }}
vars:
  token: secret
"#,
        http = http.port(),
        ws = ws.port
    );
    let dir = temp_dir("ws-chat");
    let path = write_plan(&dir, &plan);
    let out = dir.join("out");
    let s = run_expect(0, &["run", path.to_str().unwrap()], &out);
    for name in [
        "ws connect",
        "echo",
        "burst",
        "three",
        "bin",
        "ws ping",
        "server-ping",
        "extracted",
        "ws close",
    ] {
        let st = step(&s, "chat", name);
        assert_eq!(u64_at(st, "/requests"), 12, "{name}: {st:#}");
        assert_eq!(u64_at(st, "/failures"), 0, "{name}: {st:#}");
        assert!(
            u64_at(st, "/bytes_out") > 0 || name == "three",
            "{name}: {st:#}"
        );
    }
    let silent = step(&s, "chat", "silent");
    assert_eq!(
        u64_at(silent, "/failures_by_class/timeout"),
        12,
        "{silent:#}"
    );
    // The timeout left the socket usable: the close after it succeeded (above).
    assert_eq!(
        u64_at(step(&s, "chat", "ws connect"), "/status_codes/101"),
        12
    );
    assert!(u64_at(step(&s, "chat", "three"), "/bytes_in") > 0, "{s:#}");
    assert_eq!(u64_at(&s, "/totals/checks/fails"), 0, "{s:#}");
    assert_eq!(http.stats().requests, 12);

    let counts = ws.finish();
    // The server's own counts agree with onrush's.
    assert_eq!(u64_at(&counts, "/connections"), 12, "{counts}");
    assert_eq!(u64_at(&counts, "/rejected"), 0, "{counts}");
    assert_eq!(u64_at(&counts, "/subprotocol/chat.v1"), 12, "{counts}");
    // permessage-deflate offered and agreed on every socket: every message above went
    // compressed both ways, and the server read what onrush sent.
    assert_eq!(u64_at(&counts, "/deflate"), 12, "{counts}");
    // echo, burst, pingme, extracted and silent: 5 text messages per iteration; one binary.
    assert_eq!(u64_at(&counts, "/text"), 5 * 12, "{counts}");
    assert_eq!(u64_at(&counts, "/pongs"), 12, "{counts}");
    assert_eq!(u64_at(&counts, "/binary"), 12, "{counts}");
    assert_eq!(u64_at(&counts, "/closes/4000"), 12, "{counts}");
    let sent: u64 = ["echo", "burst", "server-ping", "extracted", "silent", "bin"]
        .iter()
        .map(|n| u64_at(step(&s, "chat", n), "/requests"))
        .sum();
    assert_eq!(sent, u64_at(&counts, "/text") + u64_at(&counts, "/binary"));
}

#[test]
fn ws_faults_are_classified_and_the_run_goes_on() {
    let ws = WsServer::start();
    let port = ws.port;
    let connect = |name: &str, path: &str, extra: &str| {
        format!(
            "- {{ ws: connect, name: {name}, url: \"ws://127.0.0.1:{port}{path}\", \
             subprotocols: [chat.v1], headers: {{ X-Token: secret }}{extra} }}"
        )
    };
    let steps = [
        // The server refuses the handshake: no token (403), no subprotocol (400).
        format!(
            "- {{ ws: connect, name: forbidden, url: \"ws://127.0.0.1:{port}/chat\", \
             subprotocols: [chat.v1] }}"
        ),
        format!(
            "- {{ ws: connect, name: no-subprotocol, url: \"ws://127.0.0.1:{port}/chat\", \
             headers: {{ X-Token: secret }} }}"
        ),
        connect("c-malformed", "/malformed", ""),
        "- { ws: send, name: s-malformed, text: go }".into(),
        "- { ws: receive, name: malformed }".into(),
        // A send with no socket (the failure above dropped it).
        "- { ws: send, name: no-socket, text: go }".into(),
        connect("c-oversized", "/oversized", ""),
        "- { ws: send, name: s-oversized, text: go }".into(),
        "- { ws: receive, name: oversized }".into(),
        connect("c-allowed", "/oversized", ", max_message: 4194304"),
        "- { ws: send, name: s-allowed, text: go }".into(),
        "- { ws: receive, name: allowed, check: { body_size: 2097152 } }".into(),
        connect("c-cut", "/cut", ""),
        "- { ws: send, name: s-cut, text: go }".into(),
        "- { ws: receive, name: cut }".into(),
        connect("c-bye", "/bye", ""),
        "- { ws: send, name: s-bye, text: go }".into(),
        "- { ws: receive, name: bye }".into(),
        connect("c-ok", "/chat", ""),
        "- { ws: send, name: ok, text: \"echo 1\", await: { match: echo }, check: { body_contains: \"echo 1\" } }".into(),
        "- { ws: close }".into(),
    ];
    let plan = format!(
        "target: http://127.0.0.1:{port}\nscenarios:\n  - name: faults\n    load: {{ vus: 2, iterations: 3 }}\n    steps:\n{}\n",
        steps
            .iter()
            .map(|s| format!("      {s}\n"))
            .collect::<String>()
    );
    let dir = temp_dir("ws-faults");
    let path = write_plan(&dir, &plan);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    let class = |name: &str, class: &str| {
        u64_at(
            step(&s, "faults", name),
            &format!("/failures_by_class/{class}"),
        )
    };
    assert_eq!(class("forbidden", "http_4xx"), 6, "{s:#}");
    assert_eq!(
        u64_at(step(&s, "faults", "forbidden"), "/status_codes/403"),
        6
    );
    assert_eq!(class("no-subprotocol", "http_4xx"), 6, "{s:#}");
    assert_eq!(class("malformed", "bad_response"), 6, "{s:#}");
    assert_eq!(class("no-socket", "closed_early"), 6, "{s:#}");
    assert_eq!(class("oversized", "bad_response"), 6, "{s:#}");
    assert_eq!(
        u64_at(step(&s, "faults", "allowed"), "/failures"),
        0,
        "{s:#}"
    );
    assert_eq!(class("cut", "closed_early"), 6, "{s:#}");
    assert_eq!(class("bye", "closed_early"), 6, "{s:#}");
    for ok in ["ok", "ws close", "c-ok", "c-cut", "c-bye", "s-cut", "s-bye"] {
        assert_eq!(
            u64_at(step(&s, "faults", ok), "/failures"),
            0,
            "{ok}: {s:#}"
        );
        assert_eq!(
            u64_at(step(&s, "faults", ok), "/requests"),
            6,
            "{ok}: {s:#}"
        );
    }
    let counts = ws.finish();
    // Two rejected handshakes per iteration (403 counted by the server; 400 by websockets).
    assert_eq!(u64_at(&counts, "/rejected"), 6, "{counts}");
    // malformed, oversized twice, cut, bye, ok: six accepted sockets per iteration.
    assert_eq!(u64_at(&counts, "/connections"), 6 * 6, "{counts}");
    assert_eq!(u64_at(&counts, "/closes/1000"), 6, "{counts}");
}

#[test]
fn wss_uses_the_plans_tls_settings() {
    let dir = temp_dir("wss");
    // A CA onrush trusts only through `http.tls.ca_file`, and a server certificate it signed.
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "ws test CA");
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
    let file = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let ca_file = file("ca.pem", ca.pem());
    let cert_file = file("server.pem", cert.pem());
    let key_file = file("server.key", key.serialize_pem());
    let ws = WsServer::start_with(&[
        ("WS_SERVER_CERT", cert_file.as_path()),
        ("WS_SERVER_KEY", key_file.as_path()),
    ]);
    let steps = format!(
        "      - {{ ws: connect, url: \"wss://localhost:{port}/chat\", headers: {{ X-Token: secret }}, subprotocols: [chat.v1] }}\n      - {{ ws: send, text: \"echo tls\", await: {{ match: \"echo tls\" }} }}\n      - {{ ws: close }}\n",
        port = ws.port
    );
    let plan = format!(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: trusted\n    http: {{ tls: {{ ca_file: \"{ca}\" }} }}\n    load: {{ vus: 2, iterations: 2 }}\n    steps:\n{steps}  - name: untrusted\n    load: {{ vus: 1, iterations: 2 }}\n    steps:\n{steps}",
        ca = ca_file.display()
    );
    let path = write_plan(&dir, &plan);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    for name in ["ws connect", "ws send", "ws close"] {
        let st = step(&s, "trusted", name);
        assert_eq!(u64_at(st, "/requests"), 4, "{name}: {st:#}");
        assert_eq!(u64_at(st, "/failures"), 0, "{name}: {st:#}");
    }
    let connect = step(&s, "trusted", "ws connect");
    assert_eq!(
        u64_at(connect, "/handshakes/full") + u64_at(connect, "/handshakes/resumed"),
        4,
        "{connect:#}"
    );
    let untrusted = step(&s, "untrusted", "ws connect");
    assert_eq!(
        u64_at(untrusted, "/failures_by_class/tls_certificate_unknown"),
        2,
        "{untrusted:#}"
    );
    let counts = ws.finish();
    assert_eq!(u64_at(&counts, "/connections"), 4, "{counts}");
    assert_eq!(u64_at(&counts, "/closes/1000"), 4, "{counts}");
}

#[test]
fn a_ws_step_with_no_socket_is_a_plan_error_with_its_line() {
    let dir = temp_dir("ws-plan-error");
    let path = write_plan(
        &dir,
        "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - { get: / }\n      - { ws: receive, count: 2 }\n",
    );
    let output = onrush()
        .args(["run", path.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let shown = text(&output);
    assert!(shown.contains("plan.yaml:7:"), "{shown}");
    assert!(shown.contains("no `ws: connect` before it"), "{shown}");
}

#[test]
fn a_socket_lives_across_iterations_unless_the_scope_is_per_iteration() {
    let ws = WsServer::start();
    let steps = format!(
        "      - once:\n          - {{ ws: connect, url: \"ws://127.0.0.1:{port}/chat\", headers: {{ X-Token: secret }}, subprotocols: [chat.v1] }}\n      - {{ ws: send, name: echo, text: \"echo ${{iteration}}\", await: {{ match: echo }} }}\n      - {{ think: 10ms }}\n",
        port = ws.port
    );
    let plan = format!(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: kept\n    load: {{ vus: 2, iterations: 5 }}\n    steps:\n{steps}  - name: per-iteration\n    http: {{ connections: per_iteration }}\n    load: {{ vus: 1, iterations: 3 }}\n    steps:\n{steps}"
    );
    let dir = temp_dir("ws-scopes");
    let path = write_plan(&dir, &plan);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    let kept = step(&s, "kept", "echo");
    assert_eq!(u64_at(kept, "/requests"), 10, "{kept:#}");
    assert_eq!(u64_at(kept, "/failures"), 0, "{kept:#}");
    assert_eq!(u64_at(scenario(&s, "kept"), "/connections_opened"), 2);
    // per_iteration: the socket opened in the first iteration is closed at its end.
    let per = step(&s, "per-iteration", "echo");
    assert_eq!(u64_at(per, "/failures"), 2, "{per:#}");
    assert_eq!(u64_at(per, "/failures_by_class/closed_early"), 2, "{per:#}");
    let counts = ws.finish();
    assert_eq!(u64_at(&counts, "/connections"), 3, "{counts}");
    assert_eq!(u64_at(&counts, "/text"), 10 + 1, "{counts}");
}

#[test]
fn messages_longer_than_the_read_buffers_arrive_whole_both_ways() {
    // Longer than onrush's 8 KiB socket read buffer (onrush-proto-ws socket.rs): each message
    // spans many reads and TCP segments each way. A template expands to at most 1 MiB, and the
    // default `max_message` is 1 MiB. Once uncompressed, once with permessage-deflate (the
    // default), where the wire carries a fraction of the bytes and both sides inflate them whole.
    const TEXT: usize = 1_000_000;
    const BINARY: usize = 100_000;
    let ws = WsServer::start();
    let hex = (0..BINARY)
        .map(|i| format!("{:02x}", i % 251))
        .collect::<Vec<_>>()
        .join(" ");
    // The server echoes "echo ..." and reverses binary messages; the marker at the text's end
    // is matched, so the whole message has come when the step passes.
    let scenario = |name: &str, compression: &str| {
        format!(
            "  - name: {name}\n    load: {{ vus: 2, iterations: 2 }}\n    steps:\n      - {{ ws: connect, url: \"ws://127.0.0.1:{port}/chat\", headers: {{ X-Token: secret }}, subprotocols: [chat.v1]{compression} }}\n      - {{ ws: send, name: text, text: \"echo {x} end ${{iteration}}\", await: {{ match: \"x end [0-9]$\" }}, check: {{ body_size: {text_size} }} }}\n      - {{ ws: send, name: binary, binary_hex: \"{hex}\", await: {{ count: 1 }}, check: {{ body_size: {BINARY} }} }}\n      - {{ ws: send, name: small, text: \"echo after\", await: {{ match: \"^echo after$\" }} }}\n      - {{ ws: close }}\n",
            port = ws.port,
            x = "x".repeat(TEXT),
            text_size = TEXT + "echo ".len() + " end 0".len(),
        )
    };
    let plan = format!(
        "target: http://127.0.0.1:9\nscenarios:\n{}{}",
        scenario("plain", ", compression: none"),
        scenario("deflate", "")
    );
    let dir = temp_dir("ws-large");
    let path = write_plan(&dir, &plan);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    for scenario in ["plain", "deflate"] {
        for name in ["text", "binary", "small", "ws close"] {
            let st = step(&s, scenario, name);
            assert_eq!(u64_at(st, "/requests"), 4, "{scenario} {name}: {st:#}");
            assert_eq!(u64_at(st, "/failures"), 0, "{scenario} {name}: {st:#}");
        }
    }
    assert_eq!(u64_at(&s, "/totals/checks/fails"), 0, "{s:#}");
    let text = step(&s, "plain", "text");
    assert!(u64_at(text, "/bytes_out") >= 4 * TEXT as u64, "{text:#}");
    assert!(u64_at(text, "/bytes_in") >= 4 * TEXT as u64, "{text:#}");
    // A million x's deflate to a few KB each way.
    let text = step(&s, "deflate", "text");
    assert!(
        u64_at(text, "/bytes_out") < 4 * TEXT as u64 / 50,
        "{text:#}"
    );
    assert!(u64_at(text, "/bytes_in") < 4 * TEXT as u64 / 50, "{text:#}");
    let counts = ws.finish();
    assert_eq!(u64_at(&counts, "/deflate"), 4, "{counts}");
    assert_eq!(u64_at(&counts, "/connections"), 8, "{counts}");
    // The server received the messages whole, as sent (after inflating the compressed ones).
    assert_eq!(
        u64_at(&counts, "/longest/text"),
        (TEXT + "echo ".len() + " end 0".len()) as u64,
        "{counts}"
    );
    assert_eq!(
        u64_at(&counts, "/longest/binary"),
        BINARY as u64,
        "{counts}"
    );
    assert_eq!(u64_at(&counts, "/text"), 2 * 4 * 2, "{counts}");
    assert_eq!(u64_at(&counts, "/closes/1000"), 8, "{counts}");
}

#[test]
fn compression_follows_what_the_server_answered() {
    // The server resets its contexts after each message and asks the client to (and uses a
    // 1 KiB window): had onrush kept its compressor's context, the repeated messages below
    // would refer back to earlier ones, and the server could not inflate them.
    let ws = WsServer::start_with(&[("WS_DEFLATE", std::path::Path::new("no_context_takeover"))]);
    let quote = r#"{\"symbol\":\"ACME\",\"bid\":101.25,\"ask\":101.5}"#.repeat(20);
    let plan = format!(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: reset\n    load: {{ vus: 2, iterations: 3 }}\n    steps:\n      - {{ ws: connect, url: \"ws://127.0.0.1:{port}/chat\", headers: {{ X-Token: secret }}, subprotocols: [chat.v1], check: {{ header: sec-websocket-extensions, contains: client_no_context_takeover }} }}\n      - {{ ws: send, name: one, text: \"echo {quote} 1\", await: {{ match: \" 1$\" }} }}\n      - {{ ws: send, name: two, text: \"echo {quote} 2\", await: {{ match: \" 2$\" }} }}\n      - {{ ws: send, name: three, text: \"echo {quote} 3\", await: {{ match: \" 3$\" }}, check: {{ body_contains: ACME }} }}\n      - {{ ws: close }}\n",
        port = ws.port
    );
    let dir = temp_dir("ws-deflate-reset");
    let path = write_plan(&dir, &plan);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    for name in ["ws connect", "one", "two", "three", "ws close"] {
        let st = step(&s, "reset", name);
        assert_eq!(u64_at(st, "/requests"), 6, "{name}: {st:#}");
        assert_eq!(u64_at(st, "/failures"), 0, "{name}: {st:#}");
    }
    assert_eq!(u64_at(&s, "/totals/checks/fails"), 0, "{s:#}");
    // Compressed on the wire: each message is ~1 KB of text.
    let two = step(&s, "reset", "two");
    assert!(u64_at(two, "/bytes_out") < 6 * 400, "{two:#}");
    let counts = ws.finish();
    assert_eq!(u64_at(&counts, "/deflate"), 6, "{counts}");
    assert_eq!(u64_at(&counts, "/text"), 18, "{counts}");
    assert_eq!(u64_at(&counts, "/closes/1000"), 6, "{counts}");
}

#[test]
fn the_upgrade_carries_the_vus_cookies_and_keeps_those_it_is_given() {
    // A browser's one cookie jar: what the HTTP login set goes with the upgrade (the hosts
    // match, 127.0.0.1; cookies ignore ports), and what the upgrade's response set goes with
    // the next HTTP request. `http.cookies: off` sends none.
    let ws = WsServer::start();
    let http = Server::start();
    let steps = |check: &str| {
        format!(
            "      - {{ get: \"/cookies/set?session=s${{vu}}\" }}\n      - {{ ws: connect, url: \"ws://127.0.0.1:{port}/chat\", headers: {{ X-Token: secret }}, subprotocols: [chat.v1] }}\n      - {{ ws: close }}\n      - {{ get: /cookies, name: after{check} }}\n",
            port = ws.port
        )
    };
    let plan = format!(
        "target: http://127.0.0.1:{http}\nscenarios:\n  - name: browser\n    load: {{ vus: 2, iterations: 2 }}\n    steps:\n{browser}  - name: off\n    http: {{ cookies: off }}\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n{off}",
        http = http.port(),
        browser = steps(", check: { body_contains: upgraded }"),
        off = steps(""),
    );
    let dir = temp_dir("ws-cookies");
    let path = write_plan(&dir, &plan);
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    assert_eq!(u64_at(&s, "/totals/checks/fails"), 0, "{s:#}");
    let counts = ws.finish();
    let cookies = &counts["cookies"];
    // The first iteration's upgrade carries the login's cookie; the second's also the one the
    // first upgrade set.
    assert_eq!(u64_at(cookies, "/session=s1"), 1, "{counts}");
    assert_eq!(u64_at(cookies, "/session=s2"), 1, "{counts}");
    let with_both = cookies
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.contains("session=s") && k.contains("upgraded=yes"))
        .map(|(_, v)| v.as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(with_both, 2, "{counts}");
    // Five upgrades, four with cookies: the `off` scenario's sent none.
    assert_eq!(u64_at(&counts, "/connections"), 5, "{counts}");
    let sent: u64 = cookies
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(sent, 4, "{counts}");
}
