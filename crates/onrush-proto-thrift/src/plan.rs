//! What Thrift resolves once per run: each target's address, and per step what a call needs
//! (the method's IDL entry, whether the reply must be turned into JSON).

use std::net::SocketAddr;
use std::time::Duration;

use onrush_plan::{Check, ConnectionScope, Extract, OnFailure, Plan};
use onrush_proto_tcp::stream::TlsClients;
use onrush_protocol::{StepSpec, Targets};

/// The Thrift part of a prepared plan, shared read-only by all workers.
#[derive(Default)]
pub struct ThriftPlan {
    targets: Targets,
    /// Per scenario: how long connections live (`shared` is kept per VU).
    pub(crate) scopes: Vec<ConnectionScope>,
    /// Per scenario: the default timeout of a step (`http.timeout`).
    pub(crate) timeouts: Vec<Duration>,
    /// Per scenario: the TLS client of `http.tls`, for `tls://` targets.
    pub(crate) tls: TlsClients,
}

/// A Thrift step ready to run.
pub struct ThriftStep {
    pub plan: onrush_plan::ThriftStep,
    pub(crate) slot: usize,
    pub(crate) addr: SocketAddr,
    pub(crate) timeout: Duration,
    /// `host:port` as written (`tls://host:port` for TLS), shown to `url` extractors.
    pub(crate) label: Vec<u8>,
    /// The reply is decoded into JSON only when an extractor or a check may read it.
    pub(crate) needs_json: bool,
}

impl ThriftPlan {
    pub fn new(plan: &Plan, builtin: Option<SocketAddr>) -> Self {
        ThriftPlan {
            targets: Targets::with_builtin(builtin),
            scopes: plan.scenarios.iter().map(|s| s.http.connections).collect(),
            timeouts: plan.scenarios.iter().map(|s| s.http.timeout).collect(),
            tls: TlsClients::new(plan),
        }
    }

    pub fn compile(
        &mut self,
        plan: &Plan,
        scenario: usize,
        step: &onrush_plan::ThriftStep,
    ) -> anyhow::Result<ThriftStep> {
        let scheme = if step.tls { "tls://" } else { "" };
        let target = self
            .targets
            .resolve_scheme("thrift", scheme, &step.host, step.port)?;
        if step.tls {
            self.tls.require(plan, scenario)?;
        }
        // Any extractor or check may read the JSON (a header extractor reads `exception`,
        // cheap either way); a step with neither skips the JSON, not the decoding.
        let needs_json = !step.extract.is_empty() || !step.checks.is_empty();
        Ok(ThriftStep {
            timeout: step.timeout.unwrap_or(self.timeouts[scenario]),
            addr: target.addr,
            plan: step.clone(),
            slot: target.slot,
            label: target.label.into_bytes(),
            needs_json,
        })
    }

    pub fn addresses(&self) -> Vec<SocketAddr> {
        self.targets.addresses()
    }

    pub fn target_count(&self) -> usize {
        self.targets.len()
    }
}

impl StepSpec for ThriftStep {
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
