//! A small run recorded through the real collector: its plan, summary and histograms.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use onrush_metrics::*;
use onrush_plan::{Plan, Threshold};
use onrush_sla::Histograms;

/// Two scenarios. `closed`: steps `home`, `cart`, `empty` (never requested). `open`: steps
/// `home` (the same name as closed's) and `search`.
pub const PLAN: &str = r#"target: http://127.0.0.1:8080
scenarios:
  - name: closed
    load: { vus: 2, iterations: 10 }
    steps:
      - { name: home, get: / }
      - { name: cart, get: /cart }
      - { name: empty, get: /never }
  - name: open
    load: { rate: 10/s, duration: 12s, max_vus: 5 }
    steps:
      - { name: home, get: / }
      - { name: search, get: /search }
"#;

pub struct Run {
    pub plan: Plan,
    pub summary: Summary,
    pub histograms: Histograms,
    pub dir: PathBuf,
}

/// Records 12 seconds:
/// * closed/home: 100 requests per second, latencies 1..=100 ms, 2 of them fail (http_5xx);
///   a new connection (connect 0.3 ms) for the first request of each second;
/// * closed/cart: 50 per second at 5 ms;
/// * open/home: 20 per second, latencies 10, 20, ..., 200 ms (service half of that);
/// * open/search: 10 per second at 2 ms, one failure per second;
/// * closed: 50 iterations per second; open: 10 per second and 1 dropped per second.
pub fn run(name: &str) -> Run {
    let layout = Layout::new([
        ("closed", vec!["home", "cart", "empty"]),
        ("open", vec!["home", "search"]),
    ]);
    let mut worker = WorkerMetrics::new(&layout);
    let mut collector = Collector::new(layout, RunInfo::new("sla", 1_767_225_600_000));
    let rec = |latency_ms: u64, service_ms: u64, connect: bool, failed: bool| RequestRecord {
        latency_us: latency_ms * 1000,
        service_us: service_ms * 1000,
        connect_us: connect.then_some(300),
        ttfb_us: Some(service_ms * 1000 / 2),
        bytes_in: 100,
        bytes_out: 50,
        status: if failed { 503 } else { 200 },
        failure: failed.then_some(FailureClass::Http5xx),
        handshake: None,
    };
    for second in 0..12u64 {
        for i in 1..=100u64 {
            worker.record_request(0, 0, &rec(i, i, i == 1, i == 50 || i == 100));
        }
        for _ in 0..50 {
            worker.record_request(0, 1, &rec(5, 5, false, false));
        }
        for i in 1..=20u64 {
            worker.record_request(1, 0, &rec(10 * i, 5 * i, false, false));
        }
        for i in 0..10 {
            worker.record_request(1, 1, &rec(2, 2, false, i == 0));
        }
        for _ in 0..50 {
            worker.record_iteration(0);
        }
        for _ in 0..10 {
            worker.record_iteration(1);
        }
        worker.record_dropped_iteration(1);
        collector.add(second, worker.take_snapshot());
        collector.close_second(second);
    }
    collector.set_duration(Duration::from_secs(12));
    // Unique per call: tests run in parallel and may build the same named run.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("onrush-sla-{name}-{}-{call}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    collector.write_results(&dir).unwrap();
    let summary = Summary::read_from(&dir.join(SUMMARY_FILE)).unwrap();
    assert_eq!(summary, collector.summary());
    let histograms = Histograms::read(&dir.join(INTERVALS_FILE)).unwrap();
    Run {
        plan: load(""),
        summary,
        histograms,
        dir,
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// [`PLAN`] with plan-level `thresholds` (YAML list items).
pub fn load(thresholds: &str) -> Plan {
    let text = if thresholds.is_empty() {
        PLAN.to_string()
    } else {
        PLAN.replace(
            "scenarios:\n",
            &format!("thresholds:\n{thresholds}scenarios:\n"),
        )
    };
    match onrush_plan::load_str_with_grammars(
        "plan.yaml",
        &text,
        Path::new("."),
        &[],
        &[],
        onrush_protocols::grammars(),
    ) {
        Ok(p) => p,
        Err(e) => panic!("{e}\n--- plan:\n{text}"),
    }
}

/// The one plan-level threshold `expr`.
pub fn threshold(expr: &str) -> Threshold {
    let plan = load(&format!("  - \"{expr}\"\n"));
    plan.thresholds[0].clone()
}
