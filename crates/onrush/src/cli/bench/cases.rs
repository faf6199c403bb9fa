//! The fixed suite of `onrush bench`: each case is a small plan run by `onrush run` pinned to the
//! tool CPU, measured from outside (CPU with wait4, peak RSS from VmHWM), its counts read from
//! the `summary.json` it wrote; some cases also run wrk on the same work.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use super::instructions::Valgrind;
use super::process::{measure, tail, Failure, Pinning};

/// Every case, in the order they run.
pub const CASES: &[&str] = &[
    "keepalive",
    "new_connection",
    "body_1k",
    "body_1m",
    "scenario_10_steps",
    "empty_iterations",
    "open_model",
    "open_model_20k",
    "open_model_60k",
    "idle_vu_memory",
    "tls_keepalive",
    "tls_full",
    "tls_resumed",
    "h2_streams",
    "h2c_streams",
    "tcp_echo",
    "websocket_echo",
    "grpc_unary",
    "thrift_framed",
];

/// Whether a case runs against the HTTPS server.
pub fn is_tls(case: &str) -> bool {
    case.starts_with("tls_") || case == "h2_streams"
}

/// How long each idle-VU run holds its VUs before it is interrupted.
const IDLE_SECONDS: u64 = 3;
/// The two idle-VU runs: their difference is 2,000 VUs.
const IDLE_VUS: (u64, u64) = (100, 2_100);
/// Open-model cases: arrivals per second, and the VUs the worker may use.
const OPEN_RATES: [(&str, u64, u64); 3] = [
    ("open_model", 5_000, 200),
    ("open_model_20k", 20_000, 400),
    ("open_model_60k", 60_000, 1_000),
];
/// A child still running this long after its planned duration is killed.
pub(super) const OVERRUN: Duration = Duration::from_secs(30);

/// One row of the results.
#[derive(Serialize, Default)]
pub struct CaseResult {
    pub name: &'static str,
    /// What one unit is: "request", "iteration" or "idle VU".
    pub unit: &'static str,
    pub cpu_us_per_unit: Option<f64>,
    pub rate_per_s: Option<f64>,
    pub peak_rss_mib: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kib_per_idle_vu: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mb_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_lag_p99_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrk_cpu_us_per_request: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_vs_wrk: Option<f64>,
    /// onrush's CPU per request over wrk's with both running at the same time on the tool CPU
    /// (the median of three rounds): the machine's slow stretches fall on both alike.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_vs_wrk_same_time: Option<f64>,
    /// User-space instructions per unit (cachegrind, marginal over two run lengths): null
    /// where not counted (no valgrind, `--no-instructions`, or a case not counted).
    pub instructions_per_unit: Option<f64>,
    /// wrk's, counted the same way, and onrush's over it (`--compare wrk`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrk_instructions_per_request: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions_ratio_vs_wrk: Option<f64>,
    /// TLS cases: the handshakes the run counted as full and as resumed, so that a reader (and
    /// a test) sees that a "resumed" case really resumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handshakes_full: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handshakes_resumed: Option<u64>,
    /// Protocol cases: CPU per unit over the `keepalive` case's CPU per request, same run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_vs_keepalive: Option<f64>,
    /// grpc_unary with ghz installed: ghz's CPU per call, and onrush's over it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ghz_cpu_us_per_call: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_vs_ghz: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What every case needs.
pub struct Bench<'a> {
    pub exe: &'a Path,
    pub dir: &'a Path,
    pub pinning: &'a Pinning,
    pub port: u16,
    /// The HTTPS server's port, when a TLS case is selected.
    pub tls_port: Option<u16>,
    pub seconds: u64,
    /// wrk's path when `--compare wrk` was asked for and wrk was found.
    pub wrk: Option<&'a Path>,
    /// valgrind, when it was found and instructions were not turned off.
    pub valgrind: Option<&'a Valgrind>,
}

/// What one `onrush run` of a case gave.
pub(super) struct OnrushRun {
    pub(super) cpu_s: f64,
    pub(super) peak_rss_mib: f64,
    pub(super) summary: Value,
}

impl OnrushRun {
    pub(super) fn u64(&self, pointer: &str) -> u64 {
        self.summary
            .pointer(pointer)
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }
    fn f64(&self, pointer: &str) -> f64 {
        self.summary
            .pointer(pointer)
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    }
    pub(super) fn duration_s(&self) -> f64 {
        self.f64("/run/duration_s").max(1e-3)
    }
}

