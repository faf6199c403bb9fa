//! The generator watches itself: once a second it samples its own CPU per worker thread, RSS,
//! schedule lag, dropped iterations, open descriptors, connect rate and the sockets it holds
//! towards each target, and decides whether onrush itself was the bottleneck.
//!
//! Runs on the collector thread (never on a worker), at the moment a second is closed.

mod proc;
mod rules;
mod sock_diag;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use hdrhistogram::Histogram;
use onrush_metrics::Snapshot;

pub use rules::{Cause, Verdict};

/// Thread ids of the workers, written by each worker when it starts (0 until then).
pub type WorkerTids = Arc<Vec<AtomicI32>>;

pub fn worker_tids(workers: usize) -> WorkerTids {
    Arc::new((0..workers).map(|_| AtomicI32::new(0)).collect())
}

/// The calling thread's kernel thread id.
pub fn current_tid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// What the monitor knows about the run it watches.
pub struct Setup {
    pub threads: usize,
    pub cores: usize,
    pub targets: Vec<SocketAddr>,
    /// Source addresses connections are spread over (1 when the kernel chooses).
    pub source_addresses: u64,
    pub nofile_limit: u64,
    /// Unix ms of the run's start, to print wall-clock times.
    pub start_unix_ms: u64,
}

/// One second of the generator's own figures: a line of `generator.jsonl`, whose type
/// onrush-results owns.
pub use onrush_results::GeneratorLine as GeneratorSecond;

#[derive(Clone)]
struct CpuTicks {
    at: std::time::Instant,
    process: Option<u64>,
    workers: Vec<Option<u64>>,
}

/// Per-second data gathered from the workers' snapshots before the second closes.
#[derive(Default)]
struct Pending {
    lag: Option<Histogram<u64>>,
    requests: u64,
    failures: u64,
    dropped: u64,
    connections: u64,
}

/// The longest the socket count may be carried over from an earlier second (see
/// [`Monitor::close_second`]).
const SOCKETS_RECOUNT: std::time::Duration = std::time::Duration::from_secs(10);

/// While the counts are far from every limit and were not growing, a second that opened
/// connections recounts only once this much time has passed since the last count (see
/// [`Monitor::close_second`]).
const SOCKETS_RECOUNT_CALM: std::time::Duration = std::time::Duration::from_secs(5);

/// "Far from a limit": under this share of the port range and of the descriptor limit (the
/// warnings start at 80% and 90%). "Not growing": the last count was at most
/// `CALM_GROWTH_SHARE` of the port range above the one before it.
const CALM_SHARE: f64 = 0.05;
const CALM_GROWTH_SHARE: f64 = 0.01;

pub struct Monitor {
    setup: Setup,
    tids: WorkerTids,
    ticks_per_s: f64,
    port_capacity: u64,
    last: Option<CpuTicks>,
    pending: BTreeMap<u64, Pending>,
    /// The last second closed.
    latest: Option<GeneratorSecond>,
    rules: rules::Rules,
    files: proc::ProcFiles,
    /// The last count of the sockets towards the targets and of the open descriptors, and
    /// when it was taken.
    sockets: proc::SocketCounts,
    open_fds: u64,
    sockets_counted_at: Option<std::time::Instant>,
    /// The sockets' total at the count before the last one (None: fewer than two counts).
    sockets_before: Option<u64>,
    /// Connections opened before the start (the warm-up's) already in `sockets`: the first
    /// second closed, which counts them as opened, need not count the sockets again for them.
    counted_before_start: u64,
}

impl Monitor {
    pub fn new(setup: Setup, tids: WorkerTids) -> Self {
        let port_capacity =
            proc::ephemeral_ports().unwrap_or(28_232) * setup.source_addresses.max(1);
        let rules = rules::Rules::new(setup.threads, setup.cores, setup.start_unix_ms);
        let mut monitor = Monitor {
            setup,
            tids,
            ticks_per_s: proc::clock_ticks(),
            port_capacity,
            last: None,
            pending: BTreeMap::new(),
            latest: None,
            rules,
            // Opened now, before the load takes the descriptors.
            files: proc::ProcFiles::open(),
            sockets: proc::SocketCounts::default(),
            open_fds: 0,
            sockets_counted_at: None,
            sockets_before: None,
            counted_before_start: 0,
        };
        monitor.last = Some(monitor.cpu_now());
        monitor
    }

