//! Cost of the hot path: `WorkerMetrics::record_request`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use onrush_metrics::{FailureClass, Handshake, Layout, RequestRecord, WorkerMetrics};

fn records(n: usize) -> Vec<RequestRecord> {
    // A deterministic spread of realistic values: 100 µs .. ~200 ms, some connects, some failures.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let lat = 100 + (x % 1000) * (1 + (x >> 20) % 200);
            RequestRecord {
                latency_us: lat,
                service_us: lat - lat / 10,
                connect_us: (i % 100 == 0).then_some(80 + x % 400),
                ttfb_us: Some(lat - lat / 5),
                bytes_in: 512,
                bytes_out: 128,
                status: if i % 250 == 0 { 503 } else { 200 },
                failure: (i % 250 == 0).then_some(FailureClass::Http5xx),
                handshake: (i % 100 == 0).then_some(Handshake {
                    resumed: i % 200 != 0,
                    duration_us: 900 + x % 2000,
                }),
            }
        })
        .collect()
}

fn bench_record(c: &mut Criterion) {
    let layout = Layout::new([("browse", ["home", "search", "item", "cart"])]);
    let mut m = WorkerMetrics::new(&layout);
    let recs = records(4096);
    // Warm up so the histograms have grown to the range (as after the first second of a run).
    for (i, r) in recs.iter().enumerate() {
        m.record_request(0, i % 4, r);
    }
    let mut g = c.benchmark_group("record_request");
    g.throughput(Throughput::Elements(1));
    let mut i = 0usize;
    g.bench_function("typical", |b| {
        b.iter(|| {
            let r = &recs[i & 4095];
            m.record_request(black_box(0), black_box(i & 3), black_box(r));
            i = i.wrapping_add(1);
        })
    });
    g.finish();
    let mut g = c.benchmark_group("take_snapshot");
    g.bench_function("64_records_4_steps", |b| {
        b.iter(|| {
            for (k, r) in recs.iter().take(64).enumerate() {
                m.record_request(0, k & 3, r);
            }
            black_box(m.take_snapshot())
        })
    });
    g.finish();
}

criterion_group!(benches, bench_record);
criterion_main!(benches);
