//! Results are not lost: a run writes its seconds as it goes, so a run killed with SIGKILL (or
//! by a second Ctrl-C) leaves a directory that `report`, `export` and `merge` read; SIGHUP
//! stops a run like SIGTERM, even with its terminal gone; `merge` never writes over an input
//! and keeps what it can of the inputs' summaries.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::*;

/// A child `onrush` killed (and reaped) when the test ends, whatever happens.
struct Running(Child);

impl Running {
    fn start(cmd: &mut Command) -> Running {
        Running(cmd.spawn().expect("onrush starts"))
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill with the PID of a child this test started and has not reaped.
        unsafe { libc::kill(self.0.id() as i32, signal) };
    }

    /// Waits up to `limit` for the exit; its code (`None`: killed by a signal).
    fn wait(&mut self, limit: Duration) -> Option<i32> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status.code();
            }
            assert!(
                start.elapsed() < limit,
                "onrush did not exit within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `onrush quick URL` for 60 s into `out`, output discarded.
fn long_quick(server: &Server, out: &Path, quiet: bool) -> Command {
    let mut cmd = onrush();
    cmd.args([
        "quick",
        &server.url("/delay/1"),
        "-c",
        "4",
        "-d",
        "60s",
        "--out",
    ])
    .arg(out)
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    if quiet {
        cmd.arg("-q");
    }
    cmd
}

/// The seconds of `dir/intervals.jsonl` that have a step line.
fn seconds_written(dir: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(dir.join("intervals.jsonl")).unwrap_or_default();
    let mut seconds: Vec<u64> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|l| l["kind"] == "step")
        .filter_map(|l| l["t"].as_u64())
        .collect();
    seconds.dedup();
    seconds
}

