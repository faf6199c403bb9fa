//! Thresholds against a recorded run: every metric kind and scope passes and fails on the right
//! side of its measured value; missing data; the generator scope; histograms; abort checks.
use crate::common;

use std::time::Duration;

use common::{load, run, threshold};
use onrush_metrics::hist::new_hist;
use onrush_plan::{Threshold, ValueKind};
use onrush_sla::*;

fn eval_one(r: &common::Run, t: &Threshold, hists: bool) -> ThresholdResult {
    let h = hists.then_some(&r.histograms);
    evaluate_with(std::slice::from_ref(t), &r.summary, Some("healthy"), h)
        .pop()
        .unwrap()
}

/// Limits just below and just above `m`, written in the metric's unit.
fn around(kind: ValueKind, m: f64) -> (String, String) {
    let (scale, unit) = match kind {
        ValueKind::Millis => (1.0, "ms"),
        ValueKind::Fraction => (100.0, "%"),
        ValueKind::PerSecond => (1.0, "/s"),
        ValueKind::Count => (1.0, ""),
        ValueKind::Verdict => unreachable!(),
    };
    let x = m * scale;
    let lo = (x * 1e6).floor() / 1e6;
    let hi = (x * 1e6).ceil() / 1e6;
    (format!("{lo:.6}{unit}"), format!("{hi:.6}{unit}"))
}

/// For `SCOPE: METRIC`: the measured value exists, `<= above` and `>= below` pass, `< below`
/// and `> above` fail, and the failing message says what was measured and expected.
#[track_caller]
fn sweep(r: &common::Run, scope: &str, metric: &str) -> f64 {
    let prefix = if scope.is_empty() {
        String::new()
    } else {
        format!("{scope}: ")
    };
    let probe = threshold(&format!("{prefix}{metric} >= 0"));
    let got = eval_one(r, &probe, true);
    let m = got
        .measured
        .unwrap_or_else(|| panic!("{prefix}{metric}: no value: {}", got.message));
    assert!(got.passed, "{prefix}{metric} >= 0: {got:?}");
    let (below, above) = around(probe.metric.kind(), m);
    for (op, limit, pass) in [
        ("<=", &above, true),
        (">=", &below, true),
        ("<", &below, false),
        (">", &above, false),
    ] {
        let expr = format!("{prefix}{metric} {op} {limit}");
        let res = eval_one(r, &threshold(&expr), true);
        assert_eq!(res.passed, pass, "{expr}: measured {m}: {res:?}");
        assert_eq!(res.threshold, expr);
        assert_eq!(res.measured, Some(m), "{expr}");
        if !pass {
            assert!(res.message.contains(" is not "), "{expr}: {}", res.message);
            assert!(
                res.message.starts_with(&probe.metric.name()),
                "{}",
                res.message
            );
        }
    }
    m
}

const LATENCY: [&str; 12] = [
    "min", "mean", "max", "p50", "p90", "p95", "p99", "p99.9", "p999", "p75", "p99.99", "p(42)",
];

#[test]
fn every_metric_at_every_scope_passes_and_fails() {
    let r = run("sweep");
    let scopes_latency = [
        "",
        "closed",
        "open",
        "closed/home",
        "cart",
        "open/search",
        "home",
    ];
    for scope in scopes_latency {
        for metric in LATENCY {
            sweep(&r, scope, metric);
        }
        for metric in [
            "service_p99",
            "service_mean",
            "ttfb_p95",
            "ttfb_max",
            "ttfb_p75",
        ] {
            sweep(&r, scope, metric);
        }
        for metric in ["failure_rate", "failures", "requests", "rate"] {
            sweep(&r, scope, metric);
        }
    }
    for scope in ["", "closed", "closed/home", "home"] {
        for metric in ["connect_p99", "connect_min", "connect_mean"] {
            sweep(&r, scope, metric);
        }
    }
    for scope in ["", "closed", "open"] {
        for metric in ["iterations", "dropped_iterations", "dropped_rate"] {
            sweep(&r, scope, metric);
        }
    }
    sweep(&r, "", "rate_10s_min");
    sweep(&r, "", "rate_10s_max");
}

