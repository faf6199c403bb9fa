//! The Prometheus exporter: `GET /metrics` in the text exposition format, version 0.0.4.
//!
//! The metrics are accumulated and rendered on the caller's thread once per second (a few
//! microseconds per step) and published by swapping an `Arc<String>` under a mutex that is
//! held only for that swap; a scrape, on the server thread, clones the `Arc` and writes it out.
//! So a slow or stuck scraper never blocks [`Exporter::second`], and no second is ever lost:
//! the counters are cumulative, a scrape simply sees the latest second.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use onrush_metrics::{FailureClass, Hist, Layout, SecondData};

use crate::http::read_request_head;
use crate::Exporter;

mod runs;

/// Upper bounds (seconds) of the latency histogram buckets, `+Inf` added: from 0.5 ms to 60 s.
pub const DEFAULT_BUCKETS_S: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

/// `Content-Type` of the text exposition format 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The quantiles of the per-second summary `onrush_latency_seconds`.
pub const SUMMARY_QUANTILES: [(f64, &str); 4] =
    [(0.5, "0.5"), (0.9, "0.9"), (0.95, "0.95"), (0.99, "0.99")];

/// How long the server waits for a scraper to send its request or take the response.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// Options of [`PrometheusExporter::start_with`].
#[derive(Clone, Debug, PartialEq)]
pub struct PrometheusOptions {
    /// Upper bounds in seconds of the `onrush_request_duration_seconds` buckets (`+Inf` is
    /// added). Positive, finite; sorted and deduplicated at start.
    pub buckets_s: Vec<f64>,
    /// Labels on every series, in this order before onrush's own (`scenario`, `step`...):
    /// the CLI gives `run_id` and `plan`, so that dashboards tell runs apart. Names as
    /// Prometheus allows them, none of onrush's own.
    pub labels: Vec<(String, String)>,
}

impl Default for PrometheusOptions {
    fn default() -> Self {
        PrometheusOptions {
            buckets_s: DEFAULT_BUCKETS_S.to_vec(),
            labels: Vec::new(),
        }
    }
}

#[derive(Clone, Debug)]
struct StepState {
    scenario: String,
    step: String,
    requests: u64,
    /// Failed requests (a group's: runs in which a request failed).
    failures: u64,
    failures_by_class: [u64; FailureClass::CAPACITY],
    status_codes: BTreeMap<u16, u64>,
    bytes_in: u64,
    bytes_out: u64,
    /// Latency values counted (== requests, unless a request had no latency).
    count: u64,
    /// Sum of the latencies, seconds.
    sum_s: f64,
    /// Per bucket (not cumulative), the last one is `+Inf`.
    buckets: Vec<u64>,
    /// Quantiles of the last second, seconds; `None` when the step had no value in it.
    quantiles: Option<[f64; SUMMARY_QUANTILES.len()]>,
}

#[derive(Clone, Debug, Default)]
struct ScenarioState {
    name: String,
    iterations: u64,
    dropped_iterations: u64,
    connections_opened: u64,
    active_vus: u64,
}

/// The cumulative state of every metric, and its rendering.
#[derive(Clone, Debug)]
pub(crate) struct Metrics {
    bounds_us: Vec<u64>,
    bound_labels: Vec<String>,
    /// `[scenario_index][step_index]`.
    steps: Vec<Vec<Option<StepState>>>,
    scenarios: Vec<Option<ScenarioState>>,
    last_second: Option<u64>,
    /// [`PrometheusOptions::labels`] as `name="value",...`.
    base: String,
    /// Checks and groups.
    extra: runs::Extra,
}

fn slot<T>(v: &mut Vec<Option<T>>, i: usize) -> &mut Option<T> {
    if v.len() <= i {
        v.resize_with(i + 1, || None);
    }
    &mut v[i]
}

