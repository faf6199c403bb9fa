//! The hostile-target matrix (docs/results.md, "Hostile targets"): a server that resets, stalls,
//! floods, lies about lengths, answers twice or sends a decompression bomb
//! (tests/servers/hostile_server.py). For each behaviour the run ends on time, its failures
//! carry the class a user is told about, the process's peak RSS stays under a fixed ceiling,
//! and nothing panics. Behaviours run in parallel threads: the matrix is bounded by its
//! slowest case, not the sum.

use crate::common::*;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Peak RSS allowed for any behaviour. A healthy `onrush quick` run peaks at ~10-15 MB on
/// these machines; a decoded 1 GiB bomb or a flood kept in a buffer would pass it by far.
const RSS_CEILING_MB: f64 = 48.0;

/// tests/servers/hostile_server.py, stopped (its stdin closed) when dropped.
struct Hostile {
    child: std::process::Child,
    ports: Value,
}

impl Hostile {
    fn start(tls: &(PathBuf, PathBuf), br_bomb: &Path) -> Self {
        use std::io::BufRead;
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/servers/hostile_server.py"
        );
        let mut child = std::process::Command::new("python3")
            .arg(script)
            .arg("--tls")
            .args([&tls.0, &tls.1])
            .arg("--br-bomb")
            .arg(br_bomb)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the hostile server");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ports = serde_json::from_str(&line).expect("the server prints its ports");
        Hostile { child, ports }
    }

    fn port(&self, which: &str) -> u16 {
        self.ports[which].as_u64().unwrap() as u16
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// What one run of the matrix did.
struct Ran {
    code: Option<i32>,
    wall: Duration,
    /// The child's peak RSS in MB: its VmHWM, polled from /proc while it runs, or what onrush
    /// recorded of itself at the end (summary.json `generator.rss_mb_peak`), the larger.
    /// (wait4's ru_maxrss would count the test process's memory the child had before exec.)
    peak_mb: f64,
    stderr: String,
    stdout: String,
}

/// VmHWM of onrush process `pid` in MB (0 once it is gone, or before its exec is through).
///
/// `spawn` returns once the kernel has let go of the vfork'd child, which happens a moment
/// *before* the child's memory map is switched to onrush's: read in that window, the child's
/// status shows this test process's name and memory (its VmHWM was 231 MB in a CI run,
/// when another test had made this process big). The name is set after the switch, so a
/// status that names onrush is onrush's.
fn vm_hwm_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .filter(|s| {
            s.lines()
                .any(|l| l.strip_prefix("Name:").map(str::trim) == Some("onrush"))
        })
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Runs onrush with `args` (plus `--quiet --out OUT`) and waits at most `deadline`: a run
/// still going then is killed and the test fails. Peak RSS is polled from the kernel's
/// account (VmHWM) every 20 ms, not only taken from onrush's account of itself.
fn run_bounded(args: &[String], out: &Path, deadline: Duration) -> Ran {
    let log = out.with_extension("log");
    std::fs::create_dir_all(&log).unwrap();
    let mut child = onrush()
        .args(args)
        .arg("--quiet")
        .arg("--out")
        .arg(out)
        .stdout(std::fs::File::create(log.join("stdout")).unwrap())
        .stderr(std::fs::File::create(log.join("stderr")).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut peak_mb: f64 = 0.0;
    let status = loop {
        // Before reaping: a live process's /proc/PID/status has its VmHWM.
        peak_mb = peak_mb.max(vm_hwm_mb(child.id()));
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{args:?} still running after {deadline:?}: killed\n{}",
                std::fs::read_to_string(log.join("stderr")).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let code = status.code();
    let own = std::fs::read_to_string(out.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|s| s.pointer("/generator/rss_mb_peak").and_then(Value::as_f64))
        .unwrap_or(0.0);
    Ran {
        code,
        wall: started.elapsed(),
        peak_mb: peak_mb.max(own),
        stderr: std::fs::read_to_string(log.join("stderr")).unwrap(),
        stdout: std::fs::read_to_string(log.join("stdout")).unwrap(),
    }
}

/// One behaviour of the matrix.
struct Case {
    name: String,
    /// onrush's arguments; `{http}`, `{tls}`, `{h2_*}` are the server's ports, `{dir}` the
    /// case's own directory.
    args: Vec<String>,
    /// A plan written to `{dir}/plan.yaml` first, when the case runs one.
    plan: Option<String>,
    /// Expected exit code: 4 when no request succeeded, 0 when the behaviour is valid HTTP.
    code: i32,
    /// The one failure class every failed request must have (None: no failures at all).
    class: Option<String>,
    /// What the class's first message must say (the reason a user reads), if anything.
    says: String,
    /// Requests the run makes (every one accounted for).
    requests: u64,
    /// The wall time the run must end within (what its timeouts promise plus start-up).
    within: Duration,
}

/// The matrix, one behaviour a line (docs/results.md, "Hostile targets", is this table):
/// name | onrush's arguments | exit code | failure class (- for none) | requests | seconds it
/// must end within | what the class's message says (- for nothing checked).
/// `run PLAN:NAME` runs the plan NAME below.
const MATRIX: &str = "
reset mid-response | quick http://127.0.0.1:{http}/reset-mid -n 4 -c 2 --timeout 5s | 4 | reset | 4 | 15 | reset the connection
garbage status line | quick http://127.0.0.1:{http}/garbage -n 4 -c 2 | 4 | bad_response | 4 | 10 | not an HTTP/1.x status line
endless chunked body | quick http://127.0.0.1:{http}/endless-chunked -n 2 -c 2 --timeout 1s | 4 | timeout | 2 | 12 | -
10 MB header | quick http://127.0.0.1:{http}/huge-header -n 4 -c 2 | 4 | bad_response | 4 | 10 | larger than 64 KiB
slowloris (a byte a second) | quick http://127.0.0.1:{http}/slowloris -n 2 -c 2 --timeout 1s | 4 | timeout | 2 | 12 | -
accept, never answer | quick http://127.0.0.1:{http}/silent -n 2 -c 2 --timeout 1s | 4 | timeout | 2 | 12 | -
close without answering | quick http://127.0.0.1:{http}/close -n 4 -c 2 | 4 | closed_early | 4 | 10 | without sending a response
HTTP/1.0, body until close | quick http://127.0.0.1:{http}/http10 -n 4 -c 2 | 0 | - | 4 | 10 | -
invalid chunk size | quick http://127.0.0.1:{http}/bad-chunk -n 4 -c 2 | 4 | bad_response | 4 | 10 | invalid chunk size
Content-Length longer than the body | quick http://127.0.0.1:{http}/short-body -n 4 -c 2 | 4 | closed_early | 4 | 10 | 990 bytes before the end of the body
two responses to one request | quick http://127.0.0.1:{http}/twice -n 4 -c 1 | 4 | unsolicited_response | 4 | 10 | answer no request
gzip bomb (1 GiB of zeros, ~1 MB) | run PLAN:gzip-bomb | 0 | - | 2 | 60 | -
brotli bomb (1 GiB of zeros) | run PLAN:br-bomb | 0 | - | 2 | 60 | -
HTTP/2 SETTINGS flood | run PLAN:h2_settings | 4 | bad_response | 2 | 15 | SETTINGS flood
HTTP/2 PING flood | run PLAN:h2_ping | 4 | bad_response | 2 | 15 | PING flood
HTTP/2 RST_STREAM flood | run PLAN:h2_rst | 4 | reset | 2 | 15 | reset the HTTP/2 stream
TLS close_notify mid-body | quick https://127.0.0.1:{tls}/tls-close-notify -k -n 2 -c 1 | 4 | closed_early | 2 | 10 | 99000 bytes before the end
TLS connection cut mid-body | quick https://127.0.0.1:{tls}/tls-abrupt -k -n 2 -c 1 | 4 | closed_early | 2 | 10 | close_notify
TLS records broken mid-body | quick https://127.0.0.1:{tls}/tls-garbage -k -n 2 -c 1 | 4 | tls_protocol | 2 | 10 | corrupt message
";

/// A step that needs the body (a body check on its first bytes, and its decoded size) of a
/// response with `Content-Encoding`, decoded as it streams: `body_limit` (1 MiB) caps what is
/// kept, whatever the decoded size.
const BOMB_PLAN: &str = r#"
target: http://127.0.0.1:{http}
http: { timeout: 20s, decompress: true }
scenarios:
  - name: bomb
    load: { vus: 1, iterations: 2 }
    steps:
      - name: bomb
        get: /PATH
        check:
          - body_matches: '^\x00{64}'
          - body_size: 1073741824
"#;

/// An h2c (prior knowledge) run against one of the flooding ports.
const H2_PLAN: &str = r#"
target: http://127.0.0.1:{PORT}
http: { version: h2, timeout: 2s, connections: per_request }
scenarios:
  - name: flood
    load: { vus: 1, iterations: 2 }
    steps: [ { name: flooded, get: / } ]
"#;

fn matrix() -> Vec<Case> {
    let dash = |v: &str| (v != "-").then(|| v.to_string());
    MATRIX
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split(" | ").map(str::trim).collect();
            assert_eq!(f.len(), 7, "{line}");
            let mut args: Vec<String> = f[1].split_whitespace().map(String::from).collect();
            let mut plan = None;
            if let Some(name) = args.last().and_then(|a| a.strip_prefix("PLAN:")) {
                plan = Some(match name {
                    "gzip-bomb" | "br-bomb" => BOMB_PLAN.replace("PATH", name),
                    port => H2_PLAN.replace("{PORT}", &format!("{{{port}}}")),
                });
                *args.last_mut().unwrap() = "{dir}/plan.yaml".into();
            }
            Case {
                name: f[0].into(),
                args,
                plan,
                code: f[2].parse().unwrap(),
                class: dash(f[3]),
                says: dash(f[6]).unwrap_or_default(),
                requests: f[4].parse().unwrap(),
                within: Duration::from_secs(f[5].parse().unwrap()),
            }
        })
        .collect()
}

/// `text` with the server's ports and the case's directory filled in.
fn fill(text: &str, server: &Hostile, dir: &Path) -> String {
    let mut text = text.replace("{dir}", &dir.display().to_string());
    for key in ["http", "tls", "h2_settings", "h2_ping", "h2_rst"] {
        text = text.replace(&format!("{{{key}}}"), &server.port(key).to_string());
    }
    text
}

/// Runs one case; returns what went wrong, if anything, and the peak RSS.
fn check(case: &Case, server: &Hostile, root: &Path) -> (Vec<String>, f64, Duration) {
    let dir = root.join(case.name.replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
    std::fs::create_dir_all(&dir).unwrap();
    if let Some(plan) = &case.plan {
        std::fs::write(dir.join("plan.yaml"), fill(plan, server, &dir)).unwrap();
    }
    let args: Vec<String> = case.args.iter().map(|a| fill(a, server, &dir)).collect();
    let out = dir.join("out");
    // Twice the promise before the run is killed: a case over `within` but under this fails
    // with its measurements instead of a kill.
    let ran = run_bounded(&args, &out, case.within * 2);
    let mut wrong = Vec::new();
    let name = &case.name;
    if ran.code != Some(case.code) {
        wrong.push(format!(
            "{name}: exit {:?}, expected {}",
            ran.code, case.code
        ));
    }
    if ran.wall > case.within {
        wrong.push(format!(
            "{name}: took {:?}, more than {:?}",
            ran.wall, case.within
        ));
    }
    if ran.peak_mb > RSS_CEILING_MB {
        wrong.push(format!(
            "{name}: peak RSS {:.1} MB, over the {RSS_CEILING_MB} MB ceiling",
            ran.peak_mb
        ));
    }
    if ran.stderr.contains("panicked") || ran.stdout.contains("panicked") {
        wrong.push(format!("{name}: panicked\n{}", ran.stderr));
    }
    let Ok(text) = std::fs::read_to_string(out.join("summary.json")) else {
        wrong.push(format!("{name}: no summary.json\n{}", ran.stderr));
        return (wrong, ran.peak_mb, ran.wall);
    };
    let s: Value = serde_json::from_str(&text).unwrap();
    let requests = s["totals"]["requests"].as_u64().unwrap_or(0);
    let failures = s["totals"]["failures"].as_u64().unwrap_or(0);
    if requests != case.requests {
        wrong.push(format!(
            "{name}: {requests} requests, expected {}",
            case.requests
        ));
    }
    let by_class = s["totals"]["failures_by_class"].clone();
    let expected = match &case.class {
        Some(class) => serde_json::json!({ class: case.requests }),
        None => serde_json::json!({}),
    };
    if by_class != expected || (case.class.is_none() && failures != 0) {
        wrong.push(format!(
            "{name}: failures {by_class}, expected {expected}; first seen: {}",
            s["failure_examples"]
        ));
    }
    if let Some(class) = &case.class {
        let example = s["failure_examples"][class].as_str().unwrap_or("");
        if !example.contains(&case.says) {
            wrong.push(format!(
                "{name}: {class} says {example:?}, not {:?}",
                case.says
            ));
        }
    }
    (wrong, ran.peak_mb, ran.wall)
}

/// 1 GiB of zeros compressed with brotli (Python's standard library has no brotli), made once
/// per target directory.
fn brotli_bomb() -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hostile-br-bomb-1gib.br");
    if !path.exists() {
        let tmp = path.with_extension("tmp");
        let file = std::fs::File::create(&tmp).unwrap();
        let mut w = brotli::CompressorWriter::new(file, 1 << 16, 5, 24);
        let mib = vec![0u8; 1 << 20];
        for _ in 0..1024 {
            std::io::Write::write_all(&mut w, &mib).unwrap();
        }
        drop(w);
        std::fs::rename(&tmp, &path).unwrap();
    }
    path
}

/// A self-signed certificate for 127.0.0.1 (the client runs with -k).
fn tls_identity(dir: &Path) -> (PathBuf, PathBuf) {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let (c, k) = (dir.join("server.pem"), dir.join("server.key"));
    std::fs::write(&c, cert.pem()).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    (c, k)
}

#[test]
fn hostile_targets_end_on_time_classified_and_bounded() {
    let root = temp_dir("hostile");
    let server = Hostile::start(&tls_identity(&root), &brotli_bomb());
    let cases = matrix();
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = cases
            .iter()
            .map(|case| scope.spawn(|| check(case, &server, &root)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut wrong = Vec::new();
    for (case, (w, peak, wall)) in cases.iter().zip(results) {
        eprintln!(
            "{:40} {:>6.1} MB {:>6.2} s",
            case.name,
            peak,
            wall.as_secs_f64()
        );
        wrong.extend(w);
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
