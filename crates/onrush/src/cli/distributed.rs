//! Distributed runs: `onrush run PLAN --agents N`, the controller (`onrush agent` is in agent.rs).
//! Flags only; the protocol is onrush-distributed's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use onrush_distributed::auth;
use onrush_distributed::bundle::Bundle;
use onrush_distributed::controller::{self, Controller, ControllerOptions};
use onrush_distributed::ssh;
use onrush_distributed::wire;
use onrush_export::Exporter;
use onrush_plan::Plan;

use super::tls_args::{ControllerTlsArgs, LaunchedAgentTlsArgs};
use super::{exit, CommonRunArgs};

/// The controller's flags on `onrush run`.
#[derive(Args)]
pub struct ControllerArgs {
    /// Run the plan on N agents (`onrush agent --connect ...` on each load machine) instead
    /// of on this machine; this process becomes their controller.
    #[arg(long, value_name = "N")]
    pub agents: Option<usize>,
    /// Where the controller listens for its agents.
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "0.0.0.0:7878",
        requires = "agents"
    )]
    pub listen: std::net::SocketAddr,
    /// The token agents must prove they know (first line of FILE, ≥ 16 characters)
    /// [default: a new one, written to the results directory as agent-token].
    #[arg(long, value_name = "FILE", requires = "agents")]
    pub token_file: Option<PathBuf>,
    /// How long to wait for all agents to join, in seconds.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 120,
        requires = "agents"
    )]
    pub agents_wait: u64,
    /// Start the agents from here: `ssh` logs in to each host of --hosts (copying this
    /// onrush there when it is missing or another build) and starts `onrush agent`.
    #[arg(long, value_enum, value_name = "HOW", requires_all = ["agents", "hosts"])]
    pub launch: Option<Launcher>,
    /// The load machines for --launch ssh: one `[user@]host[:port]` per line; the N agents
    /// are dealt round-robin over the lines.
    #[arg(long, value_name = "FILE", requires = "launch")]
    pub hosts: Option<PathBuf>,
    /// An option for every ssh (repeatable): e.g. IdentityFile=~/.ssh/load,
    /// StrictHostKeyChecking=accept-new. ~/.ssh/config applies as well.
    #[arg(long = "ssh-option", value_name = "KEY=VALUE", requires = "launch")]
    pub ssh_options: Vec<String>,
    /// Where onrush binaries and agents' work dirs go on the load machines (relative to the
    /// remote home unless absolute).
    #[arg(
        long,
        value_name = "DIR",
        default_value = ".onrush",
        requires = "launch"
    )]
    pub remote_dir: String,
    /// The address launched agents dial back [default: this machine's address as each
    /// host's sshd saw it].
    #[arg(long, value_name = "HOST", requires = "launch")]
    pub advertise: Option<String>,
    #[command(flatten)]
    pub tls: ControllerTlsArgs,
    #[command(flatten)]
    pub agent_tls: LaunchedAgentTlsArgs,
}

/// How `--launch` starts agents.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Launcher {
    /// Over OpenSSH, with the system's `ssh` and its configuration.
    Ssh,
}

