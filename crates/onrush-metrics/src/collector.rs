//! The collector: merges the workers' snapshots second by second, feeds the live status line,
//! keeps the cumulative totals, and hands each closed second's lines of `intervals.jsonl` to
//! its spool (memory, or the results directory as the run goes: `spool.rs`); writes the
//! result files.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::aggregate::{Aggregate, RunMeta};
use onrush_results::Line;

use crate::files;
use crate::hist::{add_into, new_hist, us_to_ms, Encoder, Hist};
use crate::record::Layout;
use crate::second::{ScenarioSecond, SecondData, SecondTotals, StepSecond};
use crate::snapshot::{CheckCounts, ScenarioInterval, Snapshot, StepInterval};
use crate::spool::Spool;
use crate::summary::{Extras, Summary};

/// Identity of the run, given to [`Collector::new`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunInfo {
    /// Plan name (file stem), `run.plan` in `summary.json`.
    pub plan: String,
    /// Unix time in ms of the start of second 0.
    pub start_unix_ms: u64,
}

impl RunInfo {
    pub fn new(plan: impl Into<String>, start_unix_ms: u64) -> RunInfo {
        RunInfo {
            plan: plan.into(),
            start_unix_ms,
        }
    }

    /// A run of `plan` starting now (system clock).
    pub fn starting_now(plan: impl Into<String>) -> RunInfo {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        RunInfo::new(plan, ms)
    }
}

/// Figures of one closed second for the live status line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IntervalView {
    /// The second closed (index since start).
    pub second: u64,
    /// Requests completed in that second, over all steps.
    pub requests: u64,
    pub failures: u64,
    /// Requests per second in that second (== `requests`: the interval is 1 s).
    pub rps: f64,
    /// Latency percentiles of that second over all steps, ms; 0 when no request.
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Active VUs, all scenarios and workers, at the end of the second.
    pub active_vus: u64,
    pub iterations: u64,
    pub dropped_iterations: u64,
    /// Running totals since the start, including this second.
    pub total_requests: u64,
    pub total_failures: u64,
    pub total_dropped_iterations: u64,
}

#[derive(Clone, Debug)]
struct SecondAcc {
    steps: Vec<Vec<Option<StepInterval>>>,
    scenarios: Vec<ScenarioInterval>,
}

impl SecondAcc {
    fn new(layout: &Layout) -> Self {
        SecondAcc {
            steps: layout
                .scenarios
                .iter()
                .map(|s| s.steps.iter().map(|_| None).collect())
                .collect(),
            scenarios: layout
                .scenarios
                .iter()
                .map(|_| ScenarioInterval::default())
                .collect(),
        }
    }

    fn add(&mut self, snap: Snapshot) {
        for (acc, steps) in self.steps.iter_mut().zip(snap.steps) {
            for (a, s) in acc.iter_mut().zip(steps) {
                match (a.as_mut(), s) {
                    (_, None) => {}
                    (None, Some(s)) => *a = Some(s),
                    (Some(a), Some(s)) => a.merge(s),
                }
            }
        }
        for (a, mut s) in self.scenarios.iter_mut().zip(snap.scenarios) {
            s.active_vus = 0; // the gauge is taken per worker at close time
            a.merge(s);
        }
    }
}

/// Owned by the collector thread. Per second: [`add`](Self::add) each worker's snapshot, then
/// [`close_second`](Self::close_second). At the end: [`write_results`](Self::write_results).
///
/// What it keeps does not grow with the run — running totals and histograms, the open
/// seconds — except the lines of `intervals.jsonl` of a collector made with
/// [`new`](Self::new), which are held in memory until written; one made with
/// [`streaming`](Self::streaming) writes them to the results directory as each second closes.
pub struct Collector {
    layout: Layout,
    run: RunInfo,
    duration_s: Option<f64>,
    extra: Extras,
    /// Scenario of the layout → its index in `agg`, and the indexes there of its steps and of
    /// its checks (equal unless names repeat).
    index: Vec<(usize, Vec<usize>, Vec<usize>)>,
    pending: BTreeMap<u64, SecondAcc>,
    closed_through: Option<u64>,
    /// Last active-VU gauge per scenario of every worker seen.
    worker_vus: BTreeMap<u64, Vec<u64>>,
    agg: Aggregate,
    /// The lines of `intervals.jsonl` (header excluded), in file order: seconds close in
    /// increasing order (a late snapshot counts in the next open second).
    spool: Spool,
    second_latency: Hist,
    /// Reused from second to second: an encoder holds a zlib compressor (~160 KiB of tables).
    enc: Option<Encoder>,
    total_requests: u64,
    total_failures: u64,
    total_dropped: u64,
    late_snapshots: u64,
    /// The seconds closed by the latest `close_second` / `finish` call, in detail.
    closed: Vec<SecondData>,
}

