//! `thresholds:` at plan and scenario level: what they compile to, and every error with its line.
use crate::common;

use std::time::Duration;

use common::{err, load_env, ok};
use onrush_plan::*;

/// The example of docs/thresholds.md (and of the issue).
const PLAN: &str = r#"target: http://127.0.0.1:8080
thresholds:                      # plan level: about the whole test
  - "p99 < 100ms"
  - "failure_rate < 1%"
  - "rate > 7000/s"
  - "home: p95 < 50ms"
  - "generator: healthy"
  - { threshold: "p99 < 300ms", abort_on_fail: true, grace: 10s }
scenarios:
  - name: closed
    load: { vus: 2, iterations: 5 }
    thresholds: ["p90 < 20ms"]
    steps:
      - { name: home, get: / }
      - { name: cart, get: /cart }
  - name: open
    load: { rate: 10/s, duration: 1s, max_vus: 2 }
    steps:
      - { name: search, get: "/search?q=a" }
"#;

/// A plan with the given plan-level threshold items (YAML list items, one per line) and two
/// scenarios: `closed` (steps home, cart, `GET /x?a=b`) and `open` (steps home, search).
fn plan(items: &[&str]) -> String {
    let list: String = items.iter().map(|i| format!("  - {i}\n")).collect();
    format!(
        "target: http://127.0.0.1:8080\nthresholds:\n{list}scenarios:\n  - name: closed\n    load: {{ vus: 1, iterations: 1 }}\n    steps:\n      - {{ name: home, get: / }}\n      - {{ name: cart, get: /cart }}\n      - get: /x?a=b\n  - name: open\n    load: {{ rate: 10/s, duration: 1s, max_vus: 2 }}\n    steps:\n      - {{ name: home, get: / }}\n      - {{ name: search, get: /s }}\n"
    )
}

fn one(item: &str) -> Threshold {
    let p = ok(&plan(&[item]));
    assert_eq!(p.thresholds.len(), 1);
    p.thresholds[0].clone()
}

fn lat(family: LatencyFamily, stat: LatencyStat) -> ThresholdMetric {
    ThresholdMetric::Latency { family, stat }
}

fn p(x: f64) -> ThresholdMetric {
    lat(LatencyFamily::Latency, LatencyStat::Percentile(x))
}

fn step(scenario: Option<&str>, step: &str) -> ThresholdScope {
    ThresholdScope::Step {
        scenario: scenario.map(str::to_string),
        step: step.into(),
    }
}

#[test]
fn the_documented_example_compiles() {
    let plan = ok(PLAN);
    let t = &plan.thresholds;
    assert_eq!(t.len(), 6);
    assert_eq!(t[0].source, "p99 < 100ms");
    assert_eq!(t[0].scope, ThresholdScope::Total);
    assert_eq!(t[0].metric, p(99.0));
    assert_eq!(t[0].op, CompareOp::Lt);
    assert_eq!(t[0].value, 100.0);
    assert_eq!(t[0].line, 3);
    assert_eq!(t[0].field, "thresholds[0]");
    assert!(!t[0].abort_on_fail);
    assert_eq!(t[0].grace, Duration::ZERO);

    assert_eq!(t[1].metric, ThresholdMetric::FailureRate);
    assert_eq!(t[1].value, 0.01);
    assert_eq!(
        (t[2].metric, t[2].op, t[2].value),
        (ThresholdMetric::Rate, CompareOp::Gt, 7000.0)
    );
    // `home` is a step of `closed` only: resolved to that scenario.
    assert_eq!(t[3].scope, step(Some("closed"), "home"));
    assert_eq!(t[3].metric, p(95.0));
    assert_eq!(t[3].value, 50.0);
    assert_eq!(t[4].scope, ThresholdScope::Generator);
    assert_eq!(t[4].metric, ThresholdMetric::GeneratorHealthy);
    assert_eq!(t[5].source, "p99 < 300ms");
    assert!(t[5].abort_on_fail);
    assert_eq!(t[5].grace, Duration::from_secs(10));
    assert_eq!(t[5].line, 8);
    assert_eq!(t[5].field, "thresholds[5]");

    let closed = &plan.scenarios[0];
    assert_eq!(closed.thresholds.len(), 1);
    assert_eq!(
        closed.thresholds[0].scope,
        ThresholdScope::Scenario("closed".into())
    );
    assert_eq!(closed.thresholds[0].metric, p(90.0));
    assert_eq!(closed.thresholds[0].line, 12);
    assert_eq!(closed.thresholds[0].field, "scenarios[0].thresholds[0]");
    assert!(plan.scenarios[1].thresholds.is_empty());
    assert_eq!(plan.all_thresholds().len(), 7);
}

