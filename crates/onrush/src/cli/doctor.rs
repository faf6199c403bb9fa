//! `onrush doctor [PLAN]`: inspects this host for the limits load tests hit and prints each
//! finding with the exact fix. Changes nothing.

use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use onrush_doctor::{diagnose, Host, PlanNeeds};
use onrush_plan::{CloseMode, ConnectionScope, LoadModel, Plan, Step, Target};

use super::exit;

#[derive(Args)]
pub struct DoctorArgs {
    /// A plan: also estimate the connections and local ports it needs and whether this host
    /// can give them.
    plan: Option<PathBuf>,
    /// Override a plan variable: -D vus=100 (repeatable).
    #[arg(short = 'D', value_name = "NAME=VALUE", value_parser = super::parse_define)]
    define: Vec<(String, String)>,
    /// Print the findings as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: DoctorArgs) -> i32 {
    let needs = match &args.plan {
        None => None,
        Some(path) => match onrush_plan::load(path, &args.define) {
            Ok(plan) => Some(plan_needs(&plan)),
            Err(e) => {
                eprintln!("error: {e}");
                return exit::USAGE;
            }
        },
    };
    let report = diagnose(&Host::live(), needs.as_ref());
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("the report serialises")
        );
    } else {
        if let Some(n) = &needs {
            println!(
                "plan needs: up to {} connections at once, ~{:.0} new connections/s (estimate), targets {}\n",
                n.peak_connections,
                n.new_connections_per_s,
                n.targets
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        onrush_doctor::print_text(&report, &mut std::io::stdout().lock());
    }
    exit::OK
}

/// What a plan asks of the host. Closed-model iteration rates are not known before the run:
/// they are estimated as if every request took 1 ms (an upper bound for a fast target).
fn plan_needs(plan: &Plan) -> PlanNeeds {
    let mut needs = PlanNeeds::default();
    for scenario in &plan.scenarios {
        let vus = scenario.load.max_vus() as u64;
        needs.peak_connections += vus;
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
        needs.close_reset |= scenario.http.close == CloseMode::Reset;
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
            Step::Request(_) | Step::Tcp(_) | Step::Ws(_) => requests += 1,
            Step::Think { min, max } => think += (*min + *max) / 2,
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
