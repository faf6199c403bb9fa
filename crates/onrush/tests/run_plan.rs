//! End to end: plan files run against the built-in server, counts cross-checked with the server.

use crate::common;
use common::*;

#[test]
fn example_plan_counts_agree_with_the_server() {
    let server = Server::start();
    let out = temp_dir("example");
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/basic.yaml");
    let output = onrush()
        .args(["run", example, "--quiet", "--out"])
        .arg(&out)
        .env("PORT", server.port().to_string())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let s = summary(&out);
    let closed = scenario(&s, "closed");
    assert_eq!(
        u64_at(closed, "/requests"),
        300,
        "4 VUs x 25 iterations x 3 steps"
    );
    assert_eq!(u64_at(closed, "/iterations"), 100);
    for name in ["home", "bytes", "echo"] {
        assert_eq!(u64_at(step(&s, "closed", name), "/requests"), 100);
    }
    // per_vu (the default) keeps one connection per VU for the whole test.
    assert_eq!(u64_at(closed, "/connections_opened"), 4);
    let open = scenario(&s, "open");
    let open_iterations = u64_at(open, "/iterations");
    assert!(
        (980..=1000).contains(&open_iterations),
        "200/s for 5 s: {open_iterations}"
    );
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    let total = u64_at(&s, "/totals/requests");
    // An open iteration still in its 10 ms think when the 5 s are up made its request but is
    // cut there, uncounted (docs/plan.md, graceful_stop): a handful at most at 200/s.
    assert!(
        (300 + open_iterations..=300 + open_iterations + 10).contains(&total),
        "{total} requests, {open_iterations} open iterations"
    );
    assert_eq!(
        u64_at(step(&s, "open", "GET /delay/5"), "/requests") + 300,
        total
    );
    assert_eq!(
        server.stats().requests,
        total,
        "the server saw every request the summary counts"
    );
    // Unnamed steps are named after their method and unrendered path (checked above).
    assert!(out.join("intervals.jsonl").exists());
}

#[test]
fn connection_scopes_open_the_connections_they_promise() {
    for (scope, expected) in [("per_vu", 5), ("per_iteration", 50), ("per_request", 100)] {
        let server = Server::start();
        let plan = format!(
            "target: http://127.0.0.1:{{port}}\nhttp: {{ connections: {scope} }}\nscenarios:\n  - name: s\n    load: {{ vus: 5, iterations: 10 }}\n    steps:\n      - get: /\n      - get: /bytes/10\n"
        );
        let s = run_plan_text(&server, &format!("scope-{scope}"), &plan, &[]);
        assert_eq!(u64_at(&s, "/totals/requests"), 100);
        assert_eq!(
            server.stats().connections,
            expected,
            "{scope}: server-side count"
        );
        assert_eq!(
            u64_at(&s, "/totals/connections_opened"),
            expected,
            "{scope}: our count"
        );
    }
}

#[test]
fn loops_think_and_ramps_run() {
    let server = Server::start();
    let plan = r#"target: http://127.0.0.1:{port}
scenarios:
  - name: looped
    load: { vus: 2, iterations: 3, ramp_up: 200ms }
    steps:
      - loop:
          count: 4
          steps:
            - { name: inner, get: "/bytes/${iteration}" }
            - { think: 1ms..3ms }
      - { name: after, get: / }
  - name: staged
    load: { stages: [ { vus: 4, over: 1s }, { vus: 0, over: 1s } ] }
    steps:
      - { get: /delay/20 }
"#;
    let s = run_plan_text(&server, "loops", plan, &[]);
    assert_eq!(u64_at(step(&s, "looped", "inner"), "/requests"), 2 * 3 * 4);
    assert_eq!(u64_at(step(&s, "looped", "after"), "/requests"), 2 * 3);
    let staged = u64_at(scenario(&s, "staged"), "/iterations");
    // Ramping 0→4→0 over 2 s is on average 2 VUs for 2 s at ~20 ms per iteration: ~200.
    assert!((60..=260).contains(&staged), "staged iterations {staged}");
    assert_eq!(u64_at(&s, "/totals/failures"), 0);
}