#[test]
fn measured_values_are_the_summary_figures() {
    let r = run("values");
    let s = &r.summary;
    let m = |expr: &str| eval_one(&r, &threshold(expr), true);
    assert_eq!(m("p99 < 1s").measured, Some(s.totals.latency_ms.p99));
    assert_eq!(m("p99.9 < 1s").measured, Some(s.totals.latency_ms.p999));
    assert_eq!(m("max < 1s").measured, Some(s.totals.latency_ms.max));
    assert_eq!(
        m("closed: p90 < 1s").measured,
        Some(s.scenarios[0].latency_ms.p90)
    );
    assert_eq!(
        m("closed/home: ttfb_p99 < 1s").measured,
        Some(s.steps[0].ttfb_ms.p99)
    );
    assert_eq!(
        m("service_p95 < 1s").measured,
        Some(s.totals.service_ms.p95)
    );
    assert_eq!(m("connect_max < 1s").measured, Some(0.3));

    // Counters: 12 s of 180 requests, 3 failures, 60 iterations and 1 dropped.
    assert_eq!(m("requests > 0").measured, Some(2160.0));
    assert_eq!(m("failures > 0").measured, Some(36.0));
    assert_eq!(m("failure_rate < 5%").measured, Some(36.0 / 2160.0));
    assert_eq!(m("rate > 0").measured, Some(180.0));
    assert_eq!(m("iterations > 0").measured, Some(720.0));
    assert_eq!(m("dropped_iterations > 0").measured, Some(12.0));
    assert_eq!(m("dropped_rate < 5%").measured, Some(12.0 / 732.0));
    assert_eq!(m("rate_10s_min > 0").measured, Some(180.0));
    assert_eq!(m("closed/home: failure_rate < 5%").measured, Some(0.02));
    assert_eq!(m("open: failure_rate < 5%").measured, Some(1.0 / 30.0));
    assert_eq!(m("open: dropped_rate < 50%").measured, Some(12.0 / 132.0));
    assert_eq!(m("home: requests > 0").measured, Some(1440.0));
    assert_eq!(m("home: rate > 0").measured, Some(120.0));
    assert_eq!(m("home: failures == 24").measured, Some(24.0));
    assert!(m("home: failures == 24").passed);
    assert!(!m("home: failures != 24").passed);

    // Exact figures and messages.
    let res = m("failure_rate < 1%");
    assert!(!res.passed);
    assert_eq!(res.measured_text, "1.667%");
    assert_eq!(res.message, "failure_rate 1.667% is not < 1%");
    assert_eq!(res.limit, "< 1%");
    assert_eq!(res.scope, "total");
    let res = m("rate > 100/s");
    assert!(res.passed);
    assert_eq!(res.message, "rate 180/s > 100/s");
    let res = m("closed/home: p50 <= 50ms");
    assert_eq!(res.scope, "step closed/home");
    assert_eq!(res.measured_text, "50.015 ms");
    assert!(!res.passed, "{res:?}");
    assert_eq!(res.message, "p50 50.015 ms is not <= 50 ms");
    let res = m("rate_10s_max > 1/s");
    assert!(res.passed);
    assert!(
        !res.message.contains("shorter"),
        "12 s run: {}",
        res.message
    );
}

#[test]
fn percentiles_beyond_the_summary_come_from_the_histograms() {
    let r = run("hists");
    // p75 of everything, computed independently.
    let mut all = new_hist();
    let mut home = new_hist();
    for _ in 0..12 {
        for i in 1..=100u64 {
            all.record(i * 1000).unwrap();
            home.record(i * 1000).unwrap();
        }
        for _ in 0..50 {
            all.record(5000).unwrap();
        }
        for i in 1..=20u64 {
            all.record(10 * i * 1000).unwrap();
            home.record(10 * i * 1000).unwrap();
        }
        for _ in 0..10 {
            all.record(2000).unwrap();
        }
    }
    let q = |h: &onrush_metrics::Hist, p: f64| h.value_at_quantile(p) as f64 / 1000.0;
    let p75 = threshold("p75 < 1s");
    assert!(needs_histograms(std::slice::from_ref(&p75)));
    assert_eq!(eval_one(&r, &p75, true).measured, Some(q(&all, 0.75)));
    // Without histograms it fails and says why.
    let res = eval_one(&r, &p75, false);
    assert!(!res.passed);
    assert_eq!(res.measured, None);
    assert!(
        res.message.contains("needs the run's histograms"),
        "{}",
        res.message
    );

    // A step of two scenarios: merged exactly with histograms.
    let t = threshold("home: p99 < 150ms");
    assert!(needs_histograms(std::slice::from_ref(&t)));
    let res = eval_one(&r, &t, true);
    assert_eq!(res.measured, Some(q(&home, 0.99)));
    assert_eq!(res.scope, "step home");
    assert!(!res.passed, "{res:?}");
    // Without: each scenario's step on its own, failing if one fails, saying which.
    let res = eval_one(&r, &t, false);
    assert!(!res.passed);
    assert!(
        res.message.contains("open/home 200.063 ms is not < 150 ms"),
        "{}",
        res.message
    );
    assert!(
        res.message.contains("closed/home 99.007 ms"),
        "{}",
        res.message
    );
    assert_eq!(res.measured, Some(200.063));
    assert_eq!(res.measured_text, "200.063 ms (open/home)");
    let res = eval_one(&r, &threshold("home: p99 < 250ms"), false);
    assert!(res.passed, "{res:?}");
    // Min, max and mean merge from the summary alone.
    let res = eval_one(&r, &threshold("home: max < 250ms"), false);
    assert_eq!(res.measured, Some(r.summary.steps[3].latency_ms.max));
    let res = eval_one(&r, &threshold("home: mean < 1s"), false);
    let (a, b) = (
        &r.summary.steps[0].latency_ms,
        &r.summary.steps[3].latency_ms,
    );
    let mean = (a.mean * a.count as f64 + b.mean * b.count as f64) / (a.count + b.count) as f64;
    assert!((res.measured.unwrap() - mean).abs() < 0.001, "{res:?}");

    // service/connect/ttfb percentiles of a scenario come from its steps' histograms.
    let t = threshold("closed: service_p99 < 1s");
    assert!(t.needs_histograms());
    let mut service = new_hist();
    for _ in 0..12 {
        for i in 1..=100u64 {
            service.record(i * 1000).unwrap();
        }
        for _ in 0..50 {
            service.record(5000).unwrap();
        }
    }
    assert_eq!(eval_one(&r, &t, true).measured, Some(q(&service, 0.99)));
    assert!(!needs_histograms(std::slice::from_ref(&threshold(
        "closed/home: p99 < 1s"
    ))));
}

