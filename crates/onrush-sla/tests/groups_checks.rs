//! Thresholds on checks (`checks`, `checks_failed`) and on groups (a group is a scope like a
//! step; groups stay out of the whole test's and the scenarios' figures).

use std::path::Path;
use std::time::Duration;

use onrush_metrics::*;
use onrush_plan::{MetricKind, Plan, Threshold};
use onrush_sla::*;

const PLAN: &str = r#"target: http://127.0.0.1:8080
scenarios:
  - name: shop
    load: { vus: 1, iterations: 30 }
    steps:
      - { name: home, get: /, check: [{ status: 200 }] }
      - group:
          name: checkout
          steps:
            - { name: cart, get: /cart, check: [{ body_contains: "ok" }] }
            - { name: pay, post: /pay, check: [{ status: 200, name: paid }] }
  - name: admin
    load: { vus: 1, iterations: 3 }
    steps:
      - { name: stats, get: /stats }
"#;

fn load(thresholds: &[&str]) -> Plan {
    let list: String = thresholds
        .iter()
        .map(|t| format!("  - \"{t}\"\n"))
        .collect();
    let text = PLAN.replace("scenarios:\n", &format!("thresholds:\n{list}scenarios:\n"));
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

/// The layout as the engine builds it from the plan: metrics (with their kinds) and checks.
fn layout_of(plan: &Plan) -> Layout {
    Layout {
        scenarios: plan
            .scenarios
            .iter()
            .map(|s| {
                let mut l = ScenarioLayout::new(&s.name, s.metrics.iter().map(|m| m.name.clone()));
                for (i, m) in s.metrics.iter().enumerate() {
                    if m.kind == MetricKind::Group {
                        l.mark_group(i);
                    }
                }
                for c in &s.checks {
                    l.add_check(&c.name, c.metric);
                }
                l
            })
            .collect(),
    }
}

struct Run {
    summary: Summary,
    hists: Histograms,
}

/// 3 seconds; per second: home 10 × 1 ms, cart 10 × 1.2 ms, pay 10 × 1.5 ms, checkout (the
/// group) 10 × 1.8 ms; every check passes except `paid`, once a second; admin/stats 2 × 1 ms,
/// no checks.
fn run() -> Run {
    let plan = load(&[]);
    let layout = layout_of(&plan);
    let shop = &layout.scenarios[0];
    let idx = |n: &str| shop.steps.iter().position(|s| s == n).unwrap();
    let (home, checkout, cart, pay) = (idx("home"), idx("checkout"), idx("cart"), idx("pay"));
    assert!(shop.is_group(checkout) && !shop.is_group(cart));
    let check = |step: usize| shop.checks.iter().position(|c| c.1 == step).unwrap();
    let (c_home, c_cart, c_pay) = (check(home), check(cart), check(pay));
    assert_eq!(shop.checks[c_pay].0, "paid");
    let rec = |us: u64| RequestRecord {
        latency_us: us,
        service_us: us,
        status: 200,
        ..Default::default()
    };
    let mut w = WorkerMetrics::new(&layout);
    let mut c = Collector::new(layout.clone(), RunInfo::new("plan", 1_767_225_600_000));
    for t in 0..3 {
        for i in 0..10 {
            w.record_request(0, home, &rec(1_000));
            w.record_check(0, c_home, true);
            w.record_request(0, cart, &rec(1_200));
            w.record_check(0, c_cart, true);
            w.record_request(0, pay, &rec(1_500));
            w.record_check(0, c_pay, i != 0);
            w.record_request(0, checkout, &rec(1_800));
        }
        w.record_request(1, 0, &rec(1_000));
        w.record_request(1, 0, &rec(1_000));
        c.add(t, w.take_snapshot());
        c.close_second(t);
    }
    c.set_duration(Duration::from_secs(3));
    let dir = std::env::temp_dir().join(format!(
        "onrush-sla-gc-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    c.write_results(&dir).unwrap();
    let hists = Histograms::read(&dir.join(INTERVALS_FILE)).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    Run {
        summary: c.summary(),
        hists,
    }
}

fn eval(r: &Run, exprs: &[&str]) -> Vec<ThresholdResult> {
    let plan = load(exprs);
    evaluate_with(
        &plan.thresholds,
        &r.summary,
        Some("healthy"),
        Some(&r.hists),
    )
}

#[track_caller]
fn outcome(r: &Run, expr: &str) -> ThresholdResult {
    eval(r, &[expr]).pop().unwrap()
}

#[test]
fn checks_pass_rate_and_failed_count_at_every_scope() {
    let r = run();
    // 90 checks, 3 failed: 96.667%
    let res = outcome(&r, "checks > 99%");
    assert!(!res.passed, "{res:?}");
    assert_eq!(res.measured, Some(87.0 / 90.0));
    assert_eq!(res.measured_text, "96.667%");
    assert_eq!(res.scope, "total");
    assert_eq!(res.message, "checks 96.667% is not > 99%");
    assert!(outcome(&r, "checks > 95%").passed);
    assert!(outcome(&r, "checks >= 0.9").passed);

    let res = outcome(&r, "shop: checks == 100%");
    assert!(!res.passed);
    assert_eq!(res.scope, "scenario shop");
    assert!(outcome(&r, "home: checks == 100%").passed);
    assert!(outcome(&r, "shop/cart: checks == 100%").passed);
    let res = outcome(&r, "pay: checks > 95%");
    assert!(!res.passed);
    assert_eq!(res.measured, Some(0.9));

    let res = outcome(&r, "checks_failed < 10");
    assert!(res.passed, "{res:?}");
    assert_eq!(res.measured, Some(3.0));
    assert!(!outcome(&r, "checks_failed == 0").passed);
    assert!(outcome(&r, "home: checks_failed == 0").passed);
    let res = outcome(&r, "pay: checks_failed < 3");
    assert!(!res.passed);
    assert_eq!(res.message, "checks_failed 3 is not < 3");
}

#[test]
fn checks_where_no_check_ran_fail_with_no_checks() {
    let r = run();
    for (expr, scope) in [
        ("admin: checks > 99%", "scenario admin"),
        ("stats: checks == 100%", "step admin/stats"),
        ("checkout: checks > 99%", "group shop/checkout"),
        ("admin: checks_failed == 0", "scenario admin"),
    ] {
        let res = outcome(&r, expr);
        assert!(!res.passed, "{expr}");
        assert_eq!(res.measured, None, "{expr}");
        assert_eq!(res.measured_text, "no checks", "{expr}");
        assert!(
            res.message.starts_with(&format!("no checks in {scope}: ")),
            "{expr}: {}",
            res.message
        );
    }
    // an abort_on_fail threshold does not stop a run before any check ran
    let plan = load(&["checks > 99%"]);
    let mut t: Threshold = plan.thresholds[0].clone();
    t.abort_on_fail = true;
    let mut empty = r.summary.clone();
    empty.checks.clear();
    empty.totals.checks = CheckStats::default();
    assert!(abort_check(
        std::slice::from_ref(&t),
        &empty,
        Duration::from_secs(5),
        None
    )
    .is_none());
    // ... and does once checks fail
    let hit = abort_check(
        std::slice::from_ref(&t),
        &r.summary,
        Duration::from_secs(5),
        None,
    );
    assert_eq!(hit.map(|h| h.measured_text), Some("96.667%".to_string()));
}

#[test]
fn a_group_is_a_scope_and_stays_out_of_the_totals() {
    let r = run();
    let res = outcome(&r, "checkout: p95 < 500ms");
    assert!(res.passed, "{res:?}");
    assert_eq!(
        (res.scope.as_str(), res.measured),
        ("group shop/checkout", Some(1.8))
    );
    let res = outcome(&r, "checkout: p95 < 1.7ms");
    assert!(!res.passed);
    assert_eq!(res.measured_text, "1.8 ms");
    assert!(outcome(&r, "checkout: requests == 30").passed);
    assert!(outcome(&r, "shop/checkout: failure_rate < 1%").passed);
    // from the histograms: the group's own percentile includes it ...
    let res = outcome(&r, "checkout: p75 < 1.7ms");
    assert!(!res.passed);
    assert_eq!(res.measured, Some(1.8));
    // ... the whole test's and the scenario's figures do not (requests top out at 1.5 ms)
    for expr in [
        "max < 1.7ms",
        "p99.99 < 1.7ms",
        "shop: max < 1.7ms",
        "shop: service_max < 1.7ms",
        "shop: service_p99.9 < 1.7ms",
        "requests == 96",
        "shop: requests == 90",
    ] {
        let res = outcome(&r, expr);
        assert!(res.passed, "{expr}: {res:?}");
    }
}
