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