impl Collector {
    /// A collector that keeps the lines of `intervals.jsonl` in memory until
    /// [`write_results`](Self::write_results) (tests, short programs).
    pub fn new(layout: Layout, run: RunInfo) -> Self {
        let mut agg = Aggregate::new(&layout);
        let index = layout.scenarios.iter().map(|s| agg.add_layout(s)).collect();
        Collector {
            layout,
            run,
            duration_s: None,
            extra: Extras::default(),
            index,
            pending: BTreeMap::new(),
            closed_through: None,
            worker_vus: BTreeMap::new(),
            agg,
            spool: Spool::Memory(Vec::new()),
            second_latency: new_hist(),
            enc: None,
            total_requests: 0,
            total_failures: 0,
            total_dropped: 0,
            late_snapshots: 0,
            closed: Vec::new(),
        }
    }

    /// A collector that writes `dir/intervals.jsonl` (creating `dir`) as the run goes: the
    /// header now, marked `"unfinished": true`, then each second's lines in one `write` as
    /// the second closes. [`write_intervals`](Self::write_intervals) (or `write_results`) into
    /// `dir` at the end replaces the header with the final one. A run killed in between leaves
    /// a readable file holding every closed second (docs/results.md).
    pub fn streaming(layout: Layout, run: RunInfo, dir: &Path) -> io::Result<Self> {
        let mut c = Collector::new(layout, run);
        let header = c.intervals_header();
        c.spool = Spool::file(dir, &header)?;
        Ok(c)
    }

