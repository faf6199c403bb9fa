//! The hot path: per-worker recording of requests, iterations and gauges.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::failure::FailureClass;
use crate::front::FrontedHist;
use crate::hist::{new_hist, record, take_hist, Hist};
use crate::snapshot::{CheckCounts, ScenarioInterval, Snapshot, StepCounters, StepInterval};

/// What one request measured. Times are in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestRecord {
    /// From the intended start (open model) or the actual start (closed model) to the end of
    /// the response (or the failure).
    pub latency_us: u64,
    /// From the actual send start (== `latency_us` in the closed model).
    pub service_us: u64,
    /// `Some` when this request opened a connection: the time to open it.
    pub connect_us: Option<u64>,
    /// From send start to the first response byte; `None` when no byte came.
    pub ttfb_us: Option<u64>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Response status; 0 when there was no response (not counted in status codes).
    pub status: u16,
    pub failure: Option<FailureClass>,
    /// `Some` when this request opened a TLS connection: how its handshake went.
    pub handshake: Option<Handshake>,
}

/// The TLS handshake of a connection a request opened (see [`RequestRecord::handshake`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Handshake {
    /// The handshake resumed a session (`false`: a full handshake).
    pub resumed: bool,
    /// Time of the handshake alone (after the TCP connect), µs.
    pub duration_us: u64,
}

/// Names of the scenarios and their steps (metric names), fixed at start. Indexes into it are
/// the `scenario` and `step` arguments of the recording calls (and `check` of
/// [`WorkerMetrics::record_check`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    pub scenarios: Vec<ScenarioLayout>,
}

pub use onrush_results::StepKind;

/// One scenario of a [`Layout`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScenarioLayout {
    pub name: String,
    /// Metric names, in plan order: request steps and groups.
    pub steps: Vec<String>,
    /// Kind of each step, parallel to `steps`. A step without an entry (e.g. `kinds` empty, the
    /// default) is a [`StepKind::Request`].
    pub kinds: Vec<StepKind>,
    /// The scenario's checks, indexed by the `check` argument of
    /// [`WorkerMetrics::record_check`]: (check name, index of the step in `steps` it belongs to).
    pub checks: Vec<(String, usize)>,
}

impl ScenarioLayout {
    /// A scenario of request steps, without checks.
    pub fn new<N, I, T>(name: N, steps: I) -> ScenarioLayout
    where
        N: Into<String>,
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        ScenarioLayout {
            name: name.into(),
            steps: steps.into_iter().map(Into::into).collect(),
            kinds: Vec::new(),
            checks: Vec::new(),
        }
    }

    /// The kind of step `step` (a request when not set).
    pub fn kind(&self, step: usize) -> StepKind {
        self.kinds.get(step).copied().unwrap_or_default()
    }

    /// True when step `step` is a group.
    pub fn is_group(&self, step: usize) -> bool {
        self.kind(step).is_group()
    }

    /// Sets the kind of step `step`.
    pub fn set_kind(&mut self, step: usize, kind: StepKind) -> &mut Self {
        if self.kinds.len() <= step {
            self.kinds.resize(step + 1, StepKind::Request);
        }
        self.kinds[step] = kind;
        self
    }

    /// Marks step `step` as a group.
    pub fn mark_group(&mut self, step: usize) -> &mut Self {
        self.set_kind(step, StepKind::Group)
    }

    /// Adds a check named `name` on step `step`; returns its index (the `check` argument of
    /// [`WorkerMetrics::record_check`]).
    pub fn add_check(&mut self, name: impl Into<String>, step: usize) -> usize {
        self.checks.push((name.into(), step));
        self.checks.len() - 1
    }
}