#[test]
fn no_thresholds_is_an_empty_list() {
    let p = ok(&plan(&[]).replace("thresholds:\n", ""));
    assert!(p.thresholds.is_empty());
    assert!(p.all_thresholds().is_empty());
    let p = ok(&plan(&[]));
    assert!(p.thresholds.is_empty());
}

#[test]
fn every_metric_and_unit() {
    use LatencyFamily::*;
    use LatencyStat::*;
    let cases: &[(&str, ThresholdMetric, f64)] = &[
        ("\"min > 0.5ms\"", lat(Latency, Min), 0.5),
        ("\"mean < 20ms\"", lat(Latency, Mean), 20.0),
        ("\"avg < 1s\"", lat(Latency, Mean), 1000.0),
        ("\"max <= 2s\"", lat(Latency, Max), 2000.0),
        ("\"p50 < 250us\"", p(50.0), 0.25),
        ("\"p90 < 1m\"", p(90.0), 60_000.0),
        ("\"p95 < 1.5s\"", p(95.0), 1500.0),
        ("\"p99 < 100ms\"", p(99.0), 100.0),
        ("\"p99.9 < 1s\"", p(99.9), 1000.0),
        ("\"p999 < 1s\"", p(99.9), 1000.0),
        ("\"p(99.99) < 1s\"", p(99.99), 1000.0),
        ("\"p75 < 5ms\"", p(75.0), 5.0),
        ("\"p99.5 < 5ms\"", p(99.5), 5.0),
        ("\"latency_p99 < 5ms\"", p(99.0), 5.0),
        ("\"service_p99 < 5ms\"", lat(Service, Percentile(99.0)), 5.0),
        ("\"connect_p99 < 5ms\"", lat(Connect, Percentile(99.0)), 5.0),
        ("\"ttfb_mean < 5ms\"", lat(Ttfb, Mean), 5.0),
        (
            "\"failure_rate < 0.5%\"",
            ThresholdMetric::FailureRate,
            0.005,
        ),
        (
            "\"failure_rate <= 0.02\"",
            ThresholdMetric::FailureRate,
            0.02,
        ),
        ("\"failure_rate == 0\"", ThresholdMetric::FailureRate, 0.0),
        ("\"failures < 10\"", ThresholdMetric::Failures, 10.0),
        ("\"requests >= 1_000\"", ThresholdMetric::Requests, 1000.0),
        ("\"rate > 7000/s\"", ThresholdMetric::Rate, 7000.0),
        ("\"rate > 60000/m\"", ThresholdMetric::Rate, 1000.0),
        ("\"rate > 50\"", ThresholdMetric::Rate, 50.0),
        ("\"iterations > 100\"", ThresholdMetric::Iterations, 100.0),
        (
            "\"dropped_iterations == 0\"",
            ThresholdMetric::DroppedIterations,
            0.0,
        ),
        ("\"dropped_rate < 1%\"", ThresholdMetric::DroppedRate, 0.01),
        (
            "\"rate_10s_min > 6500/s\"",
            ThresholdMetric::Rate10sMin,
            6500.0,
        ),
        (
            "\"rate_10s_max < 9000/s\"",
            ThresholdMetric::Rate10sMax,
            9000.0,
        ),
    ];
    for (item, metric, value) in cases {
        let t = one(item);
        assert_eq!(t.metric, *metric, "{item}");
        assert!((t.value - value).abs() < 1e-12, "{item}: {}", t.value);
        assert_eq!(t.source, item.trim_matches('"'));
    }
    for (item, op) in [
        ("\"p99 < 1s\"", CompareOp::Lt),
        ("\"p99<=1s\"", CompareOp::Le),
        ("\"p99 > 1s\"", CompareOp::Gt),
        ("\"p99 >= 1s\"", CompareOp::Ge),
        ("\"failures == 0\"", CompareOp::Eq),
        ("\"failures != 3\"", CompareOp::Ne),
    ] {
        assert_eq!(one(item).op, op, "{item}");
    }
}

