//! Faults of the target are counted and classified; bad input gets exit code 2 and a precise
//! message; Ctrl-C still writes results.

use crate::common;
use common::*;

use std::time::{Duration, Instant};

#[test]
fn target_down_is_classified_and_the_run_completes() {
    // Bind then drop a listener: nothing listens on that port any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = temp_dir("down");
    let output = onrush()
        .args([
            "quick",
            &format!("http://127.0.0.1:{port}/"),
            "-n",
            "20",
            "-c",
            "2",
            "--quiet",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(4),
        "exit 4: no request succeeded\n{}",
        text(&output)
    );
    let s = summary(&out);
    assert_eq!(u64_at(&s, "/totals/requests"), 20);
    assert_eq!(u64_at(&s, "/totals/failures_by_class/connect_refused"), 20);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("connect_refused"), "{}", text(&output));
}

#[test]
fn http_errors_are_failures_unless_expected() {
    let server = Server::start();
    let dir = temp_dir("status");
    let plan = write_plan(
        &dir,
        &format!(
            "target: http://127.0.0.1:{}\nscenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 5 }}\n    steps:\n      - {{ name: missing, get: /status/404 }}\n      - {{ name: broken, get: /status/503 }}\n      - {{ name: expected, get: /status/404, expect_status: [404] }}\n      - {{ name: wrong, get: /status/200, expect_status: [201] }}\n",
            server.port()
        ),
    );
    let output = onrush()
        .args(["run", "-q", "--out"])
        .arg(dir.join("o"))
        .arg(&plan)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let s = summary(&dir.join("o"));
    assert_eq!(
        u64_at(step(&s, "s", "missing"), "/failures_by_class/http_4xx"),
        5
    );
    assert_eq!(
        u64_at(step(&s, "s", "broken"), "/failures_by_class/http_5xx"),
        5
    );
    assert_eq!(u64_at(step(&s, "s", "expected"), "/failures"), 0);
    assert_eq!(
        u64_at(
            step(&s, "s", "wrong"),
            "/failures_by_class/unexpected_status"
        ),
        5
    );
}

#[test]
fn timeouts_are_classified() {
    let server = Server::start();
    let out = temp_dir("timeout");
    let output = onrush()
        .args([
            "quick",
            &server.url("/delay/2000"),
            "-n",
            "4",
            "-c",
            "2",
            "--timeout",
            "200ms",
            "-q",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(4), "{}", text(&output));
    let s = summary(&out);
    assert_eq!(u64_at(&s, "/totals/failures_by_class/timeout"), 4);
}

#[test]
fn bad_plans_exit_2_with_file_line_and_field() {
    let dir = temp_dir("bad");
    let cases: &[(&str, &str, &str)] = &[
        ("unknown key", "target: http://127.0.0.1:1\nscenarios:\n  - name: a\n    load: { vus: 1, iteratons: 1 }\n    steps: [ { get: / } ]\n", "iteratons"),
        ("bad duration", "target: http://127.0.0.1:1\nscenarios:\n  - name: a\n    load: { vus: 1, duration: 5 }\n    steps: [ { get: / } ]\n", "duration"),
        ("missing max_vus", "target: http://127.0.0.1:1\nscenarios:\n  - name: a\n    load: { rate: 10/s, duration: 1s }\n    steps: [ { get: / } ]\n", "max_vus"),
        ("unknown variable", "target: http://127.0.0.1:1\nscenarios:\n  - name: a\n    load: { vus: \"${nope_not_set_anywhere}\", iterations: 1 }\n    steps: [ { get: / } ]\n", "nope_not_set_anywhere"),
        ("no method", "target: http://127.0.0.1:1\nscenarios:\n  - name: a\n    load: { vus: 1, iterations: 1 }\n    steps:\n      - { name: x }\n", "steps"),
        ("yaml syntax", "target: http://127.0.0.1:1\nscenarios:\n  - name: a\n    load: { vus: 1, iterations: 1\n    steps: [ { get: / } ]\n", ""),
        ("both models", "target: http://127.0.0.1:1\nscenarios:\n  - name: a\n    load: { vus: 1, rate: 5/s, duration: 1s, max_vus: 2 }\n    steps: [ { get: / } ]\n", "rate"),
        ("missing body file", "target: http://127.0.0.1:1\nscenarios:\n  - name: a\n    load: { vus: 1, iterations: 1 }\n    steps: [ { post: /upload, body_file: no-such-file.bin } ]\n", "no-such-file.bin"),
        ("negative vus", "target: http://127.0.0.1:1\nscenarios:\n  - name: a\n    load: { vus: -3, iterations: 1 }\n    steps: [ { get: / } ]\n", "vus"),
        ("path without slash", "target: http://127.0.0.1:1\nscenarios:\n  - name: a\n    load: { vus: 1, iterations: 1 }\n    steps: [ { get: index.html } ]\n", "index.html"),
    ];
    for (what, plan_text, needle) in cases {
        let plan = write_plan(&dir, plan_text);
        for command in ["validate", "run"] {
            let output = onrush().arg(command).arg(&plan).output().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{what}: {}", text(&output));
            assert!(
                stderr.contains("plan.yaml:"),
                "{what}: names the file: {stderr}"
            );
            let after = stderr.split("plan.yaml:").nth(1).unwrap_or("");
            let line: String = after.chars().take_while(char::is_ascii_digit).collect();
            assert!(
                !line.is_empty() && after[line.len()..].starts_with(':'),
                "{what}: gives line:column: {stderr}"
            );
            assert!(
                stderr.contains(needle),
                "{what}: mentions {needle:?}: {stderr}"
            );
            assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        }
    }
}

#[test]
fn sigint_stops_quickly_and_writes_results() {
    let server = Server::start();
    let out = temp_dir("sigint");
    let mut child = onrush()
        .args([
            "quick",
            &server.url("/delay/1"),
            "-c",
            "10",
            "-d",
            "60s",
            "-q",
            "--out",
        ])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    let sent = Instant::now();
    // SAFETY: kill with a PID of a child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
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
    let took = sent.elapsed();
    assert!(took < Duration::from_secs(2), "stopped in {took:?}");
    assert_eq!(status.code(), Some(130));
    let s = summary(&out);
    assert_eq!(s["interrupted"], true);
    let requests = u64_at(&s, "/totals/requests");
    assert!(requests > 100, "{requests}");
    let served = server.stats().requests;
    // Requests cut off in flight (at most one per VU) are counted as `interrupted`, whether
    // the server had answered them or not; every other request was served.
    let cut = s["totals"]["failures_by_class"]["interrupted"]
        .as_u64()
        .unwrap_or(0);
    assert!(cut <= 10, "{cut}");
    assert!(
        requests - cut <= served && served <= requests,
        "served {served}, counted {requests} ({cut} interrupted)"
    );
}

#[test]
fn zero_connections_is_an_error_like_zero_vus() {
    let server = Server::start();
    for extra in [&["-d", "1s"][..], &["-n", "10"], &["-r", "10", "-d", "1s"]] {
        let out = temp_dir("zero-c");
        let output = onrush()
            .args(["quick", &server.url("/"), "-c", "0", "--out"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{extra:?}: {}",
            text(&output)
        );
        assert!(
            stderr.contains("-c/--connections 0") && stderr.contains("-c 1"),
            "{stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(!out.join("summary.json").exists(), "nothing ran");
    }
    assert_eq!(server.stats().requests, 0);
}
