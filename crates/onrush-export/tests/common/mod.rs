//! Shared helpers: synthetic seconds from the real collector, free ports, receiver processes
//! and a small HTTP/1.0 client.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use onrush_export::DEFAULT_BUCKETS_S;
use onrush_metrics::{
    Collector, FailureClass, Layout, RequestRecord, RunInfo, SecondData, WorkerMetrics,
};

/// A step name with every character the formats must escape or quote.
pub const TRICKY: &str = "say \"hi\", a\\b = c\nd é";

pub fn layout() -> Layout {
    Layout::new([
        ("browse", vec!["home", "search"]),
        ("open model", vec![TRICKY]),
    ])
    .with_check(0, "status is 200", 0)
}

/// Latency values (µs) recorded per (scenario, step), to check bucket counts against.
pub struct Run {
    pub collector: Collector,
    pub seconds: Vec<SecondData>,
    /// `values[scenario][step]`: every latency recorded.
    pub values: Vec<Vec<Vec<u64>>>,
}

pub const START_MS: u64 = 1_767_225_600_000;

/// `n` seconds of synthetic traffic through two workers and the real collector. Latencies
/// are spread from 60 µs to ~3 s, never within 0.1% above a bucket bound (where HDR buckets
/// would straddle it), so raw-value counts per bucket are exact expectations.
pub fn run(n: u64, start_ms: u64) -> Run {
    let layout = layout();
    let mut workers = [WorkerMetrics::new(&layout), WorkerMetrics::new(&layout)];
    let mut collector = Collector::new(layout.clone(), RunInfo::new("export-test", start_ms));
    let mut values: Vec<Vec<Vec<u64>>> = layout
        .scenarios
        .iter()
        .map(|s| s.steps.iter().map(|_| Vec::new()).collect())
        .collect();
    let bounds: Vec<u64> = DEFAULT_BUCKETS_S
        .iter()
        .map(|s| (s * 1e6).round() as u64)
        .collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut seconds = Vec::new();
    for t in 0..n {
        for (wi, w) in workers.iter_mut().enumerate() {
            for (si, scenario_values) in values.iter_mut().enumerate() {
                w.set_active_vus(si, 3 + wi as u32 + t as u32);
                for _ in 0..(5 + t) {
                    w.record_iteration(si);
                }
                if si == 1 {
                    w.record_dropped_iteration(si);
                    w.record_connection_opened(si);
                }
                for (st, step_values) in scenario_values.iter_mut().enumerate() {
                    let count = 40 + 13 * st as u64 + 7 * t + wi as u64;
                    for i in 0..count {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        // Log-spread: 60 µs .. ~3 s.
                        let exp = (x >> 40) % 16;
                        let mut v = 60 + ((x >> 8) % 100) * (1u64 << exp) / 4;
                        if let Some(b) = bounds.iter().find(|&&b| v > b && v <= b + b / 1000 + 1) {
                            v = b - 1;
                        }
                        let (status, failure) = match i % 23 {
                            0 => (503, Some(FailureClass::Http5xx)),
                            7 if st == 0 => (0, Some(FailureClass::Timeout)),
                            _ => (200, None),
                        };
                        w.record_request(
                            si,
                            st,
                            &RequestRecord {
                                latency_us: v,
                                service_us: v,
                                connect_us: None,
                                ttfb_us: Some(v / 2),
                                bytes_in: 1000 + i,
                                bytes_out: 90,
                                status,
                                failure,
                                handshake: None,
                            },
                        );
                        if si == 0 && st == 0 {
                            w.record_check(0, 0, status == 200);
                        }
                        step_values.push(v);
                    }
                }
            }
            collector.add(t, w.take_snapshot());
        }
        collector.close_second(t);
        seconds.extend(collector.closed_seconds().iter().cloned());
    }
    Run {
        collector,
        seconds,
        values,
    }
}

/// A port free at the time of the call on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A 127.0.0.1 address where nothing listens (connection refused).
pub fn dead_addr() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = l.local_addr().unwrap();
    drop(l);
    a
}

/// Finds a receiver binary. Under `CI=true` a missing binary fails the test (CI installs them
/// with `tests/install-receivers.sh`); elsewhere the test is skipped with a loud message.
pub fn receiver_binary(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        let msg = format!(
            "\n\n!!!!!!!! `{name}` is not installed: run crates/onrush-export/tests/install-receivers.sh \
             (Debian packages prometheus and influxdb) to run this test against a real receiver !!!!!!!!\n"
        );
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg}(CI=true: a missing receiver is a failure)");
        }
        eprintln!("{msg}SKIPPED (outside CI)\n");
    }
    found
}

/// A child process killed (and reaped) on drop, with its temporary directory removed.
pub struct Proc {
    pub child: Child,
    pub dir: PathBuf,
    pub name: &'static str,
}

impl Proc {
    pub fn spawn(name: &'static str, cmd: &mut Command, dir: PathBuf) -> Proc {
        let log = std::fs::File::create(dir.join("log.txt")).unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        Proc { child, dir, name }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log.txt")).unwrap_or_default()
    }

    /// Panics with the log when the process exited.
    pub fn check_alive(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("{} exited ({status}):\n{}", self.name, self.log());
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "onrush-export-{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// An HTTP/1.0 request (so the body ends at the connection's close); returns status and body.
pub fn http(
    addr: SocketAddr,
    method: &str,
    target: &str,
    body: &[u8],
) -> std::io::Result<(u16, Vec<u8>, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut req = format!("{method} {target} HTTP/1.0\r\nHost: {addr}\r\n");
    if !body.is_empty() || method == "POST" {
        req.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes())?;
    s.write_all(body)?;
    let mut resp = Vec::new();
    s.read_to_end(&mut resp)?;
    let end = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no response head"))?;
    let head = String::from_utf8_lossy(&resp[..end]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, resp[end + 4..].to_vec(), head))
}

/// Percent-encoding of a query-string value.
pub fn urlencode(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

/// Polls `f` until it returns `Some` or `timeout` passes.
pub fn wait_for<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn write_file(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

/// The statements of the ```LANG code blocks of docs/metrics-export.md (one per non-empty,
/// non-comment line), so the documented queries are run against the real servers.
pub fn doc_queries(lang: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/metrics-export.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("```") {
            inside = !inside && line == format!("```{lang}");
            continue;
        }
        let l = line.trim();
        if inside && !l.is_empty() && !l.starts_with('#') && !l.starts_with("--") {
            out.push(l.to_string());
        }
    }
    assert!(!out.is_empty(), "no {lang} block in {}", path.display());
    out
}
