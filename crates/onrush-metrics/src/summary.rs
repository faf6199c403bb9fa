//! The end-of-run summary, `summary.json`: its types are onrush-results' (re-exported here so
//! that `onrush_metrics::Summary` and friends keep working).

pub use onrush_results::{
    CheckStats, CheckSummary, Extras, HandshakeStats, RunSummary, ScenarioSummary, StepSummary,
    Summary, Totals,
};
