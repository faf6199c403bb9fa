//! The `--compare wrk` runs: wrk on the same target and the same work, pinned and measured the
//! same way as onrush.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::cases::{Bench, OVERRUN};
use super::process::{measure, tail, Failure, Proc};

impl Bench<'_> {
    /// wrk's arguments for a case, but its duration: `-t1 -cC [-H 'Connection: close'] URL`.
    pub(super) fn wrk_args(
        &self,
        name: &str,
        connections: u32,
        path: &str,
        close: bool,
    ) -> Vec<String> {
        let mut args = vec!["-t1".to_string(), format!("-c{connections}")];
        if close {
            args.extend(["-H".to_string(), "Connection: close".to_string()]);
        }
        args.push(match (super::cases::is_tls(name), self.tls_port) {
            (true, Some(port)) => format!("https://127.0.0.1:{port}{path}"),
            _ => format!("http://127.0.0.1:{}{path}", self.port),
        });
        args
    }

    /// `wrk -dNs ARGS` pinned to the tool CPU: its CPU µs per request, and a note on its
    /// errors if it reported any.
    pub(super) fn wrk(
        &self,
        wrk: &Path,
        name: &str,
        args: &[String],
    ) -> Result<(f64, Option<String>), Failure> {
        let (mut cmd, out_path) = self.wrk_command(wrk, name, args)?;
        let what = format!("wrk ({name})");
        let m = measure(
            &mut cmd,
            &what,
            Duration::from_secs(self.seconds) + OVERRUN,
            None,
        )?;
        wrk_result(&what, m.code, m.cpu_s, &out_path)
    }

    /// onrush's CPU per request over wrk's, with both running *at the same time* on the tool
    /// CPU, the median of [`SAME_TIME_ROUNDS`] rounds. This machine's CPU slows down 2-3.5x
    /// for tens of ms to seconds at a time (bench/cpu_noise.c): run one after the other, the
    /// two tools meet different stretches, and the ratio of the same binaries ranged 0.78-1.95
    /// over rounds. Sharing the CPU, both meet the same ones: the rounds agree within a few
    /// percent (docs/benchmarks.md, "Side by side at the same time"). `run_onrush` runs the
    /// case's plan once (pinned, measured) and returns its CPU seconds and requests.
    pub(super) fn same_time_ratio(
        &self,
        wrk: &Path,
        name: &str,
        args: &[String],
        mut run_onrush: impl FnMut() -> Result<(f64, u64), Failure>,
    ) -> Result<f64, Failure> {
        let mut ratios = Vec::new();
        for round in 0..SAME_TIME_ROUNDS {
            let (mut cmd, out_path) = self.wrk_command(wrk, &format!("{name}-same-time"), args)?;
            let what = format!("wrk ({name}, beside onrush, round {})", round + 1);
            let mut theirs = Proc::spawn(&mut cmd, &what)?;
            let (cpu_s, requests) = run_onrush()?;
            let limit = Instant::now() + OVERRUN;
            let ended = loop {
                match theirs.try_reap() {
                    Ok(Some(ended)) => break ended,
                    Ok(None) if Instant::now() < limit => {
                        std::thread::sleep(Duration::from_millis(20))
                    }
                    Ok(None) => {
                        return Err(Failure::Runtime(format!("{what} did not end; killed")))
                    }
                    Err(e) => return Err(Failure::Runtime(format!("cannot wait for {what}: {e}"))),
                }
            };
            let (us, _) = wrk_result(&what, ended.code, ended.cpu_s, &out_path)?;
            if requests == 0 {
                return Err(Failure::Runtime(format!(
                    "{name}: onrush completed no request beside wrk"
                )));
            }
            ratios.push(cpu_s * 1e6 / requests as f64 / us);
        }
        ratios.sort_by(f64::total_cmp);
        Ok(ratios[ratios.len() / 2])
    }

    /// wrk pinned to the tool CPU for the case's duration, its output to a file.
    fn wrk_command(
        &self,
        wrk: &Path,
        name: &str,
        args: &[String],
    ) -> Result<(Command, PathBuf), Failure> {
        let out_path = self.dir.join(format!("wrk-{name}.stdout"));
        let out = File::create(&out_path)
            .map_err(|e| Failure::Runtime(format!("cannot create {}: {e}", out_path.display())))?;
        let mut cmd = self.pinning.command(Some(self.pinning.tool), wrk);
        cmd.arg(format!("-d{}s", self.seconds))
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(Stdio::null());
        Ok((cmd, out_path))
    }
}

/// Rounds of [`Bench::same_time_ratio`]: an odd number, for a median that is one of them.
pub(super) const SAME_TIME_ROUNDS: usize = 3;

/// wrk's CPU µs per request from its exit code, CPU time and output, and a note on its errors
/// if it reported any.
fn wrk_result(
    what: &str,
    code: i32,
    cpu_s: f64,
    out_path: &Path,
) -> Result<(f64, Option<String>), Failure> {
    let runtime = |m: String| Failure::Runtime(m);
    let text = std::fs::read_to_string(out_path).unwrap_or_default();
    if code != 0 {
        return Err(runtime(format!(
            "{what} exited with code {code}: {}",
            tail(out_path)
        )));
    }
    let requests = wrk_requests(&text).filter(|&n| n > 0).ok_or_else(|| {
        runtime(format!(
            "{what}: no \"N requests in\" in its output: {}",
            tail(out_path)
        ))
    })?;
    let errors = text
        .lines()
        .find(|l| l.trim_start().starts_with("Socket errors:"))
        .map(|l| l.trim().to_string());
    Ok((cpu_s * 1e6 / requests as f64, errors))
}

/// The request count of wrk's "  123456 requests in 5.00s, ..." line.
pub(super) fn wrk_requests(output: &str) -> Option<u64> {
    output.lines().find_map(|l| {
        let (count, _) = l.trim().split_once(" requests in ")?;
        count.trim().parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::wrk_requests;

    #[test]
    fn reads_wrk_request_count() {
        let out = "Running 5s test @ http://127.0.0.1:1/\n  1 threads and 50 connections\n\
                   \x20 186548 requests in 5.00s, 27.40MB read\nRequests/sec:  37301.48\n";
        assert_eq!(wrk_requests(out), Some(186_548));
        assert_eq!(wrk_requests("nothing"), None);
    }
}
