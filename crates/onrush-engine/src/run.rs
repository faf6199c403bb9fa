//! Starts the workers, gathers their snapshots second by second, shows live status, writes
//! each closed second to the results directory, and stops on time or on a signal.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use onrush_export::Exporter;
use onrush_metrics::{Collector, RunInfo};
use onrush_plan::LoadModel;
use onrush_protocol::Protocol;
use onrush_results::{
    Event, EventsWriter, GeneratorWriter, EVENTS_FILE, GENERATOR_FILE, INTERVALS_FILE,
};
use tokio::sync::watch;

use super::prepare::Prepared;
use super::worker::{Message, Worker};
use crate::finish::FinishError;
use crate::monitor::{self, Cause, Monitor, Verdict};
use crate::signals;
use crate::start::StartGate;
use crate::status::{GracefulStop, Status};
use crate::steer::{RunState, Steering};
use onrush_results::VusNotStarted;

pub struct RunOptions {
    pub threads: usize,
    pub quiet: bool,
    /// Planned length, when known (closed iteration counts make it open-ended), for the status line.
    pub planned: Option<Duration>,
    pub run_info: RunInfo,
    pub nofile_limit: u64,
    pub start_unix_ms: u64,
    /// Thresholds with `abort_on_fail`: checked once a second on the run so far.
    pub abort_thresholds: Vec<onrush_plan::Threshold>,
    /// Live exporters (Prometheus, InfluxDB), fed every closed second.
    pub exporters: Vec<Box<dyn onrush_export::Exporter>>,
    /// The results directory, written as the run goes: `intervals.jsonl` and
    /// `generator.jsonl` get each second as it closes, so a run that is killed leaves what
    /// it had measured. `None`: nothing is written (the collector keeps the intervals in
    /// memory); [`finish`](crate::finish) needs it.
    pub out_dir: Option<PathBuf>,
    /// This process's share of the load in a distributed run (`None`: all of it).
    pub segment: Option<Segment>,
    /// When the workers start (an agent of a distributed run starts when its controller says;
    /// its open-model warm-up has until shortly before then); `None`: once every worker has
    /// warmed up (start.rs), at most 10 s from now.
    pub start_at: Option<Instant>,
    /// Where in the plan's schedule this process joins (zero: at its start). A spare agent
    /// that takes over a lost agent's segment joins the run where it is: its workers' clocks
    /// read `join_at` at `start_at`, so ramps and arrivals go on from there, what was due
    /// before is not done, and its seconds are numbered as the run's (they merge with the
    /// others'). Scenarios bounded by iterations are not run by a joining process: how many
    /// of the segment's iterations are left is not known to it.
    pub join_at: Duration,
    /// `--samples`: a line per request appended to this file, which the caller made with its
    /// header ([`onrush_metrics::create_samples_file`]); `None`: no line, no cost.
    pub samples: Option<PathBuf>,
    /// Pause, resume, stop and live load changes (the live page's API); `None`: the run
    /// cannot be steered, and pays nothing for it.
    pub steering: Option<Arc<Steering>>,
    /// Every threshold of the plan: with `steering`, judged each second on the run so far and
    /// published for the live page (`Steering::published`); unused without.
    pub thresholds: Vec<onrush_plan::Threshold>,
}

/// The share of a plan's load one process runs, when several run it together: the plan's load
/// is split between `total_workers` workers, as one process splits it between its threads (VU
/// k and arrival i belong to worker k mod W and i mod W, shared iterations are divided, see
/// worker.rs), and this process runs workers `first_worker..first_worker + threads`. The
/// totals over every process are the plan's exactly, for any number of processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub first_worker: usize,
    pub total_workers: usize,
    /// This process's workers (its threads).
    pub workers: usize,
}

impl Segment {
    /// A whole run on `threads` workers.
    pub fn whole(threads: usize) -> Segment {
        Segment {
            first_worker: 0,
            total_workers: threads.max(1),
            workers: threads.max(1),
        }
    }

    /// Whether closed-model VU `k` (from 0) is run by this segment.
    pub fn owns_vu(&self, k: u32) -> bool {
        let w = k as usize % self.total_workers;
        (self.first_worker..self.first_worker + self.workers).contains(&w)
    }
}

