//! Builds realistic results directories with onrush-metrics' public API (WorkerMetrics,
//! Collector, write_results_with), as a run of onrush would.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use onrush_metrics::{
    Collector, FailureClass, Layout, RequestRecord, RunInfo, Summary, WorkerMetrics,
};
use serde_json::{json, Value};

pub struct Fixture {
    pub plan: String,
    pub scenarios: Vec<(String, Vec<String>)>,
    pub seconds: u64,
    /// Requests per step per second at full load.
    pub per_step: u64,
    /// Latency multiplier (a slower build of the target: 1.3).
    pub slow: f64,
    /// One request in `fail_every` of the first step fails with 503 (0: none).
    pub fail_every: u64,
    /// The last scenario is an open model: it records schedule lag and some dropped iterations.
    pub open_model: bool,
    /// Top-level keys added to summary.json.
    pub extra: Vec<(String, Value)>,
    pub workers: usize,
    /// Adds a group `journey` (of the first scenario's steps) to the first scenario, and
    /// checks: `status is 200` on each scenario's first step (fails with the request), and
    /// `fast` on the first scenario's second step (fails on its timeouts).
    pub groups_and_checks: bool,
}

impl Fixture {
    pub fn new(plan: &str) -> Fixture {
        Fixture {
            plan: plan.into(),
            scenarios: vec![
                (
                    "browse".into(),
                    vec!["home".into(), "search".into(), "product".into()],
                ),
                ("checkout".into(), vec!["cart".into(), "pay".into()]),
            ],
            seconds: 30,
            per_step: 40,
            slow: 1.0,
            fail_every: 97,
            open_model: true,
            extra: Vec::new(),
            workers: 2,
            groups_and_checks: false,
        }
    }

    /// With a group and checks (see [`Fixture::groups_and_checks`]).
    pub fn with_groups_and_checks(mut self) -> Fixture {
        self.groups_and_checks = true;
        self
    }

    /// `scenarios` scenarios of `steps` steps each.
    pub fn sized(mut self, scenarios: usize, steps: usize) -> Fixture {
        self.scenarios = (0..scenarios)
            .map(|s| {
                (
                    format!("scenario-{s}"),
                    (0..steps).map(|k| format!("step-{s}-{k}")).collect(),
                )
            })
            .collect();
        self
    }

    /// The optional verdict keys other parts of onrush add to summary.json.
    pub fn with_verdict(mut self, passed: bool) -> Fixture {
        self.extra.push((
            "thresholds".into(),
            json!([
                {"threshold": "p99 < 100ms", "scope": "total", "measured": "87.2 ms", "passed": true},
                {"threshold": "home: failure_rate < 1%", "scope": "step browse/home", "measured": 0.0103,
                 "measured_text": "1.03%", "passed": passed, "message": "failure_rate 1.03% is not < 1%"},
            ]),
        ));
        self.extra.push((
            "generator".into(),
            json!({"verdict": "saturated", "message": "the load generator ran out of CPU", "saturated_from_s": 12,
                   "causes": [{"cause": "cpu", "first_s": 12, "detail": "worker threads were busy 99% of the time", "fix": "run on more cores or split the load over machines (onrush merge)"}],
                   "cpu_percent_max": 99.0, "rss_mb_max": 14.2, "schedule_lag_p99_ms_max": 402.1}),
        ));
        self.extra.push((
            "machine".into(),
            json!({"hostname": "loadgen-1", "cpus": 2, "os": "Linux 6.1"}),
        ));
        self.extra.push((
            "load".into(),
            json!([{"scenario": "browse", "model": "closed: 4 VUs x 25 iterations", "connections": "per_vu"},
                   {"scenario": "checkout", "model": "open: 200/s for 5s, max 50 VUs"}]),
        ));
        self.extra.push(("threads".into(), json!(2)));
        self.extra
            .push(("vars".into(), json!({"host": "shop.test", "vus": "4"})));
        self
    }

