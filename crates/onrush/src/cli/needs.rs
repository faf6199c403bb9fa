//! What a plan asks of the host (connections, VUs, threads, memory for bodies), for
//! `onrush doctor PLAN` and for the checks `onrush run` makes before it starts.

use std::net::ToSocketAddrs;
use std::time::Duration;

use onrush_doctor::{PlanNeeds, Status};
use onrush_plan::{CloseMode, ConnectionScope, LoadModel, Plan, Step, Target};

/// What a plan asks of the host. Closed-model iteration rates are not known before the run:
/// they are estimated as if every request took 1 ms (an upper bound for a fast target).
pub fn plan_needs(plan: &Plan, threads: usize) -> PlanNeeds {
    let mut needs = PlanNeeds {
        threads,
        ..PlanNeeds::default()
    };
    for scenario in &plan.scenarios {
        let vus = scenario.load.max_vus() as u64;
        needs.peak_connections += vus;
        needs.vus += vus;
        if reads_bodies(&scenario.steps) {
            needs.body_bytes = needs
                .body_bytes
                .saturating_add(vus.saturating_mul(scenario.http.body_limit));
        }
        let (requests, think) = weight(&scenario.steps);
        let iterations_per_s = match &scenario.load {
            LoadModel::Open {
                start_rate, stages, ..
            } => stages
                .iter()
                .map(|s| s.per_second)
                .fold(*start_rate, f64::max),
            _ => {
                let per_iteration = think + Duration::from_millis(requests.max(1));
                vus as f64 / per_iteration.as_secs_f64()
            }
        };
        needs.new_connections_per_s += match scenario.http.connections {
            ConnectionScope::Shared | ConnectionScope::PerVu => 0.0,
            ConnectionScope::PerIteration => iterations_per_s,
            ConnectionScope::PerRequest => iterations_per_s * requests as f64,
        };
        needs.source_addresses = needs
            .source_addresses
            .max(scenario.http.source_addresses.len());
        match scenario.http.close_mode() {
            CloseMode::Reset => needs.close_reset = true,
            CloseMode::Server => needs.server_closes = true,
            CloseMode::Auto | CloseMode::Normal => {}
        }
    }
    if let Target::Url(url) = &plan.target {
        if let Ok(addrs) = (url.host.as_str(), url.port).to_socket_addrs() {
            needs.targets.extend(addrs.take(1));
        }
    }
    needs
}

/// Requests per iteration and the think time of one iteration (loops multiplied out).
fn weight(steps: &[Step]) -> (u64, Duration) {
    let mut requests = 0;
    let mut think = Duration::ZERO;
    for step in steps {
        match step {
            Step::Custom(_) => requests += 1,
            Step::Think { min, max } => think += (*min + *max) / 2,
            Step::Script { .. } => {}
            Step::Loop { count, steps } => {
                let (r, t) = weight(steps);
                requests += r * count;
                think += t * (*count).min(u32::MAX as u64) as u32;
            }
            // Flow whose repeats are only known at run time counts once (a lower bound).
            Step::While { steps, .. }
            | Step::ForEach { steps, .. }
            | Step::Group { steps, .. }
            | Step::Once { steps, .. } => {
                let (r, t) = weight(steps);
                requests += r;
                think += t;
            }
            Step::If {
                then, otherwise, ..
            } => {
                let (a, ta) = weight(then);
                let (b, tb) = weight(otherwise);
                requests += a.max(b);
                think += ta.max(tb);
            }
            Step::Random { branches } => {
                let most = branches.iter().map(|(_, s)| weight(s)).max();
                if let Some((r, t)) = most {
                    requests += r;
                    think += t;
                }
            }
        }
    }
    (requests, think)
}

/// True when a request step (at any depth) keeps its response body for extractors or checks.
fn reads_bodies(steps: &[Step]) -> bool {
    steps.iter().any(|step| match step {
        Step::Custom(step) => step.needs_body(),
        Step::Think { .. } | Step::Script { .. } => false,
        Step::Loop { steps, .. }
        | Step::While { steps, .. }
        | Step::ForEach { steps, .. }
        | Step::Group { steps, .. }
        | Step::Once { steps, .. } => reads_bodies(steps),
        Step::If {
            then, otherwise, ..
        } => reads_bodies(then) || reads_bodies(otherwise),
        Step::Random { branches } => branches.iter().any(|(_, s)| reads_bodies(s)),
    })
}

/// Checks what the plan asks against what this host can give, before anything starts (the
/// findings of `onrush_doctor::preflight`). Prints each finding that is not fine. For a `run`,
/// returns false when the run would die: more threads than onrush starts, always; not enough
/// memory for its VUs, when `refuse` is set (`--no-preflight` clears it). The caller then exits
/// with a usage error instead of being killed mid-run.
pub fn preflight(plan: &Plan, threads: usize, refuse: bool, run: bool) -> bool {
    let needs = plan_needs(plan, threads);
    let report = onrush_doctor::preflight(&onrush_doctor::Host::live(), &needs);
    let mut go = true;
    let mut overridable = false;
    for f in &report.findings {
        // A check that could not read the host says nothing about the plan.
        if f.status == Status::Ok || f.fix.is_none() {
            continue;
        }
        // More threads than onrush starts is refused even with --no-preflight: such a thread
        // dies setting up its stack guard, whatever the host has.
        let always = run && f.check == "threads";
        let fatal = f.status == Status::Bad && (always || (refuse && f.check != "nofile"));
        go &= !fatal;
        overridable |= fatal && !always;
        let word = if fatal { "error" } else { "warning" };
        eprintln!("{word}: {} ({}): {}", f.check, f.observed, f.detail);
        for line in f.fix.iter().flat_map(|fix| fix.lines()) {
            eprintln!("  {line}");
        }
    }
    if overridable {
        eprintln!(
            "  (onrush refused to start a run this host cannot carry; --no-preflight runs it anyway)"
        );
    }
    go
}
