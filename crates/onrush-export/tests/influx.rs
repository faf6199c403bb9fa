//! The InfluxDB exporter against a real InfluxDB 1.x (Debian's `influxdb`), a minimal
//! in-test receiver for the v2 path and token, and dead or stuck servers that must not block
//! `second()`.

use crate::common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::*;
use onrush_export::influx::line_protocol;
use onrush_export::{Exporter, InfluxExporter, InfluxOptions};
use onrush_metrics::SecondData;
use serde_json::Value;

struct Influx {
    proc: Proc,
    addr: SocketAddr,
}

impl Influx {
    fn start() -> Option<Influx> {
        let bin = receiver_binary("influxd")?;
        let dir = temp_dir("influxd");
        let http_port = free_port();
        let rpc_port = free_port();
        let config = dir.join("influxdb.conf");
        let d = dir.display();
        write_file(
            &config,
            &format!(
                "reporting-disabled = true\nbind-address = \"127.0.0.1:{rpc_port}\"\n\
                 [meta]\n  dir = \"{d}/meta\"\n\
                 [data]\n  dir = \"{d}/data\"\n  wal-dir = \"{d}/wal\"\n  query-log-enabled = false\n\
                 [monitor]\n  store-enabled = false\n\
                 [http]\n  bind-address = \"127.0.0.1:{http_port}\"\n  log-enabled = false\n"
            ),
        );
        let addr: SocketAddr = format!("127.0.0.1:{http_port}").parse().unwrap();
        let mut proc = Proc::spawn(
            "influxd",
            Command::new(bin).arg("-config").arg(&config),
            dir,
        );
        let ready = wait_for(Duration::from_secs(30), || {
            proc.check_alive();
            matches!(http(addr, "GET", "/ping", b""), Ok((204, _, _))).then_some(())
        });
        assert!(ready.is_some(), "influxd not ready:\n{}", proc.log());
        Some(Influx { proc, addr })
    }

    fn query(&mut self, db: &str, q: &str) -> Value {
        self.proc.check_alive();
        let body = format!("q={}", urlencode(q));
        let (status, body, _) = http(
            self.addr,
            "POST",
            &format!("/query?db={db}&epoch=ms"),
            body.as_bytes(),
        )
        .unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status, 200, "{v}");
        assert!(v["results"][0]["error"].is_null(), "{v}");
        v
    }

    /// Rows of a `SELECT *` as column → value maps.
    fn rows(&mut self, db: &str, q: &str) -> Vec<BTreeMap<String, Value>> {
        let v = self.query(db, q);
        let Some(series) = v["results"][0]["series"].as_array() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for s in series {
            let cols: Vec<String> = s["columns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect();
            for row in s["values"].as_array().unwrap() {
                out.push(
                    cols.iter()
                        .cloned()
                        .zip(row.as_array().unwrap().iter().cloned())
                        .collect(),
                );
            }
        }
        out
    }
}

fn f(row: &BTreeMap<String, Value>, k: &str) -> f64 {
    row.get(k)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("no {k} in {row:?}"))
}

fn s<'a>(row: &'a BTreeMap<String, Value>, k: &str) -> &'a str {
    row.get(k).and_then(Value::as_str).unwrap_or("")
}

