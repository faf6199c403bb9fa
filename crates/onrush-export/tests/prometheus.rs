//! The Prometheus exporter: the exposition text parsed strictly (and by `promtool`), the HTTP
//! endpoint, a real Prometheus server scraping it, and a stuck scraper not blocking `second`.

use crate::common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use onrush_export::{Exporter, PrometheusExporter, DEFAULT_BUCKETS_S};
use onrush_metrics::{FailureClass, Hist};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_' || ch == ':')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':')
}

fn parse_value(s: &str) -> f64 {
    match s {
        "NaN" => f64::NAN,
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        _ => {
            assert!(
                s.bytes()
                    .all(|b| b.is_ascii_digit() || b"-+.eE".contains(&b)),
                "bad value {s:?}"
            );
            s.parse().unwrap_or_else(|_| panic!("bad value {s:?}"))
        }
    }
}

/// A strict parser of the text exposition format 0.0.4: names, label syntax and escapes
/// (only `\\`, `\"`, `\n`), values, `# TYPE` before a family's samples and at most once, no
/// duplicate series, histograms' buckets cumulative with `+Inf` equal to `_count`, summaries'
/// quantiles in [0, 1].
fn parse_exposition(text: &str) -> (Vec<Sample>, HashMap<String, String>) {
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "must end with a line feed"
    );
    let mut types: HashMap<String, String> = HashMap::new();
    let mut seen_samples_of: HashSet<String> = HashSet::new();
    let mut samples = Vec::new();
    let mut series = HashSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let kw = parts.next().unwrap();
            let name = parts.next().unwrap_or("");
            match kw {
                "TYPE" => {
                    assert!(is_name(name), "{line}");
                    let t = parts.next().unwrap();
                    assert!(
                        ["counter", "gauge", "summary", "histogram", "untyped"].contains(&t),
                        "{line}"
                    );
                    assert!(
                        !seen_samples_of.contains(name),
                        "TYPE after samples: {line}"
                    );
                    assert!(
                        types.insert(name.to_string(), t.to_string()).is_none(),
                        "second TYPE: {line}"
                    );
                }
                "HELP" => {
                    assert!(is_name(name), "{line}");
                    let h = parts.next().unwrap_or("");
                    let mut it = h.chars();
                    while let Some(c) = it.next() {
                        if c == '\\' {
                            assert!(
                                matches!(it.next(), Some('\\' | 'n')),
                                "bad HELP escape: {line}"
                            );
                        }
                    }
                }
                _ => {}
            }
            continue;
        }
        assert!(!line.starts_with('#'), "{line}");
        assert!(!line.is_empty(), "empty line");
        let name_end = line.find(['{', ' ']).expect(line);
        let name = &line[..name_end];
        assert!(is_name(name), "bad metric name in {line:?}");
        let mut labels = BTreeMap::new();
        let mut rest = &line[name_end..];
        if let Some(r) = rest.strip_prefix('{') {
            let mut chars = r.char_indices().peekable();
            let end;
            loop {
                // label name
                let start = chars.peek().map(|(i, _)| *i).expect(line);
                if r[start..].starts_with('}') {
                    end = start + 1;
                    break;
                }
                let eq = start + r[start..].find('=').expect(line);
                let lname = &r[start..eq];
                assert!(
                    is_name(lname) && !lname.contains(':'),
                    "bad label name {lname:?}"
                );
                while chars.peek().is_some_and(|(i, _)| *i <= eq) {
                    chars.next();
                }
                assert_eq!(chars.next().map(|c| c.1), Some('"'), "{line}");
                let mut v = String::new();
                loop {
                    match chars.next().expect(line).1 {
                        '\\' => match chars.next().expect(line).1 {
                            '\\' => v.push('\\'),
                            '"' => v.push('"'),
                            'n' => v.push('\n'),
                            c => panic!("bad escape \\{c} in {line:?}"),
                        },
                        '"' => break,
                        '\n' => panic!("raw line feed in a label value"),
                        c => v.push(c),
                    }
                }
                assert!(
                    labels.insert(lname.to_string(), v).is_none(),
                    "duplicate label: {line}"
                );
                match chars.next().expect(line) {
                    (_, ',') => {}
                    (i, '}') => {
                        end = i + 1;
                        break;
                    }
                    (_, c) => panic!("unexpected {c:?} in {line:?}"),
                }
            }
            rest = &r[end..];
        }
        let rest = rest
            .strip_prefix(' ')
            .unwrap_or_else(|| panic!("no space before the value: {line:?}"));
        let mut parts = rest.split(' ');
        let value = parse_value(parts.next().unwrap());
        if let Some(ts) = parts.next() {
            ts.parse::<i64>()
                .unwrap_or_else(|_| panic!("bad timestamp in {line:?}"));
        }
        assert!(parts.next().is_none(), "trailing text: {line:?}");
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suf| {
                let base = name.strip_suffix(suf)?;
                matches!(
                    types.get(base).map(String::as_str),
                    Some("histogram" | "summary")
                )
                .then(|| base.to_string())
            })
            .unwrap_or_else(|| name.to_string());
        assert!(
            types.contains_key(&family),
            "sample before its TYPE: {line:?}"
        );
        seen_samples_of.insert(family.clone());
        if types[&family] == "summary" && name == family {
            let q: f64 = labels["quantile"].parse().unwrap();
            assert!((0.0..=1.0).contains(&q));
        }
        assert!(
            series.insert((name.to_string(), format!("{labels:?}"))),
            "duplicate series {line:?}"
        );
        samples.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    // Histograms: cumulative buckets, +Inf == _count.
    for (fam, t) in &types {
        if t != "histogram" {
            continue;
        }
        let mut by_series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for s in samples.iter().filter(|s| s.name == format!("{fam}_bucket")) {
            let mut l = s.labels.clone();
            let le = parse_value(&l.remove("le").expect("le label"));
            by_series
                .entry(format!("{l:?}"))
                .or_default()
                .push((le, s.value));
        }
        for (k, mut b) in by_series {
            b.sort_by(|a, b| a.0.total_cmp(&b.0));
            assert!(
                b.windows(2).all(|w| w[0].1 <= w[1].1),
                "not cumulative: {k}"
            );
            let (le, inf) = *b.last().unwrap();
            assert!(le.is_infinite());
            let count = samples
                .iter()
                .find(|s| s.name == format!("{fam}_count") && format!("{:?}", s.labels) == k)
                .expect("_count")
                .value;
            assert_eq!(inf, count, "{k}");
        }
    }
    (samples, types)
}

