//! `onrush run`: load a plan, start the built-in target if asked, run, write and print results.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use onrush_plan::{Plan, Target};

use super::{exit, CommonRunArgs};
use onrush_engine::{FinishOptions, Finished, RunOptions};

pub fn run_plan_file(
    path: &Path,
    (profiles, defines): (&[String], &[(String, String)]),
    strict: bool,
    load: &super::load_flags::LoadFlags,
    common: &CommonRunArgs,
) -> i32 {
    let mut plan = match crate::linked::load_plan(path, profiles, defines) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    if let Err(e) = load.apply(&mut plan) {
        eprintln!("error: {e}");
        return exit::USAGE;
    }
    if !unset_vars_allow_start(&plan, strict) {
        return exit::USAGE;
    }
    run_plan(&plan, common, Output::Table)
}

/// Says which variables the plan marks `${unset(...)}` and nobody gave a value: requests that
/// use them are sent with an empty value, which tends to fail in ways no status code explains
/// (every request a 404, and the run still exits 0). `false` when `strict` forbids the start.
pub fn unset_vars_allow_start(plan: &Plan, strict: bool) -> bool {
    let level = if strict { "error" } else { "warning" };
    for var in &plan.unset_vars {
        let why = if var.reason.is_empty() {
            String::new()
        } else {
            format!(" ({})", var.reason)
        };
        note(&format!(
            "{level}: `${{{0}}}` has no value{why}: requests that use it send it empty; pass -D {0}=VALUE",
            var.name
        ));
    }
    if strict && !plan.unset_vars.is_empty() {
        note("--strict: the plan has variables without a value; not starting");
        return false;
    }
    true
}

/// How the end-of-run summary is printed on stdout.
#[derive(Clone, Copy, PartialEq)]
pub enum Output {
    Table,
    Json,
}

pub fn run_plan(plan: &Plan, common: &CommonRunArgs, output: Output) -> i32 {
    run_plan_as(plan, common, output, None)
}

/// Told the plan's resolved targets once it is prepared; answers with when and where in the
/// schedule to start.
pub type ReadyHook<'a> =
    dyn FnMut(&[std::net::SocketAddr]) -> Result<onrush_distributed::agent::StartAt, String> + 'a;

/// What an agent of a distributed run adds to a run: its share of the load, a hook called
/// once the plan is prepared (it tells the controller and waits for the start: the instant
/// and its Unix time in ms), and the exporter that streams the results to the controller.
pub struct AgentShare<'a> {
    pub segment: onrush_engine::Segment,
    /// Called with the plan's resolved targets once it is prepared.
    pub ready: &'a mut ReadyHook<'a>,
    pub exporter: Box<dyn onrush_export::Exporter>,
    /// What the controller's `setup:` extracted: variables of every VU from its start.
    pub seed: Vec<(String, onrush_plan::VarValue)>,
    /// The agent's steering: the controller's live page's changes are applied to it.
    pub steering: Option<std::sync::Arc<onrush_engine::Steering>>,
}

