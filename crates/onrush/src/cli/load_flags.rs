//! `onrush run --vus N --duration D --iterations N --rate R`: the plan's load changed from the
//! command line (k6's `--vus`/`--duration`/`--iterations`), applied to every scenario by
//! [`onrush_plan::Plan::override_load`], which refuses a flag that does not fit a scenario.

use std::time::Duration;

use clap::Args;
use onrush_plan::{LoadOverride, Plan};

#[derive(Args, Clone, Copy)]
pub struct LoadFlags {
    /// Run every closed scenario with N VUs (instead of its `load.vus`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    vus: Option<u32>,
    /// Run every scenario for this long (closed: its VUs held for D; open: its rate for D).
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Every closed iterations scenario runs N iterations (per VU, or shared, as it says).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    iterations: Option<u64>,
    /// Every open scenario's arrival rate: 200/s, 30/m.
    #[arg(long, value_name = "RATE", value_parser = parse_rate)]
    rate: Option<f64>,
}

impl LoadFlags {
    pub fn any(&self) -> bool {
        !self.to_override().is_empty()
    }

    fn to_override(self) -> LoadOverride {
        LoadOverride {
            vus: self.vus,
            duration: self.duration,
            iterations: self.iterations,
            rate: self.rate,
        }
    }

    /// The plan with the flags applied; the error is the message to print.
    pub fn apply(&self, plan: &mut Plan) -> Result<(), String> {
        plan.override_load(&self.to_override())
            .map_err(|e| format!("{e} (from the command line's load flags)"))
    }
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    onrush_units::parse_duration(s).map_err(|e| format!("{}; {}", e.message, e.hint))
}

fn parse_rate(s: &str) -> Result<f64, String> {
    onrush_units::parse_rate(s).map_err(|e| format!("{}; {}", e.message, e.hint))
}
