//! Why a request failed (issue 37 §1): the first failing exchanges of each step and class in
//! summary.json, the report and the printed summary, secrets masked, kept first-three through
//! `merge`; `--samples` writes one line per request counted.

use crate::common;
use common::*;

use serde_json::Value;

/// Every request of `headers` fails its check (8 of them), `down` fails twice (503), `ok`
/// never fails, `set` fails once. The token is sent in a header that /headers echoes in its
/// body; `set` sends it in its query and its response sets it as a cookie.
const PLAN: &str = r#"
target: builtin
scenarios:
  - name: main
    load: { vus: 2, iterations: 4 }
    steps:
      - name: headers
        get: /headers
        headers: { Authorization: "Bearer ${api_token}" }
        check:
          - jsonpath: $.host
            equals: nowhere
      - name: ok
        get: /
  - name: once
    load: { vus: 1, iterations: 2 }
    steps:
      - { name: down, get: /status/503 }
  - name: cookie
    load: { vus: 1, iterations: 1 }
    steps:
      - name: set
        get: /cookies/set?sid=${api_token}
        check:
          - status: 500
"#;

const SECRET: &str = "supersecret123";

fn examples<'a>(s: &'a Value, step: &str, class: &str) -> Vec<&'a Value> {
    s["failing_exchanges"]
        .as_array()
        .unwrap_or_else(|| panic!("no failing_exchanges in {s:#}"))
        .iter()
        .filter(|e| e["step"] == step && e["class"] == class)
        .collect()
}

fn run(dir: &std::path::Path, out: &str, extra: &[&str]) -> (Value, String) {
    let plan = write_plan(dir, PLAN);
    let output = onrush()
        .arg("run")
        .arg(&plan)
        .args(["-D", &format!("api_token={SECRET}"), "-t", "2", "--out"])
        .arg(dir.join(out))
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    (summary(&dir.join(out)), text(&output))
}

