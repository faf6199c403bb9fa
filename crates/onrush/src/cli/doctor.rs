//! `onrush doctor [PLAN]`: inspects this host for the limits load tests hit and prints each
//! finding with the exact fix. Changes nothing.

use std::path::PathBuf;

use clap::Args;
use onrush_doctor::{diagnose, Host};

use super::exit;
use super::needs::plan_needs;

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
        Some(path) => match crate::linked::load_plan(path, &[], &args.define) {
            Ok(plan) => Some(plan_needs(&plan, 0)),
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
