//! onrush-export: live metrics out of a running load test, for Grafana and friends, and a CSV
//! of a finished run's per-second intervals.
//!
//! * [`PrometheusExporter`]: serves `GET /metrics` (Prometheus text format 0.0.4) on its own
//!   thread: counters, gauges, a per-second latency summary and a cumulative latency histogram.
//! * [`InfluxExporter`]: pushes InfluxDB line protocol once a second over HTTP (v1 `/write` or
//!   v2 `/api/v2/write`) from its own thread, through a bounded queue.
//! * [`export_csv`]: one CSV row per second per step (and a totals row) from a results
//!   directory's `intervals.jsonl`.
//!
//! The live exporters implement [`Exporter`]. The collector thread calls
//! [`Exporter::second`] once per closed second with the [`SecondData`] that
//! [`Collector::closed_seconds`](onrush_metrics::Collector::closed_seconds) returns; the call
//! never waits for the network (a Prometheus scrape or an InfluxDB write happen on the
//! exporter's own thread; the Influx queue drops whole seconds, counted, rather than block).
//!
//! ```no_run
//! use onrush_export::{Exporter, InfluxExporter, PrometheusExporter};
//! use onrush_metrics::{Collector, Layout, RunInfo};
//!
//! let layout = Layout::new([("browse", ["home", "search"])]);
//! let mut collector = Collector::new(layout.clone(), RunInfo::starting_now("shop"));
//! let mut exporters: Vec<Box<dyn Exporter>> = vec![
//!     Box::new(PrometheusExporter::start("127.0.0.1:9464".parse().unwrap())?),
//!     Box::new(InfluxExporter::new("http://127.0.0.1:8086/write?db=onrush")?),
//! ];
//! exporters.begin(&layout);
//! // ... once a second, on the collector thread:
//! let view = collector.close_second(0);
//! for second in collector.closed_seconds() {
//!     exporters.second(second);
//! }
//! // ... at the end:
//! exporters.finish();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod csv;
mod http;
pub mod influx;
pub mod prometheus;

use std::io;
use std::path::PathBuf;

pub use csv::{export_csv, CSV_HEADER};
pub use http::read_request_head;
pub use influx::{InfluxExporter, InfluxOptions, InfluxStats};
pub use onrush_metrics::{Layout, ScenarioSecond, SecondData, SecondTotals, StepSecond};
pub use prometheus::{PrometheusExporter, PrometheusOptions, DEFAULT_BUCKETS_S};

/// A live metrics sink. Called from one thread (the collector's): [`begin`](Self::begin) once
/// before the first second, [`second`](Self::second) once per closed second, in order, and
/// [`finish`](Self::finish) once at the end. `second` must return quickly: an exporter does
/// its network I/O on a thread of its own.
pub trait Exporter {
    /// The scenarios and steps of the run, before the first second (optional: lets an exporter
    /// show every step from the start, with zeros).
    fn begin(&mut self, layout: &Layout) {
        let _ = layout;
    }

    /// One closed second.
    fn second(&mut self, data: &SecondData);

    /// The run is over: flush what is queued (bounded in time). Calling it again does nothing.
    fn finish(&mut self);
}

impl<E: Exporter + ?Sized> Exporter for Box<E> {
    fn begin(&mut self, layout: &Layout) {
        (**self).begin(layout)
    }
    fn second(&mut self, data: &SecondData) {
        (**self).second(data)
    }
    fn finish(&mut self) {
        (**self).finish()
    }
}

/// Several exporters, called in order.
impl<E: Exporter> Exporter for Vec<E> {
    fn begin(&mut self, layout: &Layout) {
        self.iter_mut().for_each(|e| e.begin(layout))
    }
    fn second(&mut self, data: &SecondData) {
        self.iter_mut().for_each(|e| e.second(data))
    }
    fn finish(&mut self) {
        self.iter_mut().for_each(|e| e.finish())
    }
}

/// Why an export could not be set up or carried out. Every variant names what was at fault.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A results file could not be read.
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    /// A line of `intervals.jsonl` is not valid.
    #[error("{}:{line}: {msg}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        msg: String,
    },
    /// Writing the output failed.
    #[error("writing the export: {0}")]
    Write(#[source] io::Error),
    /// The InfluxDB write URL is not usable.
    #[error("InfluxDB URL {url:?}: {msg}")]
    Url { url: String, msg: String },
    /// A thread or socket could not be set up.
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        source: io::Error,
    },
}