#[test]
fn a_step_without_requests_fails_with_no_requests() {
    let r = run("empty");
    for expr in [
        "empty: p99 < 1s",
        "closed/empty: mean < 1s",
        "empty: p75 < 1s",
        "empty: failure_rate < 1%",
        "empty: service_p99 < 1s",
    ] {
        let res = eval_one(&r, &threshold(expr), true);
        assert!(!res.passed, "{expr}");
        assert_eq!(res.measured, None, "{expr}");
        assert_eq!(res.measured_text, "no requests", "{expr}");
        assert!(
            res.message
                .starts_with("no requests in step closed/empty: "),
            "{expr}: {}",
            res.message
        );
    }
    // Counts are defined: 0.
    let res = eval_one(&r, &threshold("empty: requests == 0"), true);
    assert!(res.passed, "{res:?}");
    assert_eq!(res.measured, Some(0.0));
    let res = eval_one(&r, &threshold("empty: rate > 1/s"), true);
    assert!(!res.passed);
    // Steps that never opened a connection.
    let res = eval_one(&r, &threshold("cart: connect_p99 < 1s"), true);
    assert!(!res.passed);
    assert_eq!(res.measured_text, "no requests opened a connection");
}

#[test]
fn the_generator_scope() {
    let r = run("generator");
    let t = [threshold("generator: healthy")];
    let res = &evaluate(&t, &r.summary, Some("healthy"))[0];
    assert!(res.passed);
    assert_eq!(
        (res.scope.as_str(), res.measured_text.as_str()),
        ("generator", "healthy")
    );
    assert_eq!(res.measured, None);
    let res = &evaluate(&t, &r.summary, Some("overloaded"))[0];
    assert!(!res.passed);
    assert_eq!(res.measured_text, "overloaded");
    assert!(res
        .message
        .contains("the load generator was overloaded, expected healthy"));
    let res = &evaluate(&t, &r.summary, None)[0];
    assert!(!res.passed);
    assert!(res.message.contains("no generator verdict"));
}

#[test]
fn scopes_missing_from_the_results_fail() {
    let r = run("missing");
    let mut t = threshold("closed/home: p99 < 1s");
    t.scope = onrush_plan::ThresholdScope::Step {
        scenario: Some("gone".into()),
        step: "home".into(),
    };
    let res = eval_one(&r, &t, true);
    assert!(!res.passed);
    assert!(
        res.message.contains("step gone/home is not in the results"),
        "{}",
        res.message
    );
    t.scope = onrush_plan::ThresholdScope::Scenario("gone".into());
    assert!(eval_one(&r, &t, true)
        .message
        .contains("scenario gone is not in the results"));
}

#[test]
fn scenario_level_thresholds_and_all_thresholds() {
    let r = run("scenario-level");
    let text = common::PLAN.replace(
        "    load: { vus: 2, iterations: 10 }\n",
        "    load: { vus: 2, iterations: 10 }\n    thresholds: [\"p99 < 1s\", \"cart: p50 < 1ms\"]\n",
    );
    let plan = onrush_plan::load_str_with_grammars(
        "plan.yaml",
        &text,
        std::path::Path::new("."),
        &[],
        &[],
        onrush_protocols::grammars(),
    )
    .unwrap();
    let res = evaluate(&plan.all_thresholds(), &r.summary, None);
    assert_eq!(res.len(), 2);
    assert_eq!(res[0].scope, "scenario closed");
    assert!(res[0].passed);
    assert_eq!(res[1].scope, "step closed/cart");
    assert!(!res[1].passed);
    assert!(!all_passed(&res));
    assert!(all_passed(&[]));
}