    fn cpu_now(&mut self) -> CpuTicks {
        let tids: Vec<i32> = self
            .tids
            .iter()
            .map(|t| t.load(Ordering::Relaxed))
            .collect();
        // A worker that registered late is opened now (normally all are, at the baseline).
        if tids
            .iter()
            .zip(self.files.task_ids())
            .any(|(t, open)| *t != open)
        {
            self.files.open_tasks(&tids);
        }
        let workers = tids
            .iter()
            .enumerate()
            .map(|(i, &tid)| match tid {
                0 => None,
                _ => self.files.cpu_ticks(Some(i)),
            })
            .collect();
        CpuTicks {
            at: std::time::Instant::now(),
            process: self.files.cpu_ticks(None),
            workers,
        }
    }

    /// Starts the CPU accounting afresh (once the workers have registered their thread ids),
    /// and opens the workers' stat files while descriptors are free.
    pub fn reset_baseline(&mut self) {
        let tids: Vec<i32> = self
            .tids
            .iter()
            .map(|t| t.load(Ordering::Relaxed))
            .collect();
        self.files.open_tasks(&tids);
        self.last = Some(self.cpu_now());
    }

    /// Counts the sockets towards the targets before the run starts, once the warm-up has
    /// opened `warm_connections` (StartGate::open_when_ready: the workers wait then, so the
    /// count delays no arrival). Without it the first second closed would count them, as it
    /// opened connections: with 3,000 warm connections that walk of `/proc/net/tcp` took
    /// ~30 ms of the main thread, on the worker's CPU in a pinned run, and at 60,000/s the
    /// worker then spent most of the next second catching up.
    pub fn count_sockets_before_start(&mut self, warm_connections: u64) {
        self.count_sockets_and_files();
        self.counted_before_start = warm_connections;
    }

    /// Counts the sockets towards the targets and the open descriptors (see
    /// [`Monitor::close_second`] for when).
    fn count_sockets_and_files(&mut self) {
        if self.sockets_counted_at.is_some() {
            self.sockets_before = Some(self.sockets.total);
        }
        if !self.setup.targets.is_empty() {
            self.sockets = self.files.sockets_towards(&self.setup.targets);
        }
        self.open_fds = self.files.open_fds().unwrap_or(0);
        self.sockets_counted_at = Some(std::time::Instant::now());
    }

    /// Takes what it needs from a worker's snapshot of `second` (before the collector gets it).
    pub fn observe(&mut self, second: u64, snapshot: &Snapshot) {
        let p = self.pending.entry(second).or_default();
        p.requests += snapshot.requests();
        p.failures += snapshot.failures();
        for s in 0..snapshot.scenario_count() {
            p.dropped += snapshot.dropped_iterations(s);
            p.connections += snapshot.connections_opened(s);
            if let Some(h) = snapshot.schedule_lag(s) {
                match &mut p.lag {
                    Some(lag) => {
                        let _ = lag.add(h);
                    }
                    None => p.lag = Some(h.clone()),
                }
            }
        }
    }