/// The state of step `st` of scenario `sc`, created (with `n` buckets) when new.
fn step_entry<'a>(
    steps: &'a mut Vec<Vec<Option<StepState>>>,
    n: usize,
    sc: usize,
    st: usize,
    scenario: &str,
    step: &str,
) -> &'a mut StepState {
    if steps.len() <= sc {
        steps.resize_with(sc + 1, Vec::new);
    }
    slot(&mut steps[sc], st).get_or_insert_with(|| StepState {
        scenario: scenario.to_string(),
        step: step.to_string(),
        requests: 0,
        failures: 0,
        failures_by_class: [0; FailureClass::CAPACITY],
        status_codes: BTreeMap::new(),
        bytes_in: 0,
        bytes_out: 0,
        count: 0,
        sum_s: 0.0,
        buckets: vec![0; n],
        quantiles: None,
    })
}

impl Metrics {
    pub(crate) fn new(buckets_s: &[f64], labels: &[(String, String)]) -> io::Result<Metrics> {
        let base = runs::constant_labels(labels)?;
        let mut b: Vec<f64> = buckets_s.to_vec();
        if let Some(bad) = b.iter().find(|x| !x.is_finite() || **x <= 0.0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("histogram bucket bound {bad} is not a positive number of seconds"),
            ));
        }
        b.sort_by(f64::total_cmp);
        b.dedup();
        Ok(Metrics {
            bounds_us: b.iter().map(|s| (s * 1e6).round() as u64).collect(),
            bound_labels: b.iter().map(|s| fmt_f64(*s)).collect(),
            steps: Vec::new(),
            scenarios: Vec::new(),
            last_second: None,
            base,
            extra: runs::Extra::default(),
        })
    }

    fn step_mut(&mut self, sc: usize, st: usize, scenario: &str, step: &str) -> &mut StepState {
        step_entry(
            &mut self.steps,
            self.bounds_us.len() + 1,
            sc,
            st,
            scenario,
            step,
        )
    }

    fn scenario_mut(&mut self, sc: usize, name: &str) -> &mut ScenarioState {
        slot(&mut self.scenarios, sc).get_or_insert_with(|| ScenarioState {
            name: name.to_string(),
            ..ScenarioState::default()
        })
    }

    pub(crate) fn begin(&mut self, layout: &Layout) {
        for (si, s) in layout.scenarios.iter().enumerate() {
            self.scenario_mut(si, &s.name);
            for (sti, st) in s.steps.iter().enumerate() {
                if s.is_group(sti) {
                    continue; // groups are not requests (their seconds are in `groups`)
                }
                self.step_mut(si, sti, &s.name, st);
            }
        }
        self.extra.begin(layout, self.bounds_us.len() + 1);
    }

    pub(crate) fn add(&mut self, d: &SecondData) {
        for st in self.steps.iter_mut().flatten().flatten() {
            st.quantiles = None;
        }
        for s in &d.scenarios {
            let st = self.scenario_mut(s.scenario_index, &s.scenario);
            st.iterations += s.iterations;
            st.dropped_iterations += s.dropped_iterations;
            st.connections_opened += s.connections_opened;
            st.active_vus = s.active_vus;
        }
        let n = self.bounds_us.len() + 1;
        for s in &d.steps {
            let st = step_entry(
                &mut self.steps,
                n,
                s.scenario_index,
                s.step_index,
                &s.scenario,
                &s.step,
            );
            st.requests += s.requests;
            for (a, b) in st.failures_by_class.iter_mut().zip(s.failures_by_class) {
                *a += b;
            }
            for (&code, &n) in &s.status_codes {
                *st.status_codes.entry(code).or_insert(0) += n;
            }
            st.bytes_in += s.bytes_in;
            st.bytes_out += s.bytes_out;
            if let Some(h) = s.latency.as_ref().filter(|h| !h.is_empty()) {
                st.sum_s += add_buckets(&self.bounds_us, h, &mut st.buckets);
                st.count += h.len();
                st.quantiles =
                    Some(SUMMARY_QUANTILES.map(|(q, _)| h.value_at_quantile(q) as f64 / 1e6));
            }
        }
        let bounds = &self.bounds_us;
        self.extra.add(d, n, &|st, h| {
            st.sum_s += add_buckets(bounds, h, &mut st.buckets);
            st.count += h.len();
        });
        self.last_second = Some(d.second);
    }

    /// Renders every metric in the text exposition format 0.0.4.
    pub(crate) fn render(&self, out: &mut String) {
        let steps: Vec<&StepState> = self.steps.iter().flatten().flatten().collect();
        let scenarios: Vec<&ScenarioState> = self.scenarios.iter().flatten().collect();
        let step_labels: Vec<String> = steps
            .iter()
            .map(|s| {
                let mut l = runs::with_base(&self.base);
                label(&mut l, "scenario", &s.scenario);
                l.push(',');
                label(&mut l, "step", &s.step);
                l
            })
            .collect();
        let scen_labels: Vec<String> = scenarios
            .iter()
            .map(|s| {
                let mut l = runs::with_base(&self.base);
                label(&mut l, "scenario", &s.name);
                l
            })
            .collect();

        let per_step = |out: &mut String,
                        name: &str,
                        kind: &str,
                        help: &str,
                        f: &dyn Fn(&StepState) -> u64| {
            family(out, name, kind, help);
            for (s, l) in steps.iter().zip(&step_labels) {
                sample(out, name, l, &f(s).to_string());
            }
        };
        per_step(
            out,
            "onrush_requests_total",
            "counter",
            "Requests completed (with or without a response).",
            &|s| s.requests,
        );

        family(
            out,
            "onrush_failures_total",
            "counter",
            "Failed requests by failure class (classes that occurred).",
        );
        for (s, l) in steps.iter().zip(&step_labels) {
            for c in FailureClass::all() {
                let n = s.failures_by_class[c.index()];
                if n > 0 {
                    let mut l = l.clone();
                    l.push(',');
                    label(&mut l, "class", c.as_str());
                    sample(out, "onrush_failures_total", &l, &n.to_string());
                }
            }
        }

        family(
            out,
            "onrush_responses_total",
            "counter",
            "Responses by exact status code.",
        );
        for (s, l) in steps.iter().zip(&step_labels) {
            for (code, n) in &s.status_codes {
                let mut l = l.clone();
                l.push(',');
                label(&mut l, "code", &code.to_string());
                sample(out, "onrush_responses_total", &l, &n.to_string());
            }
        }
        per_step(
            out,
            "onrush_bytes_received_total",
            "counter",
            "Bytes received (wire bytes: heads, framing and bodies).",
            &|s| s.bytes_in,
        );
        per_step(
            out,
            "onrush_bytes_sent_total",
            "counter",
            "Bytes sent.",
            &|s| s.bytes_out,
        );

        let per_scen = |out: &mut String,
                        name: &str,
                        kind: &str,
                        help: &str,
                        f: &dyn Fn(&ScenarioState) -> u64| {
            family(out, name, kind, help);
            for (s, l) in scenarios.iter().zip(&scen_labels) {
                sample(out, name, l, &f(s).to_string());
            }
        };
        per_scen(
            out,
            "onrush_iterations_total",
            "counter",
            "Scenario iterations completed.",
            &|s| s.iterations,
        );
        per_scen(
            out,
            "onrush_dropped_iterations_total",
            "counter",
            "Iterations the open model could not start (no free VU).",
            &|s| s.dropped_iterations,
        );
        per_scen(
            out,
            "onrush_connections_opened_total",
            "counter",
            "TCP connections opened.",
            &|s| s.connections_opened,
        );
        per_scen(
            out,
            "onrush_active_vus",
            "gauge",
            "Active VUs in the last second (peak per worker, summed).",
            &|s| s.active_vus,
        );

        let name = "onrush_latency_seconds";
        family(out, name, "summary", "Request latency: quantiles of the last second only (NaN when the step had no request in it); _sum and _count since the start.");
        for (s, l) in steps.iter().zip(&step_labels) {
            for (i, (_, q)) in SUMMARY_QUANTILES.iter().enumerate() {
                let mut l = l.clone();
                l.push(',');
                label(&mut l, "quantile", q);
                let v = s.quantiles.map_or(f64::NAN, |qs| qs[i]);
                sample(out, name, &l, &fmt_f64(v));
            }
            sample(out, "onrush_latency_seconds_sum", l, &fmt_f64(s.sum_s));
            sample(out, "onrush_latency_seconds_count", l, &s.count.to_string());
        }

        let name = "onrush_request_duration_seconds";
        family(out, name, "histogram", "Request latency since the start, in fixed buckets counted exactly from the HDR histograms.");
        for (s, l) in steps.iter().zip(&step_labels) {
            let mut cum = 0;
            for (i, n) in s.buckets.iter().enumerate() {
                cum += n;
                let mut l = l.clone();
                l.push(',');
                label(&mut l, "le", self.bound_labels.get(i).map_or("+Inf", |s| s));
                sample(
                    out,
                    "onrush_request_duration_seconds_bucket",
                    &l,
                    &cum.to_string(),
                );
            }
            sample(
                out,
                "onrush_request_duration_seconds_sum",
                l,
                &fmt_f64(s.sum_s),
            );
            sample(
                out,
                "onrush_request_duration_seconds_count",
                l,
                &s.count.to_string(),
            );
        }

        self.extra.render(out, &self.base, &self.bound_labels);

        if let Some(t) = self.last_second {
            family(
                out,
                "onrush_last_second",
                "gauge",
                "Index (since the start of the run) of the last second exported.",
            );
            sample(out, "onrush_last_second", &self.base, &t.to_string());
        }
    }
}

