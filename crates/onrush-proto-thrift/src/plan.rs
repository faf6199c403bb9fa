//! What Thrift resolves once per run: each target's address, and per step what a call needs
//! (the method's IDL entry, whether the reply must be turned into JSON).

use std::net::SocketAddr;
use std::time::Duration;

use onrush_plan::{Check, ConnectionScope, CustomStep, Extract, OnFailure, Plan};
use onrush_proto_tcp::stream::TlsClients;
use onrush_protocol::{StepSpec, Targets};

use crate::ThriftSpec;

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
    /// What the grammar read.
    pub plan: ThriftSpec,
    /// What every request step has (metric, extractors, checks).
    pub common: CustomStep,
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
        step: &CustomStep,
        spec: &ThriftSpec,
    ) -> anyhow::Result<ThriftStep> {
        let scheme = if spec.tls { "tls://" } else { "" };
        let target = self
            .targets
            .resolve_scheme("thrift", scheme, &spec.host, spec.port)?;
        if spec.tls {
            self.tls.require(plan, scenario)?;
        }
        // Any extractor or check may read the JSON (a header extractor reads `exception`,
        // cheap either way); a step with neither skips the JSON, not the decoding.
        let needs_json = !step.extract.is_empty() || !step.checks.is_empty();
        Ok(ThriftStep {
            timeout: step.timeout.unwrap_or(self.timeouts[scenario]),
            addr: target.addr,
            plan: spec.clone(),
            common: step.clone(),
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
