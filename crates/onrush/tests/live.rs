//! `onrush run --web`: the live page and its API. A run against the built-in server is paused,
//! resumed, given a new rate and more VUs, and stopped through the API (as a CI script would)
//! and through the page in a real Chromium (as a user would); what the API and the page show
//! at the end equals `summary.json` exactly, every change is in `events.jsonl`, the seconds say
//! when the run was paused, and the server on the other side counted what onrush did.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::common::{onrush, summary, temp_dir, Server};

/// One request to the live server: (status, body as JSON).
fn call(base: &str, method: &str, path: &str, body: &str, extra: &[(&str, &str)]) -> (u16, Value) {
    let (status, text) = call_text(base, method, path, body, extra);
    let json = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, json)
}

fn call_text(
    base: &str,
    method: &str,
    path: &str,
    body: &str,
    extra: &[(&str, &str)],
) -> (u16, String) {
    let authority = base
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap();
    let mut s = TcpStream::connect(authority).expect("the live server accepts");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in extra {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").expect("a whole response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_string())
}

/// Starts `onrush run PLAN --web` and returns the process and the page's URL (from stderr).
fn start_live(plan: &Path, out: &Path, linger: &str) -> (Child, String) {
    let mut child = onrush()
        .args([
            "run",
            plan.to_str().unwrap(),
            "--quiet",
            "--web",
            "127.0.0.1:0",
        ])
        .args(["--web-linger", linger, "--out"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next()
            .expect("onrush prints the live page's URL")
            .unwrap();
        if let Some(url) = line.strip_prefix("live page: ") {
            break url.to_string();
        }
    };
    // The rest of stderr is drained, so that onrush never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (child, url)
}

fn status(url: &str) -> Value {
    call(url, "GET", "/api/status", "", &[]).1
}

fn wait_for(url: &str, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = status(url);
        if ok(&s) {
            return s;
        }
        assert!(Instant::now() < deadline, "waited for {what}: {s:#}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn wait_exit(child: &mut Child) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(code) = child.try_wait().unwrap() {
            return code.code().unwrap_or(-1);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("onrush did not exit");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Requests per second of every step, from `intervals.jsonl`.
fn requests_per_second(dir: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(dir.join("intervals.jsonl")).unwrap();
    let mut seconds = Vec::new();
    for line in text.lines().skip(1) {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["kind"] == "step" {
            let t = v["t"].as_u64().unwrap() as usize;
            if seconds.len() <= t {
                seconds.resize(t + 1, 0);
            }
            seconds[t] += v["requests"].as_u64().unwrap();
        }
    }
    seconds
}

fn events(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// onrush's count is the server's: every request answered was served; those cut in flight
/// by the stop (`interrupted`) may or may not have reached it.
fn assert_answered_as_served(summary: &Value, server: &Server) {
    let requests = summary["totals"]["requests"].as_u64().unwrap();
    let cut = summary["totals"]["failures_by_class"]["interrupted"]
        .as_u64()
        .unwrap_or(0);
    let served = server.stats().requests;
    assert!(
        requests - cut <= served && served <= requests,
        "onrush: {requests} requests, {cut} cut by the stop; the server: {served}"
    );
}

fn plan_for(server: &Server, dir: &Path) -> std::path::PathBuf {
    let plan = dir.join("plan.yaml");
    std::fs::write(
        &plan,
        format!(
            "target: {}\nthresholds: [\"failure_rate == 0%\", \"p75 < 10s\"]\nscenarios:\n  - name: browse\n    load: {{ rate: 40/s, duration: 60s, max_vus: 50 }}\n    steps:\n      - get: /\n  - name: shop\n    load: {{ vus: 1, duration: 60s }}\n    steps:\n      - get: /delay/20\n",
            server.url("")
        ),
    )
    .unwrap();
    plan
}

#[test]
fn the_api_steers_a_run_and_every_view_agrees() {
    let server = Server::start();
    let dir = temp_dir("live-api");
    let plan = plan_for(&server, &dir);
    let out = dir.join("out");
    let (mut child, url) = start_live(&plan, &out, "30s");

    let s = wait_for(&url, "the first seconds", |s| {
        s["state"] == "running" && s["second"].as_u64().is_some_and(|t| t >= 1)
    });
    assert_eq!(s["scenarios"][0]["steer"], "rate", "{s:#}");
    assert_eq!(s["scenarios"][1]["steer"], "vus", "{s:#}");
    assert_eq!(s["control"], true, "loopback: any local caller may steer");
    // Thresholds as the run goes: those summary.json can judge now, the others at the end.
    assert_eq!(
        s["thresholds"][0]["threshold"], "failure_rate == 0%",
        "{s:#}"
    );
    assert_eq!(s["thresholds"][0]["passed"], true, "{s:#}");
    assert_eq!(
        s["thresholds_at_end"],
        serde_json::json!(["p75 < 10s"]),
        "{s:#}"
    );
    assert!(
        ["healthy", "saturated"].contains(&s["generator_verdict"].as_str().unwrap()),
        "{s:#}"
    );

    // Refusals first: each says what to send instead.
    let (code, r) = call(
        &url,
        "POST",
        "/api/scenarios/shop/load",
        r#"{"rate":"5/s"}"#,
        &[],
    );
    assert_eq!(code, 409, "{r}");
    assert!(
        r["error"].as_str().unwrap().contains("change its VUs"),
        "{r}"
    );
    let (code, r) = call(
        &url,
        "POST",
        "/api/scenarios/nope/load",
        r#"{"vus":3}"#,
        &[],
    );
    assert_eq!(code, 404, "{r}");
    assert!(r["error"].as_str().unwrap().contains("browse, shop"), "{r}");
    let (code, r) = call(&url, "POST", "/api/scenarios/browse/load", "fast", &[]);
    assert_eq!(code, 400, "{r}");
    let (code, _) = call(
        &url,
        "POST",
        "/api/stop",
        "",
        &[("Origin", "http://evil.example")],
    );
    assert_eq!(code, 403, "another site's page cannot stop the run");
    let (code, _) = call(&url, "GET", "/nope", "", &[]);
    assert_eq!(code, 404);

    let (code, r) = call(&url, "POST", "/api/pause", "", &[]);
    assert_eq!((code, &r["state"]), (200, &Value::from("paused")), "{r}");
    std::thread::sleep(Duration::from_millis(2_600));
    let (code, _) = call(&url, "POST", "/api/resume", "", &[]);
    assert_eq!(code, 200);
    let (code, r) = call(
        &url,
        "POST",
        "/api/scenarios/browse/load",
        r#"{"rate":"200/s"}"#,
        &[],
    );
    assert_eq!(code, 200, "{r}");
    let (code, r) = call(
        &url,
        "POST",
        "/api/scenarios/shop/load",
        r#"{"vus":4}"#,
        &[],
    );
    assert_eq!(code, 200, "{r}");
    let s = wait_for(&url, "the new load in a closed second", |s| {
        s["scenarios"][0]["iterations_last_second"].as_u64() >= Some(150)
            && s["scenarios"][1]["active_vus"].as_u64() == Some(4)
    });
    assert_eq!(s["scenarios"][0]["rate_set"], 200.0);
    assert_eq!(s["scenarios"][1]["vus_set"], 4);
    let (code, r) = call(&url, "POST", "/api/stop", "", &[]);
    assert_eq!(code, 200, "{r}");

    // The run ends and writes its results; the server keeps answering (the linger).
    let end = wait_for(&url, "the end", |s| s["state"] == "finished");
    let summary = summary(&out);
    assert_eq!(end["requests"], summary["totals"]["requests"], "{end:#}");
    assert_eq!(end["failures"], summary["totals"]["failures"]);
    assert_answered_as_served(&summary, &server);
    // Exact percentiles: the live figures of each step are summary.json's, to the last digit.
    for live in end["steps"].as_array().unwrap() {
        let step = summary["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["scenario"] == live["scenario"] && s["name"] == live["step"])
            .unwrap_or_else(|| panic!("{live} in summary.json"));
        for k in ["count", "p50", "p90", "p95", "p99", "p999", "max", "mean"] {
            assert_eq!(
                live["latency_ms"][k], step["latency_ms"][k],
                "{k} of {live}"
            );
        }
    }
    let (code, page) = call_text(&url, "GET", "/", "", &[]);
    assert_eq!(code, 200);
    assert!(page.contains("id=\"key-figures\"") && !page.contains("id=\"live\""));
    assert!(
        page.contains("id=\"events\""),
        "the report lists the events"
    );

    // The changes, in order, in events.jsonl; the stop in summary.json.
    let ev = events(&out);
    let kinds: Vec<&str> = ev.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["pause", "resume", "load", "load", "stop"],
        "{ev:#?}"
    );
    assert_eq!(ev[2]["rate"], 200.0);
    assert_eq!(ev[3]["vus"], 4);
    let stopped = summary["stopped_early"].to_string();
    assert!(stopped.contains("/api/stop"), "{stopped}");
    // Paused for 2.6 s: at least one whole second without a request.
    let paused_from = ev[0]["t"].as_f64().unwrap().ceil() as usize;
    let seconds = requests_per_second(&out);
    assert_eq!(
        seconds[paused_from], 0,
        "paused at {}: {seconds:?}",
        ev[0]["t"]
    );
    assert!(
        seconds[paused_from + 3..].iter().any(|&n| n > 0),
        "{seconds:?}"
    );

    let _ = child.kill();
    wait_exit(&mut child);

    // `merge` keeps the events; its report lists them.
    let merged = dir.join("merged");
    let output = onrush()
        .args([
            "merge",
            out.to_str().unwrap(),
            "--out",
            merged.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(events(&merged), ev);
    let output = onrush()
        .args(["report", merged.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let page = std::fs::read_to_string(merged.join("report.html")).unwrap();
    assert!(page.contains("id=\"events\"") && page.contains("rate 200/s (browse)"));
}

/// Where tests/install-chromium-har.sh puts what a Chromium driven by playwright needs.
const INSTALL: &str = "crates/onrush/tests/install-chromium-har.sh";

#[test]
fn a_browser_watches_and_steers_the_live_page() {
    let servers = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers");
    assert!(
        Path::new("/usr/bin/chromium").exists()
            && Path::new(servers)
                .join("node_modules/playwright-core")
                .exists(),
        "the live page's browser test needs /usr/bin/chromium and playwright-core in \
         {servers}/node_modules: run `bash {INSTALL}`"
    );
    let server = Server::start();
    let dir = temp_dir("live-browser");
    let plan = plan_for(&server, &dir);
    let out = dir.join("out");
    let shots = dir.join("screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let (mut child, url) = start_live(&plan, &out, "60s");
    let driver = std::process::Command::new("node")
        .arg(format!("{servers}/live_page_driver.js"))
        .arg(&url)
        .arg(&shots)
        .output()
        .unwrap_or_else(|e| panic!("node runs the driver ({e}): run `bash {INSTALL}`"));
    let _ = child.kill();
    wait_exit(&mut child);
    assert!(
        driver.status.success(),
        "the browser could not use the page: {}",
        String::from_utf8_lossy(&driver.stderr)
    );
    let seen: Value = serde_json::from_slice(&driver.stdout).unwrap();
    println!(
        "screenshots of the live page: {} (1-running, 2-rate-changed, 3-final-report)",
        shots.display()
    );
    assert!(
        seen["grown"]["chart_seconds"].as_u64() > seen["start"]["chart_seconds"].as_u64(),
        "the charts grew as seconds closed: {seen:#}"
    );
    assert_eq!(seen["paused"]["state"], "paused", "{seen:#}");
    assert_eq!(seen["page_errors"], serde_json::json!([]), "{seen:#}");
    assert_eq!(seen["final_report_errors"], "", "{seen:#}");
    // The final page is the report: its figures are summary.json's.
    let summary = summary(&out);
    let shown: String = seen["final_cards"]["Requests"]
        .as_str()
        .unwrap()
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    assert_eq!(shown, summary["totals"]["requests"].to_string(), "{seen:#}");
    assert_answered_as_served(&summary, &server);
    assert_eq!(
        seen["final_events"],
        serde_json::json!(["load", "pause", "resume", "stop"]),
        "{seen:#}"
    );
    let ev = events(&out);
    assert!(ev.iter().all(|e| e["by"] == "api"), "{ev:#?}");
    // The rate the page set shows in the seconds after it.
    let seconds = requests_per_second(&out);
    let changed = ev[0]["t"].as_f64().unwrap().ceil() as usize + 1;
    assert!(
        seconds.get(changed).is_some_and(|&n| n >= 150),
        "200/s set at {}: {seconds:?}",
        ev[0]["t"]
    );
    for shot in ["1-running.png", "2-rate-changed.png", "3-final-report.png"] {
        assert!(
            shots.join(shot).metadata().unwrap().len() > 10_000,
            "{shot}"
        );
    }
}

/// A distributed run's page: the merged run, both agents; every agent pauses, resumes and takes
/// the new rate the page asks; a killed agent turns "lost" within 3 s and is an event; the page
/// stops the run (every agent).
#[test]
fn a_distributed_runs_page_shows_its_agents_and_marks_a_lost_one() {
    use super::distributed::{start_agent, start_controller};
    let server = Server::start();
    let dir = temp_dir("live-distributed");
    let plan = dir.join("plan.yaml");
    std::fs::write(
        &plan,
        format!(
            "target: {}\nscenarios:\n  - name: open\n    load: {{ rate: 40/s, duration: 60s, max_vus: 10 }}\n    steps:\n      - get: /\n",
            server.url("")
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let controller = start_controller(
        &plan,
        &out,
        2,
        &["-q", "--web", "127.0.0.1:0", "--web-linger", "1s"],
    );
    let token = out.join("agent-token");
    let work = dir.join("agents");
    let mut victim = start_agent(controller.port, &token, "victim", 1, &work);
    let mut survivor = start_agent(controller.port, &token, "survivor", 1, &work);
    let url = controller.line_after("live page: ");
    let s = wait_for(&url, "both agents running and merged seconds", |s| {
        s["agents"]
            .as_array()
            .is_some_and(|a| a.len() == 2 && a.iter().all(|a| a["state"] == "running"))
            && s["second"].as_u64().is_some_and(|t| t >= 1)
    });
    assert!(s["requests"].as_u64().unwrap() > 0, "{s:#}");
    // Every agent applies the page's changes to its share: paused, the merged run has
    // seconds without a request; the new rate is the whole run's.
    let (code, r) = call(&url, "POST", "/api/pause", "", &[]);
    assert_eq!(code, 200, "{r}");
    std::thread::sleep(Duration::from_millis(2_600));
    let (code, _) = call(&url, "POST", "/api/resume", "", &[]);
    assert_eq!(code, 200);
    let (code, r) = call(
        &url,
        "POST",
        "/api/scenarios/open/load",
        r#"{"rate":"160/s"}"#,
        &[],
    );
    assert_eq!(code, 200, "{r}");
    wait_for(&url, "the new rate, merged", |s| {
        s["scenarios"][0]["iterations_last_second"].as_u64() >= Some(120)
    });

    victim.kill().unwrap();
    let killed = Instant::now();
    let _ = victim.wait();
    let s = wait_for(&url, "the killed agent lost", |s| {
        s["agents"].as_array().is_some_and(|a| {
            a.iter()
                .any(|a| a["name"] == "victim" && a["state"] == "lost")
        })
    });
    let noticed = killed.elapsed();
    assert!(
        noticed < Duration::from_secs(3),
        "lost after {noticed:?}: {s:#}"
    );

    let (code, r) = call(&url, "POST", "/api/stop", "", &[]);
    assert_eq!(code, 200, "{r}");
    let (code, stdout, stderr) = controller.finish();
    assert!(survivor.wait().unwrap().code().is_some());
    assert_eq!(
        code, 130,
        "stopped: the interrupted exit code\n{stdout}\n{stderr}"
    );
    let ev = events(&out);
    let kinds: Vec<&str> = ev.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["pause", "resume", "load", "agent_lost", "stop"],
        "the controller's events, once each: {ev:#?}"
    );
    assert_eq!(ev[3]["by"], "victim");
    // Both agents paused: a whole second of the merged run without a request.
    let paused_from = ev[0]["t"].as_f64().unwrap().ceil() as usize;
    assert_eq!(requests_per_second(&out)[paused_from], 0, "{ev:#?}");
    // The merged results are the merge of the agents' (the intervals.jsonl streamed live is
    // replaced by it): the killed agent's seconds up to its last one sent, the survivor's all;
    // the server saw those and the killed agent's last unsent second.
    let summary = summary(&out);
    let merged = summary["totals"]["requests"].as_u64().unwrap();
    let served = server.stats().requests;
    assert!(
        merged > 0 && merged <= served && served - merged <= 60,
        "{merged} of {served}"
    );
    assert_eq!(summary["distributed"]["partial"], true);
}

/// ONRUSH_WEB_TOKEN in the environment (a kube controller's, a user's profile) does not make
/// a run without --web ask for --web; `--web` takes a host name.
#[test]
fn the_web_token_in_the_environment_is_harmless_without_web() {
    let server = Server::start();
    let dir = temp_dir("live-env-token");
    let plan = dir.join("plan.yaml");
    std::fs::write(
        &plan,
        format!(
            "target: {}\nscenarios:\n  - name: s\n    load: {{ vus: 1, iterations: 2 }}\n    steps:\n      - get: /\n",
            server.url("")
        ),
    )
    .unwrap();
    let output = onrush()
        .args(["run", plan.to_str().unwrap(), "--quiet", "--out"])
        .arg(dir.join("out"))
        .env("ONRUSH_WEB_TOKEN", "abc")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(server.stats().requests, 2);
    // `--web` takes a host name (and a bare port), as users write it.
    let output = onrush()
        .args([
            "run",
            plan.to_str().unwrap(),
            "--quiet",
            "--web",
            "localhost:0",
        ])
        .args(["--web-linger", "0s", "--out"])
        .arg(dir.join("out2"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("live page: http://127.0.0.1:"), "{stderr}");
    let output = onrush()
        .args(["run", plan.to_str().unwrap(), "--web", "no-port-here"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("give IP:PORT, HOST:PORT or a port"),
        "{stderr}"
    );
}
