//! User-space instructions per unit, counted by valgrind's cachegrind (`--cache-sim=no`: the
//! instruction count alone). Unlike CPU time, other processes competing for the CPU do not move
//! it, so it is the figure to compare across runs on shared, noisy machines.
//!
//! A count covers the whole process, start-up and write-out included; so each counted case
//! runs its plan at two lengths and reports the marginal cost: the difference in instructions
//! divided by the difference in units. onrush's plans are lengthened by `shared_iterations`,
//! wrk (which only knows durations) by time.
//!
//! What does not cancel is work done once a second, in proportion to the seconds the long run
//! lasts longer under valgrind: mostly the generator monitor's scan of every TCP socket on the
//! host (`/proc/net/tcp`), in the seconds that open connections. With a few hundred sockets it
//! is noise; with tens of thousands (TIME_WAIT left by connection-churning runs, onrush's or
//! anyone's) it adds hundreds of instructions per request, so a case's note gives the count
//! when it is high. For the same reason the open model is not counted: at the 200 arrivals/s valgrind
//! keeps up with, its figure is mostly that once-a-second work (measured 40,000 instructions
//! per arrival on a quiet host, 190,000 after `new_connection`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use super::cases::{Bench, OnrushRun};
use super::process::{measure, on_path, tail, Failure, Pinning, Proc};

/// The cases whose instructions are counted (when valgrind is found). Each costs two
/// valgrind runs of ~5 s (valgrind's start-up on onrush dominates): these four keep the
/// default suite's addition under a minute. The protocol cases are left out for that reason.
pub const COUNTED: &[&str] = &[
    "keepalive",
    "new_connection",
    "scenario_10_steps",
    "empty_iterations",
];

/// The two lengths of a counted run, in iterations (`shared_iterations`, taken by its VUs).
const ITERATIONS: (u64, u64) = (1_000, 11_000);
/// scenario_10_steps makes ten requests per iteration.
const ITERATIONS_10_STEPS: (u64, u64) = (100, 1_100);
/// wrk's two durations in seconds.
const WRK_SECONDS: (u64, u64) = (1, 4);
/// A counted run still going this long (after its duration, for wrk) is killed: valgrind
/// starts onrush slowly, ~5 s on a quiet machine, more on a loaded one.
const COUNTED_LIMIT: Duration = Duration::from_secs(120);
/// From this many TCP sockets on the host, a case's note says how many were scanned.
const MANY_SOCKETS: u64 = 1_000;

/// valgrind found on PATH.
pub struct Valgrind {
    path: PathBuf,
    /// Its `--version` line, e.g. "valgrind-3.19.0".
    pub version: String,
}

impl Valgrind {
    pub fn find() -> Option<Valgrind> {
        let path = on_path("valgrind")?;
        let version = version(&path).unwrap_or_else(|| "valgrind (version unknown)".into());
        Some(Valgrind { path, version })
    }

    /// `valgrind --tool=cachegrind ... PROGRAM` pinned to `cpu`; the caller adds the
    /// program's arguments. valgrind runs the program in its own process: the PID is the one
    /// to wait for and to kill.
    fn command(&self, pinning: &Pinning, cpu: usize, program: &Path, files: &Files) -> Command {
        let mut cmd = pinning.command(Some(cpu), &self.path);
        cmd.args(["--tool=cachegrind", "--cache-sim=no"])
            .arg(format!("--cachegrind-out-file={}", files.out.display()))
            .arg(format!("--log-file={}", files.log.display()))
            .arg(program);
        cmd
    }
}

