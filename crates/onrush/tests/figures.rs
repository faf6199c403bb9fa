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
