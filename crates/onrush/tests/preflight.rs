//! Before a run starts, what the plan asks is checked against what this host can give: a run
//! that would die (killed for memory, threads that cannot start) is refused with the numbers
//! and the fix; what might hurt (bodies kept by every VU, threads beyond the cores) warns.

use crate::common::*;

use std::time::{Duration, Instant};

#[test]
fn ten_million_vus_are_refused_with_the_numbers_before_anything_is_allocated() {
    let out = temp_dir("preflight-vus");
    let started = Instant::now();
    let output = onrush()
        .args(["quick", "http://127.0.0.1:9/", "-c", "10000000", "-d", "1s"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: memory (") && stderr.contains("10,000,000 VUs"),
        "{stderr}"
    );
    assert!(stderr.contains("split the load"), "{stderr}");
    assert!(stderr.contains("--no-preflight"), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "refused before any VU was made"
    );
    assert!(!out.join("summary.json").exists());
}

#[test]
fn worker_threads_beyond_what_onrush_starts_are_refused() {
    let out = temp_dir("preflight-threads");
    let output = onrush()
        .args(["quick", "http://127.0.0.1:9/", "-n", "1", "-t", "100000"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: threads (100000 worker threads"),
        "{stderr}"
    );
    assert!(stderr.contains("-t "), "the fix names the flag: {stderr}");
    // Not even with --no-preflight: such a thread would die setting up its stack.
    let output = onrush()
        .args([
            "quick",
            "http://127.0.0.1:9/",
            "-n",
            "1",
            "-t",
            "100000",
            "--no-preflight",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("runs it anyway"), "{stderr}");
}

#[test]
fn a_few_threads_beyond_the_cores_warn_and_run() {
    let server = Server::start();
    let cores = std::thread::available_parallelism().unwrap().get();
    let threads = (cores + 1).to_string();
    let out = temp_dir("preflight-threads-warn");
    let output = onrush()
        .args([
            "quick",
            &server.url("/"),
            "-n",
            "4",
            "-c",
            "2",
            "-t",
            &threads,
            "--quiet",
        ])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning: threads ("), "{stderr}");
    assert_eq!(u64_at(&summary(&out), "/totals/requests"), 4);
}

#[test]
fn validate_warns_when_bodies_kept_by_every_vu_exceed_the_memory() {
    let dir = temp_dir("preflight-bodies");
    let plan = write_plan(
        &dir,
        r#"
target: http://127.0.0.1:9
http: { body_limit: 512MiB }
scenarios:
  - name: big
    load: { vus: 1000, duration: 5s }
    steps:
      - { get: /, check: { body_contains: ok } }
"#,
    );
    let output = onrush()
        .args(["validate", plan.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning: memory ("), "{stderr}");
    assert!(
        stderr.contains("(VUs × body_limit)") && stderr.contains("lower http.body_limit"),
        "{stderr}"
    );
}