pub fn run_plan_as(
    plan: &Plan,
    common: &CommonRunArgs,
    output: Output,
    agent: Option<AgentShare<'_>>,
) -> i32 {
    onrush_engine::signals::install();
    let nofile = crate::sys::raise_nofile_limit();
    let threads = common
        .threads
        .unwrap_or_else(super::serve::default_threads)
        .max(1);
    if !super::needs::preflight(plan, threads, !common.no_preflight, true) {
        return exit::USAGE;
    }

    let Some(out_dir) = super::run::results_dir(plan, common) else {
        return exit::RUNTIME;
    };

    let server = match plan.target {
        Target::Builtin => match start_builtin(plan) {
            Ok(server) => {
                if !common.quiet {
                    let addr = server.local_addr();
                    match server.self_signed_ca_pem() {
                        Some(_) => eprintln!(
                            "built-in target listening on https://{addr} (and HTTP/3 on UDP)"
                        ),
                        None => eprintln!("built-in target listening on http://{addr}"),
                    }
                }
                Some(server)
            }
            Err(e) => {
                eprintln!("error: cannot start the built-in target server: {e}");
                return exit::RUNTIME;
            }
        },
        Target::Url(_) | Target::None => None,
    };
    let builtin = server.as_ref().map(|s| s.local_addr());
    let mut prepared = match crate::linked::prepare(plan, builtin) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {}: {e:#}", plan.source.display());
            return exit::USAGE;
        }
    };
    // Setup runs before any scenario; its variables reach every VU (and teardown).
    let mut setup_vars = Vec::new();
    if let Some(setup) = &plan.setup {
        let outcome = super::phases::run_phase(plan, setup, &out_dir, builtin, &[], common.quiet);
        if let Some(why) = outcome.failed {
            eprintln!(
                "error: setup failed: {why}; the load did not run (setup's results: {})",
                out_dir.join("setup").display()
            );
            teardown(plan, &out_dir, builtin, &outcome.vars, common.quiet);
            return exit::RUNTIME;
        }
        setup_vars = outcome.vars;
        prepared.seed_vars(&setup_vars);
    }
    // An agent has no setup of its own: the controller ran it once for the whole run.
    if let Some(agent) = &agent {
        if !agent.seed.is_empty() {
            prepared.seed_vars(&agent.seed);
        }
    }

    let mut exporters = match exporters(common, plan, &out_dir) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::RUNTIME;
        }
    };
    let thresholds = plan.all_thresholds();
    let mut run_info = onrush_metrics::RunInfo::starting_now(&plan.name);
    let (mut segment, mut start_at, mut join_at) = (None, None, std::time::Duration::ZERO);
    let mut agent_steering = None;
    if let Some(agent) = agent {
        agent_steering = agent.steering;
        match (agent.ready)(prepared.targets()) {
            Ok(start) => {
                start_at = Some(start.at);
                run_info.start_unix_ms = start.run_start_unix_ms;
                join_at = start.join_at;
            }
            Err(e) => {
                eprintln!("error: {e}");
                return exit::RUNTIME;
            }
        }
        segment = Some(agent.segment);
        exporters.push(agent.exporter);
    }
    if let Some(path) = &common.samples {
        if let Err(e) = onrush_metrics::create_samples_file(path) {
            eprintln!(
                "error: --samples {}: {e}; give a file in a writable directory",
                path.display()
            );
            return exit::RUNTIME;
        }
    }
    if let Some(n) = common.debug {
        // Sessions are made during the run: they keep whole exchanges from here on.
        let secrets = std::sync::Arc::new(plan.clone());
        onrush_engine::debug_exchanges(n, move |text| secrets.mask(text).into_owned());
    }
    let steering =
        onrush_engine::Steering::new(plan.scenarios.iter().map(|s| (s.name.as_str(), &s.load)));
    let live = match live_page(plan, common, &out_dir, steering) {
        Ok(live) => live,
        Err(code) => return code,
    };
    if let Some((server, _)) = &live {
        exporters.push(Box::new(server.exporter()));
    }
    let start_unix_ms = run_info.start_unix_ms;
    let outcome = match prepared.run(RunOptions {
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
        out_dir: Some(out_dir.clone()),
        segment,
        start_at,
        join_at,
        samples: common.samples.clone(),
        steering: live
            .as_ref()
            .map(|(_, steering)| steering.clone())
            .or(agent_steering),
        thresholds: if live.is_some() {
            thresholds.clone()
        } else {
            Vec::new()
        },
    }) {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!("error: {e}: is the results directory writable? (--out DIR)");
            return exit::RUNTIME;
        }
    };
    // The built-in server's own counts, for comparing with onrush's (the test suite does):
    // taken when the load is over, before teardown adds its requests.
    if let Some(server) = &server {
        let path = out_dir.join("builtin_server.json");
        let text = format!("{:#}\n", server.stats_json());
        if let Err(e) = std::fs::write(&path, text) {
            note(&format!("warning: cannot write {}: {e}", path.display()));
        }
    }
    let finished = match onrush_engine::finish(
        plan,
        outcome,
        &FinishOptions {
            threads,
            junit: common.junit.as_deref(),
        },
    ) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            teardown(plan, &out_dir, builtin, &setup_vars, common.quiet);
            return exit::RUNTIME;
        }
    };
    // After the load, however it ended (a threshold, `stop_test`, the first Ctrl-C).
    teardown(plan, &out_dir, builtin, &setup_vars, common.quiet);
    if let Some(server) = server {
        server.shutdown();
    }
    // From here on, nothing printed may panic: after a SIGHUP the terminal is usually gone
    // (writes fail), and the exit code must still say how the run ended. The results are
    // written already.
    if let Err(e) = &finished.report {
        note(&format!(
            "warning: the HTML report could not be written: {e}"
        ));
    }
    print(&finished, &out_dir, output);
    if let Some((server, _)) = &live {
        live_page_end(server, finished.report.as_ref().ok().cloned(), common);
    }
    exit_code(&finished)
}