/// Waits (up to 20 s: the machine may be busy) until `dir` holds `n` complete seconds.
fn wait_for_seconds(dir: &Path, n: usize) {
    let start = Instant::now();
    while seconds_written(dir).len() < n {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no {n} seconds in {} after 20 s",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn cli(args: &[&str], dirs: &[&Path]) -> Output {
    onrush().args(args).args(dirs).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A run killed with SIGKILL once it has written 2 seconds.
fn killed_run(server: &Server, name: &str) -> PathBuf {
    let out = temp_dir(name).join("out");
    let mut run = Running::start(&mut long_quick(server, &out, true));
    // ~3 s into the run: two seconds closed.
    wait_for_seconds(&out, 2);
    run.signal(libc::SIGKILL);
    assert_eq!(run.wait(Duration::from_secs(5)), None, "killed by a signal");
    out
}

#[test]
fn a_run_killed_with_sigkill_leaves_what_report_export_and_merge_read() {
    let server = Server::start();
    let out = killed_run(&server, "sigkill");
    assert!(!out.join("summary.json").exists());
    let seconds = seconds_written(&out);
    assert!(seconds.len() >= 2, "{seconds:?}");
    let header = std::fs::read_to_string(out.join("intervals.jsonl")).unwrap();
    assert!(header
        .lines()
        .next()
        .unwrap()
        .contains("\"unfinished\":true"));
    // The generator's line of a second follows its intervals by a moment: the kill may fall
    // between them.
    let generator = std::fs::read_to_string(out.join("generator.jsonl")).unwrap();
    assert!(
        generator.lines().count() + 1 >= seconds.len(),
        "{generator}"
    );

    let report = cli(&["report"], &[&out]);
    assert_eq!(report.status.code(), Some(0), "{}", text(&report));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("DID NOT FINISH"));
    let note = stderr(&report);
    assert!(
        note.contains("note: ")
            && note.contains("the run did not finish")
            && note.contains("no summary.json: the summary is rebuilt from intervals.jsonl"),
        "{note}"
    );

    let export = cli(&["export", "--csv"], &[&out]);
    assert_eq!(export.status.code(), Some(0), "{}", text(&export));
    let csv = String::from_utf8_lossy(&export.stdout);
    assert!(csv.lines().count() > seconds.len(), "{csv}");
    assert!(
        stderr(&export).contains("the run did not finish"),
        "{}",
        text(&export)
    );

    let merged = out.parent().unwrap().join("merged");
    let merge = cli(&["merge"], &[&out, Path::new("--out"), &merged]);
    assert_eq!(merge.status.code(), Some(0), "{}", text(&merge));
    let s = summary(&merged);
    assert_eq!(s["interrupted"], true);
    assert_eq!(u64_at(&s, "/run/seconds"), seconds.len() as u64);
    assert!(u64_at(&s, "/totals/requests") > 0);
}

#[test]
fn a_last_line_cut_short_is_skipped_with_a_note() {
    let server = Server::start();
    let out = killed_run(&server, "cut");
    // The kill came in the middle of a write: the last line lost its end.
    let path = out.join("intervals.jsonl");
    let text_before = std::fs::read_to_string(&path).unwrap();
    let lines = text_before.lines().count();
    std::fs::write(&path, &text_before[..text_before.len() - 20]).unwrap();
    let want = format!("intervals.jsonl:{lines}: the last line is cut short");
    for args in [&["report"][..], &["export", "--csv"]] {
        let o = cli(args, &[&out]);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
        let note = stderr(&o);
        assert!(
            note.contains(&want) && note.contains("skipped"),
            "{args:?}: {note}"
        );
    }
}

#[test]
fn a_second_ctrl_c_still_leaves_a_readable_directory() {
    let server = Server::start();
    let out = temp_dir("ctrl-c-twice").join("out");
    let mut run = Running::start(&mut long_quick(&server, &out, true));
    wait_for_seconds(&out, 2);
    run.signal(libc::SIGINT);
    // Apart enough to be two signals (not merged into one pending), too close for the first
    // to have finished writing: the second exits at once with what is on disk.
    std::thread::sleep(Duration::from_millis(5));
    run.signal(libc::SIGINT);
    assert_eq!(run.wait(Duration::from_secs(10)), Some(130));
    // Wherever the second Ctrl-C cut the end of the run short, the directory reads.
    let report = cli(&["report"], &[&out]);
    assert_eq!(report.status.code(), Some(0), "{}", text(&report));
    assert!(out.join("report.html").exists());
    let export = cli(&["export", "--csv"], &[&out]);
    assert_eq!(export.status.code(), Some(0), "{}", text(&export));
}

#[test]
fn sighup_stops_a_run_like_sigterm_even_with_its_terminal_gone() {
    let server = Server::start();
    let out = temp_dir("sighup").join("out");
    // Not quiet, and both outputs closed: what a run sees when its terminal or SSH session
    // goes away (its live status and its end-of-run table have nowhere to go).
    let mut cmd = long_quick(&server, &out, false);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut run = Running::start(&mut cmd);
    drop(run.0.stdout.take());
    drop(run.0.stderr.take());
    wait_for_seconds(&out, 2);
    run.signal(libc::SIGHUP);
    // The exit code of an interrupted run (README.md, "Exit codes").
    assert_eq!(run.wait(Duration::from_secs(10)), Some(130));
    let s = summary(&out);
    assert_eq!(s["interrupted"], true);
    assert!(u64_at(&s, "/totals/requests") > 0);
    assert!(s["generator"]["verdict"].is_string(), "{s:#}");
    assert!(out.join("report.html").exists());
    let header = std::fs::read_to_string(out.join("intervals.jsonl")).unwrap();
    assert!(!header.lines().next().unwrap().contains("unfinished"));
}

#[test]
fn merge_refuses_an_output_that_is_an_input() {
    let server = Server::start();
    let dir = temp_dir("merge-into-input");
    let q = dir.join("q");
    run_expect(0, &["quick", &server.url("/"), "-n", "50", "-c", "2"], &q);
    let before = std::fs::read(q.join("summary.json")).unwrap();
    // Also when named another way.
    let also_q = dir.join(".").join("q");
    for out in [&q, &also_q] {
        let o = cli(&["merge"], &[&q, Path::new("--out"), out]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let e = stderr(&o);
        assert!(
            e.contains("this is one of the directories to merge")
                && e.contains("give another directory to --out"),
            "{e}"
        );
    }
    assert_eq!(std::fs::read(q.join("summary.json")).unwrap(), before);
}

#[test]
fn merge_keeps_what_a_merge_can_keep_of_the_summaries() {
    let server = Server::start();
    let dir = temp_dir("merge-keeps");
    let q = dir.join("q");
    run_expect(0, &["quick", &server.url("/"), "-n", "50", "-c", "2"], &q);
    let r = dir.join("r");
    let o = cli(&["merge"], &[&q, Path::new("--out"), &r]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (a, m) = (summary(&q), summary(&r));
    for key in [
        "generator",
        "vars",
        "load",
        "machine",
        "threads",
        "interrupted",
    ] {
        assert!(!a[key].is_null(), "the run wrote {key}: {a:#}");
        assert_eq!(m[key], a[key], "{key}");
    }
    assert_eq!(m["totals"]["requests"], a["totals"]["requests"]);
    assert_eq!(m["totals"]["latency_ms"], a["totals"]["latency_ms"]);
    // Two runs: threads add up, the machine (the same one) is kept.
    let both = dir.join("both");
    let o = cli(&["merge"], &[&q, &r, Path::new("--out"), &both]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let b = summary(&both);
    assert_eq!(u64_at(&b, "/threads"), 2 * u64_at(&a, "/threads"));
    assert_eq!(b["machine"], a["machine"]);
    assert_eq!(b["generator"]["verdict"], a["generator"]["verdict"]);
}
