//! Groups (transactions) and checks: recording, aggregation, summary.json, intervals.jsonl,
//! merge and the printed summary.

use crate::common;

use std::fs;
use std::path::Path;
use std::time::Duration;

use common::temp_dir;
use onrush_metrics::{
    merge, summary_text, CheckCounts, Collector, FailureClass, Layout, RequestRecord, RunInfo,
    ScenarioLayout, StepKind, Summary, WorkerMetrics,
};
use serde_json::Value;

const START: u64 = 1_767_225_600_000;

/// `shop`: steps `home` (0), `pay` (1), group `checkout` (2, around pay); checks
/// `status is 200` on home (0) and `has total` on pay (1). `admin`: step `stats`, one check.
fn layout() -> Layout {
    Layout::new([
        ("shop", vec!["home", "pay", "checkout"]),
        ("admin", vec!["stats"]),
    ])
    .with_group(0, 2)
    .with_check(0, "status is 200", 0)
    .with_check(0, "has total", 1)
    .with_check(1, "fresh", 0)
}

fn req(latency_us: u64, status: u16) -> RequestRecord {
    RequestRecord {
        latency_us,
        service_us: latency_us,
        ttfb_us: Some(latency_us / 2),
        bytes_in: 100,
        bytes_out: 10,
        status,
        failure: (status >= 500).then_some(FailureClass::Http5xx),
        ..Default::default()
    }
}

fn group(latency_us: u64, failed: bool) -> RequestRecord {
    RequestRecord {
        latency_us,
        service_us: latency_us,
        failure: failed.then_some(FailureClass::Http5xx),
        ..Default::default()
    }
}

/// Per second: 10 × (home 1 ms, pay 1.5 ms, checkout 2 ms), pay fails (503) once a second and
/// so does that run of checkout; checks: home always passes, `has total` fails with pay;
/// admin: 2 stats requests, `fresh` passes once and fails once.
fn run(seconds: u64) -> Collector {
    let layout = layout();
    let mut w = WorkerMetrics::new(&layout);
    let mut c = Collector::new(layout, RunInfo::new("shop", START));
    for t in 0..seconds {
        for i in 0..10 {
            let fail = i == 0;
            w.record_request(0, 0, &req(1_000, 200));
            w.record_check(0, 0, true);
            w.record_request(0, 1, &req(1_500, if fail { 503 } else { 200 }));
            w.record_check(0, 1, !fail);
            w.record_request(0, 2, &group(2_000, fail));
            w.record_iteration(0);
        }
        w.record_request(1, 0, &req(1_200, 200));
        w.record_request(1, 0, &req(1_200, 200));
        w.record_check(1, 0, true);
        w.record_check(1, 0, false);
        c.add(t, w.take_snapshot());
        c.close_second(t);
    }
    c.set_duration(Duration::from_secs(seconds));
    c
}

