//! Writes a small demo run to the directory given (default `demo-results`) and prints its
//! summary: `cargo run -p onrush-metrics --example demo_results -- DIR`.

use std::path::PathBuf;
use std::time::Duration;

use onrush_metrics::{
    print_summary, Collector, FailureClass, Layout, RequestRecord, RunInfo, WorkerMetrics,
};

fn main() {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or("demo-results".into()));
    let layout = Layout::new([("browse", ["home", "search"])]);
    let mut workers: Vec<WorkerMetrics> = (0..2).map(|_| WorkerMetrics::new(&layout)).collect();
    let mut c = Collector::new(layout, RunInfo::new("demo", 1_767_225_600_000));
    let mut x: u64 = 7;
    for t in 0..3 {
        for w in workers.iter_mut() {
            w.set_active_vus(0, 5);
            for i in 0..200u64 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let lat = 800 + (x >> 33) % 4000;
                let fail = i % 97 == 0;
                w.record_request(
                    0,
                    (i % 2) as usize,
                    &RequestRecord {
                        latency_us: lat,
                        service_us: lat,
                        connect_us: (t == 0 && i < 5).then_some(150 + i),
                        ttfb_us: Some(lat - 100),
                        bytes_in: 1200,
                        bytes_out: 90,
                        status: if fail { 503 } else { 200 },
                        failure: fail.then_some(FailureClass::Http5xx),
                        handshake: None,
                    },
                );
                if i % 2 == 1 {
                    w.record_iteration(0);
                }
            }
            if t == 0 {
                (0..5).for_each(|_| w.record_connection_opened(0));
            }
        }
        for w in workers.iter_mut() {
            c.add(t, w.take_snapshot());
        }
        let v = c.close_second(t);
        eprintln!(
            "t={} rps={} p50={} ms p99={} ms vus={}",
            v.second, v.rps, v.p50_ms, v.p99_ms, v.active_vus
        );
    }
    c.set_duration(Duration::from_secs(3));
    c.set_interrupted(false);
    c.write_results(&dir).expect("write results");
    print_summary(&c.summary(), &mut std::io::stdout());
}
