//! Live status, once a second: an updating line on a terminal, plain lines otherwise, nothing
//! with `--quiet`. Written to stderr so stdout stays clean for `--json`.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use onrush_metrics::IntervalView;

pub struct Status {
    quiet: bool,
    tty: bool,
    planned: Option<Duration>,
    failures: u64,
    line_open: bool,
}

impl Status {
    pub fn new(quiet: bool, planned: Option<Duration>) -> Self {
        Status {
            quiet,
            tty: std::io::stderr().is_terminal(),
            planned,
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
        let line = format!(
            "[{:>4}s/{}] vus {:>5}  rps {:>8}  p50 {:>8}  p99 {:>8}  failures {:>6} (total {})  dropped {}",
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

fn fmt_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.2}s", ms / 1000.0)
    } else {
        format!("{ms:.2}ms")
    }
}
