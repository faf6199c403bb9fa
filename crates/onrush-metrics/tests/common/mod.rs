//! Shared helpers of the integration tests: a synthetic multi-worker run with reference
//! histograms holding every value recorded.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use hdrhistogram::Histogram;
use onrush_metrics::{
    Collector, FailureClass, Layout, RequestRecord, RunInfo, Snapshot, WorkerMetrics,
};

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

/// Reference figures of a synthetic run: every value of every step kept in one histogram.
pub struct Reference {
    pub latency: Vec<Vec<Histogram<u64>>>,
    pub connect: Vec<Vec<Histogram<u64>>>,
    pub all_latency: Histogram<u64>,
    pub requests: Vec<Vec<u64>>,
    pub failures: Vec<Vec<u64>>,
    pub timeouts: u64,
    pub status_200: u64,
    pub status_503: u64,
    pub bytes_in: u64,
    pub iterations: u64,
    pub per_second: Vec<u64>,
}

pub fn hist() -> Histogram<u64> {
    Histogram::new(3).unwrap()
}

fn record(h: &mut Histogram<u64>, v: u64) {
    h.record(v.min(3_600_000_000)).unwrap();
}

/// `seconds` seconds of `workers` workers on `layout`, requests per worker-second varying.
/// Returns the collector (every second closed) and the reference.
pub fn synthetic_run(
    layout: &Layout,
    workers: usize,
    seconds: u64,
    seed: u64,
) -> (Collector, Reference) {
    let c = Collector::new(layout.clone(), synthetic_info());
    synthetic_run_into(c, layout, workers, seconds, seed)
}

/// The run identity of [`synthetic_run`].
pub fn synthetic_info() -> RunInfo {
    RunInfo::new("synthetic", 1_700_000_000_000)
}

/// [`synthetic_run`] into a given collector (made for `layout`).
pub fn synthetic_run_into(
    mut c: Collector,
    layout: &Layout,
    workers: usize,
    seconds: u64,
    seed: u64,
) -> (Collector, Reference) {
    let mut rng = Rng(seed);
    let mut ws: Vec<WorkerMetrics> = (0..workers).map(|_| WorkerMetrics::new(layout)).collect();
    let shape = |f: fn() -> Histogram<u64>| -> Vec<Vec<Histogram<u64>>> {
        layout
            .scenarios
            .iter()
            .map(|s| s.steps.iter().map(|_| f()).collect())
            .collect()
    };
    let zeros = || -> Vec<Vec<u64>> {
        layout
            .scenarios
            .iter()
            .map(|s| vec![0; s.steps.len()])
            .collect()
    };
    let mut r = Reference {
        latency: shape(hist),
        connect: shape(hist),
        all_latency: hist(),
        requests: zeros(),
        failures: zeros(),
        timeouts: 0,
        status_200: 0,
        status_503: 0,
        bytes_in: 0,
        iterations: 0,
        per_second: vec![0; seconds as usize],
    };
    for t in 0..seconds {
        for w in ws.iter_mut() {
            let n = 50 + rng.next() % 200;
            for k in 0..n {
                let si = (rng.next() % layout.scenarios.len() as u64) as usize;
                let st = (rng.next() % layout.scenarios[si].steps.len() as u64) as usize;
                // wide spread: 50 µs .. ~5 s, plus rare huge outliers
                let mut lat = 50 + (rng.next() % 1000) * (1 + rng.next() % 5000);
                if k == 7 && t == 1 {
                    lat = u64::MAX; // clamped to one hour
                }
                let fail = rng.next().is_multiple_of(20);
                let timeout = fail && rng.next().is_multiple_of(2);
                let rec = RequestRecord {
                    latency_us: lat,
                    service_us: lat / 2,
                    connect_us: (k % 10 == 0).then_some(100 + k),
                    ttfb_us: (!timeout).then_some(lat / 3),
                    bytes_in: 300 + k,
                    bytes_out: 100,
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
                };
                w.record_request(si, st, &rec);
                record(&mut r.latency[si][st], lat);
                record(&mut r.all_latency, lat);
                if let Some(cu) = rec.connect_us {
                    record(&mut r.connect[si][st], cu);
                }
                r.requests[si][st] += 1;
                r.per_second[t as usize] += 1;
                r.bytes_in += rec.bytes_in;
                if fail {
                    r.failures[si][st] += 1;
                }
                match rec.status {
                    0 => r.timeouts += 1,
                    200 => r.status_200 += 1,
                    _ => r.status_503 += 1,
                }
                if k % 3 == 0 {
                    w.record_iteration(si);
                    r.iterations += 1;
                }
            }
            w.record_schedule_lag(0, rng.next() % 1000);
            w.record_connection_opened(0);
            w.set_active_vus(0, 10);
        }
        for w in ws.iter_mut() {
            let snap: Snapshot = w.take_snapshot();
            c.add(t, snap);
        }
        c.close_second(t);
    }
    (c, r)
}

pub fn layout_ab() -> Layout {
    Layout::new([("browse", vec!["home", "search"]), ("buy", vec!["cart"])])
}

/// A fresh empty directory under cargo's target tmp dir.
pub fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "onrush-metrics-test-{}-{}-{}",
        std::process::id(),
        name,
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}
