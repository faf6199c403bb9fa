//! How a run ends: the end of a duration stops VUs between requests (in loops and think times),
//! `graceful_stop` bounds the wait for requests in flight, and requests cut by any stop
//! (graceful stop over, Ctrl-C) are counted as `interrupted`.

use crate::common::*;

use std::process::Stdio;
use std::time::{Duration, Instant};

#[test]
fn a_duration_bounds_loops_thinks_and_slow_requests() {
    let server = Server::start();
    let dir = temp_dir("duration-bounds");
    // Each iteration alone would outlast the 1 s duration many times over.
    let plan = write_plan(
        &dir,
        &format!(
            r#"
target: http://127.0.0.1:{}
scenarios:
  - name: looping
    load: {{ vus: 2, duration: 1s }}
    steps:
      - loop: {{ count: 100000, steps: [ {{ get: / }} ] }}
  - name: thinking
    load: {{ vus: 2, duration: 1s }}
    steps:
      - get: /
      - think: 10s
  - name: slow
    load: {{ vus: 2, duration: 1s }}
    steps:
      - loop: {{ count: 100, steps: [ {{ get: /delay/100 }} ] }}
"#,
            server.port()
        ),
    );
    let started = Instant::now();
    let s = run_expect(0, &["run", plan.to_str().unwrap()], &dir.join("out"));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(4), "a 1 s plan ran {took:?}");
    assert!(f64_at(&s, "/run/duration_s") < 1.5, "{s:#}");
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    // One request per VU, then the think is cut by the end of the duration.
    assert_eq!(u64_at(scenario(&s, "thinking"), "/requests"), 2);
    // The requests in flight at the end finished (well within the default graceful stop).
    let slow = u64_at(scenario(&s, "slow"), "/requests");
    assert!((10..=24).contains(&slow), "{slow}");
    // No iteration completed: none is counted.
    assert_eq!(u64_at(&s, "/totals/iterations"), 0, "{s:#}");
}

#[test]
fn graceful_stop_cuts_requests_still_in_flight_counts_them_and_shows_in_the_status() {
    let rogue = RogueServer::start();
    let dir = temp_dir("graceful-stop");
    let plan = write_plan(
        &dir,
        &format!(
            r#"
target: {}
http: {{ timeout: 60s }}
scenarios:
  - name: s
    load: {{ vus: 3, duration: 1s, graceful_stop: 1s }}
    steps:
      - {{ name: hung, get: "/hang/${{vu}}" }}
"#,
            rogue.url("")
        ),
    );
    let out = dir.join("out");
    let started = Instant::now();
    // Not --quiet: the live status is checked too.
    let output = onrush()
        .args(["run", plan.to_str().unwrap(), "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(output.status.code(), Some(4), "{}", text(&output));
    assert!(took < Duration::from_secs(5), "ran {took:?}");
    let s = summary(&out);
    assert_eq!(u64_at(&s, "/totals/requests"), 3, "{s:#}");
    assert_eq!(
        s["totals"]["failures_by_class"],
        serde_json::json!({ "interrupted": 3 }),
        "{s:#}"
    );
    // Cut at the end of the graceful stop: they had waited 2 s.
    let max = f64_at(&s, "/totals/latency_ms/max");
    assert!((1800.0..3000.0).contains(&max), "{max}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("time is up") && stderr.contains("graceful_stop 1s"),
        "{stderr}"
    );
    assert!(stderr.contains("stopping]"), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("interrupted"));
}

#[test]
fn ctrl_c_counts_the_requests_in_flight_as_interrupted() {
    let rogue = RogueServer::start();
    let out = temp_dir("sigint-hung");
    let mut child = onrush()
        .args([
            "quick",
            &rogue.url("/hang/x"),
            "-c",
            "4",
            "-d",
            "60s",
            "-q",
            "--out",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the server holds all four requests.
    let deadline = Instant::now() + Duration::from_secs(10);
    while rogue.received() < 4 {
        assert!(Instant::now() < deadline, "the requests never arrived");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill with the PID of a child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let sent = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(5),
            "onrush did not stop after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    let s = summary(&out);
    assert_eq!(s["interrupted"], true);
    assert_eq!(u64_at(&s, "/totals/requests"), 4, "{s:#}");
    assert_eq!(
        s["totals"]["failures_by_class"],
        serde_json::json!({ "interrupted": 4 }),
        "{s:#}"
    );
    let waited = f64_at(&s, "/totals/latency_ms/min");
    assert!(
        waited >= 400.0,
        "they had waited since before the signal: {waited} ms"
    );
}