/// `valgrind --version`, waited for at most 5 s (then killed by its PID, as every [`Proc`]).
fn version(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut cmd = Command::new(path);
    cmd.arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = Proc::spawn(&mut cmd, "valgrind --version").ok()?;
    let start = std::time::Instant::now();
    while child.try_reap().ok()?.is_none() {
        if start.elapsed() >= Duration::from_secs(5) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut out = String::new();
    child.take_stdout()?.read_to_string(&mut out).ok()?;
    Some(out.trim().to_string()).filter(|v| !v.is_empty())
}

/// Where one counted run writes: cachegrind's counts and valgrind's own messages.
struct Files {
    out: PathBuf,
    log: PathBuf,
}

impl Files {
    fn new(dir: &Path, run: &str) -> Files {
        Files {
            out: dir.join(format!("{run}.cachegrind")),
            log: dir.join(format!("{run}.valgrind")),
        }
    }

    /// The instruction count (the `summary:` line of the cachegrind file; its only event is
    /// Ir, instructions executed).
    fn instructions(&self, what: &str) -> Result<u64, Failure> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix("summary:"))
            .and_then(|n| n.split_whitespace().next()?.parse().ok())
            .ok_or_else(|| {
                Failure::Runtime(format!(
                    "{what}: valgrind wrote no instruction count to {}: {}",
                    self.out.display(),
                    tail(&self.log)
                ))
            })
    }
}

/// A case's load at counted length `iterations`: its VUs kept, its duration replaced.
fn counted_load(load: &Value, iterations: u64) -> Value {
    json!({ "vus": load["vus"], "shared_iterations": iterations })
}

/// The TCP sockets of this host (lines of /proc/net/tcp and tcp6, headers aside): what the
/// monitor of a counted run scans once a second.
fn host_tcp_sockets() -> u64 {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .map(|t| (t.iter().filter(|b| **b == b'\n').count() as u64).saturating_sub(1))
        .sum()
}

/// A case's marginal instructions per unit.
pub struct Count {
    pub per_unit: f64,
    /// The most TCP sockets on the host, before and after the counted runs.
    pub host_sockets: u64,
}

impl Count {
    /// What the case's note says of the count: the sockets scanned, when they were many.
    pub fn note(&self) -> Option<String> {
        (self.host_sockets >= MANY_SOCKETS).then(|| {
            format!(
                "instructions include onrush's once-a-second scan of the host's TCP sockets, up \
                 to {}",
                super::cases::fmt_thousands(self.host_sockets)
            )
        })
    }
}

/// (instructions, units) of the short and the long run → instructions per unit.
fn marginal(what: &str, short: (u64, u64), long: (u64, u64)) -> Result<f64, Failure> {
    let (di, dn) = (
        long.0 as f64 - short.0 as f64,
        long.1 as f64 - short.1 as f64,
    );
    if long.1 <= short.1 || di <= 0.0 {
        return Err(Failure::Runtime(format!(
            "{what}: the long run counted {} instructions for {} units, the short one {} for {}: \
             no marginal cost can be drawn from that",
            long.0, long.1, short.0, short.1
        )));
    }
    Ok(di / dn)
}

