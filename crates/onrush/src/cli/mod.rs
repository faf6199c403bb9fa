//! Command-line interface: flag parsing and dispatch. Each command lives in its own module and
//! only wires flags to the libraries.

mod agent;
mod bench;
mod distributed;
mod doctor;
mod export;
mod import;
mod import_curl;
mod import_har;
mod kube;
mod load_flags;
mod merge;
mod needs;
mod phases;
mod quick;
mod report;
mod run;
mod serve;
mod tls_args;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Exit codes (documented in README.md).
pub mod exit {
    /// The run completed (target failures, if any, are in the results).
    pub const OK: i32 = 0;
    /// A threshold (SLA) failed.
    pub const THRESHOLDS: i32 = 1;
    /// Bad usage or a bad plan.
    pub const USAGE: i32 = 2;
    /// The run could not be carried out (results directory, built-in server, ...).
    pub const RUNTIME: i32 = 3;
    /// The run completed but not a single request succeeded (target down or wrong).
    pub const ALL_FAILED: i32 = 4;
    /// Interrupted by Ctrl-C / SIGTERM / SIGHUP; the results gathered so far were written.
    pub const INTERRUPTED: i32 = 130;
}

#[derive(Parser)]
#[command(
    name = "onrush",
    version,
    about = "Load testing where the system under test slows down, never the load tool",
    after_help = "Exit codes: 0 run completed, 1 a threshold failed, 2 bad usage or plan, 3 run could \
                  not be carried out, 4 no request succeeded, 130 interrupted by Ctrl-C, SIGTERM or SIGHUP \
                  (results still written)."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a plan file.
    Run(Box<RunArgs>),
    /// Check a plan file without running it.
    Validate(ValidateArgs),
    /// Kubernetes manifests for a distributed run (`onrush kube render PLAN --agents N --image IMG`).
    Kube(Box<kube::KubeArgs>),
    /// Generate load for a controller (`onrush run PLAN --agents N` on another machine).
    Agent(agent::AgentArgs),
    /// Print the JSON Schema of the plan format (for editor completion).
    Schema,
    /// Run an ad-hoc test against one URL, without a plan file (like wrk, hey or oha).
    Quick(Box<quick::QuickArgs>),
    /// Start the built-in target server.
    Serve(serve::ServeArgs),
    /// Merge result directories (e.g. from several machines) into one, with exact percentiles.
    Merge(merge::MergeArgs),
    /// Inspect this host for the limits load tests hit, and print the fixes (changes nothing).
    Doctor(doctor::DoctorArgs),
    /// Export saved results (the per-second intervals as CSV).
    Export(export::ExportArgs),
    /// Write the HTML report of saved results (also written at the end of every run).
    Report(report::ReportArgs),
    /// Convert a plan of another tool into an onrush plan (`onrush import jmx|har|curl`).
    Import(import::ImportArgs),
    /// Measure onrush's own CPU and memory cost on this host with a fixed suite of cases
    /// against the built-in server (optionally beside wrk), and its instructions per request
    /// where valgrind is installed.
    Bench(bench::BenchArgs),
}

#[derive(Args)]
pub struct RunArgs {
    /// The plan file (YAML).
    plan: PathBuf,
    /// Override a plan variable: -D vus=100 (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    define: Vec<(String, String)>,
    /// Apply the plan's profiles NAME,... in order (before -D): -P smoke,tls.
    #[arg(
        short = 'P',
        long = "profile",
        value_name = "NAMES",
        value_delimiter = ','
    )]
    profile: Vec<String>,
    /// Refuse to start (exit code 2) when the plan has a variable marked `${unset(...)}` that
    /// was given no value: without --strict the run only warns.
    #[arg(long)]
    strict: bool,
    #[command(flatten)]
    load: load_flags::LoadFlags,
    #[command(flatten)]
    common: CommonRunArgs,
    #[command(flatten)]
    distributed: distributed::ControllerArgs,
}

