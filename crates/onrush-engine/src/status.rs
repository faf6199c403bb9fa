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
            line_open: false,
        }
    }

    pub fn second(&mut self, second: u64, view: &IntervalView, _elapsed: Duration) {
        self.failures += view.failures;
        if self.quiet {
            return;
        }
        let total = match self.planned {
            Some(p) => format!("{:>4}s", p.as_secs_f64().ceil() as u64),
            None => "   ?".to_string(),
        };
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
        let phase = if stop.is_some() { " stopping" } else { "" };
        let line = format!(
            "[{:>4}s/{}{phase}] vus {:>5}  rps {:>8}  p50 {:>8}  p99 {:>8}  failures {:>6} (total {})  dropped {}",
            second + 1,
            total,
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
