//! The end of a run, one job per function: `intervals.jsonl` finished (the run wrote its
//! seconds, and `generator.jsonl`, as it went: its final header now), the summary (with its
//! typed extras), the thresholds (reading the run's histograms back from the file only when a
//! figure needs them), `summary.json` written once with all of it, the HTML report, JUnit.
//!
//! Printing is the caller's: [`Finished`] holds everything a command needs to show and to
//! choose its exit code.

use std::path::{Path, PathBuf};
use std::time::Duration;

use onrush_metrics::Summary;
use onrush_plan::{LoadModel, Plan, Threshold};
use onrush_results::{Machine, ScenarioLoad, StoppedEarly, INTERVALS_FILE};
use onrush_sla::ThresholdResult;

use crate::RunOutcome;

/// What the end of a run writes besides the results directory (the run's
/// [`RunOptions::out_dir`](crate::RunOptions::out_dir)).
pub struct FinishOptions<'a> {
    /// Worker threads the run used (recorded in summary.json).
    pub threads: usize,
    /// `--junit FILE`: the thresholds as JUnit XML.
    pub junit: Option<&'a Path>,
}

/// A run written down: what a command prints and decides its exit code from.
pub struct Finished {
    pub summary: Summary,
    pub thresholds: Vec<ThresholdResult>,
    /// The HTML report's path, or why it could not be written (the results still are).
    pub report: Result<PathBuf, String>,
    pub interrupted: bool,
    pub stopped_by_failure: bool,
    /// The generator's verdict in words.
    pub generator_message: String,
    pub elapsed: Duration,
}

impl Finished {
    /// Every threshold passed (true when there is none).
    pub fn thresholds_passed(&self) -> bool {
        onrush_sla::all_passed(&self.thresholds)
    }

    /// Requests were made and every one failed.
    pub fn all_failed(&self) -> bool {
        self.summary.totals.requests > 0
            && self.summary.totals.requests == self.summary.totals.failures
    }
}

/// Why the results could not be written.
#[derive(Debug)]
pub struct FinishError {
    pub path: PathBuf,
    pub error: std::io::Error,
}

impl std::fmt::Display for FinishError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot write {}: {}", self.path.display(), self.error)
    }
}

impl std::error::Error for FinishError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Finishes the results of `outcome` (a run of `plan`, in its results directory) and
/// evaluates its thresholds.
pub fn finish(
    plan: &Plan,
    outcome: RunOutcome,
    options: &FinishOptions,
) -> Result<Finished, FinishError> {
    let Some(dir) = outcome.out_dir.as_deref() else {
        return Err(FinishError {
            path: PathBuf::new(),
            error: std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the run had no results directory (RunOptions::out_dir)",
            ),
        });
    };
    let at = |path: PathBuf| move |error| FinishError { path, error };
    let covered = outcome.covered();
    let mut collector = outcome.collector;
    collector.set_duration(covered);
    collector
        .write_intervals(dir)
        .map_err(at(dir.join(INTERVALS_FILE)))?;
    if let Some(e) = outcome.generator_error {
        return Err(e);
    }
    let mut summary = collector.summary();
    if !outcome.vus_not_started.is_empty() {
        summary.extra.vus_not_started = Some(outcome.vus_not_started.clone());
    }
    if !outcome.failure_examples.is_empty() {
        // A protocol's message may quote what was sent (a URL, a header): no secret in it.
        let masked = outcome
            .failure_examples
            .iter()
            .map(|(class, text)| (class.clone(), plan.mask(text).into_owned()))
            .collect();
        summary.extra.failure_examples = Some(masked);
    }
    record_run(
        &mut summary,
        plan,
        &outcome.stops,
        outcome.interrupted,
        options.threads,
    );
    let thresholds = evaluate_thresholds(
        &plan.all_thresholds(),
        &mut summary,
        &outcome.generator.verdict,
        outcome.aborted_by.as_ref(),
        dir,
    )
    .map_err(at(dir.join(INTERVALS_FILE)))?;
    summary.extra.generator = Some(outcome.generator.clone());
    let summary_path = dir.join(onrush_metrics::SUMMARY_FILE);
    summary.write_to(&summary_path).map_err(at(summary_path))?;
    let report = onrush_report::write_report(dir, &onrush_report::ReportOptions::default())
        .map_err(|e| e.to_string());
    if let Some(path) = options.junit {
        let xml = onrush_sla::junit_xml(&thresholds, &plan.name, outcome.elapsed.as_secs_f64());
        std::fs::write(path, xml).map_err(at(path.to_path_buf()))?;
    }
    Ok(Finished {
        summary,
        thresholds,
        report,
        interrupted: outcome.interrupted,
        stopped_by_failure: outcome.stopped_by_failure,
        generator_message: outcome.generator.message,
        elapsed: outcome.elapsed,
    })
}

