//! The `--compare wrk` runs: wrk on the same target and the same work, pinned and measured the
//! same way as onrush.

use std::fs::File;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use super::cases::{Bench, OVERRUN};
use super::process::{measure, tail, Failure};

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
        let runtime = |m: String| Failure::Runtime(m);
        let out_path = self.dir.join(format!("wrk-{name}.stdout"));
        let out = File::create(&out_path)
            .map_err(|e| runtime(format!("cannot create {}: {e}", out_path.display())))?;
        let mut cmd = self.pinning.command(Some(self.pinning.tool), wrk);
        cmd.arg(format!("-d{}s", self.seconds))
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(Stdio::null());
        let what = format!("wrk ({name})");
        let m = measure(
            &mut cmd,
            &what,
            Duration::from_secs(self.seconds) + OVERRUN,
            None,
        )?;
        let text = std::fs::read_to_string(&out_path).unwrap_or_default();
        if m.code != 0 {
            return Err(runtime(format!(
                "{what} exited with code {}: {}",
                m.code,
                tail(&out_path)
            )));
        }
        let requests = wrk_requests(&text).filter(|&n| n > 0).ok_or_else(|| {
            runtime(format!(
                "{what}: no \"N requests in\" in its output: {}",
                tail(&out_path)
            ))
        })?;
        let errors = text
            .lines()
            .find(|l| l.trim_start().starts_with("Socket errors:"))
            .map(|l| l.trim().to_string());
        Ok((m.cpu_s * 1e6 / requests as f64, errors))
    }
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