/// The run is over: the live page becomes the final report, and keeps serving it for
/// `--web-linger`.
pub(super) fn live_page_end(
    server: &onrush_live::LiveServer,
    report: Option<PathBuf>,
    common: &CommonRunArgs,
) {
    server.finished(report);
    let linger = common.web_linger.unwrap_or(Duration::from_secs(10));
    if !linger.is_zero() {
        note(&format!(
            "live page: {} serves the final report for {} more (Ctrl-C to leave now)",
            server.url(),
            onrush_units::show_duration(linger)
        ));
        server.linger(linger, onrush_engine::signals::interrupted);
    }
}

pub(super) type LivePage = (
    onrush_live::LiveServer,
    std::sync::Arc<onrush_engine::Steering>,
);

/// `--web`: the live page's server started, and the steering it passes to the run.
pub(super) fn live_page(
    plan: &Plan,
    common: &CommonRunArgs,
    out_dir: &Path,
    steering: onrush_engine::Steering,
) -> Result<Option<LivePage>, i32> {
    let Some(addr) = common.web else {
        return Ok(None);
    };
    let steering = std::sync::Arc::new(steering);
    let options = |addr| onrush_live::LiveOptions {
        addr,
        dir: out_dir.to_path_buf(),
        plan: plan.name.clone(),
        planned: planned_duration(plan),
        steering: steering.clone(),
        token: common.web_token.clone(),
    };
    let server = match onrush_live::LiveServer::start(options(addr)) {
        Ok(s) => s,
        // The default port taken (another run's page): any free one, said below.
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && addr.port() == 5665 => {
            match onrush_live::LiveServer::start(options(std::net::SocketAddr::new(addr.ip(), 0))) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: --web {addr}: {e}");
                    return Err(exit::RUNTIME);
                }
            }
        }
        Err(e) => {
            eprintln!("error: --web {addr}: {e}: give a free address, e.g. --web 127.0.0.1:0 (any free port)");
            return Err(exit::RUNTIME);
        }
    };
    // Printed even with --quiet: the URL is what --web is for.
    eprintln!("live page: {}", server.url());
    if server.token().is_some() && !server.local_addr().ip().is_loopback() {
        eprintln!("note: the live page is on a non-loopback address: anyone who reaches it sees the run; only the URL above (with its token) can steer it");
    }
    Ok(Some((server, steering)))
}

/// Runs the plan's teardown, if it has one, even after a first Ctrl-C or SIGTERM (a second
/// one exits at once and skips it). A failed teardown is said, not an exit code of its own:
/// the load's results stand.
pub(super) fn teardown(
    plan: &Plan,
    out_dir: &Path,
    builtin: Option<std::net::SocketAddr>,
    setup_vars: &[(String, onrush_plan::VarValue)],
    quiet: bool,
) {
    let Some(teardown) = &plan.teardown else {
        return;
    };
    onrush_engine::signals::cleanup_phase();
    if onrush_engine::signals::interrupted_before_cleanup() {
        note("running teardown (press Ctrl-C again to skip it and exit at once)");
    }
    let outcome = super::phases::run_phase(plan, teardown, out_dir, builtin, setup_vars, quiet);
    if let Some(why) = outcome.failed {
        note(&format!("warning: teardown failed: {why}"));
    }
}

/// The results directory (`--out`, or `results/<plan>-<timestamp>/`), created; `None` after
/// saying why it could not be.
pub fn results_dir(plan: &Plan, common: &CommonRunArgs) -> Option<PathBuf> {
    let out_dir = common.out.clone().unwrap_or_else(|| {
        PathBuf::from("results").join(format!("{}-{}", plan.name, crate::sys::timestamp()))
    });
    match std::fs::create_dir_all(&out_dir) {
        Ok(()) => Some(out_dir),
        Err(e) => {
            eprintln!(
                "error: cannot create results directory {}: {e}",
                out_dir.display()
            );
            None
        }
    }
}

