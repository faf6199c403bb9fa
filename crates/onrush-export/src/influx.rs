//! The InfluxDB exporter: line protocol, pushed once a second over HTTP from a thread of its
//! own, through a bounded queue.
//!
//! [`Exporter::second`] formats the second's points (a few microseconds) and `try_send`s them
//! into the queue; when the queue is full (the server is slow or down) that second is dropped
//! and counted ([`InfluxStats::seconds_dropped`]) instead of blocking the caller. The sender
//! thread POSTs what is queued (several queued seconds go in one request), once each: a
//! refused, failed or non-2xx write is counted ([`InfluxStats::seconds_failed`]) and not
//! retried. Every network wait is bounded by [`InfluxOptions::timeout`].

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use onrush_metrics::{Hist, MsStats, SecondData};

use crate::http::{post, HttpUrl};
use crate::{ExportError, Exporter};

/// Largest body sent in one POST when catching up on queued seconds.
const MAX_BODY: usize = 1 << 20;

/// Options of [`InfluxExporter::with_options`].
#[derive(Clone, Debug, PartialEq)]
pub struct InfluxOptions {
    /// Sent as `Authorization: Token TOKEN` (InfluxDB 2.x API token; 1.x with authentication
    /// accepts `USER:PASSWORD` here).
    pub token: Option<String>,
    /// Tags added to every point, e.g. `[("host", "gen-1")]` when several machines write to
    /// one database.
    pub tags: Vec<(String, String)>,
    /// Seconds that may wait in the queue before further seconds are dropped (default 60).
    pub queue_seconds: usize,
    /// Bound of each network wait of a write: connect, send, and each read (default 2 s).
    pub timeout: Duration,
    /// How long [`Exporter::finish`] waits for the queue to drain (default 5 s).
    pub finish_timeout: Duration,
}

impl Default for InfluxOptions {
    fn default() -> Self {
        InfluxOptions {
            token: None,
            tags: Vec::new(),
            queue_seconds: 60,
            timeout: Duration::from_secs(2),
            finish_timeout: Duration::from_secs(5),
        }
    }
}

/// What the exporter did, for the end-of-run report. Each second is counted once in exactly
/// one of `seconds_sent`, `seconds_failed` or `seconds_dropped` once it left the queue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InfluxStats {
    /// Seconds given to [`Exporter::second`].
    pub seconds: u64,
    /// Seconds written (answered 2xx).
    pub seconds_sent: u64,
    /// Seconds not sent: the queue was full, or still held them when `finish` gave up.
    pub seconds_dropped: u64,
    /// Seconds in a write that failed (connection refused, time-out, non-2xx answer).
    pub seconds_failed: u64,
    /// HTTP requests answered 2xx.
    pub posts_ok: u64,
    /// HTTP requests answered otherwise (e.g. 400 for a bad point, 401, 404 database not found).
    pub posts_rejected: u64,
    /// HTTP requests that failed without an answer (refused, reset, time-out).
    pub posts_failed: u64,
    /// The latest failure, e.g. `HTTP 404: {"error":"database not found: \"x\""}`.
    pub last_error: Option<String>,
}

/// Timestamp precision of the points, from the URL's `precision` parameter (default ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    Ns,
    Us,
    Ms,
    S,
}

impl Precision {
    fn from_param(p: Option<&str>) -> Result<Precision, String> {
        Ok(match p {
            None | Some("n") | Some("ns") => Precision::Ns,
            Some("u") | Some("us") => Precision::Us,
            Some("ms") => Precision::Ms,
            Some("s") => Precision::S,
            Some(p) => return Err(format!("unsupported precision {p:?} (use ns, us, ms or s)")),
        })
    }

    fn timestamp(self, ms: u64) -> u64 {
        match self {
            Precision::Ns => ms.saturating_mul(1_000_000),
            Precision::Us => ms.saturating_mul(1_000),
            Precision::Ms => ms,
            Precision::S => ms / 1000,
        }
    }
}

struct Batch {
    body: String,
    seconds: u64,
}

#[derive(Default)]
struct Counters {
    seconds: AtomicU64,
    dropped: AtomicU64,
}

/// Pushes each second to InfluxDB (or anything that takes line protocol over HTTP:
/// Telegraf's `http_listener_v2`, VictoriaMetrics, QuestDB, ...).
pub struct InfluxExporter {
    tx: Option<SyncSender<Batch>>,
    done: Receiver<()>,
    thread: Option<JoinHandle<()>>,
    abandon: Arc<AtomicBool>,
    counters: Arc<Counters>,
    stats: Arc<Mutex<InfluxStats>>,
    precision: Precision,
    /// `,k=v` of the extra tags, escaped.
    tags: String,
    finish_timeout: Duration,
    /// Size of the last body, to allocate the next one at once.
    last_len: usize,
}