#[test]
fn the_first_failing_exchanges_are_in_the_summary_report_and_console_masked() {
    let dir = temp_dir("failing-exchanges");
    let (s, printed) = run(&dir, "out", &[]);
    assert_eq!(u64_at(&s, "/totals/requests"), 19);

    // min(3, failures) per step and class: 8 check failures, 2 503s, no `ok` failure.
    let checks = examples(&s, "headers", "check_failed");
    assert_eq!(checks.len(), 3, "{s:#}");
    let down = examples(&s, "down", "http_5xx");
    assert_eq!(down.len(), 2, "{s:#}");
    assert!(examples(&s, "ok", "check_failed").is_empty());
    assert_eq!(s["failing_exchanges"].as_array().unwrap().len(), 6);

    let e = checks[0];
    assert_eq!(e["status"], 200);
    assert_eq!(e["url"], "/headers");
    assert_eq!(e["scenario"], "main");
    let reason = e["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("check `$.host == \"nowhere\"` failed: got `127.0.0.1:"),
        "the check's expression and the value it saw: {reason}"
    );
    // The body's start, with the echoed token masked.
    let body = e["body"].as_str().unwrap();
    assert!(body.starts_with('{'), "{body}");
    assert!(body.contains("\"authorization\":\"Bearer ***\""), "{body}");
    assert!(e["body_size"].as_u64().unwrap() >= body.len() as u64);
    // No check or extractor of the step reads a header: HTTP kept none to show.
    assert!(e.get("headers").is_none(), "{e:#}");
    // Earliest first, and what a VU did.
    assert!(e["time_unix_ms"].as_u64() <= checks[1]["time_unix_ms"].as_u64());
    assert!((1..=2).contains(&e["vu"].as_u64().unwrap()));

    // No check reads `down`'s body: the session did not keep it, and says so.
    assert_eq!(down[0]["status"], 503);
    assert_eq!(down[0]["body_note"], "body not kept");
    assert!(down[0].get("body").is_none());

    // A response header that carries a credential is masked (HTTP keeps Set-Cookie for its
    // cookie jar).
    let set = examples(&s, "set", "check_failed");
    assert_eq!(set.len(), 1);
    assert_eq!(
        set[0]["reason"], "check `status in [500]` failed: got `200`",
        "{:#}",
        set[0]
    );
    let headers = set[0]["headers"].as_array().unwrap();
    assert!(
        headers
            .iter()
            .any(|h| h[0] == "set-cookie" && h[1] == "***"),
        "{headers:?}"
    );
    assert_eq!(set[0]["url"], "/cookies/set?sid=***");

    // The printed summary: one line per step and class.
    assert!(
        printed.contains("main / headers  check_failed"),
        "{printed}"
    );
    assert!(printed.contains("once / down  http_5xx"), "{printed}");
    assert!(
        printed.contains("/headers: check `$.host == \"nowhere\"` failed: got `127.0.0.1:"),
        "{printed}"
    );

    // The report: under its class, the examples.
    let html = std::fs::read_to_string(dir.join("out/report.html")).unwrap();
    let section = &html[html
        .find(r#"<section id="failing""#)
        .expect("a failing section")..];
    assert!(section.contains("<h3>check_failed</h3>"), "{section:.2000}");
    assert!(section.contains("<h3>http_5xx</h3>"));
    assert!(section.contains("failed: got `127.0.0.1:"));
    assert!(section.contains("Bearer ***"));
    assert_eq!(section.matches(r#"<details class="exchange">"#).count(), 6);

    // The secret is nowhere.
    let written = std::fs::read_to_string(dir.join("out/summary.json")).unwrap();
    for (what, text) in [
        ("summary.json", &written),
        ("report", &html),
        ("console", &printed),
    ] {
        assert!(!text.contains(SECRET), "{what} shows the secret");
    }
}

#[test]
fn merge_keeps_the_earliest_three_of_each_kind() {
    let dir = temp_dir("failing-merge");
    let (a, _) = run(&dir, "a", &[]);
    let (b, _) = run(&dir, "b", &[]);
    let merged = dir.join("merged");
    let output = onrush()
        .arg("merge")
        .arg(dir.join("a"))
        .arg(dir.join("b"))
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let m = summary(&merged);
    let kept = examples(&m, "headers", "check_failed");
    assert_eq!(kept.len(), 3);
    // The earliest three of the six (run a's, which ran first).
    let mut times: Vec<u64> = [&a, &b]
        .iter()
        .flat_map(|s| examples(s, "headers", "check_failed"))
        .map(|e| e["time_unix_ms"].as_u64().unwrap())
        .collect();
    times.sort_unstable();
    let got: Vec<u64> = kept
        .iter()
        .map(|e| e["time_unix_ms"].as_u64().unwrap())
        .collect();
    assert_eq!(got, times[..3]);
    assert_eq!(
        examples(&m, "down", "http_5xx").len(),
        3,
        "2 + 2 of the inputs"
    );
    // `onrush report` of the merged run shows them.
    let output = onrush().arg("report").arg(&merged).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let html = std::fs::read_to_string(merged.join("report.html")).unwrap();
    assert!(html.contains(r#"<section id="failing""#));
}

/// The columns of a samples line.
fn columns(line: &str) -> Vec<&str> {
    line.split(',').collect()
}

#[test]
fn samples_have_one_line_per_request_counted() {
    let dir = temp_dir("samples");
    let path = dir.join("samples.csv");
    let (s, _) = run(&dir, "out", &["--samples", path.to_str().unwrap()]);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(
            "timestamp_ms,scenario,step,status,failure,latency_us,bytes_in,bytes_out,vu,iteration"
        )
    );
    let rows: Vec<Vec<&str>> = lines.map(columns).collect();
    assert_eq!(rows.len() as u64, u64_at(&s, "/totals/requests"));
    let start = u64_at(&s, "/run/start_unix_ms");
    for r in &rows {
        assert_eq!(r.len(), 10, "{r:?}");
        let t: u64 = r[0].parse().unwrap();
        assert!(
            t + 1000 >= start && t < start + 60_000,
            "{t} vs start {start}"
        );
    }
    let count = |step: &str, status: &str, class: &str| {
        rows.iter()
            .filter(|r| r[2] == step && r[3] == status && r[4] == class)
            .count()
    };
    assert_eq!(count("headers", "200", "check_failed"), 8);
    assert_eq!(count("ok", "200", ""), 8);
    assert_eq!(count("down", "503", "http_5xx"), 2);
    // Bytes and iterations as the summary counts them.
    let bytes_in: u64 = rows.iter().map(|r| r[6].parse::<u64>().unwrap()).sum();
    assert_eq!(bytes_in, u64_at(&s, "/totals/bytes_in"));
    let mut iterations: Vec<&str> = rows.iter().filter(|r| r[2] == "ok").map(|r| r[9]).collect();
    iterations.sort_unstable();
    assert_eq!(iterations, ["0", "0", "1", "1", "2", "2", "3", "3"]);
}

#[test]
fn quick_writes_samples_and_a_bad_path_is_named() {
    let server = Server::start();
    let dir = temp_dir("quick-samples");
    let path = dir.join("q.csv");
    let out = dir.join("out");
    let output = onrush()
        .args([
            "quick",
            &server.url("/status/404"),
            "-n",
            "25",
            "-c",
            "2",
            "--quiet",
        ])
        .arg("--samples")
        .arg(&path)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let s = summary(&out);
    assert_eq!(u64_at(&s, "/totals/requests"), 25, "{}", text(&output));
    let text_samples = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text_samples.lines().count(), 26);
    assert!(text_samples.lines().skip(1).all(|l| columns(l)[3] == "404"));

    let missing = dir.join("no/such/dir/q.csv");
    let output = onrush()
        .args(["quick", &server.url("/"), "-n", "1", "--quiet", "--samples"])
        .arg(&missing)
        .arg("--out")
        .arg(dir.join("out2"))
        .output()
        .unwrap();
    assert_ne!(output.status.code(), Some(0));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("--samples") && err.contains("no/such/dir/q.csv"),
        "{err}"
    );
}

#[test]
fn a_distributed_run_keeps_the_earliest_three_of_its_agents() {
    use crate::distributed::{start_agent, start_controller};

    let server = Server::start();
    let dir = temp_dir("failing-distributed");
    let plan = write_plan(
        &dir,
        &format!(
            r#"
target: {}
scenarios:
  - name: main
    load: {{ vus: 4, iterations: 3 }}
    steps:
      - {{ name: down, get: /status/503 }}
"#,
            server.url("")
        ),
    );
    let out = dir.join("results");
    let controller = start_controller(&plan, &out, 2, &["-q"]);
    let token = out.join("agent-token");
    let agents: Vec<_> = ["a1", "a2"]
        .iter()
        .map(|n| start_agent(controller.port, &token, n, 2, &dir.join("agents")))
        .collect();
    let (_code, stdout, stderr) = controller.finish();
    for mut a in agents {
        let _ = a.wait();
    }
    let s = summary(&out);
    assert_eq!(u64_at(&s, "/totals/requests"), 12, "{stdout}\n{stderr}");
    // Each agent kept 3 (its two workers had 6 failures), the controller the earliest 3.
    let kept = examples(&s, "down", "http_5xx");
    assert_eq!(kept.len(), 3, "{s:#}");
    let mut agent_times = Vec::new();
    for a in ["a1", "a2"] {
        let a = summary(&dir.join("agents").join(a).join("results"));
        let own = examples(&a, "down", "http_5xx");
        assert_eq!(own.len(), 3);
        agent_times.extend(own.iter().map(|e| e["time_unix_ms"].as_u64().unwrap()));
    }
    agent_times.sort_unstable();
    let got: Vec<u64> = kept
        .iter()
        .map(|e| e["time_unix_ms"].as_u64().unwrap())
        .collect();
    assert_eq!(got, agent_times[..3]);
    assert!(stdout.contains("main / down  http_5xx"), "{stdout}");
}

#[test]
fn a_distributed_run_refuses_samples_and_says_why() {
    let dir = temp_dir("samples-distributed");
    let plan = write_plan(&dir, PLAN);
    let output = onrush()
        .arg("run")
        .arg(&plan)
        .args(["-D", &format!("api_token={SECRET}")])
        .args(["--agents", "1", "--samples", "s.csv", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("--samples s.csv") && err.contains("agents"),
        "{err}"
    );
    assert!(!dir.join("s.csv").exists());
}

#[test]
fn a_failing_js_check_is_named_and_script_steps_are_not_samples() {
    let dir = temp_dir("failing-js");
    let plan = write_plan(
        &dir,
        r#"
target: builtin
scenarios:
  - name: js
    load: { vus: 1, iterations: 4 }
    steps:
      - name: json
        get: /json
        check: [ { js: "res.status === 201" } ]
      - name: compute
        script: "ctx.vars.n = 1"
"#,
    );
    let samples = dir.join("s.csv");
    let out = dir.join("out");
    let output = onrush()
        .arg("run")
        .arg(&plan)
        .args(["-q", "--samples", samples.to_str().unwrap(), "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let s = summary(&out);
    let kept = examples(&s, "json", "check_failed");
    assert_eq!(kept.len(), 3, "{}\n{s:#}", text(&output));
    let reason = kept[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("check `") && reason.ends_with("(js) failed"),
        "{reason}"
    );
    // The body a js check read was kept, and shows.
    assert!(kept[0]["body"].as_str().unwrap().starts_with('{'));
    // `script:` steps are not requests (not in the totals): no line.
    let text = std::fs::read_to_string(&samples).unwrap();
    assert_eq!(
        text.lines().count() as u64 - 1,
        u64_at(&s, "/totals/requests")
    );
    assert_eq!(u64_at(&s, "/totals/requests"), 4);
    assert!(!text.contains(",compute,"));
}
