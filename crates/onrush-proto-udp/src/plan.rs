//! What UDP resolves once per run: each target's address, each step's settings.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use anyhow::Context;
use onrush_plan::{Check, Extract, OnFailure, Plan};
use onrush_protocol::StepSpec;

/// The UDP part of a prepared plan, shared read-only by all workers.
#[derive(Default)]
pub struct UdpPlan {
    /// Distinct `host:port` targets and their addresses; a VU keeps one socket per target.
    targets: Vec<(String, SocketAddr)>,
    /// Per scenario: the default timeout of a step (`http.timeout`).
    timeouts: Vec<Duration>,
}

/// A UDP step ready to run.
pub struct UdpStep {
    pub plan: onrush_plan::UdpStep,
    /// Index of the target in the session's sockets.
    pub(crate) slot: usize,
    pub(crate) addr: SocketAddr,
    /// How long a reply is waited for.
    pub(crate) timeout: Duration,
    /// `host:port` as written, shown to `url` extractors.
    pub(crate) label: Vec<u8>,
}

impl UdpPlan {
    pub fn new(plan: &Plan) -> Self {
        UdpPlan {
            targets: Vec::new(),
            timeouts: plan.scenarios.iter().map(|s| s.http.timeout).collect(),
        }
    }

    /// Resolves `step`'s target (once per distinct `host:port`).
    pub fn compile(
        &mut self,
        _plan: &Plan,
        scenario: usize,
        step: &onrush_plan::UdpStep,
    ) -> anyhow::Result<UdpStep> {
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
                    .with_context(|| format!("cannot resolve udp target host {:?}", step.host))?
                    .next()
                    .with_context(|| format!("udp target host {:?} has no address", step.host))?;
                self.targets.push((label.clone(), addr));
                self.targets.len() - 1
            }
        };
        Ok(UdpStep {
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

    /// How many distinct targets the plan's UDP steps talk to.
    pub fn target_count(&self) -> usize {
        self.targets.len()
    }
}

impl StepSpec for UdpStep {
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
