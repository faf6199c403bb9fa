//! `onrush agent`: a load machine of a distributed run. It dials its controller, proves the
//! token (and checks the controller's certificate when given a CA), receives the plan, its
//! files and setup's values, runs its share of the load with the engine and streams its
//! per-second results back (docs/distributed.md).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use onrush_distributed::agent::{AgentLink, AgentOptions};
use onrush_distributed::{auth, wire};

use super::run::{AgentShare, Output};
use super::tls_args::AgentTlsArgs;
use super::{exit, CommonRunArgs};

/// `onrush agent`'s flags.
#[derive(Args)]
pub struct AgentArgs {
    /// The controller's HOST:PORT (`onrush run PLAN --agents N` listens on :7878).
    #[arg(long, value_name = "HOST:PORT")]
    connect: String,
    /// The run's token (the controller writes one to its results directory as agent-token).
    #[arg(long, value_name = "FILE")]
    token_file: PathBuf,
    /// This agent's name in the results [default: the host name].
    #[arg(long)]
    name: Option<String>,
    /// Worker threads [default: one per core].
    #[arg(long, short = 't', value_name = "N")]
    threads: Option<usize>,
    /// Where the plan's files and this agent's own results go
    /// [default: onrush-agent/<name>-<timestamp>/].
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// How long to keep dialing a controller that is not listening yet, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    wait: u64,
    /// Refuse a plan that targets anything outside these networks (e.g. 10.0.0.0/8,::1),
    /// before any load.
    #[arg(long, value_name = "CIDR,...")]
    allow_targets: Option<String>,
    /// No progress lines.
    #[arg(long, short = 'q')]
    quiet: bool,
    #[command(flatten)]
    tls: AgentTlsArgs,
}

/// An agent's view of setup's variables.
fn var_value(seed: wire::SeedVar) -> (String, onrush_plan::VarValue) {
    let value = if seed.many {
        onrush_plan::VarValue::Many(seed.values)
    } else {
        onrush_plan::VarValue::One(seed.values.into_iter().next().unwrap_or_default())
    };
    (seed.name, value)
}