    /// Samples the process as `second` closes; returns the warning to show when this second
    /// starts a saturation.
    pub fn close_second(&mut self, second: u64) -> Option<String> {
        let now = self.cpu_now();
        let before = self.last.take().unwrap_or_else(|| now.clone());
        let elapsed = (now.at - before.at).as_secs_f64();
        // CPU times tick every 10 ms: over less than half a second the figure would be noise.
        let percent = |after: Option<u64>, before: Option<u64>| match (after, before) {
            (Some(a), Some(b)) if elapsed >= 0.5 => Some(
                (a.saturating_sub(b) as f64 / self.ticks_per_s / elapsed * 1000.0).round() / 10.0,
            ),
            _ => None,
        };
        let worker_cpu_percent = now
            .workers
            .iter()
            .zip(&before.workers)
            .map(|(a, b)| percent(*a, *b))
            .collect();
        let cpu_percent = percent(now.process, before.process);
        self.last = Some(now);

        let pending = self.pending.remove(&second).unwrap_or_default();
        // The warm-up's connections are in the first second's, and were counted before it.
        let opened_uncounted = pending
            .connections
            .saturating_sub(std::mem::take(&mut self.counted_before_start));
        let ms = |q: f64| {
            pending
                .lag
                .as_ref()
                .filter(|h| !h.is_empty())
                .map(|h| h.value_at_quantile(q) as f64 / 1000.0)
        };
        // The sockets towards the targets are counted by a sock_diag dump (or, without one,
        // from /proc/net/tcp*, which the kernel writes out line by line for every socket of
        // the namespace: with 3,000 connections held that took ~20 ms of system time, on the
        // main thread, which shares its CPU with a worker, and so made every second's first
        // arrivals ~20 ms late; at 60,000/s, 1,200 of them: the lag p99). The open descriptors are counted by listing /proc/self/fd,
        // ~1 ms per 1,000. Both are counted again only when they can have grown: in a second
        // that opened a connection or failed a request (a refused connect), else at most every
        // SOCKETS_RECOUNT; in between the last count carries over (it can only have fallen,
        // or grown by files a step opened, which the next recount sees). The warm-up's
        // connections were counted before the start.
        //
        // A test that opens a connection per request opens some every second, but its counts
        // usually stay where they were: the target closes first, or the connections are
        // closed long before their ports could run out. The dump's cost does not stay small,
        // though: the kernel visits every TCP socket of the host to answer it, the target's
        // TIME_WAITs included (26,000-84,000 of them on loopback at ~15,000 connections/s;
        // ~1.5 ms a dump from cold), which was up to 2.6% of the tool's CPU. So while the last
        // count is far from both limits and was not growing, such a second recounts only every
        // SOCKETS_RECOUNT_CALM. A failed request (a port or a descriptor short) recounts at
        // once, and a count that grew, or came near a limit, goes back to every second.
        let at = std::time::Instant::now();
        let since = self
            .sockets_counted_at
            .map(|counted| at.duration_since(counted));
        let stale = since.is_none_or(|since| since >= SOCKETS_RECOUNT);
        let calm = self.calm() && since.is_some_and(|since| since < SOCKETS_RECOUNT_CALM);
        if (opened_uncounted > 0 && !calm) || pending.failures > 0 || stale {
            self.count_sockets_and_files();
        }
        let sockets = self.sockets;
        let sample = GeneratorSecond {
            t: second,
            cpu_percent,
            worker_cpu_percent,
            rss_mb: self
                .files
                .rss_bytes()
                .map_or(0.0, |b| (b as f64 / 1048576.0 * 10.0).round() / 10.0),
            open_fds: self.open_fds,
            connections_opened: pending.connections,
            schedule_lag_p50_ms: ms(0.5),
            schedule_lag_p99_ms: ms(0.99),
            schedule_lag_max_ms: ms(1.0),
            dropped_iterations: pending.dropped,
            sockets_to_targets: sockets.total,
            time_wait: sockets.time_wait,
            port_usage_percent: (sockets.total as f64 / self.port_capacity.max(1) as f64 * 1000.0)
                .round()
                / 10.0,
        };
        let warning = self
            .rules
            .check(&sample, self.setup.nofile_limit, pending.requests);
        self.latest = Some(sample);
        warning
    }

    /// Whether the last two counts were far from the port and descriptor limits and the last
    /// was not growing: see [`Monitor::close_second`].
    fn calm(&self) -> bool {
        let ports = self.port_capacity as f64;
        let Some(before) = self.sockets_before else {
            return false;
        };
        let far = |n: u64, limit: f64| limit <= 0.0 || (n as f64) < limit * CALM_SHARE;
        far(self.sockets.total, ports)
            && far(self.open_fds, self.setup.nofile_limit as f64)
            && (self.sockets.total.saturating_sub(before) as f64) <= ports * CALM_GROWTH_SHARE
    }

    /// The sample of the second closed last: a line of `generator.jsonl`, written as the run
    /// goes (the monitor keeps no history: the verdict folds its peaks in as seconds close).
    pub fn latest(&self) -> Option<&GeneratorSecond> {
        self.latest.as_ref()
    }

    /// A cause found at the end of the run (VUs that never started).
    /// Moves the run's start `by` later (an open model's warm-up is not the run's): the times
    /// of day the verdict names follow.
    pub fn delay_start(&mut self, by: std::time::Duration) {
        self.rules.delay_start(by);
    }

    pub fn add_cause(&mut self, cause: rules::Cause) {
        self.rules.add_cause(cause);
    }