impl Bench<'_> {
    pub fn run(&self, name: &'static str) -> Result<CaseResult, Failure> {
        let get = |path: &str| json!({ "get": path });
        let closed = |vus: u64| json!({ "vus": vus, "duration": format!("{}s", self.seconds) });
        match name {
            "keepalive" => self.requests(
                name,
                None,
                closed(50),
                vec![get("/")],
                "50 connections, GET /",
            ),
            "new_connection" => {
                // `per_request` sends `Connection: close` and the server closes first (the
                // default `close: auto`), as `wrk -H 'Connection: close'` does: the same work.
                let note = "50 VUs, a new connection per request (connect, GET / with \
                            `Connection: close`, the server closes first)";
                let http = json!({ "connections": "per_request" });
                self.requests(name, Some(http), closed(50), vec![get("/")], note)
            }
            "body_1k" => self.requests(
                name,
                None,
                closed(50),
                vec![get("/bytes/1024")],
                "50 connections, 1 KiB bodies",
            ),
            "body_1m" => self.requests(
                name,
                None,
                closed(4),
                vec![get("/bytes/1048576")],
                "4 connections, 1 MiB bodies",
            ),
            "scenario_10_steps" => self.requests(
                name,
                None,
                closed(50),
                ten_steps(),
                "50 VUs, 10 different requests per iteration: templated paths and body, a JSONPath \
                 and a CSS extractor whose values the next requests send, two checks",
            ),
            "empty_iterations" => self.empty_iterations(),
            "open_model" | "open_model_20k" | "open_model_60k" => self.open_model(name),
            "idle_vu_memory" => self.idle_vu_memory(),
            "tls_keepalive" => self.requests(
                name,
                Some(json!({ "tls": { "insecure": true } })),
                closed(50),
                vec![get("/")],
                "HTTPS (TLS 1.3), 50 keep-alive connections, GET /",
            ),
            "tls_full" => self.requests(
                name,
                Some(json!({ "connections": "per_request", "tls": { "session": "full", "insecure": true } })),
                closed(50),
                vec![get("/")],
                "50 VUs, a new connection with a full TLS handshake per request",
            ),
            "tls_resumed" => self.requests(
                name,
                Some(json!({ "connections": "per_request", "tls": { "session": "resume", "insecure": true } })),
                closed(50),
                vec![get("/")],
                "50 VUs, a new connection with a resumed TLS handshake per request (wrk cannot resume)",
            ),
            "h2_streams" => self.requests(
                name,
                Some(json!({ "version": "h2", "connections": "shared", "max_streams": 10, "tls": { "insecure": true } })),
                closed(50),
                vec![get("/")],
                "HTTP/2 over TLS, 50 VUs on 5 connections x 10 streams (h2load -c5 -m10)",
            ),
            _ => self.protocol_case(name),
        }
    }

    /// A case measured per request (with MB/s for the body cases, and wrk where it can).
    fn requests(
        &self,
        name: &'static str,
        http: Option<Value>,
        load: Value,
        steps: Vec<Value>,
        note: &str,
    ) -> Result<CaseResult, Failure> {
        let top = json!({ "http": http.unwrap_or_else(|| json!({})) });
        // Counted first: the CPU run of a churning case leaves TIME_WAIT sockets that the
        // counted runs' monitor would scan (see instructions.rs).
        let count = self.count(name, &top, &load, &steps, "/totals/requests")?;
        let run = self.onrush_plan(name, top.clone(), load.clone(), steps.clone(), None)?;
        let requests = run.u64("/totals/requests");
        if requests == 0 {
            return Err(Failure::Runtime(format!(
                "{name}: onrush completed no request"
            )));
        }
        let mut note = note.to_string();
        let mut result = CaseResult {
            name,
            unit: "request",
            cpu_us_per_unit: Some(run.cpu_s * 1e6 / requests as f64),
            rate_per_s: Some(requests as f64 / run.duration_s()),
            peak_rss_mib: Some(run.peak_rss_mib),
            ..Default::default()
        };
        if is_tls(name) {
            result.handshakes_full = Some(run.u64("/totals/handshakes/full"));
            result.handshakes_resumed = Some(run.u64("/totals/handshakes/resumed"));
        }
        if name.starts_with("body_") {
            let mb_per_s = run.f64("/totals/bytes_in") / run.duration_s() / 1e6;
            result.mb_per_s = Some(mb_per_s);
            note.push_str(&format!(", {mb_per_s:.0} MB/s"));
        }
        note_failures(name, &run, requests, &mut note)?;
        if let Some(count) = &count {
            result.instructions_per_unit = Some(count.per_unit);
            if let Some(n) = count.note() {
                note.push_str(&format!("; {n}"));
            }
        }
        if let Some(wrk) = self.wrk {
            let (connections, path, close) = match name {
                "keepalive" => (50, "/", false),
                "new_connection" => (50, "/", true),
                "body_1k" => (50, "/bytes/1024", false),
                "body_1m" => (4, "/bytes/1048576", false),
                "tls_keepalive" => (50, "/", false),
                "tls_full" => (50, "/", true),
                _ => (0, "", false),
            };
            if connections > 0 {
                let args = self.wrk_args(name, connections, path, close);
                let (us, wrk_note) = self.wrk(wrk, name, &args)?;
                result.wrk_cpu_us_per_request = Some(us);
                result.ratio_vs_wrk = result.cpu_us_per_unit.map(|ours| ours / us);
                let beside = format!("{name}_beside_wrk");
                let onrush_again = || {
                    let run =
                        self.onrush_plan(&beside, top.clone(), load.clone(), steps.clone(), None)?;
                    Ok((run.cpu_s, run.u64("/totals/requests")))
                };
                result.ratio_vs_wrk_same_time =
                    Some(self.same_time_ratio(wrk, name, &args, onrush_again)?);
                if result.instructions_per_unit.is_some() {
                    let theirs = self.count_wrk(wrk, name, &args)?;
                    result.wrk_instructions_per_request = theirs;
                    result.instructions_ratio_vs_wrk = theirs
                        .zip(result.instructions_per_unit)
                        .map(|(theirs, ours)| ours / theirs);
                }
                if let Some(w) = wrk_note {
                    note.push_str(&format!("; wrk: {w}"));
                }
            }
        }
        result.note = Some(note);
        Ok(result)
    }

    /// The scheduler's own cost: iterations whose only step is a zero think time.
    fn empty_iterations(&self) -> Result<CaseResult, Failure> {
        let name = "empty_iterations";
        let load = json!({ "vus": 100, "duration": format!("{}s", self.seconds) });
        let steps = vec![json!({ "think": "0ms" })];
        let top = json!({ "http": {} });
        let count = self.count(name, &top, &load, &steps, "/totals/iterations")?;
        let run = self.onrush(name, None, load, steps, None)?;
        let iterations = run.u64("/totals/iterations");
        if iterations == 0 {
            return Err(Failure::Runtime(format!(
                "{name}: onrush completed no iteration"
            )));
        }
        let mut note = "100 VUs, one { think: 0ms } step: the scheduler's own cost (a 0 ms think \
                        still arms tokio's 1 ms timer: at most 1,000 iterations/s per VU)"
            .to_string();
        if let Some(n) = count.as_ref().and_then(|c| c.note()) {
            note.push_str(&format!("; {n}"));
        }
        Ok(CaseResult {
            instructions_per_unit: count.map(|c| c.per_unit),
            name,
            unit: "iteration",
            cpu_us_per_unit: Some(run.cpu_s * 1e6 / iterations as f64),
            rate_per_s: Some(iterations as f64 / run.duration_s()),
            peak_rss_mib: Some(run.peak_rss_mib),
            note: Some(note),
            ..Default::default()
        })
    }

    /// The open model on one worker at 5,000, 20,000 or 60,000 arrivals per second.
    fn open_model(&self, name: &'static str) -> Result<CaseResult, Failure> {
        let (_, rate, max_vus) = OPEN_RATES
            .into_iter()
            .find(|(case, _, _)| *case == name)
            .expect("an open-model case");
        let load = json!({
            "rate": format!("{rate}/s"),
            "duration": format!("{}s", self.seconds),
            "max_vus": max_vus,
        });
        let run = self.onrush(name, None, load, vec![json!({ "get": "/" })], None)?;
        let requests = run.u64("/totals/requests");
        if requests == 0 {
            return Err(Failure::Runtime(format!(
                "{name}: onrush completed no request"
            )));
        }
        let achieved = run.u64("/totals/iterations") as f64 / self.seconds as f64;
        let lag_p50 = run.f64("/totals/schedule_lag_ms/p50");
        let lag_p99 = run.f64("/totals/schedule_lag_ms/p99");
        Ok(CaseResult {
            name,
            unit: "request",
            cpu_us_per_unit: Some(run.cpu_s * 1e6 / requests as f64),
            rate_per_s: Some(achieved),
            peak_rss_mib: Some(run.peak_rss_mib),
            schedule_lag_p99_ms: Some(lag_p99),
            note: Some(format!(
                "rate {rate}/s, max_vus {max_vus}: achieved {achieved:.0}/s ({:+.2}%), dropped {}, \
                 schedule lag p50 {lag_p50:.3} ms, p99 {lag_p99:.3} ms",
                (achieved / rate as f64 - 1.0) * 100.0,
                run.u64("/totals/dropped_iterations")
            )),
            ..Default::default()
        })
    }

    /// Memory per idle VU: two runs whose requests never return, 2,000 VUs apart.
    fn idle_vu_memory(&self) -> Result<CaseResult, Failure> {
        let name = "idle_vu_memory";
        let mut peaks = Vec::new();
        for vus in [IDLE_VUS.0, IDLE_VUS.1] {
            let load = json!({ "vus": vus, "duration": format!("{IDLE_SECONDS}s") });
            let run = self.onrush(
                &format!("{name}_{vus}"),
                Some(json!({ "timeout": "120s" })),
                load,
                vec![json!({ "get": "/delay/60000" })],
                Some(Duration::from_secs(IDLE_SECONDS)),
            )?;
            let active = run.u64("/totals/active_vus_max");
            if active < vus {
                return Err(Failure::Runtime(format!(
                    "{name}: only {active} of {vus} VUs were active"
                )));
            }
            peaks.push(run.peak_rss_mib);
        }
        let kib = (peaks[1] - peaks[0]) * 1024.0 / (IDLE_VUS.1 - IDLE_VUS.0) as f64;
        Ok(CaseResult {
            name,
            unit: "idle VU",
            peak_rss_mib: Some(peaks[1]),
            kib_per_idle_vu: Some(kib),
            note: Some(format!(
                "peak RSS with {} VUs {:.1} MiB, {} VUs {:.1} MiB, each VU waiting on a request \
                 (/delay/60000); difference / {}",
                IDLE_VUS.0,
                peaks[0],
                fmt_thousands(IDLE_VUS.1),
                peaks[1],
                fmt_thousands(IDLE_VUS.1 - IDLE_VUS.0)
            )),
            ..Default::default()
        })
    }

    /// [`Bench::onrush_plan`] with an `http:` section only.
    fn onrush(
        &self,
        name: &str,
        http: Option<Value>,
        load: Value,
        steps: Vec<Value>,
        interrupt_after: Option<Duration>,
    ) -> Result<OnrushRun, Failure> {
        let top = json!({ "http": http.unwrap_or_else(|| json!({})) });
        self.onrush_plan(name, top, load, steps, interrupt_after)
    }

    /// Writes a one-scenario plan (with the top-level sections of `top`: `http`, `grpc`,
    /// `thrift`) and runs `onrush run PLAN -t 1 --quiet --out DIR` pinned to the tool CPU;
    /// returns its CPU time, peak RSS and summary.json. With `interrupt_after` it is stopped
    /// with SIGINT then (exit code 130 is expected).
    pub(super) fn onrush_plan(
        &self,
        name: &str,
        top: Value,
        load: Value,
        steps: Vec<Value>,
        interrupt_after: Option<Duration>,
    ) -> Result<OnrushRun, Failure> {
        let plan = self.plan(name, top, load, steps)?;
        let cmd = self.pinning.command(Some(self.pinning.tool), self.exe);
        let planned = Duration::from_secs(if interrupt_after.is_some() {
            IDLE_SECONDS
        } else {
            self.seconds
        });
        let what = format!("onrush ({name})");
        self.onrush_command(cmd, name, &plan, planned + OVERRUN, interrupt_after, &what)
    }

    /// A one-scenario plan named `name` against the built-in server (the HTTPS one for the TLS
    /// cases), with the top-level sections of `top`.
    pub(super) fn plan(
        &self,
        name: &str,
        top: Value,
        load: Value,
        steps: Vec<Value>,
    ) -> Result<Value, Failure> {
        let target = match (is_tls(name), self.tls_port) {
            (true, Some(port)) => format!("https://127.0.0.1:{port}"),
            (true, None) => {
                return Err(Failure::Runtime(format!(
                    "{name}: the HTTPS server was not started"
                )))
            }
            (false, _) => format!("http://127.0.0.1:{}", self.port),
        };
        let mut plan = json!({
            "target": target,
            "scenarios": [{ "name": name, "load": load, "steps": steps }],
        });
        if let (Some(plan), Some(top)) = (plan.as_object_mut(), top.as_object()) {
            plan.extend(top.clone());
        }
        Ok(plan)
    }

    /// Writes `plan` and runs `cmd` (onrush, pinned, or a wrapper whose last argument is
    /// onrush) with `run PLAN -t 1 --quiet --out DIR`, killed after `limit`; returns its CPU
    /// time, peak RSS and summary.json.
    pub(super) fn onrush_command(
        &self,
        mut cmd: Command,
        name: &str,
        plan: &Value,
        limit: Duration,
        interrupt_after: Option<Duration>,
        what: &str,
    ) -> Result<OnrushRun, Failure> {
        let runtime = |m: String| Failure::Runtime(m);
        let plan_path = self.dir.join(format!("{name}.yaml"));
        let text = serde_json::to_string_pretty(plan).expect("JSON serialises");
        std::fs::write(&plan_path, text)
            .map_err(|e| runtime(format!("cannot write {}: {e}", plan_path.display())))?;
        let out = self.dir.join(name);
        let log_path = self.dir.join(format!("{name}.stderr"));
        let log = File::create(&log_path)
            .map_err(|e| runtime(format!("cannot create {}: {e}", log_path.display())))?;
        cmd.arg("run")
            .arg(&plan_path)
            .args(["-t", "1", "--quiet", "--out"])
            .arg(&out)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        let m = measure(&mut cmd, what, limit, interrupt_after)?;
        let expected = if interrupt_after.is_some() {
            &[0, 130][..]
        } else {
            &[0][..]
        };
        if !expected.contains(&m.code) {
            return Err(runtime(format!(
                "{what} exited with code {}: {}",
                m.code,
                tail(&log_path)
            )));
        }
        let summary_path = out.join("summary.json");
        let summary = std::fs::read_to_string(&summary_path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .ok_or_else(|| {
                runtime(format!(
                    "{what} wrote no readable {}",
                    summary_path.display()
                ))
            })?;
        Ok(OnrushRun {
            cpu_s: m.cpu_s,
            peak_rss_mib: m.peak_rss_kib as f64 / 1024.0,
            summary,
        })
    }
}