impl RunOptions {
    /// Options for a run with no live status, no exporter and no abort threshold (tests,
    /// agents that report through their own exporter).
    pub fn quiet(threads: usize, plan_name: &str) -> Self {
        let run_info = RunInfo::starting_now(plan_name);
        RunOptions {
            threads,
            quiet: true,
            planned: None,
            start_unix_ms: run_info.start_unix_ms,
            run_info,
            nofile_limit: 0,
            abort_thresholds: Vec::new(),
            exporters: Vec::new(),
            out_dir: None,
            segment: None,
            start_at: None,
            join_at: Duration::ZERO,
            samples: None,
            steering: None,
            thresholds: Vec::new(),
        }
    }
}

/// What a run produced: the collector (running totals; the seconds are in `out_dir`, or in
/// the collector's memory without one), and how the run ended.
pub struct RunOutcome {
    pub collector: Collector,
    pub interrupted: bool,
    /// Wall time from the start until the last worker finished.
    pub elapsed: Duration,
    /// Closed-model scenarios whose VUs did not all start.
    pub vus_not_started: Vec<VusNotStarted>,
    /// The longest scenario whose length the plan fixes (`duration`, stages), if any.
    pub scheduled: Option<Duration>,
    /// Whether onrush itself was the bottleneck (its per-second figures are in
    /// `out_dir/generator.jsonl`).
    pub generator: Verdict,
    /// [`RunOptions::out_dir`].
    pub out_dir: Option<PathBuf>,
    /// Why `generator.jsonl` stopped being written, if it did.
    pub generator_error: Option<FinishError>,
    /// The threshold that stopped the run early, if one did.
    pub aborted_by: Option<onrush_sla::ThresholdResult>,
    /// A step with `on_failure: stop_test` failed and stopped the run.
    pub stopped_by_failure: bool,
    /// `(scenario, reason)` of every early stop (stop_test, test data run out).
    pub stops: Vec<(String, String)>,
    /// Per failure class that occurred: the first message a protocol gave for it.
    pub failure_examples: BTreeMap<String, String>,
    /// The variables kept by scenarios that asked (`ScenarioRun::keep_vars`): a setup's.
    pub vars: Vec<(String, onrush_plan::VarValue)>,
}