fn get(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|s| {
            s.name == name
                && s.labels.len() == labels.len()
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
}

fn scrape(addr: SocketAddr) -> (String, String) {
    let (status, body, head) = http(addr, "GET", "/metrics", b"").unwrap();
    assert_eq!(status, 200, "{head}");
    (String::from_utf8(body).unwrap(), head)
}

#[test]
fn exposition_is_strict_and_exact() {
    let run = run(3, START_MS);
    let mut e = PrometheusExporter::start("127.0.0.1:0".parse().unwrap()).unwrap();
    e.begin(run.collector.layout());
    // Before any second: every step is there with zeros, NaN quantiles.
    let (text, _) = scrape(e.local_addr());
    let (samples, _) = parse_exposition(&text);
    assert_eq!(
        get(
            &samples,
            "onrush_requests_total",
            &[("scenario", "open model"), ("step", TRICKY)]
        ),
        Some(0.0)
    );
    let q = get(
        &samples,
        "onrush_latency_seconds",
        &[
            ("scenario", "browse"),
            ("step", "home"),
            ("quantile", "0.99"),
        ],
    )
    .unwrap();
    assert!(q.is_nan());

    for s in &run.seconds {
        e.second(s);
    }
    e.finish();
    let (text, head) = scrape(e.local_addr());
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    let (samples, types) = parse_exposition(&text);
    assert_eq!(types["onrush_requests_total"], "counter");
    assert_eq!(types["onrush_active_vus"], "gauge");
    assert_eq!(types["onrush_latency_seconds"], "summary");
    assert_eq!(types["onrush_request_duration_seconds"], "histogram");
    let last = run.seconds.last().unwrap();

    for (si, sc) in run.collector.layout().scenarios.iter().enumerate() {
        for (sti, st) in sc.steps.iter().enumerate() {
            let l = [("scenario", sc.name.as_str()), ("step", st.as_str())];
            let steps = run
                .seconds
                .iter()
                .flat_map(|s| &s.steps)
                .filter(|s| s.scenario_index == si && s.step_index == sti);
            let (mut req, mut fail5, mut timeouts, mut bin, mut bout, mut ok200) =
                (0, 0, 0, 0, 0, 0);
            for s in steps {
                req += s.requests;
                fail5 += s.failures_by_class[FailureClass::Http5xx.index()];
                timeouts += s.failures_by_class[FailureClass::Timeout.index()];
                bin += s.bytes_in;
                bout += s.bytes_out;
                ok200 += s.status_codes.get(&200).copied().unwrap_or(0);
            }
            let values = &run.values[si][sti];
            assert_eq!(req, values.len() as u64);
            assert_eq!(get(&samples, "onrush_requests_total", &l), Some(req as f64));
            assert_eq!(
                get(&samples, "onrush_bytes_received_total", &l),
                Some(bin as f64)
            );
            assert_eq!(
                get(&samples, "onrush_bytes_sent_total", &l),
                Some(bout as f64)
            );
            let with = |k: &'static str, v: &'static str| {
                let mut l = l.to_vec();
                l.push((k, v));
                l
            };
            assert_eq!(
                get(
                    &samples,
                    "onrush_failures_total",
                    &with("class", "http_5xx")
                ),
                Some(fail5 as f64)
            );
            assert_eq!(
                get(&samples, "onrush_failures_total", &with("class", "timeout")),
                (timeouts > 0).then_some(timeouts as f64)
            );
            assert_eq!(
                get(&samples, "onrush_responses_total", &with("code", "200")),
                Some(ok200 as f64)
            );
            // Buckets: exact counts of the raw values (none lies where HDR buckets straddle a bound).
            for b in DEFAULT_BUCKETS_S {
                let le = format!("{b}");
                let expect = values.iter().filter(|&&v| v as f64 <= b * 1e6).count() as f64;
                let got = samples
                    .iter()
                    .find(|s| {
                        s.name == "onrush_request_duration_seconds_bucket"
                            && s.labels["scenario"] == sc.name
                            && s.labels["step"] == *st
                            && s.labels["le"] == le
                    })
                    .unwrap()
                    .value;
                assert_eq!(got, expect, "{}/{st} le={le}", sc.name);
            }
            assert_eq!(
                get(&samples, "onrush_request_duration_seconds_count", &l),
                Some(req as f64)
            );
            assert_eq!(
                get(&samples, "onrush_latency_seconds_count", &l),
                Some(req as f64)
            );
            let sum_true: f64 = values.iter().map(|&v| v as f64 / 1e6).sum();
            let sum = get(&samples, "onrush_latency_seconds_sum", &l).unwrap();
            assert!(
                (sum - sum_true).abs() <= sum_true * 0.001,
                "{sum} vs {sum_true}"
            );
            // Summary: the last second's quantiles.
            let h: &Hist = last
                .steps
                .iter()
                .find(|s| s.scenario_index == si && s.step_index == sti)
                .unwrap()
                .latency
                .as_ref()
                .unwrap();
            for (q, ql) in [(0.5, "0.5"), (0.9, "0.9"), (0.95, "0.95"), (0.99, "0.99")] {
                assert_eq!(
                    get(&samples, "onrush_latency_seconds", &with("quantile", ql)),
                    Some(h.value_at_quantile(q) as f64 / 1e6)
                );
            }
        }
    }
    for s in &last.scenarios {
        let l = [("scenario", s.scenario.as_str())];
        let sum = |f: fn(&onrush_metrics::ScenarioSecond) -> u64| -> f64 {
            run.seconds
                .iter()
                .map(|d| f(&d.scenarios[s.scenario_index]))
                .sum::<u64>() as f64
        };
        assert_eq!(
            get(&samples, "onrush_iterations_total", &l),
            Some(sum(|s| s.iterations))
        );
        assert_eq!(
            get(&samples, "onrush_dropped_iterations_total", &l),
            Some(sum(|s| s.dropped_iterations))
        );
        assert_eq!(
            get(&samples, "onrush_connections_opened_total", &l),
            Some(sum(|s| s.connections_opened))
        );
        assert_eq!(
            get(&samples, "onrush_active_vus", &l),
            Some(s.active_vus as f64)
        );
    }
    assert_eq!(get(&samples, "onrush_last_second", &[]), Some(2.0));
    let total: f64 = samples
        .iter()
        .filter(|s| s.name == "onrush_requests_total")
        .map(|s| s.value)
        .sum();
    assert_eq!(total, run.collector.summary().totals.requests as f64);

    // promtool (from Debian's prometheus package) agrees that the text is valid.
    if let Some(promtool) = receiver_binary("promtool") {
        let mut child = Command::new(promtool)
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let msg = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success(),
            "promtool check metrics failed:\n{msg}"
        );
        // promtool's lint notes are only advice; none is expected.
        assert!(msg.trim().is_empty(), "promtool check metrics:\n{msg}");
    }
}

