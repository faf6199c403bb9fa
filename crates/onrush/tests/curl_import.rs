//! `onrush import curl`: a pasted command is imported and run against a Python server that
//! records what it receives; real curl is sent to the same server and both must have sent the
//! same method, path, headers that matter and body.

use std::io::{BufRead, Read, Write};
use std::process::{Command, Stdio};

use crate::common;
use common::*;

struct Echo {
    child: std::process::Child,
    port: u16,
}

impl Echo {
    fn start() -> Self {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/servers/echo_server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the echo server (tests/install-python3.sh)");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .expect("the echo server prints its port");
        Echo { child, port }
    }

    fn log(&self) -> Vec<serde_json::Value> {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.write_all(b"GET /__log HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap()).unwrap()
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

fn curl_installed() -> bool {
    let found = Command::new("curl").arg("--version").output().is_ok();
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "curl is missing under CI (tests/install-curl.sh installs it)"
        );
        eprintln!("\n\n*** SKIPPING the comparison with real curl: curl is not installed ***\n");
    }
    found
}

/// The parts of a request both clients must agree on.
fn essentials(r: &serde_json::Value) -> String {
    let h = &r["headers"];
    format!(
        "{} {} ct={} auth={} trace={} accept={} body={}",
        r["method"],
        r["path"],
        h["content-type"],
        h["authorization"],
        h["x-trace"],
        h["accept"],
        r["body"]
    )
}

const COMMAND: &str = r#"curl -X PUT 'http://127.0.0.1:PORT/things/7?q=a%20b' -H 'X-Trace: abc "1"' -H "Content-Type: application/json" -H 'Accept: application/json' -u 'bob:s3:cret' --data-raw $'{"name": "caf\u00e9", "n": 2}' -s -o /dev/null"#;

#[test]
fn an_imported_curl_command_sends_what_curl_sends() {
    let echo = Echo::start();
    let dir = temp_dir("import-curl");
    let command = COMMAND.replace("PORT", &echo.port.to_string());
    let plan = dir.join("plan.yaml");
    let output = onrush()
        .args(["import", "curl"])
        .arg(&command)
        .arg("-o")
        .arg(&plan)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    run_expect(0, &["run", plan.to_str().unwrap()], &dir.join("out"));
    let log = echo.log();
    assert_eq!(log.len(), 1, "{log:?}");
    let ours = essentials(&log[0]);
    assert!(ours.contains("\"PUT\" \"/things/7?q=a%20b\""), "{ours}");
    assert!(ours.contains("auth=\"Basic Ym9iOnMzOmNyZXQ=\""), "{ours}");
    assert!(
        ours.contains(r#"body="{\"name\": \"café\", \"n\": 2}""#),
        "{ours}"
    );
    if curl_installed() {
        let real = Command::new("bash")
            .arg("-c")
            .arg(&command)
            .output()
            .unwrap();
        assert!(real.status.success(), "{}", text(&real));
        let log = echo.log();
        assert_eq!(log.len(), 2);
        assert_eq!(essentials(&log[1]), ours, "real curl vs onrush");
    }
}

#[test]
fn a_command_from_stdin_is_appended_to_a_plan_keeping_its_comments() {
    let echo = Echo::start();
    let dir = temp_dir("import-curl-append");
    let plan = dir.join("plan.yaml");
    let original = format!(
        "# the smoke test\ntarget: http://127.0.0.1:{}\nscenarios:\n  - name: first\n    load: {{ vus: 1, iterations: 2 }}\n    steps:\n      - get: /one   # keep me\n  - name: second\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n      - get: /two\n",
        echo.port
    );
    std::fs::write(&plan, &original).unwrap();
    // As Chrome's "Copy as cURL (bash)" pastes it: continuations and $'...'.
    let pasted = format!(
        "curl 'http://127.0.0.1:{}/api/items' \\\n  -H 'content-type: application/x-www-form-urlencoded' \\\n  --data-raw $'name=it\\'s&qty=3' \\\n  --frobnicate\n",
        echo.port
    );
    let mut child = onrush()
        .args(["import", "curl", "--append"])
        .arg(&plan)
        .args(["--scenario", "second", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(pasted.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("warning: --frobnicate: not understood"),
        "{}",
        text(&output)
    );
    let appended = std::fs::read_to_string(&plan).unwrap();
    assert!(
        appended.starts_with(&original[..original.find("      - get: /two").unwrap()]),
        "{appended}"
    );
    assert!(
        appended.contains("# the smoke test") && appended.contains("# keep me"),
        "{appended}"
    );
    run_expect(0, &["run", plan.to_str().unwrap()], &dir.join("out"));
    let log = echo.log();
    let paths: Vec<&str> = log.iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert_eq!(
        paths.iter().filter(|p| **p == "/one").count(),
        2,
        "{paths:?}"
    );
    let posted: Vec<&serde_json::Value> =
        log.iter().filter(|r| r["path"] == "/api/items").collect();
    assert_eq!(posted.len(), 1, "{paths:?}");
    assert_eq!(posted[0]["method"], "POST");
    assert_eq!(posted[0]["body"], "name=it's&qty=3");
}