impl Layout {
    /// Convenience constructor: `Layout::new([("browse", ["home", "search"])])`.
    pub fn new<S, N, I, T>(scenarios: S) -> Layout
    where
        S: IntoIterator<Item = (N, I)>,
        N: Into<String>,
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        Layout {
            scenarios: scenarios
                .into_iter()
                .map(|(name, steps)| ScenarioLayout::new(name, steps))
                .collect(),
        }
    }

    /// Builder: marks step `step` of scenario `scenario` as a group.
    /// `Layout::new([("shop", ["home", "pay", "checkout"])]).with_group(0, 2)`.
    pub fn with_group(mut self, scenario: usize, step: usize) -> Layout {
        self.scenarios[scenario].mark_group(step);
        self
    }

    /// Builder: adds a check named `name` on step `step` of scenario `scenario` (checks are
    /// numbered per scenario in the order added, from 0).
    pub fn with_check(mut self, scenario: usize, name: impl Into<String>, step: usize) -> Layout {
        self.scenarios[scenario].add_check(name, step);
        self
    }
}

/// Status codes are counted in a flat array indexed by status; 1000 covers every 3-digit
/// code (larger values are counted as 999).
const STATUS_SLOTS: usize = 1000;

struct WorkerStep {
    requests: u64,
    failures: u64,
    by_class: [u64; FailureClass::CAPACITY],
    status: Box<[u64; STATUS_SLOTS]>,
    bytes_in: u64,
    bytes_out: u64,
    /// The hot path's histograms, each behind a counting front (see [`FrontedHist`]).
    latency: FrontedHist,
    /// Only while `service_is_latency` is false: until then every service time recorded was
    /// equal to its latency (the closed model's requests: issue 17), so the latency histogram
    /// stands for both and one histogram record per request is saved.
    service: FrontedHist,
    service_is_latency: bool,
    connect: FrontedHist,
    ttfb: FrontedHist,
    handshake: FrontedHist,
    handshakes_full: u64,
    handshakes_resumed: u64,
}

impl WorkerStep {
    fn new() -> Self {
        WorkerStep {
            requests: 0,
            failures: 0,
            by_class: [0; FailureClass::CAPACITY],
            status: Box::new([0; STATUS_SLOTS]),
            bytes_in: 0,
            bytes_out: 0,
            latency: FrontedHist::new(),
            service: FrontedHist::new(),
            service_is_latency: true,
            connect: FrontedHist::new(),
            ttfb: FrontedHist::new(),
            handshake: FrontedHist::new(),
            handshakes_full: 0,
            handshakes_resumed: 0,
        }
    }

    fn is_idle(&self) -> bool {
        self.requests == 0
            && self.latency.is_empty()
            && self.service.is_empty()
            && self.connect.is_empty()
            && self.ttfb.is_empty()
            && self.handshake.is_empty()
            && self.handshakes_full == 0
            && self.handshakes_resumed == 0
    }

    fn take(&mut self) -> Option<StepInterval> {
        if self.is_idle() {
            return None;
        }
        let mut status_codes = BTreeMap::new();
        for (code, n) in self.status.iter_mut().enumerate() {
            if *n > 0 {
                status_codes.insert(code as u16, *n);
                *n = 0;
            }
        }
        let counters = StepCounters {
            requests: std::mem::take(&mut self.requests),
            failures: std::mem::take(&mut self.failures),
            failures_by_class: std::mem::replace(&mut self.by_class, [0; FailureClass::CAPACITY]),
            status_codes,
            bytes_in: std::mem::take(&mut self.bytes_in),
            bytes_out: std::mem::take(&mut self.bytes_out),
            handshakes_full: std::mem::take(&mut self.handshakes_full),
            handshakes_resumed: std::mem::take(&mut self.handshakes_resumed),
        };
        let service = if self.service_is_latency {
            let latency = self.latency.hist();
            (!latency.is_empty()).then(|| latency.clone())
        } else {
            self.service_is_latency = true;
            self.service.take()
        };
        Some(StepInterval {
            counters,
            latency: self.latency.take(),
            service,
            connect: self.connect.take(),
            ttfb: self.ttfb.take(),
            handshake: self.handshake.take(),
        })
    }
}