#[test]
fn endpoint_answers_http_properly() {
    let e = PrometheusExporter::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let a = e.local_addr();
    assert_eq!(http(a, "GET", "/nope", b"").unwrap().0, 404);
    let (status, _, head) = http(a, "POST", "/metrics", b"x").unwrap();
    assert_eq!(status, 405);
    assert!(head.contains("Allow: GET, HEAD"));
    let (status, body, head) = http(a, "HEAD", "/metrics", b"").unwrap();
    assert_eq!(status, 200);
    assert!(body.is_empty() && head.contains("Content-Length:"));
    assert_eq!(http(a, "GET", "/metrics?x=1", b"").unwrap().0, 200);
    assert_eq!(http(a, "GET", "/", b"").unwrap().0, 200);
    // Garbage gets a 400 and the server goes on.
    let mut s = TcpStream::connect(a).unwrap();
    s.write_all(b"\x01\x02 nonsense\r\n\r\n").unwrap();
    let mut buf = String::new();
    std::io::Read::read_to_string(&mut s, &mut buf).unwrap();
    assert!(buf.starts_with("HTTP/1.1 400"), "{buf}");
    assert_eq!(e.scrapes(), 1, "one GET /metrics with a body");
    assert!(PrometheusExporter::start(a).is_err(), "address in use");
}