/// `onrush agent`.
pub fn agent(args: AgentArgs) -> i32 {
    onrush_engine::signals::install();
    let token = match auth::read_token(&args.token_file) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: --token-file: {e}");
            return exit::USAGE;
        }
    };
    let allowed = match args
        .allow_targets
        .as_deref()
        .map(onrush_distributed::allow::parse_list)
    {
        None => None,
        Some(Ok(l)) => Some(l),
        Some(Err(e)) => {
            eprintln!("error: --allow-targets: {e}");
            return exit::USAGE;
        }
    };
    // Certificate files are checked before dialing: a wrong one is an error at once.
    if let Err(e) = onrush_distributed::agent::Tls::new(&args.tls.settings(), &args.connect) {
        eprintln!("error: {e}");
        return exit::USAGE;
    }
    let name = args.name.clone().unwrap_or_else(host_name);
    let threads = args
        .threads
        .unwrap_or_else(super::serve::default_threads)
        .max(1);
    let work_dir = args.work_dir.clone().unwrap_or_else(|| {
        PathBuf::from("onrush-agent").join(format!("{name}-{}", crate::sys::timestamp()))
    });
    // The controller's live page may pause the run or change its load: the agent applies
    // each change to its share through its own steering, made once the plan is known.
    let steering: Arc<std::sync::OnceLock<Arc<onrush_engine::Steering>>> = Arc::default();
    let link = match AgentLink::connect(
        &AgentOptions {
            connect: args.connect.clone(),
            token,
            name: name.clone(),
            threads,
            work_dir: work_dir.clone(),
            wait: Duration::from_secs(args.wait),
            tls: args.tls.settings(),
        },
        Arc::new(onrush_engine::signals::request_stop),
        {
            let steering = steering.clone();
            Arc::new(move |change: onrush_distributed::wire::SteerMsg| {
                apply_steer(steering.get(), change)
            })
        },
    ) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::RUNTIME;
        }
    };
    if !args.quiet {
        eprintln!(
            "agent {name}: connected to {}; waiting for the plan",
            args.connect
        );
    }
    let assignment = match link.assignment() {
        Ok(onrush_distributed::agent::Assigned::Plan(a)) => a,
        Ok(onrush_distributed::agent::Assigned::Dismissed(why)) => {
            if !args.quiet {
                eprintln!("agent {name}: dismissed: {why}");
            }
            return exit::OK;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return exit::RUNTIME;
        }
    };
    // Before the plan is loaded: its feeders and counters take this agent's rows and values.
    onrush_data::share::set_process_share(
        assignment.segment.agent as u64,
        assignment.segment.agents as u64,
    );
    let mut plan = match crate::linked::load_plan(&assignment.plan, &[], &assignment.overrides) {
        Ok(p) => p,
        Err(e) => {
            link.failed(&format!("cannot load the plan: {e}"));
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    // Setup and teardown ran once, on the controller; what setup extracted came with the plan.
    plan.setup = None;
    plan.teardown = None;
    let seed: Vec<_> = assignment.seed.into_iter().map(var_value).collect();
    // Thresholds are about the whole run: the controller judges them on the merged results.
    // On one agent's share they would be wrong ("requests == 101" over a third of the load)
    // and an `abort_on_fail` could stop a share that is fine as a whole.
    plan.thresholds.clear();
    for s in &mut plan.scenarios {
        s.thresholds.clear();
    }
    let results = work_dir.join("results");
    let common = CommonRunArgs {
        out: Some(results.clone()),
        quiet: true,
        threads: Some(threads),
        no_preflight: false,
        junit: None,
        metrics_addr: None,
        influx: None,
        influx_token: None,
        samples: None,
        debug: None,
        web: None,
        web_linger: None,
        web_token: None,
    };
    let segment = onrush_engine::Segment {
        first_worker: assignment.segment.first_worker,
        total_workers: assignment.segment.total_workers,
        workers: assignment.segment.workers,
    };
    if segment.workers != threads {
        link.failed("the controller gave a segment of another size than this agent's threads");
        return exit::RUNTIME;
    }
    let refused = std::cell::Cell::new(false);
    let mut ready = |targets: &[std::net::SocketAddr]| {
        if let Some(allowed) = &allowed {
            if let Err(e) = onrush_distributed::allow::check(targets, allowed) {
                link.failed(&e);
                refused.set(true);
                return Err(e);
            }
        }
        link.ready();
        link.wait_start()
    };
    let exporter = Box::new(link.streamer(&results));
    let code = super::run::run_plan_as(
        &plan,
        &common,
        Output::Table,
        Some(AgentShare {
            segment,
            ready: &mut ready,
            exporter,
            seed,
            steering: Some(
                steering
                    .get_or_init(|| {
                        Arc::new(onrush_engine::Steering::new(
                            plan.scenarios.iter().map(|s| (s.name.as_str(), &s.load)),
                        ))
                    })
                    .clone(),
            ),
        }),
    );
    if refused.get() {
        return exit::USAGE;
    }
    let files = [
        onrush_results::INTERVALS_FILE,
        onrush_results::SUMMARY_FILE,
        onrush_results::GENERATOR_FILE,
    ];
    if let Err(e) = link.send_results(&results, &files) {
        eprintln!(
            "error: {e} (this agent's results are in {})",
            results.display()
        );
        return exit::RUNTIME;
    }
    if !args.quiet {
        eprintln!("agent {name}: results sent; kept in {}", results.display());
    }
    code
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("agent-{}", std::process::id()))
}

/// A change the controller's live page asked, applied to this agent's share (each agent takes
/// the whole run's rate and VU count: its workers run their own arrivals and VUs of it).
fn apply_steer(
    steering: Option<&Arc<onrush_engine::Steering>>,
    change: onrush_distributed::wire::SteerMsg,
) {
    let Some(st) = steering else {
        return; // before the plan: nothing runs yet
    };
    const BY: &str = onrush_results::BY_CONTROLLER;
    let scenario = change.scenario.as_deref().unwrap_or("");
    let done = match (change.action.as_str(), change.rate, change.vus) {
        ("pause", _, _) => st.pause(BY).map(|_| ()),
        ("resume", _, _) => st.resume(BY).map(|_| ()),
        ("load", Some(rate), _) => st.set_rate(scenario, rate, BY),
        ("load", None, Some(vus)) => st.set_vus(scenario, vus, BY),
        _ => Ok(()),
    };
    if let Err(e) = done {
        eprintln!("warning: the controller's change {change:?} could not be applied: {e}");
    }
}