fn lines(dir: &Path) -> Vec<Value> {
    fs::read_to_string(dir.join("intervals.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn layout_api() {
    let l = layout();
    let s = &l.scenarios[0];
    assert_eq!(s.kind(0), StepKind::Request);
    assert_eq!(s.kind(2), StepKind::Group);
    assert!(s.is_group(2) && !s.is_group(1));
    assert_eq!(s.checks[1], ("has total".to_string(), 1));
    // Layout::new is all requests, no checks.
    let plain = Layout::new([("s", ["a"])]);
    assert!(plain.scenarios[0].kinds.is_empty() && plain.scenarios[0].checks.is_empty());
    assert_eq!(plain.scenarios[0].kind(0), StepKind::Request);
    let mut sl = ScenarioLayout::new("x", ["a", "g"]);
    sl.mark_group(1);
    assert_eq!(sl.add_check("c", 0), 0);
    assert_eq!(sl.kinds, vec![StepKind::Request, StepKind::Group]);
}

#[test]
fn record_check_counts_in_the_snapshot() {
    let l = layout();
    let mut w = WorkerMetrics::new(&l);
    w.record_check(0, 1, true);
    w.record_check(0, 1, false);
    w.record_check(0, 1, false);
    let snap = w.take_snapshot();
    assert_eq!(
        snap.check_counts(0, 1),
        CheckCounts {
            passes: 1,
            fails: 2
        }
    );
    assert_eq!(snap.check_counts(0, 0), CheckCounts::default());
    // reset by the snapshot
    assert_eq!(w.take_snapshot().check_counts(0, 1), CheckCounts::default());
}

#[test]
fn groups_are_not_requests_and_checks_are_summed() {
    let c = run(3);
    let s = c.summary();
    let t = &s.totals;
    // requests: 3 s × (10 home + 10 pay + 2 stats); the 30 group runs are not requests
    assert_eq!(t.requests, 66);
    assert_eq!(t.failures, 3);
    assert_eq!(t.rps, 22.0);
    assert_eq!(t.latency_ms.count, 66);
    assert_eq!(t.service_ms.count, 66);
    assert_eq!(t.latency_ms.max, 1.5); // not the group's 2 ms
    assert_eq!(t.bytes_in, 6_600);
    assert_eq!(t.status_codes.values().sum::<u64>(), 66);
    assert_eq!(t.failures_by_class.get("http_5xx"), Some(&3));
    assert_eq!(t.rate_1s_max, 22.0);
    assert_eq!(t.rate_10s_max, 22.0);
    let shop = &s.scenarios[0];
    assert_eq!((shop.requests, shop.failures), (60, 3));
    assert_eq!(shop.latency_ms.count, 60);
    assert_eq!(shop.latency_ms.max, 1.5);

    let g = s.steps.iter().find(|x| x.name == "checkout").unwrap();
    assert_eq!(g.kind, StepKind::Group);
    assert_eq!((g.requests, g.failures), (30, 3));
    assert_eq!(g.rps, 10.0);
    assert_eq!(g.latency_ms.count, 30);
    assert_eq!(g.latency_ms.p99, 2.0);
    assert!(g.status_codes.is_empty());
    assert_eq!(s.groups().count(), 1);
    assert_eq!(s.request_steps().count(), 3);
    assert!(s
        .request_steps()
        .all(|x| x.kind == StepKind::Request && x.name != "checkout"));

    // checks
    assert_eq!(s.checks.len(), 3);
    let c0 = &s.checks[0];
    assert_eq!(
        (c0.scenario.as_str(), c0.step.as_str(), c0.name.as_str()),
        ("shop", "home", "status is 200")
    );
    assert_eq!((c0.passes, c0.fails, c0.pass_rate), (30, 0, 1.0));
    let c1 = &s.checks[1];
    assert_eq!((c1.step.as_str(), c1.passes, c1.fails), ("pay", 27, 3));
    assert_eq!(c1.pass_rate, 0.9);
    assert_eq!((s.checks[2].passes, s.checks[2].fails), (3, 3));
    assert_eq!((t.checks.passes, t.checks.fails), (60, 6));
    assert_eq!(t.checks.pass_rate, 60.0 / 66.0);
    assert_eq!((shop.checks.passes, shop.checks.fails), (57, 3));
    assert_eq!(
        (s.scenarios[1].checks.passes, s.scenarios[1].checks.fails),
        (3, 3)
    );

    // the live view of a second leaves groups out too
    let mut c2 = Collector::new(layout(), RunInfo::new("shop", START));
    let mut w = WorkerMetrics::new(&layout());
    w.record_request(0, 2, &group(5_000, false));
    w.record_request(0, 0, &req(1_000, 200));
    w.record_check(0, 1, false);
    c2.add(0, w.take_snapshot());
    let v = c2.close_second(0);
    assert_eq!((v.requests, v.p99_ms), (1, 1.0));
    let d = &c2.closed_seconds()[0];
    assert_eq!(d.steps.len(), 1);
    assert_eq!(d.groups.len(), 1);
    assert_eq!(
        (d.groups[0].step.as_str(), d.groups[0].requests),
        ("checkout", 1)
    );
    assert_eq!(d.totals.requests, 1);
    assert_eq!(
        d.totals.checks,
        CheckCounts {
            passes: 0,
            fails: 1
        }
    );
    assert_eq!(
        d.scenarios[0].checks[1],
        CheckCounts {
            passes: 0,
            fails: 1
        }
    );
}

#[test]
fn summary_json_shapes() {
    let mut c = run(2);
    let dir = temp_dir("gc-json");
    c.write_results(&dir).unwrap();
    let j: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let steps = j["steps"].as_array().unwrap();
    let kinds: Vec<(&str, &str)> = steps
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("home", "request"),
            ("pay", "request"),
            ("checkout", "group"),
            ("stats", "request")
        ]
    );
    assert_eq!(steps[2]["requests"], 20);
    assert_eq!(steps[2]["latency_ms"]["p95"], 2.0);
    assert_eq!(
        j["checks"][1],
        serde_json::json!({"scenario": "shop", "step": "pay", "name": "has total",
                            "passes": 18, "fails": 2, "pass_rate": 0.9})
    );
    let tc = &j["totals"]["checks"];
    assert_eq!((&tc["passes"], &tc["fails"]), (&40.into(), &4.into()));
    assert!((tc["pass_rate"].as_f64().unwrap() - 40.0 / 44.0).abs() < 1e-12);
    assert_eq!(tc.as_object().unwrap().len(), 3);
    assert_eq!(j["scenarios"][1]["checks"]["fails"], 2);
    assert_eq!(j["totals"]["requests"], 44);
    // read back
    // (serde_json reads floats back within an ulp: compare the pass rates apart)
    let mut back = Summary::read_from(&dir.join("summary.json")).unwrap();
    let want = c.summary();
    assert!((back.totals.checks.pass_rate - want.totals.checks.pass_rate).abs() < 1e-12);
    back.totals.checks.pass_rate = want.totals.checks.pass_rate;
    assert_eq!(back, want);
    // a summary.json of an older version (no kind, no checks) still reads
    let mut old = j.clone();
    old.as_object_mut().unwrap().remove("checks");
    old["totals"].as_object_mut().unwrap().remove("checks");
    for s in old["steps"].as_array_mut().unwrap() {
        s.as_object_mut().unwrap().remove("kind");
    }
    for s in old["scenarios"].as_array_mut().unwrap() {
        s.as_object_mut().unwrap().remove("checks");
    }
    let s: Summary = serde_json::from_value(old).unwrap();
    assert!(s.checks.is_empty());
    assert_eq!(s.totals.checks.passes, 0);
    assert!(s.steps.iter().all(|x| x.kind == StepKind::Request));
}