#[test]
fn scopes() {
    // A step of two scenarios: scenario None (both together).
    assert_eq!(one("\"home: p95 < 50ms\"").scope, step(None, "home"));
    assert_eq!(
        one("\"closed/home: p95 < 50ms\"").scope,
        step(Some("closed"), "home")
    );
    assert_eq!(
        one("\"open/home: p95 < 50ms\"").scope,
        step(Some("open"), "home")
    );
    assert_eq!(
        one("\"cart: p95 < 50ms\"").scope,
        step(Some("closed"), "cart")
    );
    assert_eq!(one("\"step home: p95 < 50ms\"").scope, step(None, "home"));
    assert_eq!(
        one("\"open: iterations > 5\"").scope,
        ThresholdScope::Scenario("open".into())
    );
    assert_eq!(
        one("\"scenario open: dropped_rate < 1%\"").scope,
        ThresholdScope::Scenario("open".into())
    );
    // Default step names (`METHOD path`) contain `/`, `?`, `=`: the scope is everything before
    // the last `:` in front of the metric.
    let t = one("\"GET /x?a=b: p99 < 5ms\"");
    assert_eq!(t.scope, step(Some("closed"), "GET /x?a=b"));
    assert_eq!(t.value, 5.0);
    let t = one("\"closed/GET /x?a=b: p99 < 5ms\"");
    assert_eq!(t.scope, step(Some("closed"), "GET /x?a=b"));
    // Unquoted, `- home: p95 < 50ms` is a YAML mapping: read as the scope form.
    let t = one("home: p95 < 50ms");
    assert_eq!(t.scope, step(None, "home"));
    assert_eq!(t.source, "home: p95 < 50ms");
    assert_eq!(one("generator: healthy").scope, ThresholdScope::Generator);
    assert_eq!(
        one("\"generator:healthy\"").scope,
        ThresholdScope::Generator
    );
    // A scope in the full form.
    let t = one("{ threshold: \"closed: p99 < 300ms\", abort_on_fail: true }");
    assert_eq!(t.scope, ThresholdScope::Scenario("closed".into()));
    assert!(t.abort_on_fail);
    // Labels, as the results show them.
    assert_eq!(step(Some("closed"), "home").label(), "step closed/home");
    assert_eq!(step(None, "home").label(), "step home");
    assert_eq!(
        ThresholdScope::Scenario("open".into()).label(),
        "scenario open"
    );
}

