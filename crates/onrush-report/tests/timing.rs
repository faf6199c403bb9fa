//! Timing of the big case: a 1-hour run at 1-s intervals with 20 steps (72,000 step lines):
//! report generation (< 2 s) and Chromium's drawing of it (< 3 s). Numbers are printed and
//! recorded in docs/report.md. Release builds only (CI runs `cargo test --release`).

mod common;

use std::path::Path;
use std::time::Instant;

use common::{artifacts, chromium, report_status, run_chromium, Fixture};
use onrush_report::{write_report, ReportOptions};

const FIXTURE_VERSION: &str = "1h20-v1";

fn fixture(dir: &Path) {
    let stamp = dir.join("fixture-version");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(FIXTURE_VERSION) {
        return; // kept from an earlier run: building it takes a while
    }
    let t = Instant::now();
    let mut f = Fixture::new("soak-1h").sized(4, 5);
    f.seconds = 3600;
    f.per_step = 200;
    f.workers = 1;
    f = f.with_verdict(true);
    f.write(dir);
    std::fs::write(&stamp, FIXTURE_VERSION).unwrap();
    eprintln!(
        "fixture: 1 h x 20 steps written in {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

#[test]
fn one_hour_twenty_steps() {
    if cfg!(debug_assertions) {
        eprintln!("timing test skipped in a debug build: run `cargo test -p onrush-report --release --test timing -- --nocapture`");
        return;
    }
    let small = common::tmp("timing-30s");
    Fixture::new("short").write(&small);
    let t = Instant::now();
    write_report(&small, &ReportOptions::default()).unwrap();
    eprintln!(
        "TIMING generation of a 30-s, 5-step report: {:.1} ms",
        t.elapsed().as_secs_f64() * 1000.0
    );

    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("onrush-report-1h20");
    fixture(&dir);
    let size = std::fs::metadata(dir.join("intervals.jsonl"))
        .unwrap()
        .len();

    let t = Instant::now();
    let out = write_report(&dir, &ReportOptions::default()).unwrap();
    let gen = t.elapsed();
    let html_size = std::fs::metadata(&out).unwrap().len();
    let t = Instant::now();
    let opts = ReportOptions {
        baseline: Some(dir.clone()),
        out: Some(dir.join("report-vs-self.html")),
        show_host: false,
        live: false,
    };
    let out_base = write_report(&dir, &opts).unwrap();
    let gen_base = t.elapsed();
    eprintln!(
        "TIMING generation: {:.0} ms ({:.1} MB intervals.jsonl -> {:.1} MB report.html); with baseline: {:.0} ms",
        gen.as_secs_f64() * 1000.0,
        size as f64 / 1e6,
        html_size as f64 / 1e6,
        gen_base.as_secs_f64() * 1000.0
    );
    assert!(gen.as_secs_f64() < 2.0 * slack(), "generation took {gen:?}");

    let Some(chrome) = chromium() else { return };
    for (name, html) in [("report", &out), ("report with baseline", &out_base)] {
        let (dom, wall) = run_chromium(
            &chrome,
            html,
            "",
            &["--window-size=1400,3000".into(), "--dump-dom".into()],
        );
        let st = report_status(&dom);
        eprintln!(
            "TIMING chromium {name}: charts drawn in {} ms (page script), page ready at {} ms; chromium process {:.0} ms",
            st["data-draw-ms"], st["data-page-ms"], wall.as_secs_f64() * 1000.0
        );
        assert_eq!(st["data-done"], "1", "{st:?}");
        assert_eq!(st["data-errors"], "", "{st:?}");
        assert_eq!(st["data-nonempty"], st["data-charts"], "{st:?}");
        let draw: f64 = st["data-draw-ms"].parse().unwrap();
        assert!(draw < 3000.0 * slack(), "drawing took {draw} ms");
    }
    std::fs::copy(&out, artifacts().join("report-1h-20-steps.html")).unwrap();
}

/// Room for a machine shared with other builds: ONRUSH_TIMING_SLACK=2 doubles the limits.
fn slack() -> f64 {
    std::env::var("ONRUSH_TIMING_SLACK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0)
}
