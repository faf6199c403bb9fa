//! `onrush import har`: a browser flow recorded against a Python web shop (tests/servers/
//! shop_server.py, fresh CSRF tokens and order ids per visit) is imported, validated and run
//! against the same shop, which counts every step as accepted — only possible when the
//! importer correlated the tokens and the id. The flow is recorded twice: by our own
//! har_recorder.py, and by a real Chromium (tests/servers/chromium_har_recorder.js, its HAR
//! written from the browser's network events by playwright-core, not by us).

use std::io::{BufRead, Read, Write};
use std::process::{Command, Stdio};

use crate::common;
use common::*;

/// The shop, stopped (its stdin closed) when dropped.
pub struct Shop {
    child: std::process::Child,
    pub port: u16,
}

impl Shop {
    pub fn start() -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/shop_server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the shop server (tests/install-python3.sh)");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the shop prints its port");
        Shop { child, port }
    }

    /// The shop's counters (`login`, `create`, `bad_login_csrf`, ...).
    pub fn stats(&self) -> serde_json::Value {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.write_all(b"GET /__stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let body = text.split("\r\n\r\n").nth(1).unwrap_or("{}");
        serde_json::from_str(body).unwrap()
    }
}

impl Drop for Shop {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

fn count(stats: &serde_json::Value, key: &str) -> u64 {
    stats[key].as_u64().unwrap_or(0)
}

/// Imports `har`, checks the report, validates the plan and runs it with 3 users × 2
/// iterations against `shop`: each step of each iteration must be accepted by the shop (new
/// tokens and order ids every time), and no static asset fetched. Returns the import report.
fn import_and_replay(
    shop: &Shop,
    har: &std::path::Path,
    dir: &std::path::Path,
) -> serde_json::Value {
    let recorded = shop.stats();
    assert_eq!(count(&recorded, "pay"), 1, "the recording paid: {recorded}");
    let plan = dir.join("plan.yaml");
    let report = dir.join("report.json");
    let output = onrush()
        .args(["import", "har"])
        .arg(har)
        .arg("-o")
        .arg(&plan)
        .arg("--report")
        .arg(&report)
        .args(["--think-scale", "0.1"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let plan_text = std::fs::read_to_string(&plan).unwrap();
    assert_eq!(report["kept"], 6, "{report:#}\n{plan_text}");

    let validate = onrush().arg("validate").arg(&plan).output().unwrap();
    assert_eq!(
        validate.status.code(),
        Some(0),
        "{}\n{plan_text}",
        text(&validate)
    );

    // 3 users × 2 iterations, each its own session with its own tokens and orders.
    let summary = run_expect(
        0,
        &[
            "run",
            plan.to_str().unwrap(),
            "-D",
            "vus=3",
            "-D",
            "iterations=2",
        ],
        &dir.join("out"),
    );
    let after = shop.stats();
    for key in ["login_page", "login", "home", "create", "read", "pay"] {
        assert_eq!(
            count(&after, key) - count(&recorded, key),
            6,
            "{key}: {after}\n{summary:#}\n{plan_text}"
        );
    }
    let refused: Vec<&String> = after
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.starts_with("bad_"))
        .collect();
    assert!(refused.is_empty(), "the shop refused: {after}\n{plan_text}");
    assert_eq!(
        count(&after, "static"),
        count(&recorded, "static"),
        "static assets are left out: {after}"
    );
    report
}

fn correlated(report: &serde_json::Value) -> Vec<&str> {
    report["correlations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["var"].as_str().unwrap())
        .collect()
}

#[test]
fn a_recorded_login_flow_replays_with_its_tokens_and_ids_correlated() {
    let shop = Shop::start();
    let dir = temp_dir("import-har");
    let har = dir.join("shop.har");
    let recorder = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/har_recorder.py");
    let rec = Command::new("python3")
        .arg(recorder)
        .arg(shop.port.to_string())
        .arg(&har)
        .output()
        .unwrap();
    assert!(rec.status.success(), "{}", text(&rec));
    assert_eq!(count(&shop.stats(), "static"), 3);
    let report = import_and_replay(&shop, &har, &dir);
    assert_eq!(
        correlated(&report),
        ["csrf_token", "csrf_token_2", "id"],
        "{report:#}"
    );
    assert_eq!(report["skipped"].as_array().unwrap().len(), 3, "{report:#}");
}

/// Where tests/install-chromium-har.sh puts what the Chromium recorder needs.
const INSTALL: &str = "crates/onrush/tests/install-chromium-har.sh";

/// The same flow, recorded by a real Chromium (Debian's, driven by playwright-core: the HAR is
/// written from the browser's own network events, with its headers, cookies, form encoding and
/// redirects), imported and replayed.
#[test]
fn a_flow_recorded_by_chromium_replays_with_its_tokens_and_ids_correlated() {
    let servers = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers");
    let chromium = std::path::Path::new("/usr/bin/chromium");
    let playwright = std::path::Path::new(servers).join("node_modules/playwright-core");
    assert!(
        chromium.exists() && playwright.exists(),
        "the Chromium HAR recorder needs /usr/bin/chromium and playwright-core in {servers}/node_modules: \
         run `bash {INSTALL}` (CI runs it from scripts/setup.sh)"
    );
    let shop = Shop::start();
    let dir = temp_dir("import-har-chromium");
    let har = dir.join("chromium.har");
    let rec = Command::new("node")
        .arg(format!("{servers}/chromium_har_recorder.js"))
        .arg(shop.port.to_string())
        .arg(&har)
        .output()
        .unwrap_or_else(|e| panic!("node runs the recorder ({e}): run `bash {INSTALL}`"));
    assert!(rec.status.success(), "{}", text(&rec));
    let recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&har).unwrap()).unwrap();
    assert_eq!(
        recorded["log"]["browser"]["name"], "chromium",
        "{}",
        recorded["log"]["browser"]
    );
    let report = import_and_replay(&shop, &har, &dir);
    // The form's hidden input into the form body, the page's <meta> token into the fetch()'s
    // X-CSRF-Token, the created order's id into the next paths and the payment's JSON.
    let notes = report["correlations"].to_string();
    assert_eq!(correlated(&report).len(), 3, "{report:#}");
    for used in ["(body)", "(header X-CSRF-Token)", "(path)"] {
        assert!(notes.contains(used), "{used}: {report:#}");
    }
    let skipped = report["skipped"].to_string();
    for left_out in ["app.css", "logo.png", "lib.js"] {
        assert!(skipped.contains(left_out), "{left_out}: {report:#}");
    }
}

#[test]
fn a_broken_har_is_an_error_with_its_position() {
    let dir = temp_dir("import-har-bad");
    let har = dir.join("bad.har");
    std::fs::write(
        &har,
        "{\"log\": {\"entries\": [\n  {\"startedDateTime\": 12}\n]}}",
    )
    .unwrap();
    let output = onrush().args(["import", "har"]).arg(&har).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("bad.har:log.entries[0].startedDateTime"),
        "{err}"
    );
    std::fs::write(&har, "{\"log\": \n  [1,,]}").unwrap();
    let output = onrush().args(["import", "har"]).arg(&har).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("bad.har:2:"),
        "{}",
        text(&output)
    );
}
