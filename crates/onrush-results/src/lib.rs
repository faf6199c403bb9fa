//! onrush-results: the owner of onrush's result files — their types, their format version,
//! and the one way to read them.
//!
//! | file | types | read with |
//! |---|---|---|
//! | `intervals.jsonl` | [`Line`]: [`Header`], [`StepLine`] (`step` and `group`), [`ScenarioLine`] | [`IntervalsReader`] |
//! | `summary.json` | [`Summary`] and its parts; the caller's fields typed in [`Extras`] (the thresholds' [`ThresholdOutcome`]s, a distributed run's [`DistributedRun`]) | [`read_summary`] |
//! | `generator.jsonl` | [`GeneratorLine`]; its verdict [`GeneratorVerdict`] | [`GeneratorReader`] (written by [`GeneratorWriter`]) |
//!
//! A run writes `intervals.jsonl` and `generator.jsonl` as it goes, `summary.json` at its end;
//! [`inspect_dir`] tells how a directory was left (a killed run: no summary, header marked
//! `unfinished`, maybe a last line cut short, which the readers skip).
//!
//! Histograms in `intervals.jsonl` are HdrHistogram V2-deflate, base64 ([`HistEncoder`]);
//! every reader decodes them with [`HistDecoder`] (to non-zero buckets, or to a [`Hist`]).
//!
//! **Format version.** `intervals.jsonl`'s header and `summary.json` carry
//! `"onrush_results": RESULTS_FORMAT_VERSION`. A file without it is version 1. A reader given
//! another version stops with an error naming the file, the version found, the version it
//! reads and what to do. Within a version, readers ignore fields and line kinds they do not
//! know, so adding one does not change the version.
//!
//! ```
//! use onrush_results::*;
//!
//! let header = Header::new("shop", 1_767_225_600_000, 1.0, vec![LayoutScenario {
//!     scenario: "browse".into(), steps: vec!["home".into()], ..Default::default()
//! }], None);
//! let mut h = new_hist();
//! h.record(2_150).unwrap();
//! let step = StepLine {
//!     t: 0, scenario: "browse".into(), step: "home".into(), requests: 1,
//!     latency: Some(HistEncoder::new().encode(&h)), ..Default::default()
//! };
//! let text = format!("{}\n{}\n", Line::Header(header).to_json(), Line::Step(step).to_json());
//!
//! let mut reader = IntervalsReader::new("intervals.jsonl", text.as_bytes())?;
//! assert_eq!(reader.header().plan, "shop");
//! let mut decoder = HistDecoder::new();
//! while let Some(line) = reader.next_line()? {
//!     if let Line::Step(s) = line {
//!         let h = decoder.decode_hist(s.latency.as_deref().unwrap()).map_err(|e| reader.error(e))?;
//!         assert_eq!(MsStats::from_hist(&h).p99, 2.151);
//!     }
//! }
//! # Ok::<(), ReadError>(())
//! ```

mod de;
mod distributed;
mod error;
mod events;
pub mod exchanges;
mod extras;
mod generator;
mod hdr;
mod hist;
mod lines;
mod reader;
mod state;
mod summary;
mod thresholds;
mod version;

pub use distributed::{AgentHealth, AgentReport, AgentSegment, DistributedRun};
pub use error::ReadError;
pub use events::{add_events, read_events, Event, EventsWriter, BY_CONTROLLER, EVENTS_FILE};
pub use exchanges::FailingExchange;
pub use extras::{Extras, Machine, ScenarioLoad, StoppedEarly, VusNotStarted, TYPED_EXTRA_KEYS};
pub use generator::{
    GeneratorLine, GeneratorReader, GeneratorVerdict, GeneratorWriter, SaturationCause,
    GENERATOR_FILE,
};
pub use hdr::{bucket_high_us, bucket_low_us, quantiles, Dense, HistDecoder, Sparse};
pub use hist::{
    decode_hist, new_hist, round3, us_to_ms, Hist, HistEncoder, MsStats, MAX_VALUE_US,
    SIGNIFICANT_DIGITS,
};
pub use lines::{
    CheckLine, Header, HistFormat, LayoutCheck, LayoutScenario, Line, ScenarioLine, StepLine,
    HISTOGRAM_ENCODING,
};
pub use reader::IntervalsReader;
pub use state::{inspect_dir, DirState};
pub use summary::{
    read_summary, CheckStats, CheckSummary, FailureClassInfo, HandshakeStats, RunSummary,
    ScenarioSummary, StepKind, StepSummary, Summary, Totals,
};
pub use thresholds::ThresholdOutcome;
pub use version::RESULTS_FORMAT_VERSION;

/// File name of the per-second data.
pub const INTERVALS_FILE: &str = "intervals.jsonl";
/// File name of the summary.
pub const SUMMARY_FILE: &str = "summary.json";

/// Version of onrush written as `onrush_version` (the workspace version).
pub const ONRUSH_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The scratch file beside `path` that [`write_atomically`] renames onto it: `.NAME.tmp`,
/// hidden, in the same directory (a rename does not cross file systems).
pub fn scratch_path(path: &std::path::Path) -> std::path::PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "results".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.tmp"))
}

/// Writes `bytes` to `path` through [`scratch_path`] and a rename: readers see the old file
/// or the new one, never a part.
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let scratch = scratch_path(path);
    std::fs::write(&scratch, bytes)?;
    std::fs::rename(&scratch, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&scratch);
    })
}