    /// Writes summary.json and intervals.jsonl into `dir` (replaced) and returns the summary.
    pub fn write(&self, dir: &Path) -> Summary {
        let _ = std::fs::remove_dir_all(dir);
        let mut layout = Layout::new(self.scenarios.iter().map(|(s, st)| (s.clone(), st.clone())));
        // (scenario, check index) of `status is 200` per scenario, of `fast`, the group's index
        let mut status_check = Vec::new();
        let mut fast_check = None;
        let mut group_step = None;
        if self.groups_and_checks {
            for s in layout.scenarios.iter_mut() {
                status_check.push(s.add_check("status is 200", 0));
            }
            let s0 = &mut layout.scenarios[0];
            if s0.steps.len() > 1 {
                fast_check = Some(s0.add_check("fast", 1));
            }
            s0.steps.push("journey".into());
            let g = s0.steps.len() - 1;
            s0.mark_group(g);
            group_step = Some(g);
        }
        let mut workers: Vec<WorkerMetrics> = (0..self.workers)
            .map(|_| WorkerMetrics::new(&layout))
            .collect();
        let mut c = Collector::new(layout, RunInfo::new(&self.plan, 1_767_225_600_000));
        let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 11) as f64 / (1u64 << 53) as f64
        };
        let n_scen = self.scenarios.len();
        for t in 0..self.seconds {
            // Ramp up over the first 10% of the run; latency bump in the middle.
            let ramp = ((t + 1) as f64 / (self.seconds as f64 / 10.0).max(1.0)).min(1.0);
            let mid = t >= self.seconds * 2 / 5 && t < self.seconds * 3 / 5;
            let bump = if mid { 1.8 } else { 1.0 } * self.slow;
            for (wi, w) in workers.iter_mut().enumerate() {
                for (si, (_, steps)) in self.scenarios.iter().enumerate() {
                    let vus = (4.0 * ramp).ceil() as u32 + si as u32;
                    w.set_active_vus(si, vus);
                    let open = self.open_model && si == n_scen - 1;
                    for (k, _) in steps.iter().enumerate() {
                        let n = ((self.per_step as f64 * ramp) as u64 / self.workers as u64).max(1);
                        let base_us = 800.0 + 400.0 * k as f64 + 300.0 * si as f64;
                        for i in 0..n {
                            let u = next();
                            let spike = if next() < 0.002 { 12.0 } else { 1.0 };
                            let lat = (base_us * bump * (1.0 + 3.0 * u * u * u * u) * spike) as u64;
                            let fail = self.fail_every > 0
                                && si == 0
                                && k == 0
                                && (t * 1000 + i) % self.fail_every == 0;
                            let timeout = mid && si == 0 && k == 1 && i % 53 == 0;
                            if let Some(&c) = status_check.get(si).filter(|_| k == 0) {
                                w.record_check(si, c, !fail);
                            }
                            if let Some(c) = fast_check.filter(|_| si == 0 && k == 1) {
                                w.record_check(si, c, !timeout);
                            }
                            if let Some(g) = group_step.filter(|_| si == 0 && k == 0) {
                                w.record_request(
                                    si,
                                    g,
                                    &RequestRecord {
                                        latency_us: lat * 3,
                                        service_us: lat * 3,
                                        failure: fail.then_some(FailureClass::Http5xx),
                                        ..Default::default()
                                    },
                                );
                            }
                            w.record_request(
                                si,
                                k,
                                &RequestRecord {
                                    latency_us: if timeout { 5_000_000 } else { lat },
                                    service_us: lat * 9 / 10,
                                    connect_us: (t == 0 && i < 2).then_some(150 + i),
                                    ttfb_us: (!timeout).then_some(lat * 8 / 10),
                                    bytes_in: 1200 + 100 * k as u64,
                                    bytes_out: 90,
                                    status: if timeout {
                                        0
                                    } else if fail {
                                        503
                                    } else {
                                        200
                                    },
                                    failure: if timeout {
                                        Some(FailureClass::Timeout)
                                    } else if fail {
                                        Some(FailureClass::Http5xx)
                                    } else {
                                        None
                                    },
                                    handshake: None,
                                },
                            );
                        }
                    }
                    let iters = ((self.per_step as f64 * ramp) as u64 / self.workers as u64).max(1);
                    for _ in 0..iters {
                        w.record_iteration(si);
                        if open {
                            w.record_schedule_lag(
                                si,
                                (50.0 + 400.0 * next().powi(6) * bump) as u64,
                            );
                        }
                    }
                    if open && mid && wi == 0 {
                        (0..3).for_each(|_| w.record_dropped_iteration(si));
                    }
                    if t == 0 {
                        (0..vus).for_each(|_| w.record_connection_opened(si));
                    }
                }
            }
            for w in workers.iter_mut() {
                c.add(t, w.take_snapshot());
            }
            c.close_second(t);
        }
        c.set_duration(Duration::from_secs(self.seconds));
        let mut s = c.summary();
        s.set_interrupted(false);
        for (k, v) in &self.extra {
            s.set_extra(k.clone(), v.clone());
        }
        c.write_results_with(dir, &s).expect("write results");
        s
    }
}