/// `onrush run PLAN --agents N`.
pub fn controller(
    plan: &Plan,
    args: &ControllerArgs,
    agents: usize,
    common: &CommonRunArgs,
) -> i32 {
    onrush_engine::signals::install();
    if agents == 0 {
        eprintln!("error: --agents 0: a distributed run needs at least one agent");
        return exit::USAGE;
    }
    if let Some(path) = &common.samples {
        eprintln!(
            "error: --samples {}: a distributed run's requests are made by its agents, whose \
             samples would stay on their machines; run without --agents to write samples",
            path.display()
        );
        return exit::USAGE;
    }
    if common.debug.is_some() {
        eprintln!(
            "error: --debug: a distributed run's requests are made by its agents, which print \
             nothing; run the plan without --agents (on one machine) to see its exchanges"
        );
        return exit::USAGE;
    }
    if common.threads.is_some() && args.launch.is_none() {
        eprintln!(
            "error: -t/--threads sets a machine's worker threads: give it to each `onrush agent`"
        );
        return exit::USAGE;
    }
    if args.agent_tls.is_set() && args.launch.is_none() {
        eprintln!(
            "error: --agent-tls-* are handed to agents that --launch starts: give agents you \
             start yourself their own --tls-ca, --tls-cert and --tls-key"
        );
        return exit::USAGE;
    }
    // Bad certificate files are usage errors, reported before the results directory is made.
    if args.tls.is_set() {
        if let Err(e) = onrush_distributed::tls::server_config(&args.tls.settings()) {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    }
    // The launched agents' files are checked here, before anything is copied anywhere.
    if args.agent_tls.is_set() {
        if let Err(e) = onrush_distributed::tls::client_config(&args.agent_tls.settings()) {
            eprintln!("error: --agent-tls-*: for the launched agents' {e}");
            return exit::USAGE;
        }
    }
    let Some(out_dir) = super::run::results_dir(plan, common) else {
        return exit::RUNTIME;
    };
    // Setup and teardown run once for the whole run, here, around the agents' load.
    let phases = match super::phases::ControllerPhases::setup(plan, &out_dir, common.quiet) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let seed: Vec<wire::SeedVar> = phases.vars.iter().filter_map(seed_var).collect();
    let code = run_with_agents(plan, args, agents, common, &out_dir, &seed);
    phases.teardown();
    code
}

/// What setup extracted, as it travels to the agents.
fn seed_var((name, value): &(String, onrush_plan::VarValue)) -> Option<wire::SeedVar> {
    let (values, many) = match value {
        onrush_plan::VarValue::Unset => return None,
        onrush_plan::VarValue::One(v) => (vec![v.clone()], false),
        onrush_plan::VarValue::Many(v) => (v.clone(), true),
    };
    Some(wire::SeedVar {
        name: name.clone(),
        values,
        many,
    })
}

/// The load itself: the agents are awaited (or launched), given the plan and setup's
/// variables, started together, and their results merged into `out_dir`.
fn run_with_agents(
    plan: &Plan,
    args: &ControllerArgs,
    agents: usize,
    common: &CommonRunArgs,
    out_dir: &Path,
    seed: &[wire::SeedVar],
) -> i32 {
    let out_dir = out_dir.to_path_buf();
    let token = match &args.token_file {
        Some(f) => match auth::read_token(f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: --token-file: {e}");
                return exit::USAGE;
            }
        },
        None => {
            let token = auth::new_token();
            let path = out_dir.join("agent-token");
            if let Err(e) = write_secret(&path, &token) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return exit::RUNTIME;
            }
            eprintln!(
                "token written to {} (copy it to each load machine; it stays out of every \
                 other result file)",
                path.display()
            );
            token
        }
    };
    let bundle = match Bundle::read(&plan.source, &plan.files) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    let controller = match Controller::bind(ControllerOptions {
        listen: args.listen,
        token: token.clone(),
        agents,
        wait: Duration::from_secs(args.agents_wait),
        quiet: common.quiet,
        abort_on_loss: plan.distributed.on_agent_loss == onrush_plan::OnAgentLoss::Abort,
        spares: plan.distributed.on_agent_loss == onrush_plan::OnAgentLoss::Replace,
        tls: args.tls.settings(),
    }) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::RUNTIME;
        }
    };
    let mut launched = match args.launch {
        None => {
            // The agent's command, with the TLS flags this controller's settings call for.
            let tls = format!(
                "{}{}",
                if args.tls.tls_cert.is_some() {
                    " --tls-ca CA.pem"
                } else {
                    ""
                },
                if args.tls.tls_client_ca.is_some() {
                    " --tls-cert AGENT.pem --tls-key AGENT.key"
                } else {
                    ""
                }
            );
            eprintln!(
                "waiting for {agents} agent{} on {}: on each load machine run\n  onrush agent --connect HOST:{} --token-file agent-token{tls}",
                if agents == 1 { "" } else { "s" },
                controller.local_addr(),
                controller.local_addr().port()
            );
            None
        }
        Some(Launcher::Ssh) => match launch_ssh(
            plan,
            args,
            agents,
            common,
            &out_dir,
            &token,
            controller.local_addr().port(),
        ) {
            Ok(l) => Some(l),
            Err(e) => {
                eprintln!("error: --launch ssh: {e}");
                return exit::RUNTIME;
            }
        },
    };
    let log_dir = out_dir.join("agents");
    let mut launch_failed = || {
        let l = launched.as_mut()?;
        l.poll(&log_dir).then(|| l.failures().join("\n"))
    };
    // Every variable is resolved here, once, and sent as a `-D` value: agents do not read
    // their own environment for the plan.
    let overrides: Vec<(String, String)> = plan
        .vars
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // Live, on the merged seconds: the exporters (one Prometheus endpoint, one InfluxDB
    // series for the whole run) and the `abort_on_fail` thresholds.
    let mut exporters = match super::run::exporters(common, plan, &out_dir) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    // --web: the live page of the whole run, from the merged seconds (streamed to out_dir as
    // they close) and the agents as the controller sees them; it can stop the run.
    let live = match super::run::live_page(
        plan,
        common,
        &out_dir,
        onrush_engine::Steering::new(plan.scenarios.iter().map(|s| (s.name.as_str(), &s.load))),
    ) {
        Ok(live) => live,
        Err(code) => return code,
    };
    if let Some((server, _)) = &live {
        exporters.push(Box::new(server.exporter()));
    }
    let abort_thresholds: Vec<onrush_plan::Threshold> = plan
        .all_thresholds()
        .into_iter()
        .filter(|t| t.abort_on_fail)
        .collect();
    let mut begun = false;
    let mut aborted_by: Option<onrush_sla::ThresholdResult> = None;
    let mut seconds = |merged: &mut onrush_metrics::Collector, elapsed: Duration| {
        if !begun {
            begun = true;
            exporters.begin(merged.layout());
        }
        for second in merged.closed_seconds() {
            exporters.second(second);
        }
        if aborted_by.is_some() || abort_thresholds.is_empty() {
            return None;
        }
        merged.set_duration(elapsed);
        let lost = onrush_sla::abort_check(&abort_thresholds, &merged.summary(), elapsed, None)?;
        let why = format!(
            "threshold lost: {} ({}: {}) on the merged results (abort_on_fail)",
            lost.threshold, lost.scope, lost.measured_text
        );
        aborted_by = Some(lost);
        Some(why)
    };
    let stop_asked = || live.as_ref().is_some_and(|(_, st)| st.stop_requested());
    let interrupted = || onrush_engine::signals::interrupted() || stop_asked();
    let mut events = onrush_results::EventsWriter::new(&out_dir);
    let mut recorded: Vec<(String, &'static str)> = Vec::new();
    let mut own_events = Vec::new();
    let mut agents = |reports: &[onrush_results::AgentReport], done: &[bool], elapsed: Duration| {
        agents_seen(
            &live,
            &mut events,
            &mut own_events,
            &mut recorded,
            reports,
            done,
            elapsed,
        )
    };
    let result = controller.run(
        &bundle,
        &overrides,
        seed,
        &plan.name,
        &out_dir,
        controller::Hooks {
            interrupted: &interrupted,
            launch_failed: &mut launch_failed,
            seconds: &mut seconds,
            agents: &mut agents,
            live_dir: live.as_ref().map(|_| out_dir.clone()),
        },
    );
    exporters.finish();
    let ssh_launched = launched.is_some();
    if let Some(l) = launched {
        // Agents exit once their results are handed over; after a failure, soon (they are
        // told to stop or lose the controller), and what they said before is worth waiting for.
        l.finish(Duration::from_secs(if result.is_ok() { 15 } else { 2 }));
    }
    let mut reports = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            if ssh_launched {
                // An agent that failed on its side says why only in its ssh log.
                for said in onrush_distributed::ssh::agents_errors(&log_dir) {
                    eprintln!("  {said}");
                }
            }
            return exit::RUNTIME;
        }
    };
    // Each agent's own verdict on itself, from the summary it handed over.
    for a in &mut reports {
        let path = out_dir
            .join("agents")
            .join(&a.name)
            .join(onrush_results::SUMMARY_FILE);
        if let Some(g) = onrush_results::read_summary(&path)
            .ok()
            .and_then(|s| s.extra.generator)
        {
            a.generator = Some(controller::AgentHealth::of(&g));
        }
    }
    if let Err(e) = controller::write_agents_file(&out_dir, &reports) {
        eprintln!("warning: agents.json: {e}");
    }
    let dirs: Vec<PathBuf> = reports
        .iter()
        .map(|a| out_dir.join("agents").join(&a.name))
        .filter(|d| d.join(onrush_results::INTERVALS_FILE).is_file())
        .collect();
    if dirs.is_empty() {
        eprintln!("error: no agent sent any result");
        return exit::RUNTIME;
    }
    let merged = onrush_metrics::merge(&dirs, &out_dir);
    // The merge wrote the agents' events (a ramp's stages); the controller's own (the live
    // page's changes, agents lost or joined) go with them.
    if let Err(e) = onrush_results::add_events(&out_dir, &own_events) {
        eprintln!(
            "warning: {}: {e}",
            out_dir.join(onrush_results::EVENTS_FILE).display()
        );
    }
    let mut summary = match merged {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: merging the agents' results: {e}");
            return exit::RUNTIME;
        }
    };
    // Who ran the load, their clocks, and whether the run is whole, in the summary itself.
    summary.extra.distributed = Some(onrush_results::DistributedRun {
        partial: onrush_results::DistributedRun::is_partial(&reports),
        start_skew_ms: controller::start_skew_ms(&reports),
        on_agent_loss: plan.distributed.on_agent_loss.as_str().to_string(),
        agents: reports.clone(),
    });
    // The end a run on one machine has too: thresholds judged on the merged results,
    // summary.json, the report, JUnit.
    let written = match onrush_engine::write_results(
        plan,
        summary,
        &out_dir,
        &onrush_engine::WriteOptions {
            junit: common.junit.as_deref(),
            aborted_by: aborted_by.as_ref(),
        },
    ) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::RUNTIME;
        }
    };
    let mut out = std::io::stdout().lock();
    onrush_metrics::print_summary(&written.summary, &mut out);
    if !written.thresholds.is_empty() {
        use std::io::Write;
        let _ = writeln!(out);
        onrush_sla::print_results(&written.thresholds, &mut out);
    }
    if reports.len() > 1 || reports.iter().any(|a| a.generator.is_none()) {
        println!();
        for a in &reports {
            match &a.generator {
                Some(g) => println!(
                    "agent {}: {} (CPU peak {:.0}% of a core){}",
                    a.name,
                    g.verdict,
                    g.cpu_percent_max,
                    if g.verdict == "healthy" {
                        String::new()
                    } else {
                        format!(": {}", g.message)
                    }
                ),
                None => println!("agent {}: no verdict (its summary did not arrive)", a.name),
            }
        }
    }
    let lost: Vec<&str> = reports
        .iter()
        .filter(|a| a.lost_at_s.is_some())
        .map(|a| a.name.as_str())
        .collect();
    if !lost.is_empty() {
        println!(
            "\npartial run: agent{} lost: {} (their results up to their last second are included)",
            if lost.len() == 1 { "" } else { "s" },
            lost.join(", ")
        );
    }
    println!("results: {}", out_dir.display());
    match &written.report {
        Ok(path) => println!("report:  {}", path.display()),
        Err(e) => eprintln!("warning: the HTML report could not be written: {e}"),
    }
    let aborted_by_loss =
        !lost.is_empty() && plan.distributed.on_agent_loss == onrush_plan::OnAgentLoss::Abort;
    if aborted_by_loss {
        println!("the run was stopped: on_agent_loss: abort");
    }
    if let Some((server, _)) = &live {
        super::run::live_page_end(server, written.report.as_ref().ok().cloned(), common);
    }
    if onrush_engine::signals::interrupted() || stop_asked() {
        exit::INTERRUPTED
    } else if aborted_by_loss {
        exit::RUNTIME
    } else if !written.thresholds_passed() {
        exit::THRESHOLDS
    } else {
        exit::OK
    }
}

