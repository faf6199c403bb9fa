//! Helpers shared by the end-to-end tests: run the real `onrush` binary against the built-in
//! server started in the test process, and read what it wrote.

#![allow(dead_code)]

pub mod netns;
pub mod py_server;

// Not every test binary that includes `common` runs a Python server (bench.rs does not).
#[allow(unused_imports)]
pub use py_server::PyServer;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub fn onrush() -> Command {
    Command::new(env!("CARGO_BIN_EXE_onrush"))
}

pub struct Server(pub Option<onrush_server::ServerHandle>);

impl Server {
    pub fn start() -> Self {
        let handle = onrush_server::start(onrush_server::ServerConfig {
            addr: "127.0.0.1:0".parse().unwrap(),
            threads: 1,
        })
        .expect("the built-in server starts");
        Server(Some(handle))
    }
    pub fn port(&self) -> u16 {
        self.0.as_ref().unwrap().local_addr().port()
    }
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port())
    }
    pub fn stats(&self) -> onrush_server::Stats {
        self.0.as_ref().unwrap().stats()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.0.take() {
            s.shutdown();
        }
    }
}

/// A fresh directory for one test, `onrush-test-NAME-PID` in the system's temporary directory.
/// It stays after the test (to look at when it fails); the first call of a test process removes
/// those left by earlier runs whose process is gone, so they do not pile up run after run.
pub fn temp_dir(name: &str) -> PathBuf {
    static SWEEP: std::sync::Once = std::sync::Once::new();
    SWEEP.call_once(remove_dead_runs_dirs);
    let dir = std::env::temp_dir().join(format!("onrush-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Removes the `onrush-test-*-PID` directories of processes that no longer run.
fn remove_dead_runs_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("onrush-test-")) else {
            continue;
        };
        let Some(pid) = rest.rsplit('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

pub fn write_plan(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("plan.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

pub fn summary(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json written");
    serde_json::from_str(&text).expect("summary.json is JSON")
}

pub fn step<'a>(summary: &'a Value, scenario: &str, name: &str) -> &'a Value {
    summary["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["scenario"] == scenario && s["name"] == name)
        .unwrap_or_else(|| panic!("no step {scenario}/{name} in {summary:#}"))
}

pub fn scenario<'a>(summary: &'a Value, name: &str) -> &'a Value {
    summary["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no scenario {name} in {summary:#}"))
}

pub fn text(output: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

pub fn u64_at(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no integer at {pointer} in {v:#}"))
}

pub fn f64_at(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("no number at {pointer} in {v:#}"))
}

/// Runs `onrush ARGS --quiet --out OUT`, asserts the exit code, and returns summary.json.
pub fn run_expect(code: i32, args: &[&str], out: &Path) -> Value {
    let output = onrush()
        .args(args)
        .arg("--quiet")
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(code), "{}", text(&output));
    summary(out)
}

/// Writes `plan` (with `{port}` replaced by the server's) and runs it; returns summary.json.
pub fn run_plan_text(server: &Server, name: &str, plan: &str, extra: &[&str]) -> Value {
    let dir = temp_dir(name);
    let path = write_plan(&dir, &plan.replace("{port}", &server.port().to_string()));
    let mut args = vec!["run", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    run_expect(0, &args, &dir.join("out"))
}

/// The misbehaving HTTP/1.1 server of tests/servers/rogue_http_server.py (Python's
/// socketserver, not onrush's code): answers twice, or never, and counts what it received.
/// Stopped (its stdin closed) when dropped.
pub struct RogueServer {
    child: std::process::Child,
    pub port: u16,
    pub host: String,
}

impl RogueServer {
    pub fn start() -> Self {
        Self::start_on("127.0.0.1")
    }

    /// The server listening on another local address (e.g. a veth end).
    pub fn start_on(host: &str) -> Self {
        use std::io::BufRead;
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/servers/rogue_http_server.py"
        );
        let mut child = Command::new("python3")
            .arg(script)
            .env("ROGUE_BIND", host)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs the rogue server");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the server prints its port");
        RogueServer {
            child,
            port,
            host: host.to_string(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}:{}{path}", self.host, self.port)
    }

    /// Requests the server received (its own count).
    pub fn received(&self) -> u64 {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect((self.host.as_str(), self.port)).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        s.write_all(b"GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut reply = Vec::new();
        let mut buf = [0u8; 512];
        // Read by Content-Length: the server keeps the connection open for more.
        loop {
            let n = s.read(&mut buf).unwrap();
            assert!(
                n > 0,
                "no /stats answer: {:?}",
                String::from_utf8_lossy(&reply)
            );
            reply.extend_from_slice(&buf[..n]);
            let Some(at) = reply.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            let head = String::from_utf8_lossy(&reply[..at]).into_owned();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|v| v.parse().ok())
                .expect("a Content-Length");
            let body = &reply[at + 4..];
            if body.len() >= len {
                return String::from_utf8_lossy(&body[..len]).parse().unwrap();
            }
        }
    }
}

impl Drop for RogueServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}