#[test]
fn a_stuck_scraper_does_not_block_second() {
    let run = run(2, START_MS);
    let mut e = PrometheusExporter::start("127.0.0.1:0".parse().unwrap()).unwrap();
    // Connects and never sends: the server thread waits on it (up to its 5 s time-out).
    let _stuck = TcpStream::connect(e.local_addr()).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let t0 = Instant::now();
    for _ in 0..50 {
        for s in &run.seconds {
            e.second(s);
        }
    }
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    assert!(!e.wait_scraped(Duration::from_millis(10)));
    drop(_stuck);
    // Once the stuck client is gone, scrapes see the latest data.
    let (text, _) = scrape(e.local_addr());
    assert!(text.contains("onrush_last_second 1\n"));
    assert!(e.wait_scraped(Duration::from_secs(1)));
    // Dropping the exporter stops its server.
    let a = e.local_addr();
    drop(e);
    assert!(TcpStream::connect(a).is_err());
}

struct Prometheus {
    proc: Proc,
    addr: SocketAddr,
}

impl Prometheus {
    fn start(target: SocketAddr) -> Option<Prometheus> {
        let bin = receiver_binary("prometheus")?;
        let dir = temp_dir("prometheus");
        let config = dir.join("prometheus.yml");
        write_file(
            &config,
            &format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: onrush\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        );
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let mut proc = Proc::spawn(
            "prometheus",
            Command::new(bin)
                .arg(format!("--config.file={}", config.display()))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.join("data").display()
                ))
                .arg(format!("--web.listen-address={addr}"))
                .arg("--log.level=warn"),
            dir,
        );
        let ready = wait_for(Duration::from_secs(30), || {
            proc.check_alive();
            matches!(http(addr, "GET", "/-/ready", b""), Ok((200, _, _))).then_some(())
        });
        assert!(ready.is_some(), "prometheus not ready:\n{}", proc.log());
        Some(Prometheus { proc, addr })
    }

    /// Result vector of an instant query: (labels, value).
    fn query(&mut self, q: &str) -> Vec<(BTreeMap<String, String>, f64)> {
        self.proc.check_alive();
        let (status, body, _) = http(
            self.addr,
            "GET",
            &format!("/api/v1/query?query={}", urlencode(q)),
            b"",
        )
        .unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status, 200, "{v}");
        v["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let labels = r["metric"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                    .collect();
                (labels, parse_value(r["value"][1].as_str().unwrap()))
            })
            .collect()
    }
}

