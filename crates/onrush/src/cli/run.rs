//! `onrush run`: load a plan, start the built-in target if asked, run, write and print results.

use std::path::{Path, PathBuf};
use std::time::Duration;

use onrush_plan::{LoadModel, Plan, Target};

use super::{exit, CommonRunArgs};
use crate::engine::{self, schedule, RunOptions};

pub fn run_plan_file(path: &Path, defines: &[(String, String)], common: &CommonRunArgs) -> i32 {
    let plan = match onrush_plan::load(path, defines) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    run_plan(&plan, common, Output::Table)
}

/// How the end-of-run summary is printed on stdout.
#[derive(Clone, Copy, PartialEq)]
pub enum Output {
    Table,
    Json,
}

pub fn run_plan(plan: &Plan, common: &CommonRunArgs, output: Output) -> i32 {
    crate::signals::install();
    let nofile = crate::sys::raise_nofile_limit();
    let threads = common
        .threads
        .unwrap_or_else(super::serve::default_threads)
        .max(1);
    let needed = needed_connections(plan);
    if nofile > 0 && needed + 64 > nofile {
        eprintln!(
            "warning: the plan may hold {needed} connections but the open-files limit is {nofile}; \
             raise it (ulimit -n, or LimitNOFILE= for a service) or expect failures"
        );
    }

    let out_dir = common.out.clone().unwrap_or_else(|| {
        PathBuf::from("results").join(format!("{}-{}", plan.name, crate::sys::timestamp()))
    });
    if let Err(e) = std::fs::create_dir_all(&out_dir) {
        eprintln!(
            "error: cannot create results directory {}: {e}",
            out_dir.display()
        );
        return exit::RUNTIME;
    }

    let server = match plan.target {
        Target::Builtin => match onrush_server::start(onrush_server::ServerConfig {
            addr: "127.0.0.1:0".parse().expect("a valid address"),
            threads: 1,
        }) {
            Ok(server) => {
                if !common.quiet {
                    eprintln!(
                        "built-in target listening on http://{}",
                        server.local_addr()
                    );
                }
                Some(server)
            }
            Err(e) => {
                eprintln!("error: cannot start the built-in target server: {e}");
                return exit::RUNTIME;
            }
        },
        Target::Url(_) => None,
    };
    let prepared = match engine::prepare(plan, server.as_ref().map(|s| s.local_addr())) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {}: {e:#}", plan.source.display());
            return exit::USAGE;
        }
    };

    let run_info = onrush_metrics::RunInfo::starting_now(&plan.name);
    let outcome = engine::run(
        prepared,
        RunOptions {
            threads,
            quiet: common.quiet,
            planned: planned_duration(plan),
            run_info,
        },
    );
    if let Some(server) = server {
        server.shutdown();
    }

    let mut collector = outcome.collector;
    collector.set_duration(outcome.elapsed);
    let mut summary = collector.summary();
    summary.set_interrupted(outcome.interrupted);
    summary.set_vars(&plan.vars);
    if let Err(e) = collector.write_results_with(&out_dir, &summary) {
        eprintln!("error: cannot write results to {}: {e}", out_dir.display());
        return exit::RUNTIME;
    }
    match output {
        Output::Table => {
            onrush_metrics::print_summary(&summary, &mut std::io::stdout().lock());
            println!("results: {}", out_dir.display());
        }
        Output::Json => {
            println!(
                "{}",
                serde_json::to_string_pretty(&summary).expect("the summary serialises")
            );
            eprintln!("results: {}", out_dir.display());
        }
    }
    if outcome.interrupted {
        exit::INTERRUPTED
    } else if summary.totals.requests > 0 && summary.totals.requests == summary.totals.failures {
        eprintln!("no request succeeded: see the failure classes above");
        exit::ALL_FAILED
    } else {
        exit::OK
    }
}

/// The longest scenario, when every scenario has a known length.
fn planned_duration(plan: &Plan) -> Option<Duration> {
    let mut longest = Duration::ZERO;
    for scenario in &plan.scenarios {
        let d = match &scenario.load {
            LoadModel::ClosedIterations { .. } | LoadModel::SharedIterations { .. } => return None,
            LoadModel::ClosedStages { start_vus, stages } => {
                schedule::VuRamp::new(*start_vus, stages).duration()
            }
            LoadModel::Open {
                start_rate, stages, ..
            } => schedule::Arrivals::new(*start_rate, stages).duration(),
        };
        longest = longest.max(d);
    }
    Some(longest)
}

/// Upper bound of connections held at once: one per VU per target.
fn needed_connections(plan: &Plan) -> u64 {
    plan.scenarios
        .iter()
        .map(|s| match &s.load {
            LoadModel::ClosedIterations { vus, .. } | LoadModel::SharedIterations { vus, .. } => {
                *vus as u64
            }
            LoadModel::ClosedStages { start_vus, stages } => {
                schedule::VuRamp::new(*start_vus, stages).max_vus() as u64
            }
            LoadModel::Open { max_vus, .. } => *max_vus as u64,
        })
        .sum()
}