/// Runs `prepared` to completion (or until SIGINT/SIGTERM/SIGHUP, or `stop` from a threshold
/// or a step) and returns the filled collector. Every closed second also goes to
/// `options.exporters` and to `options.out_dir` as it happens. Fails only when the files of
/// `out_dir` cannot be created, before the run starts.
pub fn run<P: Protocol>(
    prepared: Prepared<P>,
    options: RunOptions,
) -> Result<RunOutcome, FinishError> {
    let prepared = Arc::new(prepared);
    let workers = options.threads.max(1);
    let segment = options.segment.unwrap_or(Segment::whole(workers));
    assert_eq!(
        segment.workers, workers,
        "a segment has one worker per thread"
    );
    let at = |path: PathBuf| move |error| FinishError { path, error };
    let (mut collector, mut generator_out) = match &options.out_dir {
        Some(dir) => (
            Collector::streaming(prepared.layout.clone(), options.run_info, dir)
                .map_err(at(dir.join(INTERVALS_FILE)))?,
            Some(GeneratorWriter::create(dir).map_err(at(dir.join(GENERATOR_FILE)))?),
        ),
        None => (
            Collector::new(prepared.layout.clone(), options.run_info),
            None,
        ),
    };
    let mut generator_error = None;
    let mut write_warned = false;
    let (tx, rx) = mpsc::channel();
    let (stop_tx, stop_rx) = watch::channel(false);
    let tids = monitor::worker_tids(workers);
    let mut monitor = Monitor::new(
        monitor::Setup {
            threads: workers,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            targets: prepared.targets.clone(),
            source_addresses: prepared.max_source_addresses.max(1) as u64,
            nofile_limit: options.nofile_limit,
            start_unix_ms: options.start_unix_ms,
        },
        tids.clone(),
    );
    // Workers start their clocks at the same instant, once they have warmed up (open-model
    // VUs connected ahead of the load), so that neither thread start-up nor the warm-up is
    // counted in the run's time or its schedule lag.
    let gate = Arc::new(match options.start_at {
        Some(at) => StartGate::at(at),
        None => StartGate::after_warm_up(),
    });
    let warm_up_began = Instant::now();
    let handles: Vec<_> = (0..workers)
        .map(|index| {
            let worker = Worker {
                index: segment.first_worker + index,
                local_index: index,
                count: segment.total_workers,
                gate: gate.clone(),
                join_at: options.join_at,
                prepared: prepared.clone(),
                messages: tx.clone(),
                stop: stop_rx.clone(),
                tids: tids.clone(),
                samples: options.samples.clone(),
                steering: options.steering.clone(),
            };
            thread::Builder::new()
                .name(format!("onrush-worker-{index}"))
                .spawn(move || worker.run())
                .expect("spawning a worker thread")
        })
        .collect();
    drop(tx);
    // The warm-up's sockets are counted while the warm workers wait (see
    // Monitor::count_sockets_before_start).
    let start = gate.open_when_ready(workers, signals::interrupted, |warm_connections| {
        monitor.count_sockets_before_start(warm_connections)
    });
    if options.start_at.is_none() {
        // The run's seconds are numbered from its start, after the warm-up.
        let warm_up = start.saturating_duration_since(warm_up_began);
        collector.delay_start(warm_up);
        monitor.delay_start(warm_up);
    }
    while tids
        .iter()
        .any(|t| t.load(std::sync::atomic::Ordering::Relaxed) == 0)
        && Instant::now() < start
    {
        thread::sleep(Duration::from_millis(1));
    }
    monitor.reset_baseline();

    let mut status = Status::new(options.quiet, options.planned, graceful_stop(&prepared))
        .with_iterations(iterations_planned(&prepared));
    let mut seconds = SecondTracker::new(workers, options.join_at.as_secs());
    let mut interrupted = false;
    let mut stop_test_seen = false;
    let mut aborted_by = None;
    let mut failure_examples = BTreeMap::new();
    let mut exporters = options.exporters;
    exporters.begin(&prepared.layout);
    let steering = options.steering.clone();
    // For the live page: the thresholds judged each second, and those judged at the end only
    // (they need the run's histograms).
    let live_thresholds: (Vec<onrush_plan::Threshold>, Vec<String>) = {
        let (now, at_end): (Vec<_>, Vec<_>) = options
            .thresholds
            .iter()
            .cloned()
            .partition(|t| !onrush_sla::needs_histograms(std::slice::from_ref(t)));
        (now, at_end.into_iter().map(|t| t.source).collect())
    };
    let mut events = options.out_dir.as_deref().map(EventsWriter::new);
    // Each stage of a ramp that begins is an event (a marker on the report's charts).
    let mut stages = stage_events(&prepared, options.join_at, options.start_unix_ms);
    let mut stopped_by_request = false;
    if let Some(st) = &steering {
        st.set_state(if st.paused() {
            RunState::Paused
        } else {
            RunState::Running
        });
    }
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Message {
                worker,
                second,
                snapshot,
                last,
                failure_examples: examples,
            }) => {
                for (class, example) in examples {
                    failure_examples
                        .entry(class.as_str().to_string())
                        .or_insert(example);
                }
                monitor.observe(second, &snapshot);
                collector.add(second, snapshot);
                seconds.received(worker, second, last);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        while let Some(second) = seconds.next_complete() {
            let view = collector.close_second(second);
            for data in collector.closed_seconds() {
                exporters.second(data);
            }
            if let Some(warning) = monitor.close_second(second) {
                status.note(&warning);
            }
            write_generator_second(&monitor, &mut generator_out, &mut generator_error);
            if !write_warned {
                if let Some(e) = write_problem(&collector, &generator_error) {
                    write_warned = true;
                    status.note(&format!(
                        "warning: {e}: the results directory no longer gets the seconds; the run goes on"
                    ));
                }
            }
            status.second(second, &view, start.elapsed());
            if let Some(st) = &steering {
                publish(st, &live_thresholds, &mut collector, &mut monitor, start);
            }
            if aborted_by.is_none() && !options.abort_thresholds.is_empty() {
                collector.set_duration(start.elapsed());
                let verdict = monitor.verdict();
                if let Some(lost) = onrush_sla::abort_check(
                    &options.abort_thresholds,
                    &collector.summary(),
                    start.elapsed(),
                    Some(&verdict.verdict),
                ) {
                    status.note(&format!(
                        "threshold lost: {} ({}: {}); stopping the test (abort_on_fail)",
                        lost.threshold, lost.scope, lost.measured_text
                    ));
                    aborted_by = Some(lost);
                    let _ = stop_tx.send(true);
                }
            }
        }
        if !stop_test_seen
            && prepared
                .stops
                .stop_test
                .load(std::sync::atomic::Ordering::Relaxed)
        {
            stop_test_seen = true;
            status.note(
                "stopping the test: a step failed with `on_failure: stop_test`; writing results",
            );
            let _ = stop_tx.send(true);
        }
        let schedule_now = start.elapsed() + options.join_at;
        while stages
            .last()
            .is_some_and(|e| e.t <= schedule_now.as_secs_f64())
        {
            let event = stages.pop().expect("looked at");
            if let Some(Err(e)) = events.as_mut().map(|w| w.write(&event)) {
                status.note(&format!(
                    "warning: cannot write {EVENTS_FILE}: {e}; the run goes on"
                ));
                events = None;
            }
        }
        if let Some(st) = &steering {
            for (at, event) in st.take_events() {
                let t = at.saturating_duration_since(start).as_secs_f64();
                let t = (t * 1000.0).round() / 1000.0 + options.join_at.as_secs_f64();
                status.note(&format!("{} ({})", event.detail, event.by));
                if let Some(Err(e)) = events.as_mut().map(|w| w.write(&Event { t, ..event })) {
                    status.note(&format!(
                        "warning: cannot write {}: {e}; the run goes on",
                        events
                            .as_ref()
                            .map_or(EVENTS_FILE.into(), |w| w.path().display().to_string())
                    ));
                    events = None;
                }
            }
            if !interrupted && st.stop_requested() {
                interrupted = true;
                stopped_by_request = true;
                let _ = stop_tx.send(true);
            }
        }
        if !interrupted && signals::interrupted() {
            interrupted = true;
            status.note(
                "interrupted: stopping and writing results; requests in flight are cut and \
                 counted as `interrupted` (press Ctrl-C again to exit at once)",
            );
            let _ = stop_tx.send(true);
        }
    }
    for h in handles {
        let _ = h.join();
    }
    let stopped_early = interrupted
        || aborted_by.is_some()
        || stop_test_seen
        || prepared.stops.notes.lock().is_ok_and(|n| !n.is_empty());
    // A process that joined late runs only part of its VUs' time: it does not judge them.
    let vus_not_started = if options.join_at.is_zero() {
        vus_not_started(&prepared, &segment, stopped_early)
    } else {
        Vec::new()
    };
    if let Some(cause) = not_started_cause(&vus_not_started) {
        status.note(&format!("warning: {}. Fix: {}", cause.detail, cause.fix));
        monitor.add_cause(cause);
    }
    while let Some(second) = seconds.flush() {
        let view = collector.close_second(second);
        for data in collector.closed_seconds() {
            exporters.second(data);
        }
        monitor.close_second(second);
        write_generator_second(&monitor, &mut generator_out, &mut generator_error);
        status.second(second, &view, start.elapsed());
    }
    exporters.finish();
    status.finish();
    if let Some(st) = &steering {
        st.set_state(RunState::Stopping);
    }
    let mut stops = prepared
        .stops
        .notes
        .lock()
        .map(|n| n.clone())
        .unwrap_or_default();
    if stopped_by_request {
        stops.push((
            String::new(),
            "stopped through the live page or its API (POST /api/stop)".to_string(),
        ));
    }
    let vars = prepared
        .scenarios
        .iter()
        .filter(|s| s.keep_vars)
        .flat_map(|s| s.kept_vars.lock().map(|v| v.clone()).unwrap_or_default())
        .collect();
    Ok(RunOutcome {
        vars,
        failure_examples,
        collector,
        interrupted,
        elapsed: start.elapsed(),
        vus_not_started,
        scheduled: prepared
            .scenarios
            .iter()
            .filter_map(|s| s.load.duration())
            .max(),
        generator: monitor.verdict(),
        out_dir: options.out_dir,
        generator_error,
        aborted_by,
        stopped_by_failure: stop_test_seen,
        stops,
    })
}