#[test]
fn scenario_level_thresholds_are_about_that_scenario() {
    let text = r#"target: builtin
scenarios:
  - name: a
    load: { vus: 1, iterations: 1 }
    thresholds:
      - "p90 < 20ms"
      - "home: ttfb_p99 < 9ms"
      - "a/home: failures == 0"
      - cart: failure_rate < 5%
      - { threshold: "iterations >= 1", abort_on_fail: false }
    steps:
      - { name: home, get: / }
      - { name: cart, get: /cart }
  - name: b
    load: { vus: 1, iterations: 1 }
    thresholds: ["home: p99 < 1s"]
    steps:
      - { name: home, get: / }
"#;
    let p = ok(text);
    let a = &p.scenarios[0].thresholds;
    assert_eq!(a.len(), 5);
    assert_eq!(a[0].scope, ThresholdScope::Scenario("a".into()));
    assert_eq!(a[1].scope, step(Some("a"), "home"));
    assert_eq!(
        a[1].metric,
        lat(LatencyFamily::Ttfb, LatencyStat::Percentile(99.0))
    );
    assert_eq!(a[2].scope, step(Some("a"), "home"));
    assert_eq!(a[3].scope, step(Some("a"), "cart"));
    assert_eq!(a[3].line, 9);
    assert_eq!(a[4].scope, ThresholdScope::Scenario("a".into()));
    // Scenario b's `home` is b's own, although a also has one.
    assert_eq!(p.scenarios[1].thresholds[0].scope, step(Some("b"), "home"));
}

#[test]
fn variables_and_overrides_in_thresholds() {
    let text = "target: builtin\nvars: { p99_limit: 100ms, page: home }\nthresholds:\n  - \"${page}: p99 < ${p99_limit}\"\n  - \"failure_rate < ${FAIL:-2%}\"\nscenarios: [{ name: s, load: { vus: 1, iterations: 1 }, steps: [{ name: home, get: / }] }]\n";
    let p = load_env(text, &[("FAIL", "0.5%")], &[("p99_limit", "250ms")]).unwrap();
    assert_eq!(p.thresholds[0].source, "home: p99 < 250ms");
    assert_eq!(p.thresholds[0].value, 250.0);
    assert_eq!(p.thresholds[0].scope, step(Some("s"), "home"));
    assert_eq!(p.thresholds[1].value, 0.005);
}

#[test]
fn which_thresholds_need_histograms() {
    let needs = |item: &str| one(item).needs_histograms();
    assert!(!needs("\"p99 < 1s\""));
    assert!(!needs("\"p99.9 < 1s\""));
    assert!(!needs("\"home: p50 < 1s\""));
    assert!(!needs("\"max < 1s\""));
    assert!(!needs("\"closed: p99 < 1s\""));
    assert!(!needs("\"closed: service_mean < 1s\""));
    assert!(!needs("\"home: service_p99 < 1s\""));
    assert!(needs("\"p75 < 1s\""));
    assert!(needs("\"home: p99.99 < 1s\""));
    assert!(needs("\"closed: service_p99 < 1s\""));
}

/// Asserts the error is at `line`, names `field`, and its text (message + hint) contains every
/// one of `expected`.
#[track_caller]
fn check(text: &str, line: usize, field: &str, expected: &[&str]) -> String {
    let e = err(text);
    let shown = e.to_string();
    assert_eq!(e.line(), Some(line), "wrong line in:\n{shown}");
    assert!(
        shown.starts_with(&format!("plan.yaml:{line}:")),
        "no FILE:LINE: prefix in:\n{shown}"
    );
    assert_eq!(e.field(), field, "wrong field in:\n{shown}");
    for x in expected {
        assert!(shown.contains(x), "expected {x:?} in:\n{shown}");
    }
    assert!(shown.contains('^'), "no caret in:\n{shown}");
    shown
}

/// The error of a plan whose only plan-level threshold item is `item` (on line 3).
#[track_caller]
fn bad(item: &str, expected: &[&str]) -> String {
    check(&plan(&[item]), 3, "thresholds[0]", expected)
}