impl InfluxExporter {
    /// An exporter writing to `url`: `http://HOST:PORT/write?db=NAME` (InfluxDB 1.x) or
    /// `http://HOST:PORT/api/v2/write?org=ORG&bucket=BUCKET` (2.x; give the token with
    /// [`with_options`](Self::with_options)). Starts the sender thread; nothing is sent before
    /// the first second.
    pub fn new(url: &str) -> Result<Self, ExportError> {
        Self::with_options(url, InfluxOptions::default())
    }

    pub fn with_options(url: &str, opts: InfluxOptions) -> Result<Self, ExportError> {
        let url_err = |msg: String| ExportError::Url {
            url: url.to_string(),
            msg,
        };
        let parsed = HttpUrl::parse(url).map_err(url_err)?;
        let precision = Precision::from_param(parsed.query_param("precision")).map_err(url_err)?;
        if let Some(t) = &opts.token {
            if t.bytes().any(|b| b < b' ' || b == 0x7f) {
                return Err(url_err("the token contains control characters".into()));
            }
        }
        let mut tags = String::new();
        for (k, v) in &opts.tags {
            if k.is_empty() || v.is_empty() {
                continue; // line protocol has no empty tag keys or values
            }
            tags.push(',');
            escape_tag(k, &mut tags);
            tags.push('=');
            escape_tag(v, &mut tags);
        }
        let (tx, rx) = mpsc::sync_channel(opts.queue_seconds.max(1));
        let (done_tx, done) = mpsc::sync_channel(1);
        let abandon = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::default());
        let stats = Arc::new(Mutex::new(InfluxStats::default()));
        let sender = Sender {
            url: parsed,
            auth: opts.token.as_ref().map(|t| format!("Token {t}")),
            timeout: opts.timeout,
            abandon: abandon.clone(),
            stats: stats.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("onrush-influx".into())
            .spawn(move || {
                sender.run(rx);
                let _ = done_tx.send(());
            })
            .map_err(|e| ExportError::Io {
                what: "starting the InfluxDB sender thread",
                source: e,
            })?;
        Ok(InfluxExporter {
            tx: Some(tx),
            done,
            thread: Some(thread),
            abandon,
            counters,
            stats,
            precision,
            tags,
            finish_timeout: opts.finish_timeout,
            last_len: 0,
        })
    }

    /// What was sent, dropped and failed so far.
    pub fn stats(&self) -> InfluxStats {
        let mut s = self.stats.lock().unwrap_or_else(|e| e.into_inner()).clone();
        s.seconds = self.counters.seconds.load(Ordering::Relaxed);
        s.seconds_dropped += self.counters.dropped.load(Ordering::Relaxed);
        s
    }
}

impl Exporter for InfluxExporter {
    fn second(&mut self, data: &SecondData) {
        self.counters.seconds.fetch_add(1, Ordering::Relaxed);
        let Some(tx) = &self.tx else {
            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let mut body = String::with_capacity(self.last_len + 256);
        write_second(data, self.precision, &self.tags, &mut body);
        self.last_len = body.len();
        match tx.try_send(Batch { body, seconds: 1 }) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Lets the sender write what is queued, waiting at most
    /// [`InfluxOptions::finish_timeout`]; what is still queued then is dropped (counted).
    fn finish(&mut self) {
        let Some(tx) = self.tx.take() else { return };
        drop(tx); // the sender drains the queue, then ends
        match self.done.recv_timeout(self.finish_timeout) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                if let Some(t) = self.thread.take() {
                    let _ = t.join();
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // Stuck in a write (bounded by the timeouts): drop the rest, do not wait.
                self.abandon.store(true, Ordering::SeqCst);
            }
        }
    }
}

impl Drop for InfluxExporter {
    fn drop(&mut self) {
        self.finish();
    }
}

struct Sender {
    url: HttpUrl,
    auth: Option<String>,
    timeout: Duration,
    abandon: Arc<AtomicBool>,
    stats: Arc<Mutex<InfluxStats>>,
}

impl Sender {
    fn run(self, rx: Receiver<Batch>) {
        while let Ok(first) = rx.recv() {
            let (mut body, mut seconds) = (first.body, first.seconds);
            while body.len() < MAX_BODY {
                match rx.try_recv() {
                    Ok(b) => {
                        body.push_str(&b.body);
                        seconds += b.seconds;
                    }
                    Err(_) => break,
                }
            }
            if self.abandon.load(Ordering::SeqCst) {
                self.update(|s| s.seconds_dropped += seconds);
                continue;
            }
            let headers: Vec<(&str, &str)> = self
                .auth
                .as_deref()
                .map(|a| ("Authorization", a))
                .into_iter()
                .collect();
            let r = post(
                &self.url,
                &headers,
                "text/plain; charset=utf-8",
                body.as_bytes(),
                self.timeout,
            );
            self.update(|s| match r {
                Ok(r) if (200..300).contains(&r.status) => {
                    s.posts_ok += 1;
                    s.seconds_sent += seconds;
                }
                Ok(r) => {
                    s.posts_rejected += 1;
                    s.seconds_failed += seconds;
                    let text = String::from_utf8_lossy(&r.body);
                    let text: String = text.trim().chars().take(300).collect();
                    s.last_error = Some(format!("HTTP {}: {text}", r.status));
                }
                Err(e) => {
                    s.posts_failed += 1;
                    s.seconds_failed += seconds;
                    s.last_error = Some(format!("{}:{}: {e}", self.url.host, self.url.port));
                }
            });
        }
    }

