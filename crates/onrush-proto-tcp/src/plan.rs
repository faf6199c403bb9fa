//! What TCP resolves once per run: each target's address, each step's settings, and each
//! scenario's TLS client when it has a `tls://` target.

use std::net::SocketAddr;
use std::time::Duration;

use onrush_plan::{Check, ConnectionScope, CustomStep, Extract, OnFailure, Plan};
use onrush_protocol::{StepSpec, Targets};

use crate::stream::TlsClients;
use crate::TcpSpec;

/// The TCP part of a prepared plan, shared read-only by all workers.
#[derive(Default)]
pub struct TcpPlan {
    /// Distinct `host:port` targets and their addresses; a VU keeps one connection per target.
    targets: Targets,
    /// Per scenario: how long connections live (`http.connections`; `shared` is kept per VU).
    pub(crate) scopes: Vec<ConnectionScope>,
    /// Per scenario: the default timeout of a step (`http.timeout`).
    pub(crate) timeouts: Vec<Duration>,
    /// Per scenario: the TLS client of `http.tls`, for `tls://` targets.
    pub(crate) tls: TlsClients,
}

/// A TCP step ready to run.
pub struct TcpStep {
    /// What the grammar read.
    pub plan: TcpSpec,
    /// What every request step has (metric, extractors, checks).
    pub common: CustomStep,
    /// Index of the target in the session's connections.
    pub(crate) slot: usize,
    pub(crate) addr: SocketAddr,
    pub(crate) timeout: Duration,
    /// `host:port` as written (`tls://host:port` for TLS), shown to `url` extractors.
    pub(crate) label: Vec<u8>,
}

impl TcpPlan {
    pub fn new(plan: &Plan, builtin: Option<SocketAddr>) -> Self {
        TcpPlan {
            targets: Targets::with_builtin(builtin),
            scopes: plan.scenarios.iter().map(|s| s.http.connections).collect(),
            timeouts: plan.scenarios.iter().map(|s| s.http.timeout).collect(),
            tls: TlsClients::new(plan),
        }
    }

    /// Resolves `step`'s target (once per distinct `host:port`; a `tls://` one apart from the
    /// same plain one), and builds the scenario's TLS client for a `tls://` target.
    pub fn compile(
        &mut self,
        plan: &Plan,
        scenario: usize,
        step: &CustomStep,
        spec: &TcpSpec,
    ) -> anyhow::Result<TcpStep> {
        let scheme = if spec.tls { "tls://" } else { "" };
        let target = self
            .targets
            .resolve_scheme("tcp", scheme, &spec.host, spec.port)?;
        if spec.tls {
            self.tls.require(plan, scenario)?;
        }
        Ok(TcpStep {
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

    /// How many distinct targets the plan's TCP steps talk to.
    pub fn target_count(&self) -> usize {
        self.targets.len()
    }
}

impl StepSpec for TcpStep {
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