/// Adds the values of `h` (µs) to per-bucket counts. A value counts in the first bucket whose
/// bound is at least the *highest equivalent value* of its HDR bucket — the value onrush
/// reports as percentile or max — so `le` buckets agree with onrush's own figures (and are
/// exact below 2,048 µs, within 0.1% above). Returns the sum of the values in seconds, each
/// taken as the middle of its HDR bucket (as HdrHistogram's mean does): within 0.05%.
fn add_buckets(bounds_us: &[u64], h: &Hist, counts: &mut [u64]) -> f64 {
    let mut sum_us = 0.0;
    for v in h.iter_recorded() {
        let top = v.value_iterated_to();
        let n = v.count_at_value();
        counts[bounds_us.partition_point(|&b| b < top)] += n;
        sum_us += h.median_equivalent(top) as f64 * n as f64;
    }
    sum_us / 1e6
}

/// `# HELP` and `# TYPE` lines of a metric family.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    out.push_str("# HELP ");
    out.push_str(name);
    out.push(' ');
    escape_help(help, out);
    out.push_str("\n# TYPE ");
    out.push_str(name);
    out.push(' ');
    out.push_str(kind);
    out.push('\n');
}

fn sample(out: &mut String, name: &str, labels: &str, value: &str) {
    out.push_str(name);
    if !labels.is_empty() {
        out.push('{');
        out.push_str(labels);
        out.push('}');
    }
    out.push(' ');
    out.push_str(value);
    out.push('\n');
}

