//! What UDP resolves once per run: each target's address, each step's settings.

use std::net::SocketAddr;
use std::time::Duration;

use onrush_plan::{Check, CustomStep, Extract, OnFailure, Plan};
use onrush_protocol::{StepSpec, Targets};

/// The UDP part of a prepared plan, shared read-only by all workers.
#[derive(Default)]
pub struct UdpPlan {
    /// Distinct `host:port` targets and their addresses; a VU keeps one socket per target.
    targets: Targets,
    /// Per scenario: the default timeout of a step (`http.timeout`).
    timeouts: Vec<Duration>,
}

use crate::UdpSpec;

/// A UDP step ready to run.
pub struct UdpStep {
    /// What the grammar read.
    pub plan: UdpSpec,
    /// What every request step has (metric, extractors, checks).
    pub common: CustomStep,
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
            targets: Targets::default(),
            timeouts: plan.scenarios.iter().map(|s| s.http.timeout).collect(),
        }
    }

    /// Resolves `step`'s target (once per distinct `host:port`).
    pub fn compile(
        &mut self,
        _plan: &Plan,
        scenario: usize,
        step: &CustomStep,
        spec: &UdpSpec,
    ) -> anyhow::Result<UdpStep> {
        let target = self.targets.resolve("udp", &spec.host, spec.port)?;
        Ok(UdpStep {
            timeout: step.timeout.unwrap_or(self.timeouts[scenario]),
            addr: target.addr,
            plan: spec.clone(),
            common: step.clone(),
            slot: target.slot,
            label: target.label.into_bytes(),
        })
    }

    /// The addresses of the targets, in slot order.
    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.targets.addresses()
    }

    /// How many distinct targets the plan's UDP steps talk to.
    pub fn target_count(&self) -> usize {
        self.targets.len()
    }
}

impl StepSpec for UdpStep {
    fn metric(&self) -> usize {
        self.common.metric
    }

    fn extract(&self) -> &[Extract] {
        &self.common.extract
    }

    fn checks(&self) -> &[Check] {
        &self.common.checks
    }

    fn on_failure(&self) -> OnFailure {
        self.common.on_failure
    }
}
