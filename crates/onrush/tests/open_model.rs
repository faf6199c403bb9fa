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
