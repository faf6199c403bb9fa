//! The end of a run on one machine: `intervals.jsonl` finished (the run wrote its seconds,
//! and `generator.jsonl`, as it went: its final header now), the summary with the run's
//! record (typed extras: how it ended, its machine, load, generator verdict), then the end
//! every run shares ([`write_results`], in `write.rs`: thresholds, `summary.json` written
//! once, the HTML report, JUnit), which a distributed run's controller calls on the merged
//! results too.
//!
//! Printing is the caller's: [`Finished`] holds everything a command needs to show and to
//! choose its exit code.

mod write;

use std::path::{Path, PathBuf};
use std::time::Duration;

use onrush_metrics::Summary;
use onrush_plan::{LoadModel, Plan};
use onrush_results::{Machine, ScenarioLoad, StoppedEarly, INTERVALS_FILE};
use onrush_sla::ThresholdResult;

use crate::RunOutcome;
pub use write::{write_results, WriteOptions, Written};

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
    /// No threshold stopped the run, and every one passed at its end (true when there is
    /// none).
    pub fn thresholds_passed(&self) -> bool {
        write::thresholds_passed(&self.summary, &self.thresholds)
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
    if let Some(examples) = summary.extra.failing_exchanges.as_mut() {
        // A response may echo what was sent (a token in a body, a URL's query).
        for e in examples.iter_mut() {
            crate::failing::mask(e, |text| plan.mask(text).into_owned());
        }
    }
    record_run(
        &mut summary,
        plan,
        &outcome.stops,
        outcome.interrupted,
        options.threads,
    );
    summary.extra.generator = Some(outcome.generator.clone());
    let Written {
        summary,
        thresholds,
        report,
    } = write_results(
        plan,
        summary,
        dir,
        &WriteOptions {
            junit: options.junit,
            aborted_by: outcome.aborted_by.as_ref(),
        },
    )?;
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