#[test]
fn a_real_prometheus_scrapes_the_endpoint() {
    let run = run(3, START_MS);
    let mut e = PrometheusExporter::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let Some(mut prom) = Prometheus::start(e.local_addr()) else {
        return;
    };
    e.begin(run.collector.layout());
    for s in &run.seconds {
        e.second(s);
    }
    e.finish();
    let total = run.collector.summary().totals.requests as f64;
    let got = wait_for(Duration::from_secs(30), || {
        let r = prom.query("sum(onrush_requests_total)");
        (r.first().map(|x| x.1) == Some(total)).then_some(())
    });
    assert!(
        got.is_some(),
        "prometheus never saw the totals:\n{}",
        prom.proc.log()
    );
    assert!(e.scrapes() >= 1);
    let up = prom.query("up{job=\"onrush\"}");
    assert_eq!(up.len(), 1);
    assert_eq!(up[0].1, 1.0);

    // Every series with its labels round-trips, the tricky step name included.
    let summary = run.collector.summary();
    let r = prom.query("onrush_requests_total");
    assert_eq!(r.len(), 3);
    for st in &summary.steps {
        let v = r
            .iter()
            .find(|(l, _)| l["scenario"] == st.scenario && l["step"] == st.name)
            .unwrap_or_else(|| panic!("no series for {}/{:?}: {r:?}", st.scenario, st.name));
        assert_eq!(v.1, st.requests as f64);
        let f = prom.query(&format!(
            "sum by (scenario, step) (onrush_failures_total{{step={}}})",
            serde_json::to_string(&st.name).unwrap()
        ));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].1, st.failures as f64);
    }
    let dropped = prom.query("sum(onrush_dropped_iterations_total)");
    assert_eq!(dropped[0].1, summary.totals.dropped_iterations as f64);

    // histogram_quantile over the exported buckets lands in the bucket holding the true p95.
    let r = prom
        .query("histogram_quantile(0.95, sum by (le) (onrush_request_duration_seconds_bucket))");
    let p95 = r[0].1;
    let all: Vec<u64> = {
        let mut v: Vec<u64> = run.values.iter().flatten().flatten().copied().collect();
        v.sort_unstable();
        v
    };
    let true_p95 = all[((all.len() as f64) * 0.95).ceil() as usize - 1] as f64 / 1e6;
    let upper = DEFAULT_BUCKETS_S
        .iter()
        .copied()
        .find(|&b| b >= true_p95)
        .unwrap();
    let lower = DEFAULT_BUCKETS_S
        .iter()
        .copied()
        .rev()
        .find(|&b| b < true_p95)
        .unwrap_or(0.0);
    assert!(
        p95 > lower && p95 <= upper,
        "{p95} not in ({lower}, {upper}] (true {true_p95})"
    );
    // The summary's quantile is the HDR p99 of the last second.
    let r =
        prom.query("onrush_latency_seconds{scenario=\"browse\",step=\"home\",quantile=\"0.99\"}");
    let h = run.seconds.last().unwrap().steps[0]
        .latency
        .as_ref()
        .unwrap();
    assert_eq!(r[0].1, h.value_at_quantile(0.99) as f64 / 1e6);
    assert!(e.wait_scraped(Duration::from_secs(5)));

    // Every PromQL query of docs/metrics-export.md runs and finds series (rate() needs two
    // scrapes in its window: wait for them).
    for q in doc_queries("promql") {
        let found = wait_for(Duration::from_secs(20), || {
            (!prom.query(&q).is_empty()).then_some(())
        });
        assert!(found.is_some(), "no result for the documented query {q}");
    }
}

