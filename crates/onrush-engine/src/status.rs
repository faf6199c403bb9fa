//! Live status, once a second: an updating line on a terminal, plain lines otherwise, nothing
//! with `--quiet`. Written to stderr so stdout stays clean for `--json`.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use onrush_metrics::IntervalView;

pub struct Status {
    quiet: bool,
    tty: bool,
    planned: Option<Duration>,
    /// When every scenario has a duration: when the last one ends, and when its graceful stop
    /// ends (requests still in flight then are cut).
    stop: Option<GracefulStop>,
    /// The graceful stop was announced.
    stopping: bool,
    failures: u64,
    /// When every scenario is bounded by iterations (no duration): how many the run makes in
    /// all, for `iterations 40/100` in place of an unknown length.
    iterations_planned: Option<u64>,
    iterations_done: u64,
    line_open: bool,
}

/// The end of a run's durations and of its graceful stop, from its start.
#[derive(Clone, Copy)]
pub struct GracefulStop {
    pub end: Duration,
    pub cut_at: Duration,
}

impl Status {
    pub fn new(quiet: bool, planned: Option<Duration>, stop: Option<GracefulStop>) -> Self {
        Status {
            quiet,
            tty: std::io::stderr().is_terminal(),
            planned,
            stop,
            stopping: false,
            failures: 0,
            iterations_planned: None,
            iterations_done: 0,
            line_open: false,
        }
    }

    /// The run's iterations in all, when every scenario is bounded by iterations.
    pub fn with_iterations(mut self, planned: Option<u64>) -> Self {
        self.iterations_planned = planned;
        self
    }

    /// The line's opening: where the run is.
    ///
    /// - a run with a known length: `[   3s/10s]`; in the graceful stop after it, the time
    ///   shown stops at the length and what runs over is counted apart: `[  10s/10s +1s
    ///   stopping]` (it used to read `[11s/10s]`, more time elapsed than the run has);
    /// - a run bounded by iterations: `[   3s] iterations 40/100` (it used to read `[3s/?]`);
    /// - a mix of both (no length is known for all of it): `[   3s]`.
    fn progress(&self, second: u64, stopping: bool) -> String {
        let elapsed = second + 1;
        let phase = if stopping { " stopping" } else { "" };
        match (self.planned, self.iterations_planned) {
            (Some(p), _) => {
                let total = p.as_secs_f64().ceil() as u64;
                if elapsed > total {
                    format!("[{total:>4}s/{total}s +{}s{phase}]", elapsed - total)
                } else {
                    format!("[{elapsed:>4}s/{total}s{phase}]")
                }
            }
            (None, Some(n)) => format!(
                "[{elapsed:>4}s{phase}] iterations {}/{n}",
                self.iterations_done.min(n)
            ),
            (None, None) => format!("[{elapsed:>4}s{phase}]"),
        }
    }

    pub fn second(&mut self, second: u64, view: &IntervalView, _elapsed: Duration) {
        self.failures += view.failures;
        self.iterations_done += view.iterations;
        if self.quiet {
            return;
        }
        // A second that starts at or after the end of the duration belongs to the graceful
        // stop: the VUs still active there are finishing their requests in flight.
        let stop = self.stop.filter(|g| second as f64 >= g.end.as_secs_f64());
        if let (Some(g), false) = (stop, self.stopping) {
            self.stopping = true;
            self.note(&format!(
                "time is up: no new request starts; requests in flight may finish until {}s \
                 (graceful_stop {}s), then they are cut and counted as `interrupted`",
                fmt_secs(g.cut_at),
                fmt_secs(g.cut_at.saturating_sub(g.end)),
            ));
        }
        let line = format!(
            "{}  vus {:>5}  rps {:>8}  p50 {:>8}  p99 {:>8}  failures {:>6} (total {})  dropped {}",
            self.progress(second, stop.is_some()),
            view.active_vus,
            view.requests,
            fmt_ms(view.p50_ms),
            fmt_ms(view.p99_ms),
            view.failures,
            self.failures,
            view.dropped_iterations,
        );
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{line}");
            self.line_open = true;
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }

    /// A message between status lines.
    pub fn note(&mut self, message: &str) {
        if self.quiet {
            return;
        }
        self.finish();
        // Never `eprintln!`: it panics when stderr is gone (a closed terminal after SIGHUP),
        // and the run must still write its results.
        let _ = writeln!(std::io::stderr(), "{message}");
    }

    /// Ends the updating line so what follows starts on a fresh one.
    pub fn finish(&mut self) {
        if self.line_open {
            let _ = writeln!(std::io::stderr());
            self.line_open = false;
        }
    }
}

/// Whole seconds without a fraction, else one decimal.
fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s:.1}")
    }
}

fn fmt_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.2}s", ms / 1000.0)
    } else {
        format!("{ms:.2}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(planned: Option<u64>, iterations: Option<u64>) -> Status {
        let mut s = Status::new(true, planned.map(Duration::from_secs), None);
        s.iterations_planned = iterations;
        s
    }

    #[test]
    fn a_timed_run_never_shows_more_elapsed_than_its_length() {
        let s = status(Some(5), None);
        assert_eq!(s.progress(0, false), "[   1s/5s]");
        assert_eq!(s.progress(4, false), "[   5s/5s]");
        // The graceful stop after the duration: the 6th second of a 5 s run.
        assert_eq!(s.progress(5, true), "[   5s/5s +1s stopping]");
        assert_eq!(s.progress(6, false), "[   5s/5s +2s]");
    }

    #[test]
    fn a_run_bounded_by_iterations_shows_them_instead_of_an_unknown_length() {
        let mut s = status(None, Some(100));
        assert_eq!(s.progress(0, false), "[   1s] iterations 0/100");
        s.iterations_done = 40;
        assert_eq!(s.progress(1, false), "[   2s] iterations 40/100");
        assert!(!s.progress(1, false).contains('?'));
        // A mix of timed and counted scenarios: the elapsed time alone.
        assert_eq!(status(None, None).progress(2, false), "[   3s]");
    }

    #[test]
    fn iterations_are_counted_from_the_seconds_even_when_quiet() {
        let mut s = status(None, Some(10));
        let view = IntervalView {
            iterations: 4,
            ..IntervalView::default()
        };
        s.second(0, &view, Duration::from_secs(1));
        s.second(1, &view, Duration::from_secs(2));
        assert_eq!(s.progress(1, false), "[   2s] iterations 8/10");
    }
}
