//! The report of the engine's example plan, as a user gets it at the end of a run, renders in
//! headless Chromium with every chart drawn with data and no error logged.

use crate::common;
use common::*;

use std::process::Command;

#[test]
fn the_example_plans_report_draws_every_chart_in_chromium() {
    let server = Server::start();
    let out = temp_dir("report");
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/basic.yaml");
    let output = onrush()
        .args(["run", example, "-q", "--out"])
        .arg(&out)
        .env("PORT", server.port().to_string())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let html = out.join("report.html");
    let page = std::fs::read_to_string(&html).expect("report.html written at the end of the run");
    assert!(page.contains("<html"), "an HTML page");
    assert!(
        !page.contains("<script src=") && !page.contains("stylesheet\" href="),
        "self-contained: nothing fetched"
    );

    let chromium = std::path::Path::new("/usr/bin/chromium");
    if !chromium.exists() {
        assert!(
            std::env::var("CI").is_err(),
            "CI must have chromium: scripts/setup.sh installs it"
        );
        eprintln!("SKIPPED: /usr/bin/chromium is not installed (bash crates/onrush-report/tests/install-chromium.sh)");
        return;
    }
    let chrome = |extra: &[&str]| {
        let profile = temp_dir("report-chromium-profile");
        let output = Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
            ])
            .args([
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(["--virtual-time-budget=5000", "--window-size=1400,2400"])
            .args(extra)
            .arg(format!("file://{}", html.display()))
            .output()
            .expect("chromium runs");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let dom = chrome(&["--dump-dom"]);
    let status = status_attributes(&dom);
    assert_eq!(
        status.get("data-done").map(String::as_str),
        Some("1"),
        "{status:?}"
    );
    assert_eq!(
        status.get("data-errors").map(String::as_str),
        Some(""),
        "{status:?}"
    );
    let charts: u32 = status["data-charts"].parse().unwrap();
    assert!(charts >= 8, "{status:?}");
    assert_eq!(
        status["data-nonempty"], status["data-charts"],
        "every chart has data: {status:?}"
    );

    // Kept as an artifact to look at.
    let artifacts = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../target/report-artifacts"
    ));
    std::fs::create_dir_all(&artifacts).unwrap();
    let png = artifacts.join("example-plan-report.png");
    chrome(&[&format!("--screenshot={}", png.display())]);
    assert!(png.exists());
}

/// The attributes of `<div id="onrush-report-status" ...>`, which the page fills after drawing.
fn status_attributes(dom: &str) -> std::collections::BTreeMap<String, String> {
    let start = dom
        .find(r#"id="onrush-report-status""#)
        .unwrap_or_else(|| panic!("no status element in:\n{dom:.2000}"));
    let open = dom[..start].rfind('<').unwrap();
    let tag = &dom[open..open + dom[open..].find('>').unwrap()];
    tag.split('"')
        .collect::<Vec<_>>()
        .chunks(2)
        .filter_map(|kv| {
            let name = kv[0]
                .trim()
                .trim_end_matches('=')
                .rsplit(' ')
                .next()?
                .to_string();
            Some((name, kv.get(1)?.to_string()))
        })
        .collect()
}