#[test]
fn abort_check_after_grace_and_only_on_measured_failures() {
    let r = run("abort");
    let plan = load(concat!(
        "  - { threshold: \"p99 < 10ms\", abort_on_fail: true, grace: 30s }\n",
        "  - { threshold: \"empty: p99 < 10ms\", abort_on_fail: true }\n",
        "  - \"p50 < 1ms\"\n",
        "  - { threshold: \"failure_rate < 50%\", abort_on_fail: true }\n",
    ));
    let t = &plan.thresholds;
    // Before the grace: the failing p99 does not abort; the empty step has no value yet;
    // p50 is not abort_on_fail; failure_rate passes.
    assert_eq!(
        abort_check(t, &r.summary, Duration::from_secs(29), None),
        None
    );
    let lost = abort_check(t, &r.summary, Duration::from_secs(30), None).unwrap();
    assert_eq!(lost.threshold, "p99 < 10ms");
    assert!(!lost.passed);
    let healthy = load("  - { threshold: \"generator: healthy\", abort_on_fail: true }\n");
    let ht = &healthy.thresholds;
    assert_eq!(abort_check(ht, &r.summary, Duration::ZERO, None), None);
    assert_eq!(
        abort_check(ht, &r.summary, Duration::ZERO, Some("healthy")),
        None
    );
    assert!(abort_check(ht, &r.summary, Duration::ZERO, Some("overloaded")).is_some());
}

#[test]
fn results_serialize_for_summary_json() {
    let r = run("json");
    let plan = load("  - \"p99 < 100ms\"\n  - \"empty: p99 < 1s\"\n  - \"generator: healthy\"\n");
    let res = evaluate(&plan.thresholds, &r.summary, Some("healthy"));
    let json = serde_json::to_value(&res).unwrap();
    let first = json[0].as_object().unwrap();
    let keys: Vec<&str> = first.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "measured",
            "measured_text",
            "message",
            "passed",
            "scope",
            "threshold"
        ]
    );
    assert_eq!(json[0]["threshold"], "p99 < 100ms");
    assert_eq!(json[0]["scope"], "total");
    assert_eq!(json[0]["measured"], r.summary.totals.latency_ms.p99);
    assert_eq!(json[0]["passed"], false);
    assert_eq!(json[1]["measured"], serde_json::Value::Null);
    assert_eq!(json[1]["measured_text"], "no requests");
    assert_eq!(json[2]["passed"], true);
    // The list goes into summary.json as "thresholds" and survives a round trip.
    let mut summary = r.summary.clone();
    summary.set_extra("thresholds", json.clone());
    let back: onrush_metrics::Summary = serde_json::from_str(&summary.to_json_pretty()).unwrap();
    assert_eq!(back.extra.get("thresholds").unwrap(), json);
}

#[test]
fn printed_results() {
    let r = run("print");
    let plan = load(concat!(
        "  - \"p99 < 1s\"\n",
        "  - \"closed/home: p95 < 50ms\"\n",
        "  - \"empty: p99 < 1s\"\n",
        "  - \"generator: healthy\"\n",
    ));
    let res = evaluate(&plan.thresholds, &r.summary, Some("overloaded"));
    let mut out = Vec::new();
    print_results(&res, &mut out);
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "thresholds: 3 of 4 failed");
    assert!(lines[1].starts_with("  ✓ p99 < 1s "), "{text}");
    assert!(
        lines[1].contains(" total ") && lines[1].ends_with(" ms"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("  ✗ closed/home: p95 < 50ms  step closed/home  ")
            && lines[2].ends_with(" ms, expected < 50 ms"),
        "{text}"
    );
    assert!(
        lines[3].ends_with("step closed/empty  no requests, expected < 1,000 ms"),
        "{text}"
    );
    assert!(
        lines[4].starts_with("  ✗ generator: healthy")
            && lines[4].ends_with("overloaded, expected healthy"),
        "{text}"
    );
    // Columns line up.
    let col = |l: &str| {
        l.find("step")
            .or_else(|| l.find("total"))
            .or_else(|| l.find("generator  "))
    };
    assert_eq!(col(lines[1]), col(lines[2]), "{text}");
    let mut out = Vec::new();
    print_results(&res[..1], &mut out);
    assert!(String::from_utf8(out)
        .unwrap()
        .starts_with("thresholds: all 1 passed\n"));
    let mut out = Vec::new();
    print_results(&[], &mut out);
    assert!(out.is_empty());
}