    /// Why the streamed `intervals.jsonl` stopped being written (a full disk, ...), if it
    /// did; the run can say so at once, and writing the results at the end fails with it.
    pub fn write_error(&self) -> Option<&io::Error> {
        self.spool.error()
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn run_info(&self) -> &RunInfo {
        &self.run
    }

    /// Moves the run's start `by` later: the time the engine spent before its first second
    /// (an open model's warm-up) is not the run's. Each second's unix time, the `unfinished`
    /// header already streamed (rewritten: no second has been written yet) and the final
    /// header follow.
    pub fn delay_start(&mut self, by: std::time::Duration) {
        self.run.start_unix_ms = self.run.start_unix_ms.saturating_add(by.as_millis() as u64);
        let header = self.intervals_header();
        if let Err(e) = self.spool.rewrite_header(&header) {
            // The file's header keeps the earlier time; the final one is written at the end.
            eprintln!("warning: rewriting the header of intervals.jsonl: {e}");
        }
    }

    /// Adds one worker's snapshot of `second` (index since start). A snapshot for a second
    /// already closed is counted in the next open second (see [`late_snapshots`](Self::late_snapshots)),
    /// so totals stay exact.
    pub fn add(&mut self, second: u64, mut snap: Snapshot) {
        if !snap.failing.is_empty() {
            // The run's earliest few of each kind, whichever worker saw them.
            let mut all = self.extra.failing_exchanges.take().unwrap_or_default();
            all.append(&mut snap.failing);
            self.extra.failing_exchanges = Some(onrush_results::exchanges::keep_first(all));
        }
        self.worker_vus.insert(
            snap.worker,
            snap.scenarios.iter().map(|s| s.active_vus).collect(),
        );
        self.add_steps(second, snap);
    }

    /// Adds step data of `second` that is part of a worker's snapshot, without its VU gauge
    /// (which [`add`](Self::add) of the rest sets): for the live merge, which hands each
    /// streamed step line over as it arrives instead of keeping a whole decoded snapshot per
    /// agent (its histograms are most of a controller's memory).
    pub(crate) fn add_steps(&mut self, second: u64, snap: Snapshot) {
        let second = match self.closed_through {
            Some(c) if second <= c => {
                self.late_snapshots += 1;
                c + 1
            }
            _ => second,
        };
        let layout = &self.layout;
        self.pending
            .entry(second)
            .or_insert_with(|| SecondAcc::new(layout))
            .add(snap);
    }

    /// Snapshots that arrived after their second was closed.
    pub fn late_snapshots(&self) -> u64 {
        self.late_snapshots
    }

    /// Merges everything added for `second` (and closes any earlier second still open), records
    /// its interval lines and totals, and returns the figures for the live status. Closing a
    /// second already closed changes nothing and returns a view with zero interval figures.
    pub fn close_second(&mut self, second: u64) -> IntervalView {
        self.closed.clear();
        if matches!(self.closed_through, Some(c) if second <= c) {
            return IntervalView {
                second,
                active_vus: self.active_vus_now(),
                total_requests: self.total_requests,
                total_failures: self.total_failures,
                total_dropped_iterations: self.total_dropped,
                ..IntervalView::default()
            };
        }
        let earlier: Vec<u64> = self.pending.range(..second).map(|(&t, _)| t).collect();
        for t in earlier {
            self.close_one(t);
        }
        self.close_one(second)
    }

    /// Closes every second that still has data added.
    pub fn finish(&mut self) {
        self.closed.clear();
        while let Some((&t, _)) = self.pending.iter().next() {
            self.close_one(t);
        }
    }

    /// The seconds closed by the latest [`close_second`](Self::close_second) or
    /// [`finish`](Self::finish) call, oldest first, per step and per scenario with their
    /// histograms: for live exporters. Usually one second; several when earlier seconds were
    /// still open; none when the call closed nothing. Call it after each `close_second` to see
    /// every second exactly once.
    ///
    /// ```
    /// use onrush_metrics::*;
    /// let layout = Layout::new([("browse", ["home"])]);
    /// let mut worker = WorkerMetrics::new(&layout);
    /// let mut collector = Collector::new(layout, RunInfo::new("shop", 1_767_225_600_000));
    /// worker.record_request(0, 0, &RequestRecord { latency_us: 2_150, ..Default::default() });
    /// collector.add(0, worker.take_snapshot());
    /// collector.add(1, worker.take_snapshot());
    /// collector.close_second(1);
    /// let seconds = collector.closed_seconds();
    /// assert_eq!(seconds.len(), 2);
    /// assert_eq!((seconds[0].unix_ms, seconds[0].steps[0].requests), (1_767_225_600_000, 1));
    /// assert_eq!(seconds[0].steps[0].latency_stats().p99, 2.151);
    /// assert!(seconds[1].steps.is_empty());
    /// ```
    pub fn closed_seconds(&self) -> &[SecondData] {
        &self.closed
    }

    fn active_vus_now(&self) -> u64 {
        self.worker_vus.values().flatten().sum()
    }

    fn close_one(&mut self, t: u64) -> IntervalView {
        let acc = self
            .pending
            .remove(&t)
            .unwrap_or_else(|| SecondAcc::new(&self.layout));
        let mut enc = self.enc.take().unwrap_or_default();
        let mut view = IntervalView {
            second: t,
            ..IntervalView::default()
        };
        let mut detail = SecondData {
            second: t,
            unix_ms: self
                .run
                .start_unix_ms
                .saturating_add(t.saturating_mul(1000)),
            scenarios: Vec::with_capacity(acc.scenarios.len()),
            steps: Vec::new(),
            groups: Vec::new(),
            totals: SecondTotals::default(),
        };
        self.second_latency.reset();
        for (si, (steps, mut sc)) in acc.steps.into_iter().zip(acc.scenarios).enumerate() {
            let scen = &self.layout.scenarios[si];
            sc.active_vus = self.worker_vus.values().filter_map(|v| v.get(si)).sum();
            view.active_vus += sc.active_vus;
            view.iterations += sc.iterations;
            view.dropped_iterations += sc.dropped_iterations;
            let check_names: Vec<(&str, &str)> = scen
                .checks
                .iter()
                .map(|(name, step)| {
                    let step = scen.steps.get(*step).map_or("", String::as_str);
                    (step, name.as_str())
                })
                .collect();
            let line = files::scenario_line(t, &scen.name, &sc, &check_names, &mut enc);
            self.spool.push(&Line::Scenario(line));
            let (asi, ref steps_idx, ref checks_idx) = self.index[si];
            if sc.checks.is_empty() {
                self.agg.add_scenario(t, asi, &sc);
            } else {
                // Layout check indexes → the aggregate's.
                let layout_checks = std::mem::take(&mut sc.checks);
                for (i, c) in layout_checks.iter().enumerate() {
                    detail.totals.checks.add(c);
                    let ai = checks_idx[i];
                    if sc.checks.len() <= ai {
                        sc.checks.resize(ai + 1, CheckCounts::default());
                    }
                    sc.checks[ai].add(c);
                }
                self.agg.add_scenario(t, asi, &sc);
                sc.checks = layout_checks;
            }
            detail.totals.connections_opened += sc.connections_opened;
            detail
                .scenarios
                .push(ScenarioSecond::new(si, &scen.name, sc));
            for (sti, d) in steps.into_iter().enumerate() {
                let Some(d) = d else { continue };
                if scen.is_group(sti) {
                    let line = files::step_line(t, &scen.name, &scen.steps[sti], &d, &mut enc);
                    self.spool.push(&Line::Group(line));
                    self.agg.add_step(t, asi, steps_idx[sti], &d);
                    detail
                        .groups
                        .push(StepSecond::new(si, sti, &scen.name, &scen.steps[sti], d));
                    continue;
                }
                view.requests += d.counters.requests;
                view.failures += d.counters.failures;
                detail.totals.bytes_in += d.counters.bytes_in;
                detail.totals.bytes_out += d.counters.bytes_out;
                if let Some(h) = &d.latency {
                    add_into(&mut self.second_latency, h);
                }
                let line = files::step_line(t, &scen.name, &scen.steps[sti], &d, &mut enc);
                self.spool.push(&Line::Step(line));
                self.agg.add_step(t, asi, steps_idx[sti], &d);
                detail
                    .steps
                    .push(StepSecond::new(si, sti, &scen.name, &scen.steps[sti], d));
            }
        }
        self.total_requests += view.requests;
        self.total_failures += view.failures;
        self.total_dropped += view.dropped_iterations;
        view.rps = view.requests as f64;
        if !self.second_latency.is_empty() {
            view.p50_ms = us_to_ms(self.second_latency.value_at_quantile(0.50));
            view.p99_ms = us_to_ms(self.second_latency.value_at_quantile(0.99));
        }
        view.total_requests = self.total_requests;
        view.total_failures = self.total_failures;
        view.total_dropped_iterations = self.total_dropped;
        let tot = &mut detail.totals;
        tot.requests = view.requests;
        tot.failures = view.failures;
        tot.iterations = view.iterations;
        tot.dropped_iterations = view.dropped_iterations;
        tot.active_vus = view.active_vus;
        tot.latency = (!self.second_latency.is_empty()).then(|| self.second_latency.clone());
        tot.total_requests = view.total_requests;
        tot.total_failures = view.total_failures;
        tot.total_dropped_iterations = view.total_dropped_iterations;
        self.closed.push(detail);
        self.enc = Some(enc);
        self.closed_through = Some(self.closed_through.map_or(t, |c| c.max(t)));
        self.spool.end_second();
        view
    }

    /// The run's length for the rates (`run.duration_s`). Without it, the number of seconds
    /// closed is used. Set it to the measured elapsed time at the end of the run.
    pub fn set_duration(&mut self, d: Duration) {
        self.duration_s = Some(d.as_secs_f64());
    }

    /// Top-level `"interrupted"` in `summary.json`.
    pub fn set_interrupted(&mut self, interrupted: bool) {
        self.extra.interrupted = Some(interrupted);
    }

    /// Top-level `"vars"` in `summary.json`.
    pub fn set_vars(&mut self, vars: &BTreeMap<String, String>) {
        self.extra.vars = Some(vars.clone());
    }

    /// Any caller-defined top-level field of `summary.json` (reserved keys are ignored).
    pub fn set_extra(&mut self, key: impl Into<String>, value: Value) {
        self.extra.set(key, value);
    }

    /// A copy of this collector with every second still open closed, whose lines are thrown
    /// away: it only computes the summary.
    fn closed_copy(&self) -> Collector {
        let mut c = Collector {
            layout: self.layout.clone(),
            run: self.run.clone(),
            duration_s: self.duration_s,
            extra: self.extra.clone(),
            index: self.index.clone(),
            pending: self.pending.clone(),
            closed_through: self.closed_through,
            worker_vus: self.worker_vus.clone(),
            agg: self.agg.clone(),
            spool: Spool::Memory(Vec::new()),
            second_latency: new_hist(),
            enc: None,
            total_requests: self.total_requests,
            total_failures: self.total_failures,
            total_dropped: self.total_dropped,
            late_snapshots: self.late_snapshots,
            closed: Vec::new(),
        };
        c.finish();
        c
    }

    fn meta(&self) -> RunMeta {
        RunMeta {
            plan: self.run.plan.clone(),
            start_unix_ms: self.run.start_unix_ms,
            duration_s: self.duration_s,
            merged_from: None,
        }
    }

    /// The summary, as `summary.json` holds it. Seconds added but not closed are included.
    pub fn summary(&self) -> Summary {
        if self.pending.is_empty() {
            self.agg.summary(&self.meta(), &self.extra)
        } else {
            let c = self.closed_copy();
            c.agg.summary(&c.meta(), &c.extra)
        }
    }

    /// Writes `summary.json` and `intervals.jsonl` into `dir` (created when missing), after
    /// closing every second still open.
    pub fn write_results(&mut self, dir: &Path) -> io::Result<()> {
        self.finish();
        let summary = self.summary();
        self.write_files(dir, &summary)
    }

    /// Like [`write_results`](Self::write_results), but writes `summary` as `summary.json`:
    /// for a caller that took [`summary`](Self::summary) and added fields to it
    /// (`set_interrupted`, `set_vars`, `set_extra`). `intervals.jsonl` is this collector's.
    pub fn write_results_with(&mut self, dir: &Path, summary: &Summary) -> io::Result<()> {
        self.finish();
        self.write_files(dir, summary)
    }

    /// Writes only `intervals.jsonl` into `dir` (created when missing), after closing every
    /// second still open: for a caller that writes `summary.json` itself once it has
    /// everything that goes in it (thresholds read the intervals first). A
    /// [`streaming`](Self::streaming) collector given its own directory replaces the
    /// header of the file it wrote (with `duration_s`, no longer `unfinished`).
    pub fn write_intervals(&mut self, dir: &Path) -> io::Result<()> {
        self.finish();
        let header = self.intervals_header();
        self.spool.write_to(dir, &header)
    }

    /// The header of `intervals.jsonl`.
    fn intervals_header(&self) -> onrush_results::Header {
        let seconds = self.agg.seconds.count() as f64;
        files::header(
            &self.run.plan,
            self.run.start_unix_ms,
            crate::hist::round3(self.duration_s.unwrap_or(seconds)),
            &self.agg.layout(),
            None,
        )
    }

    fn write_files(&mut self, dir: &Path, summary: &Summary) -> io::Result<()> {
        self.write_intervals(dir)?;
        summary.write_to(&dir.join(onrush_results::SUMMARY_FILE))
    }
}
