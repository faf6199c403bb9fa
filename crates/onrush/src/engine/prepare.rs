//! Turns a loaded plan into what workers run: targets resolved once, steps flattened.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use anyhow::{bail, Context};
use onrush_metrics::{Layout, ScenarioLayout};
use onrush_plan::{CloseMode, ConnectionScope, LoadModel, Plan, Scheme, Step, Target, TargetUrl};

use super::program::Op;
use crate::protocol::http::{HttpStep, HttpTarget};

/// A plan ready to run. Shared read-only by all workers.
pub struct Prepared {
    pub scenarios: Vec<ScenarioRun>,
    /// Distinct targets the plan talks to; a VU keeps one connection slot per target.
    pub target_slots: usize,
    /// Addresses of those targets (for the generator's own socket accounting).
    pub targets: Vec<SocketAddr>,
    /// The most source addresses any scenario spreads its connections over (0: the kernel's).
    pub max_source_addresses: usize,
    pub layout: Layout,
}

pub struct ScenarioRun {
    pub load: LoadModel,
    pub scope: ConnectionScope,
    /// Source addresses new connections are spread over (empty: the kernel chooses).
    pub source_addresses: Arc<[IpAddr]>,
    /// Close connections with a reset (SO_LINGER 0): no TIME_WAIT on this side.
    pub close_reset: bool,
    pub program: Vec<Op>,
}

/// Resolves targets (`builtin` → `builtin_addr`) and flattens every scenario's steps.
pub fn prepare(plan: &Plan, builtin_addr: Option<SocketAddr>) -> anyhow::Result<Prepared> {
    let mut targets = Targets::default();
    let default_target = match &plan.target {
        Target::Builtin => {
            let addr =
                builtin_addr.context("the plan's target is builtin but no built-in server runs")?;
            targets.slot_for_addr("builtin".to_string(), addr, addr.to_string())
        }
        Target::Url(url) => targets.slot_for_url(url)?,
    };
    let mut scenarios = Vec::new();
    let mut layout = Vec::new();
    for scenario in &plan.scenarios {
        let mut program = Vec::new();
        flatten(
            &scenario.steps,
            &mut program,
            &mut targets,
            default_target,
            scenario.http.timeout,
        )?;
        scenarios.push(ScenarioRun {
            load: scenario.load.clone(),
            scope: scenario.http.connections,
            source_addresses: scenario.http.source_addresses.clone().into(),
            close_reset: scenario.http.close == CloseMode::Reset,
            program,
        });
        layout.push(ScenarioLayout {
            name: scenario.name.clone(),
            steps: scenario.metrics.iter().map(|m| m.name.clone()).collect(),
        });
    }
    Ok(Prepared {
        scenarios,
        target_slots: targets.list.len(),
        targets: targets.list.iter().map(|(_, t)| t.addr).collect(),
        max_source_addresses: plan
            .scenarios
            .iter()
            .map(|s| s.http.source_addresses.len())
            .max()
            .unwrap_or(0),
        layout: Layout { scenarios: layout },
    })
}

fn flatten(
    steps: &[Step],
    program: &mut Vec<Op>,
    targets: &mut Targets,
    default_target: usize,
    timeout: std::time::Duration,
) -> anyhow::Result<()> {
    for step in steps {
        match step {
            Step::Request(request) => {
                let slot = match &request.target {
                    Some(url) => targets.slot_for_url(url)?,
                    None => default_target,
                };
                let metric = request.metric;
                let step =
                    HttpStep::new(request.clone(), slot, targets.list[slot].1.clone(), timeout)
                        .map_err(anyhow::Error::msg)?;
                program.push(Op::Request {
                    metric,
                    step: Box::new(step),
                });
            }
            Step::Think { min, max } => program.push(Op::Think {
                min: *min,
                max: *max,
            }),
            Step::Loop { count, steps } => {
                let start = program.len();
                program.push(Op::LoopStart {
                    count: *count,
                    end: 0,
                });
                flatten(steps, program, targets, default_target, timeout)?;
                let end = program.len();
                program.push(Op::LoopEnd { start });
                program[start] = Op::LoopStart { count: *count, end };
            }
        }
    }
    Ok(())
}

#[derive(Default)]
struct Targets {
    list: Vec<(String, Arc<HttpTarget>)>,
}

impl Targets {
    fn slot_for_url(&mut self, url: &TargetUrl) -> anyhow::Result<usize> {
        if url.scheme == Scheme::Https {
            bail!(
                "target https://{}:{}: HTTPS is not supported yet; use an http:// target",
                url.host,
                url.port
            );
        }
        let key = format!("{}:{}", url.host, url.port);
        if let Some(i) = self.list.iter().position(|(k, _)| *k == key) {
            return Ok(i);
        }
        let addr = (url.host.as_str(), url.port)
            .to_socket_addrs()
            .with_context(|| format!("cannot resolve target host {:?}", url.host))?
            .next()
            .with_context(|| format!("target host {:?} has no address", url.host))?;
        let host_header = if url.port == 80 {
            url.host.clone()
        } else if url.host.contains(':') {
            format!("[{}]:{}", url.host, url.port)
        } else {
            key.clone()
        };
        Ok(self.slot_for_addr(key, addr, host_header))
    }

    fn slot_for_addr(&mut self, key: String, addr: SocketAddr, host_header: String) -> usize {
        self.list.push((
            key,
            Arc::new(HttpTarget {
                addr,
                host_header: host_header.into_bytes(),
            }),
        ));
        self.list.len() - 1
    }
}
