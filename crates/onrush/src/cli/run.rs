//! `onrush run`: load a plan, start the built-in target if asked, run, write and print results.

use std::path::{Path, PathBuf};
use std::time::Duration;

use onrush_plan::{LoadModel, Plan, Target};

use super::{exit, CommonRunArgs};
use crate::engine::{self, RunOptions};

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

    let exporters = match exporters(common) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::RUNTIME;
        }
    };
    let thresholds = plan.all_thresholds();
    let run_info = onrush_metrics::RunInfo::starting_now(&plan.name);
    let start_unix_ms = run_info.start_unix_ms;
    let outcome = engine::run(
        prepared,
        RunOptions {
            threads,
            quiet: common.quiet,
            planned: planned_duration(plan),
            run_info,
            nofile_limit: nofile,
            start_unix_ms,
            abort_thresholds: thresholds
                .iter()
                .filter(|t| t.abort_on_fail)
                .cloned()
                .collect(),
            exporters,
        },
    );
    if let Some(server) = server {
        server.shutdown();
    }

    let mut collector = outcome.collector;
    collector.set_duration(outcome.elapsed);
    let mut summary = collector.summary();
    summary.set_interrupted(outcome.interrupted);
    if !outcome.stops.is_empty() {
        let stops: Vec<serde_json::Value> = outcome
            .stops
            .iter()
            .map(|(scenario, reason)| serde_json::json!({ "scenario": scenario, "reason": reason }))
            .collect();
        summary.set_extra("stopped_early", stops.into());
    }
    summary.set_vars(&plan.vars);
    summary.set_extra("threads", threads.into());
    summary.set_extra("machine", machine());
    summary.set_extra("load", describe_load(plan));
    summary.set_extra(
        "generator",
        serde_json::to_value(&outcome.generator).expect("the verdict serialises"),
    );
    let written = collector
        .write_results_with(&out_dir, &summary)
        .and_then(|()| write_generator_seconds(&out_dir, &outcome.generator_seconds));
    if let Err(e) = written {
        eprintln!("error: cannot write results to {}: {e}", out_dir.display());
        return exit::RUNTIME;
    }
    let results = match evaluate_thresholds(
        &thresholds,
        &mut summary,
        outcome.generator.verdict,
        outcome.aborted_by.as_ref(),
        &out_dir,
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot write results to {}: {e}", out_dir.display());
            return exit::RUNTIME;
        }
    };
    let report = onrush_report::write_report(&out_dir, &onrush_report::ReportOptions::default());
    if let Err(e) = &report {
        eprintln!("warning: the HTML report could not be written: {e}");
    }
    if let Some(path) = &common.junit {
        let xml = onrush_sla::junit_xml(&results, &plan.name, outcome.elapsed.as_secs_f64());
        if let Err(e) = std::fs::write(path, xml) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return exit::RUNTIME;
        }
    }
    match output {
        Output::Table => {
            let mut out = std::io::stdout().lock();
            onrush_metrics::print_summary(&summary, &mut out);
            if !results.is_empty() {
                use std::io::Write;
                let _ = writeln!(out);
                onrush_sla::print_results(&results, &mut out);
            }
            println!("\n{}", outcome.generator.message);
            println!("results: {}", out_dir.display());
            if let Ok(path) = &report {
                println!("report:  {}", path.display());
            }
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
    } else if outcome.stopped_by_failure {
        eprintln!("the test was stopped by a failed step with `on_failure: stop_test`");
        exit::THRESHOLDS
    } else if !onrush_sla::all_passed(&results) {
        exit::THRESHOLDS
    } else if summary.totals.requests > 0 && summary.totals.requests == summary.totals.failures {
        eprintln!("no request succeeded: see the failure classes above");
        exit::ALL_FAILED
    } else {
        exit::OK
    }
}

