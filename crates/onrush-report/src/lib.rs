//! onrush-report: turns a results directory (`summary.json` + `intervals.jsonl`) into one
//! self-contained `report.html` — verdict, test parameters, summary figures, per-step tables,
//! status codes, failures with hints, charts over time and of the latency distribution, and
//! optionally a comparison with a baseline run. The page needs no network: CSS, JavaScript
//! (a vendored uPlot) and data are all inline.
//!
//! ```no_run
//! use onrush_report::{write_report, ReportOptions};
//! let path = write_report("results/shop-20260101-000000".as_ref(), &ReportOptions::default())?;
//! println!("report: {}", path.display());
//! # Ok::<(), onrush_report::ReportError>(())
//! ```

mod agents;
mod compare;
mod data;
mod events;
mod failing;
mod fmt;
mod input;
mod intervals;
mod live;
mod page;
mod tables;

use std::io;

pub use live::{live_chunk, render_live_page};
use std::path::{Path, PathBuf};

/// File name of the report inside the results directory (the default output).
pub const REPORT_FILE: &str = "report.html";

/// Options of [`write_report`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReportOptions {
    /// Results directory of an earlier run to compare against.
    pub baseline: Option<PathBuf>,
    /// Where to write the report; default `DIR/report.html`.
    pub out: Option<PathBuf>,
    /// Show where the run was made: the full local paths of the results directories (this
    /// run's, the baseline's, those merged) and of the plan, and the load generator's
    /// hostname. Off by default: a report is a file people hand to others (a consultant to
    /// a client), and a path like `/home/alice/acme-audit/...` or a hostname says more than
    /// the measurement needs. Without it the report names directories and the plan by their
    /// last component only, and keeps the machine's CPUs and OS.
    pub show_host: bool,
    /// The live page of a run still going (onrush-live): the report so far, with the live
    /// bar and the script that keeps it current.
    pub live: bool,
}

/// Why no report could be written. Every message names the file (and line) at fault.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The results directory does not exist or is not a directory.
    #[error("{}: no such results directory", path.display())]
    NoDir { path: PathBuf },
    /// A results file could not be read.
    #[error("{}: {msg}", path.display())]
    Read { path: PathBuf, msg: String },
    /// A results file is not what it should be (bad JSON, bad histogram, ...).
    #[error("{}:{line}: {msg}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        msg: String,
    },
    /// The report could not be written.
    #[error("{}: cannot write the report: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
    /// The baseline directory is the problem.
    #[error("baseline: {0}")]
    Baseline(Box<ReportError>),
}

impl ReportError {
    pub(crate) fn io(path: &Path, e: io::Error) -> ReportError {
        let msg = if e.kind() == io::ErrorKind::NotFound {
            "not found: is this an onrush results directory?".to_string()
        } else {
            e.to_string()
        };
        ReportError::Read {
            path: path.to_path_buf(),
            msg,
        }
    }

    pub(crate) fn parse(path: &Path, line: usize, msg: String) -> ReportError {
        ReportError::Parse {
            path: path.to_path_buf(),
            line,
            msg,
        }
    }
}

/// Reads the results in `dir` (and `opts.baseline`), writes the report and returns its path.
pub fn write_report(dir: &Path, opts: &ReportOptions) -> Result<PathBuf, ReportError> {
    let html = render_report_with(dir, opts)?;
    let out = opts.out.clone().unwrap_or_else(|| dir.join(REPORT_FILE));
    std::fs::write(&out, html).map_err(|source| ReportError::Write {
        path: out.clone(),
        source,
    })?;
    Ok(out)
}

/// The report as a string, without writing it (local paths and hostname hidden: see
/// [`ReportOptions::show_host`]).
pub fn render_report(dir: &Path, baseline: Option<&Path>) -> Result<String, ReportError> {
    render_report_with(
        dir,
        &ReportOptions {
            baseline: baseline.map(Path::to_path_buf),
            ..ReportOptions::default()
        },
    )
}

/// The report as a string with `opts` (its `out` is not used).
pub fn render_report_with(dir: &Path, opts: &ReportOptions) -> Result<String, ReportError> {
    let (mut run, mut base) = match opts.baseline.as_deref() {
        // Both runs are read at once: the baseline's decoding overlaps this run's.
        Some(b) => {
            let (run, base) = std::thread::scope(|s| {
                let base = s.spawn(|| input::load(b));
                (
                    input::load(dir),
                    base.join().expect("reading the baseline panicked"),
                )
            });
            (
                run?,
                Some(base.map_err(|e| ReportError::Baseline(Box::new(e)))?),
            )
        }
        None => (input::load(dir)?, None),
    };
    if !opts.show_host {
        run.hide_host();
        if let Some(b) = &mut base {
            b.hide_host();
        }
    }
    run.live = opts.live;
    Ok(page::render(&run, base.as_ref()))
}