fn label(out: &mut String, name: &str, value: &str) {
    out.push_str(name);
    out.push_str("=\"");
    escape_label_value(value, out);
    out.push('"');
}

/// Escapes a label value for the text format: `\` → `\\`, `"` → `\"`, line feed → `\n`.
pub fn escape_label_value(v: &str, out: &mut String) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Escapes `# HELP` text: `\` → `\\`, line feed → `\n`.
pub fn escape_help(v: &str, out: &mut String) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// A sample value as Go's `ParseFloat` reads it: `NaN`, `+Inf`, `-Inf`, or the shortest decimal.
pub fn fmt_f64(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        let mut s = String::new();
        let _ = write!(s, "{v}");
        s
    }
}

#[derive(Default)]
struct Published {
    body: Arc<String>,
    version: u64,
    scraped_version: u64,
    scrapes: u64,
}

#[derive(Default)]
struct Shared {
    state: Mutex<Published>,
    scraped: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Published> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Serves `GET /metrics` (Prometheus text format 0.0.4) on its own thread; see the module
/// documentation and `docs/metrics-export.md` for the metrics.
pub struct PrometheusExporter {
    metrics: Metrics,
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// Signalled when the server thread ends.
    done: mpsc::Receiver<()>,
    /// Capacity of the last body, to render the next one without regrowing.
    last_len: usize,
}

impl PrometheusExporter {
    /// Binds `addr` (port 0: any free port, see [`local_addr`](Self::local_addr)) and serves
    /// `/metrics` from a new thread, with the default buckets.
    pub fn start(addr: SocketAddr) -> io::Result<Self> {
        Self::start_with(addr, PrometheusOptions::default())
    }

    /// Like [`start`](Self::start) with options.
    pub fn start_with(addr: SocketAddr, opts: PrometheusOptions) -> io::Result<Self> {
        let metrics = Metrics::new(&opts.buckets_s, &opts.labels)?;
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (done_tx, done) = mpsc::sync_channel(1);
        let thread = {
            let (shared, stop) = (shared.clone(), stop.clone());
            std::thread::Builder::new()
                .name("onrush-prometheus".into())
                .spawn(move || {
                    serve(listener, &shared, &stop);
                    let _ = done_tx.send(());
                })?
        };
        let mut e = PrometheusExporter {
            metrics,
            shared,
            addr,
            stop,
            thread: Some(thread),
            done,
            last_len: 0,
        };
        e.publish();
        Ok(e)
    }

    /// The address served (with the actual port when started on port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The body `/metrics` serves now.
    pub fn metrics_text(&self) -> Arc<String> {
        self.shared.lock().body.clone()
    }

    /// Number of `/metrics` responses served.
    pub fn scrapes(&self) -> u64 {
        self.shared.lock().scrapes
    }

    /// Waits until a scrape has served the latest data, or `timeout` passed; true when it
    /// did. For the end of a run: call it after [`Exporter::finish`] so that Prometheus gets
    /// the last second before the exporter is dropped (wait about one scrape interval).
    pub fn wait_scraped(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut p = self.shared.lock();
        while p.scraped_version < p.version {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            p = self
                .shared
                .scraped
                .wait_timeout(p, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }

    fn publish(&mut self) {
        let mut body = String::with_capacity(self.last_len + self.last_len / 8 + 256);
        self.metrics.render(&mut body);
        self.last_len = body.len();
        let body = Arc::new(body);
        let old = {
            let mut p = self.shared.lock();
            p.version += 1;
            std::mem::replace(&mut p.body, body)
        };
        drop(old); // outside the lock
    }

    fn stop_server(&mut self) {
        let Some(t) = self.thread.take() else { return };
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept with a connection of our own.
        let ip = match self.addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        let _ = TcpStream::connect_timeout(
            &SocketAddr::new(ip, self.addr.port()),
            Duration::from_secs(1),
        );
        // The thread may be busy with a slow scraper (up to its 5 s client time-outs): wait a
        // little, then leave it to end by itself, closing the listener.
        match self.done.recv_timeout(Duration::from_secs(1)) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                let _ = t.join();
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}

impl Exporter for PrometheusExporter {
    fn begin(&mut self, layout: &Layout) {
        self.metrics.begin(layout);
        self.publish();
    }

    fn second(&mut self, data: &SecondData) {
        self.metrics.add(data);
        self.publish();
    }

    /// Nothing to flush: the endpoint keeps serving the final figures until the exporter is
    /// dropped (see [`PrometheusExporter::wait_scraped`]).
    fn finish(&mut self) {}
}

/// Stops the server (waiting at most about 2 s for a scrape in progress).
impl Drop for PrometheusExporter {
    fn drop(&mut self) {
        self.stop_server();
    }
}

fn serve(listener: TcpListener, shared: &Shared, stop: &AtomicBool) {
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        match conn {
            Ok(s) => {
                let _ = handle(s, shared);
            }
            // E.g. out of file descriptors: do not spin.
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Answers one request and closes the connection (scrapes are rare; one at a time).
fn handle(mut s: TcpStream, shared: &Shared) -> io::Result<()> {
    s.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    s.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let Some(head) = read_request_head(&mut s, 16 * 1024, Instant::now() + CLIENT_TIMEOUT)? else {
        return Ok(());
    };
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    let parsed = matches!(req.parse(&head), Ok(httparse::Status::Complete(_)));
    let (method, path) = match (parsed, req.method, req.path) {
        (true, Some(m), Some(p)) => (m, p.split('?').next().unwrap_or(p)),
        _ => {
            return respond(
                &mut s,
                "400 Bad Request",
                "text/plain",
                b"bad request\n",
                true,
                &[],
            )
        }
    };
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return respond(
            &mut s,
            "405 Method Not Allowed",
            "text/plain",
            b"only GET and HEAD\n",
            true,
            &[("Allow", "GET, HEAD")],
        );
    }
    match path {
        "/metrics" => {
            let (body, version) = {
                let p = shared.lock();
                (p.body.clone(), p.version)
            };
            respond(
                &mut s,
                "200 OK",
                CONTENT_TYPE,
                body.as_bytes(),
                !head_only,
                &[],
            )?;
            if !head_only {
                let mut p = shared.lock();
                p.scrapes += 1;
                p.scraped_version = p.scraped_version.max(version);
                shared.scraped.notify_all();
            }
            Ok(())
        }
        "/" => respond(
            &mut s,
            "200 OK",
            "text/plain; charset=utf-8",
            b"onrush: metrics at /metrics\n",
            !head_only,
            &[],
        ),
        _ => respond(
            &mut s,
            "404 Not Found",
            "text/plain",
            b"not found: metrics are at /metrics\n",
            !head_only,
            &[],
        ),
    }
}

fn respond(
    s: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &[u8],
    with_body: bool,
    extra: &[(&str, &str)],
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in extra {
        let _ = write!(head, "{k}: {v}\r\n");
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    if with_body {
        s.write_all(body)?;
    }
    s.flush()?;
    let _ = s.shutdown(std::net::Shutdown::Write);
    // Let the peer read the response before the socket closes (avoids a reset on close when
    // it sent more than we read), briefly.
    let deadline = Instant::now() + Duration::from_millis(200);
    let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
    let mut sink = [0u8; 512];
    while Instant::now() < deadline && matches!(io::Read::read(s, &mut sink), Ok(n) if n > 0) {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_and_help_escaping() {
        let mut o = String::new();
        escape_label_value("a\\b\"c\nd é,=", &mut o);
        assert_eq!(o, "a\\\\b\\\"c\\nd é,=");
        let mut o = String::new();
        escape_help("x\\y\n\"z\"", &mut o);
        assert_eq!(o, "x\\\\y\\n\"z\"");
    }

    #[test]
    fn values_as_go_parses_them() {
        assert_eq!(fmt_f64(f64::NAN), "NaN");
        assert_eq!(fmt_f64(f64::INFINITY), "+Inf");
        assert_eq!(fmt_f64(f64::NEG_INFINITY), "-Inf");
        assert_eq!(fmt_f64(0.0005), "0.0005");
        assert_eq!(fmt_f64(1.0), "1");
        assert_eq!(fmt_f64(0.002151), "0.002151");
        assert_eq!(fmt_f64(1e-7), "0.0000001");
    }

    #[test]
    fn buckets_count_by_highest_equivalent_value() {
        let m = Metrics::new(&[0.005, 0.001, 0.001, 0.01], &[]).unwrap();
        assert_eq!(m.bounds_us, [1_000, 5_000, 10_000], "sorted, deduplicated");
        assert_eq!(m.bound_labels, ["0.001", "0.005", "0.01"]);
        let mut h = onrush_metrics::hist::new_hist();
        // Exact below 2,048 µs: 1,000 is in le=0.001, 1,001 is not.
        // 4,996 lies in the HDR bucket 4,996..=4,999: le=0.005. 5,000 lies in 5,000..=5,003,
        // reported as 5.003 ms by onrush: le=0.01. 20,000: +Inf.
        for v in [1_000, 1_001, 4_996, 5_000, 20_000] {
            h.record(v).unwrap();
        }
        let mut counts = vec![0; 4];
        let sum = add_buckets(&m.bounds_us, &h, &mut counts);
        assert_eq!(counts, [1, 2, 1, 1]);
        let exact = (1_000 + 1_001 + 4_996 + 5_000 + 20_000) as f64 / 1e6;
        assert!((sum - exact).abs() < exact * 0.0005, "{sum} vs {exact}");
        for bad in [[0.0], [-1.0], [f64::NAN], [f64::INFINITY]] {
            assert!(Metrics::new(&bad, &[]).is_err());
        }
    }
}