/// A line on stderr, ignoring a stderr that is gone.
fn note(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The built-in server of a `target: builtin` plan: plain HTTP, or HTTPS with HTTP/3 when a
/// scenario has `version: h3` (`onrush_protocols::builtin_speaks_h3`).
fn start_builtin(plan: &Plan) -> std::io::Result<onrush_server::ServerHandle> {
    let h3 = onrush_protocols::builtin_speaks_h3(plan);
    onrush_server::start_with_options(
        onrush_server::ServerConfig {
            addr: "127.0.0.1:0".parse().expect("a valid address"),
            threads: 1,
        },
        onrush_server::ServerOptions {
            tls: h3.then(onrush_server::ServerTls::default),
            http3: h3,
            ..onrush_server::ServerOptions::default()
        },
    )
}

/// The end-of-run summary on stdout (a table, or summary.json itself with `--json`); a stdout
/// that is gone is ignored.
fn print(finished: &Finished, out_dir: &Path, output: Output) {
    let mut out = std::io::stdout().lock();
    match output {
        Output::Table => {
            onrush_metrics::print_summary(&finished.summary, &mut out);
            if !finished.thresholds.is_empty() {
                let _ = writeln!(out);
                onrush_sla::print_results(&finished.thresholds, &mut out);
            }
            http3_line(&mut out);
            let _ = writeln!(out, "\n{}", finished.generator_message);
            let _ = writeln!(out, "results: {}", out_dir.display());
            if let Ok(path) = &finished.report {
                let _ = writeln!(out, "report:  {}", path.display());
            }
        }
        Output::Json => {
            let _ = writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&finished.summary).expect("the summary serialises")
            );
            note(&format!("results: {}", out_dir.display()));
        }
    }
    let _ = out.flush();
}

/// Which requests went over HTTP/3 (`version: h3`, or `auto` upgraded by the server's
/// `Alt-Svc`), when any did or `auto` tried: the summary's table does not split requests by
/// HTTP version.
fn http3_line(out: &mut impl Write) {
    let c = onrush_protocols::version_counts();
    if c == onrush_protocols::VersionCounts::default() {
        return;
    }
    let _ = write!(out, "\nHTTP/3: {} requests", c.h3_requests);
    if c.upgraded > 0 || c.fallbacks > 0 {
        let _ = write!(
            out,
            "; version auto: {} connections upgraded by Alt-Svc, {} QUIC handshakes failed \
             and fell back to TCP",
            c.upgraded, c.fallbacks
        );
    }
    let _ = writeln!(out);
}

/// The exit code of a finished run (documented in README.md).
fn exit_code(finished: &Finished) -> i32 {
    if finished.interrupted {
        exit::INTERRUPTED
    } else if finished.stopped_by_failure {
        note("the test was stopped by a failed step with `on_failure: stop_test`");
        exit::THRESHOLDS
    } else if !finished.thresholds_passed() {
        exit::THRESHOLDS
    } else if finished.all_failed() {
        note("no request succeeded: see the failure classes above");
        exit::ALL_FAILED
    } else {
        exit::OK
    }
}

/// Live exporters asked for on the command line.
pub(super) fn exporters(
    common: &CommonRunArgs,
    plan: &Plan,
    out_dir: &Path,
) -> Result<Vec<Box<dyn onrush_export::Exporter>>, String> {
    let mut list: Vec<Box<dyn onrush_export::Exporter>> = Vec::new();
    if let Some(addr) = common.metrics_addr {
        let options = onrush_export::PrometheusOptions {
            labels: vec![
                ("run_id".into(), run_id(plan, common, out_dir)),
                ("plan".into(), plan.name.clone()),
            ],
            ..Default::default()
        };
        let prometheus = onrush_export::PrometheusExporter::start_with(addr, options)
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

/// The run's `run_id` label on `/metrics`: the name of its results directory when onrush
/// chose it (`PLAN-TIMESTAMP`, unique per start), else the plan's name and the time, so that
/// two runs into the same `--out` are still told apart.
fn run_id(plan: &Plan, common: &CommonRunArgs, out_dir: &Path) -> String {
    match out_dir.file_name() {
        Some(name) if common.out.is_none() => name.to_string_lossy().into_owned(),
        _ => format!("{}-{}", plan.name, crate::sys::timestamp()),
    }
}

/// The longest scenario, when every scenario has a known length.
fn planned_duration(plan: &Plan) -> Option<Duration> {
    plan.scenarios
        .iter()
        .map(|s| s.load.duration())
        .try_fold(Duration::ZERO, |longest, d| Some(longest.max(d?)))
}