    fn update(&self, f: impl FnOnce(&mut InfluxStats)) {
        f(&mut self.stats.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

/// The points of one second in line protocol, nanosecond timestamps, no extra tags.
pub fn line_protocol(data: &SecondData) -> String {
    let mut out = String::new();
    write_second(data, Precision::Ns, "", &mut out);
    out
}

/// Appends the points of `data`: one `onrush_requests` per step with activity, one
/// `onrush_failures` per step and failure class that occurred, one `onrush_vus` per scenario,
/// one `onrush_totals`. `tags` is `,k=v...` already escaped.
fn write_second(data: &SecondData, precision: Precision, tags: &str, out: &mut String) {
    let ts = precision.timestamp(data.unix_ms);
    for s in &data.steps {
        let mut key = String::from("onrush_requests");
        let start = key.len();
        tag(&mut key, "scenario", &s.scenario);
        tag(&mut key, "step", &s.step);
        let step_tags = key[start..].to_string();
        out.push_str(&key);
        out.push_str(tags);
        let _ = write!(
            out,
            " count={}i,failures={}i,rps={}",
            s.requests,
            s.failures,
            float(s.requests as f64)
        );
        latency_fields(out, s.latency.as_ref());
        let _ = writeln!(
            out,
            ",bytes_in={}i,bytes_out={}i {ts}",
            s.bytes_in, s.bytes_out
        );
        for (class, n) in s.failure_classes() {
            out.push_str("onrush_failures");
            out.push_str(&step_tags);
            tag(out, "class", class.as_str());
            out.push_str(tags);
            let _ = writeln!(out, " count={n}i {ts}");
        }
    }
    for s in &data.scenarios {
        out.push_str("onrush_vus");
        tag(out, "scenario", &s.scenario);
        out.push_str(tags);
        let _ = writeln!(
            out,
            " active={}i,iterations={}i,dropped={}i,connections={}i {ts}",
            s.active_vus, s.iterations, s.dropped_iterations, s.connections_opened
        );
    }
    let t = &data.totals;
    out.push_str("onrush_totals");
    out.push_str(tags);
    let _ = write!(
        out,
        " count={}i,failures={}i,rps={}",
        t.requests,
        t.failures,
        float(t.requests as f64)
    );
    latency_fields(out, t.latency.as_ref());
    let _ = writeln!(
        out,
        ",bytes_in={}i,bytes_out={}i,active={}i,iterations={}i,dropped={}i,connections={}i {ts}",
        t.bytes_in,
        t.bytes_out,
        t.active_vus,
        t.iterations,
        t.dropped_iterations,
        t.connections_opened
    );
}

/// `,min=..,mean=..,p50=..,p90=..,p95=..,p99=..,max=..` in ms, when there was a value.
fn latency_fields(out: &mut String, h: Option<&Hist>) {
    let Some(s) = h.map(quick_stats).filter(|s| s.count > 0) else {
        return;
    };
    for (k, v) in [
        ("min", s.min),
        ("mean", s.mean),
        ("p50", s.p50),
        ("p90", s.p90),
        ("p95", s.p95),
        ("p99", s.p99),
        ("max", s.max),
    ] {
        let _ = write!(out, ",{k}={}", float(v));
    }
}

/// The figures of [`MsStats::from_hist`] that the points carry (`count`, `min`, `mean`,
/// `p50`..`p99`, `max`; `stdev` and `p999` left at 0), equal to it, in a third of the time:
/// this runs on the caller's thread.
pub(crate) fn quick_stats(h: &Hist) -> MsStats {
    if h.is_empty() {
        return MsStats::default();
    }
    let ms = |us: u64| us as f64 / 1000.0;
    let mean = h.mean() / 1000.0;
    MsStats {
        count: h.len(),
        min: ms(h.min()),
        mean: if mean.is_finite() {
            (mean * 1000.0).round() / 1000.0
        } else {
            0.0
        },
        stdev: 0.0,
        p50: ms(h.value_at_quantile(0.50)),
        p90: ms(h.value_at_quantile(0.90)),
        p95: ms(h.value_at_quantile(0.95)),
        p99: ms(h.value_at_quantile(0.99)),
        p999: 0.0,
        max: ms(h.max()),
    }
}

/// A float field value (always finite here; a non-finite one, which line protocol cannot
/// carry, is written as 0).
fn float(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "0".into()
    }
}

/// Appends `,key=value` (escaped); nothing for an empty value, which line protocol cannot
/// carry (the tag is omitted, as the spec says).
fn tag(out: &mut String, key: &str, value: &str) {
    let mut v = String::new();
    escape_tag(value, &mut v);
    if v.is_empty() {
        return;
    }
    out.push(',');
    escape_tag(key, out);
    out.push('=');
    out.push_str(&v);
}

/// Escapes a tag key, tag value or field key: `,` `=` and space get a backslash. Line protocol
/// cannot carry a line feed or carriage return (they become spaces) nor a trailing backslash
/// (it would escape the separator after it; trailing backslashes are dropped). Other
/// backslashes stay as they are (InfluxDB reads them literally).
pub fn escape_tag(s: &str, out: &mut String) {
    for c in s.trim_end_matches('\\').chars() {
        match c {
            ',' | '=' | ' ' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push_str("\\ "),
            c => out.push(c),
        }
    }
}

/// Escapes a measurement name: `,` and space get a backslash (line feeds become spaces,
/// trailing backslashes are dropped).
pub fn escape_measurement(s: &str, out: &mut String) {
    for c in s.trim_end_matches('\\').chars() {
        match c {
            ',' | ' ' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push_str("\\ "),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &str) -> String {
        let mut o = String::new();
        escape_tag(s, &mut o);
        o
    }

    #[test]
    fn tag_escaping() {
        assert_eq!(esc("plain"), "plain");
        assert_eq!(esc("a b,c=d"), "a\\ b\\,c\\=d");
        assert_eq!(esc("x\\y"), "x\\y");
        assert_eq!(esc("a\\,b"), "a\\\\,b");
        assert_eq!(esc("end\\\\"), "end");
        assert_eq!(esc("two\nlines"), "two\\ lines");
        assert_eq!(esc("\"quoted\" é"), "\"quoted\"\\ é");
        let mut m = String::new();
        escape_measurement("m e,a=s", &mut m);
        assert_eq!(m, "m\\ e\\,a=s");
        let mut t = String::new();
        tag(&mut t, "step", "\\");
        assert_eq!(t, "", "an empty value is omitted");
    }

    #[test]
    fn quick_stats_equal_the_summary_figures() {
        let mut h = onrush_metrics::hist::new_hist();
        assert_eq!(quick_stats(&h), MsStats::default());
        let mut x: u64 = 88172645463325252;
        for _ in 0..5000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            h.record(1 + (x % 1_000_000) / (1 + (x >> 60))).unwrap();
        }
        let full = MsStats::from_hist(&h);
        let q = quick_stats(&h);
        assert_eq!(
            q,
            MsStats {
                stdev: 0.0,
                p999: 0.0,
                ..full
            }
        );
    }

    #[test]
    fn precision() {
        assert_eq!(Precision::from_param(None), Ok(Precision::Ns));
        assert_eq!(Precision::from_param(Some("u")), Ok(Precision::Us));
        assert!(Precision::from_param(Some("h")).is_err());
        assert_eq!(Precision::Ns.timestamp(1_500), 1_500_000_000);
        assert_eq!(Precision::Us.timestamp(1_500), 1_500_000);
        assert_eq!(Precision::Ms.timestamp(1_500), 1_500);
        assert_eq!(Precision::S.timestamp(1_500), 1);
        assert!(InfluxExporter::new("http://127.0.0.1:1/write?db=x&precision=h").is_err());
    }
}
