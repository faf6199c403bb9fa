//! Every rate of the summary is a count over the time the run covered (docs/results.md, "Rates"):
//! the edge cases where the two used to disagree.

use crate::common;
use common::*;

/// Asserts that `rps` is `requests` over the run's `duration_s`, which the summary rounds to
/// the millisecond (hence a bound, not an equality, for sub-second runs).
fn assert_over_run(s: &serde_json::Value, rps: f64, requests: u64) {
    let d = f64_at(s, "/run/duration_s");
    let (lo, hi) = (
        requests as f64 / (d + 0.0005) - 0.001,
        requests as f64 / (d - 0.0005).max(1e-9) + 0.001,
    );
    assert!(
        (lo..=hi).contains(&rps),
        "{rps} req/s is not {requests} requests over {d} s"
    );
}

#[test]
fn an_open_model_covers_its_whole_duration() {
    // Five arrivals at 0, 1, 2, 3 and 4 s; the last one is done long before 5 s. Its rate was
    // printed as "4.0 s, 1.2 req/s".
    let server = Server::start();
    let out = temp_dir("rate-open");
    let output = onrush()
        .args(["quick", &server.url("/"), "-r", "1", "-d", "5s", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let s = summary(&out);
    assert_eq!(u64_at(&s, "/totals/requests"), 5, "{s:#}");
    let d = f64_at(&s, "/run/duration_s");
    assert!((5.0..5.5).contains(&d), "duration {d}");
    assert_over_run(&s, f64_at(&s, "/totals/rps"), 5);
    assert!(
        text(&output).contains(": 5.0 s,") || text(&output).contains(": 5.1 s,"),
        "{}",
        text(&output)
    );
}

#[test]
fn one_request_in_a_two_second_run_is_half_a_request_per_second() {
    // `rate: 0.0001/s` starts one iteration at 0 s: it was "0.0 s, 71.4 req/s".
    let server = Server::start();
    let s = run_plan_text(
        &server,
        "rate-one",
        "target: http://127.0.0.1:{port}\nscenarios:\n  - name: rare\n    load: { rate: 0.0001/s, duration: 2s, max_vus: 1 }\n    steps: [ { get: / } ]\n",
        &[],
    );
    assert_eq!(u64_at(&s, "/totals/requests"), 1);
    let d = f64_at(&s, "/run/duration_s");
    assert!((2.0..2.5).contains(&d), "duration {d}");
    assert_over_run(&s, f64_at(&s, "/totals/rps"), 1);
    assert!(f64_at(&s, "/totals/rps") <= 0.5, "{s:#}");
}

#[test]
fn a_sub_second_run_is_measured_over_its_own_time() {
    // Iterations have no fixed length: the run covers the wall time it took.
    let server = Server::start();
    let s = run_plan_text(
        &server,
        "rate-short",
        "target: http://127.0.0.1:{port}\nscenarios:\n  - name: few\n    load: { vus: 1, iterations: 3 }\n    steps: [ { get: / } ]\n",
        &[],
    );
    assert_eq!(u64_at(&s, "/totals/requests"), 3);
    let d = f64_at(&s, "/run/duration_s");
    assert!(d > 0.0 && d < 1.0, "duration {d}");
    assert_over_run(&s, f64_at(&s, "/totals/rps"), 3);
}

#[test]
fn a_scenario_that_ends_early_and_its_steps_are_rated_over_the_run() {
    // `once` finishes its single request at once; `steady` goes on for 2 s. Every rate is over
    // the run: the single request is 0.5 req/s, not the hundreds per second of its own instant.
    let server = Server::start();
    let s = run_plan_text(
        &server,
        "rate-scenarios",
        "target: http://127.0.0.1:{port}\nscenarios:\n  - name: once\n    load: { vus: 1, iterations: 1 }\n    steps: [ { name: single, get: / } ]\n  - name: steady\n    load: { rate: 5/s, duration: 2s, max_vus: 2 }\n    steps: [ { name: tick, get: / } ]\n",
        &[],
    );
    let once = scenario(&s, "once");
    assert_eq!(u64_at(once, "/requests"), 1, "{once:#}");
    assert_over_run(&s, f64_at(once, "/rps"), 1);
    let single = step(&s, "once", "single");
    assert_over_run(&s, f64_at(single, "/rps"), 1);
    let steady = scenario(&s, "steady");
    assert_over_run(&s, f64_at(steady, "/rps"), u64_at(steady, "/requests"));
    assert_over_run(
        &s,
        f64_at(&s, "/totals/rps"),
        u64_at(&s, "/totals/requests"),
    );
}

#[test]
fn no_request_is_zero_per_second() {
    // The only step is a think time: no request at all, the rate is 0 and not NaN.
    let server = Server::start();
    let s = run_plan_text(
        &server,
        "rate-none",
        "target: http://127.0.0.1:{port}\nscenarios:\n  - name: idle\n    load: { vus: 1, duration: 1s }\n    steps: [ { think: 100ms } ]\n",
        &[],
    );
    assert_eq!(u64_at(&s, "/totals/requests"), 0);
    assert_eq!(f64_at(&s, "/totals/rps"), 0.0);
}
