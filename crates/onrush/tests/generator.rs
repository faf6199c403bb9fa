//! The generator watches itself: saturating it on purpose gets the "saturated" verdict with the
//! right cause; a comfortable run is "healthy".

use crate::common;
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

/// With every file descriptor taken by connections, the monitor still reads its own figures
/// (it keeps its /proc files open) and calls the shortage by name with its fix. Before, it went
/// blind: 0% CPU, 8 open files, "healthy", beside hundreds of thousands of `io` failures.
#[test]
fn running_out_of_file_descriptors_is_called_by_name() {
    let server = Server::start();
    // Each VU holds its connection for 300 ms per request: 400 of them need 400 descriptors,
    // the limit is 200.
    let url = server.url("/delay/300");
    let out = temp_dir("nofile");
    let output = std::process::Command::new("prlimit")
        .args(["--nofile=200:200", "--"])
        .arg(env!("CARGO_BIN_EXE_onrush"))
        .args(["quick", &url, "-c", "400", "-d", "3s", "--quiet", "--out"])
        .arg(&out)
        .output()
        .expect("prlimit (util-linux) runs onrush");
    let s = summary(&out);
    let g = &s["generator"];
    assert_eq!(g["verdict"], "saturated", "{}\n{g:#}", text(&output));
    let cause = g["causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cause"] == "open_files")
        .unwrap_or_else(|| panic!("no open_files cause: {g:#}"));
    assert!(
        cause["fix"].as_str().unwrap().contains("ulimit -n"),
        "{cause:#}"
    );
    // The figures were read while the descriptors were gone.
    assert!(g["open_fds_max"].as_u64().unwrap() >= 180, "{g:#}");
    assert!(g["cpu_percent_max"].as_f64().unwrap() > 0.0, "{g:#}");
    assert!(
        s["totals"]["requests"].as_u64().unwrap() > 0,
        "some VUs got a descriptor and made requests: {s:#}"
    );
}

/// An arrival rate far beyond what `max_vus` VUs can carry: the verdict names max_vus and its
/// fix, not "other busy processes", and does not claim onrush was the bottleneck.
#[test]
fn too_few_vus_for_the_rate_blame_max_vus() {
    let server = Server::start();
    let url = server.url("/delay/200");
    let out = temp_dir("max-vus");
    let output = onrush()
        .args([
            "quick", &url, "-r", "100000", "-c", "5", "-d", "2s", "--quiet", "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let s = summary(&out);
    assert!(u64_at(&s, "/totals/dropped_iterations") > 1000, "{s:#}");
    let g = &s["generator"];
    assert_eq!(g["verdict"], "saturated", "{}\n{g:#}", text(&output));
    let causes = g["causes"].as_array().unwrap();
    let max_vus = causes
        .iter()
        .find(|c| c["cause"] == "max_vus")
        .unwrap_or_else(|| panic!("{g:#}"));
    assert!(max_vus["fix"].as_str().unwrap().contains("raise max_vus"));
    for c in causes {
        assert!(
            !c["fix"].as_str().unwrap().contains("other busy processes"),
            "{g:#}"
        );
    }
    let message = g["message"].as_str().unwrap();
    assert!(
        message.contains("arrival rate was not reached"),
        "{message}"
    );
}