#[test]
fn unknown_metric_with_did_you_mean() {
    let s = bad(
        "\"falure_rate < 1%\"",
        &[
            "unknown metric `falure_rate`",
            "did you mean `failure_rate`?",
        ],
    );
    assert!(s.contains("plan.yaml:3:6:"), "{s}");
    bad("\"p99.9x < 1s\"", &["not a percentile"]);
    bad("\"rps > 100\"", &["did you mean `rate`"]);
    bad("\"error_rate < 1%\"", &["did you mean `failure_rate`?"]);
    bad("\"latency < 1s\"", &["name a statistic of it"]);
    bad("\"p101 < 1s\"", &["above 100", "`max`"]);
    bad("\"p0 < 1s\"", &["`min`"]);
    bad("\"frobs > 3\"", &["unknown metric `frobs`", "pNN"]);
}

#[test]
fn checks_thresholds_with_every_scope() {
    let t = one("\"checks > 99.9%\"");
    assert_eq!(
        (t.scope.clone(), t.metric, t.op, t.value),
        (
            ThresholdScope::Total,
            ThresholdMetric::Checks,
            CompareOp::Gt,
            0.999
        )
    );
    let t = one("\"closed: checks == 100%\"");
    assert_eq!(
        (t.scope.clone(), t.metric, t.op, t.value),
        (
            ThresholdScope::Scenario("closed".into()),
            ThresholdMetric::Checks,
            CompareOp::Eq,
            1.0
        )
    );
    let t = one("\"closed/cart: checks >= 0.95\"");
    assert_eq!(
        (t.scope.clone(), t.metric, t.value),
        (step(Some("closed"), "cart"), ThresholdMetric::Checks, 0.95)
    );
    let t = one("\"home: checks_failed < 10\"");
    assert_eq!(
        (t.scope.clone(), t.metric, t.op, t.value),
        (
            step(None, "home"),
            ThresholdMetric::ChecksFailed,
            CompareOp::Lt,
            10.0
        )
    );
    assert_eq!(t.metric.kind(), ValueKind::Count);
    let t = one("{ threshold: \"checks > 99%\", abort_on_fail: true, grace: 5s }");
    assert!(t.abort_on_fail && !t.needs_histograms());
    bad("\"checks > 99\"", &["`99` is ambiguous", "`99%`"]);
    bad(
        "\"checks_failed < 1%\"",
        &["`checks_failed` is a count", "checks > 1%"],
    );
    bad("\"check > 99%\"", &["did you mean `checks`"]);
    bad(
        "\"generator: checks > 99%\"",
        &["the `generator` scope has one check"],
    );
    let s = bad("\"chekcs > 99%\"", &["unknown metric `chekcs`", "`checks`"]);
    assert!(s.contains("plan.yaml:3:6:"), "{s}");
}

/// A plan with a `group:` (JMeter's Transaction Controller): the group is a metric of its
/// scenario, so a scope names it like a step.
const GROUP_PLAN: &str = r#"target: http://127.0.0.1:8080
thresholds:
  - "checkout: p95 < 500ms"
  - "shop/checkout: failure_rate < 1%"
  - "checkout: checks > 99%"
scenarios:
  - name: shop
    load: { vus: 1, iterations: 1 }
    thresholds: ["checkout: requests > 0"]
    steps:
      - { name: home, get: / }
      - group:
          name: checkout
          steps:
            - { name: cart, get: /cart }
            - { name: pay, post: /pay }
"#;

#[test]
fn a_group_is_a_scope() {
    let plan = ok(GROUP_PLAN);
    let shop = &plan.scenarios[0];
    let g = shop
        .metrics
        .iter()
        .position(|m| m.name == "checkout")
        .expect("the group is a metric");
    assert_eq!(shop.metrics[g].kind, MetricKind::Group);
    let t = &plan.thresholds;
    assert_eq!(t[0].scope, step(Some("shop"), "checkout"));
    assert_eq!(t[0].metric, p(95.0));
    assert_eq!(t[0].value, 500.0);
    assert_eq!(t[1].scope, step(Some("shop"), "checkout"));
    assert_eq!(t[1].metric, ThresholdMetric::FailureRate);
    assert_eq!(t[2].metric, ThresholdMetric::Checks);
    assert_eq!(shop.thresholds[0].scope, step(Some("shop"), "checkout"));
    // a misspelt group name gets a did-you-mean like a step
    let text = GROUP_PLAN.replace("\"checkout: p95 < 500ms\"", "\"chekout: p95 < 500ms\"");
    check(
        &text,
        3,
        "thresholds[0]",
        &["unknown scope `chekout`", "did you mean `checkout`?"],
    );
}