/// Starts `agents` agents over ssh, dealt round-robin over the hosts file's lines.
fn launch_ssh(
    plan: &Plan,
    args: &ControllerArgs,
    agents: usize,
    common: &CommonRunArgs,
    out_dir: &Path,
    token: &str,
    port: u16,
) -> Result<ssh::Launched, String> {
    let file = args.hosts.as_deref().ok_or("--hosts FILE is needed")?;
    let lines = ssh::read_hosts(file)?;
    let mut hosts: Vec<ssh::SshHost> = Vec::with_capacity(agents);
    for k in 0..agents {
        let mut h = lines[k % lines.len()].clone();
        let base = h.name.clone();
        let mut n = 2;
        while hosts.iter().any(|o| o.name == h.name) {
            h.name = format!("{base}-{n}");
            n += 1;
        }
        hosts.push(h);
    }
    if agents < lines.len() {
        eprintln!(
            "warning: --agents {agents} uses only the first {agents} of the {} hosts in {}",
            lines.len(),
            file.display()
        );
    }
    let names: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
    eprintln!(
        "launching {agents} agent{} over ssh: {}",
        if agents == 1 { "" } else { "s" },
        names.join(", ")
    );
    let run = out_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| plan.name.clone());
    let options = ssh::LaunchOptions {
        ssh: std::env::var_os("ONRUSH_SSH")
            .map(PathBuf::from)
            .unwrap_or_else(|| "ssh".into()),
        ssh_options: args.ssh_options.clone(),
        remote_dir: args.remote_dir.clone(),
        local_binary: std::env::current_exe()
            .map_err(|e| format!("cannot find this binary: {e}"))?,
        version: onrush_distributed::VERSION.to_string(),
        controller_port: port,
        advertise: args.advertise.clone(),
        token: token.to_string(),
        threads: common.threads,
        run,
        log_dir: out_dir.join("agents"),
        connect_timeout: 10,
        tls: args.agent_tls.settings(),
    };
    ssh::launch(&hosts, &options)
}

