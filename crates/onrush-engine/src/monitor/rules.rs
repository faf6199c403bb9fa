//! When is the generator the bottleneck? The rules, each with its cause and its fix.

use std::collections::BTreeMap;

use super::GeneratorSecond;

/// A worker thread this busy for this many consecutive seconds cannot take more work.
const HOT_CPU_PERCENT: f64 = 90.0;
const HOT_SECONDS: u32 = 2;
/// Iterations starting this late (p99 of a second, two seconds in a row) mean the pacing no
/// longer holds; a single second this bad is enough.
const LAG_P99_MS: f64 = 10.0;
const LAG_P99_MS_AT_ONCE: f64 = 100.0;
/// A worker this busy while iterations start late is short of CPU (it may not reach
/// HOT_CPU_PERCENT on a VM whose other tenants take their share).
const BUSY_CPU_PERCENT: f64 = 70.0;
/// Share of the local ports towards the targets at which new connections start failing soon.
const PORTS_PERCENT: f64 = 80.0;
/// Share of the open-files limit.
const FDS_SHARE: f64 = 0.9;
/// A hot worker completing fewer requests than this in a second spends its CPU inside
/// requests (bodies being decoded, extractors on big bodies), not on their number: more
/// machines would not help.
const FEW_REQUESTS: u64 = 20;

/// A cause of saturation, and the end-of-run verdict (`summary.json` "generator"): the types
/// onrush-results owns, so that what is written is what readers parse.
pub use onrush_results::{GeneratorVerdict as Verdict, SaturationCause as Cause};

pub struct Rules {
    threads: usize,
    cores: usize,
    start_unix_ms: u64,
    hot: Vec<u32>,
    late_seconds: u32,
    causes: BTreeMap<String, Cause>,
    saturated_from: Option<u64>,
    peaks: Peaks,
}

/// The run's peaks, folded second by second: the seconds themselves go to `generator.jsonl`
/// as they close, so memory does not grow with the run.
#[derive(Default)]
struct Peaks {
    cpu_percent: f64,
    worker_cpu_percent: f64,
    rss_mb: f64,
    schedule_lag_p99_ms: Option<f64>,
    open_fds: u64,
    sockets_to_targets: u64,
    time_wait: u64,
}

impl Peaks {
    fn add(&mut self, s: &GeneratorSecond) {
        if let Some(c) = s.cpu_percent {
            self.cpu_percent = self.cpu_percent.max(c);
        }
        if let Some(w) = s
            .worker_cpu_percent
            .iter()
            .flatten()
            .copied()
            .reduce(f64::max)
        {
            self.worker_cpu_percent = self.worker_cpu_percent.max(w);
        }
        self.rss_mb = self.rss_mb.max(s.rss_mb);
        if let Some(lag) = s.schedule_lag_p99_ms {
            self.schedule_lag_p99_ms = Some(self.schedule_lag_p99_ms.map_or(lag, |m| m.max(lag)));
        }
        self.open_fds = self.open_fds.max(s.open_fds);
        self.sockets_to_targets = self.sockets_to_targets.max(s.sockets_to_targets);
        self.time_wait = self.time_wait.max(s.time_wait);
    }
}

impl Rules {
    /// Moves the run's start `by` later (see [`super::Monitor::delay_start`]).
    pub fn delay_start(&mut self, by: std::time::Duration) {
        self.start_unix_ms = self.start_unix_ms.saturating_add(by.as_millis() as u64);
    }

    pub fn new(threads: usize, cores: usize, start_unix_ms: u64) -> Self {
        Rules {
            threads,
            cores,
            start_unix_ms,
            hot: vec![0; threads],
            late_seconds: 0,
            causes: BTreeMap::new(),
            saturated_from: None,
            peaks: Peaks::default(),
        }
    }

