//! The engine driven through its protocol seam by a fake protocol, in-process: the closed and
//! open drivers, dropped iterations, and the program's flow ops, with no network and no binary.
//!
//! The fake protocol has its own step grammar, `get: PATH` (a template), and answers each
//! step from its path alone:
//! `/fail` fails (`http_5xx`), `/slow/N` takes N ms, `/busy/N` holds the worker thread N ms,
//! anything else succeeds at once with the path
//! as the body. Every exchange is logged as `(scenario, vu, path)` so that tests can see exactly
//! which requests each VU made, in which order.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use onrush_plan::grammar::{CompiledStep, Grammars, Mapping, StepGrammar};
use onrush_plan::{Check, Extract, OnFailure, Plan, PlanError, RenderContext, Step, Template};
use onrush_protocol::{
    Exchange, FailureClass, Protocol, RequestStart, ResponseView, Session, StepSpec, Warmed,
};

use crate::{prepare, run, RunOptions, RunOutcome};

type Log = Arc<Mutex<Vec<(usize, u64, String)>>>;

struct Fake;

struct FakePlan {
    log: Log,
}

/// The fake protocol's step grammar: `- get: /path` (a template), metric `GET /path`.
struct FakeGrammar;

impl StepGrammar for FakeGrammar {
    fn key(&self) -> &'static str {
        "get"
    }
    fn keys(&self) -> &'static [&'static str] {
        &[]
    }
    fn example(&self) -> &'static str {
        "{ get: /path }"
    }
    fn schema(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    fn compile(&self, step: &Mapping<'_>) -> Result<CompiledStep, PlanError> {
        let path = step.required("get", "a path")?;
        Ok(CompiledStep {
            name: format!("GET {}", path.written().unwrap_or_default()),
            spec: Box::new(path.template()?),
        })
    }
}

/// What a fake step keeps of the plan's.
struct FakeRequest {
    metric: usize,
    path: Template,
    extract: Vec<Extract>,
    checks: Vec<Check>,
    on_failure: OnFailure,
}

struct FakeStep {
    plan: FakeRequest,
    scenario: usize,
}

struct FakeSession {
    log: Log,
    vu: u64,
    path: Vec<u8>,
}

impl StepSpec for FakeStep {
    fn metric(&self) -> usize {
        self.plan.metric
    }
    fn extract(&self) -> &[Extract] {
        &self.plan.extract
    }
    fn checks(&self) -> &[Check] {
        &self.plan.checks
    }
    fn on_failure(&self) -> OnFailure {
        self.plan.on_failure
    }
}

impl Protocol for Fake {
    type Plan = FakePlan;
    type Step = FakeStep;
    type Worker = ();
    type Session = FakeSession;

    fn prepare(_plan: &Plan, _builtin: Option<SocketAddr>) -> anyhow::Result<FakePlan> {
        Ok(FakePlan {
            log: Arc::default(),
        })
    }

    fn compile(
        _state: &mut FakePlan,
        _plan: &Plan,
        scenario: usize,
        step: &Step,
    ) -> anyhow::Result<Option<FakeStep>> {
        Ok(match step {
            Step::Custom(c) => c.spec::<Template>().map(|path| FakeStep {
                plan: FakeRequest {
                    metric: c.metric,
                    path: path.clone(),
                    extract: c.extract.clone(),
                    checks: c.checks.clone(),
                    on_failure: c.on_failure,
                },
                scenario,
            }),
            _ => None,
        })
    }

    fn targets(_state: &FakePlan) -> Vec<SocketAddr> {
        Vec::new()
    }

    fn worker(_state: &FakePlan, _scenario: usize) {}

    fn session(state: &Arc<FakePlan>, _scenario: usize, vu: u64, _worker: &()) -> FakeSession {
        FakeSession {
            log: state.log.clone(),
            vu,
            path: Vec::new(),
        }
    }
}

impl Session for FakeSession {
    type Step = FakeStep;