/// The ten requests of the scenario case: different paths, statuses and bodies; templated paths
/// and a templated POST body; two extractors whose values later requests send; two checks.
fn ten_steps() -> Vec<Value> {
    vec![
        json!({ "name": "home", "get": "/", "check": [{ "status": 200 }] }),
        json!({ "name": "bytes_10", "get": "/bytes/10" }),
        json!({ "name": "bytes_100", "get": "/bytes/100" }),
        json!({ "name": "bytes_vu", "get": "/bytes/${vu}" }),
        json!({
            "name": "json",
            "get": "/json",
            "extract": { "token": { "jsonpath": "$.token" } },
        }),
        json!({
            "name": "html",
            "get": "/html",
            "extract": { "csrf": { "css": "input[name=csrf_token]", "attribute": "value" } },
            "check": [{ "body_contains": "Sign in" }],
        }),
        json!({ "name": "xml", "get": "/xml?token=${token}&csrf=${csrf}" }),
        json!({ "name": "status_200", "get": "/status/200" }),
        json!({ "name": "status_204", "get": "/status/204" }),
        json!({
            "name": "echo",
            "post": "/echo",
            "headers": { "Content-Type": "text/plain" },
            "body": "vu ${vu} iteration ${iteration}",
        }),
    ]
}

/// 2100 → "2,100".
pub fn fmt_thousands(n: u64) -> String {
    let digits = n.to_string();
    let first = match digits.len() % 3 {
        0 => 3,
        r => r,
    };
    let mut out = digits[..first].to_string();
    for group in digits.as_bytes()[first..].chunks(3) {
        out.push(',');
        out.push_str(std::str::from_utf8(group).expect("ASCII digits"));
    }
    out
}

/// Refuses a run where more than 1 request in 1,000 failed (its figure would measure failures,
/// not the work), and adds the failures of one that passes to its note.
pub(super) fn note_failures(
    name: &str,
    run: &OnrushRun,
    requests: u64,
    note: &mut String,
) -> Result<(), Failure> {
    let failures = run.u64("/totals/failures");
    let classes = &run.summary["totals"]["failures_by_class"];
    if failures * 1000 > requests {
        return Err(Failure::Runtime(format!(
            "{name}: {failures} of {requests} requests failed ({classes}); a figure from this \
             run would mean nothing"
        )));
    }
    if failures > 0 {
        note.push_str(&format!("; {failures} failures {classes}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::fmt_thousands;

    #[test]
    fn formats_thousands() {
        assert_eq!(fmt_thousands(7), "7");
        assert_eq!(fmt_thousands(2_100), "2,100");
        assert_eq!(fmt_thousands(1_234_567), "1,234,567");
    }
}