struct WorkerScenario {
    iterations: u64,
    dropped_iterations: u64,
    connections_opened: u64,
    active_vus: u32,
    /// The highest `active_vus` since the last snapshot, so a short burst of VUs shows.
    active_vus_peak: u32,
    schedule_lag: Hist,
    /// Per check of the scenario: passes and fails since the last snapshot.
    checks: Vec<CheckCounts>,
    /// Some check counter is non-zero.
    checks_dirty: bool,
}

static NEXT_WORKER_ID: AtomicU64 = AtomicU64::new(0);

/// Metrics of one worker thread. Owned by that thread, never shared or locked; once a second
/// the worker calls [`take_snapshot`](Self::take_snapshot) and sends the result to the
/// collector.
///
/// The recording calls panic on a `scenario` or `step` index outside the [`Layout`].
pub struct WorkerMetrics {
    id: u64,
    /// The failing exchanges kept (methods in failing.rs).
    pub(crate) failing: crate::failing::FailingCapture,
    /// `--samples`: `None` (the default) costs a request one test of this field (methods in
    /// samples.rs).
    pub(crate) samples: Option<Box<crate::samples::SampleWriter>>,
    steps: Vec<Vec<WorkerStep>>,
    scenarios: Vec<WorkerScenario>,
}

impl WorkerMetrics {
    /// Allocates the counters and histograms for every step of `layout`.
    pub fn new(layout: &Layout) -> Self {
        WorkerMetrics {
            id: NEXT_WORKER_ID.fetch_add(1, Ordering::Relaxed),
            failing: crate::failing::FailingCapture::new(layout),
            samples: None,
            steps: layout
                .scenarios
                .iter()
                .map(|s| s.steps.iter().map(|_| WorkerStep::new()).collect())
                .collect(),
            scenarios: layout
                .scenarios
                .iter()
                .map(|s| WorkerScenario {
                    checks: vec![CheckCounts::default(); s.checks.len()],
                    checks_dirty: false,
                    iterations: 0,
                    dropped_iterations: 0,
                    connections_opened: 0,
                    active_vus: 0,
                    active_vus_peak: 0,
                    schedule_lag: new_hist(),
                })
                .collect(),
        }
    }

    /// Process-unique id of this worker's metrics (also in its snapshots).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Records one request of `step` of `scenario`: counter increments and histogram records
    /// only. Allocates only at a histogram's first record below 2^20 µs (its front's counters)
    /// and when a value of 2^20 µs or more first goes beyond its current range (at most ~12
    /// times per histogram over the worker's life).
    #[inline]
    pub fn record_request(&mut self, scenario: usize, step: usize, r: &RequestRecord) {
        let s = &mut self.steps[scenario][step];
        s.requests += 1;
        if let Some(f) = r.failure {
            s.failures += 1;
            s.by_class[f.index()] += 1;
        }
        if r.status != 0 {
            s.status[(r.status as usize).min(STATUS_SLOTS - 1)] += 1;
        }
        s.bytes_in += r.bytes_in;
        s.bytes_out += r.bytes_out;
        if s.service_is_latency && r.service_us != r.latency_us {
            // The first service time that differs: from here on it has its own histogram,
            // which starts as a copy of every latency so far (equal to their service times).
            s.service_is_latency = false;
            s.service.set_to(s.latency.hist());
        }
        s.latency.record(r.latency_us);
        if !s.service_is_latency {
            s.service.record(r.service_us);
        }
        if let Some(c) = r.connect_us {
            s.connect.record(c);
        }
        if let Some(t) = r.ttfb_us {
            s.ttfb.record(t);
        }
        if let Some(h) = r.handshake {
            if h.resumed {
                s.handshakes_resumed += 1;
            } else {
                s.handshakes_full += 1;
            }
            s.handshake.record(h.duration_us);
        }
    }

    /// Check `check` (index into the scenario's [`ScenarioLayout::checks`]) of `scenario` was
    /// evaluated: `passed` or not. Two counter increments, no allocation.
    #[inline]
    pub fn record_check(&mut self, scenario: usize, check: usize, passed: bool) {
        let s = &mut self.scenarios[scenario];
        let c = &mut s.checks[check];
        if passed {
            c.passes += 1;
        } else {
            c.fails += 1;
        }
        s.checks_dirty = true;
    }