/// The run's record in summary.json: how it ended, its variables, threads, machine, load.
fn record_run(
    summary: &mut Summary,
    plan: &Plan,
    stops: &[(String, String)],
    interrupted: bool,
    threads: usize,
) {
    summary.set_interrupted(interrupted);
    if !stops.is_empty() {
        summary.extra.stopped_early = Some(
            stops
                .iter()
                .map(|(scenario, reason)| StoppedEarly {
                    scenario: scenario.clone(),
                    reason: reason.clone(),
                })
                .collect(),
        );
    }
    summary.set_vars(&plan.recorded_vars());
    summary.extra.threads = Some(threads as u64);
    summary.extra.machine = Some(machine());
    summary.extra.load = Some(describe_load(plan));
}

/// Evaluates `thresholds` (reading the run's histograms when a figure needs them) and records
/// their results in the summary.
fn evaluate_thresholds(
    thresholds: &[Threshold],
    summary: &mut Summary,
    generator_verdict: &str,
    aborted_by: Option<&ThresholdResult>,
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
    let results = onrush_sla::evaluate_with(
        thresholds,
        summary,
        Some(generator_verdict),
        histograms.as_ref(),
    );
    summary.set_extra(
        "thresholds",
        serde_json::to_value(&results).expect("serialises"),
    );
    if let Some(lost) = aborted_by {
        summary.set_extra(
            "aborted_by",
            serde_json::to_value(lost).expect("serialises"),
        );
    }
    Ok(results)
}

/// The machine the run ran on, for the record.
fn machine() -> Machine {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    Machine {
        hostname: read("/proc/sys/kernel/hostname"),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()) as u64,
        os: format!(
            "{} {}",
            std::env::consts::OS,
            read("/proc/sys/kernel/osrelease")
        ),
    }
}

/// One line per scenario saying what load it applied, in words.
fn describe_load(plan: &Plan) -> Vec<ScenarioLoad> {
    let secs = |d: Duration| format!("{}s", d.as_secs_f64());
    plan.scenarios
        .iter()
        .map(|s| {
            let model = match &s.load {
                LoadModel::ClosedIterations {
                    vus,
                    iterations,
                    ramp_up,
                } => format!(
                    "closed: {vus} VUs x {iterations} iterations each, ramp-up {}",
                    secs(*ramp_up)
                ),
                LoadModel::SharedIterations {
                    vus, iterations, ..
                } => {
                    format!("closed: {vus} VUs sharing {iterations} iterations")
                }
                LoadModel::ClosedStages { start_vus, stages } => format!(
                    "closed: VUs from {start_vus} through {}",
                    stages
                        .iter()
                        .map(|st| format!("{} over {}", st.vus, secs(st.over)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                LoadModel::Open {
                    start_rate,
                    stages,
                    max_vus,
                    ..
                } => format!(
                    "open: from {start_rate}/s through {} (max {max_vus} VUs)",
                    stages
                        .iter()
                        .map(|st| format!("{}/s over {}", st.per_second, secs(st.over)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            ScenarioLoad {
                scenario: s.name.clone(),
                model,
                connections: s.http.connections.as_str().to_string(),
            }
        })
        .collect()
}
