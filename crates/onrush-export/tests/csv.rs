//! `export_csv` on a results directory written by the real collector.

use crate::common;

use std::path::Path;

use common::*;
use onrush_export::{export_csv, ExportError, CSV_HEADER};

/// A strict RFC 4180 reader: CRLF record ends, quoted fields with doubled quotes.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted_field = false;
    while let Some(c) = chars.next() {
        match c {
            '"' if field.is_empty() && !quoted_field => {
                quoted_field = true;
                loop {
                    match chars.next().expect("unterminated quoted field") {
                        '"' if chars.peek() == Some(&'"') => {
                            chars.next();
                            field.push('"');
                        }
                        '"' => break,
                        c => field.push(c),
                    }
                }
                assert!(
                    matches!(chars.peek(), Some(',' | '\r')),
                    "text after a closing quote"
                );
            }
            ',' => {
                row.push(std::mem::take(&mut field));
                quoted_field = false;
            }
            '\r' => {
                assert_eq!(chars.next(), Some('\n'), "CR without LF");
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
                quoted_field = false;
            }
            '"' => panic!("quote inside an unquoted field"),
            '\n' => panic!("bare LF outside a quoted field"),
            c => field.push(c),
        }
    }
    assert!(
        row.is_empty() && field.is_empty(),
        "last record without CRLF"
    );
    rows
}

fn num(s: &str) -> f64 {
    s.parse().unwrap_or_else(|_| panic!("not a number: {s:?}"))
}

