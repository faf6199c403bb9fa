//! The open model: arrival rate held, no coordinated omission.

use crate::common;
use common::*;

#[test]
fn open_model_holds_the_rate() {
    let server = Server::start();
    let url = server.url("/");
    let s = run_expect(
        0,
        &["quick", &url, "-r", "500", "-d", "4s", "-c", "50"],
        &temp_dir("open-rate"),
    );
    let iterations = u64_at(&s, "/totals/iterations");
    assert!(
        (1960..=2040).contains(&iterations),
        "500/s x 4 s = 2000 ± 2%: {iterations}"
    );
    assert_eq!(u64_at(&s, "/totals/dropped_iterations"), 0);
    assert_eq!(server.stats().requests, iterations);
}

#[test]
fn busy_vus_drop_iterations_instead_of_delaying_them() {
    let server = Server::start();
    // 100/s of 200 ms requests need ~20 VUs; with 5, most arrivals find every VU busy.
    let url = server.url("/delay/200");
    let s = run_expect(
        0,
        &["quick", &url, "-r", "100", "-d", "2s", "-c", "5"],
        &temp_dir("open-drop"),
    );
    let done = u64_at(&s, "/totals/iterations");
    let dropped = u64_at(&s, "/totals/dropped_iterations");
    assert_eq!(
        done + dropped,
        200,
        "every arrival is either run or counted as dropped"
    );
    assert!(dropped >= 120, "dropped {dropped}");
}

#[test]
fn latency_counts_server_stalls_from_the_intended_start() {
    let server = Server::start();
    // The server pauses 300 ms every second; requests arriving in the pause wait for its end.
    let url = server.url("/stall?every=1000&for=300");
    let s = run_expect(
        0,
        &["quick", &url, "-r", "200", "-d", "4s", "-c", "200"],
        &temp_dir("stall"),
    );
    let p99 = f64_at(&s, "/totals/latency_ms/p99");
    assert!(p99 >= 250.0, "p99 {p99} ms must show the 300 ms stalls");
    let p50 = f64_at(&s, "/totals/latency_ms/p50");
    assert!(
        p50 < 100.0,
        "most requests are outside the stall: p50 {p50}"
    );
}

#[test]
fn open_model_connects_its_warm_up_vus_before_the_first_arrival() {
    // 200 arrivals in 1 s; `warm_up: 30` connects 30 VUs before the schedule starts. Every
    // request reads the server's `/stats`: with the warm-up even the first one sees at least
    // 10 connections accepted (2 digits), since they were opened before it. No timing asserted.
    let server = Server::start();
    let plan = |server: &Server, warm_up: &str| {
        format!(
            "target: {}\nscenarios:\n  - name: open\n    load: {{ rate: 200/s, duration: 1s, max_vus: 40, warm_up: {warm_up} }}\n    steps:\n      - get: /stats\n        check: [{{ jsonpath: \"$.accepted\", matches: \"^[1-9][0-9]+$\" }}]\n",
            server.url("")
        )
    };
    let s = run_plan_text(&server, "warm-up", &plan(&server, "30"), &[]);
    let t = |p: &str| u64_at(&s, &format!("/totals/{p}"));
    assert_eq!(t("iterations") + t("dropped_iterations"), 200, "{s}");
    assert_eq!(
        t("failures"),
        0,
        "every request saw the warm-up's connections: {s}"
    );
    // Connections opened in the warm-up are the run's.
    assert!(t("connections_opened") >= 30, "{s}");

    // Without a warm-up the requests find fewer than 10 connections (a VU or two serve 200/s):
    // the check fails, here every request (exit code 4: not one succeeded).
    let server = Server::start();
    let dir = temp_dir("no-warm-up");
    let path = write_plan(&dir, &plan(&server, "false"));
    let s = run_expect(4, &["run", path.to_str().unwrap()], &dir.join("out"));
    let t = |p: &str| u64_at(&s, &format!("/totals/{p}"));
    assert_eq!(t("iterations") + t("dropped_iterations"), 200, "{s}");
    assert!(
        t("failures") >= 1,
        "the first requests found no warm connection: {s}"
    );
}