    async fn execute(
        &mut self,
        step: &FakeStep,
        ctx: &RenderContext<'_>,
        start: RequestStart,
    ) -> Exchange {
        let started = start.begin();
        let mut exchange = Exchange::empty();
        self.path.clear();
        if step.plan.path.render(ctx, &mut self.path).is_err() {
            exchange.record.failure = Some(FailureClass::VariableUnset);
            return exchange;
        }
        let path = String::from_utf8_lossy(&self.path).into_owned();
        self.log
            .lock()
            .unwrap()
            .push((step.scenario, self.vu, path.clone()));
        if let Some(ms) = path.strip_prefix("/slow/") {
            tokio::time::sleep(Duration::from_millis(ms.parse().unwrap())).await;
        }
        if let Some(ms) = path.strip_prefix("/busy/") {
            // Holds the worker thread, as a costly start (a slow connect, TLS) would.
            std::thread::sleep(Duration::from_millis(ms.parse().unwrap()));
            tokio::task::yield_now().await;
        }
        exchange.responded = true;
        exchange.record.status = if path == "/fail" { 500 } else { 200 };
        if path == "/fail" {
            exchange.record.failure = Some(FailureClass::Http5xx);
        }
        exchange.record.bytes_in = self.path.len() as u64;
        exchange.finish(started, start.intended);
        exchange
    }

    /// Logged as `(scenario, vu, "warm_up")`: a connection opened.
    async fn warm_up(&mut self, step: &FakeStep) -> Warmed {
        self.log
            .lock()
            .unwrap()
            .push((step.scenario, self.vu, "warm_up".to_string()));
        tokio::task::yield_now().await;
        Warmed::Opened
    }

    fn response(&self) -> ResponseView<'_> {
        ResponseView {
            status: 200,
            body: &self.path,
            body_size: self.path.len() as u64,
            url: &self.path,
            ..ResponseView::default()
        }
    }
}

/// Runs `yaml` with the fake protocol on `threads` workers; the outcome and the request log
/// (without the open model's warm-ups).
fn run_plan(yaml: &str, threads: usize) -> (RunOutcome, Vec<(usize, u64, String)>) {
    let (outcome, mut log) = run_plan_with_warm_ups(yaml, threads);
    log.retain(|(_, _, p)| p != "warm_up");
    (outcome, log)
}

/// [`run_plan`], the log also holding a `(scenario, vu, "warm_up")` per VU warmed up.
fn run_plan_with_warm_ups(yaml: &str, threads: usize) -> (RunOutcome, Vec<(usize, u64, String)>) {
    let plan = load(yaml);
    let prepared = prepare::<Fake>(&plan, None).expect("the plan prepares");
    let log = prepared.protocol.log.clone();
    let outcome = run(prepared, RunOptions::quiet(threads, "test")).expect("no files to write");
    let log = log.lock().unwrap().clone();
    (outcome, log)
}

/// `yaml` loaded with the fake protocol's grammar.
fn load(yaml: &str) -> Plan {
    let grammars = Grammars::only(FakeGrammar);
    onrush_plan::load_str_with_grammars(
        "test.yaml",
        yaml,
        std::path::Path::new("."),
        &[],
        &[],
        &grammars,
    )
    .expect("the test plan loads")
}

/// The paths VU `vu` of scenario 0 requested, in order.
fn paths_of(log: &[(usize, u64, String)], vu: u64) -> Vec<&str> {
    log.iter()
        .filter(|(s, v, _)| *s == 0 && *v == vu)
        .map(|(_, _, p)| p.as_str())
        .collect()
}

#[test]
fn closed_model_runs_every_vu_its_iterations_on_every_worker() {
    let (outcome, log) = run_plan(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { vus: 5, iterations: 3 }\n    steps:\n      - get: /a\n      - get: /b\n",
        2,
    );
    let summary = outcome.collector.summary();
    assert_eq!(summary.totals.requests, 30);
    assert_eq!(summary.totals.iterations, 15);
    assert_eq!(summary.totals.failures, 0);
    for vu in 1..=5 {
        assert_eq!(paths_of(&log, vu), ["/a", "/b", "/a", "/b", "/a", "/b"]);
    }
    assert!(!outcome.interrupted);
}

#[test]
fn shared_iterations_are_split_exactly() {
    let (outcome, log) = run_plan(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { vus: 3, shared_iterations: 10 }\n    steps:\n      - get: /a\n",
        2,
    );
    assert_eq!(outcome.collector.summary().totals.iterations, 10);
    assert_eq!(log.len(), 10);
}

#[test]
fn vus_whose_requests_fail_at_once_do_not_keep_the_worker_to_themselves() {
    // Every request fails without awaiting anything (as a connect refused for want of a file
    // descriptor does): without a yield, the first VU would loop alone for the whole duration
    // and the other 19 would never start.
    let (outcome, log) = run_plan(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { vus: 20, duration: 300ms }\n    steps:\n      - get: /fail\n",
        1,
    );
    assert!(
        outcome.vus_not_started.is_empty(),
        "{:?}",
        outcome.vus_not_started
    );
    let mut vus: Vec<u64> = log.iter().map(|(_, vu, _)| *vu).collect();
    vus.sort_unstable();
    vus.dedup();
    assert_eq!(vus, (1..=20).collect::<Vec<u64>>());
    let t = &outcome.collector.summary().totals;
    assert_eq!(t.failures, t.requests, "{t:?}");
}