    /// The verdict on the seconds closed so far (at the end: the run's).
    pub fn verdict(&mut self) -> Verdict {
        let peak = self.files.peak_rss_bytes();
        self.rules.verdict(peak)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use onrush_metrics::{FailureClass, Layout, RequestRecord, WorkerMetrics};
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::AtomicI32;

    /// A listener on a loopback address of the test's own (127.0.0.`n`): sockets are counted
    /// by their remote address, and a port that another test's listener had a moment ago may
    /// still have that test's TIME_WAIT sockets towards it on 127.0.0.1 (seen: 6 counted for
    /// 2 held, CI-equivalent run, 2026-11-28).
    fn target_listener(n: u8) -> TcpListener {
        TcpListener::bind((std::net::Ipv4Addr::new(127, 0, 0, n), 0)).unwrap()
    }

    fn monitor_of(target: SocketAddr) -> Monitor {
        let setup = Setup {
            threads: 1,
            cores: 1,
            targets: vec![target],
            source_addresses: 1,
            nofile_limit: 1024,
            start_unix_ms: 0,
        };
        Monitor::new(setup, Arc::new(vec![AtomicI32::new(0)]))
    }

    /// A second's snapshot in which `opened` connections were opened.
    fn opened(opened: u64) -> Snapshot {
        let mut metrics = WorkerMetrics::new(&Layout::new([("s", ["GET /"])]));
        for _ in 0..opened {
            metrics.record_connection_opened(0);
        }
        metrics.take_snapshot()
    }

    #[test]
    fn the_warm_ups_sockets_are_counted_before_the_start_not_when_the_first_second_closes() {
        let listener = target_listener(101);
        let target = listener.local_addr().unwrap();
        let warm: Vec<_> = (0..3)
            .map(|_| TcpStream::connect(target).unwrap())
            .collect();
        let mut monitor = monitor_of(target);
        monitor.count_sockets_before_start(warm.len() as u64);

        // Two more connections once the run started, not in the second that closes: the
        // warm-up's three (counted already) do not make that second count again.
        let later: Vec<_> = (0..2)
            .map(|_| TcpStream::connect(target).unwrap())
            .collect();
        monitor.observe(0, &opened(3));
        monitor.close_second(0);
        assert_eq!(monitor.latest().unwrap().sockets_to_targets, 3);

        // A second that opened a connection counts them again.
        monitor.observe(1, &opened(1));
        monitor.close_second(1);
        assert_eq!(monitor.latest().unwrap().sockets_to_targets, 5);
        drop((warm, later));
    }

    #[test]
    fn connections_opened_far_from_the_limits_recount_every_few_seconds_failures_at_once() {
        let listener = target_listener(102);
        let target = listener.local_addr().unwrap();
        let mut monitor = monitor_of(target);
        monitor.setup.nofile_limit = 1 << 30;
        let mut held: Vec<_> = (0..2)
            .map(|_| TcpStream::connect(target).unwrap())
            .collect();
        let second = |monitor: &mut Monitor, t: u64, snapshot: &Snapshot| {
            monitor.observe(t, snapshot);
            monitor.close_second(t);
            monitor.latest().unwrap().sockets_to_targets
        };
        assert_eq!(second(&mut monitor, 0, &opened(2)), 2, "the first count");
        held.push(TcpStream::connect(target).unwrap());
        assert_eq!(
            second(&mut monitor, 1, &opened(1)),
            3,
            "one count is not a trend: counted again"
        );
        held.push(TcpStream::connect(target).unwrap());
        assert_eq!(
            second(&mut monitor, 2, &opened(1)),
            3,
            "far from the limits and barely growing: carried over"
        );
        let mut failed = WorkerMetrics::new(&Layout::new([("s", ["GET /"])]));
        failed.record_request(
            0,
            0,
            &RequestRecord {
                latency_us: 1,
                service_us: 1,
                connect_us: None,
                ttfb_us: None,
                bytes_in: 0,
                bytes_out: 0,
                status: 0,
                failure: Some(FailureClass::ConnectRefused),
                handshake: None,
            },
        );
        assert_eq!(
            second(&mut monitor, 3, &failed.take_snapshot()),
            4,
            "a failure counts at once"
        );
        // Near the port limit, every second that opened a connection counts.
        monitor.port_capacity = 60;
        held.push(TcpStream::connect(target).unwrap());
        assert_eq!(second(&mut monitor, 4, &opened(1)), 5);
        drop(held);
    }

    #[test]
    fn without_a_count_before_the_start_the_first_second_counts() {
        let listener = target_listener(103);
        let target = listener.local_addr().unwrap();
        let mut monitor = monitor_of(target);
        let warm: Vec<_> = (0..3)
            .map(|_| TcpStream::connect(target).unwrap())
            .collect();
        monitor.observe(0, &opened(3));
        monitor.close_second(0);
        assert_eq!(monitor.latest().unwrap().sockets_to_targets, 3);
        drop(warm);
    }
}
