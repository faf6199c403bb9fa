//! End to end: `exec:` / `shell:` steps run by `onrush run`. The commands themselves are the
//! witnesses (each run appends a line to a file), and an HTTP server onrush did not write
//! (Python's http.server, tests/servers/record_http_server.py) counts what later steps sent
//! with the values extracted from a command's output.

use crate::common;
use common::*;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// The Python recording HTTP server, stopped (by closing its stdin) when dropped.
pub(crate) struct RecordServer {
    child: Child,
    pub port: u16,
}

impl RecordServer {
    pub fn start() -> Self {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/servers/record_http_server.py"
        );
        let mut child = Command::new("python3")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the recording HTTP server");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().expect("the server prints its port");
        RecordServer { child, port }
    }

    /// The server's own counts: `"path /x"` and `"auth <Authorization>"` → requests.
    pub fn counts(&self) -> serde_json::Map<String, serde_json::Value> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.write_all(b"GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        let body = reply.split_once("\r\n\r\n").expect("a head").1;
        serde_json::from_str::<serde_json::Value>(body)
            .expect("JSON counts")
            .as_object()
            .unwrap()
            .clone()
    }

    #[allow(dead_code)]
    pub fn count(&self, key: &str) -> u64 {
        self.counts().get(key).and_then(|v| v.as_u64()).unwrap_or(0)
    }
}

impl Drop for RecordServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// Lines of `path` (none when it does not exist).
pub(crate) fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn exec_steps_run_templated_commands_time_out_and_feed_later_steps() {
    let server = RecordServer::start();
    let dir = temp_dir("exec");
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let plan = format!(
        r#"
target: http://127.0.0.1:{port}
http: {{ timeout: 5s }}
scenarios:
  - name: tools
    load: {{ vus: 3, iterations: 4 }}
    steps:
      - name: prepare
        exec: [sh, -c, 'echo "vu=$1 it=$2 env=$TAG" >> runs.txt; echo "token=t$1-$2"; echo "warn-$1" >&2', sh, "${{vu}}", "${{iteration}}"]
        env: {{ TAG: "tag-${{vu}}" }}
        cwd: work
        extract: {{ tok: {{ regex: "token=(\\S+)" }}, warning: {{ header: stderr }} }}
        check: {{ body_contains: "token=" }}
      - {{ name: use, get: "/item/${{tok}}/${{warning}}" }}
      - {{ name: fails, shell: "echo failing >&2; exit 3" }}
      - {{ name: allowed, shell: "exit 3", expect_exit: [0, 3] }}
      - {{ name: stuck, shell: "sleep 30 & echo $! >> sleepers.txt; wait", cwd: work, timeout: 300ms }}
      - {{ name: input, shell: "tr a-z A-Z", stdin: "hello ${{tok}}", check: {{ body_contains: "HELLO T" }} }}
      - {{ name: flood, shell: "head -c 3000000 /dev/zero", max_output: 1KiB, check: {{ body_size: 3000000 }} }}
      - {{ name: missing, exec: [/nonexistent/tool-onrush-test] }}
"#,
        port = server.port
    );
    let path = write_plan(&dir, &plan);
    // Some steps fail by design; without thresholds the run still exits 0.
    let s = run_expect(0, &["run", path.to_str().unwrap()], &dir.join("out"));

    // The command's own record of its runs equals onrush's count, templated values included.
    let runs = lines(&dir.join("work/runs.txt"));
    assert_eq!(runs.len(), 12, "{runs:?}");
    assert_eq!(u64_at(step(&s, "tools", "prepare"), "/requests"), 12);
    assert_eq!(
        u64_at(step(&s, "tools", "prepare"), "/failures"),
        0,
        "{s:#}"
    );
    for vu in 1..=3 {
        for it in 0..4 {
            let line = format!("vu={vu} it={it} env=tag-{vu}");
            assert!(runs.contains(&line), "{line} missing from {runs:?}");
        }
    }
    // stdout and stderr extracted, used by an HTTP step: the server saw each exact path.
    let counts = server.counts();
    for vu in 1..=3 {
        for it in 0..4 {
            let key = format!("path /item/t{vu}-{it}/warn-{vu}");
            assert_eq!(
                counts.get(&key).and_then(|v| v.as_u64()),
                Some(1),
                "{key}: {counts:?}"
            );
        }
    }
    assert_eq!(u64_at(step(&s, "tools", "use"), "/failures"), 0, "{s:#}");

    let class = |name: &str, class: &str| {
        step(&s, "tools", name)
            .pointer(&format!("/failures_by_class/{class}"))
            .and_then(|v| v.as_u64())
            .unwrap_or(0)
    };
    assert_eq!(class("fails", "unexpected_status"), 12, "{s:#}");
    assert_eq!(
        u64_at(step(&s, "tools", "allowed"), "/failures"),
        0,
        "{s:#}"
    );
    assert_eq!(class("stuck", "timeout"), 12, "{s:#}");
    assert_eq!(class("missing", "io"), 12, "{s:#}");
    assert_eq!(u64_at(step(&s, "tools", "input"), "/failures"), 0, "{s:#}");
    assert_eq!(u64_at(step(&s, "tools", "flood"), "/failures"), 0, "{s:#}");
    // The timeout cut each command at 300 ms, not at the sleep's 30 s.
    let stuck_max = f64_at(step(&s, "tools", "stuck"), "/latency_ms/max");
    assert!(
        (300.0..2000.0).contains(&stuck_max),
        "stuck max {stuck_max} ms"
    );
    // ...and killed the whole process group: the shell's background sleep is gone too.
    let sleepers = lines(&dir.join("work/sleepers.txt"));
    assert_eq!(sleepers.len(), 12, "{sleepers:?}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    for pid in sleepers {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let alive = !stat.is_empty() && !stat.contains(") Z ") && stat.contains("(sleep)");
        assert!(!alive, "sleep {pid} outlived its step's timeout: {stat}");
    }
    let examples = s.pointer("/failure_examples").expect("failure examples");
    let io = examples["io"].as_str().unwrap();
    assert!(io.contains("/nonexistent/tool-onrush-test"), "{io}");
    let status = examples["unexpected_status"].as_str().unwrap();
    assert!(
        status.contains("exited with 3") && status.contains("failing"),
        "{status}"
    );
}

#[test]
fn a_vu_waiting_on_a_command_does_not_hold_up_its_worker() {
    let server = Server::start();
    let dir = temp_dir("exec-nonblocking");
    let plan = format!(
        r#"
target: http://127.0.0.1:{port}
scenarios:
  - name: slow
    load: {{ vus: 1, iterations: 1 }}
    steps:
      - {{ name: wait, shell: "sleep 2" }}
  - name: busy
    load: {{ vus: 2, duration: 2s }}
    steps:
      - {{ get: / }}
      - {{ think: 20ms }}
"#,
        port = server.port()
    );
    let path = write_plan(&dir, &plan);
    let s = run_expect(
        0,
        &["run", path.to_str().unwrap(), "-t", "1"],
        &dir.join("out"),
    );
    let waited = f64_at(step(&s, "slow", "wait"), "/latency_ms/min");
    assert!(waited >= 1900.0, "the command took {waited} ms");
    // On the one worker, while its other VU waited 2 s for `sleep`: 2 VUs every ~20 ms.
    let busy = u64_at(scenario(&s, "busy"), "/requests");
    assert!(busy >= 60, "only {busy} requests while a VU waited: {s:#}");
    assert_eq!(server.stats().requests, busy, "the server's own count");
}