#[test]
fn groups_are_not_request_series() {
    use onrush_metrics::{Collector, Layout, RequestRecord, RunInfo, WorkerMetrics};
    let layout = Layout::new([("s", ["a", "g"])]).with_group(0, 1);
    let mut w = WorkerMetrics::new(&layout);
    let mut c = Collector::new(layout.clone(), RunInfo::new("p", START_MS));
    let mut e = PrometheusExporter::start("127.0.0.1:0".parse().unwrap()).unwrap();
    e.begin(&layout);
    let rec = |us: u64| RequestRecord {
        latency_us: us,
        status: 200,
        ..Default::default()
    };
    w.record_request(0, 0, &rec(1500));
    w.record_request(0, 1, &rec(1900));
    c.add(0, w.take_snapshot());
    c.close_second(0);
    for s in c.closed_seconds() {
        e.second(s);
    }
    e.finish();
    let (text, _) = scrape(e.local_addr());
    let (samples, _) = parse_exposition(&text);
    assert_eq!(
        get(
            &samples,
            "onrush_requests_total",
            &[("scenario", "s"), ("step", "a")]
        ),
        Some(1.0)
    );
    assert!(
        !samples
            .iter()
            .any(|s| s.labels.get("step").map(String::as_str) == Some("g")),
        "{text}"
    );
}