#[derive(Args)]
pub struct CommonRunArgs {
    /// Results directory [default: results/<plan>-<timestamp>/].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// No live status line.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Worker threads [default: one per core].
    #[arg(long, short = 't', value_name = "N")]
    threads: Option<usize>,
    /// Start even when the pre-flight check finds this host's memory too small for the plan's
    /// VUs; it then runs until the host stops it.
    #[arg(long)]
    no_preflight: bool,
    /// Write the thresholds' results as JUnit XML to FILE (for CI systems).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Serve live metrics for Prometheus at ADDR (e.g. 127.0.0.1:9464, path /metrics).
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<std::net::SocketAddr>,
    /// Push live metrics to InfluxDB once a second: http://HOST:PORT/write?db=NAME (v1) or
    /// http://HOST:PORT/api/v2/write?org=ORG&bucket=BUCKET (v2).
    #[arg(long, value_name = "URL")]
    influx: Option<String>,
    /// InfluxDB v2 API token (sent as "Authorization: Token ...").
    #[arg(long, value_name = "TOKEN", requires = "influx")]
    influx_token: Option<String>,
    /// Write one CSV line per request to FILE as the run goes (time, scenario, step, status,
    /// failure class, latency, bytes, VU, iteration; docs/results.md, "Samples"). Off by
    /// default: it costs each request a line's formatting.
    #[arg(long, value_name = "FILE")]
    samples: Option<PathBuf>,
    /// Print the first N requests and responses of each step in full on stderr as they happen
    /// (request line, headers, body up to 4 KiB; status, headers, body; the outcome), secrets
    /// masked: --debug prints one per step, --debug=5 five. Off by default: nothing is captured.
    #[arg(long, value_name = "N", num_args = 0..=1, require_equals = true, default_missing_value = "1")]
    debug: Option<u32>,
    /// Serve a live page of the run at ADDR [default: 127.0.0.1:5665, or any free port]: the
    /// report so far, kept current, with pause, resume, stop and load changes (docs/live.md).
    /// Its API: GET /api/status, POST /api/stop, /api/pause, /api/resume,
    /// /api/scenarios/NAME/load.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:5665",
          value_parser = parse_web_addr)]
    web: Option<std::net::SocketAddr>,
    /// How long the live page keeps serving the final report after the run [default: 10s];
    /// Ctrl-C leaves at once.
    #[arg(long, value_name = "DURATION", requires = "web", value_parser = parse_duration_arg)]
    web_linger: Option<std::time::Duration>,
    /// The token that lets a caller steer the run when --web is not a loopback address (made
    /// up and printed with the URL when not given; also ONRUSH_WEB_TOKEN). Without it, the
    /// page is read-only there.
    // Not `requires = "web"`: set in the environment, it would refuse every run without --web.
    #[arg(long, value_name = "TOKEN", env = "ONRUSH_WEB_TOKEN")]
    web_token: Option<String>,
}

/// `--web ADDR`: `IP:PORT`, `HOST:PORT` (resolved now: `localhost:5665`) or a bare `PORT` (on
/// loopback).
fn parse_web_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(port) = s.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    let mut addrs = s.to_socket_addrs().map_err(|e| {
        format!("{e}: give IP:PORT, HOST:PORT or a port, e.g. 127.0.0.1:5665 or 0.0.0.0:5665")
    })?;
    // IPv4 first: `localhost` may resolve to ::1 first, and the URL printed should be usual.
    let all: Vec<_> = addrs.by_ref().collect();
    all.iter()
        .find(|a| a.is_ipv4())
        .or(all.first())
        .copied()
        .ok_or_else(|| format!("{s} resolves to no address"))
}

fn parse_duration_arg(s: &str) -> Result<std::time::Duration, String> {
    onrush_units::parse_duration(s).map_err(|e| format!("{} ({})", e.message, e.hint))
}

