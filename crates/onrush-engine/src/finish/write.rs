//! The end every run shares, on one machine ([`finish`](super::finish)) or merged from a
//! distributed run's agents (the controller in the onrush CLI): the plan's thresholds judged
//! on the run's summary (its histograms read back from `intervals.jsonl` only when a figure
//! needs them), recorded in it, `summary.json` written once, the HTML report, JUnit.
//!
//! It lives in onrush-engine because this is the lowest crate that sees everything the end
//! needs: the plan's thresholds (onrush-plan), their evaluation (onrush-sla), the file types
//! (onrush-results) and the report (onrush-report). onrush-sla and onrush-report do not know
//! each other, and onrush-distributed (the controller's protocol) knows neither the plan nor
//! the report; the CLI, which knows all, only wires flags to this.

use std::path::{Path, PathBuf};

use onrush_metrics::Summary;
use onrush_plan::{Plan, Threshold};
use onrush_results::INTERVALS_FILE;
use onrush_sla::ThresholdResult;

use super::FinishError;

/// What the end of a run writes besides the results directory, and what it judges with.
#[derive(Clone, Copy, Default)]
pub struct WriteOptions<'a> {
    /// `--junit FILE`: the thresholds as JUnit XML.
    pub junit: Option<&'a Path>,
    /// The `abort_on_fail` threshold that stopped the run while it went, if one did
    /// (recorded as `aborted_by`).
    pub aborted_by: Option<&'a ThresholdResult>,
}

/// A run's results as written: what a command prints and decides its exit code from.
pub struct Written {
    /// As written to `summary.json`, the thresholds' outcomes in it.
    pub summary: Summary,
    pub thresholds: Vec<ThresholdResult>,
    /// The HTML report's path, or why it could not be written (the results still are).
    pub report: Result<PathBuf, String>,
}

impl Written {
    /// No threshold stopped the run, and every one passed at its end (true when there is
    /// none).
    pub fn thresholds_passed(&self) -> bool {
        thresholds_passed(&self.summary, &self.thresholds)
    }
}

/// No threshold stopped the run (`aborted_by`), and every one passed at its end.
pub(super) fn thresholds_passed(summary: &Summary, thresholds: &[ThresholdResult]) -> bool {
    summary.extra.aborted_by.is_none() && onrush_sla::all_passed(thresholds)
}

/// Judges `summary` (the whole run in `dir`, with its record: the generator's verdict, ...)
/// by `plan`'s thresholds, records their outcomes in it, and writes `summary.json`, the HTML
/// report and, when asked, JUnit.
pub fn write_results(
    plan: &Plan,
    mut summary: Summary,
    dir: &Path,
    options: &WriteOptions,
) -> Result<Written, FinishError> {
    let at = |path: PathBuf| move |error| FinishError { path, error };
    let thresholds = evaluate_thresholds(&plan.all_thresholds(), &summary, dir)
        .map_err(at(dir.join(INTERVALS_FILE)))?;
    if !thresholds.is_empty() {
        summary.extra.thresholds = Some(onrush_sla::outcomes(&thresholds));
    }
    if let Some(lost) = options.aborted_by {
        summary.extra.aborted_by = Some(lost.outcome());
    }
    let summary_path = dir.join(onrush_results::SUMMARY_FILE);
    summary.write_to(&summary_path).map_err(at(summary_path))?;
    // After summary.json: the report reads it.
    let report = onrush_report::write_report(dir, &onrush_report::ReportOptions::default())
        .map_err(|e| e.to_string());
    if let Some(path) = options.junit {
        let xml = onrush_sla::junit_xml(&thresholds, &plan.name, summary.run.duration_s);
        std::fs::write(path, xml).map_err(at(path.to_path_buf()))?;
    }
    Ok(Written {
        summary,
        thresholds,
        report,
    })
}

/// Evaluates `thresholds` on `summary`, with the run's histograms (read from `dir`'s
/// `intervals.jsonl`) when a figure needs them, and the generator's verdict the summary
/// records.
fn evaluate_thresholds(
    thresholds: &[Threshold],
    summary: &Summary,
    dir: &Path,
) -> std::io::Result<Vec<ThresholdResult>> {
    if thresholds.is_empty() {
        return Ok(Vec::new());
    }
    let histograms = if onrush_sla::needs_histograms(thresholds) {
        Some(onrush_sla::Histograms::read(&dir.join(INTERVALS_FILE))?)
    } else {
        None
    };
    let verdict = summary.extra.generator.as_ref().map(|g| g.verdict.as_str());
    Ok(onrush_sla::evaluate_with(
        thresholds,
        summary,
        verdict,
        histograms.as_ref(),
    ))
}