#[test]
fn bad_units_and_values() {
    let s = bad("\"p99 < 100\"", &["`100` has no unit", "`100ms`"]);
    assert!(s.contains("plan.yaml:3:12:"), "{s}");
    bad("\"p99 < 100xs\"", &["`xs` is not a unit"]);
    bad("\"p99 < 5%\"", &["is not a time", "`p99 < 100ms`"]);
    bad("\"failure_rate < 1\"", &["`1` is ambiguous", "write `1%`"]);
    bad("\"failure_rate < 1ms\"", &["not a percentage"]);
    bad("\"failure_rate < 120%\"", &["between 0% and 100%"]);
    bad("\"rate > 5/ms\"", &["not a rate", "/s"]);
    bad("\"rate > 5ms\"", &["not a rate"]);
    bad("\"requests > 100/s\"", &["not a count", "rate > 100/s"]);
    bad("\"failures < 2%\"", &["failure_rate < 2%"]);
    bad("\"dropped_iterations < 2%\"", &["dropped_rate < 2%"]);
    bad("\"iterations > -3\"", &["not a count"]);
}

#[test]
fn bad_syntax() {
    bad("\"p99 = 5ms\"", &["unknown operator `=`", "write `==`"]);
    bad("\"p99 => 5ms\"", &["write `>=`"]);
    bad("\"p99 <\"", &["no value after `<`"]);
    bad("\"< 5ms\"", &["no metric before `<`"]);
    bad("\"p99 100ms\"", &["is not a metric"]);
    bad("\"p99\"", &["no comparison after `p99`"]);
    bad("\"home p99 < 5ms\"", &["`home: p99 ...`"]);
    bad("\": p99 < 5ms\"", &["nothing before `:`"]);
    bad("\"\"", &["empty threshold"]);
    bad("[p99, 1s]", &["expected a threshold, found a list"]);
}

#[test]
fn unknown_and_ambiguous_scopes() {
    let s = bad(
        "\"hom: p95 < 50ms\"",
        &[
            "unknown scope `hom`: no scenario or step of that name",
            "did you mean `home`?",
        ],
    );
    assert!(s.contains("plan.yaml:3:6:"), "{s}");
    bad(
        "\"zzz: p95 < 50ms\"",
        &["scenarios: `closed` or `open`; steps: `home`"],
    );
    bad(
        "\"closed/search: p95 < 50ms\"",
        &["unknown scope `closed/search`", "did you mean"],
    );
    // A scenario and a step with the same name.
    let text = "target: builtin\nthresholds: [\"x: p99 < 1s\"]\nscenarios: [{ name: x, load: { vus: 1, iterations: 1 }, steps: [{ name: x, get: / }] }]\n";
    check(
        text,
        2,
        "thresholds[0]",
        &[
            "the scope `x` is ambiguous: it names scenario x and step x/x",
            "`scenario x` or `x/x`",
        ],
    );
    let text = text.replace("\"x: p99", "\"scenario x: p99");
    assert_eq!(
        ok(&text).thresholds[0].scope,
        ThresholdScope::Scenario("x".into())
    );
    // Scenario level: only its own steps.
    let text = "target: builtin\nscenarios:\n  - name: a\n    load: { vus: 1, iterations: 1 }\n    thresholds: [\"b: p99 < 1s\"]\n    steps: [{ name: home, get: / }]\n  - { name: b, load: { vus: 1, iterations: 1 }, steps: [{ get: / }] }\n";
    check(
        text,
        5,
        "scenarios[0].thresholds[0]",
        &[
            "scenario \"a\" has no step of that name",
            "plan-level `thresholds:`",
        ],
    );
}

