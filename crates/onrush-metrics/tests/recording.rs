//! Recording, snapshots and the collector.

use crate::common;

use common::{layout_ab, ms, synthetic_run};
use hdrhistogram::Histogram;
use onrush_metrics::{
    Collector, FailureClass, Layout, MsStats, RequestRecord, RunInfo, WorkerMetrics,
};

fn ok(latency_us: u64) -> RequestRecord {
    RequestRecord {
        latency_us,
        service_us: latency_us,
        status: 200,
        bytes_in: 10,
        bytes_out: 5,
        ..RequestRecord::default()
    }
}

#[test]
fn counts_are_exact_and_merged_percentiles_equal_one_histogram() {
    let layout = layout_ab();
    let (c, r) = synthetic_run(&layout, 3, 7, 42);
    let s = c.summary();

    let mut total = 0;
    for st in &s.steps {
        let si = layout
            .scenarios
            .iter()
            .position(|x| x.name == st.scenario)
            .unwrap();
        let k = layout.scenarios[si]
            .steps
            .iter()
            .position(|x| *x == st.name)
            .unwrap();
        assert_eq!(st.requests, r.requests[si][k]);
        assert_eq!(st.failures, r.failures[si][k]);
        assert_eq!(st.latency_ms, MsStats::from_hist(&r.latency[si][k]));
        assert_eq!(st.connect_ms, MsStats::from_hist(&r.connect[si][k]));
        assert_eq!(st.latency_ms.count, r.requests[si][k]);
        total += st.requests;
    }
    assert_eq!(s.totals.requests, total);
    assert_eq!(s.totals.latency_ms, MsStats::from_hist(&r.all_latency));
    // the clamped outlier: one hour
    assert_eq!(
        s.totals.latency_ms.max,
        ms(r.all_latency.highest_equivalent(3_600_000_000))
    );
    assert_eq!(s.totals.failures_by_class["timeout"], r.timeouts);
    assert_eq!(
        s.totals.failures_by_class["timeout"] + s.totals.failures_by_class["http_5xx"],
        s.totals.failures
    );
    assert_eq!(s.totals.status_codes[&200], r.status_200);
    assert_eq!(s.totals.status_codes[&503], r.status_503);
    assert!(!s.totals.status_codes.contains_key(&0));
    assert_eq!(s.totals.bytes_in, r.bytes_in);
    assert_eq!(s.totals.iterations, r.iterations);
    assert_eq!(s.totals.connections_opened, 3 * 7);
    assert_eq!(s.totals.active_vus_max, 30);
    assert_eq!(s.totals.schedule_lag_ms.count, 3 * 7);
    assert_eq!(s.run.seconds, 7);
    assert_eq!(s.run.duration_s, 7.0);
    assert_eq!(
        s.totals.rate_1s_max,
        *r.per_second.iter().max().unwrap() as f64
    );
}

#[test]
fn snapshot_takes_everything_and_resets() {
    let layout = Layout::new([("s", ["a", "b"])]);
    let mut w = WorkerMetrics::new(&layout);
    for v in 1..=100 {
        w.record_request(0, 1, &ok(v * 10));
    }
    w.record_request(
        0,
        0,
        &RequestRecord {
            failure: Some(FailureClass::ConnectRefused),
            ..RequestRecord::default()
        },
    );
    w.record_iteration(0);
    w.set_active_vus(0, 4);
    let s1 = w.take_snapshot();
    assert_eq!(s1.requests(), 101);
    assert_eq!(s1.step_requests(0, 1), 100);
    assert_eq!(s1.step_failures(0, 0), 1);
    assert_eq!(s1.step_latency(0, 1).unwrap().len(), 100);
    assert_eq!(s1.iterations(0), 1);
    assert_eq!(s1.active_vus(0), 4);
    assert_eq!(s1.worker_id(), w.id());

    let s2 = w.take_snapshot();
    assert_eq!(s2.requests(), 0);
    assert!(s2.step_latency(0, 1).is_none());
    assert_eq!(s2.iterations(0), 0);
    assert_eq!(s2.active_vus(0), 4, "the gauge is kept");
}