/// Live exporters asked for on the command line.
fn exporters(common: &CommonRunArgs) -> Result<Vec<Box<dyn onrush_export::Exporter>>, String> {
    let mut list: Vec<Box<dyn onrush_export::Exporter>> = Vec::new();
    if let Some(addr) = common.metrics_addr {
        let prometheus = onrush_export::PrometheusExporter::start(addr)
            .map_err(|e| format!("--metrics-addr {addr}: cannot listen: {e}"))?;
        if !common.quiet {
            eprintln!(
                "Prometheus metrics on http://{}/metrics",
                prometheus.local_addr()
            );
        }
        list.push(Box::new(prometheus));
    }
    if let Some(url) = &common.influx {
        let options = onrush_export::InfluxOptions {
            token: common.influx_token.clone(),
            ..Default::default()
        };
        let influx = onrush_export::InfluxExporter::with_options(url, options)
            .map_err(|e| format!("--influx {url}: {e}"))?;
        list.push(Box::new(influx));
    }
    Ok(list)
}

/// Evaluates the plan's thresholds (reading the run's histograms when a figure needs them),
/// records the results in `summary.json` and returns them.
fn evaluate_thresholds(
    thresholds: &[onrush_plan::Threshold],
    summary: &mut onrush_metrics::Summary,
    generator_verdict: &str,
    aborted_by: Option<&onrush_sla::ThresholdResult>,
    out_dir: &Path,
) -> std::io::Result<Vec<onrush_sla::ThresholdResult>> {
    if thresholds.is_empty() {
        return Ok(Vec::new());
    }
    let histograms = if onrush_sla::needs_histograms(thresholds) {
        Some(onrush_sla::Histograms::read(
            &out_dir.join(onrush_metrics::INTERVALS_FILE),
        )?)
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
    summary.write_to(&out_dir.join(onrush_metrics::SUMMARY_FILE))?;
    Ok(results)
}

/// `generator.jsonl`: the generator's own figures, one line per second.
fn write_generator_seconds(
    dir: &Path,
    seconds: &[crate::monitor::GeneratorSecond],
) -> std::io::Result<()> {
    use std::io::Write;
    let mut w = std::io::BufWriter::new(std::fs::File::create(dir.join("generator.jsonl"))?);
    for s in seconds {
        serde_json::to_writer(&mut w, s)?;
        w.write_all(b"\n")?;
    }
    w.flush()
}

/// The machine the run ran on, for the record.
fn machine() -> serde_json::Value {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    serde_json::json!({
        "hostname": read("/proc/sys/kernel/hostname"),
        "cpus": super::serve::default_threads(),
        "os": format!("{} {}", std::env::consts::OS, read("/proc/sys/kernel/osrelease")),
    })
}

/// One line per scenario saying what load it applied, in words.
fn describe_load(plan: &Plan) -> serde_json::Value {
    let secs = |d: Duration| format!("{}s", d.as_secs_f64());
    let list: Vec<_> = plan
        .scenarios
        .iter()
        .map(|s| {
            let model = match &s.load {
                LoadModel::ClosedIterations { vus, iterations, ramp_up } => format!(
                    "closed: {vus} VUs x {iterations} iterations each, ramp-up {}",
                    secs(*ramp_up)
                ),
                LoadModel::SharedIterations { vus, iterations, .. } => {
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
                LoadModel::Open { start_rate, stages, max_vus } => format!(
                    "open: from {start_rate}/s through {} (max {max_vus} VUs)",
                    stages
                        .iter()
                        .map(|st| format!("{}/s over {}", st.per_second, secs(st.over)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            serde_json::json!({ "scenario": s.name, "model": model, "connections": s.http.connections.as_str() })
        })
        .collect();
    serde_json::Value::Array(list)
}

/// The longest scenario, when every scenario has a known length.
fn planned_duration(plan: &Plan) -> Option<Duration> {
    plan.scenarios
        .iter()
        .map(|s| s.load.duration())
        .try_fold(Duration::ZERO, |longest, d| Some(longest.max(d?)))
}

/// Upper bound of connections held at once: one per VU.
fn needed_connections(plan: &Plan) -> u64 {
    plan.scenarios
        .iter()
        .map(|s| u64::from(s.load.max_vus()))
        .sum()
}