/// The stages of every ramp after its first, as events at their start (latest first: the
/// run loop pops them as their time comes). A scenario of one stage (a constant rate or VU
/// count) has none; a process that joined late skips those before it joined.
fn stage_events<P: Protocol>(
    prepared: &Prepared<P>,
    join_at: Duration,
    start_unix_ms: u64,
) -> Vec<Event> {
    let mut list = Vec::new();
    for s in &prepared.scenarios {
        let steps: Vec<(Duration, String)> = match &s.load {
            LoadModel::Open { stages, .. } if stages.len() > 1 => stages
                .iter()
                .map(|st| {
                    (
                        st.over,
                        format!(
                            "to {}/s over {}",
                            st.per_second,
                            onrush_units::show_duration(st.over)
                        ),
                    )
                })
                .collect(),
            LoadModel::ClosedStages { stages, .. } if stages.len() > 1 => stages
                .iter()
                .map(|st| {
                    (
                        st.over,
                        format!(
                            "to {} VUs over {}",
                            st.vus,
                            onrush_units::show_duration(st.over)
                        ),
                    )
                })
                .collect(),
            _ => continue,
        };
        let n = steps.len();
        let mut at = Duration::ZERO;
        for (k, (over, what)) in steps.into_iter().enumerate() {
            if k > 0 && at >= join_at {
                list.push(Event {
                    t: at.as_secs_f64(),
                    unix_ms: start_unix_ms + at.as_millis() as u64,
                    kind: "stage".into(),
                    scenario: Some(s.name.clone()),
                    detail: format!("{}: stage {} of {n}, {what}", s.name, k + 1),
                    ..Event::default()
                });
            }
            at += over;
        }
    }
    list.sort_by(|a, b| b.t.total_cmp(&a.t));
    list
}