#[test]
fn close_second_gives_the_live_figures() {
    let layout = Layout::new([("s", ["a"]), ("t", ["b"])]);
    let mut w1 = WorkerMetrics::new(&layout);
    let mut w2 = WorkerMetrics::new(&layout);
    let mut reference = Histogram::<u64>::new(3).unwrap();
    for v in 1..=1000u64 {
        let (w, sc) = if v % 2 == 0 {
            (&mut w1, 0)
        } else {
            (&mut w2, 1)
        };
        w.record_request(sc, 0, &ok(v * 7));
        reference.record(v * 7).unwrap();
    }
    w1.record_request(
        0,
        0,
        &RequestRecord {
            failure: Some(FailureClass::Reset),
            ..ok(5)
        },
    );
    reference.record(5).unwrap();
    w1.set_active_vus(0, 3);
    w2.set_active_vus(1, 5);
    w2.record_dropped_iteration(1);
    let mut c = Collector::new(layout, RunInfo::new("p", 0));
    c.add(0, w1.take_snapshot());
    c.add(0, w2.take_snapshot());
    let v = c.close_second(0);
    assert_eq!(v.second, 0);
    assert_eq!(v.requests, 1001);
    assert_eq!(v.failures, 1);
    assert_eq!(v.rps, 1001.0);
    assert_eq!(v.p50_ms, ms(reference.value_at_quantile(0.5)));
    assert_eq!(v.p99_ms, ms(reference.value_at_quantile(0.99)));
    assert_eq!(v.active_vus, 8);
    assert_eq!(v.dropped_iterations, 1);

    // A quiet second: the gauges persist, the rates are zero; totals run on.
    c.add(1, w1.take_snapshot());
    let v = c.close_second(1);
    assert_eq!((v.requests, v.p50_ms, v.active_vus), (0, 0.0, 8));
    assert_eq!(v.total_requests, 1001);
    assert_eq!(v.total_dropped_iterations, 1);
}

#[test]
fn late_snapshots_and_unclosed_seconds_are_not_lost() {
    let layout = Layout::new([("s", ["a"])]);
    let mut w = WorkerMetrics::new(&layout);
    let mut c = Collector::new(layout, RunInfo::new("p", 0));
    w.record_request(0, 0, &ok(100));
    c.add(0, w.take_snapshot());
    c.close_second(0);
    w.record_request(0, 0, &ok(200));
    c.add(0, w.take_snapshot()); // late: second 0 is closed
    assert_eq!(c.late_snapshots(), 1);
    // closing 0 again changes nothing
    assert_eq!(c.close_second(0).requests, 0);
    // never closed: summary() still includes it (it went to second 1)
    let s = c.summary();
    assert_eq!(s.totals.requests, 2);
    assert_eq!(s.run.seconds, 2);
    // skipping a close: closing 3 closes the pending 2 as well
    w.record_request(0, 0, &ok(300));
    c.add(2, w.take_snapshot());
    let v = c.close_second(3);
    assert_eq!(v.requests, 0);
    assert_eq!(v.total_requests, 3);
}

#[test]
fn histogram_memory_auto_resized_vs_full_range() {
    let bytes = |h: &Histogram<u64>| h.distinct_values() * 8;
    let full = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    assert_eq!(bytes(&full), 188_416); // 184 KiB
    let mut h = Histogram::<u64>::new(3).unwrap();
    assert_eq!(bytes(&h), 16_384); // 16 KiB: exact up to 2,047 µs
    let mut seen = Vec::new();
    for max_us in [10_000u64, 100_000, 1_000_000, 10_000_000, 3_600_000_000] {
        h.record(max_us).unwrap();
        seen.push((max_us, bytes(&h)));
    }
    assert_eq!(
        seen,
        vec![
            (10_000, 40_960),
            (100_000, 65_536),
            (1_000_000, 90_112),
            (10_000_000, 122_880),
            (3_600_000_000, 188_416),
        ]
    );
    // A worker's fresh step costs 5 histograms of 16 KiB (latency, service, connect, ttfb,
    // TLS handshake), its scenario one more (schedule lag).
    let w = WorkerMetrics::new(&Layout::new([("s", ["a"])]));
    assert_eq!(w.histogram_bytes(), 6 * 16_384);
}