#[derive(Args)]
struct ValidateArgs {
    /// The plan file (YAML).
    plan: PathBuf,
    /// Override a plan variable: -D vus=100 (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = parse_define)]
    define: Vec<(String, String)>,
    /// Apply the plan's profiles NAME,... in order (before -D): -P smoke,tls.
    #[arg(
        short = 'P',
        long = "profile",
        value_name = "NAMES",
        value_delimiter = ','
    )]
    profile: Vec<String>,
    /// Print the effective plan (profiles applied) on stdout.
    #[arg(long)]
    print: bool,
}

/// Says on stderr how the results directory `dir` was left when it is not a finished run's
/// (killed: not finished, a last line cut short; with `reads_summary`, no summary.json),
/// before a command reads it. A directory that cannot be inspected is left to the command's
/// own error.
pub(crate) fn note_dir_state(dir: &std::path::Path, reads_summary: bool) {
    if let Ok(state) = onrush_metrics::results::inspect_dir(dir) {
        let summary = state.summary_note().filter(|_| reads_summary);
        for note in state.notes().into_iter().chain(summary) {
            eprintln!("note: {note}");
        }
    }
}

pub(crate) fn parse_define(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
        _ => Err(format!("expected NAME=VALUE, got {s:?}")),
    }
}

pub fn dispatch(cli: Cli) -> i32 {
    match cli.command {
        Command::Run(args) if args.distributed.agents.is_some() && args.load.any() => {
            // The agents load the plan from its file and -D values: flags they do not get would
            // split a load other than the one this command line says.
            eprintln!("error: --vus, --duration, --iterations and --rate change one machine's run; with --agents, put the load in the plan (a variable the plan's load uses, set with -D)");
            exit::USAGE
        }
        Command::Run(args) => match args.distributed.agents {
            Some(n) => match crate::linked::load_plan(&args.plan, &args.profile, &args.define) {
                Ok(plan) if !run::unset_vars_allow_start(&plan, args.strict) => exit::USAGE,
                Ok(plan) => distributed::controller(&plan, &args.distributed, n, &args.common),
                Err(e) => {
                    eprintln!("error: {e}");
                    exit::USAGE
                }
            },
            None if args.distributed.tls.is_set() || args.distributed.agent_tls.is_set() => {
                eprintln!(
                    "error: the --tls-* and --agent-tls-* flags are for a distributed run: add \
                     --agents N"
                );
                exit::USAGE
            }
            None => run::run_plan_file(
                &args.plan,
                (&args.profile, &args.define),
                args.strict,
                &args.load,
                &args.common,
            ),
        },
        Command::Agent(args) => agent::agent(args),
        Command::Kube(args) => kube::run(*args),
        Command::Validate(args) => {
            match crate::linked::load_plan(&args.plan, &args.profile, &args.define) {
                Ok(plan) => {
                    if args.print {
                        match onrush_plan::effective_yaml(&args.plan, &args.profile) {
                            Ok(text) => print!("{text}"),
                            Err(e) => {
                                eprintln!("error: {e}");
                                return exit::USAGE;
                            }
                        }
                    }
                    // Warnings only: the run's own check refuses what would kill it.
                    needs::preflight(&plan, serve::default_threads(), false, false);
                    run::unset_vars_allow_start(&plan, false);
                    let ok = format!(
                        "{}: ok ({} scenario{})",
                        args.plan.display(),
                        plan.scenarios.len(),
                        if plan.scenarios.len() == 1 { "" } else { "s" }
                    );
                    // With --print, stdout is the plan alone (it can be piped into a file).
                    if args.print {
                        eprintln!("{ok}");
                    } else {
                        println!("{ok}");
                    }
                    exit::OK
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    exit::USAGE
                }
            }
        }
        Command::Schema => {
            let schema = onrush_plan::json_schema_with(crate::linked::grammars());
            println!(
                "{}",
                serde_json::to_string_pretty(&schema).expect("a JSON value serialises")
            );
            exit::OK
        }
        Command::Quick(args) => quick::run(*args),
        Command::Serve(args) => serve::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Doctor(args) => doctor::run(args),
        Command::Export(args) => export::run(args),
        Command::Report(args) => report::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Import(args) => import::run(args),
    }
}