/// For the live page: the thresholds judged on the run so far, the generator's health.
fn publish(
    steering: &Steering,
    (now, at_end): &(Vec<onrush_plan::Threshold>, Vec<String>),
    collector: &mut Collector,
    monitor: &mut Monitor,
    start: Instant,
) {
    let verdict = monitor.verdict();
    let outcomes = if now.is_empty() {
        Vec::new()
    } else {
        collector.set_duration(start.elapsed());
        onrush_sla::outcomes(&onrush_sla::evaluate(
            now,
            &collector.summary(),
            Some(&verdict.verdict),
        ))
    };
    steering.publish(crate::steer::Published {
        thresholds: outcomes,
        thresholds_at_end: at_end.clone(),
        generator_verdict: verdict.verdict,
        generator_message: verdict.message,
        generator: monitor.latest().cloned(),
    });
}

/// Appends the second the monitor closed last to `generator.jsonl`; the first failure is kept
/// (and ends the writing: a file with a second missing would look whole).
fn write_generator_second(
    monitor: &Monitor,
    out: &mut Option<GeneratorWriter>,
    error: &mut Option<FinishError>,
) {
    let (Some(w), Some(line)) = (out.as_mut(), monitor.latest()) else {
        return;
    };
    if let Err(e) = w.write(line) {
        *error = Some(FinishError {
            path: w.path().to_path_buf(),
            error: e,
        });
        *out = None;
    }
}

/// Closed-model scenarios some of whose expected VUs never started, and why.
fn vus_not_started<P: Protocol>(
    prepared: &Prepared<P>,
    segment: &Segment,
    stopped_early: bool,
) -> Vec<VusNotStarted> {
    prepared
        .scenarios
        .iter()
        .filter_map(|s| {
            let planned = s.vus_expected(segment);
            let started = s
                .vus_started
                .load(std::sync::atomic::Ordering::Relaxed)
                .min(planned);
            (started < planned).then(|| VusNotStarted {
                scenario: s.name.clone(),
                planned,
                started,
                not_started: planned - started,
                reason: if stopped_early || s.stopped.load(std::sync::atomic::Ordering::Relaxed) {
                    "the run stopped before they started".to_string()
                } else {
                    "the run ended before onrush could start them: starting a VU (its task and \
                     first connection) took longer than the plan gave"
                        .to_string()
                },
            })
        })
        .collect()
}