#[test]
fn a_real_influxdb_stores_what_was_pushed() {
    let Some(mut influx) = Influx::start() else {
        return;
    };
    influx.query("", "CREATE DATABASE onrush");
    let run = run(3, START_MS);
    let opts = InfluxOptions {
        tags: vec![("host".into(), "gen 1,a=b".into())],
        ..InfluxOptions::default()
    };
    let url = format!("http://{}/write?db=onrush", influx.addr);
    let mut e = InfluxExporter::with_options(&url, opts).unwrap();
    e.begin(run.collector.layout());
    for d in &run.seconds {
        e.second(d);
    }
    e.finish();
    let st = e.stats();
    assert_eq!(
        (
            st.seconds,
            st.seconds_sent,
            st.seconds_failed,
            st.seconds_dropped
        ),
        (3, 3, 0, 0),
        "{st:?}"
    );
    assert!(st.posts_ok >= 1 && st.last_error.is_none(), "{st:?}");

    // Requests: one point per step per second, every field as sent.
    let rows = influx.rows("onrush", "SELECT * FROM onrush_requests");
    let expected: usize = run.seconds.iter().map(|d| d.steps.len()).sum();
    assert_eq!(rows.len(), expected);
    for d in &run.seconds {
        for stp in &d.steps {
            let row = rows
                .iter()
                .find(|r| {
                    f(r, "time") as u64 == d.unix_ms && s(r, "step") == stp.step.replace('\n', " ")
                })
                .unwrap_or_else(|| panic!("no point for {:?} at {}", stp.step, d.unix_ms));
            assert_eq!(s(row, "scenario"), stp.scenario);
            assert_eq!(s(row, "host"), "gen 1,a=b");
            let ls = stp.latency_stats();
            assert_eq!(f(row, "count"), stp.requests as f64);
            assert_eq!(f(row, "failures"), stp.failures as f64);
            assert_eq!(f(row, "rps"), stp.requests as f64);
            assert_eq!(f(row, "bytes_in"), stp.bytes_in as f64);
            assert_eq!(f(row, "bytes_out"), stp.bytes_out as f64);
            for (k, v) in [
                ("min", ls.min),
                ("mean", ls.mean),
                ("p50", ls.p50),
                ("p90", ls.p90),
                ("p95", ls.p95),
                ("p99", ls.p99),
                ("max", ls.max),
            ] {
                assert_eq!(f(row, k), v, "{k}");
            }
        }
    }
    // Integer fields are integers (the `i` suffix), for SUM() without float error.
    let v = influx.query("onrush", "SHOW FIELD KEYS FROM onrush_requests");
    let types: BTreeMap<String, String> = v["results"][0]["series"][0]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r[0].as_str().unwrap().into(), r[1].as_str().unwrap().into()))
        .collect();
    assert_eq!(types["count"], "integer");
    assert_eq!(types["p99"], "float");
    assert_eq!(types["rps"], "float");

    // Failures by class, VUs per scenario, totals.
    let rows = influx.rows(
        "onrush",
        "SELECT SUM(count) FROM onrush_failures GROUP BY class",
    );
    let v = influx.query(
        "onrush",
        "SELECT SUM(count) FROM onrush_failures GROUP BY class",
    );
    assert!(!rows.is_empty());
    let summary = run.collector.summary();
    for series in v["results"][0]["series"].as_array().unwrap() {
        let class = series["tags"]["class"].as_str().unwrap();
        let n = series["values"][0][1].as_f64().unwrap();
        assert_eq!(n, summary.totals.failures_by_class[class] as f64, "{class}");
    }
    let rows = influx.rows("onrush", "SELECT * FROM onrush_vus");
    assert_eq!(rows.len(), 3 * 2);
    let last = run.seconds.last().unwrap();
    for sc in &last.scenarios {
        let row = rows
            .iter()
            .find(|r| f(r, "time") as u64 == last.unix_ms && s(r, "scenario") == sc.scenario)
            .unwrap();
        assert_eq!(f(row, "active"), sc.active_vus as f64);
        assert_eq!(f(row, "iterations"), sc.iterations as f64);
        assert_eq!(f(row, "dropped"), sc.dropped_iterations as f64);
        assert_eq!(f(row, "connections"), sc.connections_opened as f64);
    }
    let rows = influx.rows(
        "onrush",
        "SELECT SUM(count), SUM(failures), MAX(max) FROM onrush_totals",
    );
    assert_eq!(f(&rows[0], "sum"), summary.totals.requests as f64);
    assert_eq!(f(&rows[0], "sum_1"), summary.totals.failures as f64);
    assert_eq!(f(&rows[0], "max"), summary.totals.latency_ms.max);

    // Every InfluxQL query of docs/metrics-export.md runs and finds points (Grafana's macros
    // replaced).
    let range = format!("time >= {START_MS}ms AND time < {}ms", START_MS + 10_000);
    for q in doc_queries("sql") {
        let q = q
            .replace("$timeFilter", &range)
            .replace("$__interval", "1s");
        let v = influx.query("onrush", &q);
        assert!(
            v["results"][0]["series"].is_array(),
            "no result for the documented query {q}: {v}"
        );
    }
}

