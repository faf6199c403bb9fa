//! A plan's `setup:` and `teardown:`: each run once, by one VU, on the load's protocols,
//! apart from the load — its results in `OUT/setup/` and `OUT/teardown/` (a summary.json of
//! its own), never in the load's totals or thresholds.

use std::net::SocketAddr;
use std::path::Path;

use onrush_engine::{FinishOptions, RunOptions};
use onrush_plan::{Plan, Scenario, VarValue};

/// How a phase went.
pub struct PhaseOutcome {
    /// Setup's extracted variables (for every VU of the load, and for teardown).
    pub vars: Vec<(String, VarValue)>,
    /// Why the phase failed (a request failed, or it was interrupted), in words.
    pub failed: Option<String>,
}

/// Runs `phase` (`plan.setup` or `plan.teardown`) once; its results go to `out_dir/<name>/`.
/// `seed`: variables the phase starts with (setup's, for teardown).
pub fn run_phase(
    plan: &Plan,
    phase: &Scenario,
    out_dir: &Path,
    builtin: Option<SocketAddr>,
    seed: &[(String, VarValue)],
    quiet: bool,
) -> PhaseOutcome {
    let name = phase.name.clone();
    let failed = |why: String| PhaseOutcome {
        vars: Vec::new(),
        failed: Some(why),
    };
    let mut phase_plan = plan.clone();
    phase_plan.scenarios = vec![phase.clone()];
    phase_plan.thresholds.clear();
    phase_plan.setup = None;
    phase_plan.teardown = None;
    phase_plan.name = format!("{}-{name}", plan.name);
    let mut prepared = match crate::linked::prepare(&phase_plan, builtin) {
        Ok(p) => p,
        Err(e) => return failed(format!("{e:#}")),
    };
    prepared.seed_vars(seed);
    prepared.keep_first_scenario_vars();
    let dir = out_dir.join(&name);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return failed(format!("cannot create {}: {e}", dir.display()));
    }
    if !quiet {
        eprintln!("{name}: running its steps once");
    }
    let mut options = RunOptions::quiet(1, &phase_plan.name);
    options.out_dir = Some(dir.clone());
    let outcome = match prepared.run(options) {
        Ok(o) => o,
        Err(e) => return failed(e.to_string()),
    };
    let vars = outcome.vars.clone();
    let interrupted = outcome.interrupted;
    let finished = match onrush_engine::finish(
        &phase_plan,
        outcome,
        &FinishOptions {
            threads: 1,
            junit: None,
        },
    ) {
        Ok(f) => f,
        Err(e) => return failed(e.to_string()),
    };
    let totals = &finished.summary.totals;
    let classes: Vec<String> = totals
        .failures_by_class
        .iter()
        .map(|(class, n)| format!("{n} {class}"))
        .collect();
    eprintln!(
        "{name}: {} requests, {} failed{} (results: {})",
        totals.requests,
        totals.failures,
        if classes.is_empty() {
            String::new()
        } else {
            format!(": {}", classes.join(", "))
        },
        dir.display()
    );
    let failed = if interrupted {
        Some("it was interrupted".to_string())
    } else if totals.failures > 0 {
        Some(format!(
            "{} of its {} requests failed ({})",
            totals.failures,
            totals.requests,
            classes.join(", ")
        ))
    } else {
        None
    };
    PhaseOutcome { vars, failed }
}

/// A distributed run's `setup:` and `teardown:`: run once for the whole run, on the
/// controller (on every agent they would run once per agent), with a built-in server of their
/// own when the target is `builtin` (each agent starts its own for the load). What setup
/// extracts travels to every agent with the plan.
pub struct ControllerPhases<'a> {
    plan: &'a Plan,
    out_dir: &'a Path,
    quiet: bool,
    server: Option<onrush_server::ServerHandle>,
    /// Setup's extracted variables.
    pub vars: Vec<(String, VarValue)>,
}

impl<'a> ControllerPhases<'a> {
    /// Runs the plan's setup, if any. `Err(exit code)` once it failed (said, and teardown
    /// run) or the built-in server could not start.
    pub fn setup(plan: &'a Plan, out_dir: &'a Path, quiet: bool) -> Result<Self, i32> {
        let needs_server = (plan.setup.is_some() || plan.teardown.is_some())
            && matches!(plan.target, onrush_plan::Target::Builtin);
        let server = if needs_server {
            match onrush_server::start(onrush_server::ServerConfig {
                addr: "127.0.0.1:0".parse().expect("a valid address"),
                threads: 1,
            }) {
                Ok(s) => Some(s),
                Err(e) => {
                    eprintln!(
                        "error: cannot start the built-in target server for setup/teardown: {e}"
                    );
                    return Err(super::exit::RUNTIME);
                }
            }
        } else {
            None
        };
        let mut phases = ControllerPhases {
            plan,
            out_dir,
            quiet,
            server,
            vars: Vec::new(),
        };
        if let Some(setup) = &plan.setup {
            let outcome = run_phase(plan, setup, out_dir, phases.builtin(), &[], quiet);
            phases.vars = outcome.vars;
            if let Some(why) = outcome.failed {
                eprintln!(
                    "error: setup failed: {why}; no agent was started (setup's results: {})",
                    out_dir.join("setup").display()
                );
                phases.teardown();
                return Err(super::exit::RUNTIME);
            }
        }
        Ok(phases)
    }

    fn builtin(&self) -> Option<SocketAddr> {
        self.server.as_ref().map(|s| s.local_addr())
    }

    /// Runs the plan's teardown, if any, however the load ended (see `run`'s teardown).
    pub fn teardown(self) {
        let builtin = self.builtin();
        super::run::teardown(self.plan, self.out_dir, builtin, &self.vars, self.quiet);
        if let Some(server) = self.server {
            server.shutdown();
        }
    }
}