/// The generator's cause for VUs that never started, unless the run was stopped (then their
/// not starting is the stop's doing, and only counted).
fn not_started_cause(list: &[VusNotStarted]) -> Option<Cause> {
    let unreached: Vec<&VusNotStarted> = list
        .iter()
        .filter(|v| !v.reason.starts_with("the run stopped"))
        .collect();
    let (planned, missing) = unreached
        .iter()
        .fold((0, 0), |(p, m), v| (p + v.planned, m + v.not_started));
    (missing > 0).then(|| Cause {
        cause: "vus_not_started".to_string(),
        first_s: 0,
        detail: format!(
            "{missing} of {planned} VUs never started ({}): the run ended before onrush could \
             start them",
            unreached
                .iter()
                .map(|v| format!("{}: {} of {}", v.scenario, v.started, v.planned))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        fix: "start VUs over a ramp (stages) instead of all at once, give the run more time, \
              or spread the VUs over more load machines"
            .to_string(),
    })
}

impl RunOutcome {
    /// The time the run covered, over which every rate of the summary is taken: at least the
    /// scheduled length when the run went its whole course (an open model's last arrival may
    /// finish well before its `duration` ends: 5 arrivals of `rate: 1/s, duration: 5s` are
    /// 1 req/s over 5 s, not 1.25 over the 4 s until the last one finished), the wall time when
    /// it was stopped early (Ctrl-C, a threshold, `stop_test`, test data run out) or has no
    /// fixed length (iterations).
    pub fn covered(&self) -> Duration {
        let stopped_early = self.interrupted
            || self.aborted_by.is_some()
            || self.stopped_by_failure
            || !self.stops.is_empty();
        match self.scheduled {
            Some(scheduled) if !stopped_early => self.elapsed.max(scheduled),
            _ => self.elapsed,
        }
    }
}

/// A failed write to the results directory, in words naming the file.
fn write_problem(collector: &Collector, generator: &Option<FinishError>) -> Option<String> {
    if let Some(e) = collector.write_error() {
        return Some(format!("cannot write {INTERVALS_FILE}: {e}"));
    }
    generator.as_ref().map(ToString::to_string)
}

/// The run's iterations in all when every scenario is bounded by iterations (the live status
/// shows them done / planned); `None` when any scenario runs for a duration.
fn iterations_planned<P: Protocol>(prepared: &Prepared<P>) -> Option<u64> {
    prepared.scenarios.iter().try_fold(0u64, |sum, s| {
        let n = match s.load {
            LoadModel::ClosedIterations {
                vus, iterations, ..
            } => u64::from(vus).saturating_mul(iterations),
            LoadModel::SharedIterations { iterations, .. } => iterations,
            LoadModel::ClosedStages { .. } | LoadModel::Open { .. } => return None,
        };
        Some(sum.saturating_add(n))
    })
}

/// When every scenario has a duration: when the last ends, and when the last graceful stop
/// ends (for the live status).
fn graceful_stop<P: Protocol>(prepared: &Prepared<P>) -> Option<GracefulStop> {
    prepared.scenarios.iter().try_fold(
        GracefulStop {
            end: Duration::ZERO,
            cut_at: Duration::ZERO,
        },
        |g, s| {
            let d = s.load.duration()?;
            Some(GracefulStop {
                end: g.end.max(d),
                cut_at: g.cut_at.max(d + s.graceful_stop),
            })
        },
    )
}

/// Knows when every worker has delivered a given second. Holds the seconds not closed yet
/// only (a few), not the run's.
struct SecondTracker {
    /// Per second not closed yet: how many workers delivered it.
    counts: BTreeMap<u64, usize>,
    /// The highest second delivered.
    last: Option<u64>,
    /// The second each finished worker ended in.
    done_at: Vec<Option<u64>>,
    next: u64,
}

impl SecondTracker {
    /// `first`: the first second the workers deliver (a process that joined late starts
    /// at the second of the run it joined in).
    fn new(workers: usize, first: u64) -> Self {
        SecondTracker {
            counts: BTreeMap::new(),
            last: None,
            done_at: vec![None; workers],
            next: first,
        }
    }

    fn received(&mut self, worker: usize, second: u64, done: bool) {
        // A second already closed is the collector's business (it counts it in the next one).
        if second >= self.next {
            *self.counts.entry(second).or_insert(0) += 1;
        }
        self.last = Some(self.last.map_or(second, |l| l.max(second)));
        if done {
            self.done_at[worker] = Some(second);
        }
    }

    /// The next second that every worker has delivered (a finished worker delivers nothing
    /// after the second it ended in).
    fn next_complete(&mut self) -> Option<u64> {
        let s = self.next;
        let finished_before = self
            .done_at
            .iter()
            .filter(|d| matches!(d, Some(d) if *d < s))
            .count();
        let got = self.counts.get(&s).copied().unwrap_or(0);
        if finished_before == self.done_at.len() {
            return None;
        }
        if got + finished_before == self.done_at.len() {
            self.counts.remove(&s);
            self.next += 1;
            Some(s)
        } else {
            None
        }
    }

    /// After all workers ended: the seconds not closed yet.
    fn flush(&mut self) -> Option<u64> {
        if self.last.is_some_and(|l| self.next <= l) {
            self.counts.remove(&self.next);
            self.next += 1;
            Some(self.next - 1)
        } else {
            None
        }
    }
}
