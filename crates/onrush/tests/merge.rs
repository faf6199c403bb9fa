//! `onrush merge`: results of several runs merge into exact totals and percentiles.

use crate::common;
use common::*;

#[test]
fn merged_runs_sum_counts_and_merge_histograms() {
    let server = Server::start();
    let dir = temp_dir("merge");
    let mut runs = Vec::new();
    for (i, n) in [(0, "300"), (1, "200")] {
        let out = dir.join(format!("run{i}"));
        let path = if i == 0 { "/delay/1" } else { "/bytes/100" };
        let output = onrush()
            .args([
                "quick",
                &server.url(path),
                "-n",
                n,
                "-c",
                "4",
                "-q",
                "--out",
            ])
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        runs.push(out);
    }
    let merged = dir.join("merged");
    let output = onrush()
        .arg("merge")
        .args(&runs)
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let (a, b, m) = (summary(&runs[0]), summary(&runs[1]), summary(&merged));
    assert_eq!(u64_at(&m, "/totals/requests"), 500);
    assert_eq!(u64_at(&m, "/totals/iterations"), 500);
    let max = f64_at(&a, "/totals/latency_ms/max").max(f64_at(&b, "/totals/latency_ms/max"));
    assert_eq!(f64_at(&m, "/totals/latency_ms/max"), max);
    let min = f64_at(&a, "/totals/latency_ms/min").min(f64_at(&b, "/totals/latency_ms/min"));
    assert_eq!(f64_at(&m, "/totals/latency_ms/min"), min);
    // 300 requests of >= 1 ms and 200 much faster ones: the merged median is the slow kind's.
    let p50 = f64_at(&m, "/totals/latency_ms/p50");
    assert!(p50 >= 1.0, "merged p50 {p50}");
}