#[test]
fn open_model_starts_exactly_the_scheduled_arrivals() {
    let (outcome, log) = run_plan(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { rate: 200/s, duration: 1s, max_vus: 20 }\n    steps:\n      - get: /a\n",
        2,
    );
    let summary = outcome.collector.summary();
    // Exactly the schedule's 200 arrivals, each run or dropped; an arrival is dropped only when
    // its worker wakes for it after the scenario's end (a machine so busy that a wake-up is
    // 5 ms late), so nearly all run.
    let t = &summary.totals;
    assert_eq!(t.iterations + t.dropped_iterations, 200, "{t:?}");
    assert!(t.iterations >= 195, "{t:?}");
    assert_eq!(log.len() as u64, t.iterations);
}

#[test]
fn open_model_counts_stay_exact_at_high_rates() {
    // 20,000 arrivals in 1 s on 2 workers: batches of due arrivals, VUs handed arrivals while
    // parked, and (on a busy machine) arrivals started late or dropped at the end. Whatever the
    // timing, every scheduled arrival is either run or counted as dropped, exactly once.
    let (outcome, log) = run_plan(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { rate: 20000/s, duration: 1s, max_vus: 40 }\n    steps:\n      - get: /a\n",
        2,
    );
    let summary = outcome.collector.summary();
    assert_eq!(
        summary.totals.iterations + summary.totals.dropped_iterations,
        20_000,
        "{:?}",
        summary.totals
    );
    assert_eq!(log.len() as u64, summary.totals.iterations);
    // A 2-VU pool busy 20 ms per iteration: nearly every arrival is dropped, none is delayed.
    let (outcome, log) = run_plan(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { rate: 10000/s, duration: 500ms, max_vus: 2 }\n    steps:\n      - get: /slow/20\n",
        1,
    );
    let summary = outcome.collector.summary();
    assert_eq!(
        summary.totals.iterations + summary.totals.dropped_iterations,
        5_000
    );
    assert!(summary.totals.iterations <= 2 * 26, "{:?}", summary.totals);
    assert_eq!(log.len() as u64, summary.totals.iterations);
}

#[test]
fn open_model_warms_up_its_first_vus_before_the_first_arrival() {
    // 400 arrivals in the first second: `warm_up: true` warms up the VUs they keep busy at
    // 50 ms each, 20 (of max_vus 40), split between the 2 workers, before any arrival.
    let plan = |warm_up: &str| {
        format!(
            "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: {{ rate: 400/s, duration: 1s, max_vus: 40{warm_up} }}\n    steps:\n      - think: 1ms\n      - get: /a\n"
        )
    };
    let (outcome, log) = run_plan_with_warm_ups(&plan(""), 2);
    let warmed: Vec<u64> = log
        .iter()
        .filter(|(_, _, p)| p == "warm_up")
        .map(|(_, vu, _)| *vu)
        .collect();
    let mut ids = warmed.clone();
    ids.sort_unstable();
    assert_eq!(ids, (1..=20).collect::<Vec<u64>>(), "{log:?}");
    let first_request = log.iter().position(|(_, _, p)| p == "/a").unwrap();
    assert!(
        log[..first_request]
            .iter()
            .filter(|(_, _, p)| p == "warm_up")
            .count()
            == 20,
        "every warm-up comes before the first arrival's request: {log:?}"
    );
    let t = &outcome.collector.summary().totals;
    // The warm-up's connections are the run's; the arrivals are the schedule's, exactly: each
    // is started (its schedule lag recorded) or dropped.
    assert_eq!(t.connections_opened, 20);
    assert_eq!(t.schedule_lag_ms.count + t.dropped_iterations, 400, "{t:?}");
    // An iteration started so late (on a loaded machine) that its 1 ms think ends after the
    // second is cut there, before its request: VUs start no request once the load has ended,
    // and such an iteration is in neither count. At most one per VU in flight at the end.
    assert!(
        t.iterations <= t.schedule_lag_ms.count
            && t.iterations + t.active_vus_max >= t.schedule_lag_ms.count,
        "{t:?}"
    );
    assert_eq!(log.len() as u64 - 20, t.iterations);
    // A warmed-up VU takes the first arrival (no VU is created for it).
    assert!(warmed.contains(&log[first_request].1), "{log:?}");

    // `warm_up: false`: none; `warm_up: 5`: five.
    let (outcome, log) = run_plan_with_warm_ups(&plan(", warm_up: false"), 2);
    assert!(log.iter().all(|(_, _, p)| p != "warm_up"), "{log:?}");
    assert_eq!(outcome.collector.summary().totals.connections_opened, 0);
    let (_, log) = run_plan_with_warm_ups(&plan(", warm_up: 5"), 1);
    let warmed: Vec<u64> = log
        .iter()
        .filter(|(_, _, p)| p == "warm_up")
        .map(|(_, vu, _)| *vu)
        .collect();
    assert_eq!(warmed, [1, 2, 3, 4, 5]);
}