    /// One iteration of `scenario` completed.
    #[inline]
    pub fn record_iteration(&mut self, scenario: usize) {
        self.scenarios[scenario].iterations += 1;
    }

    /// The open model could not start an iteration on time (no free VU) and dropped it.
    #[inline]
    pub fn record_dropped_iteration(&mut self, scenario: usize) {
        self.scenarios[scenario].dropped_iterations += 1;
    }

    /// `n` iterations dropped at once (arrivals still unstarted when the scenario's time is up).
    #[inline]
    pub fn record_dropped_iterations(&mut self, scenario: usize, n: u64) {
        self.scenarios[scenario].dropped_iterations += n;
    }

    /// How late an iteration started against its schedule, in µs.
    #[inline]
    pub fn record_schedule_lag(&mut self, scenario: usize, lag_us: u64) {
        record(&mut self.scenarios[scenario].schedule_lag, lag_us);
    }

    /// A new connection was opened for `scenario`.
    #[inline]
    pub fn record_connection_opened(&mut self, scenario: usize) {
        self.scenarios[scenario].connections_opened += 1;
    }

    /// Gauge: the VUs of `scenario` active on this worker now (kept across snapshots). A
    /// snapshot reports the interval's peak.
    #[inline]
    pub fn set_active_vus(&mut self, scenario: usize, n: u32) {
        let s = &mut self.scenarios[scenario];
        s.active_vus = n;
        s.active_vus_peak = s.active_vus_peak.max(n);
    }

    /// Everything recorded since the previous snapshot; resets the counters and histograms
    /// (the active-VU gauge keeps its value).
    pub fn take_snapshot(&mut self) -> Snapshot {
        if let Some(s) = &mut self.samples {
            // A killed run loses at most a second of samples.
            s.flush();
        }
        Snapshot {
            worker: self.id,
            failing: std::mem::take(&mut self.failing.pending),
            steps: self
                .steps
                .iter_mut()
                .map(|steps| steps.iter_mut().map(WorkerStep::take).collect())
                .collect(),
            scenarios: self
                .scenarios
                .iter_mut()
                .map(|s| ScenarioInterval {
                    iterations: std::mem::take(&mut s.iterations),
                    dropped_iterations: std::mem::take(&mut s.dropped_iterations),
                    connections_opened: std::mem::take(&mut s.connections_opened),
                    active_vus: u64::from(std::mem::replace(&mut s.active_vus_peak, s.active_vus)),
                    schedule_lag: take_hist(&mut s.schedule_lag),
                    checks: if std::mem::take(&mut s.checks_dirty) {
                        let taken = s.checks.clone();
                        s.checks
                            .iter_mut()
                            .for_each(|c| *c = CheckCounts::default());
                        taken
                    } else {
                        Vec::new()
                    },
                })
                .collect(),
        }
    }

