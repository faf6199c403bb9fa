//! Figures that looked wrong to a newcomer (issue 37, section 2): each test runs the CLI and
//! reads what it printed or wrote.

use crate::common;
use common::*;

#[test]
fn a_run_shorter_than_10_s_says_it_has_no_10_second_rates() {
    // A 2-s run printed "whole run (2.0 s < 10 s): highest 1259.3, lowest 1259.3": one figure
    // twice, read as a perfectly flat rate.
    let server = Server::start();
    let out = temp_dir("figures-short-10s");
    let output = onrush()
        .args(["quick", &server.url("/"), "-c", "2", "-d", "2s", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(0), "{printed}");
    assert!(
        printed.contains("highest/lowest 10-s: need a run of at least 10 s (this one: 2."),
        "{printed}"
    );
    assert!(!printed.contains("whole run ("), "{printed}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("needs a run of at least 10 s (this one: 2."),
        "the report does not say so"
    );
    assert!(!html.contains("shorter than 10 s)"));
}

#[test]
fn a_url_missing_the_colon_of_its_scheme_gets_the_mended_url() {
    // `http//host` was answered "write the scheme too, e.g. `http://http//host`".
    let out = temp_dir("figures-scheme-typo");
    let output = onrush()
        .args(["quick", "http//127.0.0.1:9/a", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(2), "{printed}");
    assert!(printed.contains("write http://127.0.0.1:9/a"), "{printed}");
    assert!(!printed.contains("http://http"), "{printed}");

    let plan = write_plan(
        &out,
        "target: https//127.0.0.1:9\nscenarios:\n  - name: s\n    load: { vus: 1, iterations: 1 }\n    steps: [ { get: / } ]\n",
    );
    let output = onrush().arg("run").arg(&plan).output().unwrap();
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(2), "{printed}");
    assert!(printed.contains("write `https://127.0.0.1:9`"), "{printed}");
    assert!(!printed.contains("http://https"), "{printed}");
}

#[test]
fn a_threshold_on_a_group_is_labelled_group() {
    // `checkout: p95 < 10s` on a group was labelled "step checkout" in the verdicts, the JUnit
    // file and the report.
    let server = Server::start();
    let dir = temp_dir("figures-group-scope");
    let plan = write_plan(
        &dir,
        &"target: http://127.0.0.1:{port}\nthresholds: [\"checkout: p95 < 10s\", \"shop/checkout: requests > 0\"]\nscenarios:\n  - name: shop\n    load: { vus: 1, iterations: 2 }\n    steps:\n      - { name: home, get: / }\n      - group:\n          name: checkout\n          steps: [ { name: cart, get: /cart }, { name: pay, get: /pay } ]\n"
            .replace("{port}", &server.port().to_string()),
    );
    let junit = dir.join("junit.xml");
    let out = dir.join("out");
    let output = onrush()
        .args([
            "run",
            plan.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(0), "{printed}");
    let s = summary(&out);
    let scopes: Vec<&str> = s["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["scope"].as_str().unwrap())
        .collect();
    // `checkout` names the group of the one scenario that has it.
    assert_eq!(
        scopes,
        ["group shop/checkout", "group shop/checkout"],
        "{s:#}"
    );
    assert!(printed.contains("group shop/checkout"), "{printed}");
    assert!(!printed.contains("step shop/checkout"), "{printed}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("group shop/checkout") && !xml.contains("step shop/checkout"),
        "{xml}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("group shop/checkout") && !html.contains("step shop/checkout"));
}

#[test]
fn https_against_a_plain_http_port_says_it_is_not_tls() {
    // The built-in server waited silently on the ClientHello (a 30-s handshake timeout), or
    // echoed it as a line; a plain web server's 400 was classed `tls_protocol` with cipher
    // advice first. Now the server answers a 400 and the client says "not TLS" first.
    let server = Server::start();
    let out = temp_dir("figures-https-on-http");
    let url = format!("https://127.0.0.1:{}/", server.port());
    let started = std::time::Instant::now();
    let output = onrush()
        .args([
            "quick",
            &url,
            "-c",
            "1",
            "-n",
            "2",
            "--timeout",
            "5s",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let printed = text(&output);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{printed}"
    );
    assert!(printed.contains("tls_protocol"), "{printed}");
    // The printed summary wraps its lines: compare words.
    let words = printed.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(
            "first seen: the server did not answer in TLS: is this port plain HTTP? use http://"
        ),
        "{printed}"
    );
    assert!(
        words.contains("of requests the server did not answer in TLS (is this port plain HTTP?"),
        "the class hint does not lead with it:\n{printed}"
    );
}

#[test]
fn quick_takes_thresholds_and_refuses_junit_without_one() {
    // `quick --junit` wrote an empty suite, which CI reads as passing.
    let server = Server::start();
    let dir = temp_dir("figures-quick-junit");
    let junit = dir.join("junit.xml");
    let quick = |extra: &[&str]| {
        onrush()
            .args([
                "quick",
                &server.url("/"),
                "-c",
                "1",
                "-n",
                "5",
                "--quiet",
                "--out",
            ])
            .arg(dir.join("out"))
            .args(extra)
            .output()
            .unwrap()
    };
    let output = quick(&["--junit", junit.to_str().unwrap()]);
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(2), "{printed}");
    assert!(
        printed.contains("--junit without --threshold") && printed.contains("add --threshold EXPR"),
        "{printed}"
    );
    assert!(!junit.exists());

    let output = quick(&[
        "--threshold",
        "p99 < 1us",
        "--threshold",
        "failure_rate < 1%",
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let results = summary(&dir.join("out"))["thresholds"].clone();
    assert_eq!(results[0]["passed"], false, "{results:#}");
    assert_eq!(results[1]["passed"], true, "{results:#}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<failure") && xml.contains("failure_rate"),
        "{xml}"
    );

    let output = quick(&["--threshold", "p99 <"]);
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(2), "{printed}");
    assert!(printed.contains("error: --threshold: "), "{printed}");
}

#[test]
fn the_report_says_peak_vus_are_the_active_ones() {
    // 8 VUs started over 2 s, each done after two 50-ms iterations: never more than one or two
    // at once, which the Scenarios table showed as "peak VUs 2" beside an 8-VU load model.
    let server = Server::start();
    let dir = temp_dir("figures-peak-vus");
    let plan = write_plan(
        &dir,
        &"target: http://127.0.0.1:{port}\nscenarios:\n  - name: ramp\n    load: { vus: 8, iterations: 2, ramp_up: 2s }\n    steps: [ { get: /delay/50 } ]\n"
            .replace("{port}", &server.port().to_string()),
    );
    let out = dir.join("out");
    let s = run_expect(0, &["run", plan.to_str().unwrap(), "-t", "2"], &out);
    let peak = u64_at(scenario(&s, "ramp"), "/active_vus_max");
    assert!((1..=2).contains(&peak), "{s:#}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains(r#"<th class="num">peak active VUs</th>"#));
    assert!(html.contains("not the VUs the plan asked for"));
}

#[test]
fn the_report_gives_each_steps_rate_over_its_own_active_time_too() {
    // A scenario that runs 1 s of a 3-s run: its rate over the run is a third of what it sent
    // while it ran, and the report showed only the former.
    let server = Server::start();
    let dir = temp_dir("figures-active-rate");
    let plan = write_plan(
        &dir,
        &"target: http://127.0.0.1:{port}\nscenarios:\n  - name: short\n    load: { rate: 20/s, duration: 1s, max_vus: 4 }\n    steps: [ { name: brief, get: / } ]\n  - name: long\n    load: { rate: 5/s, duration: 3s, max_vus: 4 }\n    steps: [ { name: steady, get: / } ]\n"
            .replace("{port}", &server.port().to_string()),
    );
    let out = dir.join("out");
    let s = run_expect(0, &["run", plan.to_str().unwrap()], &out);
    let brief = step(&s, "short", "brief");
    assert!(f64_at(brief, "/rps") < 10.0, "{s:#}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains(r#"<th class="num">req/s run</th><th class="num">req/s active</th>"#));
    // The step row of `brief`: 20 requests in its 1 active second (2 when the last one ends
    // just past the second's end on a busy machine), against 20 over the 3-s run.
    let row = html
        .split("<tr class=\"step\"><td>brief</td>")
        .nth(1)
        .unwrap()
        .split("</tr>")
        .next()
        .unwrap();
    let active: f64 = row
        .split(" s active\">")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no active rate in {row}"));
    assert!(
        active >= 10.0 && active > 1.4 * f64_at(brief, "/rps"),
        "{row}"
    );
}

#[test]
fn the_printed_summary_and_summary_json_give_each_rate_over_its_own_active_time() {
    // The printed summary showed only the rate over the run: a scenario that ran 1 s of a 3-s
    // run read at a third of what it sent while it ran.
    let server = Server::start();
    let dir = temp_dir("figures-active-rate-printed");
    let plan = write_plan(
        &dir,
        &"target: http://127.0.0.1:{port}\nscenarios:\n  - name: short\n    load: { rate: 20/s, duration: 1s, max_vus: 4 }\n    steps: [ { name: brief, get: / } ]\n  - name: long\n    load: { rate: 5/s, duration: 3s, max_vus: 4 }\n    steps: [ { name: steady, get: / } ]\n"
            .replace("{port}", &server.port().to_string()),
    );
    let out = dir.join("out");
    let output = onrush()
        .args(["run", plan.to_str().unwrap(), "-q", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(0), "{printed}");
    let s = summary(&out);

    // The raw counts: the seconds of intervals.jsonl in which each step had requests.
    let intervals = std::fs::read_to_string(out.join("intervals.jsonl")).unwrap();
    let span = |name: &str| {
        let seconds: Vec<u64> = intervals
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| {
                v["kind"] == "step" && v["step"] == name && v["requests"].as_u64() > Some(0)
            })
            .map(|v| v["t"].as_u64().unwrap())
            .collect();
        (seconds.iter().max().unwrap() - seconds.iter().min().unwrap() + 1) as f64
    };
    let duration = f64_at(&s, "/run/duration_s");
    for (scenario, name) in [("short", "brief"), ("long", "steady")] {
        let st = step(&s, scenario, name);
        let active = span(name).min(duration);
        assert_eq!(f64_at(st, "/active_s"), active, "{name}: {st:#}");
        let want = (f64_at(st, "/requests") / active * 1000.0).round() / 1000.0;
        assert_eq!(f64_at(st, "/rps_active"), want, "{name}: {st:#}");
    }
    let brief = step(&s, "short", "brief");
    assert!(
        f64_at(brief, "/rps_active") > 1.4 * f64_at(brief, "/rps"),
        "{brief:#}"
    );
    let short = s["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|sc| sc["name"] == "short")
        .unwrap();
    assert_eq!(
        f64_at(short, "/rps_active"),
        f64_at(brief, "/rps_active"),
        "{short:#}"
    );

    // Printed: both columns, said which is which, and the scenario's own rate when it ran
    // for part of the run.
    assert!(printed.contains("run rps  act rps"), "{printed}");
    assert!(
        printed.contains(
            "run rps: requests over the whole run; act rps: over the step's own active time"
        ),
        "{printed}"
    );
    assert!(
        printed.contains(&format!(
            "short  (active {:.0} s of {duration:.1}: ",
            f64_at(short, "/active_s")
        )),
        "{printed}"
    );
    assert!(!printed.contains("long  (active"), "{printed}");

    // The report shows summary.json's figure, not one of its own.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let row = html
        .split("<tr class=\"step\"><td>brief</td>")
        .nth(1)
        .and_then(|r| r.split("</tr>").next())
        .unwrap();
    let active_s = f64_at(brief, "/active_s");
    let shown: f64 = row
        .split(&format!("title=\"{active_s} s active\">"))
        .nth(1)
        .and_then(|r| r.split('<').next())
        .and_then(|v| v.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no active rate over {active_s} s in {row}"));
    assert!(
        (shown - f64_at(brief, "/rps_active")).abs() < 0.05,
        "{shown} in the report, {} in summary.json",
        f64_at(brief, "/rps_active")
    );
}

#[test]
fn an_8_vu_closed_scenario_peaks_at_8_vus() {
    // "peak VUs 2" was read for an 8-VU scenario; 8 VUs that each keep a request in flight
    // for the whole run must show 8, in summary.json and printed, whichever worker runs them.
    let dir = temp_dir("figures-peak-vus");
    let plan = write_plan(
        &dir,
        "target: builtin\nscenarios:\n  - name: eight\n    load: { vus: 8, duration: 2s }\n    steps: [ { name: slow, get: /delay/50 } ]\n",
    );
    let out = dir.join("out");
    let output = onrush()
        .args(["run", plan.to_str().unwrap(), "-q", "-t", "2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(0), "{printed}");
    let s = summary(&out);
    assert_eq!(s["scenarios"][0]["active_vus_max"], 8, "{s:#}");
    assert_eq!(s["totals"]["active_vus_max"], 8, "{s:#}");
    assert!(
        printed
            .lines()
            .any(|l| l.starts_with("active VUs (max)") && l.ends_with(" 8")),
        "{printed}"
    );
}
