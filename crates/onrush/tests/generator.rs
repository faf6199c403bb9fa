//! The generator watches itself: saturating it on purpose gets the "saturated" verdict with the
//! right cause; a comfortable run is "healthy".

mod common;
use common::*;

#[test]
fn an_overloaded_generator_says_so() {
    // One worker thread asked for an arrival rate far beyond what one core can start. The
    // target port is closed, so every arrival costs the generator (a connect that is refused)
    // and nothing else: only onrush can be the bottleneck. (Exit 4: no request succeeded.)
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/");
    let s = run_expect(
        4,
        &[
            "quick", &url, "-t", "1", "-r", "1000000", "-d", "4s", "-c", "1000",
        ],
        &temp_dir("saturated"),
    );
    let g = &s["generator"];
    assert_eq!(g["verdict"], "saturated", "{g:#}");
    let causes = g["causes"].as_array().unwrap();
    let lag = causes
        .iter()
        .find(|c| c["cause"] == "schedule_lag")
        .unwrap_or_else(|| panic!("{g:#}"));
    // The fix is about CPU: the busy worker is named, and more threads or machines suggested.
    let fix = lag["fix"].as_str().unwrap();
    assert!(
        fix.contains("-t ") || fix.contains("more load machines"),
        "{g:#}"
    );
    assert!(
        g["worker_cpu_percent_max"].as_f64().unwrap() >= 70.0,
        "{g:#}"
    );
    assert!(g["message"]
        .as_str()
        .unwrap()
        .contains("describe onrush, not the target"));
    assert!(g["saturated_from_s"].as_u64().unwrap() <= 2, "{g:#}");
}

#[test]
fn a_comfortable_run_is_healthy() {
    let server = Server::start();
    let url = server.url("/");
    let out = temp_dir("healthy");
    let s = run_expect(
        0,
        &["quick", &url, "-r", "50", "-d", "3s", "-c", "10"],
        &out,
    );
    let g = &s["generator"];
    assert_eq!(g["verdict"], "healthy", "{g:#}");
    assert!(g["causes"].as_array().unwrap().is_empty());
    let lines = std::fs::read_to_string(out.join("generator.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert!(
        first["cpu_percent"].is_number() && first["rss_mb"].as_f64().unwrap() > 0.0,
        "{first}"
    );
    assert!(
        first["sockets_to_targets"].as_u64().unwrap() >= 1,
        "{first}"
    );
}
