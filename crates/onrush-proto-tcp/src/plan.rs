//! What TCP resolves once per run: each target's address, each step's settings.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use anyhow::Context;
use onrush_plan::{Check, ConnectionScope, Extract, OnFailure, Plan};
use onrush_protocol::StepSpec;

/// The TCP part of a prepared plan, shared read-only by all workers.
#[derive(Default)]
pub struct TcpPlan {
    /// Distinct `host:port` targets and their addresses; a VU keeps one connection per target.
    targets: Vec<(String, SocketAddr)>,
    /// Per scenario: how long connections live (`http.connections`; `shared` is kept per VU).
    pub(crate) scopes: Vec<ConnectionScope>,
    /// Per scenario: the default timeout of a step (`http.timeout`).
    pub(crate) timeouts: Vec<Duration>,
}

/// A TCP step ready to run.
pub struct TcpStep {
    pub plan: onrush_plan::TcpStep,
    /// Index of the target in the session's connections.
    pub(crate) slot: usize,
    pub(crate) addr: SocketAddr,
    pub(crate) timeout: Duration,
    /// `host:port` as written, shown to `url` extractors.
    pub(crate) label: Vec<u8>,
}

impl TcpPlan {
    pub fn new(plan: &Plan) -> Self {
        TcpPlan {
            targets: Vec::new(),
            scopes: plan.scenarios.iter().map(|s| s.http.connections).collect(),
            timeouts: plan.scenarios.iter().map(|s| s.http.timeout).collect(),
        }
    }

    /// Resolves `step`'s target (once per distinct `host:port`).
    pub fn compile(
        &mut self,
        _plan: &Plan,
        scenario: usize,
        step: &onrush_plan::TcpStep,
    ) -> anyhow::Result<TcpStep> {
        let label = if step.host.contains(':') {
            format!("[{}]:{}", step.host, step.port)
        } else {
            format!("{}:{}", step.host, step.port)
        };
        let slot = match self.targets.iter().position(|(l, _)| *l == label) {
            Some(slot) => slot,
            None => {
                let addr = (step.host.as_str(), step.port)
                    .to_socket_addrs()
                    .with_context(|| format!("cannot resolve tcp target host {:?}", step.host))?
                    .next()
                    .with_context(|| format!("tcp target host {:?} has no address", step.host))?;
                self.targets.push((label.clone(), addr));
                self.targets.len() - 1
            }
        };
        Ok(TcpStep {
            timeout: step.timeout.unwrap_or(self.timeouts[scenario]),
            addr: self.targets[slot].1,
            plan: step.clone(),
            slot,
            label: label.into_bytes(),
        })
    }

    /// The addresses of the targets, in slot order.
    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.targets.iter().map(|(_, a)| *a).collect()
    }

    /// How many distinct targets the plan's TCP steps talk to.
    pub fn target_count(&self) -> usize {
        self.targets.len()
    }
}

impl StepSpec for TcpStep {
    fn metric(&self) -> usize {
        self.plan.metric
    }

    fn extract(&self) -> &[Extract] {
        &self.plan.extract
    }

    fn checks(&self) -> &[Check] {
        &self.plan.checks
    }

    fn on_failure(&self) -> OnFailure {
        self.plan.on_failure
    }
}