#[test]
fn closed_seconds_hold_each_second_per_step_exactly_once() {
    let layout = Layout::new([("s", vec!["a", "b"]), ("t", vec!["c"])]);
    let mut w1 = WorkerMetrics::new(&layout);
    let mut w2 = WorkerMetrics::new(&layout);
    let mut ref_a = Histogram::<u64>::new(3).unwrap();
    for v in 1..=300u64 {
        let w = if v % 2 == 0 { &mut w1 } else { &mut w2 };
        w.record_request(
            0,
            0,
            &RequestRecord {
                bytes_in: 10,
                bytes_out: 3,
                ..ok(v * 11)
            },
        );
        ref_a.record(v * 11).unwrap();
    }
    w1.record_request(
        1,
        0,
        &RequestRecord {
            status: 503,
            failure: Some(FailureClass::Http5xx),
            ..ok(40)
        },
    );
    w1.record_iteration(0);
    w2.set_active_vus(1, 2);
    let mut c = Collector::new(layout, RunInfo::new("p", 1_000_000));
    c.add(0, w1.take_snapshot());
    c.add(0, w2.take_snapshot());
    w1.record_request(0, 1, &ok(77));
    c.add(1, w1.take_snapshot());
    assert!(c.closed_seconds().is_empty());

    // Closing second 1 closes second 0 too: both are listed, oldest first.
    let view = c.close_second(1);
    let secs = c.closed_seconds();
    assert_eq!(secs.len(), 2);
    let s0 = &secs[0];
    assert_eq!((s0.second, s0.unix_ms), (0, 1_000_000));
    let names: Vec<_> = s0.steps.iter().map(|s| (&*s.scenario, &*s.step)).collect();
    assert_eq!(names, [("s", "a"), ("t", "c")]);
    let a = &s0.steps[0];
    assert_eq!((a.scenario_index, a.step_index), (0, 0));
    assert_eq!(
        (a.requests, a.failures, a.bytes_in, a.bytes_out),
        (300, 0, 3000, 900)
    );
    assert_eq!(a.latency.as_ref().unwrap(), &ref_a);
    assert_eq!(a.latency_stats().p99, ms(ref_a.value_at_quantile(0.99)));
    let c0 = &s0.steps[1];
    assert_eq!((c0.scenario_index, c0.step_index), (1, 0));
    assert_eq!(
        c0.failure_classes().collect::<Vec<_>>(),
        [(FailureClass::Http5xx, 1)]
    );
    assert_eq!(c0.status_codes.get(&503), Some(&1));
    assert_eq!(s0.scenarios.len(), 2);
    assert_eq!(
        (s0.scenarios[0].iterations, s0.scenarios[1].active_vus),
        (1, 2)
    );
    assert_eq!((s0.totals.requests, s0.totals.failures), (301, 1));
    assert_eq!(s0.totals.latency.as_ref().unwrap().len(), 301);
    assert_eq!(s0.totals.total_requests, 301);
    let s1 = &secs[1];
    assert_eq!((s1.second, s1.unix_ms), (1, 1_001_000));
    assert_eq!(s1.steps.len(), 1);
    assert_eq!((&*s1.steps[0].step, s1.steps[0].requests), ("b", 1));
    assert_eq!(s1.totals.total_requests, 302);
    assert_eq!(s1.totals.total_requests, view.total_requests);
    assert_eq!(s1.totals.latency_stats().max, 0.077);

    // Closing again closes nothing: the list is empty, so nothing is exported twice.
    c.close_second(1);
    assert!(c.closed_seconds().is_empty());
    c.add(2, w2.take_snapshot());
    c.finish();
    assert_eq!(c.closed_seconds().len(), 1);
    assert_eq!(c.closed_seconds()[0].second, 2);
}
