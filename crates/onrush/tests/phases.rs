//! End to end: a plan's `setup:` and `teardown:`, against an HTTP server onrush did not write
//! (Python's http.server, tests/servers/record_http_server.py) that counts every request by
//! path and by `Authorization` header, and commands that record their own runs.

use crate::common;
use crate::exec::{lines, RecordServer};
use common::*;

use std::time::{Duration, Instant};

fn plan(port: u16, load: &str, thresholds: &str) -> String {
    format!(
        r#"
target: http://127.0.0.1:{port}
setup:
  steps:
    - {{ name: login, post: /login, extract: {{ token: {{ jsonpath: "$.token" }} }} }}
    - {{ name: note, shell: "echo setup >> phases.txt" }}
teardown:
  steps:
    - {{ name: logout, delete: /session, headers: {{ Authorization: "Bearer ${{token}}" }} }}
    - {{ name: note, shell: "echo teardown >> phases.txt" }}
scenarios:
  - name: load
    load: {load}
    steps:
      - {{ name: item, get: /item, headers: {{ Authorization: "Bearer ${{token}}" }} }}
      - {{ think: 20ms }}
{thresholds}
"#
    )
}

#[test]
fn setup_token_reaches_every_vu_and_teardown_runs_after_a_threshold_abort() {
    let server = RecordServer::start();
    let dir = temp_dir("phases");
    // `requests < 10` is lost within the first second: abort_on_fail stops the load early.
    let text = plan(
        server.port,
        "{ vus: 4, duration: 20s }",
        "thresholds:\n  - { threshold: \"requests < 10\", abort_on_fail: true }",
    );
    let path = write_plan(&dir, &text);
    let started = Instant::now();
    let output = onrush()
        .current_dir(&dir)
        .args(["run", path.to_str().unwrap(), "--quiet", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text_of(&output));
    assert!(started.elapsed() < Duration::from_secs(15), "not aborted");
    let s = summary(&dir.join("out"));
    let load = u64_at(&s, "/totals/requests");
    assert!(load >= 10, "{s:#}");
    // The load's totals are the load's only: no login, logout or command in them.
    assert_eq!(u64_at(scenario(&s, "load"), "/requests"), load, "{s:#}");
    assert!(s["steps"]
        .as_array()
        .unwrap()
        .iter()
        .all(|st| st["scenario"] == "load"));
    // Server side: one login, and every load request carried its token.
    let counts = server.counts();
    let n = |key: &str| counts.get(key).and_then(|v| v.as_u64()).unwrap_or(0);
    assert_eq!(n("path /login"), 1, "{counts:?}");
    assert_eq!(n("path /item"), load, "{counts:?}");
    assert_eq!(n("path /session"), 1, "teardown's logout: {counts:?}");
    assert_eq!(n("auth Bearer tok-1"), load + 1, "{counts:?}");
    // Setup and teardown each ran once, in order, with results of their own.
    assert_eq!(lines(&dir.join("phases.txt")), ["setup", "teardown"]);
    for phase in ["setup", "teardown"] {
        let p = summary(&dir.join("out").join(phase));
        assert_eq!(u64_at(&p, "/totals/requests"), 2, "{phase}: {p:#}");
        assert_eq!(u64_at(&p, "/totals/failures"), 0, "{phase}: {p:#}");
    }
}

#[test]
fn teardown_runs_after_sigterm() {
    let server = RecordServer::start();
    let dir = temp_dir("phases-sigterm");
    let path = write_plan(&dir, &plan(server.port, "{ vus: 2, duration: 30s }", ""));
    let mut child = onrush()
        .current_dir(&dir)
        .args(["run", path.to_str().unwrap(), "--quiet", "--out"])
        .arg(dir.join("out"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signals the child this test started, by its pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "onrush did not stop after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    assert_eq!(lines(&dir.join("phases.txt")), ["setup", "teardown"]);
    assert_eq!(
        server
            .counts()
            .get("path /session")
            .and_then(|v| v.as_u64()),
        Some(1)
    );
    let s = summary(&dir.join("out"));
    assert_eq!(s["interrupted"], true, "{s:#}");
}

#[test]
fn a_failing_setup_stops_the_run_with_a_clear_message() {
    let server = RecordServer::start();
    let dir = temp_dir("phases-fail");
    let text = format!(
        r#"
target: http://127.0.0.1:{port}
setup:
  steps:
    - {{ name: prepare, shell: "echo no database >&2; exit 2" }}
    - {{ name: never, shell: "echo never >> phases.txt" }}
teardown:
  steps:
    - {{ name: note, shell: "echo teardown >> phases.txt" }}
scenarios:
  - name: load
    load: {{ vus: 1, iterations: 5 }}
    steps: [{{ get: /item }}]
"#,
        port = server.port
    );
    let path = write_plan(&dir, &text);
    let output = onrush()
        .current_dir(&dir)
        .args(["run", path.to_str().unwrap(), "--quiet", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let shown = text_of(&output);
    assert_eq!(output.status.code(), Some(3), "{shown}");
    assert!(
        shown.contains("setup failed: 1 of its 1 requests failed (1 unexpected_status)"),
        "{shown}"
    );
    assert!(shown.contains("the load did not run"), "{shown}");
    // Setup stopped at its failed step, the load never ran, teardown still cleaned up.
    assert_eq!(lines(&dir.join("phases.txt")), ["teardown"]);
    assert_eq!(server.counts().get("path /item"), None);
    let p = summary(&dir.join("out/setup"));
    assert_eq!(u64_at(&p, "/totals/failures"), 1, "{p:#}");
}

fn text_of(output: &std::process::Output) -> String {
    text(output)
}