#[test]
fn open_model_counts_arrivals_that_find_no_free_vu_as_dropped() {
    // One VU busy 300 ms per iteration; 50 arrivals in 1 s: at most 4 run, none is delayed.
    let (outcome, _) = run_plan(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { rate: 50/s, duration: 1s, max_vus: 1 }\n    steps:\n      - get: /slow/300\n",
        1,
    );
    let summary = outcome.collector.summary();
    let started = summary.totals.iterations;
    assert!((1..=4).contains(&started), "{started} iterations ran");
    assert_eq!(started + summary.totals.dropped_iterations, 50);
}

#[test]
fn vus_the_run_never_reached_are_counted_and_make_the_generator_unhealthy() {
    // 40 VUs for 1 s on one worker, each request holding the worker 100 ms: at most ~10 VUs
    // get their first turn before the end. The others are counted, with why.
    let (outcome, _) = run_plan(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { vus: 40, duration: 1s }\n    steps:\n      - get: /busy/100\n",
        1,
    );
    let [missing] = outcome.vus_not_started.as_slice() else {
        panic!("{:?}", outcome.vus_not_started)
    };
    assert_eq!(missing.scenario, "s");
    assert_eq!(missing.planned, 40);
    assert!(missing.started >= 1 && missing.started < 20, "{missing:?}");
    assert_eq!(missing.started + missing.not_started, 40);
    assert!(
        missing.reason.contains("ended before"),
        "{}",
        missing.reason
    );
    let g = &outcome.generator;
    assert_eq!(g.verdict, "saturated");
    assert!(
        g.causes.iter().any(|c| c.cause == "vus_not_started"),
        "{:?}",
        g.causes
    );
}

#[test]
fn every_vu_started_is_nothing_to_report() {
    let (outcome, _) = run_plan(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: s\n    load: { vus: 50, duration: 1s }\n    steps:\n      - get: /slow/10\n  - name: ramp\n    load: { stages: [ { vus: 10, over: 1s } ] }\n    steps:\n      - get: /slow/10\n",
        2,
    );
    assert!(
        outcome.vus_not_started.is_empty(),
        "{:?}",
        outcome.vus_not_started
    );
    assert_eq!(
        outcome.generator.verdict, "healthy",
        "{:?}",
        outcome.generator
    );
}

#[test]
fn flow_ops_once_loop_if_and_random_run_in_program_order() {
    let yaml = r#"
target: http://127.0.0.1:9
scenarios:
  - name: s
    load: { vus: 1, iterations: 2 }
    steps:
      - once:
          - get: /login
      - loop: { count: 3, steps: [ { get: "/item/${iteration}" } ] }
      - get: /who
        extract: { who: { regex: "/(w)ho" } }
      - if: { var: who, equals: w }
        then: [ { get: /yes } ]
        else: [ { get: /no } ]
      - if: { var: who, equals: x }
        then: [ { get: /never } ]
      - group:
          name: g
          steps: [ { get: /in-group } ]
      - random:
          - { weight: 1, steps: [ { get: /r } ] }
"#;
    let (outcome, log) = run_plan(yaml, 1);
    let paths = paths_of(&log, 1);
    assert_eq!(
        paths,
        [
            "/login",
            "/item/0",
            "/item/0",
            "/item/0",
            "/who",
            "/yes",
            "/in-group",
            "/r",
            "/item/1",
            "/item/1",
            "/item/1",
            "/who",
            "/yes",
            "/in-group",
            "/r"
        ]
    );
    let summary = outcome.collector.summary();
    assert_eq!(summary.totals.iterations, 2);
    // The group is a metric of its own, not a request.
    assert!(summary.steps.iter().any(|s| s.name == "g"));
}