#[test]
fn intervals_carry_groups_and_checks_and_merge_reproduces_the_summary() {
    let mut c = run(3);
    let dir = temp_dir("gc-int");
    c.write_results(&dir).unwrap();
    let ls = lines(&dir);
    let h = &ls[0];
    assert_eq!(h["layout"][0]["groups"], serde_json::json!(["checkout"]));
    assert_eq!(
        h["layout"][0]["checks"],
        serde_json::json!([{"step": "home", "name": "status is 200"},
                           {"step": "pay", "name": "has total"}])
    );
    assert!(h["layout"][1].get("groups").is_none());
    let groups: Vec<&Value> = ls.iter().filter(|l| l["kind"] == "group").collect();
    assert_eq!(groups.len(), 3);
    assert_eq!(groups[0]["step"], "checkout");
    assert_eq!(groups[0]["requests"], 10);
    assert!(ls
        .iter()
        .filter(|l| l["kind"] == "step")
        .all(|l| l["step"] != "checkout"));
    // step lines alone add up to totals.requests (the documented jq one-liner)
    let step_requests: u64 = ls
        .iter()
        .filter(|l| l["kind"] == "step")
        .map(|l| l["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(step_requests, 66);
    let sc0 = ls
        .iter()
        .find(|l| l["kind"] == "scenario" && l["scenario"] == "shop")
        .unwrap();
    assert_eq!(
        sc0["checks"],
        serde_json::json!([{"step": "home", "name": "status is 200", "passes": 10, "fails": 0},
                           {"step": "pay", "name": "has total", "passes": 9, "fails": 1}])
    );

    let out = temp_dir("gc-int-out");
    let mut m = merge(std::slice::from_ref(&dir), &out).unwrap();
    m.run.merged_from = None;
    let mut want = c.summary();
    want.extra.clear();
    assert_eq!(m, want);
    // and the merged file reads back once more, identically
    let out2 = temp_dir("gc-int-out2");
    let mut m2 = merge(std::slice::from_ref(&out), &out2).unwrap();
    m2.run.merged_from = None;
    assert_eq!(m2, want);
}

#[test]
fn merge_of_two_runs_sums_checks_and_groups() {
    let a = temp_dir("gc-a");
    let b = temp_dir("gc-b");
    run(3).write_results(&a).unwrap();
    // b: a shorter run with only shop, a second group and a check on it
    let layout = Layout::new([("shop", vec!["home", "checkout", "login"])])
        .with_group(0, 1)
        .with_group(0, 2)
        .with_check(0, "has total", 0)
        .with_check(0, "logged in", 2);
    // "has total" here is on home, not pay: a different check
    let mut w = WorkerMetrics::new(&layout);
    let mut c = Collector::new(layout, RunInfo::new("shop", START + 1000));
    for t in 0..2 {
        w.record_request(0, 0, &req(1_000, 200));
        w.record_request(0, 1, &group(2_040, true));
        w.record_request(0, 2, &group(2_000, false));
        w.record_check(0, 1, true);
        w.record_check(0, 0, false);
        c.add(t, w.take_snapshot());
        c.close_second(t);
    }
    c.set_duration(Duration::from_secs(2));
    c.write_results(&b).unwrap();

    let out = temp_dir("gc-ab");
    let m = merge(&[a.clone(), b.clone()], &out).unwrap();
    assert_eq!(m.totals.requests, 66 + 2);
    assert_eq!(m.totals.latency_ms.max, 1.5);
    let g = m.steps.iter().find(|s| s.name == "checkout").unwrap();
    assert_eq!(g.kind, StepKind::Group);
    assert_eq!((g.requests, g.failures), (32, 5));
    assert_eq!(g.latency_ms.max, 2.04);
    let login = m.steps.iter().find(|s| s.name == "login").unwrap();
    assert_eq!((login.kind, login.requests), (StepKind::Group, 2));
    let names: Vec<(&str, &str, u64, u64)> = m
        .checks
        .iter()
        .map(|c| (c.step.as_str(), c.name.as_str(), c.passes, c.fails))
        .collect();
    assert_eq!(
        names,
        [
            ("home", "status is 200", 30, 0),
            ("pay", "has total", 27, 3),
            ("home", "has total", 0, 2),
            ("login", "logged in", 2, 0),
            ("stats", "fresh", 3, 3),
        ]
    );
    assert_eq!((m.totals.checks.passes, m.totals.checks.fails), (62, 8));
    // second 1 of the merged file: both runs' scenario lines summed
    let ls = lines(&out);
    let header = &ls[0];
    assert_eq!(
        header["layout"][0]["groups"],
        serde_json::json!(["checkout", "login"])
    );
    let s1 = ls
        .iter()
        .find(|l| l["kind"] == "scenario" && l["scenario"] == "shop" && l["t"] == 1)
        .unwrap();
    assert_eq!(s1["checks"].as_array().unwrap().len(), 4);
    let g1 = ls
        .iter()
        .find(|l| l["kind"] == "group" && l["step"] == "checkout" && l["t"] == 1)
        .unwrap();
    assert_eq!(g1["requests"], 11);
}

#[test]
fn old_intervals_without_groups_or_checks_and_unknown_kinds_still_merge() {
    let dir = temp_dir("gc-old");
    let mut c = run(2);
    c.write_results(&dir).unwrap();
    // Rewrite as an older version would have: no groups/checks anywhere, no group lines,
    // plus a line of a kind from the future.
    let text = fs::read_to_string(dir.join("intervals.jsonl")).unwrap();
    let mut out = String::new();
    for (i, l) in text.lines().enumerate() {
        let mut v: Value = serde_json::from_str(l).unwrap();
        if v["kind"] == "group" {
            continue;
        }
        if let Some(layout) = v.get_mut("layout") {
            for s in layout.as_array_mut().unwrap() {
                let s = s.as_object_mut().unwrap();
                s.remove("groups");
                s.remove("checks");
                s["steps"] = serde_json::json!(s["steps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|x| *x != "checkout")
                    .collect::<Vec<_>>());
            }
        }
        v.as_object_mut().unwrap().remove("checks");
        out.push_str(&v.to_string());
        out.push('\n');
        if i == 1 {
            out.push_str("{\"kind\":\"future\",\"t\":0,\"x\":1}\n");
        }
    }
    fs::write(dir.join("intervals.jsonl"), out).unwrap();
    let m = merge(std::slice::from_ref(&dir), &temp_dir("gc-old-out")).unwrap();
    assert!(m.checks.is_empty());
    assert_eq!(m.totals.checks.passes + m.totals.checks.fails, 0);
    assert_eq!(m.steps.len(), 3);
    assert_eq!(m.totals.requests, c.summary().totals.requests);
    assert_eq!(m.totals.latency_ms, c.summary().totals.latency_ms);
}

#[test]
fn printed_summary_shows_groups_and_checks() {
    let s = run(2).summary();
    let text = summary_text(&s);
    assert!(text.contains("groups: whole duration"), "{text}");
    let group_table = text.split("groups: ").nth(1).unwrap();
    assert!(group_table.contains("shop/checkout"), "{text}");
    // the request table does not list the group
    let request_table = text.split("groups: ").next().unwrap();
    assert!(!request_table.contains("checkout"), "{text}");
    assert!(
        text.contains("checks: 40 passed, 4 failed (90.91% passed)"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("  ✓ shop/home: status is 200") && l.contains("100.00%")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("  ✗ shop/pay: has total") && l.contains("90.00%")),
        "{text}"
    );
    for l in text.lines() {
        assert!(l.chars().count() <= 100, "too wide: {l}");
    }
    // without groups or checks, neither block
    let layout = Layout::new([("s", ["a"])]);
    let mut w = WorkerMetrics::new(&layout);
    let mut c = Collector::new(layout, RunInfo::new("p", START));
    w.record_request(0, 0, &req(1_000, 200));
    c.add(0, w.take_snapshot());
    let text = summary_text(&c.summary());
    assert!(
        !text.contains("groups:") && !text.contains("checks:"),
        "{text}"
    );
}