/// A one-shot-per-connection receiver: records each request (head, body) and answers with
/// `status` and `body`.
fn receiver(
    status: &'static str,
    answer: &'static str,
) -> (SocketAddr, mpsc::Receiver<(String, String)>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let (head, body) = loop {
                let n = c.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    return;
                }
                buf.extend_from_slice(&chunk[..n]);
                if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..end]).to_string();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("Content-Length: "))
                        .unwrap()
                        .parse()
                        .unwrap();
                    while buf.len() < end + 4 + len {
                        let n = c.read(&mut chunk).unwrap();
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    break (head, String::from_utf8(buf[end + 4..].to_vec()).unwrap());
                }
            };
            // Handed to the test before the answer: once the exporter counts a second as sent
            // (it has the answer), the test must find its request (this thread used to answer
            // first, and a test reading right after `finish` could miss the last request).
            if tx.send((head, body)).is_err() {
                return;
            }
            let _ = write!(
                c,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    (addr, rx)
}

/// Checks every line of a body against the line-protocol grammar we produce: measurement,
/// escaped tags, typed fields, a timestamp.
fn check_line(line: &str) {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                cur.push(c);
                cur.push(chars.next().unwrap());
            }
            ' ' => parts.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    parts.push(cur);
    assert_eq!(parts.len(), 3, "{line:?}");
    assert!(parts[0].starts_with("onrush_"), "{line:?}");
    for field in parts[1].split(',') {
        let (k, v) = field.split_once('=').unwrap();
        assert!(k
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'));
        match v.strip_suffix('i') {
            Some(int) => assert!(int.parse::<u64>().is_ok(), "{field}"),
            None => assert!(v.parse::<f64>().unwrap().is_finite(), "{field}"),
        }
    }
    parts[2].parse::<u64>().unwrap();
}

#[test]
fn v2_path_token_and_line_format() {
    let (addr, rx) = receiver("204 No Content", "");
    let url = format!("http://{addr}/api/v2/write?org=my%20org&bucket=b&precision=ms");
    let opts = InfluxOptions {
        token: Some("s3cr3t==".into()),
        ..InfluxOptions::default()
    };
    let mut e = InfluxExporter::with_options(&url, opts).unwrap();
    let run = run(2, START_MS);
    for d in &run.seconds {
        e.second(d);
    }
    e.finish();
    let mut bodies = String::new();
    for (head, body) in rx.try_iter() {
        assert!(
            head.starts_with("POST /api/v2/write?org=my%20org&bucket=b&precision=ms HTTP/1.1\r\n"),
            "{head}"
        );
        let lines: Vec<&str> = head.split("\r\n").collect();
        assert!(lines.contains(&"Authorization: Token s3cr3t=="), "{head}");
        assert!(lines.contains(&format!("Host: {addr}").as_str()), "{head}");
        bodies.push_str(&body);
    }
    assert_eq!(e.stats().seconds_sent, 2, "{:?}", e.stats());
    // precision=ms: millisecond timestamps.
    let first = bodies.lines().next().unwrap();
    assert!(first.ends_with(&format!(" {START_MS}")), "{first}");
    for l in bodies.lines() {
        check_line(l);
    }
    // The tricky step name: escaped, line feed turned into a space, on one line.
    let escaped = "say\\ \"hi\"\\,\\ a\\b\\ \\=\\ c\\ d\\ é";
    assert!(
        bodies.contains(&format!(
            "onrush_requests,scenario=open\\ model,step={escaped} count="
        )),
        "{bodies}"
    );
    let n_points = run.seconds.iter().map(|d| {
        let l = line_protocol(d);
        assert!(l.ends_with('\n'));
        l.lines().count()
    });
    assert_eq!(n_points.sum::<usize>(), bodies.lines().count());
}

fn second_data() -> SecondData {
    run(1, START_MS).seconds.remove(0)
}

/// Time to format one second of `d` (the CPU part of `second()`), to compare `second()` with:
/// a debug build formats far slower than a release one.
fn format_time(d: &SecondData) -> Duration {
    let t = Instant::now();
    for _ in 0..10 {
        std::hint::black_box(line_protocol(d));
    }
    t.elapsed() / 10
}