    /// Applies the rules to one second (in which `requests` requests completed); returns a
    /// warning when this second starts a saturation.
    pub fn check(
        &mut self,
        s: &GeneratorSecond,
        nofile_limit: u64,
        requests: u64,
    ) -> Option<String> {
        self.peaks.add(s);
        let mut found: Vec<Cause> = Vec::new();
        let mut hottest: Option<(usize, f64)> = None;
        for (i, pct) in s.worker_cpu_percent.iter().enumerate() {
            let Some(pct) = *pct else { continue };
            if i >= self.hot.len() {
                break;
            }
            self.hot[i] = if pct >= HOT_CPU_PERCENT {
                self.hot[i] + 1
            } else {
                0
            };
            if self.hot[i] >= HOT_SECONDS && hottest.is_none_or(|(_, p)| pct > p) {
                hottest = Some((i, pct));
            }
        }
        if let Some((worker, pct)) = hottest {
            let (detail, fix) = if requests < FEW_REQUESTS {
                (
                    format!(
                        "CPU {pct:.0}% on worker {worker} for {requests} completed requests in a second"
                    ),
                    "the CPU goes into a few requests, not their number: large or compressed \
                     response bodies being decoded (a decompression bomb?), extractors or body \
                     checks on big bodies. Lower http.body_limit, set http.decompress: false, or \
                     extract from smaller responses; more machines would not help"
                        .to_string(),
                )
            } else {
                (format!("CPU {pct:.0}% on worker {worker}"), self.cpu_fix())
            };
            found.push(Cause {
                cause: "cpu".to_string(),
                first_s: s.t + 1 - HOT_SECONDS as u64,
                detail,
                fix,
            });
        }
        if s.dropped_iterations > 0 {
            found.push(Cause {
                cause: "max_vus".to_string(),
                first_s: s.t,
                detail: format!(
                    "{} arrivals dropped in one second: every VU the plan allows (max_vus) was busy",
                    s.dropped_iterations
                ),
                fix: "raise max_vus: an open model holds about rate × response time VUs at once \
                      (1,000/s × 0.2 s = 200), more when the target slows down; or lower the rate"
                    .to_string(),
            });
        }
        let lag = s.schedule_lag_p99_ms.unwrap_or(0.0);
        self.late_seconds = if lag > LAG_P99_MS {
            self.late_seconds + 1
        } else {
            0
        };
        if self.late_seconds >= 2 || lag > LAG_P99_MS_AT_ONCE {
            let busiest = s
                .worker_cpu_percent
                .iter()
                .flatten()
                .copied()
                .fold(0.0, f64::max);
            let fix = if busiest >= BUSY_CPU_PERCENT {
                self.cpu_fix()
            } else if s.dropped_iterations > 0 {
                // Arrivals waited for a free VU: the lag is max_vus's, found above.
                "iterations waited for a free VU: raise max_vus (see the max_vus cause)".to_string()
            } else {
                "the workers were delayed without being busy: look for other busy processes, CPU \
                 throttling or a small VM share (onrush doctor lists them)"
                    .to_string()
            };
            found.push(Cause {
                cause: "schedule_lag".to_string(),
                first_s: s.t + 1 - u64::from(self.late_seconds.clamp(1, 2)),
                detail: format!(
                    "schedule lag p99 {lag:.1} ms with the busiest worker at {busiest:.0}% CPU"
                ),
                fix,
            });
        }
        if s.port_usage_percent >= PORTS_PERCENT {
            found.push(Cause {
                cause: "ports".to_string(),
                first_s: s.t,
                detail: format!(
                    "{} sockets towards the target ({} in TIME_WAIT) use {:.0}% of the local ports",
                    s.sockets_to_targets, s.time_wait, s.port_usage_percent
                ),
                fix: "keep connections alive (http.connections: per_vu), or set \
                      net.ipv4.tcp_tw_reuse=1, widen net.ipv4.ip_local_port_range (e.g. \"1024 65535\"), \
                      or spread connections over more source addresses (http.source_addresses)"
                    .to_string(),
            });
        }
        if nofile_limit > 0 && s.open_fds as f64 >= nofile_limit as f64 * FDS_SHARE {
            found.push(Cause {
                cause: "open_files".to_string(),
                first_s: s.t,
                detail: format!("{} of {} file descriptors open", s.open_fds, nofile_limit),
                fix: format!(
                    "raise the open-files limit (ulimit -n {}; LimitNOFILE= for a systemd service)",
                    (nofile_limit * 4).max(65_536)
                ),
            });
        }
        if found.is_empty() {
            return None;
        }
        let starts = self.saturated_from.is_none();
        let first = found.iter().map(|c| c.first_s).min().unwrap_or(s.t);
        self.saturated_from.get_or_insert(first);
        let details: Vec<String> = found.iter().map(|c| c.detail.clone()).collect();
        for cause in found {
            self.causes.entry(cause.cause.clone()).or_insert(cause);
        }
        starts.then(|| {
            format!(
                "warning: generator saturated from {}: {} — results from here describe onrush, not the target",
                self.when(first),
                details.join(", ")
            )
        })
    }