#[test]
fn on_failure_next_iteration_and_stop_vu() {
    let yaml = r#"
target: http://127.0.0.1:9
scenarios:
  - name: s
    load: { vus: 1, iterations: 3 }
    steps:
      - { get: /a }
      - { get: /fail, on_failure: next_iteration }
      - { get: /never }
  - name: t
    load: { vus: 1, iterations: 3 }
    steps:
      - { get: /b }
      - { get: /fail, on_failure: stop_vu }
"#;
    let (outcome, log) = run_plan(yaml, 1);
    assert_eq!(
        paths_of(&log, 1),
        ["/a", "/fail", "/a", "/fail", "/a", "/fail"]
    );
    let t: Vec<&str> = log
        .iter()
        .filter(|(s, _, _)| *s == 1)
        .map(|(_, _, p)| p.as_str())
        .collect();
    assert_eq!(t, ["/b", "/fail"]);
    assert_eq!(outcome.collector.summary().totals.failures, 4);
}

#[test]
fn a_failed_check_fails_the_request() {
    let yaml = r#"
target: http://127.0.0.1:9
scenarios:
  - name: s
    load: { vus: 1, iterations: 2 }
    steps:
      - get: /hello
        check: [ { body_contains: hello }, { body_contains: nope } ]
"#;
    let (outcome, _) = run_plan(yaml, 1);
    let summary = outcome.collector.summary();
    assert_eq!(summary.totals.requests, 2);
    assert_eq!(summary.totals.failures, 2);
    assert_eq!(summary.totals.checks.passes, 2);
    assert_eq!(summary.totals.checks.fails, 2);
    assert_eq!(
        summary.totals.failures_by_class.get("check_failed"),
        Some(&2)
    );
}

/// `failures_by_class[class]` of step `name`.
fn step_class(outcome: &RunOutcome, name: &str, class: &str) -> u64 {
    let summary = outcome.collector.summary();
    let step = summary.steps.iter().find(|s| s.name == name).unwrap();
    step.failures_by_class.get(class).copied().unwrap_or(0)
}

#[test]
fn the_end_of_a_duration_stops_loops_and_thinks_between_requests() {
    // Iterations that would take 5 s (a loop) and 10 s (a think) in a 300 ms scenario.
    let yaml = r#"
target: http://127.0.0.1:9
scenarios:
  - name: looping
    load: { vus: 2, duration: 300ms }
    steps:
      - loop: { count: 5000, steps: [ { get: /slow/1 } ] }
  - name: thinking
    load: { vus: 2, duration: 300ms }
    steps:
      - get: /thought
      - think: 10s
      - get: /never
"#;
    let started = Instant::now();
    let (outcome, log) = run_plan(yaml, 1);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "ran {took:?}");
    let summary = outcome.collector.summary();
    assert_eq!(summary.totals.failures, 0);
    let thinking: Vec<_> = log.iter().filter(|(s, _, _)| *s == 1).collect();
    assert_eq!(
        thinking.len(),
        2,
        "one request per VU, then the think is cut: {thinking:?}"
    );
    // Cut iterations are not counted as completed.
    assert_eq!(summary.totals.iterations, 0);
    let looped = log.iter().filter(|(s, _, _)| *s == 0).count();
    assert!((2..2 * 5000).contains(&looped), "{looped}");
}

#[test]
fn graceful_stop_cuts_requests_still_in_flight_and_counts_them() {
    let yaml = r#"
target: http://127.0.0.1:9
scenarios:
  - name: s
    load: { vus: 2, duration: 200ms, graceful_stop: 300ms }
    steps:
      - { name: hung, get: /slow/5000 }
"#;
    let started = Instant::now();
    let (outcome, log) = run_plan(yaml, 2);
    let took = started.elapsed();
    assert!(took < Duration::from_millis(1500), "ran {took:?}");
    assert_eq!(log.len(), 2);
    let summary = outcome.collector.summary();
    assert_eq!(summary.totals.requests, 2, "the cut requests are counted");
    assert_eq!(step_class(&outcome, "hung", "interrupted"), 2);
    // Their latency is how long they had waited: the duration and the graceful stop.
    let max = summary.totals.latency_ms.max;
    assert!((450.0..1400.0).contains(&max), "{max} ms");
}

