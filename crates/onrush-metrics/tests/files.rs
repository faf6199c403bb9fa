//! Result files, merge, summary fields and the printed table.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use common::{layout_ab, synthetic_run, temp_dir};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use onrush_metrics::{
    failure_class_info, merge, summary_text, Collector, FailureClass, Layout, MergeError, MsStats,
    RequestRecord, RunInfo, Summary, WorkerMetrics,
};
use serde_json::Value;

fn lines(dir: &Path) -> Vec<Value> {
    fs::read_to_string(dir.join("intervals.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn summary_json(dir: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// Decodes with hdrhistogram's own standard deserializer, nothing of this crate.
fn std_decode(b64: &str) -> Histogram<u64> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    assert_eq!(
        &bytes[..4],
        &[0x1c, 0x84, 0x93, 0x14],
        "V2 compressed cookie"
    );
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .unwrap()
}

fn step<'a>(s: &'a Summary, scenario: &str, name: &str) -> &'a onrush_metrics::StepSummary {
    s.steps
        .iter()
        .find(|x| x.scenario == scenario && x.name == name)
        .unwrap_or_else(|| panic!("step {scenario}/{name} missing"))
}

#[test]
fn intervals_decode_with_the_standard_deserializer_and_add_up() {
    let (mut c, r) = synthetic_run(&layout_ab(), 2, 4, 7);
    let dir = temp_dir("decode");
    c.write_results(&dir).unwrap();
    let ls = lines(&dir);
    let h = &ls[0];
    assert_eq!(h["kind"], "header");
    assert_eq!(h["onrush_results"], 1);
    assert_eq!(h["start_unix_ms"], 1_700_000_000_000u64);
    assert_eq!(
        h["histograms"]["encoding"],
        "hdrhistogram-v2-deflate-base64"
    );
    assert_eq!(h["layout"][0]["scenario"], "browse");
    assert_eq!(h["layout"][0]["steps"][1], "search");

    let mut all = Histogram::<u64>::new(3).unwrap();
    let mut requests = 0;
    let mut last_t = 0;
    for l in &ls[1..] {
        let t = l["t"].as_u64().unwrap();
        assert!(t >= last_t, "lines are in time order");
        last_t = t;
        match l["kind"].as_str().unwrap() {
            "step" => {
                let lat = std_decode(l["latency"].as_str().unwrap());
                assert_eq!(lat.len(), l["requests"].as_u64().unwrap());
                std_decode(l["service"].as_str().unwrap());
                all.add(&lat).unwrap();
                requests += l["requests"].as_u64().unwrap();
            }
            "scenario" => {
                assert!(l["active_vus"].is_u64());
                if let Some(lag) = l["schedule_lag"].as_str() {
                    std_decode(lag);
                }
            }
            k => panic!("unknown kind {k}"),
        }
    }
    assert_eq!(all.len(), requests);
    assert_eq!(MsStats::from_hist(&all), MsStats::from_hist(&r.all_latency));
    // one scenario line per scenario per second
    let scen = ls.iter().filter(|l| l["kind"] == "scenario").count();
    assert_eq!(scen, 2 * 4);
}

#[test]
fn merge_of_one_run_reproduces_its_summary() {
    // One source of truth: the summary rebuilt from intervals.jsonl alone is the same.
    let (mut c, _) = synthetic_run(&layout_ab(), 2, 12, 3);
    c.set_duration(Duration::from_millis(12_000));
    let dir = temp_dir("one");
    c.write_results(&dir).unwrap();
    let out = temp_dir("one-out");
    let mut m = merge(std::slice::from_ref(&dir), &out).unwrap();
    assert_eq!(m.run.merged_from, Some(vec![dir.display().to_string()]));
    m.run.merged_from = None;
    assert_eq!(m, c.summary());
    assert_eq!(Summary::read_from(&dir.join("summary.json")).unwrap(), m);
}