fn write_secret(path: &Path, token: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(path)?;
    writeln!(f, "{token}")
}

/// Called by the controller about every 100 ms: the live page's stop (an event) and agents,
/// and each agent lost or joined as an event of the run (with or without a live page).
#[allow(clippy::too_many_arguments)]
fn agents_seen(
    live: &Option<super::run::LivePage>,
    events: &mut onrush_results::EventsWriter,
    own_events: &mut Vec<onrush_results::Event>,
    recorded: &mut Vec<(String, &'static str)>,
    reports: &[onrush_results::AgentReport],
    done: &[bool],
    elapsed: Duration,
) -> Vec<onrush_distributed::wire::SteerMsg> {
    let mut changes = Vec::new();
    let mut write = |event: onrush_results::Event| {
        if let Err(e) = events.write(&event) {
            eprintln!("warning: {}: {e}", events.path().display());
        }
        own_events.push(event);
    };
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let at = |t: f64| {
        (
            (t * 1000.0).round() / 1000.0,
            now_ms.saturating_sub(((elapsed.as_secs_f64() - t).max(0.0) * 1000.0) as u64),
        )
    };
    if let Some((server, steering)) = live {
        for (asked, event) in steering.take_events() {
            let (t, _) = at(elapsed.saturating_sub(asked.elapsed()).as_secs_f64());
            // Every agent applies the change to its share (a stop goes as `Stop`).
            if event.kind != "stop" {
                changes.push(onrush_distributed::wire::SteerMsg {
                    action: event.kind.clone(),
                    scenario: event.scenario.clone(),
                    rate: event.rate,
                    vus: event.vus,
                });
            }
            write(onrush_results::Event { t, ..event });
        }
        server.set_agents(
            reports
                .iter()
                .zip(done)
                .map(|(a, &done)| onrush_live::AgentLive {
                    name: a.name.clone(),
                    address: a.address.clone(),
                    state: match (a.lost_at_s, done, a.start_late_ms) {
                        (Some(_), _, _) => "lost",
                        (None, true, _) => "done",
                        (None, false, Some(_)) => "running",
                        (None, false, None) => "starting",
                    }
                    .to_string(),
                    lost_at_s: a.lost_at_s,
                    lost_reason: a.lost_reason.clone(),
                    replaces: a.replaces.clone(),
                    joined_at_s: a.joined_at_s,
                    replaced_by: a.replaced_by.clone(),
                })
                .collect(),
        );
    }
    for a in reports {
        let seen =
            |recorded: &Vec<(String, &str)>, kind| recorded.contains(&(a.name.clone(), kind));
        if let Some(lost) = a.lost_at_s.filter(|_| !seen(recorded, "lost")) {
            recorded.push((a.name.clone(), "lost"));
            let (t, unix_ms) = at(lost);
            write(onrush_results::Event {
                t,
                unix_ms,
                kind: "agent_lost".into(),
                by: a.name.clone(),
                detail: format!(
                    "agent {} lost: {}",
                    a.name,
                    a.lost_reason.as_deref().unwrap_or("no reason given")
                ),
                ..onrush_results::Event::default()
            });
        }
        if let Some(joined) = a.joined_at_s.filter(|_| !seen(recorded, "joined")) {
            recorded.push((a.name.clone(), "joined"));
            let (t, unix_ms) = at(joined);
            write(onrush_results::Event {
                t,
                unix_ms,
                kind: "agent_joined".into(),
                by: a.name.clone(),
                detail: format!(
                    "spare agent {} joined{}",
                    a.name,
                    a.replaces
                        .as_deref()
                        .map(|r| format!(" for {r}"))
                        .unwrap_or_default()
                ),
                ..onrush_results::Event::default()
            });
        }
    }
    changes
}
