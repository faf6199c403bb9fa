//! A run's memory does not grow with its duration (issue 15): every second is written to
//! `intervals.jsonl` and `generator.jsonl` as it closes and then dropped, and the monitor keeps
//! peaks, not a history. A short run here, read through the generator's own per-second RSS;
//! `bench/soak.py` runs the same plan shape for 60 minutes.

use crate::common::*;

/// The median of the slopes between every two of the `(x, y)` points (Theil-Sen), in y units
/// per x unit: a steady growth's rate, which one step in the series (the allocator taking a
/// few hundred KB at once, once) does not move the way it moves a least-squares slope.
fn slope(points: &[(f64, f64)]) -> f64 {
    let mut slopes: Vec<f64> = points
        .iter()
        .enumerate()
        .flat_map(|(i, a)| {
            points[i + 1..]
                .iter()
                .map(move |b| (b.1 - a.1) / (b.0 - a.0))
        })
        .collect();
    slopes.sort_by(f64::total_cmp);
    let n = slopes.len();
    if n % 2 == 1 {
        slopes[n / 2]
    } else {
        (slopes[n / 2 - 1] + slopes[n / 2]) / 2.0
    }
}

#[test]
fn slope_of_a_line_of_a_flat_series_and_of_one_step() {
    assert!((slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]) - 2.0).abs() < 1e-9);
    assert!(slope(&[(0.0, 4.0), (1.0, 4.0), (2.0, 4.0)]).abs() < 1e-9);
    // Growth every second is found whatever one step adds to it...
    let steady: Vec<(f64, f64)> = (0..20)
        .map(|t| (t as f64, 60.0 + 0.05 * t as f64))
        .collect();
    assert!((slope(&steady) - 0.05).abs() < 1e-9);
    let stepped: Vec<(f64, f64)> = steady
        .iter()
        .map(|&(t, y)| (t, if t >= 5.0 { y + 0.8 } else { y }))
        .collect();
    assert!((slope(&stepped) - 0.05).abs() < 0.01);
    // ...and a flat series with one step (60.0, then 60.8 from the sixth second) has none.
    let flat_step: Vec<(f64, f64)> = (0..20)
        .map(|t| (t as f64, if t >= 5 { 60.8 } else { 60.0 }))
        .collect();
    assert!(slope(&flat_step).abs() < 1e-9);
}

#[test]
fn memory_stays_flat_over_a_run() {
    let server = Server::start();
    let dir = temp_dir("soak");
    // 60 named steps: each second of the run holds a latency histogram per step, so a run
    // that kept its seconds in memory would grow by several hundred KB a second, far above the
    // ceiling below (a one-step run grew ~7.5 KB/s before the fix: 9.2 -> 13.7 MB in 10
    // minutes). Each request waits 0-40 ms at random: every step's histograms (which widen
    // their range as slower requests come, a bounded growth) reach their range in the first
    // seconds instead of creeping up with each scheduling stall of a busy machine.
    let steps: String = (0..60)
        .map(|i| {
            format!(
                "      - {{ name: s{i:02}, get: \"/delay/${{random_int(0, 40)}}?step={i}\" }}\n"
            )
        })
        .collect();
    let plan = write_plan(
        &dir,
        &format!(
            "target: http://127.0.0.1:{port}\nscenarios:\n  - name: soak\n    load: {{ vus: 16, duration: 45s }}\n    steps:\n{steps}",
            port = server.port()
        ),
    );
    let out = dir.join("out");
    let s = run_expect(0, &["run", plan.to_str().unwrap(), "-t", "1"], &out);
    assert!(u64_at(&s, "/totals/requests") > 10_000, "{s:#}");
    assert_eq!(u64_at(&s, "/totals/failures"), 0, "{s:#}");
    let lines = std::fs::read_to_string(out.join("generator.jsonl")).unwrap();
    let rss: Vec<(f64, f64)> = lines
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|v| (f64_at(&v, "/t"), f64_at(&v, "/rss_mb")))
        .collect();
    assert!(rss.len() >= 43, "a line per second: {lines}");
    // After a warm-up, up to the last whole second. The warm-up is long: besides connections
    // and buffers, the run's latency histograms (one per step and figure) widen their range
    // each time a slower request arrives, which on a busy machine goes on for some 20 s (seen
    // here: +5 MB between seconds 10 and 24, then flat to the end).
    let steady: Vec<(f64, f64)> = rss
        .iter()
        .copied()
        .filter(|(t, _)| *t >= 25.0 && *t < 45.0)
        .collect();
    let mb_per_minute = slope(&steady) * 60.0;
    let grown = steady.last().unwrap().1 - steady[0].1;
    eprintln!("soak: RSS {rss:?}; slope {mb_per_minute:.3} MB/min");
    // Ceiling: 3 MB a minute (50 KB/s), ten times the old one-step growth, well below what
    // 60 steps' seconds held in memory would cost; allocator noise is a few hundred KB. The
    // slope is the median of pairwise slopes: with a least-squares slope, one step of +0.8 MB at
    // second 30 on a loaded machine (then flat: 59.9 -> 61.4 MB over the window) read 4.15 MB
    // a minute and failed a run (2026-11-29).
    assert!(
        mb_per_minute < 3.0 && grown < 2.0,
        "RSS grew {grown:.2} MB over seconds 25-45 ({mb_per_minute:.2} MB/min): {rss:?}"
    );
}