#[test]
fn metric_and_scope_must_fit() {
    bad(
        "\"home: iterations > 5\"",
        &["`iterations` is counted per scenario, not per step"],
    );
    bad(
        "\"closed/home: dropped_rate < 1%\"",
        &["counted per scenario"],
    );
    bad(
        "\"closed: rate_10s_min > 5/s\"",
        &["whole test only", "remove the scope"],
    );
    bad("\"healthy\"", &["`healthy` needs the scope `generator`"]);
    bad(
        "\"home: healthy\"",
        &["`healthy` is the load generator's verdict"],
    );
    bad(
        "\"generator: p99 < 1s\"",
        &["the `generator` scope has one check, `healthy`"],
    );
    bad("\"generator == healthy\"", &["write `generator: healthy`"]);
    let text = "target: builtin\nscenarios:\n  - name: a\n    load: { vus: 1, iterations: 1 }\n    thresholds: [\"rate_10s_max < 5/s\"]\n    steps: [{ get: / }]\n";
    check(
        text,
        5,
        "scenarios[0].thresholds[0]",
        &["whole test only", "plan-level `thresholds:`"],
    );
}

#[test]
fn option_errors() {
    check(
        &plan(&["{ treshold: \"p99 < 1s\" }"]),
        3,
        "thresholds[0].treshold",
        &["unknown key `treshold`", "did you mean `threshold`?"],
    );
    check(
        &plan(&["{ threshold: \"p99 < 1s\", grace: 5s }"]),
        3,
        "thresholds[0].grace",
        &["`grace` without `abort_on_fail: true`"],
    );
    check(
        &plan(&["{ threshold: \"p99 < 1s\", abort_on_fail: yes }"]),
        3,
        "thresholds[0].abort_on_fail",
        &["expected `true` or `false`"],
    );
    check(
        &plan(&["{ threshold: \"p99 < 1s\", abort_on_fail: true, grace: 5 }"]),
        3,
        "thresholds[0].grace",
        &["has no unit"],
    );
    check(
        &plan(&["{ abort_on_fail: true }"]),
        3,
        "thresholds[0]",
        &["missing key `threshold`"],
    );
    check(
        &plan(&["{ threshold: \"p75 < 1s\", abort_on_fail: true }"]),
        3,
        "thresholds[0].threshold",
        &["`abort_on_fail` needs a figure onrush keeps while the test runs"],
    );
    check(
        &plan(&["home: { threshold: p99 < 1s }"]),
        3,
        "thresholds[0].home",
        &["expected the threshold of `home` as text"],
    );
    check(
        &plan(&["home: \"closed: p99 < 1s\""]),
        3,
        "thresholds[0]",
        &["two scopes"],
    );
    check(
        "target: builtin\nthresholds: p99 < 1s\nscenarios: [{ name: s, load: { vus: 1, iterations: 1 }, steps: [{ get: / }] }]\n",
        2,
        "thresholds",
        &["expected a list of thresholds", "- \"p99 < 100ms\""],
    );
}

#[test]
fn errors_point_at_later_lines_and_scenario_fields() {
    let s = check(
        &plan(&["\"p99 < 1s\"", "\"failure_rate < 1%\"", "\"home: p95 < 5\""]),
        5,
        "thresholds[2]",
        &["`5` has no unit"],
    );
    assert!(s.contains("plan.yaml:5:18:"), "{s}");
    let text = PLAN.replace("[\"p90 < 20ms\"]", "[\"p90 < 20\"]");
    check(
        &text,
        12,
        "scenarios[0].thresholds[0]",
        &["`20` has no unit"],
    );
}