/// A fresh directory under target/tmp.
pub fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("onrush-report-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// target/report-artifacts: screenshots and sample reports kept for a person to look at.
pub fn artifacts() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("report-artifacts");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The JSON embedded in a report.
pub fn embedded_data(html: &str) -> Value {
    let start = html
        .find(r#"<script type="application/json" id="onrush-data">"#)
        .expect("data tag");
    let rest = &html[start..];
    let open = rest.find('>').unwrap() + 1;
    let close = rest.find("</script>").unwrap();
    serde_json::from_str(&rest[open..close]).expect("embedded data is JSON")
}

/// Headless Chromium, or `None` (with a loud message) when /usr/bin/chromium is absent and
/// this is not CI. In CI (env CI set and not "false"/"0") a missing Chromium is a failure:
/// CI setup must run crates/onrush-report/tests/install-chromium.sh.
pub fn chromium() -> Option<PathBuf> {
    let path = PathBuf::from(
        std::env::var_os("ONRUSH_CHROMIUM").unwrap_or_else(|| "/usr/bin/chromium".into()),
    );
    if path.exists() {
        return Some(path);
    }
    let ci = std::env::var("CI")
        .map(|v| !v.is_empty() && v != "false" && v != "0")
        .unwrap_or(false);
    if ci {
        panic!("{} is missing and CI is set: run crates/onrush-report/tests/install-chromium.sh in CI setup", path.display());
    }
    eprintln!(
        "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    );
    eprintln!(
        "!!! SKIPPED: browser test of report.html: {} not found.",
        path.display()
    );
    eprintln!("!!! Install it with: bash crates/onrush-report/tests/install-chromium.sh");
    eprintln!(
        "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
    );
    None
}

/// Runs headless Chromium on `html` (plus `fragment`, e.g. "#onrush-selftest") with `args` (a
/// fresh profile each time, no network features), killing it after 120 s; returns stdout and
/// the wall time.
pub fn run_chromium(
    chrome: &Path,
    html: &Path,
    fragment: &str,
    args: &[String],
) -> (String, Duration) {
    use std::process::{Command, Stdio};
    use std::time::Instant;
    let profile = tmp(&format!("chromium-profile-{}", std::process::id()));
    let start = Instant::now();
    let mut child = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-extensions",
            "--hide-scrollbars",
            "--mute-audio",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!(
            "file://{}{fragment}",
            html.canonicalize().unwrap().display()
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).unwrap();
        s
    });
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let elapsed = start.elapsed();
    let _ = std::fs::remove_dir_all(&profile);
    (reader.join().unwrap(), elapsed)
}

/// The attributes of `<div id="onrush-report-status" ...>` in a dumped DOM.
pub fn report_status(dom: &str) -> std::collections::BTreeMap<String, String> {
    let start = dom
        .find(r#"<div id="onrush-report-status""#)
        .expect("status element in the DOM");
    let tag = &dom[start..start + dom[start..].find('>').unwrap()];
    let mut out = std::collections::BTreeMap::new();
    let mut rest = tag;
    while let Some(i) = rest.find("=\"") {
        let name = rest[..i].rsplit(' ').next().unwrap().to_string();
        let after = &rest[i + 2..];
        let end = after.find('"').unwrap();
        out.insert(
            name,
            after[..end]
                .replace("&amp;", "&")
                .replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">"),
        );
        rest = &after[end + 1..];
    }
    out
}