#[test]
fn run_labels_checks_and_groups_are_series() {
    use onrush_export::PrometheusOptions;
    use onrush_metrics::{Collector, Layout, RequestRecord, RunInfo, WorkerMetrics};
    // Scenario `s`: request step `a` with two checks, and group `g`.
    let layout = Layout::new([("s", ["a", "g"])])
        .with_group(0, 1)
        .with_check(0, "status is 200", 0)
        .with_check(0, "body has \"ok\"", 0);
    let mut w = WorkerMetrics::new(&layout);
    let mut c = Collector::new(layout.clone(), RunInfo::new("p", START_MS));
    let options = PrometheusOptions {
        labels: vec![
            ("run_id".into(), "shop-20261208-010203".into()),
            ("plan".into(), "shop \"v2\"".into()),
        ],
        ..Default::default()
    };
    let mut e = PrometheusExporter::start_with("127.0.0.1:0".parse().unwrap(), options).unwrap();
    e.begin(&layout);
    let rec = |us: u64, failed: bool| RequestRecord {
        latency_us: us,
        status: 200,
        failure: failed.then_some(FailureClass::CheckFailed),
        ..Default::default()
    };
    // Two seconds: 3 requests, the first check passing 3 times, the second failing once; the
    // group run 2 times (1.5 ms, 40 ms), one of them failed.
    for second in 0..2u64 {
        let n = if second == 0 { 2 } else { 1 };
        for i in 0..n {
            w.record_request(0, 0, &rec(1_000, false));
            w.record_check(0, 0, true);
            w.record_check(0, 1, !(second == 1 && i == 0));
        }
        w.record_request(
            0,
            1,
            &rec(if second == 0 { 1_500 } else { 40_000 }, second == 1),
        );
        c.add(second, w.take_snapshot());
        c.close_second(second);
        for s in c.closed_seconds() {
            e.second(s);
        }
    }
    e.finish();
    let (text, _) = scrape(e.local_addr());
    let (samples, _) = parse_exposition(&text);
    // Every series carries the run's labels (escaped as the format wants).
    for s in &samples {
        assert_eq!(s.labels["run_id"], "shop-20261208-010203", "{s:?}");
        assert_eq!(s.labels["plan"], "shop \"v2\"", "{s:?}");
    }
    let run = [("run_id", "shop-20261208-010203"), ("plan", "shop \"v2\"")];
    let with = |more: &[(&'static str, &'static str)]| {
        let mut l = run.to_vec();
        l.extend_from_slice(more);
        l
    };
    let check = |name: &'static str, result: &'static str| {
        get(
            &samples,
            "onrush_checks_total",
            &with(&[
                ("scenario", "s"),
                ("step", "a"),
                ("check", name),
                ("result", result),
            ]),
        )
    };
    assert_eq!(check("status is 200", "pass"), Some(3.0), "{text}");
    assert_eq!(check("status is 200", "fail"), Some(0.0));
    assert_eq!(check("body has \"ok\"", "pass"), Some(2.0));
    assert_eq!(check("body has \"ok\"", "fail"), Some(1.0));
    // The group: its runs, failed runs, and durations, never as a request step.
    let g = with(&[("scenario", "s"), ("group", "g")]);
    assert_eq!(
        get(&samples, "onrush_group_runs_total", &g),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        get(&samples, "onrush_group_failed_runs_total", &g),
        Some(1.0)
    );
    let bucket = |le: &'static str| {
        let mut l = g.clone();
        l.push(("le", le));
        get(&samples, "onrush_group_duration_seconds_bucket", &l)
    };
    assert_eq!(bucket("0.0025"), Some(1.0), "{text}");
    assert_eq!(bucket("0.05"), Some(2.0));
    assert_eq!(
        get(
            &samples,
            "onrush_requests_total",
            &with(&[("scenario", "s"), ("step", "a")])
        ),
        Some(3.0)
    );
    assert!(!samples
        .iter()
        .any(|s| s.labels.get("step").map(String::as_str) == Some("g")));

    if let Some(promtool) = receiver_binary("promtool") {
        let mut child = Command::new(promtool)
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let msg = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && msg.trim().is_empty(),
            "promtool check metrics:\n{msg}"
        );
    }
}

#[test]
fn a_run_label_that_prometheus_would_refuse_is_an_error() {
    use onrush_export::PrometheusOptions;
    for (name, why) in [
        ("run-id", "is not a Prometheus label name"),
        ("__x", "is not a Prometheus label name"),
        ("1x", "is not a Prometheus label name"),
        ("step", "one onrush's series use themselves"),
    ] {
        let options = PrometheusOptions {
            labels: vec![(name.into(), "v".into())],
            ..Default::default()
        };
        let err = PrometheusExporter::start_with("127.0.0.1:0".parse().unwrap(), options)
            .err()
            .unwrap_or_else(|| panic!("{name} accepted"));
        assert!(err.to_string().contains(why), "{name}: {err}");
    }
}