#[test]
fn merge_of_two_copies_doubles_counts_and_keeps_percentiles() {
    let (mut c, r) = synthetic_run(&layout_ab(), 2, 5, 11);
    let a = temp_dir("copy-a");
    let b = temp_dir("copy-b");
    c.write_results(&a).unwrap();
    c.write_results(&b).unwrap();
    let out = temp_dir("copy-out");
    let m = merge(&[a, b], &out).unwrap();
    let one = c.summary();

    let mut doubled = r.all_latency.clone();
    doubled.add(&r.all_latency).unwrap();
    assert_eq!(m.totals.requests, 2 * one.totals.requests);
    assert_eq!(m.totals.failures, 2 * one.totals.failures);
    assert_eq!(m.totals.bytes_in, 2 * one.totals.bytes_in);
    assert_eq!(m.totals.iterations, 2 * one.totals.iterations);
    assert_eq!(
        m.totals.status_codes[&200],
        2 * one.totals.status_codes[&200]
    );
    assert_eq!(m.totals.latency_ms, MsStats::from_hist(&doubled));
    assert_eq!(m.totals.latency_ms.p99, one.totals.latency_ms.p99);
    assert_eq!(m.totals.rate_1s_max, 2.0 * one.totals.rate_1s_max);
    assert_eq!(m.totals.active_vus_max, 2 * one.totals.active_vus_max);
    assert_eq!(m.run.duration_s, one.run.duration_s);
    assert_eq!(m.run.plan, "synthetic");
    for st in &one.steps {
        let ms = step(&m, &st.scenario, &st.name);
        assert_eq!(ms.requests, 2 * st.requests);
        assert_eq!(ms.latency_ms.p50, st.latency_ms.p50);
        assert_eq!(ms.connect_ms.count, 2 * st.connect_ms.count);
    }
    // the merged directory is itself a valid input, with the same totals
    let again = merge(std::slice::from_ref(&out), &temp_dir("copy-again")).unwrap();
    assert_eq!(again.totals, m.totals);
    assert!(summary_json(&out)["run"]["merged_from"].is_array());
}

fn record_n(w: &mut WorkerMetrics, sc: usize, st: usize, n: u64, base: u64) {
    for i in 0..n {
        w.record_request(
            sc,
            st,
            &RequestRecord {
                latency_us: base + i,
                service_us: base + i,
                status: 200,
                ..RequestRecord::default()
            },
        );
    }
}

/// A run of `seconds` seconds where each step records `n` values from `base` each second.
fn small_run(plan: &str, layout: Layout, seconds: u64, n: u64, base: u64, start: u64) -> Collector {
    let mut w = WorkerMetrics::new(&layout);
    let mut c = Collector::new(layout.clone(), RunInfo::new(plan, start));
    for t in 0..seconds {
        for (si, s) in layout.scenarios.iter().enumerate() {
            for st in 0..s.steps.len() {
                record_n(&mut w, si, st, n, base);
            }
        }
        c.add(t, w.take_snapshot());
        c.close_second(t);
    }
    c
}

#[test]
fn merge_of_two_different_runs_aligns_seconds_and_unions_steps() {
    let mut a = small_run("p", Layout::new([("s", ["x", "y"])]), 3, 100, 1000, 5_000);
    let mut b = small_run(
        "q",
        Layout::new([("s", vec!["x", "z"]), ("u", vec!["w"])]),
        5,
        10,
        50_000,
        4_000,
    );
    let (da, db) = (temp_dir("diff-a"), temp_dir("diff-b"));
    a.write_results(&da).unwrap();
    b.write_results(&db).unwrap();
    let out = temp_dir("diff-out");
    let m = merge(&[da, db], &out).unwrap();

    let names: Vec<(String, String)> = m
        .steps
        .iter()
        .map(|s| (s.scenario.clone(), s.name.clone()))
        .collect();
    let want = [("s", "x"), ("s", "y"), ("s", "z"), ("u", "w")];
    assert_eq!(
        names,
        want.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>()
    );
    let x = step(&m, "s", "x");
    assert_eq!(x.requests, 3 * 100 + 5 * 10);
    let mut hx = Histogram::<u64>::new(3).unwrap();
    for _ in 0..3 {
        (1000..1100).for_each(|v| hx.record(v).unwrap());
    }
    for _ in 0..5 {
        (50_000..50_010).for_each(|v| hx.record(v).unwrap());
    }
    assert_eq!(x.latency_ms, MsStats::from_hist(&hx));
    assert_eq!(step(&m, "s", "y").requests, 300);
    assert_eq!(step(&m, "u", "w").requests, 50);
    assert_eq!(m.run.plan, "p+q");
    assert_eq!(m.run.start_unix_ms, 4_000);
    assert_eq!(m.run.duration_s, 5.0);
    // seconds 0..3: run a (200/s) + run b (30/s); seconds 3..5: run b only
    assert_eq!(m.totals.rate_1s_max, 230.0);
    assert!(m.totals.rate_10s_whole_run);
    assert_eq!(m.totals.rate_10s_max, (3.0 * 230.0 + 2.0 * 30.0) / 5.0);
    let t3: u64 = lines(&out)
        .iter()
        .filter(|l| l["kind"] == "step" && l["t"] == 3)
        .map(|l| l["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(t3, 30);
}

#[test]
fn merge_errors_name_the_file_and_line() {
    let mut c = small_run("p", Layout::new([("s", ["x"])]), 3, 5, 100, 0);
    let dir = temp_dir("bad");
    c.write_results(&dir).unwrap();
    let path = dir.join("intervals.jsonl");
    let text = fs::read_to_string(&path).unwrap();
    let mut ls: Vec<String> = text.lines().map(String::from).collect();
    // line 3 is the step line of second 0: corrupt its histogram
    assert!(ls[2].contains("\"kind\":\"step\""));
    let start = ls[2].find("\"latency\":\"").unwrap() + 11;
    ls[2].replace_range(start..start + 8, "AAAAAAAA");
    fs::write(&path, ls.join("\n")).unwrap();
    let err = merge(std::slice::from_ref(&dir), &temp_dir("bad-out")).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, MergeError::Parse { line: 3, .. }), "{msg}");
    assert!(msg.contains("intervals.jsonl:3: latency:"), "{msg}");

    fs::write(&path, "{\"kind\":\"step\"}\n").unwrap();
    let msg = merge(std::slice::from_ref(&dir), &temp_dir("bad-out"))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("intervals.jsonl:1: not an onrush intervals file"),
        "{msg}"
    );

    let missing: PathBuf = dir.join("nope");
    let msg = merge(&[missing], &temp_dir("bad-out"))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("nope/intervals.jsonl"), "{msg}");
    assert!(matches!(merge(&[], &dir), Err(MergeError::NoInput)));
}