impl Bench<'_> {
    /// The marginal instructions per unit of a case's plan, or None without valgrind or for a
    /// case not in [`COUNTED`]. `load` is the case's CPU-run load (its VUs are kept); `units`
    /// reads the units from a run's summary (e.g. "/totals/requests").
    pub(super) fn count(
        &self,
        name: &str,
        top: &Value,
        load: &Value,
        steps: &[Value],
        units: &str,
    ) -> Result<Option<Count>, Failure> {
        let Some(valgrind) = self.valgrind else {
            return Ok(None);
        };
        if !COUNTED.contains(&name) {
            return Ok(None);
        }
        let mut host_sockets = host_tcp_sockets();
        let (short, long) = if name == "scenario_10_steps" {
            ITERATIONS_10_STEPS
        } else {
            ITERATIONS
        };
        let mut points = Vec::new();
        for (run, iterations) in [("short", short), ("long", long)] {
            let run_name = format!("{name}_instructions_{run}");
            let files = Files::new(self.dir, &run_name);
            let plan = self.plan(
                &run_name,
                top.clone(),
                counted_load(load, iterations),
                steps.to_vec(),
            )?;
            let cmd = valgrind.command(self.pinning, self.pinning.tool, self.exe, &files);
            let limit = COUNTED_LIMIT;
            let what = format!("{name}: onrush under valgrind ({run} run)");
            // valgrind's own complaints are in its log, not in onrush's stderr.
            let with_log = |f: Failure| match f {
                Failure::Runtime(m) => Failure::Runtime(format!(
                    "{m}; valgrind's log: {} (--no-instructions skips the counts)",
                    tail(&files.log)
                )),
                other => other,
            };
            let run: OnrushRun = self
                .onrush_command(cmd, &run_name, &plan, limit, None, &what)
                .map_err(with_log)?;
            // A churning case's own TIME_WAIT sockets are the most: seen after its runs.
            host_sockets = host_sockets.max(host_tcp_sockets());
            let n = run.u64(units);
            if n == 0 {
                return Err(Failure::Runtime(format!("{what} completed nothing")));
            }
            let mut failures = String::new();
            super::cases::note_failures(&what, &run, n, &mut failures)?;
            points.push((files.instructions(&what)?, n));
        }
        let per_unit = marginal(&format!("{name} (instructions)"), points[0], points[1])?;
        Ok(Some(Count {
            per_unit,
            host_sockets,
        }))
    }

    /// wrk's marginal instructions per request: `args` (without `-d`) at 1 s and at 4 s.
    pub(super) fn count_wrk(
        &self,
        wrk: &Path,
        name: &str,
        args: &[String],
    ) -> Result<Option<f64>, Failure> {
        let (Some(valgrind), true) = (self.valgrind, COUNTED.contains(&name)) else {
            return Ok(None);
        };
        let runtime = |m: String| Failure::Runtime(m);
        let mut points = Vec::new();
        for (run, seconds) in [("short", WRK_SECONDS.0), ("long", WRK_SECONDS.1)] {
            let run_name = format!("wrk_{name}_instructions_{run}");
            let files = Files::new(self.dir, &run_name);
            let out_path = self.dir.join(format!("{run_name}.stdout"));
            let out = File::create(&out_path)
                .map_err(|e| runtime(format!("cannot create {}: {e}", out_path.display())))?;
            let mut cmd = valgrind.command(self.pinning, self.pinning.tool, wrk, &files);
            cmd.arg(format!("-d{seconds}s"))
                .args(args)
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(Stdio::null());
            let what = format!("{name}: wrk under valgrind ({run} run)");
            let limit = Duration::from_secs(seconds) + COUNTED_LIMIT;
            let m = measure(&mut cmd, &what, limit, None)?;
            if m.code != 0 {
                return Err(runtime(format!(
                    "{what} exited with code {}: {} | {}",
                    m.code,
                    tail(&out_path),
                    tail(&files.log)
                )));
            }
            let text = std::fs::read_to_string(&out_path).unwrap_or_default();
            let requests = super::wrk::wrk_requests(&text)
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    runtime(format!(
                        "{what}: no \"N requests in\" in its output: {}",
                        tail(&out_path)
                    ))
                })?;
            points.push((files.instructions(&what)?, requests));
        }
        marginal(&format!("wrk {name} (instructions)"), points[0], points[1]).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marginal_cost_is_the_difference_over_the_difference() {
        let per = marginal("t", (10_000_000, 1_000), (30_000_000, 11_000)).ok();
        assert_eq!(per, Some(2_000.0));
        assert!(marginal("t", (10, 5), (20, 5)).is_err(), "no more units");
        assert!(
            marginal("t", (20, 5), (10, 9)).is_err(),
            "fewer instructions"
        );
    }

    #[test]
    fn a_counted_load_keeps_the_vus() {
        let closed = json!({ "vus": 50, "duration": "5s" });
        assert_eq!(
            counted_load(&closed, 1_000),
            json!({ "vus": 50, "shared_iterations": 1_000 })
        );
    }
}
