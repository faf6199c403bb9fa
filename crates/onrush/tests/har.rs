//! `onrush import har`: a browser flow recorded against a Python web shop (tests/servers/
//! shop_server.py, fresh CSRF tokens and order ids per visit) is imported, validated and run
//! against the same shop, which counts every step as accepted — only possible when the
//! importer correlated the tokens and the id.

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
    let recorded = shop.stats();
    assert_eq!(count(&recorded, "pay"), 1, "{recorded}");
    assert_eq!(count(&recorded, "static"), 3, "{recorded}");

    let plan = dir.join("plan.yaml");
    let report = dir.join("report.json");
    let output = onrush()
        .args(["import", "har"])
        .arg(&har)
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
    let vars: Vec<&str> = report["correlations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["var"].as_str().unwrap())
        .collect();
    assert_eq!(vars, ["csrf_token", "csrf_token_2", "id"], "{report:#}");
    assert_eq!(report["kept"], 6, "{report:#}");
    assert_eq!(report["skipped"].as_array().unwrap().len(), 3, "{report:#}");

    let validate = onrush().arg("validate").arg(&plan).output().unwrap();
    assert_eq!(validate.status.code(), Some(0), "{}", text(&validate));

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
            "{key}: {after}\n{summary:#}"
        );
    }
    let refused: Vec<&String> = after
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.starts_with("bad_"))
        .collect();
    assert!(refused.is_empty(), "the shop refused: {after}");
    assert_eq!(
        count(&after, "static"),
        3,
        "static assets are left out: {after}"
    );
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