#[test]
fn summary_json_has_every_field() {
    let (mut c, _) = synthetic_run(&layout_ab(), 1, 3, 5);
    c.set_interrupted(true);
    c.set_vars(
        &[("host".to_string(), "x".to_string())]
            .into_iter()
            .collect(),
    );
    c.set_extra("totals", Value::Null); // reserved: ignored
    let dir = temp_dir("keys");
    c.write_results(&dir).unwrap();
    let j = summary_json(&dir);
    let stats = [
        "count", "min", "mean", "p50", "p90", "p95", "p99", "p999", "max",
    ];
    let mut paths: Vec<String> = [
        "onrush_version",
        "run.plan",
        "run.start_unix_ms",
        "run.duration_s",
        "interrupted",
        "vars.host",
        "failure_classes.timeout.group",
        "failure_classes.timeout.hint",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for k in [
        "requests",
        "failures",
        "failure_rate",
        "iterations",
        "dropped_iterations",
        "connections_opened",
        "rps",
        "failures_by_class.timeout",
        "status_codes.200",
        "bytes_in",
        "bytes_out",
        "rate_10s_max",
        "rate_10s_min",
        "rate_10s_window_s",
        "rate_10s_whole_run",
        "rate_1s_max",
    ] {
        paths.push(format!("totals.{k}"));
    }
    for h in ["latency_ms", "service_ms", "schedule_lag_ms"] {
        paths.extend(stats.iter().map(|s| format!("totals.{h}.{s}")));
    }
    for k in [
        "name",
        "iterations",
        "dropped_iterations",
        "connections_opened",
        "requests",
        "failures",
        "latency_ms.p99",
    ] {
        paths.push(format!("scenarios.0.{k}"));
    }
    for k in [
        "scenario",
        "name",
        "requests",
        "failures",
        "failure_rate",
        "rps",
        "failures_by_class",
        "status_codes",
        "bytes_in",
        "bytes_out",
    ] {
        paths.push(format!("steps.0.{k}"));
    }
    for h in ["latency_ms", "service_ms", "connect_ms", "ttfb_ms"] {
        paths.extend(stats.iter().map(|s| format!("steps.0.{h}.{s}")));
    }
    for p in &paths {
        let mut v = &j;
        for part in p.split('.') {
            v = match part.parse::<usize>() {
                Ok(i) if v.is_array() => &v[i],
                _ => &v[part],
            };
        }
        assert!(!v.is_null(), "summary.json lacks {p}");
    }
    assert_eq!(j["interrupted"], true);
    assert!(j["totals"].is_object());
    assert_eq!(j["totals"]["rate_10s_whole_run"], true);
}

#[test]
fn printed_summary_fits_100_columns_and_hints_only_seen_classes() {
    let (mut c, _) = synthetic_run(&layout_ab(), 2, 12, 9);
    c.set_duration(Duration::from_secs(12));
    let text = summary_text(&c.summary());
    for l in text.lines() {
        assert!(l.chars().count() <= 100, "too wide: {l:?}");
    }
    for want in [
        "browse",
        "  home",
        "total",
        "p99.9",
        "connections opened",
        "iterations",
        "dropped",
        "highest 1-s",
        "10-s mean",
        "status codes",
        "200: ",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    assert!(text.contains(FailureClass::Timeout.hint().split(':').next().unwrap()));
    assert!(!text.contains("connect_refused"));
    // Each class after its group, in a column as wide as the longest group printed.
    assert!(
        text.contains("\n  connection  timeout ") && text.contains("\n  HTTP        http_5xx "),
        "{text}"
    );
    println!("{text}");
}

/// A class that this process never registered: as if written by a build with more protocols.
const REMOTE: &str = "remote_only_status";

/// Rewrites `dir`'s results as a build with one more protocol would have written them: its
/// `http_5xx` failures are `REMOTE`'s, a class of the group `Remote` with its own hint.
fn as_written_by_another_build(dir: &Path) {
    for file in ["intervals.jsonl", "summary.json"] {
        let text = fs::read_to_string(dir.join(file)).unwrap();
        fs::write(
            dir.join(file),
            text.replace("\"http_5xx\"", &format!("{REMOTE:?}")),
        )
        .unwrap();
    }
    let mut s = Summary::read_from(&dir.join("summary.json")).unwrap();
    let info = s
        .failure_classes
        .get_mut(REMOTE)
        .expect("renamed with its counts");
    info.group = "Remote".into();
    info.hint = "the remote protocol failed".into();
    s.write_to(&dir.join("summary.json")).unwrap();
}

#[test]
fn summary_records_each_failing_class_group_and_hint_and_merge_keeps_them() {
    let (mut c, _) = synthetic_run(&layout_ab(), 2, 6, 13);
    c.set_duration(Duration::from_secs(6));
    let s = c.summary();
    let classes: Vec<&str> = s.failure_classes.keys().map(String::as_str).collect();
    assert_eq!(
        classes,
        ["http_5xx", "timeout"],
        "the classes counted, no other"
    );
    let timeout = &s.failure_classes["timeout"];
    assert_eq!(timeout.group, "connection");
    assert_eq!(timeout.hint, FailureClass::Timeout.hint());
    assert_eq!(s.failure_classes["http_5xx"].group, "HTTP");
    assert_eq!(failure_class_info(&s, "timeout"), *timeout);

    // Written by a build with a protocol this one lacks: its group and hint survive a merge
    // here, where the class is known only by the name the files give.
    let a = temp_dir("classes-a");
    let b = temp_dir("classes-b");
    for dir in [&a, &b] {
        c.write_results(dir).unwrap();
        as_written_by_another_build(dir);
    }
    assert_eq!(FailureClass::named(REMOTE), None);
    let m = merge(&[a, b], &temp_dir("classes-out")).unwrap();
    assert_eq!(
        FailureClass::named(REMOTE).map(|c| c.group()),
        Some("other")
    );
    let remote = &m.failure_classes[REMOTE];
    assert_eq!(
        (remote.group.as_str(), remote.hint.as_str()),
        ("Remote", "the remote protocol failed")
    );
    assert_eq!(m.failure_classes["timeout"], *timeout);
    assert_eq!(
        m.totals.failures_by_class[REMOTE],
        2 * s.totals.failures_by_class["http_5xx"]
    );
    let text = summary_text(&m);
    assert!(
        text.contains(&format!("\n  Remote      {REMOTE} ")),
        "{text}"
    );
    assert!(text.contains("the remote protocol failed"), "{text}");

    // A summary of an older onrush records none: a reader uses what it knows.
    let mut old = s.clone();
    old.failure_classes.clear();
    let json = old.to_json_pretty();
    assert!(
        !json.contains("failure_classes"),
        "absent when empty, as before"
    );
    let old = Summary::from_json(Path::new("old/summary.json"), &json).unwrap();
    assert_eq!(failure_class_info(&old, "timeout"), *timeout);
    let unknown = failure_class_info(&old, "never_heard_of");
    assert_eq!(
        (unknown.group.as_str(), unknown.hint.as_str()),
        ("other", "")
    );
}

#[test]
fn write_results_with_a_caller_amended_summary() {
    let mut c = small_run("p", Layout::new([("s", ["x"])]), 12, 10, 100, 0);
    c.set_duration(Duration::from_millis(12_300)); // 12 full seconds, a partial 13th
    let mut s = c.summary();
    s.set_interrupted(true);
    s.set_vars(&[("k".to_string(), "v".to_string())].into_iter().collect());
    s.set_extra("run", Value::Null); // reserved: ignored
    assert!(s.interrupted());
    let dir = temp_dir("with");
    c.write_results_with(&dir, &s).unwrap();
    let j = summary_json(&dir);
    assert_eq!(j["interrupted"], true);
    assert_eq!(j["vars"]["k"], "v");
    assert_eq!(j["run"]["duration_s"], 12.3);
    assert_eq!(j["totals"]["rate_10s_whole_run"], false);
    assert_eq!(j["totals"]["rate_10s_max"], 10.0);
    assert_eq!(lines(&dir)[0]["duration_s"], 12.3);
    // merge keeps the figures, and the caller's fields a merge can keep
    let m = merge(std::slice::from_ref(&dir), &temp_dir("with-out")).unwrap();
    assert_eq!(m.totals, s.totals);
    assert!(m.interrupted());
    assert_eq!(m.extra.vars, s.extra.vars);
}
