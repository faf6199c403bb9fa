//! Starts the workers, gathers their snapshots second by second, shows live status, and stops on
//! time or on a signal.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use onrush_export::Exporter;
use onrush_metrics::{Collector, RunInfo};
use onrush_protocol::Protocol;
use tokio::sync::watch;

use super::prepare::Prepared;
use super::worker::{Message, Worker};
use crate::monitor::{self, GeneratorSecond, Monitor, Verdict};
use crate::signals;
use crate::status::{GracefulStop, Status};

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
        }
    }
}

/// What a run produced: the collector holding every closed second, and how the run ended.
pub struct RunOutcome {
    pub collector: Collector,
    pub interrupted: bool,
    pub elapsed: Duration,
    /// Whether onrush itself was the bottleneck, and the per-second figures behind the verdict.
    pub generator: Verdict,
    pub generator_seconds: Vec<GeneratorSecond>,
    /// The threshold that stopped the run early, if one did.
    pub aborted_by: Option<onrush_sla::ThresholdResult>,
    /// A step with `on_failure: stop_test` failed and stopped the run.
    pub stopped_by_failure: bool,
    /// `(scenario, reason)` of every early stop (stop_test, test data run out).
    pub stops: Vec<(String, String)>,
}

/// Runs `prepared` to completion (or until SIGINT/SIGTERM, or `stop` from a threshold or a
/// step) and returns the filled collector. Every closed second also goes to `options.exporters`
/// as it happens.
pub fn run<P: Protocol>(prepared: Prepared<P>, options: RunOptions) -> RunOutcome {
    let prepared = Arc::new(prepared);
    let workers = options.threads.max(1);
    let mut collector = Collector::new(prepared.layout.clone(), options.run_info);
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
    // Workers start their clocks at the same instant, a little ahead, so that thread start-up
    // is not counted as schedule lag.
    let start = Instant::now() + Duration::from_millis(50);
    let handles: Vec<_> = (0..workers)
        .map(|index| {
            let worker = Worker {
                index,
                count: workers,
                start,
                prepared: prepared.clone(),
                messages: tx.clone(),
                stop: stop_rx.clone(),
                tids: tids.clone(),
            };
            thread::Builder::new()
                .name(format!("onrush-worker-{index}"))
                .spawn(move || worker.run())
                .expect("spawning a worker thread")
        })
        .collect();
    drop(tx);
    while tids
        .iter()
        .any(|t| t.load(std::sync::atomic::Ordering::Relaxed) == 0)
        && Instant::now() < start
    {
        thread::sleep(Duration::from_millis(1));
    }
    monitor.reset_baseline();

    let mut status = Status::new(options.quiet, options.planned, graceful_stop(&prepared));
    let mut seconds = SecondTracker::new(workers);
    let mut interrupted = false;
    let mut stop_test_seen = false;
    let mut aborted_by = None;
    let mut exporters = options.exporters;
    exporters.begin(&prepared.layout);
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Message {
                worker,
                second,
                snapshot,
                last,
            }) => {
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
            status.second(second, &view, start.elapsed());
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
    while let Some(second) = seconds.flush() {
        let view = collector.close_second(second);
        for data in collector.closed_seconds() {
            exporters.second(data);
        }
        monitor.close_second(second);
        status.second(second, &view, start.elapsed());
    }
    exporters.finish();
    status.finish();
    RunOutcome {
        collector,
        interrupted,
        elapsed: start.elapsed(),
        generator: monitor.verdict(),
        generator_seconds: monitor.history().to_vec(),
        aborted_by,
        stopped_by_failure: stop_test_seen,
        stops: prepared
            .stops
            .notes
            .lock()
            .map(|n| n.clone())
            .unwrap_or_default(),
    }
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

/// Knows when every worker has delivered a given second.
struct SecondTracker {
    /// Per second (index - base): how many workers delivered it.
    counts: Vec<usize>,
    /// The second each finished worker ended in.
    done_at: Vec<Option<u64>>,
    next: u64,
}

impl SecondTracker {
    fn new(workers: usize) -> Self {
        SecondTracker {
            counts: Vec::new(),
            done_at: vec![None; workers],
            next: 0,
        }
    }

    fn received(&mut self, worker: usize, second: u64, done: bool) {
        let i = second as usize;
        if self.counts.len() <= i {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
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
        let got = self.counts.get(s as usize).copied().unwrap_or(0);
        if finished_before == self.done_at.len() {
            return None;
        }
        if got + finished_before == self.done_at.len() {
            self.next += 1;
            Some(s)
        } else {
            None
        }
    }

    /// After all workers ended: the seconds not closed yet.
    fn flush(&mut self) -> Option<u64> {
        if (self.next as usize) < self.counts.len() {
            self.next += 1;
            Some(self.next - 1)
        } else {
            None
        }
    }
}