    /// Bytes held by this worker's histograms now, their fronts' counters included (for
    /// sizing; not the hot path).
    pub fn histogram_bytes(&self) -> usize {
        let h = |h: &Hist| h.distinct_values() * std::mem::size_of::<u64>();
        self.steps
            .iter()
            .flatten()
            .map(|s| {
                [&s.latency, &s.service, &s.connect, &s.ttfb, &s.handshake]
                    .iter()
                    .map(|f| f.heap_bytes())
                    .sum::<usize>()
            })
            .sum::<usize>()
            + self
                .scenarios
                .iter()
                .map(|s| h(&s.schedule_lag))
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(latency_us: u64, service_us: u64) -> RequestRecord {
        RequestRecord {
            latency_us,
            service_us,
            ..RequestRecord::default()
        }
    }

    /// The service histogram each interval reports, next to a reference recorded plainly.
    fn service_of(w: &mut WorkerMetrics) -> Option<Hist> {
        let mut snapshot = w.take_snapshot();
        snapshot.steps[0][0].take().and_then(|s| s.service)
    }

    #[test]
    fn the_service_histogram_is_the_latencys_until_a_value_differs() {
        let mut w = WorkerMetrics::new(&Layout::new([("s", vec!["a"])]));
        let mut reference = new_hist();
        // An interval of equal figures: the service histogram is the latency's copy.
        for v in [120, 95, 4_000, 120] {
            w.record_request(0, 0, &request(v, v));
            record(&mut reference, v);
        }
        assert_eq!(service_of(&mut w), Some(reference.clone()));
        assert!(
            w.steps[0][0].service_is_latency,
            "reset for the next interval"
        );

        // Equal figures, then differing ones (the open model's late start): the earlier equal
        // service times are kept, and the later ones recorded on their own.
        reference.reset();
        for (latency, service) in [(50, 50), (70, 70), (900, 300), (80, 80), (1_000, 10)] {
            w.record_request(0, 0, &request(latency, service));
            record(&mut reference, service);
        }
        assert_eq!(service_of(&mut w), Some(reference.clone()));
        assert!(w.steps[0][0].service_is_latency);

        // An interval with no request reports none.
        assert_eq!(service_of(&mut w), None);

        // Differing from the first request on.
        reference.reset();
        for (latency, service) in [(900, 300), (40, 40)] {
            w.record_request(0, 0, &request(latency, service));
            record(&mut reference, service);
        }
        assert_eq!(service_of(&mut w), Some(reference));
    }

    #[test]
    fn every_histogram_of_a_step_is_as_if_recorded_directly() {
        use crate::front::tests::{assert_same, Rng};
        let mut w = WorkerMetrics::new(&Layout::new([("s", vec!["a", "b"])]));
        let mut rng = Rng(3);
        // The step's five histograms, recorded plainly.
        let mut refs: [Hist; 5] = std::array::from_fn(|_| new_hist());
        for interval in 0..12u64 {
            let n = [0, 1, 7, 500, 20_000][(interval % 5) as usize];
            // From this request on, service times differ from latencies (never: closed model).
            let differ_from = match interval % 3 {
                0 => u64::MAX,
                1 => 0,
                _ => n / 2,
            };
            for i in 0..n {
                let max = [3_000, 2_000_000, u64::MAX][(interval % 3) as usize];
                let latency_us = rng.log_uniform(max);
                let service_us = if i >= differ_from {
                    rng.log_uniform(latency_us)
                } else {
                    latency_us
                };
                let r = RequestRecord {
                    latency_us,
                    service_us,
                    connect_us: rng.next().is_multiple_of(4).then(|| rng.log_uniform(max)),
                    ttfb_us: (!rng.next().is_multiple_of(8)).then(|| rng.log_uniform(latency_us)),
                    handshake: rng.next().is_multiple_of(16).then(|| Handshake {
                        resumed: rng.next().is_multiple_of(2),
                        duration_us: rng.log_uniform(max),
                    }),
                    ..RequestRecord::default()
                };
                w.record_request(0, 0, &r);
                record(&mut refs[0], r.latency_us);
                record(&mut refs[1], r.service_us);
                if let Some(c) = r.connect_us {
                    record(&mut refs[2], c);
                }
                if let Some(t) = r.ttfb_us {
                    record(&mut refs[3], t);
                }
                if let Some(h) = r.handshake {
                    record(&mut refs[4], h.duration_us);
                }
            }
            let mut snapshot = w.take_snapshot();
            let got = snapshot.steps[0][0].take();
            assert_eq!(got.is_some(), n > 0, "interval {interval}");
            let got = got.map(|s| [s.latency, s.service, s.connect, s.ttfb, s.handshake]);
            for (k, reference) in refs.iter_mut().enumerate() {
                let want = take_hist(reference);
                let got = got.as_ref().and_then(|g| g[k].as_ref());
                assert_eq!(
                    got.is_some(),
                    want.is_some(),
                    "interval {interval} hist {k}"
                );
                if let (Some(got), Some(want)) = (got, want) {
                    assert_same(got, &want);
                }
            }
            assert!(w.steps[0][0].is_idle());
        }
    }
}
