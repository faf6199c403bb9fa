//! The end-of-run summary, `summary.json`: its types are onrush-results' (re-exported here so
//! that `onrush_metrics::Summary` and friends keep working).

pub use onrush_results::{
    CheckStats, CheckSummary, Extras, FailureClassInfo, HandshakeStats, RunSummary,
    ScenarioSummary, StepSummary, Summary, Totals,
};

use crate::failure::FailureClass;

/// The group and hint of the failure class `name` in `summary`: as the summary records them
/// (the build that counted the class knew them, even when this one does not have its
/// protocol), completed by what this build knows of the class — all of it for a summary of
/// an older onrush, which recorded none.
pub fn failure_class_info(summary: &Summary, name: &str) -> FailureClassInfo {
    let known = FailureClass::named(name)
        .map(|c| c.info())
        .unwrap_or_default();
    let recorded = summary.failure_classes.get(name).cloned();
    recorded.unwrap_or_default().or(known)
}