#[test]
fn a_stop_counts_the_other_requests_in_flight_as_interrupted() {
    let yaml = r#"
target: http://127.0.0.1:9
scenarios:
  - name: waiting
    load: { vus: 1, iterations: 1 }
    steps:
      - { name: hung, get: /slow/5000 }
  - name: stopping
    load: { vus: 1, iterations: 1 }
    steps:
      - think: 100ms
      - { get: /fail, on_failure: stop_test }
"#;
    let started = Instant::now();
    let (outcome, _) = run_plan(yaml, 1);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(outcome.stopped_by_failure);
    let summary = outcome.collector.summary();
    assert_eq!(summary.totals.requests, 2);
    assert_eq!(step_class(&outcome, "hung", "interrupted"), 1);
    assert_eq!(step_class(&outcome, "GET /fail", "http_5xx"), 1);
}

#[test]
fn open_model_iterations_are_cut_when_their_graceful_stop_ends_not_the_run() {
    // Scenario `late` goes on for 1.5 s: `open`'s requests are cut at 0.5 s all the same.
    let yaml = r#"
target: http://127.0.0.1:9
scenarios:
  - name: open
    load: { rate: 10/s, duration: 300ms, max_vus: 10, graceful_stop: 200ms }
    steps:
      - { name: hung, get: /slow/5000 }
  - name: late
    load: { vus: 1, duration: 1500ms }
    steps:
      - get: /slow/50
"#;
    let (outcome, log) = run_plan(yaml, 1);
    let arrivals = log.iter().filter(|(s, _, _)| *s == 0).count() as u64;
    assert!(arrivals >= 2, "{arrivals}");
    assert_eq!(step_class(&outcome, "hung", "interrupted"), arrivals);
    let summary = outcome.collector.summary();
    let hung = summary.steps.iter().find(|s| s.name == "hung").unwrap();
    assert!(
        hung.latency_ms.max < 900.0,
        "cut at 0.5 s: {}",
        hung.latency_ms.max
    );
}

#[test]
fn a_process_that_joins_late_runs_the_rest_of_the_schedule_in_the_runs_seconds() {
    // A spare agent taking over a lost segment at 1.5 s of a 3-s plan: the open model's
    // arrivals from 1.5 s on (300 of 600), the ramp's VUs as they are from 1.5 s on, nothing
    // of a scenario bounded by iterations; its seconds are the run's (1 and 2, not 0).
    let plan = load(
        "target: http://127.0.0.1:9\nscenarios:\n  - name: open\n    load: { rate: 200/s, duration: 3s, max_vus: 20 }\n    steps:\n      - get: /o\n  - name: ramp\n    load: { stages: [ { vus: 4, over: 3s } ] }\n    steps:\n      - get: /r\n      - think: 100ms\n  - name: counted\n    load: { vus: 2, iterations: 5 }\n    steps:\n      - get: /c\n",
    );
    let prepared = prepare::<Fake>(&plan, None).expect("the plan prepares");
    let log = prepared.protocol.log.clone();
    let mut options = RunOptions::quiet(2, "test");
    options.join_at = Duration::from_millis(1500);
    let outcome = run(prepared, options).expect("no files to write");
    let summary = outcome.collector.summary();
    let open = summary.scenarios.iter().find(|s| s.name == "open").unwrap();
    assert_eq!(open.iterations + open.dropped_iterations, 300, "{open:?}");
    let log = log.lock().unwrap();
    assert!(
        log.iter().all(|(s, _, p)| *s != 2 && p != "/c"),
        "iterations ran"
    );
    // The ramp is at 2 VUs at 1.5 s: VUs 1 and 2 run from the start, 3 and 4 join later.
    let ramp: std::collections::BTreeSet<u64> = log
        .iter()
        .filter(|(s, _, _)| *s == 1)
        .map(|(_, v, _)| *v)
        .collect();
    assert!(ramp.contains(&1) && ramp.contains(&2), "{ramp:?}");
    assert!(ramp.iter().all(|v| *v <= 4), "{ramp:?}");
    // The run's seconds: the first written is second 1 (it joined 0.5 s into it).
    let dir = std::env::temp_dir().join(format!("onrush-join-late-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut collector = outcome.collector;
    collector.write_intervals(&dir).unwrap();
    let mut lines =
        onrush_results::IntervalsReader::open(&dir.join(onrush_results::INTERVALS_FILE)).unwrap();
    let mut seconds = std::collections::BTreeSet::new();
    while let Some(line) = lines.next_line().unwrap() {
        if let onrush_results::Line::Step(l) = line {
            seconds.insert(l.t);
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(seconds.first(), Some(&1), "{seconds:?}");
    assert!(outcome.vus_not_started.is_empty());
}

mod steering;