/// Calls `second()` `n` times; asserts that no call waited for the network: each call costs
/// about what formatting costs, far below the exporter's network time-out.
fn assert_second_never_waits(e: &mut InfluxExporter, d: &SecondData, n: u32) {
    let one = format_time(d);
    let mut slowest = Duration::ZERO;
    let t0 = Instant::now();
    for _ in 0..n {
        let t = Instant::now();
        e.second(d);
        slowest = slowest.max(t.elapsed());
    }
    let all = t0.elapsed();
    assert!(
        slowest < one * 5 + Duration::from_millis(20),
        "second() took {slowest:?} (formatting: {one:?})"
    );
    assert!(
        all < one * n * 2 + Duration::from_millis(100),
        "{n} seconds took {all:?} (formatting one: {one:?})"
    );
}

#[test]
fn non_2xx_answers_are_counted_with_the_message() {
    let (addr, _rx) = receiver(
        "404 Not Found",
        "{\"error\":\"database not found: \\\"nope\\\"\"}",
    );
    let mut e = InfluxExporter::new(&format!("http://{addr}/write?db=nope")).unwrap();
    let d = second_data();
    e.second(&d);
    e.finish();
    let st = e.stats();
    assert_eq!(
        (st.seconds_sent, st.seconds_failed, st.posts_rejected),
        (0, 1, 1),
        "{st:?}"
    );
    let err = st.last_error.unwrap();
    assert!(
        err.starts_with("HTTP 404: ") && err.contains("database not found"),
        "{err}"
    );
}

#[test]
fn a_dead_influx_url_does_not_block_second() {
    let addr = dead_addr(); // connection refused on 127.0.0.1
    let opts = InfluxOptions {
        queue_seconds: 4,
        timeout: Duration::from_millis(500),
        finish_timeout: Duration::from_secs(2),
        ..InfluxOptions::default()
    };
    let mut e = InfluxExporter::with_options(&format!("http://{addr}/write?db=x"), opts).unwrap();
    let d = second_data();
    assert_second_never_waits(&mut e, &d, 300);
    let t = Instant::now();
    e.finish();
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "finish took {:?}",
        t.elapsed()
    );
    let st = e.stats();
    assert_eq!(st.seconds, 300);
    assert_eq!(st.seconds_sent, 0);
    assert_eq!(st.seconds_failed + st.seconds_dropped, 300, "{st:?}");
    assert!(st.posts_failed >= 1, "{st:?}");
    assert!(
        st.last_error
            .as_deref()
            .unwrap()
            .contains(&addr.to_string()),
        "{st:?}"
    );
    e.second(&d); // after finish: counted as dropped, no panic
    assert_eq!(e.stats().seconds_dropped, st.seconds_dropped + 1);
}

#[test]
fn a_stuck_influx_does_not_block_second_or_finish() {
    // Accepts connections and never answers.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let holder = std::thread::spawn(move || {
        let mut held = Vec::new();
        l.set_nonblocking(true).unwrap();
        let end = Instant::now() + Duration::from_secs(6);
        while Instant::now() < end {
            if let Ok((c, _)) = l.accept() {
                held.push(c);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let opts = InfluxOptions {
        queue_seconds: 2,
        timeout: Duration::from_millis(300),
        finish_timeout: Duration::from_millis(500),
        ..InfluxOptions::default()
    };
    let mut e = InfluxExporter::with_options(&format!("http://{addr}/write?db=x"), opts).unwrap();
    let d = second_data();
    assert_second_never_waits(&mut e, &d, 50);
    let t = Instant::now();
    e.finish();
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "finish took {:?}",
        t.elapsed()
    );
    let st = e.stats();
    assert!(st.seconds_dropped >= 40, "{st:?}");
    assert_eq!(st.seconds_sent, 0);
    holder.join().unwrap();
    // By now the sender has timed out and accounted for everything.
    let st = e.stats();
    assert_eq!(st.seconds_failed + st.seconds_dropped, 50, "{st:?}");
}

#[test]
fn bad_urls_are_refused_with_a_reason() {
    for (url, why) in [
        ("https://127.0.0.1:8086/write?db=x", "https"),
        ("http://127.0.0.1:8086", "write endpoint"),
        ("127.0.0.1:8086/write", "http://"),
        ("http://127.0.0.1:8086/write?db=x&precision=h", "precision"),
    ] {
        let err = InfluxExporter::new(url).err().unwrap().to_string();
        assert!(err.contains(why) && err.contains(url), "{url}: {err}");
    }
}