#[test]
fn overrides_and_streamed_body_files() {
    let server = Server::start();
    let dir = temp_dir("bodyfile");
    let blob: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(dir.join("blob.bin"), &blob).unwrap();
    let plan = write_plan(
        &dir,
        &format!(
            "target: http://127.0.0.1:{}\nvars: {{ vus: 1 }}\nscenarios:\n  - name: up\n    load: {{ vus: \"${{vus}}\", iterations: 2 }}\n    steps:\n      - {{ name: upload, post: /upload, body_file: blob.bin, headers: {{ X-Vu: \"${{vu}}\" }} }}\n",
            server.port()
        ),
    );
    let s = run_expect(
        0,
        &["run", plan.to_str().unwrap(), "-D", "vus=3"],
        &dir.join("o"),
    );
    let upload = step(&s, "up", "upload");
    assert_eq!(
        u64_at(upload, "/requests"),
        6,
        "-D vus=3 overrides vars: 3 VUs x 2"
    );
    assert_eq!(u64_at(upload, "/failures"), 0);
    assert!(u64_at(upload, "/bytes_out") >= 6 * 3_000_000);
}

#[test]
fn schema_and_validate_work_without_a_target() {
    let output = onrush().arg("schema").output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let schema: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(schema.to_string().contains("max_vus"));
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/basic.yaml");
    let output = onrush().args(["validate", example]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
}

/// Any method token, from a plan (`method:` + `path:`) and from `quick -m`, reaches the server
/// as written (JMeter and k6 allow any; `-m PURGE` used to fail with a list of plan keys).
#[test]
fn any_http_method_is_sent_as_written() {
    let server = Server::start();
    let s = run_plan_text(
        &server,
        "purge",
        "target: http://127.0.0.1:{port}\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 3 }\n    steps:\n      - method: PURGE\n        path: /echo\n        check: [{ jsonpath: \"$.method\", equals: PURGE, name: purged }]\n      - { method: PROPFIND, path: /echo, check: [{ jsonpath: \"$.method\", equals: PROPFIND, name: found }] }\n",
        &[],
    );
    assert_eq!(u64_at(&s, "/totals/requests"), 6, "{s:#}");
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    assert!(step(&s, "s", "PURGE /echo").is_object(), "{s:#}");
    let out = temp_dir("quick-purge");
    let q = run_expect(
        0,
        &["quick", &server.url("/echo"), "-m", "PURGE", "-n", "4"],
        &out,
    );
    assert_eq!(u64_at(&q, "/totals/requests"), 4, "{q:#}");
    assert!(
        q.to_string().contains("PURGE /echo"),
        "the step is named after its method: {q:#}"
    );
}

/// The live status of a run bounded by iterations shows them done / planned, never `[1s/?]`;
/// a timed run's status never shows more time elapsed than its duration.
#[test]
fn live_status_shows_iterations_and_never_runs_past_the_duration() {
    let server = Server::start();
    let out = temp_dir("status-iterations");
    let output = onrush()
        .args([
            "quick",
            &server.url("/delay/20"),
            "-n",
            "150",
            "-c",
            "2",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with('[')).collect();
    assert!(!lines.is_empty(), "{stderr}");
    assert!(
        lines.iter().all(|l| l.contains("/150") && !l.contains('?')),
        "{stderr}"
    );

    let out = temp_dir("status-duration");
    let output = onrush()
        .args([
            "quick",
            &server.url("/delay/1"),
            "-d",
            "2s",
            "-c",
            "2",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for line in stderr.lines().filter(|l| l.starts_with('[')) {
        let shown: u64 = line[1..]
            .trim_start()
            .split('s')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(shown <= 2, "more elapsed than the duration: {line}");
    }
}
