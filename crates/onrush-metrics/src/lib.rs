//! onrush-metrics: what a load test measured, exactly and mergeably.
//!
//! * [`WorkerMetrics`]: one per worker thread, never shared; [`WorkerMetrics::record_request`]
//!   is the hot path (counter increments and HDR histogram records, no locks, no formatting).
//! * [`Snapshot`]: a worker's last second, sent once a second to the collector thread.
//! * [`Collector`]: merges the snapshots second by second ([`IntervalView`] for the live
//!   status; [`SecondData`] per step for live exporters), keeps running totals, writes
//!   `intervals.jsonl` (as the run goes with [`Collector::streaming`]) and `summary.json`.
//! * [`merge`]: rebuilds both files from the `intervals.jsonl` of several runs;
//!   [`rebuild_summary`]: the summary of one run from its `intervals.jsonl` alone (a run that
//!   was killed before writing `summary.json`).
//! * [`print_summary`]: the human end-of-run table.
//!
//! Histograms hold microseconds with 3 significant digits and auto-resize (see
//! [`hist::new_hist`]); intervals store them in the standard HdrHistogram V2 compressed
//! encoding, base64, so other HdrHistogram tools can read them. The file formats are described
//! in `docs/results.md` of the repository.
//!
//! ```
//! use onrush_metrics::*;
//!
//! let layout = Layout::new([("browse", ["home", "search"])]);
//! let mut worker = WorkerMetrics::new(&layout); // one per worker thread
//! let mut collector = Collector::new(layout, RunInfo::new("shop", 1_767_225_600_000));
//!
//! worker.record_request(0, 1, &RequestRecord {
//!     latency_us: 2_150, service_us: 2_150, connect_us: Some(140), ttfb_us: Some(2_010),
//!     bytes_in: 1_234, bytes_out: 96, status: 200, failure: None, handshake: None,
//! });
//! collector.add(0, worker.take_snapshot());
//! let live = collector.close_second(0);
//! assert_eq!((live.requests, live.p99_ms), (1, 2.151));
//!
//! collector.set_duration(std::time::Duration::from_secs(1));
//! collector.set_interrupted(false);
//! let dir = std::env::temp_dir().join(format!("onrush-doc-{}", std::process::id()));
//! collector.write_results(&dir).unwrap();
//! let merged = merge(&[dir.clone()], &dir.join("merged")).unwrap();
//! assert_eq!(merged.totals.latency_ms, collector.summary().totals.latency_ms);
//! print_summary(&collector.summary(), &mut std::io::sink());
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

mod aggregate;
mod collector;
mod failing;
mod failure;
pub mod failure_examples;
mod files;
mod front;
pub mod hist;
mod live_merge;
mod merge;
mod merge_extras;
mod print;
mod rates;
mod record;
mod samples;
mod second;
mod snapshot;
mod spool;
mod summary;

pub use collector::{Collector, IntervalView, RunInfo};
pub use failure::{FailureClass, RegisterError, UnknownFailureClass};
pub use hist::{decode_hist, Hist, MsStats};
pub use live_merge::{LiveMerge, WAIT_SECONDS};
pub use merge::{merge, rebuild_summary, MergeError};
/// The result files' owner; what this crate re-exports of it keeps the paths callers used.
pub use onrush_results as results;
pub use onrush_results::{
    HISTOGRAM_ENCODING, INTERVALS_FILE, ONRUSH_VERSION, RESULTS_FORMAT_VERSION, SUMMARY_FILE,
};
pub use print::{format_bytes, print_summary, summary_text, thousands, write_summary_text};
pub use record::{Handshake, Layout, RequestRecord, ScenarioLayout, StepKind, WorkerMetrics};
pub use samples::{create_samples_file, SampleWriter, SAMPLES_HEADER};
pub use second::{ScenarioSecond, SecondData, SecondTotals, StepSecond};
pub use snapshot::{CheckCounts, Snapshot};
pub use summary::{
    failure_class_info, CheckStats, CheckSummary, Extras, FailureClassInfo, HandshakeStats,
    RunSummary, ScenarioSummary, StepSummary, Summary, Totals,
};