#[test]
fn one_row_per_second_per_step_and_a_totals_row() {
    let mut run = run(4, START_MS);
    let dir = temp_dir("csv");
    run.collector.write_results(&dir).unwrap();
    let mut out = Vec::new();
    export_csv(&dir, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with(&format!("{CSV_HEADER}\r\n")));
    let rows = parse_csv(&text);
    let header = &rows[0];
    assert_eq!(header.join(","), CSV_HEADER);
    assert!(rows.iter().all(|r| r.len() == 16));
    let steps = 3;
    assert_eq!(rows.len(), 1 + 4 * (steps + 1));
    for (t, d) in run.seconds.iter().enumerate() {
        let block = &rows[1 + t * (steps + 1)..1 + (t + 1) * (steps + 1)];
        for (i, r) in block.iter().enumerate() {
            assert_eq!(num(&r[0]) as u64, START_MS + 1000 * t as u64);
            assert_eq!(r[1], t.to_string());
            if i < steps {
                let s = &d.steps[i];
                assert_eq!(
                    (r[2].as_str(), r[3].as_str()),
                    (s.scenario.as_str(), s.step.as_str())
                );
                let ls = s.latency_stats();
                let expect = [
                    s.requests as f64,
                    s.failures as f64,
                    s.requests as f64,
                    s.bytes_in as f64,
                    s.bytes_out as f64,
                    ls.min,
                    ls.mean,
                    ls.p50,
                    ls.p90,
                    ls.p95,
                    ls.p99,
                    ls.max,
                ];
                let got: Vec<f64> = r[4..].iter().map(|v| num(v)).collect();
                assert_eq!(got, expect, "second {t} step {i}");
            } else {
                assert_eq!((r[2].as_str(), r[3].as_str()), ("*", "*"));
                let tot = &d.totals;
                let ls = tot.latency_stats();
                let expect = [
                    tot.requests as f64,
                    tot.failures as f64,
                    tot.requests as f64,
                    tot.bytes_in as f64,
                    tot.bytes_out as f64,
                    ls.min,
                    ls.mean,
                    ls.p50,
                    ls.p90,
                    ls.p95,
                    ls.p99,
                    ls.max,
                ];
                let got: Vec<f64> = r[4..].iter().map(|v| num(v)).collect();
                assert_eq!(got, expect, "second {t} totals");
            }
        }
    }
    // The tricky name is quoted (comma, quote, line feed inside).
    assert!(text.contains("\"say \"\"hi\"\", a\\b = c\nd é\""));
    let total: f64 = rows[1..]
        .iter()
        .filter(|r| r[3] == "*")
        .map(|r| num(&r[4]))
        .sum();
    assert_eq!(total, run.collector.summary().totals.requests as f64);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn idle_steps_get_zero_rows() {
    use onrush_metrics::{Collector, Layout, RequestRecord, RunInfo, WorkerMetrics};
    let layout = Layout::new([("s", ["busy", "idle"])]);
    let mut w = WorkerMetrics::new(&layout);
    let mut c = Collector::new(layout, RunInfo::new("p", 5_000));
    w.record_request(
        0,
        0,
        &RequestRecord {
            latency_us: 1500,
            status: 200,
            ..Default::default()
        },
    );
    c.add(0, w.take_snapshot());
    c.add(1, w.take_snapshot());
    c.finish();
    let dir = temp_dir("csv-idle");
    c.write_results(&dir).unwrap();
    let mut out = Vec::new();
    export_csv(&dir, &mut out).unwrap();
    let rows = parse_csv(std::str::from_utf8(&out).unwrap());
    let text: Vec<String> = rows[1..].iter().map(|r| r.join(",")).collect();
    assert_eq!(
        text,
        [
            "5000,0,s,busy,1,0,1,0,0,1.5,1.5,1.5,1.5,1.5,1.5,1.5",
            "5000,0,s,idle,0,0,0,0,0,0,0,0,0,0,0,0",
            "5000,0,*,*,1,0,1,0,0,1.5,1.5,1.5,1.5,1.5,1.5,1.5",
            "6000,1,s,busy,0,0,0,0,0,0,0,0,0,0,0,0",
            "6000,1,s,idle,0,0,0,0,0,0,0,0,0,0,0,0",
            "6000,1,*,*,0,0,0,0,0,0,0,0,0,0,0,0",
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn export_text(dir: &Path, intervals: &str) -> Result<String, ExportError> {
    std::fs::write(dir.join("intervals.jsonl"), intervals).unwrap();
    let mut out = Vec::new();
    export_csv(dir, &mut out).map(|()| String::from_utf8(out).unwrap())
}

#[test]
fn errors_name_the_file_and_line() {
    let dir = temp_dir("csv-errors");
    let missing = dir.join("missing");
    let err = export_csv(&missing, &mut Vec::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing/intervals.jsonl"), "{err}");

    let header = r#"{"kind":"header","onrush_results":1,"start_unix_ms":0,"interval_s":1,"layout":[{"scenario":"s","steps":["a"]}]}"#;
    let cases = [
        ("{\"kind\":\"step\"}\n".to_string(), ":1: not an onrush intervals file"),
        ("\n".to_string(), ":1: empty file"),
        (format!("{header}\n{header}\n"), ":2: a second header line"),
        (format!("{header}\n{{\"kind\":\"scenario\",\"t\":3}}\n{{\"kind\":\"scenario\",\"t\":1}}\n"), ":3: second 1 after second 3"),
        (format!("{header}\n{{\"kind\":\"step\",\"t\":0,\"scenario\":\"s\",\"step\":\"a\",\"latency\":\"AAAA\"}}\n"), ":2: latency: invalid HdrHistogram"),
        (r#"{"kind":"header","onrush_results":9,"start_unix_ms":0}"#.to_string(), ":1: results format 9 is newer"),
    ];
    for (text, want) in cases {
        let err = export_text(&dir, &text).unwrap_err().to_string();
        assert!(
            err.contains("intervals.jsonl") && err.contains(want),
            "{want}: {err}"
        );
    }
    // Unknown kinds and fields are ignored; a step missing from the layout gets rows from its
    // first second on.
    let text = format!(
        "{header}\n{{\"kind\":\"future\",\"x\":1}}\n{{\"kind\":\"step\",\"t\":0,\"scenario\":\"s\",\"step\":\"new\",\"requests\":2,\"failures\":1,\"bytes_in\":5,\"bytes_out\":6,\"extra\":true}}\n"
    );
    let out = export_text(&dir, &text).unwrap();
    assert_eq!(
        out,
        format!(
            "{CSV_HEADER}\r\n0,0,s,a,0,0,0,0,0,0,0,0,0,0,0,0\r\n0,0,s,new,2,1,2,5,6,0,0,0,0,0,0,0\r\n0,0,*,*,2,1,2,5,6,0,0,0,0,0,0,0\r\n"
        )
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn groups_are_not_rows() {
    use onrush_metrics::{Collector, Layout, RequestRecord, RunInfo, WorkerMetrics};
    let layout = Layout::new([("s", ["a", "g"])]).with_group(0, 1);
    let mut w = WorkerMetrics::new(&layout);
    let mut c = Collector::new(layout, RunInfo::new("p", 5_000));
    let rec = |us: u64| RequestRecord {
        latency_us: us,
        status: 200,
        ..Default::default()
    };
    w.record_request(0, 0, &rec(1500));
    w.record_request(0, 1, &rec(1900));
    c.add(0, w.take_snapshot());
    c.finish();
    let dir = temp_dir("csv-groups");
    c.write_results(&dir).unwrap();
    let mut out = Vec::new();
    export_csv(&dir, &mut out).unwrap();
    let rows = parse_csv(std::str::from_utf8(&out).unwrap());
    let text: Vec<String> = rows[1..].iter().map(|r| r.join(",")).collect();
    assert_eq!(
        text,
        [
            "5000,0,s,a,1,0,1,0,0,1.5,1.5,1.5,1.5,1.5,1.5,1.5",
            "5000,0,*,*,1,0,1,0,0,1.5,1.5,1.5,1.5,1.5,1.5,1.5",
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
