//! The report in a real browser: headless Chromium opens report.html (no network), the page's
//! script reports in #onrush-report-status how many charts it drew, how many had data and any
//! error; the test asserts on the dumped DOM and keeps screenshots and a PDF print under
//! target/report-artifacts/ for a person to look at.
//!
//! Needs /usr/bin/chromium (tests/install-chromium.sh). Without it the test is skipped with a
//! loud message, except under CI (env CI set), where it fails.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{artifacts, chromium, report_status, run_chromium, tmp, Fixture};
use onrush_report::{write_report, ReportOptions};

const CHARTS: &str = "throughput latency distribution vus failures connections bytes schedule";

fn check(chrome: &Path, html: &Path, fragment: &str, size: &str) -> BTreeMap<String, String> {
    let args = [format!("--window-size={size}"), "--dump-dom".to_string()];
    let (dom, _) = run_chromium(chrome, html, fragment, &args);
    let st = report_status(&dom);
    assert_eq!(st["data-done"], "1", "charts not all drawn: {st:?}");
    assert_eq!(st["data-errors"], "", "the page logged errors: {st:?}");
    assert_eq!(st["data-charts"], "8", "{st:?}");
    assert_eq!(
        st["data-nonempty"], st["data-charts"],
        "a chart drew without data: {st:?}"
    );
    assert_eq!(st["data-ids"], CHARTS);
    st
}

#[test]
fn report_draws_in_chromium() {
    let Some(chrome) = chromium() else { return };
    let base = tmp("browser-base");
    let dir = tmp("browser-run");
    Fixture::new("checkout-flow")
        .with_verdict(true)
        .write(&base);
    let mut f = Fixture::new("checkout-flow").with_verdict(false);
    f.slow = 1.25;
    f.fail_every = 40;
    f.seconds = 90;
    f.write(&dir);
    let plain = write_report(
        &dir,
        &ReportOptions {
            baseline: None,
            out: Some(dir.join("plain.html")),
            show_host: false,
            live: false,
        },
    )
    .unwrap();
    let compared = write_report(
        &dir,
        &ReportOptions {
            baseline: Some(base.clone()),
            out: None,
            show_host: false,
            live: false,
        },
    )
    .unwrap();

    let st = check(&chrome, &plain, "", "1400,3000");
    eprintln!("plain report: drawn in {} ms", st["data-draw-ms"]);
    let st = check(&chrome, &compared, "", "1400,3000");
    eprintln!("report with baseline: drawn in {} ms", st["data-draw-ms"]);
    check(&chrome, &compared, "", "390,2400"); // a phone

    // A counter the data does not have yet (TLS handshakes) gets its chart once it appears.
    let future = tmp("browser-handshakes");
    for f in ["summary.json", "intervals.jsonl"] {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        let text = text.replace(
            r#""kind":"scenario","t":5,"#,
            r#""kind":"scenario","t":5,"handshakes":3,"#,
        );
        std::fs::write(future.join(f), text).unwrap();
    }
    let html = write_report(&future, &ReportOptions::default()).unwrap();
    let (dom, _) = run_chromium(&chrome, &html, "", &["--dump-dom".to_string()]);
    let st = report_status(&dom);
    assert_eq!(st["data-ids"], format!("{CHARTS} handshakes"), "{st:?}");
    assert_eq!(
        (st["data-errors"].as_str(), st["data-nonempty"].as_str()),
        ("", "9"),
        "{st:?}"
    );

    // The controls: every step of the selectors, the log-scale toggles, a resize.
    let st = check(&chrome, &compared, "#onrush-selftest", "1400,3000");
    assert!(
        st.get("data-selftest")
            .is_some_and(|s| s.starts_with("ok ")),
        "{st:?}"
    );

    // Artifacts for people: screenshots (desktop, phone) and a PDF print.
    let out = artifacts();
    for (name, html, size) in [
        ("report.png", &compared, "1400,3000"),
        ("report-plain.png", &plain, "1400,3000"),
        ("report-phone.png", &compared, "390,2400"),
    ] {
        let png = out.join(name);
        let _ = std::fs::remove_file(&png);
        run_chromium(
            &chrome,
            html,
            "",
            &[
                format!("--window-size={size}"),
                format!("--screenshot={}", png.display()),
            ],
        );
        let len = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
        assert!(len > 20_000, "{name}: {len} bytes");
    }
    let pdf = out.join("report.pdf");
    let _ = std::fs::remove_file(&pdf);
    run_chromium(
        &chrome,
        &compared,
        "",
        &[
            "--no-pdf-header-footer".into(),
            format!("--print-to-pdf={}", pdf.display()),
        ],
    );
    let head = std::fs::read(&pdf).unwrap_or_default();
    assert!(head.starts_with(b"%PDF"), "print to PDF failed");
    std::fs::copy(&compared, out.join("report.html")).unwrap();
    eprintln!("artifacts: {}", out.display());

    axis_labels_fit_and_closed_runs_have_no_dropped_chart(&chrome);
}

/// Sub-millisecond latencies (axis labels "0.25 ms", "0.75 ms"), at several widths and device
/// pixel ratios: no y-axis label is wider than its axis (the page checks every drawn axis and
/// reports a cut one in data-errors; "0.75 ms" used to be drawn as ".75 ms"). And a run with
/// closed-model scenarios only gets no dropped-iterations chart (it cannot drop any).
/// Called by `report_draws_in_chromium`: Chromium instances of one test process share a
/// profile directory, so they run one after the other.
fn axis_labels_fit_and_closed_runs_have_no_dropped_chart(chrome: &Path) {
    let dir = tmp("browser-sub-ms");
    let mut f = Fixture::new("fast-api");
    f.slow = 0.2;
    f.open_model = false;
    f.seconds = 20;
    f.write(&dir);
    let html = write_report(&dir, &ReportOptions::default()).unwrap();
    for scale in ["1", "1.5"] {
        for size in ["1400,3000", "390,2400"] {
            let args = [
                format!("--window-size={size}"),
                format!("--force-device-scale-factor={scale}"),
                "--dump-dom".to_string(),
            ];
            let (dom, _) = run_chromium(chrome, &html, "#onrush-selftest", &args);
            let st = report_status(&dom);
            assert_eq!(st["data-done"], "1", "{scale} {size}: {st:?}");
            assert_eq!(st["data-errors"], "", "{scale} {size}: {st:?}");
            assert_eq!(
                st["data-ids"], "throughput latency distribution vus failures connections bytes",
                "closed-only: no schedule chart; {st:?}"
            );
        }
    }
}
