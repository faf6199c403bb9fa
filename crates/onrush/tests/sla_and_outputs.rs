//! Thresholds decide the exit code; results leave onrush as JUnit, Prometheus, CSV; the doctor
//! reports on the host.

use crate::common;
use common::*;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

const PLAN: &str = "target: http://127.0.0.1:{port}\nthresholds: [THRESHOLDS]\nscenarios:\n  - name: s\n    load: { vus: 2, iterations: 20 }\n    steps:\n      - { name: home, get: / }\n";

#[test]
fn passing_thresholds_exit_0_and_are_recorded() {
    let server = Server::start();
    let plan = PLAN.replace(
        "THRESHOLDS",
        "\"p99 < 5s\", \"failure_rate < 1%\", \"home: max < 10s\", \"generator: healthy\"",
    );
    let s = run_plan_text(&server, "sla-pass", &plan, &[]);
    let results = s["thresholds"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    assert!(results.iter().all(|r| r["passed"] == true), "{results:#?}");
}

#[test]
fn a_failing_threshold_exits_1_and_writes_junit() {
    let server = Server::start();
    let dir = temp_dir("sla-fail");
    let plan = write_plan(
        &dir,
        &PLAN
            .replace("{port}", &server.port().to_string())
            .replace("THRESHOLDS", "\"p99 < 1us\", \"failure_rate < 1%\""),
    );
    let junit = dir.join("junit.xml");
    let args = [
        "run",
        plan.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ];
    let s = run_expect(1, &args, &dir.join("out"));
    let results = s["thresholds"].as_array().unwrap();
    assert_eq!(results[0]["passed"], false);
    assert_eq!(results[1]["passed"], true);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<testsuite") && xml.contains("<failure"),
        "{xml}"
    );
}

#[test]
fn abort_on_fail_stops_the_test_early() {
    let server = Server::start();
    let plan = "target: http://127.0.0.1:{port}\nthresholds:\n  - { threshold: \"p50 < 1ms\", abort_on_fail: true, grace: 1s }\nscenarios:\n  - name: slow\n    load: { rate: 20/s, duration: 30s, max_vus: 10 }\n    steps: [ { get: /delay/20 } ]\n";
    let dir = temp_dir("abort");
    let path = write_plan(&dir, &plan.replace("{port}", &server.port().to_string()));
    let started = Instant::now();
    let s = run_expect(1, &["run", path.to_str().unwrap()], &dir.join("out"));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "stopped early: {:?}",
        started.elapsed()
    );
    assert!(
        s["aborted_by"]["threshold"]
            .as_str()
            .unwrap()
            .contains("p50"),
        "{s:#}"
    );
}

#[test]
fn prometheus_is_scraped_during_the_run_and_csv_exports_after() {
    let server = Server::start();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = temp_dir("prom");
    let mut child = onrush()
        .args([
            "quick",
            &server.url("/"),
            "-c",
            "2",
            "-d",
            "3s",
            "-q",
            "--metrics-addr",
        ])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2200));
    let mut conn =
        std::net::TcpStream::connect(("127.0.0.1", port)).expect("the metrics endpoint listens");
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut body = String::new();
    conn.read_to_string(&mut body).unwrap();
    assert!(child.wait().unwrap().success());
    assert!(body.starts_with("HTTP/1.1 200"), "{body}");
    let line = body
        .lines()
        .find(|l| l.starts_with("onrush_requests_total{"))
        .unwrap_or_else(|| panic!("{body}"));
    let value: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(value > 0.0, "{line}");
    // The run's own labels, so that a dashboard tells runs apart.
    assert!(
        line.starts_with("onrush_requests_total{run_id=\"quick-")
            && line.contains(",plan=\"quick\","),
        "{line}"
    );

    let output = onrush()
        .args(["export"])
        .arg(&out)
        .arg("--csv")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    let csv = String::from_utf8(output.stdout).unwrap();
    let mut lines = csv.lines();
    assert!(lines
        .next()
        .unwrap()
        .starts_with("time_unix_ms,second,scenario,step,requests"));
    let rows: u64 = lines
        .filter(|l| !l.contains(",*,"))
        .map(|l| l.split(',').nth(4).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(
        rows,
        u64_at(&summary(&out), "/totals/requests"),
        "CSV rows add up to the total"
    );
}

#[test]
fn doctor_reports_on_this_host_as_json() {
    let output = onrush().args(["doctor", "--json"]).output().unwrap();
    assert!(output.status.success(), "{}", text(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let checks: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["check"].as_str().unwrap())
        .collect();
    assert!(
        checks.contains(&"ephemeral_ports") && checks.contains(&"nofile"),
        "{checks:?}"
    );
}

/// `onrush export DIR --csv | head`: the reader leaves early and onrush ends quietly, code 0
/// (it printed "error: writing the export: Broken pipe" and exited 2).
#[test]
fn export_to_a_closed_pipe_ends_quietly() {
    let server = Server::start();
    let out = temp_dir("export-pipe");
    run_expect(0, &["quick", &server.url("/"), "-n", "50"], &out);
    let mut child = onrush()
        .args(["export", out.to_str().unwrap(), "--csv"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before onrush writes: its first write meets a broken pipe.
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(output.stderr.is_empty(), "{}", text(&output));
}
