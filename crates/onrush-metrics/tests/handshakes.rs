//! TLS handshake accounting: recording, summary fields, intervals round trip, merge, printing.

use crate::common;

use std::fs;
use std::path::Path;
use std::time::Duration;

use common::temp_dir;
use onrush_metrics::{
    decode_hist, merge, summary_text, Collector, FailureClass, Handshake, HandshakeStats, Layout,
    MsStats, RequestRecord, RunInfo, Summary, WorkerMetrics,
};
use serde_json::Value;

fn lines(dir: &Path) -> Vec<Value> {
    fs::read_to_string(dir.join("intervals.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn req(handshake: Option<Handshake>) -> RequestRecord {
    RequestRecord {
        latency_us: 5_000,
        service_us: 5_000,
        connect_us: handshake.map(|_| 200),
        status: 200,
        handshake,
        ..RequestRecord::default()
    }
}

fn full(us: u64) -> Option<Handshake> {
    Some(Handshake {
        resumed: false,
        duration_us: us,
    })
}

fn resumed(us: u64) -> Option<Handshake> {
    Some(Handshake {
        resumed: true,
        duration_us: us,
    })
}

/// Two seconds: step `s/a` has 2 full + 3 resumed handshakes, `s/b` none, `t/c` 1 full.
fn run() -> (Collector, Summary) {
    let layout = Layout::new([("s", vec!["a", "b"]), ("t", vec!["c"])]);
    let mut w = WorkerMetrics::new(&layout);
    let mut c = Collector::new(layout, RunInfo::new("tls", 1_000_000));
    w.record_request(0, 0, &req(full(3_000)));
    w.record_request(0, 0, &req(resumed(1_000)));
    w.record_request(0, 0, &req(None));
    w.record_request(0, 1, &req(None));
    w.record_request(1, 0, &req(full(4_000)));
    let s0 = w.take_snapshot();
    c.add(0, s0);
    c.close_second(0);
    w.record_request(0, 0, &req(full(5_000)));
    w.record_request(0, 0, &req(resumed(1_200)));
    w.record_request(0, 0, &req(resumed(1_400)));
    c.add(1, w.take_snapshot());
    c.finish();
    c.set_duration(Duration::from_secs(2));
    let s = c.summary();
    (c, s)
}

fn hist_of(values: &[u64]) -> onrush_metrics::Hist {
    let mut h = onrush_metrics::hist::new_hist();
    for &v in values {
        h.record(v).unwrap();
    }
    h
}

#[test]
fn handshakes_are_counted_per_step_scenario_and_total() {
    let (_, s) = run();
    let step = |sc: &str, n: &str| {
        s.steps
            .iter()
            .find(|x| x.scenario == sc && x.name == n)
            .unwrap()
            .handshakes
            .clone()
    };
    let a = step("s", "a");
    assert_eq!((a.full, a.resumed, a.total()), (2, 3, 5));
    assert_eq!(
        a.time_ms,
        MsStats::from_hist(&hist_of(&[3_000, 1_000, 5_000, 1_200, 1_400]))
    );
    assert_eq!(step("s", "b"), HandshakeStats::default());
    let c = step("t", "c");
    assert_eq!((c.full, c.resumed, c.time_ms.count), (1, 0, 1));
    assert_eq!(c.time_ms.p50, 4.001); // highest equivalent value

    let sc = &s.scenarios[0].handshakes;
    assert_eq!((sc.full, sc.resumed, sc.time_ms.count), (2, 3, 5));
    let t = &s.totals.handshakes;
    assert_eq!((t.full, t.resumed), (3, 3));
    assert_eq!(
        t.time_ms,
        MsStats::from_hist(&hist_of(&[3_000, 1_000, 5_000, 1_200, 1_400, 4_000]))
    );
    // requests without a handshake are unaffected
    assert_eq!(s.totals.requests, 8);
}

#[test]
fn summary_json_and_intervals_carry_handshakes() {
    let (mut c, s) = run();
    let dir = temp_dir("hs-files");
    c.write_results(&dir).unwrap();
    let j: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(j["totals"]["handshakes"]["full"], 3);
    assert_eq!(j["totals"]["handshakes"]["resumed"], 3);
    assert_eq!(j["totals"]["handshakes"]["time_ms"]["count"], 6);
    assert_eq!(j["totals"]["handshakes"]["time_ms"]["max"], 5.003);
    assert_eq!(j["steps"][0]["handshakes"]["full"], 2);
    assert_eq!(j["scenarios"][1]["handshakes"]["full"], 1);
    assert_eq!(Summary::read_from(&dir.join("summary.json")).unwrap(), s);

    let ls = lines(&dir);
    let step_line = |t: u64, step: &str| {
        ls.iter()
            .find(|l| l["kind"] == "step" && l["t"] == t && l["step"] == step)
            .unwrap()
            .clone()
    };
    let a0 = step_line(0, "a");
    assert_eq!(a0["handshakes_full"], 1);
    assert_eq!(a0["handshakes_resumed"], 1);
    assert_eq!(a0["handshakes"], 2);
    let h = decode_hist(a0["handshake"].as_str().unwrap()).unwrap();
    assert_eq!(h, hist_of(&[3_000, 1_000]));
    let a1 = step_line(1, "a");
    assert_eq!(
        (
            a1["handshakes_full"].clone(),
            a1["handshakes_resumed"].clone()
        ),
        (1.into(), 2.into())
    );
    // a step without handshakes has none of the fields
    let b0 = step_line(0, "b");
    for k in [
        "handshakes",
        "handshakes_full",
        "handshakes_resumed",
        "handshake",
    ] {
        assert!(b0.get(k).is_none(), "{k} in {b0}");
    }
    let c0 = step_line(0, "c");
    assert_eq!(c0["handshakes_full"], 1);
    assert!(c0.get("handshakes_resumed").is_none());

    // round trip: the summary rebuilt from intervals.jsonl alone is the same
    let mut m = merge(std::slice::from_ref(&dir), &temp_dir("hs-one")).unwrap();
    m.run.merged_from = None;
    assert_eq!(m, s);
}

#[test]
fn merge_adds_handshakes_exactly() {
    let (mut c, s) = run();
    let a = temp_dir("hs-a");
    let b = temp_dir("hs-b");
    c.write_results(&a).unwrap();
    c.write_results(&b).unwrap();
    let out = temp_dir("hs-merged");
    let m = merge(&[a, b], &out).unwrap();
    let t = &m.totals.handshakes;
    assert_eq!((t.full, t.resumed), (6, 6));
    let mut doubled = hist_of(&[3_000, 1_000, 5_000, 1_200, 1_400, 4_000]);
    doubled.add(doubled.clone()).unwrap();
    assert_eq!(t.time_ms, MsStats::from_hist(&doubled));
    assert_eq!(t.time_ms.p99, s.totals.handshakes.time_ms.p99);
    for (ms, st) in m.steps.iter().zip(&s.steps) {
        assert_eq!(ms.handshakes.full, 2 * st.handshakes.full);
        assert_eq!(ms.handshakes.resumed, 2 * st.handshakes.resumed);
        assert_eq!(ms.handshakes.time_ms.count, 2 * st.handshakes.time_ms.count);
    }
    let a0 = lines(&out)
        .into_iter()
        .find(|l| l["kind"] == "step" && l["t"] == 0 && l["step"] == "a")
        .unwrap();
    assert_eq!(
        (
            a0["handshakes_full"].clone(),
            a0["handshakes_resumed"].clone(),
            a0["handshakes"].clone()
        ),
        (2.into(), 2.into(), 4.into())
    );
}

#[test]
fn files_without_handshake_fields_still_merge() {
    // An intervals.jsonl and summary.json of an older onrush: no handshake fields at all.
    let layout = Layout::new([("s", ["a"])]);
    let mut w = WorkerMetrics::new(&layout);
    let mut c = Collector::new(layout, RunInfo::new("old", 0));
    w.record_request(0, 0, &req(None));
    c.add(0, w.take_snapshot());
    c.finish();
    let dir = temp_dir("hs-old");
    c.write_results(&dir).unwrap();
    let text = fs::read_to_string(dir.join("intervals.jsonl")).unwrap();
    assert!(!text.contains("handshake"));
    let (_, s) = run();
    let mut j: Value = serde_json::to_value(&s).unwrap();
    j["totals"].as_object_mut().unwrap().remove("handshakes");
    j["steps"][0].as_object_mut().unwrap().remove("handshakes");
    j["scenarios"][0]
        .as_object_mut()
        .unwrap()
        .remove("handshakes");
    let back: Summary = serde_json::from_value(j).unwrap();
    assert_eq!(back.totals.handshakes, HandshakeStats::default());
    assert_eq!(back.steps[0].handshakes, HandshakeStats::default());

    let m = merge(&[dir.clone(), dir], &temp_dir("hs-old-out")).unwrap();
    assert_eq!(m.totals.requests, 2);
    assert_eq!(m.totals.handshakes, HandshakeStats::default());
}

#[test]
fn printed_summary_has_a_handshake_line_only_with_handshakes() {
    let (_, s) = run();
    let text = summary_text(&s);
    let line = text
        .lines()
        .find(|l| l.starts_with("TLS handshakes"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("full 3, resumed 3 (p50 "), "{line}");
    assert!(line.contains(" ms, p99 5.003 ms)"), "{line}");
    assert!(line.len() <= 100);

    let layout = Layout::new([("s", ["a"])]);
    let mut w = WorkerMetrics::new(&layout);
    let mut c = Collector::new(layout, RunInfo::new("plain", 0));
    w.record_request(0, 0, &req(None));
    c.add(0, w.take_snapshot());
    c.finish();
    assert!(!summary_text(&c.summary()).contains("TLS handshakes"));
}

#[test]
fn tls_failures_are_counted_and_hinted() {
    let layout = Layout::new([("s", ["a"])]);
    let mut w = WorkerMetrics::new(&layout);
    let mut c = Collector::new(layout, RunInfo::new("tls-fail", 0));
    w.record_request(
        0,
        0,
        &RequestRecord {
            latency_us: 100,
            failure: Some(FailureClass::TlsCertificateUnknown),
            ..RequestRecord::default()
        },
    );
    c.add(0, w.take_snapshot());
    c.finish();
    let s = c.summary();
    assert_eq!(s.totals.failures_by_class["tls_certificate_unknown"], 1);
    let dir = temp_dir("hs-fail");
    c.write_results(&dir).unwrap();
    let m = merge(std::slice::from_ref(&dir), &temp_dir("hs-fail-out")).unwrap();
    assert_eq!(m.totals.failures_by_class["tls_certificate_unknown"], 1);
    assert!(summary_text(&s).contains("http.tls.ca_file"));
}
