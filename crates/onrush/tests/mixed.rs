//! End to end: one VU speaks three protocols in one iteration — an HTTP login whose fresh token
//! is extracted from its page, a gRPC call carrying it (in its metadata and its message), a WebSocket session
//! echoing it — under the open model, with thresholds on each step; the built-in server's own
//! counts agree with onrush's per protocol. (Each protocol is also tested alone against a
//! server onrush did not write: `grpc`, `ws`, `http2`, ….)

use crate::common::*;

use std::path::Path;

#[test]
fn http_login_then_grpc_with_its_token_then_websocket_in_one_open_model_iteration() {
    let dir = temp_dir("mixed");
    let protos = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/protos");
    let protos = protos.canonicalize().unwrap();
    let plan = write_plan(
        &dir,
        &format!(
            r#"
target: builtin
grpc:
  protos: ["{protos}/greeter.proto"]
  import_paths: ["{protos}"]
scenarios:
  - name: mixed
    load: {{ rate: 20/s, duration: 3s, max_vus: 30 }}
    steps:
      - name: login
        get: /login
        extract: {{ token: {{ regex: 'data-token="([^"]+)"' }} }}
      - grpc: builtin
        name: hello
        call: helloworld.Greeter/SayHello
        message: {{ name: "${{token}}" }}
        metadata: {{ authorization: "Bearer ${{token}}" }}
        timeout: 2s
        check: [ {{ jsonpath: "$.message", equals: "Hello, ${{token}}!" }} ]
      - {{ ws: connect, name: ws-open, url: "ws://builtin/ws/echo" }}
      - ws: send
        name: ws-echo
        text: "${{token}}"
        await: {{ count: 1, timeout: 2s }}
        check: [ {{ body_contains: "${{token}}" }} ]
      - {{ ws: close, name: ws-close }}
thresholds:
  - "login: failures == 0"
  - "login: p99 < 1s"
  - "hello: failures == 0"
  - "hello: p95 < 1s"
  - "ws-open: failures == 0"
  - "ws-echo: failures == 0"
  - "ws-echo: p99 < 1s"
  - "checks > 99.9%"
  - "dropped_iterations == 0"
"#,
            protos = protos.display()
        ),
    );
    let out = dir.join("out");
    let s = run_expect(0, &["run", plan.to_str().unwrap()], &out);
    let n = |name: &str| u64_at(step(&s, "mixed", name), "/requests");
    // Exactly the schedule: 20/s for 3 s, none dropped, each iteration every step once.
    assert_eq!(u64_at(scenario(&s, "mixed"), "/iterations"), 60, "{s:#}");
    for name in ["login", "hello", "ws-open", "ws-echo", "ws-close"] {
        assert_eq!(n(name), 60, "{name}: {s:#}");
    }
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    // Every threshold was judged, on its own step, and passed.
    let judged = s["thresholds"].as_array().expect("thresholds recorded");
    assert_eq!(judged.len(), 9, "{s:#}");
    assert!(judged.iter().all(|t| t["passed"] == true), "{s:#}");
    // The server's side, per protocol.
    let server: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("builtin_server.json")).unwrap())
            .unwrap();
    assert_eq!(u64_at(&server, "/grpc_calls"), 60, "{server:#}");
    assert_eq!(u64_at(&server, "/ws_connections"), 60, "{server:#}");
    assert_eq!(u64_at(&server, "/ws_messages"), 60, "{server:#}");
}