    /// Records a cause found outside the per-second samples (at the end of the run), as if it
    /// held from `first_s`.
    pub fn add_cause(&mut self, cause: Cause) {
        let first = cause.first_s;
        self.saturated_from = Some(self.saturated_from.map_or(first, |f| f.min(first)));
        self.causes.entry(cause.cause.clone()).or_insert(cause);
    }

    fn cpu_fix(&self) -> String {
        let more_threads = if self.threads < self.cores {
            format!("give onrush more worker threads (-t {}), or ", self.cores)
        } else {
            String::new()
        };
        format!(
            "{more_threads}spread the load over more load machines (onrush merge combines their \
             results exactly), or lower the load per machine (fewer VUs, a lower rate, lighter steps)"
        )
    }

    /// "12:03:10 UTC (+42 s)".
    fn when(&self, second: u64) -> String {
        let secs = (self.start_unix_ms / 1000 + second) % 86_400;
        format!(
            "{:02}:{:02}:{:02} UTC (+{second} s)",
            secs / 3600,
            secs % 3600 / 60,
            secs % 60
        )
    }

    /// The verdict on every second [`check`](Self::check)ed so far; `peak_rss_bytes` is the
    /// process's high-water mark.
    pub fn verdict(&self, peak_rss_bytes: Option<u64>) -> Verdict {
        let peaks = &self.peaks;
        let causes: Vec<Cause> = self.causes.values().cloned().collect();
        let short_of_vus_only = causes.iter().all(|c| c.cause == "max_vus");
        let message = match self.saturated_from {
            None => "generator healthy: onrush kept up with the plan; the results describe the target"
                .to_string(),
            // Not onrush's own limit: the plan's. The latencies still describe the target (from
            // the intended start), the request rate fell short of the plan's.
            Some(from) if short_of_vus_only => format!(
                "the plan's arrival rate was not reached from {}: {} — latencies still describe \
                 the target, the rate is short of the plan. Fix: {}",
                self.when(from),
                causes.iter().map(|c| c.detail.as_str()).collect::<Vec<_>>().join(", "),
                causes.first().map_or("", |c| c.fix.as_str())
            ),
            Some(from) => format!(
                "generator saturated from {}: {} — results after that point describe onrush, not the target. Fix: {}",
                self.when(from),
                causes.iter().map(|c| c.detail.as_str()).collect::<Vec<_>>().join(", "),
                causes.first().map_or("", |c| c.fix.as_str())
            ),
        };
        Verdict {
            verdict: if self.saturated_from.is_some() {
                "saturated"
            } else {
                "healthy"
            }
            .to_string(),
            message,
            saturated_from_s: self.saturated_from,
            causes,
            cpu_percent_max: peaks.cpu_percent,
            worker_cpu_percent_max: peaks.worker_cpu_percent,
            rss_mb_max: peaks.rss_mb,
            rss_mb_peak: peak_rss_bytes
                .map_or(0.0, |b| (b as f64 / 1048576.0 * 10.0).round() / 10.0),
            schedule_lag_p99_ms_max: peaks.schedule_lag_p99_ms,
            open_fds_max: peaks.open_fds,
            sockets_to_targets_max: peaks.sockets_to_targets,
            time_wait_max: peaks.time_wait,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_of_day_follow_a_start_moved_by_the_warm_up() {
        let mut rules = Rules::new(1, 2, 12 * 3_600_000);
        assert_eq!(rules.when(42), "12:00:42 UTC (+42 s)");
        rules.delay_start(std::time::Duration::from_millis(3_000));
        assert_eq!(rules.when(42), "12:00:45 UTC (+42 s)");
    }

    fn second(t: u64, cpu: f64, lag: Option<f64>) -> GeneratorSecond {
        GeneratorSecond {
            t,
            cpu_percent: Some(cpu),
            worker_cpu_percent: vec![Some(cpu)],
            rss_mb: 10.0,
            open_fds: 20,
            connections_opened: 0,
            schedule_lag_p50_ms: lag,
            schedule_lag_p99_ms: lag,
            schedule_lag_max_ms: lag,
            dropped_iterations: 0,
            sockets_to_targets: 10,
            time_wait: 0,
            port_usage_percent: 0.1,
        }
    }

    #[test]
    fn a_busy_worker_for_two_seconds_saturates_from_the_first() {
        let mut rules = Rules::new(1, 2, 0);
        let history = [
            second(0, 40.0, None),
            second(1, 97.0, None),
            second(2, 99.0, None),
        ];
        assert!(rules.check(&history[0], 1024, 1000).is_none());
        assert!(
            rules.check(&history[1], 1024, 1000).is_none(),
            "one hot second is not enough"
        );
        let warning = rules
            .check(&history[2], 1024, 1000)
            .expect("saturation starts");
        assert!(warning.contains("CPU 99% on worker 0"), "{warning}");
        let v = rules.verdict(None);
        assert_eq!(v.verdict, "saturated");
        assert_eq!(v.saturated_from_s, Some(1));
        assert_eq!(v.causes[0].cause, "cpu");
        assert!(v.causes[0].fix.contains("-t 2"), "{}", v.causes[0].fix);
    }

    #[test]
    fn late_iterations_without_cpu_point_elsewhere() {
        let mut rules = Rules::new(2, 2, 0);
        let history = [second(4, 20.0, Some(35.0)), second(5, 20.0, Some(35.0))];
        assert!(
            rules.check(&history[0], 1024, 1000).is_none(),
            "one late second is not enough"
        );
        assert!(rules.check(&history[1], 1024, 1000).is_some());
        let v = rules.verdict(None);
        assert_eq!(v.causes[0].cause, "schedule_lag");
        assert!(v.causes[0].fix.contains("doctor"));
        assert!(v.message.contains("+4 s"), "{}", v.message);
    }

    #[test]
    fn very_late_iterations_with_a_busy_worker_ask_for_cpu() {
        let mut rules = Rules::new(1, 2, 0);
        let s = second(0, 80.0, Some(250.0));
        assert!(rules.check(&s, 1024, 1000).is_some());
        let v = rules.verdict(None);
        assert_eq!(v.causes[0].cause, "schedule_lag");
        assert!(v.causes[0].fix.contains("-t 2"), "{}", v.causes[0].fix);
    }

    #[test]
    fn a_comfortable_run_is_healthy() {
        let mut rules = Rules::new(2, 2, 0);
        let history: Vec<_> = (0..10).map(|t| second(t, 30.0, Some(0.1))).collect();
        for s in &history {
            assert!(rules.check(s, 1024, 1000).is_none());
        }
        let v = rules.verdict(None);
        assert_eq!(v.verdict, "healthy");
        assert!(v.causes.is_empty());
    }

    #[test]
    fn peaks_are_the_highest_of_every_second_checked() {
        let mut rules = Rules::new(2, 2, 0);
        let mut a = second(0, 30.0, Some(2.0));
        a.worker_cpu_percent = vec![Some(10.0), None];
        a.open_fds = 40;
        let mut b = second(1, 20.0, None);
        b.worker_cpu_percent = vec![Some(5.0), Some(25.0)];
        b.rss_mb = 12.5;
        b.time_wait = 3;
        for s in [&a, &b] {
            rules.check(s, 1024, 1000);
        }
        let v = rules.verdict(None);
        assert_eq!(
            (v.cpu_percent_max, v.worker_cpu_percent_max, v.rss_mb_max),
            (30.0, 25.0, 12.5)
        );
        assert_eq!(v.schedule_lag_p99_ms_max, Some(2.0));
        assert_eq!(
            (v.open_fds_max, v.sockets_to_targets_max, v.time_wait_max),
            (40, 10, 3)
        );
        assert_eq!(
            Rules::new(1, 1, 0).verdict(None).schedule_lag_p99_ms_max,
            None
        );
    }

    #[test]
    fn ports_and_descriptors_are_causes() {
        let mut rules = Rules::new(1, 1, 0);
        let mut s = second(3, 10.0, None);
        s.port_usage_percent = 91.0;
        s.open_fds = 1000;
        assert!(rules.check(&s, 1024, 1000).is_some());
        let v = rules.verdict(None);
        let causes: Vec<_> = v.causes.iter().map(|c| c.cause.as_str()).collect();
        assert_eq!(causes, ["open_files", "ports"]);
    }

    #[test]
    fn a_hot_worker_with_few_requests_is_not_asked_for_more_machines() {
        // A decompression bomb: a worker busy for seconds on one or two responses.
        let mut rules = Rules::new(1, 2, 0);
        let history = [second(0, 99.0, None), second(1, 99.0, None)];
        rules.check(&history[0], 1024, 0);
        assert!(rules.check(&history[1], 1024, 1).is_some());
        let v = rules.verdict(None);
        assert_eq!(v.causes[0].cause, "cpu");
        let fix = &v.causes[0].fix;
        assert!(
            fix.contains("body_limit") && fix.contains("decompress"),
            "{fix}"
        );
        assert!(!fix.contains("more load machines"), "{fix}");
    }

    #[test]
    fn dropped_arrivals_blame_max_vus_not_other_processes() {
        // rate: 1e9/s with max_vus: 10: iterations start late and most are dropped, the
        // workers idle. The cause is the plan's max_vus.
        let mut rules = Rules::new(1, 2, 0);
        let mut s = second(0, 3.0, Some(500.0));
        s.dropped_iterations = 999_990;
        assert!(rules.check(&s, 1024, 10).is_some());
        let v = rules.verdict(None);
        let causes: Vec<_> = v.causes.iter().map(|c| c.cause.as_str()).collect();
        assert!(causes.contains(&"max_vus"), "{causes:?}");
        for c in &v.causes {
            assert!(!c.fix.contains("other busy processes"), "{}", c.fix);
        }
        let max_vus = v.causes.iter().find(|c| c.cause == "max_vus").unwrap();
        assert!(max_vus.fix.contains("raise max_vus"), "{}", max_vus.fix);
    }

    #[test]
    fn short_of_vus_alone_does_not_say_onrush_was_the_bottleneck() {
        let mut rules = Rules::new(1, 2, 0);
        let mut s = second(2, 5.0, Some(0.2));
        s.dropped_iterations = 40;
        assert!(rules.check(&s, 1024, 100).is_some());
        let v = rules.verdict(None);
        assert_eq!(v.verdict, "saturated");
        assert!(
            v.message.contains("arrival rate was not reached"),
            "{}",
            v.message
        );
        assert!(!v.message.contains("describe onrush"), "{}", v.message);
    }
}
